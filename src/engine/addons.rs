//! What each cluster gets installed into it, decided by the spec alone: the GPU Operator or
//! the managed driver's device plugin, the RTX rendering driver profile and its package
//! repositories, the MIG policy, the shared-filesystem CSI driver and the KubeRay CPU
//! RayCluster, with their pinned versions and values (fleet-engine §2.6–2.8, §2.13, §10.4).
//!
//! Marketplace products install as `K8sRelease`s; the filesystem CSI is only a Helm chart
//! (`csi-mounted-fs-path` 0.1.6 from an OCI registry), so fleetbot applies its rendered
//! manifests, pinned in the repository, with server-side apply. A release's values cannot be
//! read back, so each add-on carries a digest of everything it installs: a changed digest is
//! a replacement.

use std::collections::BTreeMap;

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::spec::model::{mig_pins, ray_pins};
use crate::spec::{ClusterSpec, gpus_per_node};

/// The label on a release with the digest of what it installed.
pub const DIGEST_LABEL: &str = "fleetbot.dev/addon-digest";
/// The label naming the add-on (`gpu-operator`, …) on its release.
pub const ADDON_LABEL: &str = "fleetbot.dev/addon";
/// The field manager of every object fleetbot applies inside a cluster.
pub const FIELD_MANAGER: &str = "fleetbot";

/// The filesystem CSI chart's rendered manifests (see deploy/addons/README.md).
pub const CSI_MANIFESTS: &str = include_str!("../../deploy/addons/csi-mounted-fs-path-0.1.6.yaml");
/// SHA-256 of [`CSI_MANIFESTS`]; a test holds the file to it.
pub const CSI_MANIFESTS_SHA256: &str =
    "391f206457308d46b17c432f6f13906eeceb45c22633ea0e712ed7d06d88f08c";
/// The Slurm operator's manifests (see deploy/addons/README.md); `__VERSION__` is the spec's
/// `slurm_operator_version`.
pub const SOPERATOR_MANIFESTS: &str = include_str!("../../deploy/addons/soperator.yaml");

/// The default StorageClass the CSI chart makes, and the disk CSI's class it demotes.
pub const CSI_STORAGE_CLASS: &str = "csi-mounted-fs-path-sc";
pub const DISK_STORAGE_CLASS: &str = "compute-csi-default-sc";
/// The ConfigMap holding the RTX driver's package repositories (`driver.repoConfig`).
pub const REPO_CONFIG_MAP: &str = "fleetbot-driver-repositories";

/// How an add-on is installed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Install {
    /// A marketplace release. Values are never shown: they may carry private settings.
    Release {
        product_slug: String,
        namespace: String,
        application_name: String,
        #[serde(skip)]
        values: String,
        #[serde(skip)]
        set: BTreeMap<String, String>,
    },
    /// Manifests applied with server-side apply under [`FIELD_MANAGER`].
    Manifests {
        #[serde(skip)]
        documents: String,
    },
}

/// What must be true inside the cluster before an add-on counts as ready.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Promise {
    /// Every pod the DaemonSet should run is ready (and it should run at least one).
    DaemonSet { namespace: String, name: String },
    /// Every GPU node (`count` of them) advertises `quantity` of `resource`.
    GpuResource {
        resource: String,
        quantity: i64,
        count: i64,
    },
    /// The StorageClass exists and is (or is not) the default.
    StorageClass { name: String, default: bool },
    /// The SlurmCluster reports `Available`.
    SlurmCluster { namespace: String, name: String },
    /// The RayCluster is ready with all its workers.
    RayCluster {
        namespace: String,
        name: String,
        workers: i64,
    },
}

/// One add-on of one cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DesiredAddon {
    /// Stable within the cluster: `gpu-operator`, `device-plugin`, `driver-repositories`,
    /// `filesystem-csi`, `kuberay`.
    pub name: String,
    pub install: Install,
    pub promises: Vec<Promise>,
    /// 16 hex characters of SHA-256 over everything installed; changes exactly when the
    /// installed bytes do.
    pub digest: String,
}

impl DesiredAddon {
    /// An add-on with its digest computed from what it installs.
    pub fn from_parts(name: &str, install: Install, promises: Vec<Promise>) -> DesiredAddon {
        DesiredAddon::new(name, install, promises)
    }

    fn new(name: &str, install: Install, promises: Vec<Promise>) -> DesiredAddon {
        let mut h = Sha256::new();
        match &install {
            Install::Release {
                product_slug,
                namespace,
                application_name,
                values,
                set,
            } => {
                for part in [product_slug, namespace, application_name, values] {
                    h.update(part.as_bytes());
                    h.update([0]);
                }
                for (k, v) in set {
                    h.update(format!("{k}={v}\0").as_bytes());
                }
            }
            Install::Manifests { documents } => h.update(documents.as_bytes()),
        }
        DesiredAddon {
            name: name.to_string(),
            install,
            promises,
            digest: hex::encode(h.finalize())[..16].to_string(),
        }
    }

    /// What the plan shows for it: product and namespace, or the manifests.
    pub fn describe(&self) -> String {
        match &self.install {
            Install::Release {
                product_slug,
                namespace,
                ..
            } => format!("{} ({product_slug} in {namespace})", self.name),
            Install::Manifests { .. } => format!("{} (manifests)", self.name),
        }
    }
}

fn release(slug: &str, namespace: &str, app: &str, values: String) -> Install {
    Install::Release {
        product_slug: slug.into(),
        namespace: namespace.into(),
        application_name: app.into(),
        values,
        set: BTreeMap::new(),
    }
}

fn daemon_set(namespace: &str, name: &str) -> Promise {
    Promise::DaemonSet {
        namespace: namespace.into(),
        name: name.into(),
    }
}

/// A YAML scalar, quoted so it always reads back as a string.
fn quoted(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_default()
}

/// The revision hash of the RTX driver profile: changes when the profile does, so the
/// marketplace reconciles write-only values on an existing release.
fn profile_revision(selector: &str, repositories: &[(String, String)]) -> String {
    let mut h = Sha256::new();
    h.update(selector.as_bytes());
    for (name, text) in repositories {
        h.update(format!("\0{name}\0{text}").as_bytes());
    }
    hex::encode(h.finalize())[..10].to_string()
}

/// The GPU Operator's values: pinned component versions, the MIG policy, and for the RTX
/// rendering profile the driver CRD patch for exactly the requested pool.
pub fn gpu_operator_values(cluster: &ClusterSpec) -> String {
    let gpu = cluster.gpu_nodes.clone().unwrap_or_default();
    let mig = cluster.mig_enabled();
    let rtx = cluster.gpu_workload_profile == "rtx-rendering";
    let mut out = String::from("# Rendered by fleetbot; versions pinned (fleet-engine §2.6).\n");
    out.push_str(&format!(
        "operator:\n  version: {}\n",
        quoted(mig_pins::GPU_OPERATOR_VERSION)
    ));
    out.push_str(&format!(
        "driver:\n  enabled: true\n  version: {}\n  rdma:\n    enabled: false\n",
        quoted(mig_pins::GPU_DRIVER_VERSION)
    ));
    if rtx {
        // Mounted-driver mode: the Operator's driver pods build and load the driver and mount
        // it on the host, per NVIDIADriver custom resource (which the profile below patches).
        out.push_str("  nvidiaDriverCRD:\n    enabled: true\n    deployDefaultCR: false\n");
    }
    if rtx && !cluster.gpu_driver_package_repositories.is_empty() {
        out.push_str(&format!(
            "  repoConfig:\n    configMapName: {}\n",
            quoted(REPO_CONFIG_MAP)
        ));
    }
    out.push_str(&format!(
        "devicePlugin:\n  version: {}\ngfd:\n  version: {}\n",
        quoted(mig_pins::GPU_DEVICE_PLUGIN_VERSION),
        quoted(mig_pins::GPU_GFD_VERSION)
    ));
    out.push_str(&format!(
        "toolkit:\n  version: {}\n",
        quoted(mig_pins::GPU_CONTAINER_TOOLKIT_VERSION)
    ));
    if rtx {
        out.push_str("hostPaths:\n  driverInstallDir: \"/run/nvidia/driver\"\n");
    }
    if rtx {
        // Reading the containerd file keeps the host's config schema (see docs/addons.md).
        out.push_str("  env:\n    - name: RUNTIME_CONFIG_SOURCE\n      value: \"file\"\n");
    }
    out.push_str(&format!(
        "mig:\n  strategy: {}\nmigManager:\n  enabled: {mig}\n  version: {}\n",
        quoted(if mig { mig_pins::STRATEGY } else { "none" }),
        quoted(mig_pins::GPU_MIG_MANAGER_VERSION)
    ));
    if mig {
        out.push_str(&format!(
            "  config:\n    default: {}\n",
            quoted(mig_pins::CONFIG)
        ));
    }
    if rtx {
        let selector = format!("{}/{}", gpu.platform, gpu.preset);
        out.push_str(&format!(
            "nebius:\n  nvidiaDriverCRDPatch:\n    profiles:\n      - name: \"rtx-rendering\"\n        nodeSelector:\n          node.kubernetes.io/instance-type: {}\n          nebius.com/resource-preset: {}\n        rdma: false\n        revision: {}\n",
            quoted(&gpu.platform),
            quoted(&gpu.preset),
            quoted(&profile_revision(&selector, &cluster.gpu_driver_package_repositories))
        ));
    }
    out
}

/// The KubeRay CPU RayCluster's values (fleet-engine §2.7): pinned Ray and image, no
/// autoscaling, non-root pods, ingress only from the namespace itself.
pub fn kuberay_values(cluster: &ClusterSpec) -> String {
    let ray = cluster.kuberay.clone().unwrap_or_default();
    let (repository, digest) = ray_pins::RAY_IMAGE
        .split_once('@')
        .unwrap_or((ray_pins::RAY_IMAGE, ""));
    format!(
        "# Rendered by fleetbot (fleet-engine §2.7).\nrayVersion: {}\nimage:\n  repository: {}\n  digest: {}\nautoscaling:\n  enabled: false\nsecurityContext:\n  runAsNonRoot: true\n  runAsUser: 1000\n  allowPrivilegeEscalation: false\nnetworkPolicy:\n  enabled: true\n  ingress: same-namespace\nhead:\n  resources:\n    requests:\n      cpu: \"{}\"\n      memory: \"{}Gi\"\nworker:\n  replicas: {}\n  resources:\n    requests:\n      cpu: \"{}\"\n      memory: \"{}Gi\"\n",
        quoted(ray_pins::RAY_VERSION),
        quoted(repository),
        quoted(digest),
        ray_pins::HEAD_CPUS,
        ray_pins::HEAD_MEMORY_GIB,
        ray.worker_replicas,
        ray.worker_cpus,
        ray.worker_memory_gib,
    )
}

/// The CSI manifests with the cluster's data directory filled in.
pub fn csi_documents(cluster: &ClusterSpec) -> String {
    let data_dir = format!(
        "{}/csi-mounted-fs-path-data/",
        cluster.filestore_mount_path.trim_end_matches('/')
    );
    CSI_MANIFESTS.replace("__DATA_DIR__", &data_dir)
}

/// The ConfigMap of the RTX driver's package repositories.
pub fn repositories_document(cluster: &ClusterSpec) -> String {
    // The Operator's namespace comes first: the ConfigMap must exist before the release that
    // mounts it is installed.
    let mut out = format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: gpu-operator\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {REPO_CONFIG_MAP}\n  namespace: gpu-operator\n  labels:\n    app.kubernetes.io/managed-by: fleetbot\ndata:\n"
    );
    for (name, text) in &cluster.gpu_driver_package_repositories {
        out.push_str(&format!("  {name}: {}\n", quoted(text)));
    }
    out
}

/// Every add-on of an mk8s cluster, in install order.
pub fn desired_addons(cluster: &ClusterSpec) -> Vec<DesiredAddon> {
    let mut out = Vec::new();
    let gpu_nodes = cluster.gpu_count();
    if gpu_nodes > 0 {
        let per_node = gpus_per_node(&cluster.gpu_nodes.clone().unwrap_or_default().preset);
        let resources: Vec<Promise> = if cluster.mig_enabled() {
            vec![
                ("nvidia.com/mig-1g.24gb", 2 * per_node),
                ("nvidia.com/mig-2g.48gb", per_node),
            ]
        } else {
            vec![("nvidia.com/gpu", per_node)]
        }
        .into_iter()
        .map(|(resource, quantity)| Promise::GpuResource {
            resource: resource.into(),
            quantity,
            count: gpu_nodes,
        })
        .collect();
        if cluster.driver_selection().uses_managed_image() {
            let mut promises = vec![daemon_set("nvidia-device-plugin", "nvidia-device-plugin")];
            promises.extend(resources);
            out.push(DesiredAddon::new(
                "device-plugin",
                release(
                    "nebius/nvidia-device-plugin",
                    "nvidia-device-plugin",
                    "nvidia-device-plugin",
                    String::new(),
                ),
                promises,
            ));
        } else {
            if cluster.gpu_workload_profile == "rtx-rendering"
                && !cluster.gpu_driver_package_repositories.is_empty()
            {
                out.push(DesiredAddon::new(
                    "driver-repositories",
                    Install::Manifests {
                        documents: repositories_document(cluster),
                    },
                    Vec::new(),
                ));
            }
            let mut promises: Vec<Promise> = [
                "nvidia-driver-daemonset",
                "nvidia-container-toolkit-daemonset",
                "nvidia-device-plugin-daemonset",
                "gpu-feature-discovery",
            ]
            .iter()
            .map(|name| daemon_set("gpu-operator", name))
            .collect();
            if cluster.mig_enabled() {
                promises.push(daemon_set("gpu-operator", "nvidia-mig-manager"));
            }
            promises.extend(resources);
            out.push(DesiredAddon::new(
                "gpu-operator",
                release(
                    "nebius/nvidia-gpu-operator",
                    "gpu-operator",
                    "gpu-operator",
                    gpu_operator_values(cluster),
                ),
                promises,
            ));
        }
    }
    if cluster.enable_filestore {
        out.push(DesiredAddon::new(
            "filesystem-csi",
            Install::Manifests {
                documents: csi_documents(cluster),
            },
            vec![
                daemon_set("kube-system", "csi-mounted-fs-path-node"),
                Promise::StorageClass {
                    name: CSI_STORAGE_CLASS.into(),
                    default: true,
                },
                Promise::StorageClass {
                    name: DISK_STORAGE_CLASS.into(),
                    default: false,
                },
            ],
        ));
    }
    if let Some(ray) = cluster.kuberay.as_ref().filter(|k| k.enabled) {
        out.push(DesiredAddon::new(
            "kuberay",
            release(
                "nebius/ray-cluster",
                "kuberay",
                "ray-cluster",
                kuberay_values(cluster),
            ),
            vec![Promise::RayCluster {
                namespace: "kuberay".into(),
                name: "ray-cluster".into(),
                workers: ray.worker_replicas,
            }],
        ));
    }
    out
}

/// What removing a manifests add-on deletes, and what it puts back: the CSI driver goes and
/// the disk CSI's class is the default again; the repositories ConfigMap just goes.
pub fn removal_documents(name: &str) -> (String, String) {
    match name {
        "filesystem-csi" => {
            let docs: Vec<&str> = CSI_MANIFESTS.split("\n---\n").collect();
            let (last, rest) = docs.split_last().unwrap_or((&"", &[]));
            (
                rest.join("\n---\n"),
                last.replace("is-default-class: \"false\"", "is-default-class: \"true\""),
            )
        }
        "driver-repositories" => (
            format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {REPO_CONFIG_MAP}\n  namespace: gpu-operator\n"
            ),
            String::new(),
        ),
        _ => (String::new(), String::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::load_str;

    fn cluster(body: &str) -> ClusterSpec {
        let text = format!(
            "apiVersion: npa.fleet/v0.0.1\nname: f\ntenant_id: \"\"\nregion: eu-north1\nprojects:\n  - name: p\n    clusters:\n      - name: c\n{body}"
        );
        let spec = load_str(&text, "f.yaml").unwrap();
        spec.projects[0].clusters[0].clone()
    }

    #[test]
    fn the_pinned_csi_manifests_are_the_ones_in_the_repository() {
        let digest = hex::encode(Sha256::digest(CSI_MANIFESTS.as_bytes()));
        assert_eq!(digest, CSI_MANIFESTS_SHA256);
    }

    #[test]
    fn managed_image_gets_the_device_plugin_and_operator_mode_the_pinned_operator() {
        let auto = cluster(
            "        gpu_nodes: {count: 2, platform: gpu-rtx6000, preset: 1gpu-24vcpu-218gb}\n",
        );
        let names: Vec<String> = desired_addons(&auto).into_iter().map(|a| a.name).collect();
        assert_eq!(names, ["device-plugin"]);
        let op = cluster(
            "        gpu_driver_mode: operator\n        gpu_nodes: {count: 2, platform: gpu-rtx6000, preset: 1gpu-24vcpu-218gb}\n",
        );
        let addons = desired_addons(&op);
        assert_eq!(addons[0].name, "gpu-operator");
        let Install::Release {
            values,
            product_slug,
            ..
        } = &addons[0].install
        else {
            panic!("a release");
        };
        assert_eq!(product_slug, "nebius/nvidia-gpu-operator");
        let v: serde_yaml::Value = serde_yaml::from_str(values).unwrap();
        assert_eq!(v["driver"]["version"].as_str(), Some("580.173.02"));
        assert_eq!(v["devicePlugin"]["version"].as_str(), Some("v0.19.3"));
        assert_eq!(v["mig"]["strategy"].as_str(), Some("none"));
        assert!(v.get("nebius").is_none());
        assert!(addons[0].promises.contains(&Promise::GpuResource {
            resource: "nvidia.com/gpu".into(),
            quantity: 1,
            count: 2
        }));
        // No GPUs, no GPU add-ons; the digest follows the values.
        assert!(
            desired_addons(&cluster(
                "        cpu_nodes: {count: 1, platform: cpu-d3, preset: 16vcpu-64gb}\n"
            ))
            .is_empty()
        );
        assert_ne!(desired_addons(&auto)[0].digest, addons[0].digest);
    }

    #[test]
    fn rtx_rendering_patches_exactly_its_pool_with_rdma_off_and_the_repositories() {
        let rtx = cluster(
            "        gpu_workload_profile: rtx-rendering\n        gpu_nodes: {count: 1, platform: gpu-rtx6000-a}\n        gpu_driver_package_repositories:\n          ubuntu.sources: \"Types: deb\\n\"\n",
        );
        let addons = desired_addons(&rtx);
        let names: Vec<&str> = addons.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["driver-repositories", "gpu-operator"]);
        let Install::Release { values, .. } = &addons[1].install else {
            panic!("a release");
        };
        let v: serde_yaml::Value = serde_yaml::from_str(values).unwrap();
        let profiles = &v["nebius"]["nvidiaDriverCRDPatch"]["profiles"];
        assert_eq!(profiles.as_sequence().unwrap().len(), 1);
        assert_eq!(
            profiles[0]["nodeSelector"]["node.kubernetes.io/instance-type"].as_str(),
            Some("gpu-rtx6000-a")
        );
        assert_eq!(
            profiles[0]["nodeSelector"]["nebius.com/resource-preset"].as_str(),
            Some("1gpu-24vcpu-218gb")
        );
        assert_eq!(profiles[0]["rdma"].as_bool(), Some(false));
        assert_eq!(profiles[0]["revision"].as_str().unwrap().len(), 10);
        assert_eq!(
            v["driver"]["nvidiaDriverCRD"]["enabled"].as_bool(),
            Some(true)
        );
        assert_eq!(
            v["hostPaths"]["driverInstallDir"].as_str(),
            Some("/run/nvidia/driver")
        );
        assert_eq!(
            v["driver"]["repoConfig"]["configMapName"].as_str(),
            Some(REPO_CONFIG_MAP)
        );
        let Install::Manifests { documents } = &addons[0].install else {
            panic!("manifests");
        };
        let cm: serde_yaml::Value =
            serde_yaml::from_str(documents.split("---\n").nth(1).unwrap()).unwrap();
        assert_eq!(cm["data"]["ubuntu.sources"].as_str(), Some("Types: deb\n"));
    }

    #[test]
    fn filestore_and_kuberay_bring_the_csi_driver_and_the_ray_cluster() {
        let c = cluster(
            "        enable_filestore: true\n        filestore_mount_path: /mnt/shared\n        cpu_nodes: {count: 2, platform: cpu-d3, preset: 16vcpu-64gb}\n        kuberay: {enabled: true, worker_replicas: 2}\n",
        );
        let addons = desired_addons(&c);
        let Install::Manifests { documents } = &addons[0].install else {
            panic!("manifests");
        };
        assert!(documents.contains("--data-dir=/mnt/shared/csi-mounted-fs-path-data/"));
        assert!(!documents.contains("__DATA_DIR__"));
        let Install::Release { values, .. } = &addons[1].install else {
            panic!("a release");
        };
        let v: serde_yaml::Value = serde_yaml::from_str(values).unwrap();
        assert_eq!(v["rayVersion"].as_str(), Some("2.58.0"));
        assert_eq!(v["autoscaling"]["enabled"].as_bool(), Some(false));
        assert_eq!(v["worker"]["replicas"].as_i64(), Some(2));
        assert_eq!(v["securityContext"]["runAsNonRoot"].as_bool(), Some(true));
        let (delete, restore) = removal_documents("filesystem-csi");
        assert!(
            delete.contains("csi-mounted-fs-path-node")
                && !delete.contains("compute-csi-default-sc")
        );
        assert!(restore.contains("compute-csi-default-sc") && restore.contains("\"true\""));
    }
}
