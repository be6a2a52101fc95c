//! What runs inside a simulated cluster: the Job controller, a scheduler, the garbage
//! collector and a kubelet that runs each scheduled pod's containers as local processes.
//!
//! The kubelet pulls no images: it runs a container's `command` and `args` on this machine,
//! in the node's own host directory, with the container's environment. That is what lets a
//! probe pod do real file IO on a simulated node; a container without a command cannot run.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::AsyncReadExt;
use tokio::sync::watch;

use super::hosts::HostFacts;
use super::kinds::{JOB, NODE, POD};
use super::select::LabelSelector;
use super::store::{ClusterStore, meta, now_rfc3339};
use super::validate::default_on_create;

/// The most log a container keeps (the newest bytes are kept).
const MAX_LOG_BYTES: usize = 8 * 1024 * 1024;

/// One container's output and end, shared between its process task and the log endpoint.
#[derive(Debug, Default)]
pub struct ContainerOutput {
    pub log: Vec<u8>,
    pub exit_code: Option<i32>,
    pub error: Option<String>,
    pub started_at: String,
    pub finished_at: String,
}

pub type SharedOutput = Arc<Mutex<ContainerOutput>>;

struct ContainerRun {
    name: String,
    output: SharedOutput,
    done: watch::Receiver<bool>,
    task: tokio::task::JoinHandle<()>,
}

struct PodRun {
    cluster: String,
    containers: Vec<ContainerRun>,
}

impl Drop for PodRun {
    fn drop(&mut self) {
        // Aborting drops the child, and `kill_on_drop` kills it.
        for c in &self.containers {
            c.task.abort();
        }
    }
}

/// The kubelets of every simulated node.
pub struct Kubelet {
    root: PathBuf,
    runs: HashMap<String, PodRun>,
    /// `cluster/node` → what its host has.
    hosts: HashMap<String, HostFacts>,
    /// Image → the local program that is its entrypoint.
    pub images: HashMap<String, PathBuf>,
}

/// A container's output, for the log endpoint.
pub struct LogSource {
    pub output: SharedOutput,
    pub done: watch::Receiver<bool>,
}

impl Kubelet {
    pub fn new(root: PathBuf) -> Kubelet {
        Kubelet {
            root,
            runs: HashMap::new(),
            hosts: HashMap::new(),
            images: HashMap::new(),
        }
    }

    /// Removes the data of volumes that are gone (the driver's reclaim); every node sees the
    /// same filestore, so one node's view is enough.
    fn reclaim(&self, store: &ClusterStore, cluster: &str) {
        let Some(node) = self
            .hosts
            .keys()
            .find_map(|k| k.strip_prefix(&format!("{cluster}/")))
        else {
            return;
        };
        for path in super::volumes::orphaned_data(store, &self.node_dir(cluster, node)) {
            let _ = std::fs::remove_dir_all(path);
        }
    }

    /// What each node of `cluster` has on its host now.
    pub fn set_hosts(&mut self, cluster: &str, hosts: Vec<(String, HostFacts)>) {
        self.hosts
            .retain(|k, _| !k.starts_with(&format!("{cluster}/")));
        for (node, facts) in hosts {
            self.hosts.insert(format!("{cluster}/{node}"), facts);
        }
    }

    /// A node's own host directory.
    pub fn node_dir(&self, cluster: &str, node: &str) -> PathBuf {
        self.root.join(cluster).join("nodes").join(node)
    }

    /// The output of a pod's container (the first when `container` is empty).
    pub fn logs(&self, pod_uid: &str, container: &str) -> Option<LogSource> {
        let run = self.runs.get(pod_uid)?;
        let c = if container.is_empty() {
            run.containers.first()?
        } else {
            run.containers.iter().find(|c| c.name == container)?
        };
        Some(LogSource {
            output: c.output.clone(),
            done: c.done.clone(),
        })
    }
}

fn quantity(text: &str) -> f64 {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let n: f64 = number.parse().unwrap_or(0.0);
    let factor = match suffix {
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "Ki" => 1024.0,
        "Mi" => 1024.0 * 1024.0,
        "Gi" => 1024.0 * 1024.0 * 1024.0,
        "Ti" => 1024f64.powi(4),
        _ => 1.0,
    };
    n * factor
}

/// A pod's requests; a resource with only a limit requests its limit, as the API defaults it.
fn requests(pod: &Value) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for c in pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let mut merged = c
            .pointer("/resources/limits")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        for (k, v) in c
            .pointer("/resources/requests")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            merged.insert(k.clone(), v.clone());
        }
        for (k, v) in merged {
            *out.entry(k).or_insert(0.0) += quantity(v.as_str().unwrap_or("0"));
        }
    }
    out
}

fn is_ready(node: &Value) -> bool {
    node.pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True")
}

fn terms_match(node: &Value, term: &Value) -> bool {
    let labels = node.pointer("/metadata/labels");
    let label = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
    let check = |value: Option<&str>, expr: &Value| {
        let values: Vec<&str> = expr["values"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        match expr["operator"].as_str() {
            Some("In") => value.is_some_and(|v| values.contains(&v)),
            Some("NotIn") => !value.is_some_and(|v| values.contains(&v)),
            Some("Exists") => value.is_some(),
            Some("DoesNotExist") => value.is_none(),
            _ => false,
        }
    };
    let expressions = term["matchExpressions"].as_array().into_iter().flatten();
    let fields = term["matchFields"].as_array().into_iter().flatten();
    expressions
        .clone()
        .all(|e| check(label(e["key"].as_str().unwrap_or_default()), e))
        && fields.clone().all(|e| {
            let value = match e["key"].as_str() {
                Some("metadata.name") => Some(meta(node, "name")),
                _ => None,
            };
            check(value, e)
        })
        && (expressions.count() + fields.count() > 0)
}

fn tolerates(pod: &Value, taint: &Value) -> bool {
    if taint["effect"] == "PreferNoSchedule" {
        return true;
    }
    pod.pointer("/spec/tolerations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|t| {
            let key_ok = t["key"].as_str().is_none_or(str::is_empty) && t["operator"] == "Exists"
                || t["key"] == taint["key"];
            let value_ok = t["operator"] == "Exists" || t["value"] == taint["value"];
            let effect_ok =
                t["effect"].as_str().is_none_or(str::is_empty) || t["effect"] == taint["effect"];
            key_ok && value_ok && effect_ok
        })
}

/// Why `node` cannot take `pod`, or `None` when it can.
fn unfit(store: &ClusterStore, pod: &Value, node: &Value) -> Option<&'static str> {
    if !is_ready(node) {
        return Some("node(s) were not ready");
    }
    if let Some(selector) = pod.pointer("/spec/nodeSelector").and_then(Value::as_object) {
        let labels = node.pointer("/metadata/labels");
        if !selector
            .iter()
            .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
        {
            return Some("node(s) didn't match Pod's node affinity/selector");
        }
    }
    if let Some(terms) = pod
        .pointer("/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms")
        .and_then(Value::as_array)
        && !terms.iter().any(|t| terms_match(node, t))
    {
        return Some("node(s) didn't match Pod's node affinity/selector");
    }
    if node
        .pointer("/spec/taints")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|t| !tolerates(pod, t))
    {
        return Some("node(s) had untolerated taint");
    }
    let mut used: BTreeMap<String, f64> = BTreeMap::new();
    for other in store.list(POD, None) {
        let phase = other.pointer("/status/phase").and_then(Value::as_str);
        if other.pointer("/spec/nodeName") == node.pointer("/metadata/name")
            && !matches!(phase, Some("Succeeded" | "Failed"))
        {
            for (k, v) in requests(other) {
                *used.entry(k).or_insert(0.0) += v;
            }
        }
    }
    for (resource, want) in requests(pod) {
        let have = node
            .pointer(&format!(
                "/status/allocatable/{}",
                resource.replace('/', "~1")
            ))
            .and_then(Value::as_str)
            .map_or(0.0, quantity);
        if used.get(&resource).copied().unwrap_or(0.0) + want > have + 1e-9 {
            return Some("Insufficient resources");
        }
    }
    None
}

fn set_condition(object: &mut Value, kind: &str, status: &str, reason: &str, message: &str) {
    let now = now_rfc3339();
    let conditions = &mut object["status"]["conditions"];
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    let list = conditions.as_array_mut().expect("array");
    let condition = json!({
        "type": kind, "status": status, "reason": reason, "message": message,
        "lastTransitionTime": now, "lastProbeTime": null,
    });
    match list.iter_mut().find(|c| c["type"] == kind) {
        Some(existing) if existing["status"] == status && existing["reason"] == reason => {}
        Some(existing) => *existing = condition,
        None => list.push(condition),
    }
}

fn condition_true(object: &Value, kind: &str) -> bool {
    object
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| c["type"] == kind && c["status"] == "True")
}

fn deleting(object: &Value) -> bool {
    object.pointer("/metadata/deletionTimestamp").is_some()
}

/// Background garbage collection and foreground deletion.
fn collect_garbage(store: &mut ClusterStore) {
    for (kind, ns, name) in store.keys() {
        let Some(object) = store.get(kind, &ns, &name).cloned() else {
            continue;
        };
        let owners: Vec<&str> = object
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|r| r["uid"].as_str())
            .collect();
        if !owners.is_empty() && owners.iter().all(|uid| !store.has_uid(uid)) {
            store.remove(kind, &ns, &name);
            continue;
        }
        let waiting = object
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|f| f.iter().any(|x| x == "foregroundDeletion"));
        if deleting(&object) && waiting {
            let dependents = store.dependents(meta(&object, "uid"));
            if dependents.is_empty() {
                store.remove(kind, &ns, &name);
            } else {
                for (k, n_ns, n) in dependents {
                    store.remove(k, &n_ns, &n);
                }
            }
        }
    }
}

fn pods_of<'a>(store: &'a ClusterStore, job: &Value) -> Vec<&'a Value> {
    let uid = meta(job, "uid");
    store
        .list(POD, Some(meta(job, "namespace")))
        .into_iter()
        .filter(|p| {
            p.pointer("/metadata/ownerReferences")
                .and_then(Value::as_array)
                .is_some_and(|refs| refs.iter().any(|r| r["uid"] == uid))
        })
        .collect()
}

fn run_jobs(store: &mut ClusterStore) {
    let jobs: Vec<Value> = store.list(JOB, None).into_iter().cloned().collect();
    for mut job in jobs {
        if deleting(&job) || condition_true(&job, "Complete") || condition_true(&job, "Failed") {
            continue;
        }
        if job.pointer("/spec/suspend") == Some(&json!(true)) {
            continue;
        }
        let spec_n = |field: &str, default: i64| {
            job.pointer(&format!("/spec/{field}"))
                .and_then(Value::as_i64)
                .unwrap_or(default)
        };
        let (completions, parallelism, backoff) = (
            spec_n("completions", 1),
            spec_n("parallelism", 1),
            spec_n("backoffLimit", 6),
        );
        let pods = pods_of(store, &job);
        let phase = |p: &Value| {
            p.pointer("/status/phase")
                .and_then(Value::as_str)
                .unwrap_or("Pending")
                .to_string()
        };
        let succeeded = pods.iter().filter(|p| phase(p) == "Succeeded").count() as i64;
        let failed = pods.iter().filter(|p| phase(p) == "Failed").count() as i64;
        let active = pods.len() as i64 - succeeded - failed;
        let ns = meta(&job, "namespace").to_string();
        if job.pointer("/status/startTime").is_none() {
            job["status"]["startTime"] = json!(now_rfc3339());
        }
        if succeeded >= completions {
            set_condition(
                &mut job,
                "SuccessCriteriaMet",
                "True",
                "CompletionsReached",
                "Reached expected number of succeeded pods",
            );
            set_condition(
                &mut job,
                "Complete",
                "True",
                "CompletionsReached",
                "Reached expected number of succeeded pods",
            );
            job["status"]["completionTime"] = json!(now_rfc3339());
        } else if failed > backoff {
            set_condition(
                &mut job,
                "FailureTarget",
                "True",
                "BackoffLimitExceeded",
                "Job has reached the specified backoff limit",
            );
            set_condition(
                &mut job,
                "Failed",
                "True",
                "BackoffLimitExceeded",
                "Job has reached the specified backoff limit",
            );
        } else {
            let wanted = parallelism.min(completions - succeeded) - active;
            let template = job.pointer("/spec/template").cloned().unwrap_or(json!({}));
            for _ in 0..wanted.max(0) {
                let mut pod = json!({
                    "metadata": template.get("metadata").cloned().unwrap_or(json!({})),
                    "spec": template.get("spec").cloned().unwrap_or(json!({})),
                });
                let m = &mut pod["metadata"];
                m["generateName"] = json!(format!("{}-", meta(&job, "name")));
                m["ownerReferences"] = json!([{
                    "apiVersion": "batch/v1", "kind": "Job", "name": meta(&job, "name"),
                    "uid": meta(&job, "uid"), "controller": true, "blockOwnerDeletion": true,
                }]);
                default_on_create(POD, &mut pod);
                let _ = store.create(POD, &ns, pod);
            }
        }
        let active_now = pods_of(store, &job)
            .iter()
            .filter(|p| !matches!(phase(p).as_str(), "Succeeded" | "Failed"))
            .count();
        let status = &mut job["status"];
        status["active"] = json!(active_now);
        status["succeeded"] = json!(succeeded);
        status["failed"] = json!(failed);
        status["ready"] = json!(0);
        status["terminating"] = json!(0);
        status["uncountedTerminatedPods"] = json!({});
        store.put(JOB, job);
    }
}

fn schedule(store: &mut ClusterStore) {
    let pending: Vec<Value> = store
        .list(POD, None)
        .into_iter()
        .filter(|p| {
            p.pointer("/spec/nodeName")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
                && !deleting(p)
                && p.pointer("/status/phase").and_then(Value::as_str) == Some("Pending")
        })
        .cloned()
        .collect();
    for mut pod in pending {
        let nodes: Vec<Value> = store.list(NODE, None).into_iter().cloned().collect();
        let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
        let chosen = nodes.iter().find(|n| match unfit(store, &pod, n) {
            None => true,
            Some(reason) => {
                *reasons.entry(reason).or_insert(0) += 1;
                false
            }
        });
        match chosen {
            Some(node) => {
                pod["spec"]["nodeName"] = json!(meta(node, "name"));
                set_condition(&mut pod, "PodScheduled", "True", "", "");
            }
            None => {
                let why: Vec<String> = reasons.iter().map(|(r, n)| format!("{n} {r}")).collect();
                let message = format!("0/{} nodes are available: {}.", nodes.len(), why.join(", "));
                set_condition(&mut pod, "PodScheduled", "False", "Unschedulable", &message);
            }
        }
        store.put(POD, pod);
    }
}

fn field_value(pod: &Value, path: &str) -> String {
    let pointer = format!("/{}", path.replace('.', "/"));
    pod.pointer(&pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn start_container(
    container: &Value,
    pod: &Value,
    dir: &Path,
    images: &HashMap<String, PathBuf>,
    claims: &HashMap<String, PathBuf>,
) -> Result<ContainerRun, String> {
    let name = container["name"].as_str().unwrap_or_default().to_string();
    // hostPath volumes are where they are in the node's directory, claim volumes where their
    // volume's data is; arguments naming them follow, and an image the simulator knows runs
    // its local entrypoint.
    let mounts = super::hosts::host_mounts(container, pod, dir, claims);
    let mut argv: Vec<String> = ["command", "args"]
        .iter()
        .flat_map(|f| container[*f].as_array().cloned().unwrap_or_default())
        .filter_map(|v| v.as_str().map(|a| super::hosts::rewrite(a, &mounts)))
        .collect();
    if let (Some(binary), Some(first)) = (
        container["image"].as_str().and_then(|i| images.get(i)),
        argv.first_mut(),
    ) {
        *first = binary.display().to_string();
    }
    if container["command"].as_array().is_none_or(Vec::is_empty) {
        return Err(format!(
            "container {name:?} has no command: the simulated kubelet runs commands locally and cannot read an image's entrypoint"
        ));
    }
    let mut command = tokio::process::Command::new(&argv[0]);
    command
        .args(&argv[1..])
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("HOSTNAME", meta(pod, "name"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for var in container["env"].as_array().into_iter().flatten() {
        let Some(key) = var["name"].as_str() else {
            continue;
        };
        let value = match var
            .pointer("/valueFrom/fieldRef/fieldPath")
            .and_then(Value::as_str)
        {
            Some("metadata.name") => meta(pod, "name").to_string(),
            Some("metadata.namespace") => meta(pod, "namespace").to_string(),
            Some("metadata.uid") => meta(pod, "uid").to_string(),
            Some(path) => field_value(pod, path),
            None => var["value"].as_str().unwrap_or_default().to_string(),
        };
        command.env(key, value);
    }
    let mut child = command
        .spawn()
        .map_err(|e| format!("cannot start {:?}: {e}", argv[0]))?;
    let output: SharedOutput = Arc::new(Mutex::new(ContainerOutput {
        started_at: now_rfc3339(),
        ..Default::default()
    }));
    let (tx, rx) = watch::channel(false);
    let shared = output.clone();
    let task = tokio::spawn(async move {
        let append = |bytes: &[u8]| {
            let mut out = shared.lock().unwrap_or_else(|p| p.into_inner());
            out.log.extend_from_slice(bytes);
            if out.log.len() > MAX_LOG_BYTES {
                let cut = out.log.len() - MAX_LOG_BYTES;
                out.log.drain(..cut);
            }
        };
        let mut stdout = child.stdout.take().expect("piped");
        let mut stderr = child.stderr.take().expect("piped");
        let (mut a, mut b) = ([0u8; 8192], [0u8; 8192]);
        let (mut out_open, mut err_open) = (true, true);
        while out_open || err_open {
            tokio::select! {
                n = stdout.read(&mut a), if out_open => match n {
                    Ok(0) | Err(_) => out_open = false,
                    Ok(n) => append(&a[..n]),
                },
                n = stderr.read(&mut b), if err_open => match n {
                    Ok(0) | Err(_) => err_open = false,
                    Ok(n) => append(&b[..n]),
                },
            }
        }
        let status = child.wait().await;
        {
            let mut out = shared.lock().unwrap_or_else(|p| p.into_inner());
            out.finished_at = now_rfc3339();
            match status {
                Ok(s) => out.exit_code = Some(s.code().unwrap_or(137)),
                Err(e) => out.error = Some(e.to_string()),
            }
        }
        let _ = tx.send(true);
    });
    Ok(ContainerRun {
        name,
        output,
        done: rx,
        task,
    })
}

fn container_status(
    name: &str,
    image: &str,
    output: Option<&ContainerOutput>,
    waiting: Option<&str>,
) -> Value {
    let state = match (output, waiting) {
        (_, Some(reason)) => json!({"waiting": {"reason": reason}}),
        (Some(o), _) if o.exit_code.is_some() || o.error.is_some() => {
            let code = o.exit_code.unwrap_or(128);
            json!({"terminated": {
                "exitCode": code,
                "reason": if code == 0 { "Completed" } else { "Error" },
                "startedAt": o.started_at, "finishedAt": o.finished_at,
            }})
        }
        (Some(o), _) => json!({"running": {"startedAt": o.started_at}}),
        (None, None) => json!({"waiting": {"reason": "ContainerCreating"}}),
    };
    let running = state.get("running").is_some();
    json!({
        "name": name, "image": image, "imageID": "", "ready": running, "started": running,
        "restartCount": 0, "state": state,
    })
}

fn run_pods(store: &mut ClusterStore, kubelet: &mut Kubelet, cluster: &str) {
    let live: std::collections::HashSet<String> = store
        .list(POD, None)
        .into_iter()
        .map(|p| meta(p, "uid").to_string())
        .collect();
    // Only this cluster's pods: the other clusters' runs are theirs to keep.
    kubelet
        .runs
        .retain(|uid, run| run.cluster != cluster || live.contains(uid));
    let pods: Vec<Value> = store
        .list(POD, None)
        .into_iter()
        .filter(|p| {
            p.pointer("/spec/nodeName")
                .and_then(Value::as_str)
                .is_some_and(|n| !n.is_empty())
        })
        .cloned()
        .collect();
    for mut pod in pods {
        let uid = meta(&pod, "uid").to_string();
        let phase = pod
            .pointer("/status/phase")
            .and_then(Value::as_str)
            .unwrap_or("Pending")
            .to_string();
        if matches!(phase.as_str(), "Succeeded" | "Failed") || deleting(&pod) {
            continue;
        }
        // A played pod (an add-on's image the simulator cannot run) is up once it is placed.
        if pod
            .pointer(&format!(
                "/metadata/annotations/{}",
                super::addons::PLAYED.replace('/', "~1")
            ))
            .is_some()
        {
            let by_daemon_set =
                pod.pointer("/metadata/ownerReferences/0/kind") == Some(&json!("DaemonSet"));
            if phase == "Pending" && !by_daemon_set {
                pod["status"]["phase"] = json!("Running");
                pod["status"]["conditions"] = json!([{"type": "Ready", "status": "True"}]);
                store.put(POD, pod);
            }
            continue;
        }
        let node = field_value(&pod, "spec.nodeName");
        let containers: Vec<Value> = pod
            .pointer("/spec/containers")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if store.get(NODE, "", &node).is_none() {
            pod["status"]["phase"] = json!("Failed");
            pod["status"]["reason"] = json!("NodeLost");
            pod["status"]["message"] = json!(format!("node {node:?} is gone"));
            store.put(POD, pod);
            continue;
        }
        if !kubelet.runs.contains_key(&uid) {
            let dir = kubelet.node_dir(cluster, &node);
            if let Err(e) = std::fs::create_dir_all(&dir) {
                pod["status"]["phase"] = json!("Failed");
                pod["status"]["message"] = json!(format!("cannot make the node's directory: {e}"));
                store.put(POD, pod);
                continue;
            }
            if let Some(facts) = kubelet.hosts.get(&format!("{cluster}/{node}"))
                && let Err(e) = super::hosts::prepare(&kubelet.root, cluster, &dir, facts)
            {
                pod["status"]["phase"] = json!("Failed");
                pod["status"]["message"] = json!(format!("cannot prepare the node's host: {e}"));
                store.put(POD, pod);
                continue;
            }
            // A claim volume waits for its claim to bind (the pod stays Pending meanwhile).
            let mut claims = HashMap::new();
            let mut unbound = false;
            for v in pod
                .pointer("/spec/volumes")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let Some(claim) = v
                    .pointer("/persistentVolumeClaim/claimName")
                    .and_then(Value::as_str)
                else {
                    continue;
                };
                match super::volumes::claim_path(store, meta(&pod, "namespace"), claim, &dir) {
                    Some(path) if std::fs::create_dir_all(&path).is_ok() => {
                        claims.insert(v["name"].as_str().unwrap_or_default().to_string(), path);
                    }
                    _ => unbound = true,
                }
            }
            if unbound {
                continue;
            }
            let mut started = Vec::new();
            let mut failure = None;
            for c in &containers {
                match start_container(c, &pod, &dir, &kubelet.images, &claims) {
                    Ok(run) => started.push(run),
                    Err(e) => {
                        failure = Some(e);
                        break;
                    }
                }
            }
            if let Some(message) = failure {
                drop(started);
                pod["status"]["phase"] = json!("Failed");
                pod["status"]["reason"] = json!("ContainerCannotRun");
                pod["status"]["message"] = json!(message);
                pod["status"]["containerStatuses"] = json!(
                    containers
                        .iter()
                        .map(|c| container_status(
                            c["name"].as_str().unwrap_or_default(),
                            c["image"].as_str().unwrap_or_default(),
                            None,
                            Some("ContainerCannotRun")
                        ))
                        .collect::<Vec<_>>()
                );
                store.put(POD, pod);
                continue;
            }
            let host_ip = store
                .get(NODE, "", &node)
                .and_then(|n| n.pointer("/status/addresses/0/address"))
                .cloned()
                .unwrap_or(json!(""));
            pod["status"]["hostIP"] = host_ip;
            pod["status"]["podIP"] = json!(format!(
                "10.100.{}.{}",
                live.len() / 250,
                live.len() % 250 + 2
            ));
            pod["status"]["startTime"] = json!(now_rfc3339());
            kubelet.runs.insert(
                uid.clone(),
                PodRun {
                    cluster: cluster.to_string(),
                    containers: started,
                },
            );
        }
        let run = kubelet.runs.get(&uid).expect("started above");
        let outputs: Vec<ContainerOutput> = run
            .containers
            .iter()
            .map(|c| {
                let o = c.output.lock().unwrap_or_else(|p| p.into_inner());
                ContainerOutput {
                    log: Vec::new(),
                    exit_code: o.exit_code,
                    error: o.error.clone(),
                    started_at: o.started_at.clone(),
                    finished_at: o.finished_at.clone(),
                }
            })
            .collect();
        let finished = outputs
            .iter()
            .all(|o| o.exit_code.is_some() || o.error.is_some());
        let statuses: Vec<Value> = containers
            .iter()
            .zip(&outputs)
            .map(|(c, o)| {
                container_status(
                    c["name"].as_str().unwrap_or_default(),
                    c["image"].as_str().unwrap_or_default(),
                    Some(o),
                    None,
                )
            })
            .collect();
        pod["status"]["containerStatuses"] = json!(statuses);
        if finished {
            let ok = outputs.iter().all(|o| o.exit_code == Some(0));
            pod["status"]["phase"] = json!(if ok { "Succeeded" } else { "Failed" });
            set_condition(&mut pod, "Ready", "False", "PodCompleted", "");
            set_condition(&mut pod, "ContainersReady", "False", "PodCompleted", "");
        } else {
            pod["status"]["phase"] = json!("Running");
            set_condition(&mut pod, "Initialized", "True", "", "");
            set_condition(&mut pod, "Ready", "True", "", "");
            set_condition(&mut pod, "ContainersReady", "True", "", "");
        }
        store.put(POD, pod);
    }
}

/// One pass of every controller over one cluster.
pub fn reconcile(store: &mut ClusterStore, kubelet: &mut Kubelet, cluster: &str) {
    collect_garbage(store);
    super::volumes::provision(store);
    run_jobs(store);
    schedule(store);
    run_pods(store, kubelet, cluster);
    kubelet.reclaim(store, cluster);
}

/// Pods a label selector picks in a namespace (the log endpoint's `job/NAME` needs none).
pub fn select_pods<'a>(
    store: &'a ClusterStore,
    namespace: &str,
    selector: &LabelSelector,
) -> Vec<&'a Value> {
    store
        .list(POD, Some(namespace))
        .into_iter()
        .filter(|p| selector.matches(p))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_parse_in_base_units() {
        assert_eq!(quantity("500m"), 0.5);
        assert_eq!(quantity("2"), 2.0);
        assert_eq!(quantity("1Gi"), 1024.0 * 1024.0 * 1024.0);
    }
}
