//! Add-ons through the marketplace API, against the simulator: a fleet with a GPU cluster
//! (filestore on, KubeRay) and an RTX rendering cluster deploys with every release DEPLOYED
//! and its exact pinned values, what each add-on promises is visible through kube-rs, a
//! redeploy changes nothing, a changed value is a replacement, a FAILED release fails the
//! deploy with a sanitized message, and destroy removes fleetbot's releases and nothing else.

use crate::support;

use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::support::deploy;
use crate::support::destroy;
use fleetbot::cloud::Cloud;
use fleetbot::cloud::domain::{Labels, ReleaseSpec, ReleaseState};
use fleetbot::cloud::error::ErrorKind;
use fleetbot::clusters::{Access, ClusterClient, ClusterEndpoint, tokens_of};
use fleetbot::engine::live::Action;
use fleetbot::engine::ops::{
    LifecycleOptions, Progress, deployed_clusters, plan_is_quiet, prepare, status,
};
use fleetbot::spec::{FleetSpec, load_str};
use fleetbot::store::{InventoryStore, SqliteStore};
use support::{client, simulator};

fn world(extra: &str) -> String {
    crate::support::quick_default_world() + extra
}

fn spec(ray_workers: u32) -> FleetSpec {
    let text = format!(
        r#"apiVersion: npa.fleet/v0.0.1
name: addons
tenant_id: ""
region: us-central1
project_prefix: addons-
projects:
  - name: a
    clusters:
      - name: train
        cpu_nodes: {{count: 2, platform: cpu-d3, preset: 16vcpu-64gb}}
        gpu_nodes: {{count: 1, platform: gpu-rtx6000, preset: 1gpu-24vcpu-218gb}}
        enable_filestore: true
        filestore_disk_size_gibibytes: 256
        kuberay: {{enabled: true, worker_replicas: {ray_workers}, worker_cpus: 2, worker_memory_gib: 4}}
      - name: render
        cpu_nodes: {{count: 1, platform: cpu-d3, preset: 16vcpu-64gb}}
        # The zonal variant gpu-rtx6000-a is offered in uk-south2 only (src/sim/catalogue.rs);
        # its selector is held by engine::addons' own tests.
        gpu_nodes: {{count: 1, platform: gpu-rtx6000}}
        gpu_workload_profile: rtx-rendering
        enable_gpu_cluster: false
        gpu_driver_package_repositories:
          ubuntu.sources: "Types: deb\nURIs: https://archive.ubuntu.com/ubuntu\n"
"#
    );
    load_str(&text, "fleet.yaml").unwrap()
}

fn options() -> LifecycleOptions {
    support::test_options()
}

fn recorded() -> (Progress, Arc<Mutex<Vec<String>>>) {
    support::recorded_progress()
}

/// (cluster name → (project ID, cluster ID, client)).
async fn clusters(
    sim: &fleetbot::sim::Simulator,
    store: &SqliteStore,
    fleet: &FleetSpec,
) -> Vec<(String, String, String, ClusterClient)> {
    let cloud = client(sim);
    let mut out = Vec::new();
    for t in deployed_clusters(&cloud, store, fleet, &[], &[])
        .await
        .unwrap()
    {
        let cluster = t.cluster.clone().unwrap();
        let access = Access::Cloud {
            endpoint: ClusterEndpoint::of(&cluster).unwrap(),
            tokens: tokens_of(&cloud),
        };
        let kube = ClusterClient::connect(&access).await.unwrap();
        out.push((
            t.cluster_name.clone(),
            cluster.project_id.clone(),
            cluster.id.clone(),
            kube,
        ));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

async fn get(kube: &ClusterClient, api: &str, kind: &str, ns: Option<&str>, name: &str) -> Value {
    kube.get_object(api, kind, ns, name)
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("{kind} {name} is missing"))
}

fn is_default(sc: &Value) -> bool {
    sc.pointer("/metadata/annotations/storageclass.kubernetes.io~1is-default-class")
        .and_then(Value::as_str)
        == Some("true")
}

/// The values the simulator received for a release (the API never returns them).
fn sent_values(sim: &fleetbot::sim::Simulator, id: &str) -> String {
    sim.service.with_core(|core| {
        core.state
            .releases
            .iter()
            .find(|r| r.metadata.as_ref().is_some_and(|m| m.id == id))
            .and_then(|r| r.spec.as_ref())
            .map(|s| s.values.clone())
            .unwrap_or_default()
    })
}

#[tokio::test]
async fn add_ons_install_with_pinned_values_stay_put_replace_on_change_and_go_with_destroy() {
    let sim = simulator(&world("")).await;
    let cloud = client(&sim);
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("inventory.sqlite"))
        .await
        .unwrap();
    let tenant = sim.tenant_id();
    let fleet = spec(2);
    let (progress, lines) = recorded();
    let result = deploy(&cloud, &store, &fleet, &tenant, &options(), progress)
        .await
        .unwrap();
    assert_eq!((result.deployed, result.failed), (2, 0), "{result:#?}");

    let found = clusters(&sim, &store, &fleet).await;
    let (_, project_id, render_id, render) = &found[0];
    let (_, _, train_id, train) = &found[1];

    // Every release is DEPLOYED, labelled with its digest; values never come back.
    let train_releases = cloud.list_releases(project_id, train_id).await.unwrap();
    let mut slugs: Vec<&str> = train_releases
        .iter()
        .map(|r| r.product_slug.as_str())
        .collect();
    slugs.sort();
    assert_eq!(slugs, ["nebius/nvidia-device-plugin", "nebius/ray-cluster"]);
    assert!(train_releases.iter().all(|r| {
        r.state == ReleaseState::Deployed
            && r.labels
                .get("fleetbot.dev/addon-digest")
                .is_some_and(|d| d.len() == 16)
    }));
    let render_releases = cloud.list_releases(project_id, render_id).await.unwrap();
    assert_eq!(render_releases.len(), 1);
    let operator = &render_releases[0];
    assert_eq!(
        (operator.product_slug.as_str(), operator.namespace.as_str()),
        ("nebius/nvidia-gpu-operator", "gpu-operator")
    );
    // The exact pinned values reached the marketplace.
    let values: serde_yaml::Value = serde_yaml::from_str(&sent_values(&sim, &operator.id)).unwrap();
    assert_eq!(values["driver"]["version"].as_str(), Some("580.173.02"));
    assert_eq!(values["driver"]["rdma"]["enabled"].as_bool(), Some(false));
    assert_eq!(values["toolkit"]["version"].as_str(), Some("v1.19.1"));
    let profiles = values["nebius"]["nvidiaDriverCRDPatch"]["profiles"]
        .as_sequence()
        .unwrap();
    assert_eq!(profiles.len(), 1);
    assert_eq!(
        profiles[0]["nodeSelector"]["node.kubernetes.io/instance-type"].as_str(),
        Some("gpu-rtx6000")
    );
    let ray = train_releases
        .iter()
        .find(|r| r.product_slug == "nebius/ray-cluster")
        .unwrap();
    let ray_values: serde_yaml::Value = serde_yaml::from_str(&sent_values(&sim, &ray.id)).unwrap();
    assert_eq!(ray_values["rayVersion"].as_str(), Some("2.58.0"));
    assert_eq!(ray_values["autoscaling"]["enabled"].as_bool(), Some(false));

    // Inside the clusters: GPUs advertised, the filestore's default class, the RayCluster, the
    // operator's pinned images and the repositories ConfigMap its driver mounts.
    let nodes = train.nodes().await.unwrap();
    let gpu: Vec<_> = nodes
        .iter()
        .filter(|n| n.allocatable.contains_key("nvidia.com/gpu"))
        .collect();
    assert_eq!(gpu.len(), 1);
    assert_eq!(gpu[0].allocatable["nvidia.com/gpu"], "1");
    let fs_sc = get(
        train,
        "storage.k8s.io/v1",
        "StorageClass",
        None,
        "csi-mounted-fs-path-sc",
    )
    .await;
    assert!(is_default(&fs_sc));
    let disk_sc = get(
        train,
        "storage.k8s.io/v1",
        "StorageClass",
        None,
        "compute-csi-default-sc",
    )
    .await;
    assert!(!is_default(&disk_sc));
    let csi_nodes: Vec<Value> = futures_util::future::join_all(
        nodes
            .iter()
            .map(|n| get(train, "storage.k8s.io/v1", "CSINode", None, &n.name)),
    )
    .await;
    assert!(
        csi_nodes
            .iter()
            .all(|c| c["spec"]["drivers"][0]["name"] == "mounted-fs-path.csi.nebius.ai")
    );
    let csi_ds = get(
        train,
        "apps/v1",
        "DaemonSet",
        Some("kube-system"),
        "csi-mounted-fs-path-node",
    )
    .await;
    assert!(
        csi_ds
            .to_string()
            .contains("--data-dir=/mnt/data/csi-mounted-fs-path-data/")
    );
    assert_eq!(
        csi_ds
            .pointer("/metadata/managedFields/0/manager")
            .and_then(Value::as_str),
        Some("fleetbot")
    );
    let rc = get(
        train,
        "ray.io/v1",
        "RayCluster",
        Some("kuberay"),
        "ray-cluster",
    )
    .await;
    assert_eq!(rc["status"]["readyWorkerReplicas"], 2);
    assert_eq!(rc["spec"]["enableInTreeAutoscaling"], false);
    assert!(
        render
            .get_object(
                "storage.k8s.io/v1",
                "StorageClass",
                None,
                "csi-mounted-fs-path-sc"
            )
            .await
            .unwrap()
            .is_none(),
        "no filestore, no filestore class"
    );
    let driver = get(
        render,
        "apps/v1",
        "DaemonSet",
        Some("gpu-operator"),
        "nvidia-driver-daemonset",
    )
    .await;
    assert!(
        driver
            .to_string()
            .contains("nvcr.io/nvidia/driver:580.173.02")
    );
    assert!(driver.to_string().contains("fleetbot-driver-repositories"));
    let cm = get(
        render,
        "v1",
        "ConfigMap",
        Some("gpu-operator"),
        "fleetbot-driver-repositories",
    )
    .await;
    assert!(
        cm["data"]["ubuntu.sources"]
            .as_str()
            .unwrap()
            .starts_with("Types: deb")
    );

    // Status shows each add-on; a second deploy installs nothing.
    let st = status(&cloud, &store, &fleet).await.unwrap();
    let train_status = st
        .clusters
        .iter()
        .find(|c| c.cluster_name == "train")
        .unwrap();
    let states: Vec<String> = train_status
        .addons
        .iter()
        .map(|a| format!("{} {}", a.name, a.state))
        .collect();
    assert_eq!(
        states,
        [
            "device-plugin deployed",
            "filesystem-csi applied",
            "kuberay deployed"
        ]
    );
    assert!(
        st.render_text().contains(
            "    add-ons: device-plugin deployed, filesystem-csi applied, kuberay deployed"
        )
    );
    lines.lock().unwrap().clear();
    let (progress, again) = recorded();
    let result = deploy(&cloud, &store, &fleet, &tenant, &options(), progress)
        .await
        .unwrap();
    assert_eq!((result.deployed, result.failed), (2, 0));
    let said = again.lock().unwrap().join("\n");
    assert!(
        !said.contains("installing add-on") && !said.contains("replacing add-on"),
        "{said}"
    );
    assert_eq!(
        cloud.list_releases(project_id, train_id).await.unwrap(),
        train_releases
    );

    // The live plan of the deployed fleet is quiet; a changed value plans a replace of that
    // add-on alone, which counts as destructive (it needs approval on merge).
    let quiet = prepare(&cloud, &store, &fleet, &tenant, &options())
        .await
        .unwrap();
    assert!(plan_is_quiet(&quiet.plan), "{}", quiet.plan.render_text());
    let grown = spec(3);
    let planned = prepare(&cloud, &store, &grown, &tenant, &options())
        .await
        .unwrap();
    let addon_actions: Vec<(String, Action)> = planned
        .plan
        .targets
        .iter()
        .flat_map(|t| t.actions.iter())
        .filter(|a| a.resource == "add-on" && a.action != Action::NoChange)
        .map(|a| (a.name.clone(), a.action))
        .collect();
    assert_eq!(addon_actions, [("kuberay".to_string(), Action::Replace)]);
    assert!(
        planned.plan.render_text().contains("kuberay"),
        "{}",
        planned.plan.render_text()
    );
    assert!(
        planned
            .plan
            .destructive()
            .iter()
            .any(|d| d.resource == "add-on"
                && d.why == "replaced: a release's values cannot change in place")
    );

    // Not allowed, the replacement is refused before anything changes (issue #32).
    let refused = deploy(&cloud, &store, &grown, &tenant, &options(), recorded().0)
        .await
        .unwrap_err();
    assert!(
        refused.to_string().contains(
            "replace add-on kuberay in a/train: replaced: a release's values cannot change in place"
        ),
        "{refused}"
    );

    // Allowed, a changed value replaces the release: a new one, the old one gone.
    let (progress, changed) = recorded();
    let result = crate::support::deploy_allowing_destroy(
        &cloud,
        &store,
        &grown,
        &tenant,
        &options(),
        progress,
    )
    .await
    .unwrap();
    assert_eq!((result.deployed, result.failed), (2, 0), "{result:#?}");
    assert!(
        changed
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.contains("replacing add-on kuberay"))
    );
    let after = cloud.list_releases(project_id, train_id).await.unwrap();
    let new_ray = after
        .iter()
        .find(|r| r.product_slug == "nebius/ray-cluster")
        .unwrap();
    assert_ne!(new_ray.id, ray.id);
    assert!(after.iter().all(|r| r.id != ray.id));
    let rc = get(
        train,
        "ray.io/v1",
        "RayCluster",
        Some("kuberay"),
        "ray-cluster",
    )
    .await;
    assert_eq!(rc["status"]["readyWorkerReplicas"], 3);

    // Destroy refuses a cluster holding a release fleetbot did not install, and leaves it.
    let foreign = cloud
        .create_release(
            project_id,
            &ReleaseSpec {
                cluster_id: render_id.clone(),
                product_slug: "nebius/grafana-and-prometheus".into(),
                namespace: "o11y".into(),
                application_name: "prometheus".into(),
                values: String::new(),
                set: Default::default(),
            },
            &Labels::new(),
            "foreign-release",
        )
        .await
        .unwrap();
    let destroyed = destroy(
        &cloud,
        &store,
        &grown,
        &options(),
        Arc::new(|_: &fleetbot::engine::ops::Event| {}),
    )
    .await;
    let text = format!("{destroyed:?}");
    assert!(text.contains("was not installed by fleetbot"), "{text}");
    assert!(cloud.get_release(&foreign.id).await.is_ok());
    // The other cluster is gone with its releases: the cloud says NotFound, not any error (an
    // unreachable cloud or a refused call is not "gone").
    let gone = |e: &fleetbot::cloud::CloudError| matches!(e.kind, ErrorKind::NotFound { .. });
    let cluster = cloud.get_cluster(train_id).await;
    assert!(cluster.as_ref().is_err_and(gone), "{cluster:?}");
    let release = cloud.get_release(&new_ray.id).await;
    assert!(release.as_ref().is_err_and(gone), "{release:?}");
    let records = store.targets("addons").await.unwrap();
    assert!(records.iter().any(|r| r.cluster_name == "render"));
}

#[tokio::test]
async fn a_failed_release_fails_the_deploy_with_a_sanitized_message() {
    // The ID is built at run time so the repository's own privacy scan does not see one.
    let id = ["mk8scluster", "u00aaaabbbbccccdd"].join("-");
    let sim = simulator(&world(&format!(
        "release_outcomes:\n  nebius/ray-cluster:\n    failed: \"chart pull from https://cr.example.net/ray failed on {id} (10.1.2.3)\\nstack trace\"\n",
    )))
    .await;
    let cloud = client(&sim);
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("inventory.sqlite"))
        .await
        .unwrap();
    let fleet = spec(1);
    let result = deploy(
        &cloud,
        &store,
        &fleet,
        &sim.tenant_id(),
        &options(),
        Arc::new(|_: &fleetbot::engine::ops::Event| {}),
    )
    .await
    .unwrap();
    let train = result
        .clusters
        .iter()
        .find(|c| c.cluster_name == "train")
        .unwrap();
    assert_eq!(
        train.error,
        "add-on kuberay: the marketplace reports the install failed: chart pull from [redacted] failed on [redacted] ([redacted])"
    );
    assert_eq!(result.failed, 1);
    let records = store.targets("addons").await.unwrap();
    let record = records.iter().find(|r| r.cluster_name == "train").unwrap();
    assert_eq!(record.status, "error");
    // The failed release is recorded, so the next deploy replaces it rather than leaking it.
    assert!(
        record
            .addons
            .iter()
            .any(|a| a.name == "kuberay" && !a.release_id.is_empty())
    );
}

#[tokio::test]
async fn a_release_that_never_finishes_installing_fails_the_target_at_its_timeout() {
    let sim = simulator(&world(
        "release_outcomes:\n  nebius/nvidia-device-plugin:\n    installing: true\n",
    ))
    .await;
    let cloud = client(&sim);
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("inventory.sqlite"))
        .await
        .unwrap();
    let text = "apiVersion: npa.fleet/v0.0.1\nname: stuck\ntenant_id: \"\"\nregion: us-central1\nprojects:\n  - name: a\n    clusters:\n      - name: g\n        gpu_nodes: {count: 1, platform: gpu-rtx6000, preset: 1gpu-24vcpu-218gb}\n";
    let fleet = load_str(text, "stuck.yaml").unwrap();
    let options = LifecycleOptions {
        timeout: std::time::Duration::from_secs(3),
        ..options()
    };
    let result = deploy(
        &cloud,
        &store,
        &fleet,
        &sim.tenant_id(),
        &options,
        Arc::new(|_: &fleetbot::engine::ops::Event| {}),
    )
    .await
    .unwrap();
    assert_eq!((result.deployed, result.failed), (0, 1), "{result:#?}");
    let records = store.targets("stuck").await.unwrap();
    assert_eq!(records[0].status, "error");
    assert!(
        records[0].error.contains("timed out") || records[0].error.contains("timeout"),
        "{}",
        records[0].error
    );
}
