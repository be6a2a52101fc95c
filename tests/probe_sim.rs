//! fleetbot's own probe on simulated workers: pods pinned to each node of a deployed cluster
//! with the filestore on run `fleetbot probe storage` as real local processes against each
//! node's host files and the one filestore directory its nodes share, and print evidence the
//! verifier's strict parser accepts.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use kube::api::{Api, LogParams, PostParams};
use serde_json::json;

use crate::support::deploy;
use fleetbot::clusters::{Access, ClusterClient, ClusterEndpoint, tokens_of};
use fleetbot::engine::ops::{LifecycleOptions, deployed_clusters};
use fleetbot::probe::{parse_host, parse_shared};
use fleetbot::spec::load_str;
use fleetbot::store::SqliteStore;
use support::{client, simulator};

const IMAGE: &str = "registry.example/fleetbot-probe@sha256:0000000000000000000000000000000000000000000000000000000000000000";

fn world() -> String {
    crate::support::quick_default_world()
}

/// A pod pinned to `node` running the probe with the host volumes the verifier mounts.
fn probe_pod(name: &str, node: &str, args: Vec<String>) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default",
            "labels": {"fleetbot.dev/verification": "probe-test"}},
        "spec": {
            "restartPolicy": "Never",
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}},
            "tolerations": [{"operator": "Exists"}],
            "volumes": [
                {"name": "storage", "hostPath": {"path": "/mnt/data"}},
                {"name": "proc", "hostPath": {"path": "/proc"}},
                {"name": "fstab", "hostPath": {"path": "/etc/fstab"}},
            ],
            "containers": [{
                "name": "probe",
                "image": IMAGE,
                "command": ["/fleetbot", "probe", "storage"],
                "args": args,
                "env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
                "volumeMounts": [
                    {"name": "storage", "mountPath": "/host-storage"},
                    {"name": "proc", "mountPath": "/host/proc", "readOnly": true},
                    {"name": "fstab", "mountPath": "/host/etc/fstab", "readOnly": true},
                ],
            }],
        },
    }))
    .unwrap()
}

async fn finished_logs(pods: &Api<Pod>, name: &str) -> String {
    for _ in 0..200 {
        let pod = pods.get(name).await.unwrap();
        let phase = pod.status.and_then(|s| s.phase).unwrap_or_default();
        if phase == "Succeeded" || phase == "Failed" {
            assert_eq!(
                phase,
                "Succeeded",
                "{name}: {:?}",
                pods.logs(name, &LogParams::default()).await
            );
            return pods.logs(name, &LogParams::default()).await.unwrap();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{name} did not finish");
}

#[tokio::test]
async fn the_probe_runs_on_each_simulated_worker_against_its_host_and_the_shared_filestore() {
    let sim = simulator(&world()).await;
    sim.kube
        .shared
        .set_image(IMAGE, env!("CARGO_BIN_EXE_fleetbot").into());
    let cloud = client(&sim);
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("inventory.sqlite"))
        .await
        .unwrap();
    let fleet = load_str(
        "apiVersion: npa.fleet/v0.0.1\nname: probe\ntenant_id: \"\"\nregion: us-central1\nprojects:\n  - name: a\n    clusters:\n      - name: c\n        cpu_nodes: {count: 2, platform: cpu-d3, preset: 16vcpu-64gb}\n        enable_filestore: true\n        filestore_disk_size_gibibytes: 64\n",
        "probe.yaml",
    )
    .unwrap();
    let options = LifecycleOptions::default();
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
    assert_eq!(result.deployed, 1, "{result:#?}");
    let target = deployed_clusters(&cloud, &store, &fleet, &[], &[])
        .await
        .unwrap()
        .remove(0);
    let cluster = target.cluster.unwrap();
    let kube = ClusterClient::connect(&Access::Cloud {
        endpoint: ClusterEndpoint::of(&cluster).unwrap(),
        tokens: tokens_of(&cloud),
    })
    .await
    .unwrap();
    let nodes = kube.nodes().await.unwrap();
    assert_eq!(nodes.len(), 2);
    let pods: Api<Pod> = Api::namespaced(kube.kube().clone(), "default");

    for (i, node) in nodes.iter().enumerate() {
        let args = vec![
            "host".to_string(),
            "--mount-dir=/host-storage".into(),
            "--mount-point=/mnt/data".into(),
            "--source=data".into(),
            "--mountinfo=/host/proc/1/mountinfo".into(),
            "--fstab=/host/etc/fstab".into(),
            "--boot-id=/host/proc/sys/kernel/random/boot_id".into(),
            format!("--requested-bytes={}", 64u64 << 30),
            "--run-id=r1".into(),
        ];
        let name = format!("host-{i}");
        pods.create(&PostParams::default(), &probe_pod(&name, &node.name, args))
            .await
            .unwrap();
        let evidence = parse_host(&finished_logs(&pods, &name).await).unwrap();
        assert_eq!(evidence.node_name, node.name);
        assert_eq!(evidence.boot_id, node.boot_id);
        assert_eq!(evidence.filesystem_type, "virtiofs");
        assert!(evidence.source_matches && evidence.read_write && evidence.nofail);
        assert!(evidence.read_back && evidence.probe_deleted);
    }

    // The two nodes see one filestore: each reads the other's payload.
    let mut names = Vec::new();
    for (i, node) in nodes.iter().enumerate() {
        let args = vec![
            "shared".to_string(),
            "--dir=/host-storage".into(),
            format!("--node-index={i}"),
            "--nodes=2".into(),
            "--run-id=s1".into(),
            "--wait-seconds=20".into(),
        ];
        let name = format!("shared-{i}");
        pods.create(&PostParams::default(), &probe_pod(&name, &node.name, args))
            .await
            .unwrap();
        names.push(name);
    }
    let mut evidence = Vec::new();
    for name in &names {
        evidence.push(parse_shared(&finished_logs(&pods, name).await).unwrap());
    }
    assert_eq!(
        evidence[0].verified_checksums,
        evidence[1].verified_checksums
    );
    assert_eq!(evidence[0].read_count, 2);
    assert_ne!(evidence[0].payload_sha256, evidence[1].payload_sha256);

    // The same through one RWX claim of the default class: it binds to its own volume of the
    // filestore's driver, and both workers see each other's payload on it.
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(kube.kube().clone(), "default");
    let claim: PersistentVolumeClaim = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": "shared"},
        "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "1Gi"}}},
    }))
    .unwrap();
    let claim = claims.create(&PostParams::default(), &claim).await.unwrap();
    let mut names = Vec::new();
    for (i, node) in nodes.iter().enumerate() {
        let mut pod = probe_pod(
            &format!("claim-{i}"),
            &node.name,
            vec![
                "shared".to_string(),
                "--dir=/shared".into(),
                format!("--node-index={i}"),
                "--nodes=2".into(),
                "--run-id=c1".into(),
                "--wait-seconds=20".into(),
            ],
        );
        let spec = pod.spec.as_mut().unwrap();
        spec.volumes.get_or_insert_default().push(
            serde_json::from_value(
                json!({"name": "shared", "persistentVolumeClaim": {"claimName": "shared"}}),
            )
            .unwrap(),
        );
        spec.containers[0]
            .volume_mounts
            .get_or_insert_default()
            .push(
                serde_json::from_value(json!({"name": "shared", "mountPath": "/shared"})).unwrap(),
            );
        pods.create(&PostParams::default(), &pod).await.unwrap();
        names.push(format!("claim-{i}"));
    }
    let mut on_claim = Vec::new();
    for name in &names {
        on_claim.push(parse_shared(&finished_logs(&pods, name).await).unwrap());
    }
    assert_eq!(on_claim[0].read_count, 2);
    assert_eq!(
        on_claim[0].verified_checksums,
        on_claim[1].verified_checksums
    );
    let bound = claims.get("shared").await.unwrap();
    let volume_name = bound.spec.unwrap().volume_name.unwrap();
    let volumes: Api<PersistentVolume> = Api::all(kube.kube().clone());
    let volume = volumes.get(&volume_name).await.unwrap();
    let spec = volume.spec.unwrap();
    assert_eq!(spec.csi.unwrap().driver, "mounted-fs-path.csi.nebius.ai");
    assert_eq!(
        spec.persistent_volume_reclaim_policy.as_deref(),
        Some("Delete")
    );
    assert_eq!(spec.claim_ref.unwrap().uid, claim.metadata.uid);
    // Deleting the claim reclaims its volume.
    for name in &names {
        pods.delete(name, &Default::default()).await.unwrap();
    }
    claims.delete("shared", &Default::default()).await.unwrap();
    for _ in 0..100 {
        if volumes.get_opt(&volume_name).await.unwrap().is_none() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the volume outlived its claim");
}
