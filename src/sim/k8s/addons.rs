//! The marketplace releases of a cluster, played: once a release is DEPLOYED, the objects
//! its chart would create appear in the cluster (namespaces, DaemonSets with a ready pod per
//! node, the RayCluster and its pods), and the GPU device plugin makes GPU nodes advertise
//! their GPUs (MIG slices under the `mixed` strategy). DaemonSets that others apply (the
//! filesystem CSI driver) get pods and status too, and a CSI node plugin registers its driver
//! in the node's CSINode, as the kubelet's plugin registration does.
//!
//! The simulator cannot run the images, so these pods are marked played and the kubelet
//! leaves them alone.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::kinds::{
    CLUSTER_POLICY, CSI_NODE, DAEMON_SET, DEPLOYMENT, NAMESPACE, NODE, POD, RAY_CLUSTER,
    SLURM_CLUSTER, STORAGE_CLASS,
};
pub use super::releases::{GpuPlugin, Played, deployed_by_cluster, gpu_plugin};
use super::store::{ClusterStore, meta};

/// Marks what the simulator plays (no process runs for a played pod).
pub const PLAYED: &str = "sim.fleetbot.dev/played";
/// The release a played object belongs to.
const RELEASE_LABEL: &str = "sim.fleetbot.dev/release";
/// Labels GPU nodes carry once GPU Feature Discovery runs (the device plugin's selector).
pub const GPU_PRESENT: &str = "nvidia.com/gpu.present";

/// What the kubelet reports of a played pod's containers: each running and ready once the pod
/// is up (kubectl's READY column counts them), each still being created before.
pub fn played_container_statuses(spec: Option<&Value>, up: bool) -> Value {
    let containers = spec
        .and_then(|s| s.get("containers"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    Value::Array(
        containers
            .iter()
            .map(|c| {
                json!({
                    "name": c.get("name").cloned().unwrap_or(json!("")),
                    "image": c.get("image").cloned().unwrap_or(json!("")),
                    "imageID": "",
                    "ready": up,
                    "started": up,
                    "restartCount": 0,
                    "state": if up {
                        json!({"running": {}})
                    } else {
                        json!({"waiting": {"reason": "ContainerCreating"}})
                    },
                })
            })
            .collect(),
    )
}

fn short(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))[..10].to_string()
}

fn daemon_set(release: &Played, name: &str, image: String, gpu_only: bool) -> Value {
    let mut selector = json!({});
    if gpu_only {
        selector[GPU_PRESENT] = json!("true");
    }
    json!({
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": name,
            "namespace": release.namespace,
            "labels": {RELEASE_LABEL: release.id, "app.kubernetes.io/name": name},
            "annotations": {PLAYED: "true"},
        },
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "nodeSelector": selector,
                    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
                    "containers": [{"name": name, "image": image}],
                },
            },
        },
    })
}

/// The GPU Operator's DaemonSets, with the pinned versions its values ask for.
fn gpu_operator(release: &Played) -> Vec<(usize, Value)> {
    let version = |path: &str| release.str_value(path).unwrap_or_else(|| "default".into());
    let mut out = vec![
        daemon_set(
            release,
            "nvidia-driver-daemonset",
            format!("nvcr.io/nvidia/driver:{}", version("driver.version")),
            true,
        ),
        daemon_set(
            release,
            "nvidia-container-toolkit-daemonset",
            format!(
                "nvcr.io/nvidia/k8s/container-toolkit:{}",
                version("toolkit.version")
            ),
            true,
        ),
        daemon_set(
            release,
            "nvidia-device-plugin-daemonset",
            format!(
                "nvcr.io/nvidia/k8s-device-plugin:{}",
                version("devicePlugin.version")
            ),
            true,
        ),
        daemon_set(
            release,
            "gpu-feature-discovery",
            format!(
                "nvcr.io/nvidia/k8s-device-plugin:{}",
                version("gfd.version")
            ),
            true,
        ),
    ];
    if let Some(config_map) = release.str_value("driver.repoConfig.configMapName") {
        // The driver pods mount the repository files, as the Operator's repoConfig does.
        let ds = &mut out[0];
        ds["spec"]["template"]["spec"]["volumes"] =
            json!([{"name": "repo-config", "configMap": {"name": config_map}}]);
        ds["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] = json!([{"name": "repo-config", "mountPath": "/etc/apt/sources.list.d", "readOnly": true}]);
    }
    // The Operator's driver DaemonSet updates OnDelete: its upgrade controller, not the
    // DaemonSet controller, replaces driver pods.
    out[0]["spec"]["updateStrategy"] = json!({"type": "OnDelete"});
    if release.str_value("migManager.enabled").as_deref() == Some("true") {
        out.push(daemon_set(
            release,
            "nvidia-mig-manager",
            format!(
                "nvcr.io/nvidia/cloud-native/k8s-mig-manager:{}",
                version("migManager.version")
            ),
            true,
        ));
    }
    let mut objects: Vec<(usize, Value)> = out.into_iter().map(|ds| (DAEMON_SET, ds)).collect();
    objects.push((
        CLUSTER_POLICY,
        json!({
            "apiVersion": "nvidia.com/v1",
            "kind": "ClusterPolicy",
            "metadata": {
                "name": "cluster-policy",
                "labels": {RELEASE_LABEL: release.id,
                    "app.kubernetes.io/version": version("operator.version")},
                "annotations": {PLAYED: "true"},
            },
            "spec": {"operator": {"defaultRuntime": "containerd"}},
        }),
    ));
    objects
}

/// A ClusterPolicy is `ready` once every DaemonSet of its release has all its pods ready
/// and on the current template, `notReady` before (the Operator's own states).
fn run_cluster_policies(store: &mut ClusterStore) {
    let policies: Vec<Value> = store
        .list(CLUSTER_POLICY, None)
        .into_iter()
        .cloned()
        .collect();
    let release_of = |o: &Value| {
        o.pointer(&format!(
            "/metadata/labels/{}",
            RELEASE_LABEL.replace('/', "~1")
        ))
        .cloned()
    };
    for policy in policies {
        let release = release_of(&policy);
        let ready = store
            .list(DAEMON_SET, None)
            .into_iter()
            .filter(|ds| release.is_some() && release_of(ds) == release)
            .all(|ds| {
                let n = |f: &str| ds.pointer(&format!("/status/{f}")).and_then(Value::as_i64);
                let desired = n("desiredNumberScheduled");
                desired.is_some()
                    && n("numberReady") == desired
                    && n("updatedNumberScheduled") == desired
            });
        let status = json!({"state": if ready { "ready" } else { "notReady" }});
        if policy.get("status") != Some(&status) {
            let mut next = policy;
            next["status"] = status;
            store.put(CLUSTER_POLICY, next);
        }
    }
}

fn ray_pod(release: &Played, name: &str, role: &str, cpus: &str, memory: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": release.namespace,
            "labels": {
                RELEASE_LABEL: release.id,
                "ray.io/cluster": release.name,
                "ray.io/node-type": role,
            },
            "annotations": {PLAYED: "true"},
        },
        "spec": {
            "securityContext": {"runAsNonRoot": true, "runAsUser": 1000},
            "containers": [{
                "name": format!("ray-{role}"),
                "image": release.str_value("image.repository").map_or_else(
                    || "rayproject/ray".to_string(),
                    |repo| format!("{repo}@{}", release.str_value("image.digest").unwrap_or_default()),
                ),
                "resources": {"requests": {"cpu": cpus, "memory": memory}},
            }],
        },
    })
}

/// The RayCluster the values describe, and its head and worker pods.
fn ray_cluster(release: &Played) -> Vec<(usize, Value)> {
    let replicas = release
        .value("worker.replicas")
        .and_then(|v| v.as_i64())
        .unwrap_or(1)
        .max(0);
    let worker_cpus = release
        .str_value("worker.resources.requests.cpu")
        .unwrap_or_else(|| "1".into());
    let worker_memory = release
        .str_value("worker.resources.requests.memory")
        .unwrap_or_else(|| "1Gi".into());
    let head_cpus = release
        .str_value("head.resources.requests.cpu")
        .unwrap_or_else(|| "1".into());
    let head_memory = release
        .str_value("head.resources.requests.memory")
        .unwrap_or_else(|| "4Gi".into());
    let head = format!("{}-head-{}", release.name, &short(&release.id)[..5]);
    let mut out = vec![(
        RAY_CLUSTER,
        json!({
            "apiVersion": "ray.io/v1",
            "kind": "RayCluster",
            "metadata": {
                "name": release.name,
                "namespace": release.namespace,
                "labels": {RELEASE_LABEL: release.id},
                "annotations": {PLAYED: "true"},
            },
            "spec": {
                "rayVersion": release.str_value("rayVersion").unwrap_or_default(),
                "enableInTreeAutoscaling": release.value("autoscaling.enabled").unwrap_or(json!(false)),
                "headGroupSpec": {"rayStartParams": {}},
                "workerGroupSpecs": [{"groupName": "cpu", "replicas": replicas, "minReplicas": replicas, "maxReplicas": replicas}],
            },
            "status": {
                "state": "ready",
                "desiredWorkerReplicas": replicas,
                "readyWorkerReplicas": replicas,
                "availableWorkerReplicas": replicas,
                "head": {"podName": head},
            },
        }),
    )];
    out.push((
        POD,
        ray_pod(release, &head, "head", &head_cpus, &head_memory),
    ));
    for i in 0..replicas {
        let name = format!("{}-worker-{i}-{}", release.name, &short(&release.id)[..5]);
        out.push((
            POD,
            ray_pod(release, &name, "worker", &worker_cpus, &worker_memory),
        ));
    }
    out
}

/// Every object a deployed release promises.
pub fn objects(release: &Played) -> Vec<(usize, Value)> {
    let mut out = vec![(
        NAMESPACE,
        json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {
                "name": release.namespace,
                "labels": {RELEASE_LABEL: release.id},
                "annotations": {PLAYED: "true"},
            },
        }),
    )];
    match release.product.as_str() {
        "nebius/nvidia-gpu-operator" => out.extend(gpu_operator(release)),
        "nebius/nvidia-device-plugin" => out.push((
            DAEMON_SET,
            daemon_set(
                release,
                "nvidia-device-plugin",
                "nvcr.io/nvidia/k8s-device-plugin".into(),
                true,
            ),
        )),
        "nebius/ray-cluster" => out.extend(ray_cluster(release)),
        _ => {}
    }
    out
}

fn comparable(object: &Value) -> Value {
    let mut c = object.clone();
    if let Some(m) = c.get_mut("metadata").and_then(Value::as_object_mut) {
        for field in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "generation",
            "managedFields",
        ] {
            m.remove(field);
        }
    }
    c
}

/// Brings a cluster's played objects in line with its deployed releases.
pub fn play(store: &mut ClusterStore, releases: &[Played]) {
    ensure_default_storage_class(store);
    let mut wanted: BTreeSet<(usize, String, String)> = BTreeSet::new();
    for release in releases {
        for (kind, object) in objects(release) {
            let namespace = meta(&object, "namespace").to_string();
            let name = meta(&object, "name").to_string();
            wanted.insert((kind, namespace.clone(), name.clone()));
            match store.get(kind, &namespace, &name).cloned() {
                None => {
                    let _ = store.create(kind, &namespace, object);
                }
                Some(current) if meta(&current, "deletionTimestamp").is_empty() => {
                    if comparable(&current) != comparable(&object) {
                        let mut next = object;
                        for field in ["uid", "creationTimestamp", "resourceVersion"] {
                            if let Some(v) = current.pointer(&format!("/metadata/{field}")) {
                                next["metadata"][field] = v.clone();
                            }
                        }
                        // As the API server does: the generation counts spec changes.
                        let generation = current
                            .pointer("/metadata/generation")
                            .and_then(Value::as_i64)
                            .unwrap_or(1);
                        next["metadata"]["generation"] =
                            json!(if current.get("spec") == next.get("spec") {
                                generation
                            } else {
                                generation + 1
                            });
                        store.put(kind, next);
                    }
                }
                Some(_) => {}
            }
        }
    }
    let stale: Vec<(usize, String, String)> = store
        .keys()
        .into_iter()
        .filter(|(kind, ns, name)| {
            store.get(*kind, ns, name).is_some_and(|o| {
                o.pointer(&format!(
                    "/metadata/labels/{}",
                    RELEASE_LABEL.replace('/', "~1")
                ))
                .is_some()
            }) && !wanted.contains(&(*kind, ns.clone(), name.clone()))
        })
        .collect();
    for (kind, ns, name) in stale {
        store.remove(kind, &ns, &name);
    }
}

/// The add-ons' controllers: DaemonSets' pods on their nodes, the GPU operator's
/// ClusterPolicy and Slinky's SlurmClusters. They run with the other controllers, over
/// whatever put the objects there (a release played or a manifest applied).
pub fn run_controllers(store: &mut ClusterStore) {
    run_daemon_sets(store);
    run_cluster_policies(store);
    run_slurm_clusters(store);
}

/// A SlurmCluster is `Available` once the operator's Deployment runs in its namespace (the
/// operator would then reconcile it); `Pending` before.
fn run_slurm_clusters(store: &mut ClusterStore) {
    let clusters: Vec<Value> = store
        .list(SLURM_CLUSTER, None)
        .into_iter()
        .cloned()
        .collect();
    for sc in clusters {
        let namespace = meta(&sc, "namespace").to_string();
        let operator = store
            .list(DEPLOYMENT, Some(&namespace))
            .into_iter()
            .any(|d| {
                d.pointer("/metadata/labels/app.kubernetes.io~1name") == Some(&json!("soperator"))
            });
        let sets = sc
            .pointer("/spec/nodeSets")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        let status = json!({
            "phase": if operator { "Available" } else { "Pending" },
            "readyNodeSets": if operator { sets } else { 0 },
        });
        if sc.get("status") != Some(&status) {
            let mut next = sc;
            next["status"] = status;
            store.put(SLURM_CLUSTER, next);
        }
    }
}

/// Every Managed Kubernetes cluster starts with the disk CSI's default class.
fn ensure_default_storage_class(store: &mut ClusterStore) {
    if store
        .get(STORAGE_CLASS, "", "compute-csi-default-sc")
        .is_some()
    {
        return;
    }
    let _ = store.create(
        STORAGE_CLASS,
        "",
        json!({
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {
                "name": "compute-csi-default-sc",
                "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
            },
            "provisioner": "compute.csi.mk8s.nebius.ai",
            "reclaimPolicy": "Delete",
            "volumeBindingMode": "WaitForFirstConsumer",
            "allowVolumeExpansion": true,
        }),
    );
}

fn node_ready(node: &Value) -> bool {
    node.pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True")
}

fn selects(selector: &Value, node: &Value) -> bool {
    selector.as_object().into_iter().flatten().all(|(k, v)| {
        node.pointer(&format!(
            "/metadata/labels/{}",
            k.replace('~', "~0").replace('/', "~1")
        )) == Some(v)
    })
}

/// The driver a CSI node plugin registers, from its registrar's
/// `--kubelet-registration-path=/var/lib/kubelet/plugins/<driver>/csi.sock`.
fn registered_driver(template: &Value) -> Option<String> {
    template
        .pointer("/spec/containers")
        .and_then(Value::as_array)?
        .iter()
        .flat_map(|c| c["args"].as_array().cloned().unwrap_or_default())
        .filter_map(|a| a.as_str().map(str::to_string))
        .find_map(|a| {
            a.strip_prefix("--kubelet-registration-path=/var/lib/kubelet/plugins/")
                .and_then(|rest| rest.strip_suffix("/csi.sock"))
                .map(str::to_string)
        })
}

/// A pod per eligible Ready node for every DaemonSet, its status counted from them, and the
/// CSI drivers registered on the nodes that run a node plugin.
/// The label a DaemonSet's pod carries with the template generation it was made from.
pub const TEMPLATE_GENERATION: &str = "pod-template-generation";

fn pod_generation(pod: &Value) -> i64 {
    pod.pointer("/metadata/labels/pod-template-generation")
        .and_then(Value::as_str)
        .and_then(|g| g.parse().ok())
        .unwrap_or(0)
}

fn run_daemon_sets(store: &mut ClusterStore) {
    let nodes: Vec<Value> = store.list(NODE, None).into_iter().cloned().collect();
    let mut registered: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let sets: Vec<Value> = store.list(DAEMON_SET, None).into_iter().cloned().collect();
    for ds in sets {
        let namespace = meta(&ds, "namespace").to_string();
        let name = meta(&ds, "name").to_string();
        let template = ds.pointer("/spec/template").cloned().unwrap_or_default();
        let selector = template
            .pointer("/spec/nodeSelector")
            .cloned()
            .unwrap_or_default();
        let eligible: Vec<&Value> = nodes.iter().filter(|n| selects(&selector, n)).collect();
        let driver = registered_driver(&template);
        let generation = ds
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(1);
        let on_delete = ds
            .pointer("/spec/updateStrategy/type")
            .and_then(Value::as_str)
            == Some("OnDelete");
        let mut updated = 0;
        let mut ready = 0;
        let mut wanted_pods = BTreeSet::new();
        for node in &eligible {
            let node_name = meta(node, "name");
            let pod_name = format!("{name}-{}", &short(node_name)[..5]);
            wanted_pods.insert(pod_name.clone());
            let up = node_ready(node);
            if up {
                ready += 1;
                if let Some(d) = &driver {
                    registered
                        .entry(node_name.to_string())
                        .or_default()
                        .insert(d.clone());
                }
            }
            let mut labels = template
                .pointer("/metadata/labels")
                .cloned()
                .unwrap_or(json!({}));
            labels[TEMPLATE_GENERATION] = json!(generation.to_string());
            let mut pod = json!({
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": pod_name,
                    "namespace": namespace,
                    "labels": labels,
                    "annotations": {PLAYED: "true"},
                    "ownerReferences": [{
                        "apiVersion": "apps/v1", "kind": "DaemonSet", "name": name,
                        "uid": meta(&ds, "uid"), "controller": true,
                    }],
                },
                "spec": template.get("spec").cloned().unwrap_or(json!({})),
                "status": {
                    "phase": if up { "Running" } else { "Pending" },
                    "conditions": [{"type": "Ready", "status": if up { "True" } else { "False" }}],
                    "containerStatuses": played_container_statuses(template.get("spec"), up),
                },
            });
            pod["spec"]["nodeName"] = json!(node_name);
            match store.get(POD, &namespace, &pod_name).cloned() {
                None => {
                    updated += 1;
                    let _ = store.create(POD, &namespace, pod);
                }
                // A changed template replaces the pod, unless the DaemonSet updates OnDelete:
                // then the old pod runs on until someone deletes it.
                Some(current) if pod_generation(&current) != generation && !on_delete => {
                    updated += 1;
                    store.remove(POD, &namespace, &pod_name);
                    let _ = store.create(POD, &namespace, pod);
                }
                Some(current) => {
                    if pod_generation(&current) == generation {
                        updated += 1;
                    }
                    if current.get("status") != pod.get("status") {
                        let mut next = current;
                        next["status"] = pod["status"].clone();
                        store.put(POD, next);
                    }
                }
            }
        }
        let owned: Vec<String> = store
            .list(POD, Some(&namespace))
            .into_iter()
            .filter(|p| {
                p.pointer("/metadata/ownerReferences/0/uid")
                    .and_then(Value::as_str)
                    == Some(meta(&ds, "uid"))
            })
            .map(|p| meta(p, "name").to_string())
            .filter(|n| !wanted_pods.contains(n))
            .collect();
        for pod in owned {
            store.remove(POD, &namespace, &pod);
        }
        let status = json!({
            "desiredNumberScheduled": eligible.len(),
            "currentNumberScheduled": eligible.len(),
            "updatedNumberScheduled": updated,
            "numberReady": ready,
            "numberAvailable": ready,
            "numberMisscheduled": 0,
            "observedGeneration": ds.pointer("/metadata/generation").cloned().unwrap_or(json!(1)),
        });
        if ds.get("status") != Some(&status) {
            let mut next = ds.clone();
            next["status"] = status;
            store.put(DAEMON_SET, next);
        }
    }
    for node in &nodes {
        let name = meta(node, "name").to_string();
        let drivers: Vec<Value> = registered
            .get(&name)
            .into_iter()
            .flatten()
            .map(|d| json!({"name": d, "nodeID": name, "topologyKeys": null}))
            .collect();
        let csi = json!({
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSINode",
            "metadata": {"name": name},
            "spec": {"drivers": drivers},
        });
        match store.get(CSI_NODE, "", &name).cloned() {
            None => {
                let _ = store.create(CSI_NODE, "", csi);
            }
            Some(current) if current.get("spec") != csi.get("spec") => {
                let mut next = current;
                next["spec"] = csi["spec"].clone();
                store.put(CSI_NODE, next);
            }
            Some(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn release(product: &str, values: &str) -> Played {
        Played {
            id: "applicationrelease-x".into(),
            product: product.into(),
            namespace: "ns".into(),
            name: "app".into(),
            values: serde_yaml::from_str(values).unwrap(),
        }
    }

    #[test]
    fn only_a_device_plugin_makes_gpus_visible_and_mixed_means_mig() {
        assert_eq!(gpu_plugin(&[release("nebius/ray-cluster", "{}")]), None);
        let op = release("nebius/nvidia-gpu-operator", "mig: {strategy: mixed}");
        assert_eq!(gpu_plugin(&[op]), Some(GpuPlugin { mig_mixed: true }));
        let dp = release("nebius/nvidia-device-plugin", "{}");
        assert_eq!(gpu_plugin(&[dp]), Some(GpuPlugin { mig_mixed: false }));
    }

    #[test]
    fn a_daemon_set_runs_on_the_nodes_it_selects_and_registers_its_csi_driver() {
        let mut store = ClusterStore::new();
        for (name, gpu) in [("n1", true), ("n2", false)] {
            let mut labels = json!({});
            if gpu {
                labels[GPU_PRESENT] = json!("true");
            }
            store
                .create(
                    NODE,
                    "",
                    json!({"metadata": {"name": name, "labels": labels},
                    "status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
                )
                .unwrap();
        }
        let op = release(
            "nebius/nvidia-gpu-operator",
            "driver: {version: '580.173.02'}",
        );
        play(&mut store, std::slice::from_ref(&op));
        run_controllers(&mut store);
        let ds = store
            .get(DAEMON_SET, "ns", "nvidia-driver-daemonset")
            .unwrap();
        assert_eq!(ds["status"]["numberReady"], 1);
        assert!(ds.to_string().contains("driver:580.173.02"));
        assert!(
            store
                .get(STORAGE_CLASS, "", "compute-csi-default-sc")
                .is_some()
        );
        store
            .create(DAEMON_SET, "kube-system", json!({"metadata": {"name": "csi"},
                "spec": {"template": {"spec": {"containers": [{"name": "r",
                "args": ["--kubelet-registration-path=/var/lib/kubelet/plugins/d.example/csi.sock"]}]}}}}))
            .unwrap();
        play(&mut store, &[op]);
        run_controllers(&mut store);
        let csi = store.get(CSI_NODE, "", "n2").unwrap();
        assert_eq!(csi["spec"]["drivers"][0]["name"], "d.example");
        play(&mut store, &[]);
        assert!(
            store
                .get(DAEMON_SET, "ns", "nvidia-driver-daemonset")
                .is_none()
        );
        assert!(store.get(NAMESPACE, "", "ns").is_none());
        assert!(store.get(DAEMON_SET, "kube-system", "csi").is_some());
    }
}
