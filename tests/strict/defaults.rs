//! The service fills what Nebius fills, and fleetbot compares only what its spec declares: a
//! filled default is never a change in the live plan, drift or status.

use crate::support::deploy;
use fleetbot::cloud::Cloud;
use fleetbot::cloud::proto::nebius::compute::v1 as compute;
use fleetbot::cloud::proto::nebius::mk8s::v1 as mk8s;
use fleetbot::cloud::proto::nebius::storage::v1 as storage;
use fleetbot::cloud::proto::nebius::vpc::v1 as vpc;
use fleetbot::engine::ops::{LifecycleOptions, plan_is_quiet, prepare, status};
use fleetbot::spec::load_str;
use fleetbot::store::SqliteStore;

use super::{cluster, labels, node_group};
use crate::support::{client, empty_default_world, roomy_world, simulator};

#[tokio::test]
async fn the_service_fills_its_defaults() {
    let sim = simulator(&roomy_world("")).await;
    let cloud = client(&sim);
    let (p, c) = cluster(&cloud, &sim.tenant_id(), "defaults").await;
    let group = node_group(&cloud, &c, "g").await;
    let net = cloud
        .create_network(&p.id, "n", &labels(&[]), "k-n")
        .await
        .unwrap();
    let subnet = cloud
        .create_subnet(&p.id, "s", &net.id, &labels(&[]), "k-s")
        .await
        .unwrap();
    let fs = cloud
        .create_filesystem(&p.id, "fs", 64, &labels(&[]), "k-fs")
        .await
        .unwrap();
    let bucket = cloud
        .create_bucket(&p.id, "defaulted", "standard", 0, &labels(&[]), "k-b")
        .await
        .unwrap();
    sim.service.with_core(|core| {
        let net: vpc::Network = core.get(&net.id).unwrap();
        let pools = net.spec.unwrap();
        assert_eq!(pools.ipv4_private_pools.unwrap().pools.len(), 1);
        assert_eq!(pools.ipv4_public_pools.unwrap().pools.len(), 1);
        let subnet: vpc::Subnet = core.get(&subnet.id).unwrap();
        assert!(
            subnet
                .spec
                .unwrap()
                .ipv4_public_pools
                .unwrap()
                .use_network_pools
        );
        let fs: compute::Filesystem = core.get(&fs.id).unwrap();
        assert_eq!(fs.spec.unwrap().block_size_bytes, 4096);
        let bucket: storage::Bucket = core.get(&bucket.id).unwrap();
        assert_eq!(
            bucket.spec.unwrap().versioning_policy,
            storage::VersioningPolicy::Disabled as i32
        );
        let group: mk8s::NodeGroup = core.get(&group.id).unwrap();
        let template = group.spec.unwrap().template.unwrap();
        assert_eq!(
            template.boot_disk.unwrap().r#type,
            mk8s::disk_spec::DiskType::NetworkSsd as i32
        );
        // The interface is on the cluster's control-plane subnet.
        assert_eq!(template.network_interfaces.len(), 1);
        assert_eq!(template.network_interfaces[0].subnet_id, c.spec.subnet_id);
    });
}

/// Every kind fleetbot creates, in a project with no network of its own.
const EVERY_KIND: &str = r#"apiVersion: npa.fleet/v0.0.1
name: filled
region: us-central1
project_prefix: filled-
projects:
  - name: a
    object_storage: {size_gibibytes: 64}
    clusters:
      - name: c
        cpu_nodes: {count: 1, platform: cpu-d3, preset: 8vcpu-32gb}
        gpu_nodes: {count: 1, platform: gpu-h200-sxm, preset: 8gpu-128vcpu-1600gb}
        enable_gpu_cluster: true
        infiniband_fabric: fabric-2
        enable_filestore: true
        filestore_disk_size_gibibytes: 256
"#;

#[tokio::test]
async fn filled_defaults_are_never_a_change_in_the_plan_or_status() {
    let sim = simulator(&empty_default_world()).await;
    let cloud = client(&sim);
    let tenant = sim.tenant_id();
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("inventory.sqlite"))
        .await
        .unwrap();
    let fleet = load_str(EVERY_KIND, "fleet.yaml").unwrap();
    let options = LifecycleOptions::default();
    let result = deploy(
        &cloud,
        &store,
        &fleet,
        &tenant,
        &options,
        std::sync::Arc::new(|_: &fleetbot::engine::ops::Event| {}),
    )
    .await
    .unwrap();
    assert_eq!((result.deployed, result.failed), (1, 0), "{result:#?}");
    // Every kind: project, network and subnet, filesystem, GPU cluster, cluster, node
    // groups, bucket — re-planned, with zero changes.
    let again = prepare(&cloud, &store, &fleet, &tenant, &options)
        .await
        .unwrap();
    assert!(plan_is_quiet(&again.plan), "{}", again.plan.render_text());
    assert_eq!(again.plan.summary.unchanged, 1);
    let status = status(&cloud, &store, &fleet).await.unwrap();
    assert_eq!(status.deployed, 1, "{}", status.render_text());
}
