//! `verify-storage` through the library against the simulator, whose kubelet runs fleetbot's
//! own probe as real processes on each node's host files and one real filestore per cluster:
//! a healthy cluster passes with exact counts and GiB, and each way a cluster can be broken
//! fails closed with its category, while cleanup still runs and nothing of the run is left.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use tokio::sync::watch;

use crate::support::deploy;
use fleetbot::clusters::{Access, ClusterClient, ClusterEndpoint, tokens_of};
use fleetbot::engine::ops::deployed_clusters;
use fleetbot::probe::storage::host_probe_dir;
use fleetbot::sim::Simulator;
use fleetbot::sim::k8s::hosts::HostFault;
use fleetbot::spec::{FleetSpec, load_str};
use fleetbot::store::SqliteStore;
use fleetbot::verify::{Category, StorageOptions, StorageReport, verify_storage};
use support::{client, simulator, test_options};

fn image() -> String {
    format!("registry.example/fleetbot-probe@sha256:{}", "5".repeat(64))
}

const SPEC: &str = "apiVersion: npa.fleet/v0.0.1
name: verify
tenant_id: \"\"
region: us-central1
projects:
  - name: a
    clusters:
      - name: c
        cpu_nodes: {count: 2, platform: cpu-d3, preset: 16vcpu-64gb}
        enable_filestore: true
        filestore_disk_size_gibibytes: 64
      - name: nofs
        cpu_nodes: {count: 1, platform: cpu-d3, preset: 16vcpu-64gb}
        enable_filestore: false
";

struct World {
    sim: Simulator,
    store: SqliteStore,
    spec: FleetSpec,
    kube: ClusterClient,
    _dir: tempfile::TempDir,
}

async fn world() -> World {
    let sim = simulator(&crate::support::quick_default_world()).await;
    sim.kube
        .shared
        .set_image(&image(), env!("CARGO_BIN_EXE_fleetbot").into());
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("inventory.sqlite"))
        .await
        .unwrap();
    let spec = load_str(SPEC, "verify.yaml").unwrap();
    let cloud = client(&sim);
    let result = deploy(
        &cloud,
        &store,
        &spec,
        &sim.tenant_id(),
        &test_options(),
        Arc::new(|_: &fleetbot::engine::ops::Event| {}),
    )
    .await
    .unwrap();
    assert_eq!(result.deployed, 2, "{result:#?}");
    let target = deployed_clusters(&cloud, &store, &spec, &[], &["c".into()])
        .await
        .unwrap()
        .remove(0);
    let kube = ClusterClient::connect(&Access::Cloud {
        endpoint: ClusterEndpoint::of(&target.cluster.unwrap()).unwrap(),
        tokens: tokens_of(&cloud),
    })
    .await
    .unwrap();
    World {
        sim,
        store,
        spec,
        kube,
        _dir: dir,
    }
}

/// Timeouts no healthy run comes near, even on a loaded machine: a verdict that a fault does
/// not call for must never come from the clock.
fn options(w: &World) -> StorageOptions {
    let mut o = StorageOptions::new(&image());
    o.tenant = Some(w.sim.tenant_id());
    o.kind.start_timeout = Duration::from_secs(60);
    o.kind.phase_timeout = Duration::from_secs(60);
    o.cleanup_timeout = Duration::from_secs(60);
    o
}

/// Short timeouts, for the faults whose failure is a wait that never ends (a pod that never
/// starts, a host that stalls).
fn impatient(o: &StorageOptions) -> StorageOptions {
    let mut o = o.clone();
    o.kind.start_timeout = Duration::from_secs(3);
    o.kind.phase_timeout = Duration::from_secs(8);
    o
}

async fn verify(w: &World, spec: &FleetSpec, options: &StorageOptions) -> StorageReport {
    let (_tx, rx) = watch::channel(false);
    verify_storage(
        &client(&w.sim),
        &w.store,
        spec,
        options,
        Arc::new(|_: &fleetbot::engine::ops::Event| {}),
        rx,
    )
    .await
    .unwrap()
    .report
}

/// What the run left in the cluster: pods and claims with the verification label.
async fn leftovers(w: &World) -> usize {
    let params = ListParams::default().labels("fleetbot.dev/verification");
    let pods: Api<Pod> = Api::namespaced(w.kube.kube().clone(), "default");
    let claims: Api<k8s_openapi::api::core::v1::PersistentVolumeClaim> =
        Api::namespaced(w.kube.kube().clone(), "default");
    pods.list(&params).await.unwrap().items.len() + claims.list(&params).await.unwrap().items.len()
}

fn failures(report: &StorageReport) -> Vec<Category> {
    report.clusters[0].failures.clone()
}

async fn node_names(w: &World) -> Vec<String> {
    let mut names: Vec<String> = w
        .kube
        .nodes()
        .await
        .unwrap()
        .into_iter()
        .map(|n| n.name)
        .collect();
    names.sort();
    names
}

/// The first of the run's probe pods whose name `wanted` accepts, once there is one (a
/// barrier for a meddler, not a verdict: the run's own timeouts decide the test).
async fn probe_pod(pods: &Api<Pod>, wanted: impl Fn(&str) -> bool) -> Pod {
    loop {
        let listed = pods
            .list(&ListParams::default().labels("fleetbot.dev/verification"))
            .await
            .unwrap();
        if let Some(pod) = listed
            .items
            .into_iter()
            .find(|p| p.metadata.name.as_deref().is_some_and(&wanted))
        {
            return pod;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The run a probe pod belongs to, from its `--run-id=` argument.
fn run_id_of(pod: &Pod) -> Option<String> {
    pod.spec.as_ref()?.containers.iter().find_map(|c| {
        c.args
            .iter()
            .flatten()
            .find_map(|a| a.strip_prefix("--run-id=").map(str::to_string))
    })
}

/// The shared filesystems `node` mounts, as its host sees them: the links its mount paths are
/// (each filesystem lives in a namespace of the simulator's own, reached only through them).
fn shared_filesystems(root: &std::path::Path, node: &str) -> Vec<std::path::PathBuf> {
    fn links(dir: &std::path::Path, found: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten() {
            let path = entry.unwrap().path();
            let kind = std::fs::symlink_metadata(&path).unwrap().file_type();
            if kind.is_symlink() {
                found.push(path);
            } else if kind.is_dir() {
                links(&path, found);
            }
        }
    }
    let mut found = Vec::new();
    for cluster in std::fs::read_dir(root).unwrap() {
        links(
            &cluster.unwrap().path().join("nodes").join(node),
            &mut found,
        );
    }
    found
}

#[tokio::test]
async fn a_healthy_cluster_passes_with_exact_counts_and_its_receipt_stays_private() {
    let w = world().await;
    let receipts = tempfile::tempdir().unwrap();
    let mut o = options(&w);
    o.evidence_dir = Some(receipts.path().to_path_buf());
    let (_tx, rx) = watch::channel(false);
    let run = verify_storage(
        &client(&w.sim),
        &w.store,
        &w.spec,
        &o,
        Arc::new(|_: &fleetbot::engine::ops::Event| {}),
        rx,
    )
    .await
    .unwrap();
    let report = run.report;
    assert!(report.passed, "{}", report.render_json());
    assert_eq!(
        (
            report.selected_clusters,
            report.skipped_clusters,
            report.verified_clusters
        ),
        (2, 1, 1)
    );
    assert_eq!(
        (
            report.cpu_workers,
            report.gpu_workers,
            report.requested_gibibytes
        ),
        (2, 0, 64)
    );
    let c = &report.clusters[0];
    assert_eq!(c.nodes.len(), 2);
    assert_eq!(
        (
            c.cleanup.pods_removed,
            c.cleanup.claims_removed,
            c.cleanup.probe_paths_absent
        ),
        (7, 1, true)
    );
    assert!(report.clusters[1].skipped && report.clusters[1].passed);
    assert_eq!(leftovers(&w).await, 0);

    // The public report names no node, cluster ID or path; the receipt, named by its hash,
    // holds the node names and is the owner's alone.
    let public = report.render_json() + &report.render_text();
    for name in node_names(&w).await {
        assert!(!public.contains(&name), "{name} leaked");
    }
    assert!(!public.contains("/mnt/data") && !public.contains("mk8scluster"));
    let dir = run.receipts.unwrap();
    let files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1);
    let receipt = std::fs::read_to_string(&files[0]).unwrap();
    assert!(
        files[0]
            .file_name()
            .unwrap()
            .to_string_lossy()
            .contains(&c.evidence_sha256[..16])
    );
    use sha2::Digest;
    assert_eq!(
        hex::encode(sha2::Sha256::digest(receipt.as_bytes())),
        c.evidence_sha256
    );
    assert!(receipt.contains(&node_names(&w).await[0]));
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&files[0]).unwrap().permissions().mode() & 0o777,
        0o600
    );
}

#[tokio::test]
async fn each_broken_cluster_fails_closed_with_its_category_and_is_cleaned_up() {
    let w = world().await;
    let o = options(&w);
    let nodes = node_names(&w).await;
    let shared = &w.sim.kube.shared;

    for (fault, want) in [
        (HostFault::MountMissing, Category::HostMountMismatch),
        (HostFault::MountReadOnly, Category::HostMountMismatch),
        (HostFault::SplitView, Category::PartialCrossNodeEvidence),
    ] {
        shared.set_host_fault(&nodes[1], Some(fault));
        // The other node waits for what the broken one never shows it.
        let report = verify(&w, &w.spec, &impatient(&o)).await;
        shared.set_host_fault(&nodes[1], None);
        assert!(!report.passed);
        assert!(
            failures(&report).contains(&want),
            "{fault:?}: {:?}",
            failures(&report)
        );
        assert_eq!(leftovers(&w).await, 0, "{fault:?}");
    }

    // The spec asks for more than the filesystem holds (an edit not yet applied).
    let bigger = load_str(
        &SPEC.replace(
            "filestore_disk_size_gibibytes: 64",
            "filestore_disk_size_gibibytes: 65",
        ),
        "verify.yaml",
    )
    .unwrap();
    let report = verify(&w, &bigger, &o).await;
    assert_eq!(failures(&report), [Category::CapacityMismatch]);
    assert_eq!(report.requested_gibibytes, 65);

    // A leaky driver leaves the claim's data behind.
    shared.set_keep_volume_data(true);
    let report = verify(&w, &w.spec, &o).await;
    shared.set_keep_volume_data(false);
    assert_eq!(failures(&report), [Category::BackingCleanupFailed]);
    assert!(!report.clusters[0].cleanup.probe_paths_absent);

    // One worker's host probe directory is back on the shared filesystem after its host phase
    // (a stale mount, another run's leftover): the filesystem is one, so every worker looks for
    // every worker's directory and each of them reports it, not only the worker that made it.
    let owner = nodes[1].clone();
    let planter = {
        let pods: Api<Pod> = Api::namespaced(w.kube.kube().clone(), "default");
        let root = w.sim.node_root().to_path_buf();
        tokio::spawn(async move {
            // The shared phase runs once every host phase has finished and proved its own
            // directory gone.
            let shared = probe_pod(&pods, |name| name.contains("-shared-")).await;
            let dir = host_probe_dir(&run_id_of(&shared).unwrap(), &owner);
            let planted = shared_filesystems(&root, &owner)
                .into_iter()
                .map(|fs| fs.join(&dir))
                .collect::<Vec<_>>();
            assert!(!planted.is_empty(), "no shared filesystem under {root:?}");
            for path in &planted {
                std::fs::create_dir(path).unwrap();
            }
            (dir, planted)
        })
    };
    let receipts = tempfile::tempdir().unwrap();
    let mut with_receipts = o.clone();
    with_receipts.evidence_dir = Some(receipts.path().to_path_buf());
    let report = verify(&w, &w.spec, &with_receipts).await;
    let (dir, planted) = planter.await.unwrap();
    for path in &planted {
        std::fs::remove_dir(path).unwrap();
    }
    let receipt = std::fs::read_dir(receipts.path())
        .unwrap()
        .flat_map(|run| std::fs::read_dir(run.unwrap().path()).unwrap())
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect::<String>();
    assert_eq!(failures(&report), [Category::ProbeCleanupFailed]);
    assert!(!report.clusters[0].cleanup.probe_paths_absent);
    let seen_by = |j: usize| receipt.contains(&format!("node {j}: {dir} is still there"));
    assert!(seen_by(0) && seen_by(1), "{receipt}");
    assert_eq!(leftovers(&w).await, 0);

    // A probe pod that never starts: the node's NoExecute taint is not tolerated.
    let node_api: Api<Node> = Api::all(w.kube.kube().clone());
    let taint = serde_json::json!({"spec": {"taints": [{"key": "example.com/drain", "effect": "NoExecute"}]}});
    node_api
        .patch(&nodes[0], &PatchParams::default(), &Patch::Merge(&taint))
        .await
        .unwrap();
    let report = verify(&w, &w.spec, &impatient(&o)).await;
    let untaint = serde_json::json!({"spec": {"taints": null}});
    node_api
        .patch(&nodes[0], &PatchParams::default(), &Patch::Merge(&untaint))
        .await
        .unwrap();
    assert!(
        failures(&report).contains(&Category::WorkloadStartFailed),
        "{:?}",
        failures(&report)
    );
    assert!(failures(&report).contains(&Category::PartialHostEvidence));
    assert_eq!(leftovers(&w).await, 0);

    // A probe pod deleted by someone else, and one replaced by another of its name.
    let pods: Api<Pod> = Api::namespaced(w.kube.kube().clone(), "default");
    for replace in [false, true] {
        shared.set_host_fault(&nodes[0], Some(HostFault::Stall));
        let meddler = {
            let pods = pods.clone();
            tokio::spawn(async move {
                let host = probe_pod(&pods, |name| name.ends_with("-host-0")).await;
                let name = host.metadata.name.unwrap();
                pods.delete(&name, &DeleteParams::default()).await.unwrap();
                if replace {
                    let impostor: Pod = serde_json::from_value(serde_json::json!({
                        "metadata": {"name": name, "labels": {"someone": "else"}},
                        "spec": {"containers": [{"name": "x", "image": "busybox", "command": ["true"]}]},
                    }))
                    .unwrap();
                    pods.create(&PostParams::default(), &impostor)
                        .await
                        .unwrap();
                }
                name
            })
        };
        let report = verify(&w, &w.spec, &impatient(&o)).await;
        shared.set_host_fault(&nodes[0], None);
        let name = meddler.await.unwrap();
        let want = if replace {
            Category::OwnershipMismatch
        } else {
            Category::OwnershipMissing
        };
        assert!(failures(&report).contains(&want), "{:?}", failures(&report));
        assert!(failures(&report).contains(&Category::PartialHostEvidence));
        if replace {
            // Not the run's: cleanup's UID precondition refused to delete it.
            assert!(failures(&report).contains(&Category::ProbeCleanupFailed));
            let kept = pods.get(&name).await.unwrap();
            assert_eq!(kept.metadata.labels.unwrap()["someone"], "else");
            pods.delete(&name, &DeleteParams::default()).await.unwrap();
        }
        assert_eq!(leftovers(&w).await, 0);
    }

    // A NotReady worker: nothing is created at all.
    let not_ready = serde_json::json!({"status": {"conditions": [{"type": "Ready", "status": "False", "reason": "KubeletNotReady"}]}});
    node_api
        .patch_status(
            &nodes[1],
            &PatchParams::default(),
            &Patch::Merge(&not_ready),
        )
        .await
        .unwrap();
    let report = verify(&w, &w.spec, &o).await;
    // (Its CSI node plugin is not ready either, as on a real cluster.)
    assert!(
        failures(&report).contains(&Category::WorkerUnhealthy),
        "{:?}",
        failures(&report)
    );
    assert!(report.clusters[0].nodes.is_empty());
    assert_eq!(report.clusters[0].cleanup.pods_removed, 0);

    // An unproven identity: the profile is in another tenant. Nothing is created.
    let mut elsewhere = o.clone();
    elsewhere.tenant = Some("tenant-someone-else".into());
    let report = verify(&w, &w.spec, &elsewhere).await;
    assert_eq!(failures(&report), [Category::TargetIdentityFailed]);
    assert!(!report.passed);
}
