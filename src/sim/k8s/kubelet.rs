//! The simulated kubelet: it runs each scheduled pod's containers as local processes.
//!
//! It pulls no images: it runs a container's `command` and `args` on this machine, in the
//! node's own host directory (see [`super::hosts`]), with the container's environment and its
//! volumes where they really are. That is what lets a probe pod do real file IO on a simulated
//! node; a container without a command cannot run (unless its image is mapped to a local
//! entrypoint).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::AsyncReadExt;
use tokio::sync::watch;

use super::filestore::Filestore;
use super::hosts::{HostFacts, HostFault, HostMount};
use super::kinds::{NODE, POD};
use super::store::{ClusterStore, meta, now_rfc3339};
use super::workloads::{deleting, set_condition};

/// The most log a container keeps (the newest bytes are kept).
const MAX_LOG_BYTES: usize = 8 * 1024 * 1024;

/// The longest piece of one line a stream holds back before it is logged unfinished
/// (containerd's default `max_container_log_line_size`, 16 KiB).
const MAX_LINE_BYTES: usize = 16 * 1024;

/// What one stream (stdout or stderr) has read but not yet logged: the unfinished last line.
/// A container runtime logs each stream a whole line at a time, so in `kubectl logs` a line
/// of stdout is never cut by a line of stderr, whatever sizes the pipes were read in.
#[derive(Default)]
struct LineBuffer(Vec<u8>);

impl LineBuffer {
    /// Takes `bytes`; returns what is ready to log: every finished line, or, once an
    /// unfinished line reaches [`MAX_LINE_BYTES`], what was read of it (as containerd logs a
    /// partial entry).
    fn push(&mut self, bytes: &[u8]) -> Vec<u8> {
        self.0.extend_from_slice(bytes);
        let ready = match self.0.iter().rposition(|b| *b == b'\n') {
            Some(end) => end + 1,
            None if self.0.len() >= MAX_LINE_BYTES => self.0.len(),
            None => 0,
        };
        self.0.drain(..ready).collect()
    }

    /// At the stream's end: the unfinished line, as it is.
    fn finish(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.0)
    }
}

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
    /// The pod's final phase is written: nothing more to watch.
    settled: bool,
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
    /// `cluster/filesystem` → its data, made when a node first needs it.
    filestores: HashMap<String, Filestore>,
    /// Node → what a test broke on it.
    pub faults: HashMap<String, HostFault>,
    /// A leaky driver: volumes' data outlives them.
    pub keep_volume_data: bool,
    /// Where the stand-in NVIDIA driver is, once a GPU container needed it.
    driver: Option<PathBuf>,
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
            filestores: HashMap::new(),
            faults: HashMap::new(),
            keep_volume_data: false,
            driver: None,
        }
    }

    /// The clusters with a pod whose containers are running or whose end is not written yet:
    /// their controllers must look again even when nothing in the cluster changed.
    pub(super) fn busy_clusters(&self) -> std::collections::HashSet<String> {
        self.runs
            .values()
            .filter(|run| !run.settled)
            .map(|run| run.cluster.clone())
            .collect()
    }

    /// The stand-in NVIDIA driver's directory, written on first use.
    fn driver(&mut self) -> std::io::Result<PathBuf> {
        if let Some(dir) = &self.driver {
            return Ok(dir.clone());
        }
        let dir = super::gpu_hardware::install(&self.root)?;
        self.driver = Some(dir.clone());
        Ok(dir)
    }

    /// Removes the data of volumes that are gone (the driver's reclaim); every node sees the
    /// same filestore, so one node's view is enough.
    pub(super) fn reclaim(&self, store: &ClusterStore, cluster: &str) {
        if self.keep_volume_data {
            return;
        }
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

fn field_value(pod: &Value, path: &str) -> String {
    let pointer = format!("/{}", path.replace('.', "/"));
    pod.pointer(&pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// A container to start, and what the node adds to its environment (the GPU driver's).
struct Container<'a> {
    spec: &'a Value,
    extra_env: &'a [(String, String)],
}

fn start_container(
    Container {
        spec: container,
        extra_env,
    }: Container,
    pod: &Value,
    dir: &Path,
    images: &HashMap<String, PathBuf>,
    claims: &HashMap<String, PathBuf>,
    fault: Option<HostFault>,
) -> Result<ContainerRun, String> {
    let name = container["name"].as_str().unwrap_or_default().to_string();
    // hostPath volumes are where they are in the node's directory, claim volumes where their
    // volume's data is; arguments naming them follow, and an image the simulator knows runs
    // its local entrypoint.
    let mut mounts = super::hosts::host_mounts(container, pod, dir, claims);
    // A container's /proc is its node kernel's: the node's boot ID, its NVIDIA module.
    mounts.push(("/proc".to_string(), dir.join("proc")));
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
    if fault == Some(HostFault::Stall) {
        argv = vec!["sleep".into(), "86400".into()];
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
    command.envs(extra_env.iter().map(|(k, v)| (k, v)));
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
        let (mut out_line, mut err_line) = (LineBuffer::default(), LineBuffer::default());
        let (mut out_open, mut err_open) = (true, true);
        while out_open || err_open {
            tokio::select! {
                n = stdout.read(&mut a), if out_open => match n {
                    Ok(0) | Err(_) => {
                        out_open = false;
                        append(&out_line.finish());
                    }
                    Ok(n) => append(&out_line.push(&a[..n])),
                },
                n = stderr.read(&mut b), if err_open => match n {
                    Ok(0) | Err(_) => {
                        err_open = false;
                        append(&err_line.finish());
                    }
                    Ok(n) => append(&err_line.push(&b[..n])),
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
    // The runtime resolves an image to its repository digest; one named by digest is that.
    let image_id = if image.contains("@sha256:") {
        image
    } else {
        ""
    };
    json!({
        "name": name, "image": image, "imageID": image_id, "ready": running, "started": running,
        "restartCount": 0, "state": state,
    })
}

pub(super) fn run_pods(store: &mut ClusterStore, kubelet: &mut Kubelet, cluster: &str) {
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
                pod["status"]["containerStatuses"] =
                    super::addons::played_container_statuses(pod.get("spec"), true);
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
            let fault = kubelet.faults.get(&node).copied();
            let root = kubelet.root.clone();
            let filestores = &mut kubelet.filestores;
            let mut shared = |m: &HostMount| -> std::io::Result<PathBuf> {
                let key = format!("{cluster}/{}", m.filesystem_id);
                if !filestores.contains_key(&key) {
                    let at = super::hosts::filesystem_dir(&root, cluster, &m.filesystem_id);
                    filestores.insert(key.clone(), Filestore::create(&at, m.size_bytes)?);
                }
                Ok(filestores[&key].path().to_path_buf())
            };
            if let Some(facts) = kubelet.hosts.get(&format!("{cluster}/{node}"))
                && let Err(e) = super::hosts::prepare(&dir, facts, fault, &mut shared)
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
                let path = super::volumes::claim_path(store, meta(&pod, "namespace"), claim, &dir)
                    .map(|p| match fault {
                        Some(HostFault::SplitView) => dir.join("split-view").join(claim),
                        _ => p,
                    });
                match path {
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
            let node_object = store.get(NODE, "", &node).cloned().unwrap_or_default();
            for c in &containers {
                let gpu_env = match kubelet.driver() {
                    Ok(driver) => {
                        super::gpu_hardware::container_env(c, &node_object, fault, &driver)
                    }
                    Err(e) => {
                        failure = Some(format!("cannot install the node's GPU driver: {e}"));
                        break;
                    }
                };
                if !gpu_env.is_empty() {
                    let proc_driver = dir.join("proc/driver/nvidia");
                    let written = std::fs::create_dir_all(&proc_driver).and_then(|()| {
                        std::fs::write(
                            proc_driver.join("version"),
                            super::gpu_hardware::proc_version(),
                        )
                    });
                    if let Err(e) = written {
                        failure = Some(format!("cannot prepare the node's driver: {e}"));
                        break;
                    }
                }
                let container = Container {
                    spec: c,
                    extra_env: &gpu_env,
                };
                match start_container(container, &pod, &dir, &kubelet.images, &claims, fault) {
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
                    settled: false,
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
        if finished && let Some(run) = kubelet.runs.get_mut(&uid) {
            run.settled = true;
        }
        store.put(POD, pod);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_is_logged_a_whole_line_at_a_time_and_a_runaway_line_in_pieces() {
        let mut line = LineBuffer::default();
        assert_eq!(line.push(b"hel"), b"");
        assert_eq!(line.push(b"lo\nnext\nwor"), b"hello\nnext\n");
        assert_eq!(line.finish(), b"wor");
        assert_eq!(line.finish(), b"");
        let runaway = vec![b'x'; MAX_LINE_BYTES - 1];
        assert_eq!(line.push(&runaway), b"");
        assert_eq!(line.push(b"yz").len(), MAX_LINE_BYTES + 1);
        assert_eq!(line.finish(), b"");
    }
}
