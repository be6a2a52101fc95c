//! `verify-graphics` through the library against the simulator, whose GPU nodes give a
//! container granted their GPUs a stand-in NVIDIA driver (it cannot run GPU code) and run
//! fleetbot's real probe on it: an RTX rendering cluster passes with every worker's CUDA, GLX,
//! EGL and Vulkan counted; a target that is not one fails `invalid_graphics_target` with
//! nothing created; one worker whose Vulkan fails makes the evidence partial; any program in a
//! container granted GPUs sees the driver, and one not granted them sees none.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use tokio::sync::watch;

use crate::support::deploy;
use fleetbot::clusters::{Access, ClusterClient, ClusterEndpoint, tokens_of};
use fleetbot::engine::ops::deployed_clusters;
use fleetbot::sim::k8s::hosts::HostFault;
use fleetbot::spec::load_str;
use fleetbot::store::SqliteStore;
use fleetbot::verify::graphics_report::GraphicsCategory;
use fleetbot::verify::{GraphicsOptions, verify_graphics};
use support::{client, simulator, test_options};

const SPEC: &str = "apiVersion: npa.fleet/v0.0.1
name: render
tenant_id: \"\"
region: us-central1
projects:
  - name: a
    clusters:
      - name: rtx
        gpu_workload_profile: rtx-rendering
        enable_gpu_cluster: false
        gpu_nodes: {count: 2, platform: gpu-rtx6000, preset: 8gpu-192vcpu-1744gb}
        cpu_nodes: {count: 1, platform: cpu-d3, preset: 16vcpu-64gb}
        enable_filestore: false
      - name: plain
        cpu_nodes: {count: 1, platform: cpu-d3, preset: 16vcpu-64gb}
        enable_filestore: false
";

#[tokio::test]
async fn an_rtx_cluster_passes_a_plain_one_is_refused_and_a_broken_vulkan_is_partial() {
    let image = format!("registry.example/fleetbot-probe@sha256:{}", "9".repeat(64));
    let sim = simulator(&crate::support::quick_default_world()).await;
    sim.kube
        .shared
        .set_image(&image, env!("CARGO_BIN_EXE_fleetbot").into());
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("inventory.sqlite"))
        .await
        .unwrap();
    let spec = load_str(SPEC, "render.yaml").unwrap();
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

    let mut options = GraphicsOptions::new(&image);
    options.tenant = Some(sim.tenant_id());
    options.kind.stabilization = Some(Duration::from_millis(300));
    options.kind.timeout = Some(Duration::from_secs(20));
    options.concurrency = 2;
    let run = |options: GraphicsOptions| {
        let (cloud, store, spec) = (client(&sim), &store, &spec);
        async move {
            let (_tx, rx) = watch::channel(false);
            verify_graphics(
                &cloud,
                store,
                spec,
                &options,
                Arc::new(|_: &fleetbot::engine::ops::Event| {}),
                rx,
            )
            .await
            .unwrap()
            .report
        }
    };
    let report = run(options.clone()).await;
    let rtx = &report.clusters[0];
    assert!(rtx.passed, "{}", report.render_json());
    assert_eq!(
        (
            rtx.gpu_workers,
            rtx.gpus,
            rtx.cuda_workers,
            rtx.glx_workers,
            rtx.egl_workers,
            rtx.vulkan_workers
        ),
        (2, 16, 2, 2, 2, 2)
    );
    assert_eq!(
        report.clusters[1].failures,
        [GraphicsCategory::InvalidGraphicsTarget]
    );
    assert!(!report.passed);
    assert_eq!((report.verified_clusters, report.gpus), (1, 16));
    let text = report.render_text();
    assert!(text.starts_with("Fleet graphics verification failed: 1/2 clusters, 2 workers and 16 GPUs.\nWorker checks: CUDA=2, GLX=2, EGL=2, Vulkan=2.\n"), "{text}");

    // One worker's Vulkan fails: the evidence is partial, and the probe pods are gone.
    let target = deployed_clusters(&cloud, &store, &spec, &[], &["rtx".into()])
        .await
        .unwrap()
        .remove(0);
    let kube = ClusterClient::connect(&Access::Cloud {
        endpoint: ClusterEndpoint::of(&target.cluster.unwrap()).unwrap(),
        tokens: tokens_of(&cloud),
    })
    .await
    .unwrap();
    let gpu_node = kube
        .nodes()
        .await
        .unwrap()
        .into_iter()
        .find(|n| n.allocatable.contains_key("nvidia.com/gpu"))
        .unwrap();
    sim.kube
        .shared
        .set_host_fault(&gpu_node.name, Some(HostFault::VulkanBroken));
    let mut only_rtx = options.clone();
    only_rtx.only_clusters = vec!["rtx".into()];
    let report = run(only_rtx).await;
    let rtx = &report.clusters[0];
    assert!(!rtx.passed);
    assert!(
        rtx.failures
            .contains(&GraphicsCategory::PartialGraphicsEvidence),
        "{:?}",
        rtx.failures
    );
    assert_eq!((rtx.cuda_workers, rtx.vulkan_workers), (2, 1));
    let pods: Api<Pod> = Api::namespaced(kube.kube().clone(), "default");
    let left = pods
        .list(&ListParams::default().labels("fleetbot.dev/verification"))
        .await
        .unwrap();
    assert!(left.items.is_empty());
    // The public report names no node.
    assert!(!report.render_json().contains(&gpu_node.name));

    // Not only the probe: any GPU program granted the node's GPUs sees its driver (here the
    // slice smoke test, `probe cuda`, which nothing special-cases), and without a grant none.
    sim.kube.shared.set_host_fault(&gpu_node.name, None);
    let cuda = |name: &str, gpus: Option<&str>| {
        let mut pod = serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeName": gpu_node.name, "restartPolicy": "Never",
                "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
                "containers": [{"name": "cuda", "image": image,
                    "command": ["/fleetbot", "probe", "cuda"]}]},
        });
        if let Some(gpus) = gpus {
            pod["spec"]["containers"][0]["resources"] =
                serde_json::json!({"limits": {"nvidia.com/gpu": gpus}});
        }
        serde_json::from_value::<Pod>(pod).unwrap()
    };
    for (name, gpus) in [("granted", Some("8")), ("ungranted", None)] {
        pods.create(&Default::default(), &cuda(name, gpus))
            .await
            .unwrap();
    }
    let mut logs = Vec::new();
    for name in ["granted", "ungranted"] {
        let began = std::time::Instant::now();
        loop {
            let phase = pods.get(name).await.unwrap().status.and_then(|s| s.phase);
            if phase.as_deref() == Some("Succeeded") {
                break;
            }
            assert!(
                began.elapsed() < Duration::from_secs(20),
                "{name}: {phase:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let log = pods.logs(name, &Default::default()).await.unwrap();
        logs.push(serde_json::from_str::<serde_json::Value>(log.trim()).unwrap());
    }
    assert_eq!(
        (
            &logs[0]["vectoradd"],
            &logs[0]["devices"],
            &logs[0]["passed_devices"]
        ),
        (
            &serde_json::json!("passed"),
            &serde_json::json!(8),
            &serde_json::json!(8)
        ),
        "{logs:?}"
    );
    assert_eq!(logs[1]["vectoradd"], "unavailable", "{logs:?}");
    assert!(
        logs[1]["errors"][0]
            .as_str()
            .unwrap()
            .starts_with("libcuda.so.1: "),
        "{logs:?}"
    );
}
