//! Inside the clusters through kube-rs: a fleet deployed into the simulator has nodes that
//! follow its node groups; scaling changes them and watch says so; the API's refusals (stale
//! UID precondition → 409, invalid object → 422 with causes, a token it never issued → 401)
//! are what real clients rely on.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, Preconditions, WatchEvent,
    WatchParams,
};
use kube::core::Status;

use crate::support::deploy;
use fleetbot::cloud::Cloud;
use fleetbot::clusters::{Access, ClusterClient, ClusterEndpoint, TokenSource, tokens_of};
use fleetbot::engine::ops::{LifecycleOptions, Progress, deployed_clusters};
use fleetbot::spec::{FleetSpec, load_str};
use fleetbot::store::SqliteStore;
use support::{client, simulator};

fn world() -> String {
    crate::support::quick_default_world()
}

fn spec(cpu_nodes: u32) -> FleetSpec {
    let text = format!(
        r#"apiVersion: npa.fleet/v0.0.1
name: kube
tenant_id: ""
region: us-central1
project_prefix: kube-
defaults:
  cpu_nodes: {{count: {cpu_nodes}, platform: cpu-d3, preset: 16vcpu-64gb}}
  gpu_nodes: {{count: 1, platform: gpu-rtx6000, preset: 1gpu-24vcpu-218gb}}
projects:
  - name: a
"#
    );
    load_str(&text, "fleet.yaml").unwrap()
}

fn quiet() -> Progress {
    Arc::new(|_: &fleetbot::engine::ops::Event| {})
}

fn options() -> LifecycleOptions {
    support::test_options()
}

fn api_error(e: kube::Error) -> Box<Status> {
    match e {
        kube::Error::Api(status) => status,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// Deploys the fleet and connects to its one cluster.
async fn deployed(
    sim: &fleetbot::sim::Simulator,
    store: &SqliteStore,
    cpu_nodes: u32,
) -> (ClusterClient, ClusterEndpoint) {
    let cloud = client(sim);
    let fleet = spec(cpu_nodes);
    let result = deploy(&cloud, store, &fleet, &sim.tenant_id(), &options(), quiet())
        .await
        .unwrap();
    assert_eq!((result.deployed, result.failed), (1, 0), "{result:#?}");
    let targets = deployed_clusters(&cloud, store, &fleet, &[], &[])
        .await
        .unwrap();
    assert_eq!(targets.len(), 1);
    let cluster = targets[0].cluster.as_ref().unwrap();
    let endpoint = ClusterEndpoint::of(cluster).unwrap();
    assert!(
        endpoint.server.starts_with("https://127.0.0.1:"),
        "{}",
        endpoint.server
    );
    let access = Access::Cloud {
        endpoint: endpoint.clone(),
        tokens: tokens_of(&cloud),
    };
    (ClusterClient::connect(&access).await.unwrap(), endpoint)
}

#[tokio::test]
async fn nodes_follow_the_node_groups_and_watch_sees_a_scale_up() {
    let sim = simulator(&world()).await;
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("inventory.sqlite"))
        .await
        .unwrap();
    let (cluster, _) = deployed(&sim, &store, 2).await;

    let nodes = cluster.nodes().await.unwrap();
    assert_eq!(nodes.len(), 3, "{nodes:#?}");
    assert!(
        nodes
            .iter()
            .all(|n| n.ready && !n.uid.is_empty() && !n.boot_id.is_empty())
    );
    let cpu: Vec<_> = nodes
        .iter()
        .filter(|n| !n.allocatable.contains_key("nvidia.com/gpu"))
        .collect();
    assert_eq!(cpu.len(), 2);
    for n in &cpu {
        assert_eq!(n.allocatable["cpu"], "16");
        assert_eq!(n.allocatable["memory"], "64Gi");
        assert_eq!(n.labels["node.kubernetes.io/instance-type"], "cpu-d3");
        assert_eq!(n.labels["nebius.com/resource-preset"], "16vcpu-64gb");
    }
    assert_eq!(cpu[0].node_group_id(), cpu[1].node_group_id());
    assert!(cpu[0].node_group_id().starts_with("mk8snodegroup-"));
    let gpu = nodes
        .iter()
        .find(|n| n.allocatable.contains_key("nvidia.com/gpu"))
        .unwrap();
    assert_eq!(gpu.allocatable["nvidia.com/gpu"], "1");
    assert_eq!(gpu.allocatable["cpu"], "24");
    assert_eq!(
        gpu.labels["nvidia.com/gpu.product"],
        "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition"
    );
    assert_ne!(gpu.node_group_id(), cpu[0].node_group_id());

    // A watch from the list's version sees the node a scale-up adds.
    let api: Api<Node> = Api::all(cluster.kube().clone());
    let version = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut events = api
        .watch(&WatchParams::default().timeout(30), &version)
        .await
        .unwrap()
        .boxed();
    let (_, _) = deployed(&sim, &store, 3).await;
    let added = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(event) = events.next().await {
            if let WatchEvent::Added(node) = event.unwrap() {
                return node;
            }
        }
        panic!("the watch ended without the new node");
    })
    .await
    .expect("the new node arrives within 20 s");
    let labels = added.metadata.labels.unwrap_or_default();
    assert_eq!(
        labels["mk8s.nebius.ai/node-group-id"],
        cpu[0].node_group_id()
    );
    assert_eq!(cluster.nodes().await.unwrap().len(), 4);
}

/// The clusters' Kubernetes objects are brought in line with the cloud once a change, not at
/// every request: a no-op re-deploy (a readiness read a cluster) reads no cluster again.
#[tokio::test]
async fn a_cluster_is_read_again_only_after_a_change_reaches_it() {
    let sim = simulator(&world()).await;
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("inventory.sqlite"))
        .await
        .unwrap();
    deployed(&sim, &store, 1).await;
    // The controllers' tick catches up with the last operations first: counted after it.
    let settled = || async {
        tokio::time::timeout(Duration::from_secs(30), async {
            while !sim.kube.shared.caught_up() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .expect("the simulator's controllers catch up with the cloud");
        sim.service.kube_cluster_reads()
    };
    let before = settled().await;
    assert!(before > 0);
    // A change elsewhere in the cloud (a network) moves its generation but reaches no
    // cluster's view.
    let cloud = client(&sim);
    let projects = cloud.list_projects(&sim.tenant_id()).await.unwrap();
    cloud
        .create_network(
            &projects[0].id,
            "elsewhere",
            &Default::default(),
            "k-elsewhere",
        )
        .await
        .unwrap();
    let gets = |s: &fleetbot::sim::Simulator| s.service.kube_request_counts().get("GET").copied();
    let requests = gets(&sim);
    deployed(&sim, &store, 1).await;
    assert!(
        gets(&sim) > requests,
        "the re-deploy read the cluster's API"
    );
    assert_eq!(
        settled().await,
        before,
        "an unchanged cluster was read again"
    );
    // A scale-up reaches the cluster: it is read again.
    let (cluster, _) = deployed(&sim, &store, 2).await;
    assert!(settled().await > before);
    assert_eq!(cluster.nodes().await.unwrap().len(), 3);
}

#[tokio::test]
async fn refusals_are_the_api_servers() {
    let sim = simulator(&world()).await;
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("inventory.sqlite"))
        .await
        .unwrap();
    let (cluster, endpoint) = deployed(&sim, &store, 1).await;

    // Delete with a stale UID precondition: 409, and the object stays.
    let maps: Api<ConfigMap> = Api::namespaced(cluster.kube().clone(), "default");
    let map: ConfigMap = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "probe-receipt"}, "data": {"k": "v"}
    }))
    .unwrap();
    let created = maps.create(&PostParams::default(), &map).await.unwrap();
    let stale = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some(uuid::Uuid::new_v4().to_string()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    let err = api_error(maps.delete("probe-receipt", &stale).await.unwrap_err());
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    assert!(maps.get_opt("probe-receipt").await.unwrap().is_some());
    let right = DeleteParams {
        preconditions: Some(Preconditions {
            uid: created.metadata.uid.clone(),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    maps.delete("probe-receipt", &right).await.unwrap();
    assert!(maps.get_opt("probe-receipt").await.unwrap().is_none());

    // An invalid pod: 422 with one cause per bad field.
    let pods: Api<Pod> = Api::namespaced(cluster.kube().clone(), "default");
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "Not_A_Name"},
        "spec": {"containers": [{"name": "probe"}]}
    }))
    .unwrap();
    let err = api_error(pods.create(&PostParams::default(), &pod).await.unwrap_err());
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    let fields: Vec<String> = err
        .details
        .unwrap()
        .causes
        .into_iter()
        .map(|c| c.field)
        .collect();
    assert_eq!(fields, ["metadata.name", "spec.containers[0].image"]);

    // Server-side apply: a second manager changing the first one's field conflicts.
    let applied = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owned"}, "data": {"mode": "a"}});
    maps.patch(
        "owned",
        &PatchParams::apply("fleetbot"),
        &Patch::Apply(&applied),
    )
    .await
    .unwrap();
    let theirs = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owned"}, "data": {"mode": "b"}});
    let err = api_error(
        maps.patch(
            "owned",
            &PatchParams::apply("someone-else"),
            &Patch::Apply(&theirs),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(err.code, 409);
    assert!(
        err.message.contains("conflict with \"fleetbot\""),
        "{}",
        err.message
    );
    let forced = maps
        .patch(
            "owned",
            &PatchParams::apply("someone-else").force(),
            &Patch::Apply(&theirs),
        )
        .await
        .unwrap();
    assert_eq!(forced.data.unwrap()["mode"], "b");

    // A token the simulator never issued: 401.
    let forged: TokenSource = Arc::new(|| Box::pin(async { Ok("forged-token".to_string()) }));
    let stranger = ClusterClient::connect(&Access::Cloud {
        endpoint,
        tokens: forged,
    })
    .await
    .unwrap();
    let err = stranger.nodes().await.unwrap_err();
    assert!(err.to_string().contains("401"), "{err}");
}

#[tokio::test]
async fn a_node_marked_not_ready_stays_so_and_jobs_run_on_the_others() {
    use k8s_openapi::api::batch::v1::Job;
    let sim = simulator(&world()).await;
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("inventory.sqlite"))
        .await
        .unwrap();
    let (cluster, _) = deployed(&sim, &store, 1).await;
    let nodes = cluster.nodes().await.unwrap();
    let cpu = nodes
        .iter()
        .find(|n| !n.allocatable.contains_key("nvidia.com/gpu"))
        .unwrap();
    let gpu = nodes
        .iter()
        .find(|n| n.allocatable.contains_key("nvidia.com/gpu"))
        .unwrap();

    // What a failing kubelet would report; the simulator's node sync must not undo it.
    let api: Api<Node> = Api::all(cluster.kube().clone());
    let not_ready = serde_json::json!({"status": {"conditions": [{"type": "Ready", "status": "False", "reason": "KubeletNotReady"}]}});
    api.patch_status(
        &cpu.name,
        &PatchParams::default(),
        &Patch::Merge(&not_ready),
    )
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    let after = cluster.nodes().await.unwrap();
    assert!(!after.iter().find(|n| n.name == cpu.name).unwrap().ready);

    // A Job pinned to the NotReady node never gets a pod scheduled; one pinned to the GPU
    // node runs there as a local process and completes.
    let jobs: Api<Job> = Api::namespaced(cluster.kube().clone(), "default");
    let pods: Api<Pod> = Api::namespaced(cluster.kube().clone(), "default");
    for (name, node) in [("stuck", &cpu.name), ("runs", &gpu.name)] {
        let job: Job = serde_json::from_value(serde_json::json!({
            "metadata": {"name": name},
            "spec": {"backoffLimit": 0, "template": {"spec": {
                "restartPolicy": "Never",
                "tolerations": [{"operator": "Exists"}],
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
                ]}}},
                "containers": [{"name": "probe", "image": "probe", "command": ["sh", "-c", "pwd; echo ok"]}],
            }}},
        }))
        .unwrap();
        jobs.create(&PostParams::default(), &job).await.unwrap();
    }
    let done = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let job = jobs.get("runs").await.unwrap();
            let complete = job
                .status
                .and_then(|s| s.conditions)
                .unwrap_or_default()
                .iter()
                .any(|c| c.type_ == "Complete" && c.status == "True");
            if complete {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(done.is_ok(), "the job on the ready node completes");
    let ran = pods
        .list(&ListParams::default().labels("job-name=runs"))
        .await
        .unwrap();
    assert_eq!(ran.items.len(), 1);
    let pod = &ran.items[0];
    assert_eq!(
        pod.spec.as_ref().unwrap().node_name.as_deref(),
        Some(gpu.name.as_str())
    );
    let log = pods
        .logs(pod.metadata.name.as_deref().unwrap(), &Default::default())
        .await
        .unwrap();
    assert!(log.trim_end().ends_with("\nok"), "{log}");
    assert!(
        log.contains(&gpu.name),
        "the pod runs in its node's own directory: {log}"
    );

    let stuck = pods
        .list(&ListParams::default().labels("job-name=stuck"))
        .await
        .unwrap();
    assert_eq!(stuck.items.len(), 1);
    let scheduled = stuck.items[0]
        .status
        .as_ref()
        .unwrap()
        .conditions
        .clone()
        .unwrap_or_default();
    let condition = scheduled
        .iter()
        .find(|c| c.type_ == "PodScheduled")
        .unwrap();
    assert_eq!(
        (condition.status.as_str(), condition.reason.as_deref()),
        ("False", Some("Unschedulable"))
    );
    assert!(
        condition
            .message
            .as_deref()
            .unwrap_or_default()
            .contains("not ready")
    );

    // Foreground deletion: the Job goes only after its pods, and the whole tree is gone.
    let foreground = DeleteParams::foreground();
    jobs.delete("runs", &foreground).await.unwrap();
    let gone = tokio::time::timeout(Duration::from_secs(10), async {
        while jobs.get_opt("runs").await.unwrap().is_some() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(gone.is_ok(), "the job is deleted after its pods");
    assert!(
        pods.list(&ListParams::default().labels("job-name=runs"))
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

#[tokio::test]
async fn a_service_accounts_token_is_renewed_before_the_cluster_would_refuse_it() {
    use fleetbot::cloud::auth::{Credentials, ServiceAccountKey};
    use fleetbot::cloud::client::{Endpoints, NebiusClient};
    use fleetbot::sim::auth::service_account_ids;
    let (private, public) = support::rsa_keypair();
    let world = format!(
        "{}\ntoken_ttl_seconds: 2\nservice_accounts:\n  - name: verifier\n    public_key_pem: |\n{}",
        world(),
        public
            .lines()
            .map(|l| format!("      {l}\n"))
            .collect::<String>()
    );
    let sim = simulator(&world).await;
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("inventory.sqlite"))
        .await
        .unwrap();
    let (_, endpoint) = deployed(&sim, &store, 1).await;
    let (account, key_id) = service_account_ids(
        &fleetbot::sim::World::from_yaml(&world).unwrap().name,
        "verifier",
    );
    let cloud = NebiusClient::new(
        Endpoints::Single {
            uri: sim.endpoint(),
        },
        Credentials::service_account(ServiceAccountKey {
            service_account_id: account,
            public_key_id: key_id,
            private_key_pem: private,
        }),
    );
    let cluster = ClusterClient::connect(&Access::Cloud {
        endpoint,
        tokens: tokens_of(&cloud),
    })
    .await
    .unwrap();
    assert_eq!(cluster.nodes().await.unwrap().len(), 2);
    // Past the first token's lifetime: a client that kept it would now get 401.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(cluster.nodes().await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_kubeconfigs_map_reaches_a_cluster_through_its_file() {
    use base64::Engine;
    use fleetbot::clusters::{KubeconfigMap, access_for};
    let sim = simulator(&world()).await;
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("inventory.sqlite"))
        .await
        .unwrap();
    let (_, endpoint) = deployed(&sim, &store, 1).await;
    let ca = base64::engine::general_purpose::STANDARD.encode(endpoint.ca_pem.as_bytes());
    let kubeconfig = format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: c\n  cluster:\n    server: {}\n    certificate-authority-data: {ca}\ncontexts:\n- name: c\n  context: {{cluster: c, user: u}}\nusers:\n- name: u\n  user:\n    token: {}\n",
        endpoint.server,
        support::TOKEN
    );
    std::fs::write(dir.path().join("a-cluster.yaml"), kubeconfig).unwrap();
    std::fs::write(
        dir.path().join("map.json"),
        r#"{"a": {"cluster": "a-cluster.yaml"}}"#,
    )
    .unwrap();
    let map = KubeconfigMap::load(&dir.path().join("map.json")).unwrap();
    let unreachable = || -> Result<Access, fleetbot::clusters::AccessError> {
        panic!("the map names this cluster")
    };
    let access = access_for(Some(&map), "a", "cluster", unreachable).unwrap();
    let cluster = ClusterClient::connect(&access).await.unwrap();
    assert_eq!(cluster.nodes().await.unwrap().len(), 2);
    // A cluster the map does not name is reached through the cloud.
    let through_cloud = access_for(Some(&map), "a", "other", || {
        Ok(Access::Cloud {
            endpoint: endpoint.clone(),
            tokens: tokens_of(&client(&sim)),
        })
    })
    .unwrap();
    assert!(matches!(through_cloud, Access::Cloud { .. }));
}
