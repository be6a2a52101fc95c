//! `verify-mig` end to end (fleet-engine §7.3): exactly one MIG target is selected; its
//! identity is proven as for storage; a snapshot of the cluster (each GPU node's layout label,
//! state and slices, the GPU Operator's ClusterPolicy and version, driver pods on an old
//! template) is judged, and with `--wait` two consecutive identical snapshots must agree; with
//! `--reconcile` a stale OnDelete driver pod is replaced as maintenance (no application GPU pod
//! on the node, cordoned meanwhile, deleted by UID, its ready replacement awaited, the node's
//! scheduling restored); then fleetbot's MIG probe runs on every GPU node holding all its
//! slices, and what the driver says (MIG mode, instances, vectorAdd per slice) is judged.

use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Node as KubeNode, Pod};
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::core::GroupVersionKind;
use serde_json::json;
use tokio::sync::watch;

use super::identity::prove;
use super::manifests::{RunContext, pinned_node};
use super::mig_report::{
    CudaSmoke, MigExpectation, MigFinding, MigHardware, MigJudgement, MigProblem,
    MigVerificationReport, judge_mig,
};
use super::options::MigOptions;
use super::storage_run::{VerifyError, image_digest, interrupted, new_run_id};
use super::workload::{PodEnd, Purpose, Workload};
use crate::cloud::domain::Cloud;
use crate::clusters::kubeconfig::KubeconfigMap;
use crate::clusters::{ClusterClient, Node};
use crate::engine::ops::{Event, Progress};
use crate::probe::{MigEvidence, VectorAdd, parse_mig};
use crate::spec::FleetSpec;
use crate::store::InventoryStore;

const OPERATOR_NAMESPACE: &str = "gpu-operator";
const DRIVER_DAEMON_SET: &str = "nvidia-driver-daemonset";
const TEMPLATE_GENERATION: &str = "pod-template-generation";

/// Why a MIG verification could not start.
#[derive(Debug, thiserror::Error)]
pub enum MigError {
    /// A usage error (the reference's BadParameter).
    #[error("select exactly one MIG cluster with --project/--cluster (matched {0})")]
    Selection(usize),
    #[error(transparent)]
    Verify(#[from] VerifyError),
}

/// The one MIG target `--project`/`--cluster` select.
pub fn select_mig_target(
    spec: &FleetSpec,
    project: Option<&str>,
    cluster: Option<&str>,
    prefix: &str,
) -> Result<(usize, usize), MigError> {
    let matched: Vec<(usize, usize)> = spec
        .projects
        .iter()
        .enumerate()
        .filter(|(_, p)| project.is_none_or(|w| p.key() == w || p.display_name(prefix) == w))
        .flat_map(|(pi, p)| {
            p.clusters
                .iter()
                .enumerate()
                .filter(|(_, c)| c.mig_enabled() && cluster.is_none_or(|w| c.name == w))
                .map(move |(ci, _)| (pi, ci))
        })
        .collect();
    match matched.as_slice() {
        [one] => Ok(*one),
        other => Err(MigError::Selection(other.len())),
    }
}

/// A driver pod made from an older template than its DaemonSet's.
#[derive(Debug, Clone, PartialEq, Eq)]
struct StalePod {
    node: String,
    pod: String,
    uid: String,
    generation: i64,
    current: i64,
    on_delete: bool,
}

/// What one look at the cluster shows.
#[derive(Debug, Clone, PartialEq)]
struct Snapshot {
    judgement: MigJudgement,
    identities: Vec<(String, String, String)>,
    operator_state: String,
    operator_version: String,
    stale: Vec<StalePod>,
}

impl Snapshot {
    fn findings(&self) -> Vec<MigFinding> {
        self.stale
            .iter()
            .map(|s| {
                MigFinding::node(
                    MigProblem::StaleDriverPod,
                    &s.node,
                    format!(
                        "driver pod {} runs template generation {} of {}{}",
                        s.pod,
                        s.generation,
                        s.current,
                        if s.on_delete {
                            " (OnDelete: rerun with --reconcile to replace it)"
                        } else {
                            " (rolling out)"
                        }
                    ),
                )
            })
            .collect()
    }

    fn clean(&self, expected: &MigExpectation) -> bool {
        self.judgement.errors.is_empty()
            && self.stale.is_empty()
            && self.operator_state == "ready"
            && self.operator_version == expected.operator_version
    }
}

/// Verifies the one selected MIG target.
pub async fn verify_mig<C: Cloud, S: InventoryStore>(
    cloud: &C,
    store: &S,
    spec: &FleetSpec,
    options: &MigOptions,
    progress: Progress,
    interrupt: watch::Receiver<bool>,
) -> Result<MigVerificationReport, MigError> {
    let (pi, ci) = select_mig_target(
        spec,
        options.only_projects.first().map(String::as_str),
        options.only_clusters.first().map(String::as_str),
        &options.project_prefix,
    )?;
    if image_digest(&options.probe_image).is_none() {
        return Err(VerifyError::Image(options.probe_image.clone()).into());
    }
    let records = store
        .targets(&spec.name)
        .await
        .map_err(|e| VerifyError::Store(e.to_string()))?;
    let project = &spec.projects[pi];
    let c = &project.clusters[ci];
    let expected = MigExpectation::pinned();
    let failed = |finding: MigFinding| {
        MigVerificationReport::new(
            String::new(),
            String::new(),
            MigJudgement {
                nodes: Vec::new(),
                errors: Vec::new(),
            },
            Vec::new(),
            CudaSmoke::NotRun,
            vec![finding],
            &expected,
        )
    };
    let kubeconfigs = options
        .kind
        .kubeconfig
        .clone()
        .map(|path| KubeconfigMap::single(&project.key(), &c.name, path));
    let target = format!("{}/{}", project.key(), c.name);
    progress(&Event::step(&target, "proving identity"));
    let proven = match prove(
        cloud,
        &records,
        spec,
        pi,
        ci,
        options.tenant.as_deref(),
        kubeconfigs.as_ref(),
    )
    .await
    {
        Ok(p) => p,
        Err(e) => {
            return Ok(failed(MigFinding::cluster(
                MigProblem::TargetIdentityFailed,
                format!("target identity: {e}"),
            )));
        }
    };
    let kube = match ClusterClient::connect(&proven.access).await {
        Ok(k) => k,
        Err(e) => {
            return Ok(failed(MigFinding::cluster(
                MigProblem::VerificationOperationFailed,
                format!("connecting: {e}"),
            )));
        }
    };
    let timeout = options.kind.timeout.unwrap_or(Duration::from_secs(
        u64::try_from(c.gpu_health_timeout_minutes.max(1)).unwrap_or(60) * 60,
    ));
    let deadline = Instant::now() + timeout;
    let mut extra = Vec::new();
    let mut snapshot = match settle(&kube, &expected, options, deadline, &progress).await {
        Ok((s, steady)) => {
            extra.extend(steady);
            s
        }
        Err(e) => return Ok(failed(e)),
    };
    if options.kind.reconcile && snapshot.stale.iter().any(|s| s.on_delete) {
        // Progress is printed: nodes by the worker names the printed report gives them.
        let workers = super::mig_public::worker_names(
            snapshot.judgement.nodes.iter().map(|n| n.name.as_str()),
        );
        for stale in snapshot.stale.iter().filter(|s| s.on_delete) {
            let worker = workers
                .get(&stale.node)
                .map_or("a GPU node", String::as_str);
            let step = format!("replacing a stale driver pod on {worker}");
            progress(&Event::note(step));
            if let Err(finding) = replace_stale(&kube, stale, deadline).await {
                extra.push(finding);
            }
        }
        snapshot = match settle(&kube, &expected, options, deadline, &progress).await {
            Ok((s, steady)) => {
                extra.retain(|f| f.problem != MigProblem::NotSteady);
                extra.extend(steady);
                s
            }
            Err(e) => return Ok(failed(e)),
        };
    }
    extra.extend(snapshot.findings());
    let mut hardware = Vec::new();
    let mut smoke = CudaSmoke::NotRun;
    if snapshot.clean(&expected) && extra.is_empty() {
        let run = RunContext {
            kind: "mig",
            run_id: new_run_id(),
            namespace: options.namespace.clone(),
            image: options.probe_image.clone(),
            mount_path: String::new(),
            mount_tag: String::new(),
        };
        let nodes = match kube.nodes().await {
            Ok(n) => n,
            Err(e) => {
                return Ok(failed(MigFinding::cluster(
                    MigProblem::VerificationOperationFailed,
                    format!("listing nodes: {e}"),
                )));
            }
        };
        let mut workload = Workload::new(kube.kube().clone(), &run.namespace, &run.selector());
        let left = deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_secs(1));
        let nodes_now = snapshot.judgement.nodes.len();
        let step = format!("running the MIG probe on {nodes_now} GPU node(s)");
        progress(&Event::step(&target, step));
        tokio::select! {
            found = probe(&mut workload, &run, &snapshot, &nodes, left) => {
                let (h, s, findings) = found;
                hardware = h;
                smoke = s;
                extra.extend(findings);
            }
            () = interrupted(interrupt) => {
                extra.push(MigFinding::cluster(
                    MigProblem::VerificationInterrupted,
                    "interrupted: cleaned up",
                ));
            }
        }
        let cleanup = workload.cleanup(options.cleanup_timeout).await;
        if !cleanup.failures.is_empty() {
            extra.push(MigFinding::cluster(
                MigProblem::VerificationOperationFailed,
                format!("cleanup: {}", cleanup.notes.join("; ")),
            ));
        }
    }
    Ok(MigVerificationReport::new(
        snapshot.operator_state,
        snapshot.operator_version,
        snapshot.judgement,
        hardware,
        smoke,
        extra,
        &expected,
    ))
}

/// One MIG target's report in a fleet run, by its place among the fleet's MIG targets.
#[derive(Debug, Clone)]
pub struct MigTarget {
    pub target_index: usize,
    pub report: MigVerificationReport,
}

/// Every selected MIG target of a fleet, verified one after another (the App's path).
#[derive(Debug, Clone)]
pub struct MigFleetReport {
    pub clusters: Vec<MigTarget>,
}

impl MigFleetReport {
    pub fn passed(&self) -> bool {
        !self.clusters.is_empty() && self.clusters.iter().all(|c| c.report.ready)
    }
}

/// The fleet's MIG targets, in spec order, that `only_clusters` names (all when empty).
pub fn mig_targets(spec: &FleetSpec, only_clusters: &[String]) -> Vec<(usize, usize)> {
    spec.projects
        .iter()
        .enumerate()
        .flat_map(|(pi, p)| {
            p.clusters
                .iter()
                .enumerate()
                .filter(|(_, c)| {
                    c.mig_enabled() && (only_clusters.is_empty() || only_clusters.contains(&c.name))
                })
                .map(move |(ci, _)| (pi, ci))
        })
        .collect()
}

/// Verifies each of the fleet's MIG targets that `options.only_clusters` names (all of them
/// when it is empty), one after another.
pub async fn verify_mig_fleet<C: Cloud, S: InventoryStore>(
    cloud: &C,
    store: &S,
    spec: &FleetSpec,
    options: &MigOptions,
    progress: Progress,
) -> Result<MigFleetReport, MigError> {
    let targets = mig_targets(spec, &options.only_clusters);
    if targets.is_empty() {
        return Err(MigError::Selection(0));
    }
    let mut clusters = Vec::new();
    for (target_index, (pi, ci)) in targets.into_iter().enumerate() {
        let mut one = options.clone();
        one.only_projects = vec![spec.projects[pi].key()];
        one.only_clusters = vec![spec.projects[pi].clusters[ci].name.clone()];
        let (_keep, interrupt) = watch::channel(false);
        let report = verify_mig(cloud, store, spec, &one, progress.clone(), interrupt).await?;
        clusters.push(MigTarget {
            target_index,
            report,
        });
    }
    Ok(MigFleetReport { clusters })
}

/// One snapshot, or with `--wait`, snapshots until two in a row are identical and clean (or
/// the deadline, when the last is kept and `not_steady` added if it alone looked clean).
async fn settle(
    kube: &ClusterClient,
    expected: &MigExpectation,
    options: &MigOptions,
    deadline: Instant,
    progress: &Progress,
) -> Result<(Snapshot, Vec<MigFinding>), MigFinding> {
    let mut last = look(kube, expected).await?;
    if !options.kind.wait {
        return Ok((last, Vec::new()));
    }
    progress(&Event::note("waiting for two identical MIG snapshots"));
    loop {
        if Instant::now() + options.kind.poll > deadline {
            let steady = if last.clean(expected) {
                vec![MigFinding::cluster(
                    MigProblem::NotSteady,
                    "no two consecutive snapshots agreed before the timeout",
                )]
            } else {
                Vec::new()
            };
            return Ok((last, steady));
        }
        tokio::time::sleep(options.kind.poll).await;
        let next = look(kube, expected).await?;
        if next == last && next.clean(expected) {
            return Ok((next, Vec::new()));
        }
        last = next;
    }
}

fn operation(what: &str, e: impl std::fmt::Display) -> MigFinding {
    MigFinding::cluster(
        MigProblem::VerificationOperationFailed,
        format!("{what}: {e}"),
    )
}

/// Reads the cluster once.
async fn look(kube: &ClusterClient, expected: &MigExpectation) -> Result<Snapshot, MigFinding> {
    let nodes = kube
        .nodes()
        .await
        .map_err(|e| operation("listing nodes", e))?;
    let judgement = judge_mig(&nodes, expected);
    let gpu_names: Vec<&str> = judgement.nodes.iter().map(|n| n.name.as_str()).collect();
    let mut identities: Vec<(String, String, String)> = nodes
        .iter()
        .filter(|n| gpu_names.contains(&n.name.as_str()))
        .map(|n| (n.name.clone(), n.uid.clone(), n.boot_id.clone()))
        .collect();
    identities.sort();
    let gvk = GroupVersionKind::gvk("nvidia.com", "v1", "ClusterPolicy");
    let policies: Api<DynamicObject> =
        Api::all_with(kube.kube().clone(), &ApiResource::from_gvk(&gvk));
    let (operator_state, operator_version) = match policies.list(&ListParams::default()).await {
        Ok(list) if list.items.len() == 1 => {
            let p = &list.items[0];
            (
                p.data
                    .pointer("/status/state")
                    .and_then(|v| v.as_str())
                    .unwrap_or_default()
                    .to_string(),
                p.metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get("app.kubernetes.io/version"))
                    .cloned()
                    .unwrap_or_default(),
            )
        }
        Ok(list) => (
            format!("{} ClusterPolicies", list.items.len()),
            String::new(),
        ),
        Err(kube::Error::Api(e)) if e.code == 404 => ("absent".into(), String::new()),
        Err(e) => return Err(operation("reading the ClusterPolicy", e)),
    };
    let stale = stale_driver_pods(kube, &gpu_names).await?;
    Ok(Snapshot {
        judgement,
        identities,
        operator_state,
        operator_version,
        stale,
    })
}

fn generation_label(pod: &Pod) -> i64 {
    pod.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(TEMPLATE_GENERATION))
        .and_then(|g| g.parse().ok())
        .unwrap_or(0)
}

fn owned_by(pod: &Pod, uid: &str) -> bool {
    pod.metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.uid == uid)
}

/// The driver DaemonSet's pods on GPU nodes whose template generation is not its current one.
async fn stale_driver_pods(
    kube: &ClusterClient,
    gpu_nodes: &[&str],
) -> Result<Vec<StalePod>, MigFinding> {
    let sets: Api<DaemonSet> = Api::namespaced(kube.kube().clone(), OPERATOR_NAMESPACE);
    let Some(ds) = sets
        .get_opt(DRIVER_DAEMON_SET)
        .await
        .map_err(|e| operation("reading the driver DaemonSet", e))?
    else {
        return Ok(Vec::new());
    };
    let current = ds.metadata.generation.unwrap_or(1);
    let uid = ds.metadata.uid.clone().unwrap_or_default();
    let on_delete = ds
        .spec
        .as_ref()
        .and_then(|s| s.update_strategy.as_ref())
        .and_then(|u| u.type_.as_deref())
        == Some("OnDelete");
    let pods: Api<Pod> = Api::namespaced(kube.kube().clone(), OPERATOR_NAMESPACE);
    let list = pods
        .list(&ListParams::default())
        .await
        .map_err(|e| operation("listing driver pods", e))?;
    let mut out: Vec<StalePod> = list
        .items
        .iter()
        .filter(|p| owned_by(p, &uid) && generation_label(p) != current)
        .filter_map(|p| {
            let node = p.spec.as_ref()?.node_name.clone()?;
            gpu_nodes.contains(&node.as_str()).then(|| StalePod {
                node,
                pod: p.metadata.name.clone().unwrap_or_default(),
                uid: p.metadata.uid.clone().unwrap_or_default(),
                generation: generation_label(p),
                current,
                on_delete,
            })
        })
        .collect();
    out.sort_by(|a, b| a.node.cmp(&b.node));
    Ok(out)
}

/// Pods on `node` that hold GPUs or MIG slices and are not the GPU stack's own.
async fn application_gpu_pods(kube: &ClusterClient, node: &str) -> Result<usize, MigFinding> {
    let pods: Api<Pod> = Api::all(kube.kube().clone());
    let list = pods
        .list(&ListParams::default().fields(&format!("spec.nodeName={node}")))
        .await
        .map_err(|e| operation("listing the node's pods", e))?;
    Ok(list
        .items
        .iter()
        .filter(|p| {
            let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
            let system = p.metadata.namespace.as_deref() == Some(OPERATOR_NAMESPACE)
                || p.metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .any(|o| o.kind == "DaemonSet");
            let holds_gpu = p.spec.iter().flat_map(|s| &s.containers).any(|c| {
                let r = c.resources.as_ref();
                r.and_then(|r| r.limits.as_ref())
                    .into_iter()
                    .chain(r.and_then(|r| r.requests.as_ref()))
                    .flat_map(|m| m.keys())
                    .any(|k| k == "nvidia.com/gpu" || k.starts_with("nvidia.com/mig-"))
            });
            !matches!(phase, Some("Succeeded" | "Failed")) && !system && holds_gpu
        })
        .count())
}

async fn set_unschedulable(kube: &ClusterClient, node: &str, on: bool) -> Result<(), MigFinding> {
    let nodes: Api<KubeNode> = Api::all(kube.kube().clone());
    nodes
        .patch(
            node,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"unschedulable": on}})),
        )
        .await
        .map(drop)
        .map_err(|e| operation("changing the node's scheduling", e))
}

/// Replaces one stale OnDelete driver pod as maintenance: never while an application holds
/// the node's GPUs; the node cordoned meanwhile and its scheduling restored after.
async fn replace_stale(
    kube: &ClusterClient,
    stale: &StalePod,
    deadline: Instant,
) -> Result<(), MigFinding> {
    let busy = |n: usize| {
        MigFinding::node(
            MigProblem::StaleDriverPod,
            &stale.node,
            format!(
                "{n} application GPU pod(s) run there; the stale driver pod is left for a maintenance window"
            ),
        )
    };
    let running = application_gpu_pods(kube, &stale.node).await?;
    if running > 0 {
        return Err(busy(running));
    }
    let nodes: Api<KubeNode> = Api::all(kube.kube().clone());
    let before = nodes
        .get(&stale.node)
        .await
        .map_err(|e| operation("reading the node", e))?;
    let was_cordoned = before.spec.as_ref().and_then(|s| s.unschedulable) == Some(true);
    if !was_cordoned {
        set_unschedulable(kube, &stale.node, true).await?;
    }
    let result = replace_cordoned(kube, stale, deadline).await;
    if !was_cordoned {
        set_unschedulable(kube, &stale.node, false).await?;
    }
    result.map_err(|e| match e {
        Replace::Busy(n) => busy(n),
        Replace::Failed(f) => f,
    })
}

enum Replace {
    Busy(usize),
    Failed(MigFinding),
}

async fn replace_cordoned(
    kube: &ClusterClient,
    stale: &StalePod,
    deadline: Instant,
) -> Result<(), Replace> {
    let running = application_gpu_pods(kube, &stale.node)
        .await
        .map_err(Replace::Failed)?;
    if running > 0 {
        return Err(Replace::Busy(running));
    }
    let pods: Api<Pod> = Api::namespaced(kube.kube().clone(), OPERATOR_NAMESPACE);
    pods.delete(
        &stale.pod,
        &DeleteParams::default().preconditions(kube::api::Preconditions {
            uid: Some(stale.uid.clone()),
            resource_version: None,
        }),
    )
    .await
    .map_err(|e| Replace::Failed(operation("deleting the stale driver pod", e)))?;
    loop {
        let list = pods
            .list(&ListParams::default().fields(&format!("spec.nodeName={}", stale.node)))
            .await
            .map_err(|e| Replace::Failed(operation("listing driver pods", e)))?;
        let replaced = list.items.iter().any(|p| {
            p.metadata.uid.as_deref() != Some(stale.uid.as_str())
                && generation_label(p) == stale.current
                && p.metadata
                    .labels
                    .as_ref()
                    .is_some_and(|l| l.contains_key(TEMPLATE_GENERATION))
                && p.status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .into_iter()
                    .flatten()
                    .any(|c| c.type_ == "Ready" && c.status == "True")
        });
        if replaced {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(Replace::Failed(MigFinding::node(
                MigProblem::StaleDriverPod,
                &stale.node,
                "the replacement driver pod was not Ready before the timeout".into(),
            )));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The MIG probe on every GPU node; its evidence counts only from the pod that was sent, on
/// its node and boot, with the image by digest.
async fn probe(
    workload: &mut Workload,
    run: &RunContext,
    snapshot: &Snapshot,
    nodes: &[Node],
    timeout: Duration,
) -> (Vec<MigHardware>, CudaSmoke, Vec<MigFinding>) {
    let mut findings = Vec::new();
    let mut names = Vec::new();
    let mut sent = Vec::new();
    for (j, row) in snapshot.judgement.nodes.iter().enumerate() {
        let pod = run.mig_pod(j, &row.name, &row.capacity);
        if let Err(e) = workload.create_pod(&pod, Purpose::Probe).await {
            findings.push(operation("creating the MIG probe", e));
            return (Vec::new(), CudaSmoke::NotRun, findings);
        }
        names.push(pod.metadata.name.clone().unwrap_or_default());
        sent.push((row.name.clone(), pod));
    }
    let runs = workload.wait_pods(&names, timeout, timeout).await;
    let mut hardware = Vec::new();
    let mut slices = 0;
    let mut failed = false;
    for (run_, (node_name, pod)) in runs.iter().zip(&sent) {
        let invalid =
            |why: String| MigFinding::node(MigProblem::MigEvidenceInvalid, node_name, why);
        let log = match &run_.end {
            PodEnd::Succeeded(log) => log,
            other => {
                findings.push(invalid(format!("the MIG probe did not succeed: {other:?}")));
                continue;
            }
        };
        let node = nodes.iter().find(|n| &n.name == node_name);
        let evidence: MigEvidence = match parse_mig(log) {
            Ok(e) => e,
            Err(e) => {
                findings.push(invalid(e.to_string()));
                continue;
            }
        };
        let proven = run_.node_name == pinned_node(pod)
            && image_digest(&run_.image_id) == image_digest(&run.image)
            && node.is_some_and(|n| evidence.node_name == n.name && evidence.boot_id == n.boot_id);
        if !proven {
            findings.push(invalid("evidence from another node, boot or image".into()));
            continue;
        }
        let want_gpus = node
            .and_then(|n| n.labels.get(super::mig_report::GPU_COUNT_LABEL))
            .and_then(|g| g.parse::<usize>().ok())
            .unwrap_or(0);
        if evidence.gpus.len() != want_gpus {
            findings.push(MigFinding::node(
                MigProblem::MigLayoutMismatch,
                node_name,
                format!(
                    "the driver reports {} GPU(s), the node {want_gpus}",
                    evidence.gpus.len()
                ),
            ));
        }
        for gpu in &evidence.gpus {
            hardware.push(MigHardware {
                node: node_name.clone(),
                gpu_index: gpu.index,
                mig_mode: gpu.mig_mode.as_report().into(),
                instances: gpu.instances.clone(),
            });
        }
        for s in &evidence.slices {
            slices += 1;
            if s.vectoradd != VectorAdd::Passed {
                failed = true;
                findings.push(MigFinding::node(
                    MigProblem::CudaSmokeFailed,
                    node_name,
                    format!(
                        "vectorAdd {:?} on GPU {} slice {} ({})",
                        s.vectoradd, s.gpu_index, s.instance, s.profile
                    ),
                ));
            }
        }
    }
    let complete = findings.is_empty() && runs.len() == snapshot.judgement.nodes.len();
    let smoke = if failed {
        CudaSmoke::Failed
    } else if complete && slices > 0 {
        CudaSmoke::Passed
    } else {
        CudaSmoke::NotRun
    };
    (hardware, smoke, findings)
}
