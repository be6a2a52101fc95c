//! Removal converges through the engine: each removable thing fleetbot manages, taken away
//! in the spec (or added behind fleetbot's back), is deployed and the next live plan is
//! unchanged. On a Nebius that keeps what an Update leaves unset, a client sending no reset
//! mask would plan the same change forever.

use std::sync::Arc;

use fleetbot::cloud::Cloud;
use fleetbot::cloud::domain::NodeGroup;
use fleetbot::engine::ops::{LifecycleOptions, Progress, plan_is_quiet, prepare};
use fleetbot::spec::{FleetSpec, load_str};
use fleetbot::store::SqliteStore;

use crate::support::{client, deploy_allowing_destroy, empty_default_world, simulator};

const KEY: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExampleKeyForTestsOnly fleetbot-test";

fn fleet(cpu: i64, gpu_mode: &str, filestore: bool, bucket_gib: i64) -> FleetSpec {
    let text = format!(
        "apiVersion: npa.fleet/v0.0.1\nname: rm\nregion: us-central1\nproject_prefix: rm-\nprojects:\n  - name: a\n    object_storage: {{size_gibibytes: {bucket_gib}}}\n    clusters:\n      - name: c\n        cpu_nodes: {{count: {cpu}, platform: cpu-d3, preset: 4vcpu-16gb}}\n        gpu_nodes: {{count: 1, platform: gpu-h200-sxm, preset: 1gpu-16vcpu-200gb}}\n        gpu_driver_mode: {gpu_mode}\n        enable_filestore: {filestore}\n"
    );
    load_str(&text, "fleet.yaml").unwrap()
}

fn options(key: &str) -> LifecycleOptions {
    LifecycleOptions {
        ssh_public_key: key.into(),
        ..LifecycleOptions::default()
    }
}

fn quiet() -> Progress {
    Arc::new(|_: &fleetbot::engine::ops::Event| {})
}

async fn groups(cloud: &fleetbot::cloud::NebiusClient, tenant: &str) -> Vec<NodeGroup> {
    let project = cloud
        .list_projects(tenant)
        .await
        .unwrap()
        .into_iter()
        .find(|p| p.name == "rm-a")
        .unwrap();
    let cluster = cloud.list_clusters(&project.id).await.unwrap().remove(0);
    let mut groups = cloud.list_node_groups(&cluster.id).await.unwrap();
    groups.sort_by(|a, b| a.name.cmp(&b.name));
    groups
}

async fn converges(
    cloud: &fleetbot::cloud::NebiusClient,
    store: &SqliteStore,
    spec: &FleetSpec,
    tenant: &str,
    key: &str,
    what: &str,
) {
    // Removal is what is under test, so it is allowed (`deploy --allow-destroy`).
    let result = deploy_allowing_destroy(cloud, store, spec, tenant, &options(key), quiet())
        .await
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(result.failed, 0, "{what}: {result:#?}");
    let again = prepare(cloud, store, spec, tenant, &options(key))
        .await
        .unwrap();
    assert!(
        plan_is_quiet(&again.plan),
        "{what}: the next plan is not unchanged:\n{}",
        again.plan.render_text()
    );
}

#[tokio::test]
async fn every_removal_deploys_and_the_next_plan_is_unchanged() {
    let sim = simulator(&empty_default_world()).await;
    let cloud = client(&sim);
    let tenant = sim.tenant_id();
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("inventory.sqlite"))
        .await
        .unwrap();

    let full = fleet(2, "managed-image", true, 1024);
    converges(&cloud, &store, &full, &tenant, KEY, "the first deploy").await;
    let before = groups(&cloud, &tenant).await;
    let gpu = before.iter().find(|g| g.name.contains("gpu")).unwrap();
    assert!(!gpu.spec.drivers_preset.is_empty(), "{:?}", gpu.spec);
    assert!(!gpu.spec.filesystems.is_empty());

    // Drivers preset (GPU settings), filesystem attachment, cloud-init (no mount, no key), a
    // smaller pool and a smaller bucket cap, all in one change.
    let fewer = fleet(1, "operator", false, 512);
    converges(&cloud, &store, &fewer, &tenant, "", "the removals").await;
    let after = groups(&cloud, &tenant).await;
    let gpu = after.iter().find(|g| g.name.contains("gpu")).unwrap();
    let cpu = after.iter().find(|g| g.name.contains("cpu")).unwrap();
    assert_eq!(gpu.spec.drivers_preset, "");
    assert!(gpu.spec.filesystems.is_empty() && cpu.spec.filesystems.is_empty());
    assert_eq!(cpu.spec.node_count, 1);
    assert_eq!(cpu.spec.cloud_init_user_data, "#cloud-config\n");

    // Node labels and resource labels someone added are removed by the next deploy.
    for g in &after {
        let mut spec = g.spec.clone();
        spec.node_labels.insert("added".into(), "by-hand".into());
        let mut resource = g.labels.clone();
        resource.insert("added".into(), "by-hand".into());
        cloud
            .update_node_group(&g.id, &spec, &resource, &format!("by-hand-{}", g.id))
            .await
            .unwrap();
    }
    let drifted = prepare(&cloud, &store, &fewer, &tenant, &options(""))
        .await
        .unwrap();
    assert!(!plan_is_quiet(&drifted.plan));
    converges(&cloud, &store, &fewer, &tenant, "", "the labels").await;
    for g in groups(&cloud, &tenant).await {
        assert!(!g.spec.node_labels.contains_key("added"), "{:?}", g.spec);
        assert!(!g.labels.contains_key("added"), "{:?}", g.labels);
    }
}
