//! The engine against the simulator through the real gRPC client: deploy, redeploy, change,
//! select, destroy, preflight refusal, ownership, convergence after interrupted deploys, and
//! pruning targets the spec no longer declares.

use crate::support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::deploy;
use crate::support::destroy;
use fleetbot::cloud::Cloud;
use fleetbot::cloud::client::idempotency_key;
use fleetbot::cloud::domain::{ClusterSpec, Labels, State};
use fleetbot::engine::desired::{LABEL_MANAGED_BY, MANAGED_BY};
use fleetbot::engine::live::{Action, ProblemKind};
use fleetbot::engine::ops::{LifecycleOptions, Progress, plan_is_quiet, prepare, status};
use fleetbot::spec::{FleetSpec, load_str};
use fleetbot::store::{InventoryStore, SqliteStore};
use support::{client, simulator};

/// The embedded default world (every required allowance, generous), with quick operations and
/// an empty tenant.
fn world() -> String {
    support::empty_default_world()
}

const SPEC: &str = r#"apiVersion: npa.fleet/v0.0.1
name: eng
tenant_id: ""
region: us-central1
project_prefix: eng-
defaults:
  cpu_nodes: {count: 1, platform: cpu-d3, preset: 16vcpu-64gb}
  gpu_nodes: {count: 1, platform: gpu-rtx6000, preset: 1gpu-24vcpu-218gb}
  enable_filestore: true
  filestore_disk_size_gibibytes: 512
projects:
  - name: a
    object_storage: {storage_class: enhanced, size_gibibytes: 1024}
    clusters:
      - name: train
      - name: infer
        gpu_nodes: {count: 2}
  - name: b
"#;

fn spec(text: &str) -> FleetSpec {
    load_str(text, "fleet.yaml").unwrap()
}

fn quiet() -> Progress {
    Arc::new(|_: &fleetbot::engine::ops::Event| {})
}

fn recording() -> (Progress, Arc<Mutex<Vec<String>>>) {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    (
        Arc::new(move |l: &fleetbot::engine::ops::Event| sink.lock().unwrap().push(l.to_string())),
        lines,
    )
}

async fn store(dir: &tempfile::TempDir) -> SqliteStore {
    SqliteStore::open(&dir.path().join("inventory.sqlite"))
        .await
        .unwrap()
}

fn options() -> LifecycleOptions {
    LifecycleOptions {
        ssh_public_key: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExampleKeyForTestsOnly fleetbot-test"
            .into(),
        ..LifecycleOptions::default()
    }
}

/// A pre-existing project with no network or subnet, so fleetbot must create its own.
async fn bare_project(
    cloud: &fleetbot::cloud::NebiusClient,
    tenant: &str,
) -> fleetbot::cloud::domain::Project {
    let project = cloud
        .create_project(tenant, "bare", "us-central1", &Labels::new(), "bare")
        .await
        .unwrap();
    for s in cloud.list_subnets(&project.id).await.unwrap() {
        cloud
            .delete_subnet(&s.id, &idempotency_key(&["del", &s.id]))
            .await
            .unwrap();
    }
    for n in cloud.list_networks(&project.id).await.unwrap() {
        cloud
            .delete_network(&n.id, &idempotency_key(&["del", &n.id]))
            .await
            .unwrap();
    }
    project
}

fn owned(labels: &Labels) -> bool {
    labels.get(LABEL_MANAGED_BY).map(String::as_str) == Some(MANAGED_BY)
}

#[tokio::test]
async fn deploy_redeploy_change_and_destroy() {
    let sim = simulator(&world()).await;
    let cloud = client(&sim);
    let tenant = sim.tenant_id();
    let dir = tempfile::tempdir().unwrap();
    let store = crate::stores::WatchedStore::new(store(&dir).await);
    let fleet = spec(SPEC);

    // Deploy into an empty tenant.
    let result = deploy(&cloud, &store, &fleet, &tenant, &options(), quiet())
        .await
        .unwrap();
    assert_eq!((result.deployed, result.failed), (3, 0), "{result:#?}");
    let projects = cloud.list_projects(&tenant).await.unwrap();
    let mut names: Vec<_> = projects.iter().map(|p| p.name.clone()).collect();
    names.sort();
    assert_eq!(names, ["eng-a", "eng-b"]);
    let a = projects.iter().find(|p| p.name == "eng-a").unwrap();
    let clusters = cloud.list_clusters(&a.id).await.unwrap();
    assert_eq!(clusters.len(), 2);
    assert!(
        clusters
            .iter()
            .all(|c| owned(&c.labels) && c.state == State::Ready)
    );
    let infer = clusters.iter().find(|c| c.name == "infer").unwrap();
    let groups = cloud.list_node_groups(&infer.id).await.unwrap();
    let mut shapes: Vec<_> = groups
        .iter()
        .map(|g| {
            (
                g.name.clone(),
                g.spec.node_count,
                g.spec.platform.clone(),
                g.spec.boot_disk_gibibytes,
            )
        })
        .collect();
    shapes.sort();
    assert_eq!(
        shapes,
        [
            ("infer-ng-cpu".to_string(), 1, "cpu-d3".to_string(), 128),
            (
                "infer-ng-gpu-0".to_string(),
                2,
                "gpu-rtx6000".to_string(),
                1023
            ),
        ]
    );
    let gpu = groups.iter().find(|g| g.name == "infer-ng-gpu-0").unwrap();
    assert_eq!(
        gpu.spec.drivers_preset, "cuda13.0",
        "auto with GPUs uses the managed driver image"
    );
    assert_eq!(gpu.spec.filesystems.len(), 1);
    assert!(gpu.spec.cloud_init_user_data.contains("defaults,nofail"));
    let filesystems = cloud.list_filesystems(&a.id).await.unwrap();
    assert_eq!(filesystems.len(), 2);
    assert!(
        filesystems
            .iter()
            .all(|f| f.size_gibibytes == 512 && owned(&f.labels))
    );
    let buckets = cloud.list_buckets(&a.id).await.unwrap();
    assert_eq!(buckets.len(), 1);
    assert_eq!(
        (buckets[0].storage_class.as_str(), buckets[0].max_size_bytes),
        ("enhanced_throughput", 1024 << 30)
    );
    let records = store.targets("eng").await.unwrap();
    assert_eq!(records.len(), 3);
    assert!(
        records
            .iter()
            .all(|r| r.status == "deployed" && !r.cluster_id.is_empty())
    );

    // Deploy again: the plan is quiet and no mutation reaches the simulator.
    let prepared = prepare(&cloud, &store, &fleet, &tenant, &options())
        .await
        .unwrap();
    assert!(
        plan_is_quiet(&prepared.plan),
        "{}",
        prepared.plan.render_text()
    );
    assert_eq!(prepared.plan.summary.unchanged, 3);
    sim.service.clear_call_log();
    store.take();
    let again = deploy(&cloud, &store, &fleet, &tenant, &options(), quiet())
        .await
        .unwrap();
    assert_eq!(again.deployed, 3);
    assert_eq!(sim.service.mutation_calls(), Vec::<String>::new());
    // The unchanged targets are judged on the records their plan read, not read again.
    assert_eq!(store.take(), 0);
    // Its cost follows the change: the inventory is not rewritten, and the unchanged targets'
    // results still say where each cluster is.
    assert_eq!(store.targets("eng").await.unwrap(), records);
    assert!(
        again
            .clusters
            .iter()
            .all(|c| !c.cluster_id.is_empty() && !c.endpoint.is_empty()),
        "{again:#?}"
    );

    // Change one pool count: exactly one node-group update.
    let changed = spec(&SPEC.replace(
        "        gpu_nodes: {count: 2}",
        "        gpu_nodes: {count: 3}",
    ));
    let prepared = prepare(&cloud, &store, &changed, &tenant, &options())
        .await
        .unwrap();
    assert_eq!(
        prepared.plan.summary.update,
        1,
        "{}",
        prepared.plan.render_text()
    );
    assert_eq!(prepared.plan.summary.unchanged, 2);
    sim.service.clear_call_log();
    store.take();
    deploy(&cloud, &store, &changed, &tenant, &options(), quiet())
        .await
        .unwrap();
    assert_eq!(
        sim.service.mutation_calls(),
        ["/nebius.mk8s.v1.NodeGroupService/Update"]
    );
    // The changed target's record is read afresh before it is rewritten; only that one.
    assert_eq!(store.take(), 1);
    let groups = cloud.list_node_groups(&infer.id).await.unwrap();
    assert_eq!(
        groups
            .iter()
            .find(|g| g.name == "infer-ng-gpu-0")
            .unwrap()
            .spec
            .node_count,
        3
    );

    // A selection leaves everything else untouched.
    let select = LifecycleOptions {
        only_projects: vec!["b".into()],
        ..options()
    };
    let smaller = spec(&SPEC.replace(
        "  - name: b\n",
        "  - name: b\n    clusters: [{cpu_nodes: {count: 2}}]\n",
    ));
    sim.service.clear_call_log();
    let result = deploy(&cloud, &store, &smaller, &tenant, &select, quiet())
        .await
        .unwrap();
    assert_eq!(result.clusters.len(), 1);
    let mutations = sim.service.mutation_calls();
    assert_eq!(
        mutations,
        ["/nebius.mk8s.v1.NodeGroupService/Update"],
        "only project b's CPU group changes"
    );

    // Destroy project a: its targets go, its bucket and project stay, its reused subnet stays.
    let (progress, _) = recording();
    let only_a = LifecycleOptions {
        only_projects: vec!["a".into()],
        ..options()
    };
    let destroyed = destroy(&cloud, &store, &changed, &only_a, progress)
        .await
        .unwrap();
    assert_eq!(destroyed.failed, 0, "{destroyed:#?}");
    assert!(destroyed.clusters.iter().all(|c| c.status == "destroyed"));
    assert!(cloud.list_clusters(&a.id).await.unwrap().is_empty());
    assert!(cloud.list_filesystems(&a.id).await.unwrap().is_empty());
    assert_eq!(
        cloud.list_buckets(&a.id).await.unwrap().len(),
        1,
        "buckets are never deleted"
    );
    assert!(
        cloud.get_project(&a.id).await.is_ok(),
        "projects are never deleted"
    );
    assert_eq!(
        cloud.list_subnets(&a.id).await.unwrap().len(),
        1,
        "a reused subnet is kept"
    );
    assert!(
        destroyed.networks.is_empty(),
        "fleetbot created no network in project a"
    );
    let remaining = store.targets("eng").await.unwrap();
    assert_eq!(remaining.len(), 1);
    let st = status(&cloud, &store, &changed).await.unwrap();
    let statuses: Vec<_> = st
        .clusters
        .iter()
        .map(|c| {
            (
                c.project_key.as_str(),
                c.cluster_name.as_str(),
                c.status.as_str(),
            )
        })
        .collect();
    assert_eq!(
        statuses,
        [
            ("a", "train", "unknown"),
            ("a", "infer", "unknown"),
            ("b", "cluster", "deployed")
        ]
    );
}

#[tokio::test]
async fn fleetbot_created_networks_are_reclaimed_and_nothing_else() {
    let sim = simulator(&world()).await;
    let cloud = client(&sim);
    let tenant = sim.tenant_id();
    // A pre-existing project without any subnet: fleetbot must create its own network.
    let project = bare_project(&cloud, &tenant).await;
    let text = format!(
        "apiVersion: npa.fleet/v0.0.1\nname: net\nregion: us-central1\nprojects:\n  - project_id: {}\n    clusters: [{{name: c, cpu_nodes: {{count: 1, preset: 8vcpu-32gb}}}}]\n",
        project.id
    );
    let fleet = spec(&text);
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir).await;
    let result = deploy(&cloud, &store, &fleet, &tenant, &options(), quiet())
        .await
        .unwrap();
    assert_eq!(result.deployed, 1, "{result:#?}");
    let networks = cloud.list_networks(&project.id).await.unwrap();
    assert_eq!(networks.len(), 1);
    assert_eq!(networks[0].name, format!("{}-net", fleet.projects[0].key()));
    let destroyed = destroy(&cloud, &store, &fleet, &options(), quiet())
        .await
        .unwrap();
    assert_eq!(destroyed.failed, 0, "{destroyed:#?}");
    assert_eq!(destroyed.networks.len(), 1);
    assert_eq!(destroyed.networks[0].status, "destroyed");
    assert!(cloud.list_networks(&project.id).await.unwrap().is_empty());
    assert!(cloud.list_subnets(&project.id).await.unwrap().is_empty());
}

#[tokio::test]
async fn preflight_shortfall_reaches_no_mutation() {
    let world = "name: tight\nregions: [us-central1]\noperation_latency_ms: 5\nquotas:\n  us-central1:\n    mk8s.cluster.count: 10\n    vpc.allocation.count: 100\n    compute.instance.count: 10\n    compute.instance.non-gpu.vcpu: 100\n    compute.disk.count: 10\n    compute.disk.size.network-ssd: 109951162777600\n    compute.instance.gpu.rtx6000: {limit: 3, usage: 1}\n    compute.filesystem.count: 5\n    compute.filesystem.size.network-ssd: 109951162777600\n    storage.bucket.count: 5\n    storage.bucket.size.enhanced-throughput: 109951162777600\n";
    let sim = simulator(world).await;
    let cloud = client(&sim);
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir).await;
    sim.service.clear_call_log();
    let err = deploy(
        &cloud,
        &store,
        &spec(SPEC),
        &sim.tenant_id(),
        &options(),
        quiet(),
    )
    .await
    .unwrap_err();
    assert!(
        err.message.contains("quota is too low for this fleet"),
        "{err}"
    );
    assert!(
        err.message
            .contains("compute.instance.gpu.rtx6000 [us-central1]: needs 4"),
        "{err}"
    );
    assert_eq!(sim.service.mutation_calls(), Vec::<String>::new());
    assert!(store.targets("eng").await.unwrap().is_empty());
}

#[tokio::test]
async fn resources_fleetbot_does_not_own_are_never_touched() {
    let sim = simulator(&world()).await;
    let cloud = client(&sim);
    let tenant = sim.tenant_id();
    let project = cloud
        .create_project(&tenant, "eng-b", "us-central1", &Labels::new(), "pb")
        .await
        .unwrap();
    let subnet = cloud.list_subnets(&project.id).await.unwrap().remove(0);
    let foreign = cloud
        .create_cluster(
            &project.id,
            "cluster",
            &ClusterSpec {
                subnet_id: subnet.id,
                ..Default::default()
            },
            &Labels::new(),
            "foreign",
        )
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir).await;
    let only_b = LifecycleOptions {
        only_projects: vec!["b".into()],
        ..options()
    };
    sim.service.clear_call_log();
    let err = deploy(&cloud, &store, &spec(SPEC), &tenant, &only_b, quiet())
        .await
        .unwrap_err();
    assert!(
        err.message
            .contains("exists but is not owned by this fleet target"),
        "{err}"
    );
    assert_eq!(sim.service.mutation_calls(), Vec::<String>::new());
    // Destroy has no record of it, so it is absent, and the foreign cluster stays.
    let destroyed = destroy(&cloud, &store, &spec(SPEC), &only_b, quiet())
        .await
        .unwrap();
    assert_eq!(destroyed.clusters[0].status, "absent");
    assert_eq!(
        cloud.get_cluster(&foreign.id).await.unwrap().name,
        "cluster"
    );
}

#[tokio::test]
async fn interrupted_deploys_converge_without_duplicates() {
    let sim =
        simulator(&world().replace("operation_latency_ms: 5", "operation_latency_ms: 3")).await;
    let cloud = client(&sim);
    let tenant = sim.tenant_id();
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir).await;
    let fleet = spec(SPEC);
    // Cut deploys short at spread-out points, then let one finish.
    let opts = options();
    let mut seed: u64 = 0x5eed;
    for trial in 0..50u64 {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let cut = Duration::from_millis((seed >> 33) % 400);
        let run = deploy(&cloud, &store, &fleet, &tenant, &opts, quiet());
        let _ = tokio::time::timeout(cut, run).await;
        if trial % 10 == 9 {
            // Let in-flight operations finish before the next round, as a real restart would.
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    let result = deploy(&cloud, &store, &fleet, &tenant, &options(), quiet())
        .await
        .unwrap();
    assert_eq!((result.deployed, result.failed), (3, 0), "{result:#?}");

    // Exactly the spec's clusters, each with its two node groups, and no unlabelled resource
    // anywhere. (The simulator refuses a second resource of one name in one parent, as Nebius
    // does, so counting distinct names could never fail; an extra resource under another
    // name, or a missing one, fails this.)
    assert_eq!(live_shape(&cloud, &tenant).await, spec_shape(&fleet));
    let projects = cloud.list_projects(&tenant).await.unwrap();
    assert_eq!(projects.len(), 2, "{projects:#?}");
    for p in &projects {
        let clusters = cloud.list_clusters(&p.id).await.unwrap();
        assert!(clusters.iter().all(|c| owned(&c.labels)));
        for c in &clusters {
            let groups = cloud.list_node_groups(&c.id).await.unwrap();
            assert!(groups.iter().all(|g| owned(&g.labels)));
        }
        let fs = cloud.list_filesystems(&p.id).await.unwrap();
        assert!(fs.iter().all(|f| owned(&f.labels)));
        assert_eq!(fs.len(), clusters.len());
        assert!(cloud.list_buckets(&p.id).await.unwrap().len() <= 1);
    }
    let prepared = prepare(&cloud, &store, &fleet, &tenant, &options())
        .await
        .unwrap();
    assert!(plan_is_quiet(&prepared.plan));
}

#[tokio::test]
async fn injected_unavailable_and_failed_operations_then_converge() {
    let world = format!(
        "{}faults:\n  - {{method: NodeGroupService/Create, code: unavailable, error_rate: 0.3}}\n  - {{method: ClusterService/Create, code: unavailable, fail_nth: [1], after_effect: true}}\n",
        world()
    );
    let sim = simulator(&world).await;
    let cloud = client(&sim);
    let tenant = sim.tenant_id();
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir).await;
    let fleet = spec(SPEC);
    let mut last = None;
    for _ in 0..5 {
        let result = deploy(&cloud, &store, &fleet, &tenant, &options(), quiet())
            .await
            .unwrap();
        let done = result.failed == 0;
        last = Some(result);
        if done {
            break;
        }
    }
    let result = last.unwrap();
    assert_eq!((result.deployed, result.failed), (3, 0), "{result:#?}");
    assert!(sim.service.faults_fired() >= 1);
    // Exactly the spec's clusters with their two node groups each, though creates failed.
    assert_eq!(live_shape(&cloud, &tenant).await, spec_shape(&fleet));
}

/// `(project, cluster, node groups)` as the cloud holds them, sorted.
async fn live_shape(cloud: &impl Cloud, tenant: &str) -> Vec<(String, String, usize)> {
    let mut shape = Vec::new();
    for p in cloud.list_projects(tenant).await.unwrap() {
        for c in cloud.list_clusters(&p.id).await.unwrap() {
            let groups = cloud.list_node_groups(&c.id).await.unwrap().len();
            shape.push((p.name.clone(), c.name.clone(), groups));
        }
    }
    shape.sort();
    shape
}

/// `(project, cluster, node groups)` as the spec declares them (a CPU and a GPU pool each).
fn spec_shape(fleet: &FleetSpec) -> Vec<(String, String, usize)> {
    let mut shape: Vec<_> = fleet
        .cluster_targets()
        .map(|(p, c)| {
            let groups = usize::from(c.cpu_nodes.is_some()) + usize::from(c.gpu_nodes.is_some());
            (
                p.display_name(&fleet.project_prefix),
                c.name.clone(),
                groups,
            )
        })
        .collect();
    shape.sort();
    shape
}

/// Every kind fleetbot creates: a pinned project without a network (so fleetbot makes its
/// network and subnet), a bucket, a cluster with CPU and GPU node groups, a filesystem and a
/// GPU cluster; and a project fleetbot creates, with its own bucket.
fn every_kind_spec(bare_project_id: &str) -> String {
    format!(
        r#"apiVersion: npa.fleet/v0.0.1
name: again
region: us-central1
project_prefix: again-
projects:
  - project_id: {bare_project_id}
    object_storage: {{size_gibibytes: 64}}
    clusters:
      - name: c
        cpu_nodes: {{count: 1, platform: cpu-d3, preset: 8vcpu-32gb}}
        gpu_nodes: {{count: 1, platform: gpu-h200-sxm, preset: 8gpu-128vcpu-1600gb}}
        enable_gpu_cluster: true
        infiniband_fabric: fabric-2
        enable_filestore: true
        filestore_disk_size_gibibytes: 256
  - name: named
    object_storage: {{storage_class: intelligent, size_gibibytes: 64}}
    clusters:
      - name: d
        cpu_nodes: {{count: 1, platform: cpu-d3, preset: 8vcpu-32gb}}
"#
    )
}

/// The IDs of every resource kind fleetbot created for the spec, per kind.
async fn every_kind_ids(
    cloud: &fleetbot::cloud::NebiusClient,
    projects: &[String],
) -> Vec<(&'static str, Vec<String>)> {
    let mut out: Vec<(&'static str, Vec<String>)> = Vec::new();
    let mut push = |kind: &'static str, mut ids: Vec<String>| {
        ids.sort();
        match out.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, all)) => all.extend(ids),
            None => out.push((kind, ids)),
        }
    };
    for p in projects {
        let clusters = cloud.list_clusters(p).await.unwrap();
        for c in &clusters {
            let groups = cloud.list_node_groups(&c.id).await.unwrap();
            push("node group", groups.into_iter().map(|g| g.id).collect());
        }
        push("cluster", clusters.into_iter().map(|c| c.id).collect());
        let fs = cloud.list_filesystems(p).await.unwrap();
        push("filesystem", fs.into_iter().map(|f| f.id).collect());
        let gc = cloud.list_gpu_clusters(p).await.unwrap();
        push("gpu cluster", gc.into_iter().map(|g| g.id).collect());
        let buckets = cloud.list_buckets(p).await.unwrap();
        push("bucket", buckets.into_iter().map(|b| b.id).collect());
        let nets = cloud.list_networks(p).await.unwrap();
        push(
            "network",
            nets.into_iter()
                .filter(|n| owned(&n.labels))
                .map(|n| n.id)
                .collect(),
        );
        let subnets = cloud.list_subnets(p).await.unwrap();
        push(
            "subnet",
            subnets
                .into_iter()
                .filter(|s| owned(&s.labels))
                .map(|s| s.id)
                .collect(),
        );
    }
    out
}

#[tokio::test]
async fn deploy_destroy_deploy_recreates_every_resource_kind() {
    let sim = simulator(&world()).await;
    let cloud = client(&sim);
    let tenant = sim.tenant_id();
    let bare = bare_project(&cloud, &tenant).await;
    let fleet = spec(&every_kind_spec(&bare.id));
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir).await;
    let usage = |allowances: Vec<fleetbot::cloud::domain::QuotaAllowance>| {
        let mut u: Vec<(String, u64, String)> = allowances
            .into_iter()
            .filter(|a| a.region == "us-central1" && !a.name.starts_with("storage."))
            .map(|a| (a.name, a.usage, a.usage_state))
            .collect();
        u.sort();
        u
    };
    let before = usage(cloud.list_quota_allowances(&tenant).await.unwrap());

    // Three lifecycles: with preflight (allowances released by the destroy must read as
    // usable evidence), then with preflight again, then without it (a re-create must be a new
    // request under new idempotency keys, not a replay of the first lifecycle's).
    let mut seen: Vec<(&'static str, Vec<String>)> = Vec::new();
    let mut baseline = None;
    for (round, preflight) in [true, true, false].into_iter().enumerate() {
        let options = LifecycleOptions {
            preflight,
            ..options()
        };
        let result = deploy(&cloud, &store, &fleet, &tenant, &options, quiet())
            .await
            .unwrap_or_else(|e| panic!("round {round}: {e}"));
        assert_eq!(
            (result.deployed, result.failed),
            (2, 0),
            "round {round}: {result:#?}"
        );
        let named = cloud
            .list_projects(&tenant)
            .await
            .unwrap()
            .into_iter()
            .find(|p| p.name == "again-named")
            .expect("the named project");
        let ids = every_kind_ids(&cloud, &[bare.id.clone(), named.id.clone()]).await;
        for (kind, now) in &ids {
            let want = match *kind {
                "node group" => 3,
                "bucket" => 2,
                "cluster" => 2,
                _ => 1,
            };
            assert_eq!(now.len(), want, "round {round}: {kind}: {ids:?}");
            if let Some((_, earlier)) = seen.iter().find(|(k, _)| k == kind) {
                if *kind == "bucket" {
                    // Buckets are never destroyed: the same ones are found again.
                    assert_eq!(now, earlier, "round {round}: buckets");
                } else {
                    assert!(
                        now.iter().all(|id| !earlier.contains(id)),
                        "round {round}: {kind} was not re-created: {now:?} vs {earlier:?}"
                    );
                }
            }
        }
        seen = ids;

        let destroyed = destroy(&cloud, &store, &fleet, &options, quiet())
            .await
            .unwrap();
        assert_eq!(destroyed.failed, 0, "round {round}: {destroyed:#?}");
        assert!(
            destroyed.clusters.iter().all(|c| c.status == "destroyed"),
            "{destroyed:#?}"
        );
        // Every allowance is back where it started (the created project keeps its default
        // network, so VPC usage is compared from the first destroy on), and one back at zero
        // reads NOT_USED.
        let after = usage(cloud.list_quota_allowances(&tenant).await.unwrap());
        match &baseline {
            None => {
                let non_vpc = |u: &Vec<(String, u64, String)>| {
                    u.iter()
                        .filter(|(n, _, _)| !n.starts_with("vpc."))
                        .cloned()
                        .collect::<Vec<_>>()
                };
                assert_eq!(non_vpc(&after), non_vpc(&before), "usage after destroy");
                baseline = Some(after.clone());
            }
            Some(first) => assert_eq!(&after, first, "round {round}: usage after destroy"),
        }
        assert!(
            after
                .iter()
                .all(|(_, u, state)| (*u == 0) == (state == "USAGE_STATE_NOT_USED")),
            "{after:?}"
        );
    }
}

/// One project, one cluster whose CPU pool is `cpu` (a flow mapping body).
fn one_cluster(cpu: &str, gpu: Option<&str>) -> FleetSpec {
    let gpu = gpu.map_or(String::new(), |g| format!(", gpu_nodes: {{{g}}}"));
    spec(&format!(
        "apiVersion: npa.fleet/v0.0.1\nname: life\nregion: us-central1\nproject_prefix: life-\nprojects:\n  - name: a\n    clusters: [{{name: c, cpu_nodes: {{{cpu}}}{gpu}}}]\n"
    ))
}

async fn deployed(
    cloud: &fleetbot::cloud::NebiusClient,
    store: &SqliteStore,
    fleet: &FleetSpec,
    tenant: &str,
    what: &str,
) {
    // These rounds replace and remove pools on purpose: allowed, as `--allow-destroy` does.
    let result = support::deploy_allowing_destroy(cloud, store, fleet, tenant, &options(), quiet())
        .await
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(
        (result.deployed, result.failed),
        (1, 0),
        "{what}: {result:#?}"
    );
}

async fn group_shapes(
    cloud: &fleetbot::cloud::NebiusClient,
    tenant: &str,
) -> Vec<(String, String)> {
    let project = cloud
        .list_projects(tenant)
        .await
        .unwrap()
        .into_iter()
        .find(|p| p.name == "life-a")
        .unwrap();
    let cluster = cloud.list_clusters(&project.id).await.unwrap().remove(0);
    let mut shapes: Vec<(String, String)> = cloud
        .list_node_groups(&cluster.id)
        .await
        .unwrap()
        .into_iter()
        .map(|g| (g.name, g.spec.preset))
        .collect();
    shapes.sort();
    shapes
}

#[tokio::test]
async fn a_shape_replaced_and_restored_and_a_pool_removed_and_re_added_are_new_requests() {
    let sim = simulator(&world()).await;
    let cloud = client(&sim);
    let tenant = sim.tenant_id();
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir).await;
    let a = "count: 1, platform: cpu-d3, preset: 8vcpu-32gb";
    let b = "count: 1, platform: cpu-d3, preset: 16vcpu-64gb";
    let gpu = "count: 1, platform: gpu-rtx6000, preset: 1gpu-24vcpu-218gb";
    // A preset change replaces the group: A, then B, then A again.
    for (round, (cpu, preset)) in [(a, "8vcpu-32gb"), (b, "16vcpu-64gb"), (a, "8vcpu-32gb")]
        .into_iter()
        .enumerate()
    {
        deployed(
            &cloud,
            &store,
            &one_cluster(cpu, None),
            &tenant,
            &format!("shape {round}"),
        )
        .await;
        assert_eq!(
            group_shapes(&cloud, &tenant).await,
            [("c-ng-cpu".to_string(), preset.to_string())],
            "shape {round}"
        );
    }
    // A GPU pool added, removed (its group deleted as stale), and added again.
    for (round, with_gpu) in [true, false, true].into_iter().enumerate() {
        let fleet = one_cluster(a, with_gpu.then_some(gpu));
        deployed(&cloud, &store, &fleet, &tenant, &format!("pool {round}")).await;
        assert_eq!(
            group_shapes(&cloud, &tenant).await.len(),
            1 + usize::from(with_gpu)
        );
    }
}

#[tokio::test]
async fn a_deploy_after_a_destroy_that_stopped_half_way_re_creates_what_was_deleted() {
    // The cluster's first delete fails after its node groups are gone.
    let world = format!(
        "{}faults:\n  - {{method: ClusterService/Delete, code: failed_precondition, fail_nth: [1]}}\n",
        world()
    );
    let sim = simulator(&world).await;
    let cloud = client(&sim);
    let tenant = sim.tenant_id();
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir).await;
    let fleet = one_cluster(
        "count: 1, platform: cpu-d3, preset: 8vcpu-32gb",
        Some("count: 1, platform: gpu-rtx6000, preset: 1gpu-24vcpu-218gb"),
    );
    deployed(&cloud, &store, &fleet, &tenant, "first deploy").await;
    let destroyed = destroy(&cloud, &store, &fleet, &options(), quiet())
        .await
        .unwrap();
    assert_eq!(destroyed.failed, 1, "{destroyed:#?}");
    assert!(group_shapes(&cloud, &tenant).await.is_empty());
    // The half-destroyed target is deployed again: its node groups come back.
    deployed(&cloud, &store, &fleet, &tenant, "after a partial destroy").await;
    assert_eq!(group_shapes(&cloud, &tenant).await.len(), 2);
}

#[tokio::test]
async fn a_create_refused_for_quota_is_a_new_request_once_quota_frees_up() {
    // Room for one 16-vCPU node: another fleet holds it first.
    let world = world().replace(
        "compute.instance.non-gpu.vcpu: 20000",
        "compute.instance.non-gpu.vcpu: 24",
    );
    let sim = simulator(&world).await;
    let cloud = client(&sim);
    let tenant = sim.tenant_id();
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir).await;
    let cpu = "count: 1, platform: cpu-d3, preset: 16vcpu-64gb";
    let other = spec(&format!(
        "apiVersion: npa.fleet/v0.0.1\nname: other\nregion: us-central1\nprojects:\n  - name: o\n    clusters: [{{name: c, cpu_nodes: {{{cpu}}}}}]\n"
    ));
    deployed(&cloud, &store, &other, &tenant, "the other fleet").await;
    let fleet = one_cluster(cpu, None);
    let no_preflight = LifecycleOptions {
        preflight: false,
        ..options()
    };
    let refused = deploy(&cloud, &store, &fleet, &tenant, &no_preflight, quiet())
        .await
        .unwrap();
    assert_eq!((refused.deployed, refused.failed), (0, 1), "{refused:#?}");
    assert!(
        format!("{refused:?}").contains("compute.instance.non-gpu.vcpu"),
        "{refused:#?}"
    );
    // The quota frees up: the same spec, deployed again, is a new request and succeeds
    // instead of replaying the refusal.
    let gone = destroy(&cloud, &store, &other, &options(), quiet())
        .await
        .unwrap();
    assert_eq!(gone.failed, 0, "{gone:#?}");
    deployed(&cloud, &store, &fleet, &tenant, "after the quota freed up").await;
}

/// Two projects and three clusters; [`PRUNE_AFTER`] drops `p/old` and the whole project `q`.
const PRUNE_BEFORE: &str = r#"apiVersion: npa.fleet/v0.0.1
name: prune
region: us-central1
project_prefix: prune-
defaults:
  cpu_nodes: {count: 1, platform: cpu-d3, preset: 8vcpu-32gb}
projects:
  - name: p
    clusters:
      - name: keep
      - name: old
        enable_filestore: true
        filestore_disk_size_gibibytes: 256
  - name: q
    clusters: [{name: solo}]
"#;

const PRUNE_AFTER: &str = r#"apiVersion: npa.fleet/v0.0.1
name: prune
region: us-central1
project_prefix: prune-
defaults:
  cpu_nodes: {count: 1, platform: cpu-d3, preset: 8vcpu-32gb}
projects:
  - name: p
    clusters:
      - name: keep
"#;

async fn project_named(
    cloud: &fleetbot::cloud::NebiusClient,
    tenant: &str,
    name: &str,
) -> fleetbot::cloud::domain::Project {
    cloud
        .list_projects(tenant)
        .await
        .unwrap()
        .into_iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("project {name}"))
}

/// Every cluster of a project with its node groups, by name, with their resource versions.
async fn clusters_of(
    cloud: &fleetbot::cloud::NebiusClient,
    project_id: &str,
) -> Vec<(String, i64, Vec<(String, i64)>)> {
    let mut out = Vec::new();
    for c in cloud.list_clusters(project_id).await.unwrap() {
        let mut groups: Vec<(String, i64)> = cloud
            .list_node_groups(&c.id)
            .await
            .unwrap()
            .into_iter()
            .map(|g| (g.name, g.resource_version))
            .collect();
        groups.sort();
        out.push((c.name, c.resource_version, groups));
    }
    out.sort();
    out
}

#[tokio::test]
async fn targets_removed_from_the_spec_are_planned_kept_and_pruned_only_when_asked() {
    let sim = simulator(&world()).await;
    let cloud = client(&sim);
    let tenant = sim.tenant_id();
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir).await;
    let before = spec(PRUNE_BEFORE);
    let result = deploy(&cloud, &store, &before, &tenant, &options(), quiet())
        .await
        .unwrap();
    assert_eq!((result.deployed, result.failed), (3, 0), "{result:#?}");
    let p = project_named(&cloud, &tenant, "prune-p").await;
    let q = project_named(&cloud, &tenant, "prune-q").await;

    // The live plan of the smaller spec deletes what fleetbot made for p/old and q/solo, by
    // their names only, and keeps p/keep unchanged.
    let after = spec(PRUNE_AFTER);
    let prepared = prepare(&cloud, &store, &after, &tenant, &options())
        .await
        .unwrap();
    let plan = &prepared.plan;
    assert!(!plan.has_problems(), "{}", plan.render_text());
    let pruned: Vec<(&str, Vec<(&str, &str)>)> = plan
        .pruned()
        .map(|t| {
            let actions = t
                .actions
                .iter()
                .inspect(|a| {
                    assert_eq!(a.action, Action::Delete);
                    assert_eq!(a.reason, "removed from the spec");
                })
                .map(|a| (a.resource, a.name.as_str()))
                .collect();
            (t.target.as_str(), actions)
        })
        .collect();
    assert_eq!(
        pruned,
        [
            (
                "p/old",
                vec![
                    ("node-group", "old-ng-cpu"),
                    ("cluster", "old"),
                    ("filesystem", "old-shared-fs")
                ]
            ),
            (
                "q/solo",
                vec![("node-group", "solo-ng-cpu"), ("cluster", "solo")]
            ),
        ],
        "{}",
        plan.render_text()
    );
    assert_eq!((plan.summary.delete, plan.summary.unchanged), (5, 1));
    let destructive = plan.destructive();
    assert_eq!(destructive.len(), 5, "{destructive:#?}");
    assert!(
        destructive
            .iter()
            .all(|d| d.action == Action::Delete && d.why == "removed from the spec")
    );
    let text = plan.render_text();

    assert!(
        text.contains("  target p/old (removed from the spec; deleted only by deploy --prune)"),
        "{text}"
    );
    let json = serde_json::to_string(plan).unwrap();
    assert_eq!(json.matches(r#""prune":true"#).count(), 2, "{json}");
    for id in [&p.id, &q.id] {
        assert!(!json.contains(id.as_str()) && !text.contains(id.as_str()));
    }

    // Without prune deploy deletes nothing and says what it kept.
    let untouched = clusters_of(&cloud, &p.id).await;
    sim.service.clear_call_log();
    let kept = deploy(&cloud, &store, &after, &tenant, &options(), quiet())
        .await
        .unwrap();
    assert_eq!((kept.deployed, kept.failed), (1, 0), "{kept:#?}");
    assert_eq!(kept.not_pruned, ["p/old", "q/solo"]);
    assert!(kept.pruned.is_empty());
    assert!(
        kept.render_text().contains(
            "  [kept] p/old: removed from the spec and still running; deploy --prune deletes it"
        ),
        "{}",
        kept.render_text()
    );
    assert_eq!(sim.service.mutation_calls(), Vec::<String>::new());
    assert_eq!(store.targets("prune").await.unwrap().len(), 3);

    // A selection never prunes, even when asked to.
    let selected = LifecycleOptions {
        only_clusters: vec!["keep".into()],
        prune: true,
        ..options()
    };
    let prepared = prepare(&cloud, &store, &after, &tenant, &selected)
        .await
        .unwrap();
    assert_eq!(prepared.plan.pruned().count(), 0);
    let result = deploy(&cloud, &store, &after, &tenant, &selected, quiet())
        .await
        .unwrap();
    assert!(result.pruned.is_empty() && result.not_pruned.is_empty());
    assert_eq!(sim.service.mutation_calls(), Vec::<String>::new());

    // With prune: exactly the removed targets go, p/keep is not touched, their records go.
    let prune = LifecycleOptions {
        prune: true,
        ..options()
    };
    let (progress, lines) = recording();
    let result = deploy(&cloud, &store, &after, &tenant, &prune, progress)
        .await
        .unwrap();
    assert_eq!((result.deployed, result.failed), (1, 0), "{result:#?}");
    let gone: Vec<(&str, &str, &str)> = result
        .pruned
        .iter()
        .map(|e| {
            (
                e.project_key.as_str(),
                e.cluster_name.as_str(),
                e.status.as_str(),
            )
        })
        .collect();
    assert_eq!(
        gone,
        [("p", "old", "destroyed"), ("q", "solo", "destroyed")]
    );
    assert!(result.not_pruned.is_empty());
    let mutations = sim.service.mutation_calls();
    assert_eq!(mutations.len(), 5, "{mutations:?}");
    assert!(
        mutations.iter().all(|m| m.ends_with("/Delete")),
        "{mutations:?}"
    );
    let remaining = clusters_of(&cloud, &p.id).await;
    assert_eq!(
        remaining,
        untouched
            .iter()
            .filter(|(name, _, _)| name == "keep")
            .cloned()
            .collect::<Vec<_>>(),
        "p/keep is untouched"
    );
    assert!(cloud.list_clusters(&q.id).await.unwrap().is_empty());
    assert!(cloud.list_filesystems(&p.id).await.unwrap().is_empty());
    assert!(
        cloud.get_project(&q.id).await.is_ok(),
        "projects are never deleted"
    );
    let records = store.targets("prune").await.unwrap();
    let keys: Vec<_> = records
        .iter()
        .map(|r| format!("{}/{}", r.project_key, r.cluster_name))
        .collect();
    assert_eq!(keys, ["p/keep"]);
    assert!(
        lines
            .lock()
            .unwrap()
            .iter()
            .any(|l| l == "p/old: destroying"),
        "{lines:?}"
    );

    // Again: nothing left to prune, nothing to do.
    let prepared = prepare(&cloud, &store, &after, &tenant, &prune)
        .await
        .unwrap();
    assert!(
        plan_is_quiet(&prepared.plan),
        "{}",
        prepared.plan.render_text()
    );
    assert_eq!(prepared.plan.pruned().count(), 0);
    sim.service.clear_call_log();
    let again = deploy(&cloud, &store, &after, &tenant, &prune, quiet())
        .await
        .unwrap();
    assert!(again.pruned.is_empty() && again.not_pruned.is_empty());
    assert_eq!(sim.service.mutation_calls(), Vec::<String>::new());
}

#[tokio::test]
async fn a_removed_target_whose_cluster_lost_fleetbots_labels_is_never_deleted() {
    let sim = simulator(&world()).await;
    let cloud = client(&sim);
    let tenant = sim.tenant_id();
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir).await;
    deployed_all(&cloud, &store, &spec(PRUNE_BEFORE), &tenant).await;
    let p = project_named(&cloud, &tenant, "prune-p").await;
    let old = cloud
        .list_clusters(&p.id)
        .await
        .unwrap()
        .into_iter()
        .find(|c| c.name == "old")
        .unwrap();
    cloud
        .update_cluster(&old.id, &old.spec, &Labels::new(), "relabel-old")
        .await
        .unwrap();

    let after = spec(PRUNE_AFTER);
    let prune = LifecycleOptions {
        prune: true,
        ..options()
    };
    let prepared = prepare(&cloud, &store, &after, &tenant, &prune)
        .await
        .unwrap();
    let entry = prepared
        .plan
        .pruned()
        .find(|t| t.target == "p/old")
        .unwrap();
    assert_eq!(entry.problems.len(), 1, "{entry:?}");
    assert_eq!(entry.problems[0].kind, ProblemKind::NotOwned);
    assert!(
        entry
            .actions
            .iter()
            .all(|a| a.resource != "cluster" && a.resource != "node-group"),
        "{entry:?}"
    );
    assert!(!entry.problems[0].message.contains(&old.id));
    sim.service.clear_call_log();
    let err = deploy(&cloud, &store, &after, &tenant, &prune, quiet())
        .await
        .unwrap_err();
    assert!(
        err.message.contains("not proven this fleet target's"),
        "{err}"
    );
    assert_eq!(sim.service.mutation_calls(), Vec::<String>::new());
    assert!(cloud.get_cluster(&old.id).await.is_ok());
    assert_eq!(store.targets("prune").await.unwrap().len(), 3);
}

async fn deployed_all(
    cloud: &fleetbot::cloud::NebiusClient,
    store: &SqliteStore,
    fleet: &FleetSpec,
    tenant: &str,
) {
    let result = deploy(cloud, store, fleet, tenant, &options(), quiet())
        .await
        .unwrap();
    assert_eq!(result.failed, 0, "{result:#?}");
}

#[tokio::test]
async fn the_plans_of_one_pass_share_their_reads_and_an_apply_reads_afresh() {
    let sim = simulator(&world()).await;
    let cloud = client(&sim);
    let tenant = sim.tenant_id();
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir).await;
    let eng = spec(SPEC);
    deploy(&cloud, &store, &eng, &tenant, &options(), quiet())
        .await
        .unwrap();
    // A second fleet of the same repository, in one of eng's projects.
    let ops = spec(
        "apiVersion: npa.fleet/v0.0.1\nname: ops\nregion: us-central1\nproject_prefix: eng-\ndefaults:\n  cpu_nodes: {count: 1, platform: cpu-d3, preset: 16vcpu-64gb}\nprojects:\n  - name: a\n    clusters: [{name: tools}]\n",
    );
    let reads = fleetbot::engine::live::ReadCache::new();
    let shared = LifecycleOptions {
        reads: Some(reads.clone()),
        ..options()
    };

    sim.service.clear_call_log();
    let first = prepare(&cloud, &store, &eng, &tenant, &shared)
        .await
        .unwrap();
    let eng_calls = sim.service.call_log().len();
    assert!(eng_calls > 0);
    assert_eq!(reads.reads(), eng_calls);

    // The other fleet's project listing and tenant listing come from the pass's reads.
    sim.service.clear_call_log();
    let other = prepare(&cloud, &store, &ops, &tenant, &shared)
        .await
        .unwrap();
    assert_eq!(sim.service.call_log(), Vec::<String>::new());
    assert_eq!(other.plan.summary.create, 2, "{}", other.plan.render_text());

    // The same fleet again in the pass: the same plan, no call.
    let again = prepare(&cloud, &store, &eng, &tenant, &shared)
        .await
        .unwrap();
    assert_eq!(sim.service.call_log(), Vec::<String>::new());
    assert_eq!(again.plan.digest, first.plan.digest);
    assert!(reads.hits() >= eng_calls);

    // Outside the pass (an apply), everything is read again and a change made meanwhile shows.
    let a = project_named(&cloud, &tenant, "eng-a").await;
    let infer = cloud
        .list_clusters(&a.id)
        .await
        .unwrap()
        .into_iter()
        .find(|c| c.name == "infer")
        .unwrap();
    let group = cloud
        .list_node_groups(&infer.id)
        .await
        .unwrap()
        .into_iter()
        .find(|g| g.name == "infer-ng-gpu-0")
        .unwrap();
    let mut resized = group.spec.clone();
    resized.node_count = 5;
    cloud
        .update_node_group(
            &group.id,
            &resized,
            &group.labels,
            &idempotency_key(&["resize", &group.id]),
        )
        .await
        .unwrap();
    sim.service.clear_call_log();
    let now = prepare(&cloud, &store, &eng, &tenant, &options())
        .await
        .unwrap();
    assert_eq!(sim.service.call_log().len(), eng_calls);
    assert_eq!(now.plan.summary.update, 1, "{}", now.plan.render_text());
}

/// The live plan lists a project's filesystems and GPU clusters only where a target wants one
/// or the inventory recorded one: they are per target, and a project without either has none
/// of fleetbot's to find (issue 34: fewer calls per project).
#[tokio::test]
async fn the_live_plan_lists_filesystems_and_gpu_clusters_only_where_wanted() {
    let sim = simulator(&world()).await;
    let cloud = client(&sim);
    let tenant = sim.tenant_id();
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir).await;
    let lean = spec(&SPEC.replace("enable_filestore: true", "enable_filestore: false"));
    let listed = |kind: &str| {
        sim.service
            .call_log()
            .iter()
            .filter(|m| m.ends_with(&format!("{kind}/List")))
            .count()
    };
    for (fleet, filesystems) in [(&lean, 0), (&spec(SPEC), 2)] {
        deploy(&cloud, &store, fleet, &tenant, &options(), quiet())
            .await
            .unwrap();
        sim.service.clear_call_log();
        let prepared = prepare(&cloud, &store, fleet, &tenant, &options())
            .await
            .unwrap();
        assert!(
            plan_is_quiet(&prepared.plan),
            "{}",
            prepared.plan.render_text()
        );
        // Project a holds both targets; b holds one: a filestore is wanted in both or neither.
        assert_eq!(listed("FilesystemService"), filesystems);
        assert_eq!(listed("GpuClusterService"), 0);
        assert_eq!(listed("NodeGroupService"), 3);
    }
}

/// Issue 53, item 1: an approval allows destroying what its plan listed, not anything. A plan
/// made after the approval (a wave) that shrinks a pool the approved plan did not shrink leaves
/// that target untouched and says the cloud changed since; the others are applied. The plan's
/// own listing allows its shrink.
#[tokio::test]
async fn an_approval_destroys_only_what_its_plan_listed() {
    use fleetbot::engine::ops::{Destruction, prepare};
    use fleetbot::fleet::apply::{Approved, plan_and_apply};
    let sim = simulator(&world()).await;
    let cloud = client(&sim);
    let tenant = sim.tenant_id();
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir).await;
    deploy(&cloud, &store, &spec(SPEC), &tenant, &options(), quiet())
        .await
        .unwrap();
    // a/infer's GPU pool 2 → 1, and b's CPU pool 1 → 2.
    let changed = spec(
        &SPEC
            .replace("        gpu_nodes: {count: 2}\n", "        gpu_nodes: {count: 1}\n")
            .replace(
                "  - name: b\n",
                "  - name: b\n    clusters:\n      - name: cluster\n        cpu_nodes: {count: 2}\n",
            ),
    );
    // Approved on a plan that shrank nothing: the shrink is not the approval's to apply.
    let nothing = Approved::ByGuard {
        prune: false,
        destructive: Destruction::Listed(Default::default()),
    };
    let result = plan_and_apply(
        &crate::support::session(&cloud, &store),
        &changed,
        &tenant,
        &options(),
        nothing,
        quiet(),
    )
    .await
    .unwrap();
    let infer = result
        .clusters
        .iter()
        .find(|c| c.cluster_name == "infer")
        .unwrap();
    assert!(infer.changed_since_plan, "{result:#?}");
    assert!(
        infer.error.contains("shrinks from 2 to 1"),
        "{}",
        infer.error
    );
    assert_eq!(result.deployed, 2, "{result:#?}");
    let plan = prepare(&cloud, &store, &changed, &tenant, &options())
        .await
        .unwrap();
    let [shrink] = plan.plan.destructive().try_into().unwrap();
    assert_eq!(shrink.target, "a/infer");
    // Approved on the plan that listed it: applied.
    let listed = Approved::by_guard(false, &plan.plan);
    let result = plan_and_apply(
        &crate::support::session(&cloud, &store),
        &changed,
        &tenant,
        &options(),
        listed,
        quiet(),
    )
    .await
    .unwrap();
    assert_eq!((result.deployed, result.failed), (3, 0), "{result:#?}");
    assert!(!result.clusters.iter().any(|c| c.changed_since_plan));
}
