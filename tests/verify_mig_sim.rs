//! `verify-mig` through the library against the simulator, which plays its nodes' MIG slices
//! and the driver's answers (it cannot run GPU code): a MIG cluster is ready with its layout,
//! Operator and every slice's vectorAdd; a broken slice is not; a driver pod left on an old
//! template (OnDelete) is reported, refused while an application holds the node's GPUs, and
//! replaced under `--reconcile` with the node's scheduling restored. Selection must name
//! exactly one MIG target.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Node as KubeNode, Pod};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use tokio::sync::watch;

use crate::support::deploy;
use fleetbot::clusters::{Access, ClusterClient, ClusterEndpoint, tokens_of};
use fleetbot::engine::ops::deployed_clusters;
use fleetbot::sim::k8s::hosts::HostFault;
use fleetbot::spec::load_str;
use fleetbot::store::SqliteStore;
use fleetbot::verify::mig_report::{CudaSmoke, MigProblem};
use fleetbot::verify::{MigError, MigOptions, select_mig_target, verify_mig};
use support::{client, simulator, test_options};

const SPEC: &str = "apiVersion: npa.fleet/v0.0.1
name: slices
tenant_id: \"\"
region: us-central1
projects:
  - name: research
    clusters:
      - name: mig
        cpu_nodes: {count: 0, platform: cpu-d3, preset: 4vcpu-16gb}
        gpu_nodes:
          count: 2
          platform: gpu-rtx6000
          preset: 1gpu-24vcpu-218gb
          disk_size_gib: 128
          capacity_block_group: BLOCK
        enable_gpu_cluster: false
        enable_filestore: false
        mig: {enabled: true, strategy: mixed, config: all-balanced}
      - name: plain
        cpu_nodes: {count: 1, platform: cpu-d3, preset: 16vcpu-64gb}
        enable_filestore: false
";

#[tokio::test]
async fn a_mig_cluster_is_ready_a_broken_slice_is_not_and_a_stale_driver_is_replaced_safely() {
    let image = format!("registry.example/fleetbot-probe@sha256:{}", "7".repeat(64));
    let sim = simulator(
        &(support::empty_default_world()
            + "capacity_block_groups:\n  - {name: mig-block, region: us-central1, platform: gpu-rtx6000, limit: 8}\n"),
    )
    .await;
    sim.kube
        .shared
        .set_image(&image, env!("CARGO_BIN_EXE_fleetbot").into());
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("inventory.sqlite"))
        .await
        .unwrap();
    let spec = load_str(
        &SPEC.replace("BLOCK", &sim.capacity_block_id("mig-block")),
        "slices.yaml",
    )
    .unwrap();
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

    // Exactly one MIG target: the plain cluster is none, an unknown project matches nothing.
    assert_eq!(select_mig_target(&spec, None, None, "").unwrap(), (0, 0));
    for (project, cluster) in [(None, Some("plain")), (Some("elsewhere"), None)] {
        let e = select_mig_target(&spec, project, cluster, "").unwrap_err();
        assert!(matches!(e, MigError::Selection(0)));
        assert_eq!(
            e.to_string(),
            "select exactly one MIG cluster with --project/--cluster (matched 0)"
        );
    }

    let mut options = MigOptions::new(&image);
    options.tenant = Some(sim.tenant_id());
    options.kind.wait = true;
    options.kind.poll = Duration::from_millis(200);
    options.kind.timeout = Some(Duration::from_secs(30));
    let run = |options: MigOptions| {
        let (cloud, store, spec) = (client(&sim), &store, &spec);
        async move {
            let (_tx, rx) = watch::channel(false);
            verify_mig(
                &cloud,
                store,
                spec,
                &options,
                Arc::new(|_: &fleetbot::engine::ops::Event| {}),
                rx,
            )
            .await
            .unwrap()
        }
    };
    let report = run(options.clone()).await;
    assert!(report.ready, "{}", report.render_text());
    assert_eq!(report.nodes.len(), 2);
    assert_eq!(report.operator_state, "ready");
    assert_eq!(report.operator_version, "v26.3.3");
    assert_eq!(report.cuda_smoke, CudaSmoke::Passed);
    assert_eq!(report.hardware.len(), 2);
    for h in &report.hardware {
        assert_eq!(h.mig_mode, "Enabled");
        assert_eq!(h.instances, ["1g.24gb", "1g.24gb", "2g.48gb"]);
    }
    let text = report.render_text();
    assert!(
        text.starts_with("MIG ready: 2 node(s), Operator v26.3.3\n"),
        "{text}"
    );
    assert!(!text.contains("[FAIL]"));

    let target = deployed_clusters(&cloud, &store, &spec, &[], &["mig".into()])
        .await
        .unwrap()
        .remove(0);
    let kube = ClusterClient::connect(&Access::Cloud {
        endpoint: ClusterEndpoint::of(&target.cluster.unwrap()).unwrap(),
        tokens: tokens_of(&cloud),
    })
    .await
    .unwrap();
    let probes: Api<Pod> = Api::namespaced(kube.kube().clone(), "default");
    let left = probes
        .list(&ListParams::default().labels("fleetbot.dev/verification"))
        .await
        .unwrap();
    assert!(left.items.is_empty(), "the MIG probe pods are cleaned up");
    let mut gpu_nodes: Vec<String> = kube
        .nodes()
        .await
        .unwrap()
        .into_iter()
        .filter(|n| n.allocatable.contains_key("nvidia.com/mig-1g.24gb"))
        .map(|n| n.name)
        .collect();
    gpu_nodes.sort();

    // One slice's vectorAdd fails: not ready, with the smoke failed and the slice named.
    sim.kube
        .shared
        .set_host_fault(&gpu_nodes[1], Some(HostFault::MigSliceBroken));
    let mut once = options.clone();
    once.kind.wait = false;
    let broken = run(once.clone()).await;
    assert!(!broken.ready);
    assert_eq!(broken.cuda_smoke, CudaSmoke::Failed);
    assert!(broken.problems().contains(&MigProblem::CudaSmokeFailed));
    assert!(
        broken.render_text().contains(&format!(
            "[FAIL] node {}: vectorAdd Failed on GPU 0 slice 2 (2g.48gb)\n",
            gpu_nodes[1]
        )),
        "{}",
        broken.render_text()
    );
    sim.kube.shared.set_host_fault(&gpu_nodes[1], None);

    // A Helm update changed the driver's template; its DaemonSet updates OnDelete, so the old
    // pods run on. Without --reconcile that is reported and nothing is touched.
    let sets: Api<DaemonSet> = Api::namespaced(kube.kube().clone(), "gpu-operator");
    sets.patch(
        "nvidia-driver-daemonset",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"spec": {"template": {"metadata": {"annotations": {"example.com/updated": "1"}}}}})),
    )
    .await
    .unwrap();
    let stale = run(once.clone()).await;
    assert!(!stale.ready);
    // The Operator itself says it is not ready while a driver pod is behind.
    assert_eq!(
        stale.problems(),
        [MigProblem::OperatorNotReady, MigProblem::StaleDriverPod]
    );
    assert_eq!(
        stale.cuda_smoke,
        CudaSmoke::NotRun,
        "no probe runs on a stale stack"
    );
    assert!(stale.render_text().contains("rerun with --reconcile"));

    // An application holds a slice on the first node: --reconcile refuses to touch it.
    sim.kube
        .shared
        .set_host_fault(&gpu_nodes[0], Some(HostFault::Stall));
    let app: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "training", "namespace": "default"},
        "spec": {
            "nodeName": gpu_nodes[0],
            "restartPolicy": "Never",
            "containers": [{"name": "t", "image": image, "command": ["/fleetbot", "probe", "cuda"],
                "resources": {"limits": {"nvidia.com/mig-1g.24gb": "1"}}}],
        },
    }))
    .unwrap();
    probes.create(&PostParams::default(), &app).await.unwrap();
    let mut reconcile = once.clone();
    reconcile.kind.reconcile = true;
    let refused = run(reconcile.clone()).await;
    assert!(!refused.ready);
    assert!(
        refused.render_text().contains(&format!(
            "[FAIL] node {}: 1 application GPU pod(s) run there",
            gpu_nodes[0]
        )),
        "{}",
        refused.render_text()
    );
    let nodes: Api<KubeNode> = Api::all(kube.kube().clone());
    for name in &gpu_nodes {
        let node = nodes.get(name).await.unwrap();
        assert_ne!(
            node.spec.and_then(|s| s.unschedulable),
            Some(true),
            "scheduling is restored on {name}"
        );
    }

    // The application is gone: the stale driver pods are replaced, the nodes schedulable.
    probes
        .delete("training", &DeleteParams::default())
        .await
        .unwrap();
    sim.kube.shared.set_host_fault(&gpu_nodes[0], None);
    let repaired = run(reconcile).await;
    assert!(repaired.ready, "{}", repaired.render_text());
    for name in &gpu_nodes {
        let node = nodes.get(name).await.unwrap();
        assert_ne!(node.spec.and_then(|s| s.unschedulable), Some(true));
    }
    let after = run(once).await;
    assert!(after.ready, "{}", after.render_text());
}
