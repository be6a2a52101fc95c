//! The real Nebius client against the simulator over loopback TCP: every resource kind,
//! operations, pagination, retries with idempotency keys, quota failures, name conflicts and
//! the token exchange.

use crate::support;

use std::time::Duration;

use fleetbot::cloud::auth::{Credentials, ServiceAccountKey};
use fleetbot::cloud::client::{
    Endpoints, Host, NebiusClient, PollPolicy, RetryPolicy, idempotency_key,
};
use fleetbot::cloud::domain::*;
use fleetbot::cloud::error::ErrorKind;
use fleetbot::sim::auth::service_account_ids;
use support::{client, roomy_world, simulator};
use tonic::Code;

fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

async fn project(cloud: &NebiusClient, tenant: &str, name: &str) -> Project {
    cloud
        .create_project(
            tenant,
            name,
            "us-central1",
            &labels(&[("fleet", "t")]),
            &idempotency_key(&["p", name]),
        )
        .await
        .unwrap()
}

#[tokio::test]
async fn every_resource_kind_round_trips() {
    let sim = simulator(&roomy_world("")).await;
    let cloud = client(&sim);
    let tenant = sim.tenant_id();
    assert_eq!(cloud.get_tenant(&tenant).await.unwrap().id, tenant);

    // Projects: created with their default network and subnet, as on Nebius.
    let p = project(&cloud, &tenant, "team-a").await;
    assert_eq!(
        (p.name.as_str(), p.region.as_str(), p.state),
        ("team-a", "us-central1", State::Ready)
    );
    assert!(p.id.starts_with("project-u00"), "{}", p.id);
    assert_eq!(cloud.get_project(&p.id).await.unwrap(), p);
    assert!(cloud.list_projects(&tenant).await.unwrap().contains(&p));
    assert_eq!(cloud.list_networks(&p.id).await.unwrap().len(), 1);
    assert_eq!(cloud.list_subnets(&p.id).await.unwrap().len(), 1);

    // Networks and subnets.
    let l = labels(&[("fleet", "t"), ("project-key", "team-a")]);
    let net = cloud
        .create_network(&p.id, "team-a-net", &l, "k-net")
        .await
        .unwrap();
    assert_eq!((net.state, &net.labels), (State::Ready, &l));
    let subnet = cloud
        .create_subnet(&p.id, "team-a-subnet", &net.id, &l, "k-subnet")
        .await
        .unwrap();
    assert_eq!(subnet.network_id, net.id);
    assert!(!subnet.cidrs.is_empty());

    // Filesystem: create, resize, get.
    let fs = cloud
        .create_filesystem(&p.id, "shared", 1024, &l, "k-fs")
        .await
        .unwrap();
    assert_eq!(fs.size_gibibytes, 1024);
    let fs2 = cloud
        .resize_filesystem(&fs.id, 2048, &l, "k-fs-resize")
        .await
        .unwrap();
    assert_eq!(
        (fs2.id.as_str(), fs2.size_gibibytes),
        (fs.id.as_str(), 2048)
    );
    assert_eq!(
        cloud.list_filesystems(&p.id).await.unwrap(),
        vec![fs2.clone()]
    );

    // GPU cluster.
    let gc = cloud
        .create_gpu_cluster(&p.id, "fabric", "us-central1-a", &l, "k-gc")
        .await
        .unwrap();
    assert_eq!(gc.infiniband_fabric, "us-central1-a");
    assert_eq!(cloud.list_gpu_clusters(&p.id).await.unwrap().len(), 1);

    // Cluster and node groups.
    let spec = ClusterSpec {
        k8s_version: "1.31".into(),
        subnet_id: subnet.id.clone(),
        public_endpoint: true,
    };
    let cluster = cloud
        .create_cluster(&p.id, "train", &spec, &l, "k-cluster")
        .await
        .unwrap();
    assert_eq!(cluster.state, State::Ready);
    assert_eq!(cluster.spec, spec);
    assert!(cluster.public_endpoint.starts_with("https://"));
    let ng_spec = NodeGroupSpec {
        node_count: 2,
        autoscale_min: None,
        platform: "gpu-h200-sxm".into(),
        preset: "8gpu-128vcpu-1600gb".into(),
        boot_disk_gibibytes: 1023,
        gpu_cluster_id: gc.id.clone(),
        drivers_preset: "cuda13.0".into(),
        filesystems: vec![AttachedFilesystem {
            filesystem_id: fs.id.clone(),
            mount_tag: "data".into(),
            read_write: true,
        }],
        cloud_init_user_data: "#cloud-config\n".into(),
        ..Default::default()
    };
    let ng = cloud
        .create_node_group(&cluster.id, "train-ng-gpu", &ng_spec, &l, "k-ng")
        .await
        .unwrap();
    // The interface's subnet is left to the service, which fills in the control plane's.
    assert_eq!(
        ng.spec,
        NodeGroupSpec {
            subnet_id: subnet.id.clone(),
            ..ng_spec.clone()
        }
    );
    assert_eq!(
        (ng.state, ng.node_count, ng.ready_node_count),
        (State::Ready, 2, 2)
    );
    let mut bigger = ng_spec.clone();
    bigger.node_count = 3;
    let ng2 = cloud
        .update_node_group(&ng.id, &bigger, &l, "k-ng-3")
        .await
        .unwrap();
    assert_eq!(ng2.spec.node_count, 3);
    assert_eq!(
        cloud.list_node_groups(&cluster.id).await.unwrap(),
        vec![ng2]
    );
    let updated = cloud
        .update_cluster(
            &cluster.id,
            &spec,
            &labels(&[("fleet", "t"), ("extra", "1")]),
            "k-cluster-up",
        )
        .await
        .unwrap();
    assert_eq!(updated.labels.get("extra").map(String::as_str), Some("1"));

    // Bucket.
    let bucket = cloud
        .create_bucket(
            &p.id,
            "team-a-bucket",
            "enhanced_throughput",
            1 << 40,
            &l,
            "k-b",
        )
        .await
        .unwrap();
    assert_eq!(
        (
            bucket.storage_class.as_str(),
            bucket.max_size_bytes,
            bucket.region.as_str()
        ),
        ("enhanced_throughput", 1 << 40, "us-central1")
    );
    // Every class the spec accepts crosses the wire under its newest upstream name.
    let bucket = cloud
        .update_bucket(&bucket.id, "intelligent", 2 << 40, &l, "k-b2")
        .await
        .unwrap();
    assert_eq!(bucket.max_size_bytes, 2 << 40);
    assert_eq!(bucket.storage_class, "intelligent");
    assert_eq!(
        cloud.list_buckets(&p.id).await.unwrap(),
        vec![bucket.clone()]
    );

    // Deletes, in dependency order; a filesystem in use cannot go first.
    let in_use = cloud
        .delete_filesystem(&fs.id, "k-fs-del-early")
        .await
        .unwrap_err();
    assert_eq!(in_use.code, Code::FailedPrecondition);
    cloud.delete_node_group(&ng.id, "k-ng-del").await.unwrap();
    cloud.delete_cluster(&cluster.id, "k-c-del").await.unwrap();
    cloud.delete_filesystem(&fs.id, "k-fs-del").await.unwrap();
    cloud.delete_gpu_cluster(&gc.id, "k-gc-del").await.unwrap();
    cloud.delete_subnet(&subnet.id, "k-s-del").await.unwrap();
    cloud.delete_network(&net.id, "k-n-del").await.unwrap();
    cloud.delete_bucket(&bucket.id, "k-b-del").await.unwrap();
    assert!(cloud.list_clusters(&p.id).await.unwrap().is_empty());
    assert!(
        cloud
            .get_cluster(&cluster.id)
            .await
            .unwrap_err()
            .is_not_found()
    );
    // A deleted bucket is soft-deleted, as on Nebius: still listed, scheduled for deletion.
    let deleted = cloud.list_buckets(&p.id).await.unwrap();
    assert_eq!(deleted.len(), 1);
    assert!(deleted[0].scheduled_for_deletion);
    assert_eq!(deleted[0].state, State::Deleting);
    assert_eq!(cloud.list_networks(&p.id).await.unwrap().len(), 1);
}

#[tokio::test]
async fn operations_are_polled_until_done() {
    let sim = simulator(
        &roomy_world("").replace("operation_latency_ms: 30", "operation_latency_ms: 300"),
    )
    .await;
    let cloud = client(&sim);
    let p = project(&cloud, &sim.tenant_id(), "slow").await;
    // The creation returned only after the operation finished.
    assert_eq!(p.state, State::Ready);
    use fleetbot::cloud::proto::nebius::vpc::v1 as vpc;
    let op = cloud
        .call(
            Host::Vpc,
            Some("raw-create"),
            vpc::CreateNetworkRequest {
                metadata: Some(
                    fleetbot::cloud::proto::nebius::common::v1::ResourceMetadata {
                        parent_id: p.id.clone(),
                        name: "raw".into(),
                        ..Default::default()
                    },
                ),
                spec: Some(vpc::NetworkSpec::default()),
            },
            |c, r| async move {
                vpc::network_service_client::NetworkServiceClient::new(c)
                    .create(r)
                    .await
            },
        )
        .await
        .unwrap();
    assert!(
        op.status.is_none(),
        "a 300 ms operation is still running when Create returns"
    );
    assert!(!op.resource_id.is_empty());
    let networks = cloud.list_networks(&p.id).await.unwrap();
    let raw = networks.iter().find(|n| n.id == op.resource_id).unwrap();
    assert_eq!(raw.state, State::Creating);
    let done = cloud.wait(Host::Vpc, op).await.unwrap();
    assert_eq!(done.status.unwrap().code, 0);
    assert!(done.finished_at.is_some());
    let networks = cloud.list_networks(&p.id).await.unwrap();
    assert_eq!(
        networks
            .iter()
            .find(|n| n.id == done.resource_id)
            .unwrap()
            .state,
        State::Ready
    );
}

#[tokio::test]
async fn pagination_reads_every_page() {
    // The default world advertises 25 quotas in 7 regions: more than one page of 100.
    let world = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/sim/default.yaml"
    ))
    .unwrap();
    let sim = simulator(&world).await;
    let cloud = client(&sim);
    let allowances = cloud.list_quota_allowances(&sim.tenant_id()).await.unwrap();
    assert_eq!(allowances.len(), 25 * 7);
    let unique: std::collections::BTreeSet<_> = allowances.iter().map(|a| a.id.clone()).collect();
    assert_eq!(unique.len(), allowances.len(), "no allowance is read twice");
    let gpu = allowances
        .iter()
        .find(|a| a.name == "compute.instance.gpu.h200" && a.region == "us-central1")
        .unwrap();
    assert_eq!(
        (gpu.limit, gpu.unit.as_str(), gpu.state.as_str()),
        (Some(512), "count", "STATE_ACTIVE")
    );
    let unlimited = allowances
        .iter()
        .find(|a| a.name == "storage.bucket.size.standard")
        .unwrap();
    assert_eq!(unlimited.limit, None);
}

#[tokio::test]
async fn unavailable_is_retried_with_the_same_key_and_creates_once() {
    // The first Create takes effect, then its reply is lost; the client retries.
    let world = roomy_world(
        "faults:\n  - {method: ClusterService/Create, code: unavailable, fail_nth: [1], after_effect: true}\n",
    );
    let sim = simulator(&world).await;
    let cloud = client(&sim);
    let p = project(&cloud, &sim.tenant_id(), "retry").await;
    let subnet = cloud.list_subnets(&p.id).await.unwrap().remove(0);
    let spec = ClusterSpec {
        subnet_id: subnet.id,
        ..Default::default()
    };
    let cluster = cloud
        .create_cluster(&p.id, "c1", &spec, &Labels::new(), "same-key")
        .await
        .unwrap();
    assert_eq!(sim.service.faults_fired(), 1, "the first reply was lost");
    let clusters = cloud.list_clusters(&p.id).await.unwrap();
    assert_eq!(clusters.len(), 1, "no duplicate after the retry");
    assert_eq!(clusters[0].id, cluster.id);
    // A deliberate second create with the same key replays the first operation too.
    let again = cloud
        .create_cluster(&p.id, "c1", &spec, &Labels::new(), "same-key")
        .await
        .unwrap();
    assert_eq!(again.id, cluster.id);
}

#[tokio::test]
async fn retries_give_up_and_honour_retry_type() {
    let world = roomy_world(
        "faults:\n  - {method: NetworkService/List, code: unavailable, error_rate: 1.0}\n  - {method: SubnetService/List, code: unavailable, fail_nth: [1], retry_type: nothing}\n",
    );
    let sim = simulator(&world).await;
    let cloud = client(&sim);
    let p = project(&cloud, &sim.tenant_id(), "down").await;
    let e = cloud.list_networks(&p.id).await.unwrap_err();
    assert_eq!(e.code, Code::Unavailable);
    assert_eq!(
        sim.service.faults_fired(),
        3,
        "three attempts, then the client gave up"
    );
    // The service said not to retry: the first failure is final.
    let e = cloud.list_subnets(&p.id).await.unwrap_err();
    assert_eq!(e.code, Code::Unavailable);
    assert!(!e.is_retryable());
    assert_eq!(
        sim.service.faults_fired(),
        4,
        "a NOTHING retry type is not retried"
    );
    assert_eq!(cloud.list_subnets(&p.id).await.unwrap().len(), 1);
}

#[tokio::test]
async fn quota_exhaustion_names_the_quota() {
    let world = "name: tight\nregions: [us-central1]\nquotas:\n  us-central1:\n    compute.instance.gpu.h200: {limit: 16, usage: 8}\n    mk8s.cluster.count: 1\n";
    let sim = simulator(world).await;
    let cloud = client(&sim);
    let p = project(&cloud, &sim.tenant_id(), "q").await;
    let subnet = cloud.list_subnets(&p.id).await.unwrap().remove(0);
    let spec = ClusterSpec {
        subnet_id: subnet.id,
        ..Default::default()
    };
    let cluster = cloud
        .create_cluster(&p.id, "c", &spec, &Labels::new(), "c")
        .await
        .unwrap();
    let second = cloud
        .create_cluster(&p.id, "c2", &spec, &Labels::new(), "c2")
        .await
        .unwrap_err();
    assert_eq!(second.code, Code::ResourceExhausted);
    assert_eq!(second.quota_names(), ["mk8s.cluster.count"]);
    let ng = NodeGroupSpec {
        node_count: 2,
        autoscale_min: None,
        platform: "gpu-h200-sxm".into(),
        preset: "8gpu-128vcpu-1600gb".into(),
        boot_disk_gibibytes: 1023,
        ..Default::default()
    };
    let e = cloud
        .create_node_group(&cluster.id, "gpu", &ng, &Labels::new(), "ng")
        .await
        .unwrap_err();
    assert_eq!(e.quota_names(), ["compute.instance.gpu.h200"]);
    match &e.kind {
        ErrorKind::QuotaExceeded { violations } => assert_eq!(
            (
                violations[0].limit.as_str(),
                violations[0].requested.as_str()
            ),
            ("16", "24")
        ),
        other => panic!("{other:?}"),
    }
    assert!(
        cloud
            .list_node_groups(&cluster.id)
            .await
            .unwrap()
            .is_empty()
    );
    // One node fits exactly.
    let one = NodeGroupSpec {
        node_count: 1,
        autoscale_min: None,
        ..ng
    };
    cloud
        .create_node_group(&cluster.id, "gpu", &one, &Labels::new(), "ng1")
        .await
        .unwrap();
    let used = cloud.list_quota_allowances(&sim.tenant_id()).await.unwrap();
    let gpu = used
        .iter()
        .find(|a| a.name == "compute.instance.gpu.h200")
        .unwrap();
    assert_eq!(gpu.usage, 16);
}

#[tokio::test]
async fn name_conflicts_and_conflicting_operations() {
    let sim = simulator(
        &roomy_world("").replace("operation_latency_ms: 30", "operation_latency_ms: 400"),
    )
    .await;
    let cloud = client(&sim);
    let p = project(&cloud, &sim.tenant_id(), "names").await;
    let e = cloud
        .create_network(&p.id, "default-network", &Labels::new(), "dup")
        .await
        .unwrap_err();
    assert_eq!(e.code, Code::AlreadyExists);
    assert!(
        matches!(e.kind, ErrorKind::AlreadyExists { ref resource_id } if !resource_id.is_empty())
    );

    let fs = cloud
        .create_filesystem(&p.id, "fs", 100, &Labels::new(), "fs")
        .await
        .unwrap();
    use fleetbot::cloud::proto::nebius::compute::v1 as compute;
    let delete = |key: &'static str| {
        let cloud = cloud.clone();
        let id = fs.id.clone();
        async move {
            cloud
                .call(
                    Host::Compute,
                    Some(key),
                    compute::DeleteFilesystemRequest { id },
                    |c, r| async move {
                        compute::filesystem_service_client::FilesystemServiceClient::new(c)
                            .delete(r)
                            .await
                    },
                )
                .await
        }
    };
    let first = delete("del-1").await.unwrap();
    assert!(first.status.is_none());
    let conflict = delete("del-2").await.unwrap_err();
    assert_eq!(conflict.code, Code::Aborted);
    assert!(
        matches!(conflict.kind, ErrorKind::OperationConflict { ref operation_id, .. } if *operation_id == first.id)
    );
}

#[tokio::test]
async fn token_exchange_accepts_the_right_key_and_refuses_a_wrong_one() {
    let (private, public) = support::rsa_keypair();
    let (other_private, _) = support::rsa_keypair();
    let world = format!(
        "name: auth\nregions: [us-central1]\nservice_accounts:\n  - name: deployer\n    public_key_pem: |\n{}",
        public
            .lines()
            .map(|l| format!("      {l}\n"))
            .collect::<String>()
    );
    let mut world_obj = fleetbot::sim::World::from_yaml(&world).unwrap();
    world_obj.static_tokens.clear();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let sim = fleetbot::sim::Simulator::start(world_obj, None, listener)
        .await
        .unwrap();
    let (account, key_id) = service_account_ids("auth", "deployer");
    let policies = (
        RetryPolicy {
            attempts: 1,
            per_attempt: Duration::from_secs(5),
            overall: Duration::from_secs(5),
            first_backoff: Duration::from_millis(1),
        },
        PollPolicy::default(),
    );
    let as_client = |pem: &str, kid: &str| {
        NebiusClient::new(
            Endpoints::Single {
                uri: sim.endpoint(),
            },
            Credentials::service_account(ServiceAccountKey {
                service_account_id: account.clone(),
                public_key_id: kid.to_string(),
                private_key_pem: pem.to_string(),
            }),
        )
        .with_policies(policies.0, policies.1)
    };
    let good = as_client(&private, &key_id);
    assert_eq!(
        good.get_tenant(&sim.tenant_id()).await.unwrap().id,
        sim.tenant_id()
    );

    let wrong_key = as_client(&other_private, &key_id);
    let e = wrong_key.get_tenant(&sim.tenant_id()).await.unwrap_err();
    assert_eq!(e.code, Code::Unauthenticated);
    let unknown_kid = as_client(&private, "publickey-unknown");
    assert_eq!(
        unknown_kid
            .get_tenant(&sim.tenant_id())
            .await
            .unwrap_err()
            .code,
        Code::Unauthenticated
    );

    // Without any token, every call is refused.
    let anonymous = NebiusClient::new(
        Endpoints::Single {
            uri: sim.endpoint(),
        },
        Credentials::Static("nope".into()),
    )
    .with_policies(policies.0, policies.1);
    assert_eq!(
        anonymous
            .get_tenant(&sim.tenant_id())
            .await
            .unwrap_err()
            .code,
        Code::Unauthenticated
    );
}

#[tokio::test]
async fn reserved_capacity_is_accounted_per_block() {
    let world = "name: cbg\nregions: [us-central1]\nquotas:\n  us-central1: {compute.instance.gpu.rtx6000: 0}\ncapacity_block_groups:\n  - {name: rtx, region: us-central1, platform: gpu-rtx6000, limit: 16, usage: 4}\n";
    let sim = simulator(world).await;
    let cloud = client(&sim);
    let tenant = sim.tenant_id();
    let block = sim.capacity_block_id("rtx");
    let blocks = cloud.list_capacity_block_groups(&tenant).await.unwrap();
    assert_eq!(blocks.len(), 1);
    assert_eq!(
        (
            blocks[0].id.as_str(),
            blocks[0].platform.as_str(),
            blocks[0].state.as_str()
        ),
        (block.as_str(), "gpu-rtx6000", "STATE_ACTIVE")
    );
    assert_eq!((blocks[0].current_limit, blocks[0].usage), (16, 4));

    let p = project(&cloud, &tenant, "r").await;
    let subnet = cloud.list_subnets(&p.id).await.unwrap().remove(0);
    let c = cloud
        .create_cluster(
            &p.id,
            "c",
            &ClusterSpec {
                subnet_id: subnet.id,
                ..Default::default()
            },
            &Labels::new(),
            "c",
        )
        .await
        .unwrap();
    let reserved = |count: i64| NodeGroupSpec {
        node_count: count,
        autoscale_min: None,
        platform: "gpu-rtx6000".into(),
        preset: "8gpu-192vcpu-1744gb".into(),
        boot_disk_gibibytes: 1023,
        reservation: Some(Reservation {
            policy: "STRICT".into(),
            capacity_block_group_ids: vec![block.clone()],
        }),
        ..Default::default()
    };
    // 2 × 8 = 16 > 12 free reserved GPUs: STRICT never falls back to on-demand.
    let e = cloud
        .create_node_group(&c.id, "too-big", &reserved(2), &Labels::new(), "big")
        .await
        .unwrap_err();
    assert!(
        matches!(e.kind, ErrorKind::NotEnoughResources { .. }),
        "{e:?}"
    );
    let ng = cloud
        .create_node_group(&c.id, "fits", &reserved(1), &Labels::new(), "fits")
        .await
        .unwrap();
    assert_eq!(ng.spec.reservation.as_ref().unwrap().policy, "STRICT");
    let blocks = cloud.list_capacity_block_groups(&tenant).await.unwrap();
    assert_eq!(blocks[0].usage, 12);
    cloud.delete_node_group(&ng.id, "del").await.unwrap();
    assert_eq!(
        cloud.list_capacity_block_groups(&tenant).await.unwrap()[0].usage,
        4
    );
}

#[tokio::test]
async fn state_persists_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("sim.state");
    let mut world = fleetbot::sim::World::from_yaml(&roomy_world("")).unwrap();
    world.static_tokens.push(support::TOKEN.into());
    let start = |w: fleetbot::sim::World, s: std::path::PathBuf| async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        fleetbot::sim::Simulator::start(w, Some(s), listener)
            .await
            .unwrap()
    };
    let sim = start(world.clone(), state.clone()).await;
    let p = project(&client(&sim), &sim.tenant_id(), "kept").await;
    sim.stop().await;
    let sim = start(world, state.clone()).await;
    let cloud = client(&sim);
    assert_eq!(cloud.get_project(&p.id).await.unwrap().name, "kept");

    std::fs::write(&state, b"\xff\xffnot a state").unwrap();
    let w = fleetbot::sim::World::from_yaml(&roomy_world("")).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let err = fleetbot::sim::Simulator::start(w, Some(state), listener)
        .await
        .err()
        .unwrap();
    assert!(err.contains("unreadable"), "{err}");
}
