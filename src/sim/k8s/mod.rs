//! The simulator's Kubernetes API: every running simulated mk8s cluster serves one at the
//! endpoint its status reports (`https://127.0.0.1:<port>/mk8s/<cluster-id>`), over TLS with
//! the CA its status reports, to bearer tokens the simulator issued.
//!
//! Nodes follow the node groups; Jobs, a scheduler, a garbage collector and a kubelet run
//! inside (see [`workloads`]). Objects live in memory for the life of the simulator.
//! Independent of the engine: nothing here imports engine or client code.

pub mod addons;
pub mod api;
pub mod filestore;
pub mod gpu_hardware;
pub mod hosts;
pub mod kinds;
pub mod kubelet;
pub mod nodes;
pub mod patch;
pub mod persist;
pub mod releases;
pub mod scope;
pub mod select;
pub mod store;
pub mod tls;
pub mod validate;
pub mod volumes;
pub mod workloads;

use std::collections::{HashMap, HashSet};
use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::{BodyExt, Limited};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::Notify;

use self::kinds::NODE;
use self::kubelet::{Kubelet, LogSource};
use self::scope::Scope;
use self::store::{ClusterStore, meta};
use super::core::Since;
use super::services::SimService;

/// Every cluster's API lives under this prefix, then its ID.
pub const PATH_PREFIX: &str = "/mk8s/";

/// The largest request body the API reads.
const MAX_BODY: usize = 8 * 1024 * 1024;

/// How often controllers and the kubelet run without a write to wake them.
const TICK: Duration = Duration::from_millis(100);
/// The most controller passes over one cluster in a tick.
const PASSES: usize = 4;
/// How often the clusters' objects are written while they change.
const SAVE_EVERY: Duration = Duration::from_secs(2);

struct ClusterEntry {
    store: ClusterStore,
    version: String,
    running: bool,
    /// The cloud's generation the last view applied here was read at (`None`: never synced
    /// in this process). Syncs read views concurrently, and one read earlier must not land
    /// over one read later; a cluster already showing the current generation is not read.
    seen: Option<u64>,
}

/// State shared by the listener and the controllers.
pub struct ApiShared {
    pub service: SimService,
    /// `127.0.0.1:<port>`.
    pub address: String,
    clusters: Mutex<HashMap<String, ClusterEntry>>,
    kubelet: Mutex<Kubelet>,
    wake: Notify,
    /// Where the clusters' objects persist, and the resource versions last written there.
    state_file: Option<PathBuf>,
    saved: Mutex<Vec<(String, u64)>>,
    /// The cloud's generation the last full sync saw: an idle cloud is not looked at again.
    synced: Mutex<Option<u64>>,
    last_save: Mutex<Option<std::time::Instant>>,
    /// Each cluster's resource version once its controllers came to rest: a cluster nothing
    /// changed in since (and nothing runs in) is not looked at again.
    reconciled: Mutex<HashMap<String, u64>>,
}

impl ApiShared {
    fn clusters(&self) -> std::sync::MutexGuard<'_, HashMap<String, ClusterEntry>> {
        self.clusters.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The control plane's version when the cluster is running, after a fresh look at the
    /// cloud: a request right after a deploy sees the nodes the deploy made.
    pub fn cluster_version(&self, id: &str) -> Option<String> {
        self.sync(Some(id));
        self.clusters()
            .get(id)
            .filter(|c| c.running)
            .map(|c| c.version.clone())
    }

    /// Runs `f` on a cluster's objects.
    pub fn with_store<T>(&self, id: &str, f: impl FnOnce(&mut ClusterStore) -> T) -> T {
        let mut clusters = self.clusters();
        let entry = clusters
            .entry(id.to_string())
            .or_insert_with(|| ClusterEntry {
                store: ClusterStore::new(),
                version: String::new(),
                running: false,
                seen: None,
            });
        f(&mut entry.store)
    }

    /// Asks the controllers to run now (after a write).
    pub fn poke(&self) {
        self.wake.notify_one();
    }

    /// Runs `binary` for containers of `image` (the simulator pulls no images; this is how a
    /// pod runs fleetbot's own probe).
    pub fn set_image(&self, image: &str, binary: PathBuf) {
        self.kubelet
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .images
            .insert(image.to_string(), binary);
    }

    /// Breaks (or, with `None`, mends) one node's host, for a test of what the verifier
    /// makes of it.
    pub fn set_host_fault(&self, node: &str, fault: Option<hosts::HostFault>) {
        let mut kubelet = self.kubelet.lock().unwrap_or_else(|p| p.into_inner());
        match fault {
            Some(f) => kubelet.faults.insert(node.to_string(), f),
            None => kubelet.faults.remove(node),
        };
    }

    /// Makes the filestore's driver leak (`true`) or reclaim a deleted volume's data.
    pub fn set_keep_volume_data(&self, keep: bool) {
        self.kubelet
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .keep_volume_data = keep;
    }

    pub fn kubelet_logs(&self, pod_uid: &str, container: &str) -> Option<LogSource> {
        self.kubelet
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .logs(pod_uid, container)
    }

    /// Whether the controllers' last sync saw the cloud as it is now: what a test waits for
    /// before it counts what a request makes the simulator read.
    pub fn caught_up(&self) -> bool {
        // The core's lock before `synced`, as a sync takes them.
        let core = self.service.lock();
        *self.synced.lock().unwrap_or_else(|p| p.into_inner()) == Some(core.generation())
    }

    /// Brings every cluster's nodes (or only `only`'s) in line with its node groups. Every
    /// cluster is read at the first sync; after that, only those the cloud's changes since
    /// the last reached ([`Core::touched_since`]) and those no sync has read yet.
    fn sync(&self, only: Option<&str>) {
        let core = self.service.lock();
        let generation = core.generation();
        let mut synced = self.synced.lock().unwrap_or_else(|p| p.into_inner());
        let named: Option<HashSet<String>> = match only {
            Some(id) => {
                // Current when read at a generation no later change to it came after (a
                // sync reads only the clusters changes reached, so an unchanged one keeps
                // the generation it was last read at).
                if self
                    .clusters()
                    .get(id)
                    .and_then(|c| c.seen)
                    .is_some_and(|seen| !core.touched_after(id, seen))
                {
                    return;
                }
                Some(HashSet::from([id.to_string()]))
            }
            None if *synced == Some(generation) => return,
            None => match synced.map(|since| core.touched_since(since)) {
                None | Some(Since::Every) => None,
                Some(Since::Clusters(ids)) => {
                    let mut ids: HashSet<String> = ids.into_iter().collect();
                    ids.extend(
                        self.clusters()
                            .iter()
                            .filter(|(_, c)| c.seen.is_none())
                            .map(|(id, _)| id.clone()),
                    );
                    Some(ids)
                }
            },
        };
        let views = nodes::views(&core, named.as_ref().map_or(Scope::Every, Scope::Named));
        drop(core);
        self.service.count_kube_cluster_reads(views.len());
        if only.is_none() {
            *synced = Some(generation);
        }
        drop(synced);
        // The kubelet's lock before the clusters', as the controllers take them: a view's
        // hosts land with its objects, so an earlier view's never outlive a later one's.
        let mut kubelet = self.kubelet.lock().unwrap_or_else(|p| p.into_inner());
        let mut clusters = self.clusters();
        // A cluster read here without a view is gone from the cloud, unless a later view
        // already landed.
        let gone = |c: &ClusterEntry| c.seen.is_none_or(|s| s <= generation);
        {
            let viewed: HashSet<&str> = views.iter().map(|v| v.id.as_str()).collect();
            match &named {
                None => clusters.retain(|id, c| !gone(c) || viewed.contains(id.as_str())),
                Some(ids) => {
                    for id in ids {
                        if !viewed.contains(id.as_str()) && clusters.get(id).is_some_and(gone) {
                            clusters.remove(id);
                        }
                    }
                }
            }
        }
        for view in views {
            let entry = clusters
                .entry(view.id.clone())
                .or_insert_with(|| ClusterEntry {
                    store: ClusterStore::new(),
                    version: view.version.clone(),
                    running: view.running,
                    seen: Some(generation),
                });
            if entry.seen.is_some_and(|s| s > generation) {
                continue;
            }
            entry.seen = Some(generation);
            entry.version = view.version.clone();
            entry.running = view.running;
            let store = &mut entry.store;
            let wanted: Vec<String> = view
                .nodes
                .iter()
                .map(|n| meta(n, "name").to_string())
                .collect();
            let stale: Vec<String> = store
                .list(NODE, None)
                .into_iter()
                .map(|n| meta(n, "name").to_string())
                .filter(|n| !wanted.contains(n))
                .collect();
            for name in stale {
                store.remove(NODE, "", &name);
            }
            for desired in view.nodes {
                let name = meta(&desired, "name").to_string();
                match store.get(NODE, "", &name).cloned() {
                    None => {
                        let _ = store.create(NODE, "", desired);
                    }
                    Some(current) => {
                        store.put(NODE, merge_node(&current, desired));
                    }
                }
            }
            if view.running {
                addons::play(store, &view.releases);
                // What a release just put there is rolled out before the request that
                // synced it reads (the controllers' pass does the same for what a manifest
                // put there).
                addons::run_controllers(store);
            }
            kubelet.set_hosts(&view.id, view.hosts);
        }
    }

    /// Writes the clusters' objects when they changed: at most every [`SAVE_EVERY`] while
    /// the controllers run (a snapshot holds every cluster), and always when `force` (the
    /// simulator stopping).
    fn save(&self, force: bool) {
        let Some(path) = &self.state_file else {
            return;
        };
        let clusters = self.clusters();
        let mut versions: Vec<(String, u64)> = clusters
            .iter()
            .map(|(id, e)| (id.clone(), e.store.resource_version()))
            .collect();
        versions.sort();
        let mut saved = self.saved.lock().unwrap_or_else(|p| p.into_inner());
        if *saved == versions {
            return;
        }
        let mut last = self.last_save.lock().unwrap_or_else(|p| p.into_inner());
        if !force && last.is_some_and(|at| at.elapsed() < SAVE_EVERY) {
            return;
        }
        let snapshot = persist::snapshot(clusters.iter().map(|(id, e)| (id, &e.store)));
        drop(clusters);
        *last = Some(std::time::Instant::now());
        match snapshot.and_then(|bytes| persist::save(path, &bytes).map_err(serde_json::Error::io))
        {
            Ok(()) => *saved = versions,
            Err(e) => tracing::warn!("cannot save the simulated clusters: {e}"),
        }
    }

    /// Runs the controllers over each cluster something changed in since they last ran, or
    /// where containers are still running: the cost of a tick follows the activity, not the
    /// number of clusters.
    fn reconcile(&self) {
        let mut kubelet = self.kubelet.lock().unwrap_or_else(|p| p.into_inner());
        let busy = kubelet.busy_clusters();
        let mut clusters = self.clusters();
        let mut reconciled = self.reconciled.lock().unwrap_or_else(|p| p.into_inner());
        reconciled.retain(|id, _| clusters.contains_key(id));
        for (id, entry) in clusters.iter_mut() {
            let version = entry.store.resource_version();
            if reconciled.get(id) == Some(&version) && !busy.contains(id.as_str()) {
                continue;
            }
            // What one controller writes in a pass is for the others to see in the next (a
            // pod that finished completes its Job): a cluster is at rest once a pass
            // changes nothing, and one still changing is looked at again next tick.
            reconciled.remove(id);
            let mut before = version;
            for _ in 0..PASSES {
                reconcile(&mut entry.store, &mut kubelet, id);
                let after = entry.store.resource_version();
                if after == before {
                    reconciled.insert(id.clone(), after);
                    break;
                }
                before = after;
            }
        }
    }
}

/// One pass of every controller over one cluster: owners collected, add-ons' workloads
/// rolled out, claims bound, Jobs run, pods scheduled and run, volumes' data reclaimed.
fn reconcile(store: &mut ClusterStore, kubelet: &mut Kubelet, cluster: &str) {
    workloads::collect_garbage(store);
    addons::run_controllers(store);
    volumes::provision(store);
    workloads::run_jobs(store);
    workloads::schedule(store);
    kubelet::run_pods(store, kubelet, cluster);
    kubelet.reclaim(store, cluster);
}

/// A node as the cloud says it is now, keeping what others wrote on it: its identity, labels
/// and taints someone added, and its conditions (a test may make a node NotReady).
fn merge_node(current: &Value, desired: Value) -> Value {
    let mut next = desired;
    let m = &mut next["metadata"];
    for field in [
        "uid",
        "creationTimestamp",
        "resourceVersion",
        "generation",
        "annotations",
        "managedFields",
    ] {
        if let Some(v) = current.pointer(&format!("/metadata/{field}")) {
            m[field] = v.clone();
        }
    }
    if let Some(labels) = current
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
    {
        for (k, v) in labels {
            if next["metadata"]["labels"].get(k).is_none() {
                next["metadata"]["labels"][k] = v.clone();
            }
        }
    }
    let template_keys: Vec<Value> = next
        .pointer("/spec/taints")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|t| t["key"].clone())
        .collect();
    let added: Vec<Value> = current
        .pointer("/spec/taints")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|t| !template_keys.contains(&t["key"]))
        .cloned()
        .collect();
    if !added.is_empty() {
        let taints = next["spec"]["taints"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        next["spec"]["taints"] = json!([taints, added].concat());
    }
    if let Some(unschedulable) = current.pointer("/spec/unschedulable") {
        next["spec"]["unschedulable"] = unschedulable.clone();
    }
    if let Some(conditions) = current.pointer("/status/conditions") {
        next["status"]["conditions"] = conditions.clone();
    }
    next
}

/// A running Kubernetes API for the simulated clusters.
pub struct KubeApi {
    pub shared: Arc<ApiShared>,
    /// `https://127.0.0.1:<port>/mk8s/`: a cluster's endpoint is this and its ID.
    pub base_url: String,
    pub ca_pem: String,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for KubeApi {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
        self.shared.save(true);
    }
}

impl KubeApi {
    /// Serves on `listener`; nodes' host directories go under `node_root`; with
    /// `state_file`, the clusters' objects persist there.
    pub async fn start(
        service: SimService,
        listener: TcpListener,
        node_root: PathBuf,
        state_file: Option<PathBuf>,
    ) -> Result<KubeApi, String> {
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        let tls = tls::generate(addr.ip())?;
        let restored = match &state_file {
            Some(path) => persist::load(path)?,
            None => HashMap::new(),
        };
        let clusters = restored
            .into_iter()
            .map(|(id, store)| {
                let entry = ClusterEntry {
                    store,
                    version: String::new(),
                    running: false,
                    seen: None,
                };
                (id, entry)
            })
            .collect();
        let shared = Arc::new(ApiShared {
            service,
            address: addr.to_string(),
            clusters: Mutex::new(clusters),
            kubelet: Mutex::new(Kubelet::new(node_root)),
            wake: Notify::new(),
            state_file,
            saved: Mutex::new(Vec::new()),
            synced: Mutex::new(None),
            last_save: Mutex::new(None),
            reconciled: Mutex::new(HashMap::new()),
        });
        let base_url = format!("https://{addr}{PATH_PREFIX}");
        let acceptor = tokio_rustls::TlsAcceptor::from(tls.config.clone());
        let serving = shared.clone();
        let serve = tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                };
                let _ = tcp.set_nodelay(true);
                let acceptor = acceptor.clone();
                let shared = serving.clone();
                tokio::spawn(async move {
                    let Ok(stream) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(
                        move |request: hyper::Request<hyper::body::Incoming>| {
                            let shared = shared.clone();
                            async move {
                                let (parts, body) = request.into_parts();
                                let response = match Limited::new(body, MAX_BODY).collect().await {
                                    Ok(body) => {
                                        api::handle(
                                            shared,
                                            parts.method,
                                            parts.uri,
                                            parts.headers,
                                            body.to_bytes(),
                                        )
                                        .await
                                    }
                                    Err(_) => {
                                        let error = store::ApiError::new(
                                            413,
                                            "RequestEntityTooLarge",
                                            "the request is too large",
                                        );
                                        axum::response::IntoResponse::into_response((
                                            axum::http::StatusCode::PAYLOAD_TOO_LARGE,
                                            error.status().to_string(),
                                        ))
                                    }
                                };
                                Ok::<_, Infallible>(response)
                            }
                        },
                    );
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        let ticking = shared.clone();
        let tick = tokio::spawn(async move {
            loop {
                ticking.sync(None);
                ticking.reconcile();
                ticking.save(false);
                let _ = tokio::time::timeout(TICK, ticking.wake.notified()).await;
            }
        });
        shared
            .service
            .set_kube_api(base_url.clone(), tls.ca_pem.clone());
        Ok(KubeApi {
            shared,
            base_url,
            ca_pem: tls.ca_pem,
            tasks: vec![serve, tick],
        })
    }
}
