//! The mixed-backend example (fixtures/specs/mixed-backends.yaml) deploys whole into the
//! simulator — legacy and explicit mk8s clusters, a MIG cluster and two soperator targets —
//! shows in status, and destroys; a soperator piece fleetbot cannot map refuses the run before
//! any mutation.

use crate::support;

use std::sync::Arc;

use serde_json::Value;

use crate::support::deploy;
use crate::support::destroy;
use fleetbot::cloud::Cloud;
use fleetbot::clusters::{Access, ClusterClient, ClusterEndpoint, tokens_of};
use fleetbot::engine::ops::{LifecycleOptions, deployed_clusters, status};
use fleetbot::engine::target_status::TargetStatus;
use fleetbot::spec::load_str;
use fleetbot::store::{InventoryStore, SqliteStore};
use support::{client, simulator};

const FIXTURE: &str = include_str!("../fixtures/specs/mixed-backends.yaml");

fn world() -> String {
    support::empty_default_world()
        + "projects:\n  - {name: platform-existing, region: us-central1}\ncapacity_block_groups:\n  - {name: mig-block, region: us-central1, platform: gpu-rtx6000, limit: 8}\n"
}

fn options() -> LifecycleOptions {
    support::test_options()
}

#[tokio::test]
async fn the_mixed_backend_fixture_deploys_shows_and_destroys_whole() {
    let sim = simulator(&world()).await;
    let cloud = client(&sim);
    let tenant = sim.tenant_id();
    let existing = cloud
        .list_projects(&tenant)
        .await
        .unwrap()
        .into_iter()
        .find(|p| p.name == "platform-existing")
        .unwrap();
    // The operator's private runtime values, in place of the public placeholders.
    let text = FIXTURE.replace("<your-project-id>", &existing.id).replace(
        "capacityblockgroup-REPLACE_AT_RUNTIME",
        &sim.capacity_block_id("mig-block"),
    );
    let fleet = load_str(&text, "mixed-backends.yaml").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("inventory.sqlite"))
        .await
        .unwrap();
    let result = deploy(
        &cloud,
        &store,
        &fleet,
        &tenant,
        &options(),
        Arc::new(|_: &fleetbot::engine::ops::Event| {}),
    )
    .await
    .unwrap();
    assert_eq!((result.deployed, result.failed), (5, 0), "{result:#?}");

    // The inventory records each target under its own backend.
    let records = store.targets(&fleet.name).await.unwrap();
    let backend = |name: &str| {
        records
            .iter()
            .find(|r| r.cluster_name == name)
            .map(|r| r.backend.clone())
            .unwrap()
    };
    assert_eq!(backend("slurm"), "soperator");
    assert_eq!(backend("slurm-gpu"), "soperator");
    assert_eq!(backend("kube"), "mk8s");

    // A soperator target is an mk8s cluster with the recipe's node groups and the jail.
    let slurm_gpu = records
        .iter()
        .find(|r| r.cluster_name == "slurm-gpu")
        .unwrap();
    let mut groups: Vec<(String, i64)> = cloud
        .list_node_groups(&slurm_gpu.cluster_id)
        .await
        .unwrap()
        .into_iter()
        .map(|g| (g.name, g.spec.node_count))
        .collect();
    groups.sort();
    assert_eq!(
        groups,
        [
            ("slurm-gpu-controller".to_string(), 1),
            ("slurm-gpu-login".to_string(), 1),
            ("slurm-gpu-system".to_string(), 3),
            ("slurm-gpu-worker-cpu".to_string(), 2),
            ("slurm-gpu-worker-gpu".to_string(), 1),
        ]
    );
    let jail = cloud
        .get_filesystem(&slurm_gpu.filesystem_id)
        .await
        .unwrap();
    assert_eq!(jail.name, "slurm-gpu-jail");
    assert!(!slurm_gpu.gpu_cluster_id.is_empty());

    // Inside: the Slurm layer is up, the GPU pool's GPUs are advertised, MIG slices on the
    // MIG cluster.
    let mut reached = std::collections::BTreeMap::new();
    for t in deployed_clusters(&cloud, &store, &fleet, &[], &[])
        .await
        .unwrap()
    {
        let cluster = t.cluster.clone().unwrap();
        let access = Access::Cloud {
            endpoint: ClusterEndpoint::of(&cluster).unwrap(),
            tokens: tokens_of(&cloud),
        };
        reached.insert(
            t.cluster_name.clone(),
            ClusterClient::connect(&access).await.unwrap(),
        );
    }
    assert_eq!(reached.len(), 5);
    let slurm: Value = reached["slurm-gpu"]
        .get_object(
            "slurm.nebius.ai/v1",
            "SlurmCluster",
            Some("soperator"),
            "slurm-gpu",
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(slurm["status"]["phase"], "Available");
    assert_eq!(slurm["spec"]["slurmOperatorVersion"], "4.1.6");
    assert_eq!(slurm["spec"]["nodeSets"][0]["dockerCache"]["size"], "372Gi");
    let gpu_nodes: Vec<_> = reached["slurm-gpu"]
        .nodes()
        .await
        .unwrap()
        .into_iter()
        .filter(|n| n.allocatable.get("nvidia.com/gpu").map(String::as_str) == Some("8"))
        .collect();
    assert_eq!(gpu_nodes.len(), 1);
    let mig_nodes = reached["mig"].nodes().await.unwrap();
    assert_eq!(mig_nodes.len(), 2);
    for n in &mig_nodes {
        assert_eq!(n.allocatable["nvidia.com/gpu"], "0");
        assert_eq!(n.allocatable["nvidia.com/mig-1g.24gb"], "2");
        assert_eq!(n.allocatable["nvidia.com/mig-2g.48gb"], "1");
    }

    // Status shows all five, each deployed, the soperator ones with their add-ons.
    let st = status(&cloud, &store, &fleet).await.unwrap();
    assert_eq!(st.clusters.len(), 5);
    assert!(
        st.clusters
            .iter()
            .all(|c| c.status == TargetStatus::Deployed),
        "{st:#?}"
    );
    let slurm_status = st
        .clusters
        .iter()
        .find(|c| c.cluster_name == "slurm")
        .unwrap();
    assert_eq!(slurm_status.addons[0].name, "soperator");
    assert_eq!(slurm_status.addons[0].state, "applied");

    // Destroy takes everything down; the existing project stays.
    let destroyed = destroy(
        &cloud,
        &store,
        &fleet,
        &options(),
        Arc::new(|_: &fleetbot::engine::ops::Event| {}),
    )
    .await
    .unwrap();
    assert_eq!(destroyed.failed, 0, "{destroyed:#?}");
    for r in &records {
        assert!(
            cloud.get_cluster(&r.cluster_id).await.is_err(),
            "{}",
            r.cluster_name
        );
    }
    assert!(cloud.get_project(&existing.id).await.is_ok());
}

#[tokio::test]
async fn a_soperator_piece_without_an_api_mapping_refuses_before_any_mutation() {
    let sim = simulator(&world()).await;
    let cloud = client(&sim);
    let text = "apiVersion: npa.fleet/v0.0.1\nname: slurm\ntenant_id: \"\"\nregion: us-central1\nprojects:\n  - name: hpc\n    clusters:\n      - name: s\n        backend: soperator\n        soperator:\n          accounting: true\n          workers:\n            - {name: cpu, platform: cpu-d3, preset: 8vcpu-32gb}\n";
    let fleet = load_str(text, "slurm.yaml").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("inventory.sqlite"))
        .await
        .unwrap();
    let before = cloud.list_projects(&sim.tenant_id()).await.unwrap().len();
    let err = deploy(
        &cloud,
        &store,
        &fleet,
        &sim.tenant_id(),
        &options(),
        Arc::new(|_: &fleetbot::engine::ops::Event| {}),
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with("soperator pieces fleetbot cannot map to the Nebius API (nothing was changed): hpc/s: accounting: the Slurm accounting database runs on the MariaDB operator"),
        "{err}"
    );
    assert_eq!(
        cloud.list_projects(&sim.tenant_id()).await.unwrap().len(),
        before
    );
}
