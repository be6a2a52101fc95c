//! Object-storage readiness, the engine against the simulator over gRPC and S3: a deployed
//! bucket is read back and probed with fleetbot's own service account and key, the probe
//! leaves nothing behind, the key's secret reaches neither the inventory nor the output, and
//! a bucket that reads back wrong or an S3 endpoint that loses writes fails the deploy with
//! the field or step named.

use crate::support;

use std::sync::{Arc, Mutex};

use fleetbot::cloud::Cloud;
use fleetbot::engine::ops::{
    KEY_DESCRIPTION, LifecycleOptions, ObjectStorageResult, PROBE_PREFIX, Progress, SERVICE_ACCOUNT,
};
use fleetbot::spec::load_str;
use fleetbot::store::SqliteStore;
use support::{client, deploy, simulator};

fn world(extra: &str) -> String {
    let base = crate::support::quick_default_world();
    format!("{base}\n{extra}")
}

const SPEC: &str = r#"apiVersion: npa.fleet/v0.0.1
name: s3
tenant_id: ""
region: us-central1
project_prefix: s3-
defaults:
  cpu_nodes: {count: 1, platform: cpu-d3, preset: 16vcpu-64gb}
projects:
  - name: data
    object_storage: {storage_class: enhanced, size_gibibytes: 16}
    clusters:
      - name: train
"#;

fn options() -> LifecycleOptions {
    support::test_options()
}

fn recording() -> (Progress, Arc<Mutex<Vec<String>>>) {
    support::recorded_progress()
}

/// Deploys SPEC into a simulator of `world`; the result, the progress lines and the store's
/// directory.
async fn deploy_into(
    world: &str,
) -> (
    fleetbot::sim::Simulator,
    fleetbot::engine::ops::DeployResult,
    Vec<String>,
    tempfile::TempDir,
) {
    let sim = simulator(world).await;
    let cloud = client(&sim);
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("inventory.sqlite"))
        .await
        .unwrap();
    let fleet = load_str(SPEC, "fleet.yaml").unwrap();
    let (progress, lines) = recording();
    let result = deploy(
        &cloud,
        &store,
        &fleet,
        &sim.tenant_id(),
        &options(),
        progress,
    )
    .await
    .unwrap();
    let lines = lines.lock().unwrap().clone();
    (sim, result, lines, dir)
}

/// Every byte under `dir` (the SQLite file and its journal), as text.
fn everything_in(dir: &std::path::Path) -> String {
    let mut out = String::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            out.push_str(&String::from_utf8_lossy(&std::fs::read(&path).unwrap()));
        }
    }
    out
}

#[tokio::test]
async fn a_deployed_bucket_is_ready_probed_and_leaves_no_secret_behind() {
    let (sim, result, lines, dir) = deploy_into(&world("")).await;
    assert_eq!(result.deployed, 1, "{}", result.render_text());
    let storage = result.clusters[0].object_storage.clone();
    assert_eq!(
        storage,
        Some(ObjectStorageResult {
            enabled: true,
            status: "ready".into(),
            storage_class: "enhanced_throughput".into(),
            size_gibibytes: 16,
            writable: true,
            retained_on_destroy: true,
        })
    );
    let json = serde_json::to_value(&result.clusters[0]).unwrap();
    assert_eq!(json["object_storage"]["status"], "ready");

    // The probe object is gone; the bucket holds nothing.
    let objects = sim.service.with_core(|c| c.state.objects.clone());
    assert!(
        objects.iter().all(|o| !o.key.starts_with(PROBE_PREFIX)),
        "{objects:?}"
    );

    // fleetbot's own service account and one key of it exist.
    let cloud = client(&sim);
    let project = result.clusters[0].project_id.clone();
    let account = cloud
        .find_service_account(&project, SERVICE_ACCOUNT)
        .await
        .unwrap()
        .expect("the service account exists");
    assert!(account.active);
    let keys = cloud.list_access_keys(&account.id).await.unwrap();
    assert_eq!(keys.len(), 1, "{keys:?}");
    assert_eq!(keys[0].description, KEY_DESCRIPTION);
    assert_eq!(keys[0].state, "ACTIVE");

    // Its secret is nowhere: not in the inventory, the progress output or the result.
    let secret = cloud.get_access_key_secret(&keys[0].id).await.unwrap();
    let secret = secret.expose().to_string();
    assert!(secret.len() >= 20);
    assert!(!everything_in(dir.path()).contains(&secret));
    assert!(!lines.join("\n").contains(&secret));
    assert!(!serde_json::to_string(&result).unwrap().contains(&secret));
    assert!(!format!("{result:?}").contains(&secret));

    // A second deploy reuses the account and the key.
    let store = SqliteStore::open(&dir.path().join("inventory.sqlite"))
        .await
        .unwrap();
    let fleet = load_str(SPEC, "fleet.yaml").unwrap();
    let again = deploy(
        &cloud,
        &store,
        &fleet,
        &sim.tenant_id(),
        &options(),
        Arc::new(|_: &fleetbot::engine::ops::Event| {}),
    )
    .await
    .unwrap();
    assert_eq!(again.deployed, 1, "{}", again.render_text());
    assert_eq!(cloud.list_access_keys(&account.id).await.unwrap(), keys);
}

/// The deploy failed on the project, with `needle` in the message.
fn failed_with(result: &fleetbot::engine::ops::DeployResult, needle: &str) {
    assert_eq!(result.deployed, 0, "{}", result.render_text());
    let error = &result.clusters[0].error;
    assert!(error.contains(needle), "{error}");
    assert!(result.clusters[0].object_storage.is_none());
}

#[tokio::test]
async fn a_suspended_bucket_fails_the_deploy_naming_the_suspension() {
    let (_sim, result, _, _dir) =
        deploy_into(&world("object_storage: {suspend_buckets: true}\n")).await;
    failed_with(
        &result,
        "object-storage bucket read-back: the bucket is suspended",
    );
}

#[tokio::test]
async fn a_bucket_of_another_class_fails_the_deploy_naming_the_field() {
    let (_sim, result, _, _dir) =
        deploy_into(&world("object_storage: {report_storage_class: STANDARD}\n")).await;
    failed_with(
        &result,
        "object-storage bucket read-back: storage class is standard, the spec asks for enhanced_throughput",
    );
}

#[tokio::test]
async fn reads_that_return_other_bytes_fail_the_probe() {
    let (sim, result, _, _dir) =
        deploy_into(&world("object_storage: {corrupt_reads: true}\n")).await;
    failed_with(
        &result,
        "object-storage write/read/delete probe did not pass: read:",
    );
    // The probe still cleaned up after itself.
    assert!(sim.service.with_core(|c| c.state.objects.is_empty()));
}

#[tokio::test]
async fn deletes_that_keep_the_object_fail_the_probe() {
    let (_sim, result, _, _dir) =
        deploy_into(&world("object_storage: {ignore_deletes: true}\n")).await;
    failed_with(
        &result,
        "object-storage write/read/delete probe did not pass: delete: the probe object is still there",
    );
}
