//! `verify-graphics` end to end (fleet-engine §7.2): each selected target must be a valid
//! RTX rendering target (else `invalid_graphics_target`, and nothing is created); its identity
//! is proven as for storage; its GPU workers must advertise their GPUs steadily for the
//! stabilization time; then fleetbot's graphics probe runs pinned to every GPU worker, holding
//! all its GPUs, and what it prints (CUDA vectorAdd, GLX, EGL, Vulkan) is judged. Cleanup always
//! runs and must be proven, or the target fails. Targets run `concurrency` at a time.

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde::Serialize;
use sha2::{Digest, Sha256};
use tokio::sync::watch;

use super::graphics_report::{
    GraphicsCategory, GraphicsClusterReport, GraphicsReport, judge_graphics, validate_target,
};
use super::identity::prove;
use super::json;
use super::manifests::{RunContext, pinned_node};
use super::options::GraphicsOptions;
use super::storage_run::{RunStart, VerifyError, image_digest, interrupted, new_run_id};
use super::workload::{PodEnd, Purpose, Workload};
use crate::cloud::domain::Cloud;
use crate::clusters::{ClusterClient, Node};
use crate::engine::ops::{Event, Outcome, Progress};
use crate::probe::{EvidenceError, GraphicsEvidence, parse_graphics};
use crate::spec::{ClusterSpec, FleetSpec, gpus_per_node};
use crate::store::{InventoryStore, TargetRecord};

/// The private receipt of one target.
#[derive(Debug, Default, Serialize)]
struct Receipt {
    schema: &'static str,
    fleet: String,
    project_key: String,
    cluster: String,
    run_id: String,
    gpu_workers: Vec<String>,
    evidence: Vec<String>,
    notes: Vec<String>,
}

/// The finished run.
#[derive(Debug)]
pub struct GraphicsRun {
    pub report: GraphicsReport,
    pub receipts: Option<std::path::PathBuf>,
}

/// Verifies the selected targets' graphics stack on every GPU worker.
pub async fn verify_graphics<C: Cloud, S: InventoryStore>(
    cloud: &C,
    store: &S,
    spec: &FleetSpec,
    options: &GraphicsOptions,
    progress: Progress,
    interrupt: watch::Receiver<bool>,
) -> Result<GraphicsRun, VerifyError> {
    let RunStart {
        selection,
        evidence,
        records,
    } = RunStart::begin(
        store,
        spec,
        &options.probe_image,
        [&options.only_projects, &options.only_clusters],
        &options.project_prefix,
        options.evidence_dir.as_deref(),
    )
    .await?;
    let mut futures = Vec::new();
    for (index, &(pi, ci)) in selection.targets.iter().enumerate() {
        let (records, progress, interrupt) = (&records, progress.clone(), interrupt.clone());
        let target: std::pin::Pin<Box<dyn std::future::Future<Output = _> + Send + '_>> =
            Box::pin(async move {
                let key = spec.projects[pi].key();
                let name = &spec.projects[pi].clusters[ci].name;
                progress(&Event::step(
                    format_args!("{key}/{name}"),
                    "verifying graphics",
                ));
                let (failures, judged, receipt) =
                    verify_target(cloud, records, spec, pi, ci, options, interrupt).await;
                let passed =
                    failures.is_empty() && judged.as_ref().is_some_and(|j| j.failures.is_empty());
                progress(&Event::done(
                    format_args!("{key}/{name}"),
                    Outcome::Verified {
                        kind: "graphics",
                        passed,
                    },
                ));
                (index, failures, judged, receipt)
            });
        futures.push(target);
    }
    let runs = futures_util::stream::iter(futures)
        .buffer_unordered(options.concurrency.max(1))
        .collect::<Vec<_>>()
        .await;
    let mut clusters = Vec::new();
    let mut runs = runs;
    runs.sort_by_key(|r| r.0);
    for (index, failures, judged, receipt) in runs {
        let bytes = json::pretty_sorted(&receipt).into_bytes();
        let digest = match &evidence {
            Some(dir) => dir.write(index, &bytes)?,
            None => hex::encode(Sha256::digest(&bytes)),
        };
        clusters.push(match judged {
            Some(mut judgement) => {
                judgement.failures.extend(failures);
                GraphicsClusterReport::judged(index, judgement, digest)
            }
            None => GraphicsClusterReport::failed(index, failures, digest),
        });
    }
    Ok(GraphicsRun {
        report: GraphicsReport::from_clusters(clusters),
        receipts: evidence.map(|d| d.path),
    })
}

type Judged = Option<super::graphics_report::GraphicsJudgement>;

/// One target: (failures outside the judgement, the judgement of its evidence, its receipt).
async fn verify_target<C: Cloud>(
    cloud: &C,
    records: &[TargetRecord],
    spec: &FleetSpec,
    pi: usize,
    ci: usize,
    options: &GraphicsOptions,
    interrupt: watch::Receiver<bool>,
) -> (Vec<GraphicsCategory>, Judged, Receipt) {
    let project = &spec.projects[pi];
    let c = &project.clusters[ci];
    let run = RunContext {
        kind: "graphics",
        run_id: new_run_id(),
        namespace: options.namespace.clone(),
        image: options.probe_image.clone(),
        mount_path: String::new(),
        mount_tag: String::new(),
    };
    let mut receipt = Receipt {
        schema: "fleetbot.verify.graphics.receipt/v1",
        fleet: spec.name.clone(),
        project_key: project.key(),
        cluster: c.name.clone(),
        run_id: run.run_id.clone(),
        ..Receipt::default()
    };
    let gpu = c.gpu_nodes.clone().unwrap_or_default();
    let per_node = gpus_per_node(&gpu.preset);
    if !validate_target(
        &c.gpu_workload_profile,
        gpu.count,
        per_node,
        &c.resolved_gpu_driver_mode(),
    ) {
        receipt
            .notes
            .push("not an RTX rendering target with 8 GPUs per node in operator mode".into());
        return (vec![GraphicsCategory::InvalidGraphicsTarget], None, receipt);
    }
    let proven = match prove(
        cloud,
        records,
        spec,
        pi,
        ci,
        options.tenant.as_deref(),
        options.kubeconfigs.as_ref(),
    )
    .await
    {
        Ok(p) => p,
        Err(e) => {
            receipt.notes.push(e.to_string());
            return (vec![GraphicsCategory::TargetIdentityFailed], None, receipt);
        }
    };
    let kube = match ClusterClient::connect(&proven.access).await {
        Ok(k) => k,
        Err(e) => {
            receipt.notes.push(format!("connecting: {e}"));
            return (
                vec![GraphicsCategory::VerificationOperationFailed],
                None,
                receipt,
            );
        }
    };
    let timeout = options.kind.timeout.unwrap_or(Duration::from_secs(
        u64::try_from(c.gpu_health_timeout_minutes.max(1)).unwrap_or(60) * 60,
    ));
    let stabilization = options.kind.stabilization.unwrap_or(Duration::from_secs(
        u64::try_from(c.gpu_health_stabilization_seconds).unwrap_or(0),
    ));
    let began = Instant::now();
    let workers = match steady_gpu_workers(&kube, c, per_node, stabilization, timeout).await {
        Ok(w) => w,
        Err(note) => {
            receipt.notes.push(note);
            return (vec![GraphicsCategory::GpuHealthFailed], None, receipt);
        }
    };
    receipt.gpu_workers = workers.iter().map(|n| n.name.clone()).collect();
    let mut workload = Workload::new(kube.kube().clone(), &run.namespace, &run.selector());
    let mut failures = Vec::new();
    let left = timeout
        .saturating_sub(began.elapsed())
        .max(Duration::from_secs(1));
    let mut evidence: Vec<Result<GraphicsEvidence, EvidenceError>> =
        vec![Err(EvidenceError::Missing); workers.len()];
    tokio::select! {
        () = probe(&mut workload, &run, &workers, per_node, left, &mut evidence, &mut receipt) => {}
        () = interrupted(interrupt) => {
            failures.push(GraphicsCategory::VerificationInterrupted);
            receipt.notes.push("interrupted: cleaning up".into());
        }
    }
    let cleanup = workload.cleanup(options.cleanup_timeout).await;
    if !cleanup.failures.is_empty() {
        failures.push(GraphicsCategory::VerificationOperationFailed);
        receipt.notes.extend(cleanup.notes);
    }
    let judged = judge_graphics(usize::try_from(gpu.count).unwrap_or(0), &evidence, per_node);
    (failures, Some(judged), receipt)
}

/// The GPU pool's workers, once each has advertised exactly its GPUs, Ready, for the whole
/// stabilization time.
async fn steady_gpu_workers(
    kube: &ClusterClient,
    c: &ClusterSpec,
    per_node: i64,
    stabilization: Duration,
    timeout: Duration,
) -> Result<Vec<Node>, String> {
    let gpu = c.gpu_nodes.clone().unwrap_or_default();
    let began = Instant::now();
    let mut steady_since: Option<(Instant, Vec<(String, String)>)> = None;
    loop {
        let nodes = kube
            .nodes()
            .await
            .map_err(|e| format!("listing nodes: {e}"))?;
        let mut workers: Vec<Node> = nodes
            .into_iter()
            .filter(|n| {
                n.labels.get("node.kubernetes.io/instance-type") == Some(&gpu.platform)
                    && n.labels.get("nebius.com/resource-preset") == Some(&gpu.preset)
            })
            .collect();
        workers.sort_by(|a, b| a.name.cmp(&b.name));
        let healthy = workers.len() as i64 == gpu.count
            && workers.iter().all(|n| {
                n.ready && n.allocatable.get("nvidia.com/gpu") == Some(&per_node.to_string())
            });
        let identity: Vec<(String, String)> = workers
            .iter()
            .map(|n| (n.uid.clone(), n.boot_id.clone()))
            .collect();
        steady_since = match steady_since {
            Some((since, same)) if healthy && same == identity => Some((since, same)),
            _ if healthy => Some((Instant::now(), identity)),
            _ => None,
        };
        if let Some((since, _)) = &steady_since
            && since.elapsed() >= stabilization
        {
            return Ok(workers);
        }
        if began.elapsed() >= timeout {
            return Err(format!(
                "{} of {} GPU workers ready with {per_node} GPUs each, not steadily for {}s",
                workers.iter().filter(|n| n.ready).count(),
                gpu.count,
                stabilization.as_secs()
            ));
        }
        tokio::time::sleep(
            Duration::from_millis(500).min(stabilization.max(Duration::from_millis(100))),
        )
        .await;
    }
}

/// Runs the probe on every worker and keeps what each printed, when it is proven to be the
/// probe that was sent, by digest, on its worker and boot.
async fn probe(
    workload: &mut Workload,
    run: &RunContext,
    workers: &[Node],
    per_node: i64,
    timeout: Duration,
    evidence: &mut [Result<GraphicsEvidence, EvidenceError>],
    receipt: &mut Receipt,
) {
    let mut names = Vec::new();
    let mut sent = Vec::new();
    for (j, node) in workers.iter().enumerate() {
        let pod = run.graphics_pod(j, &node.name, per_node);
        if let Err(e) = workload.create_pod(&pod, Purpose::Probe).await {
            receipt.notes.push(e);
            break;
        }
        names.push(pod.metadata.name.clone().unwrap_or_default());
        sent.push(pod);
    }
    let runs = workload.wait_pods(&names, timeout, timeout).await;
    for (j, (run_, pod)) in runs.iter().zip(&sent).enumerate() {
        let node = &workers[j];
        let log = match &run_.end {
            PodEnd::Succeeded(log) => log.clone(),
            other => {
                receipt.notes.push(format!("{}: {other:?}", names[j]));
                continue;
            }
        };
        receipt.evidence.push(log.clone());
        let pinned_ok = run_.node_name == pinned_node(pod);
        let image_ok = image_digest(&run_.image_id) == image_digest(&run.image);
        evidence[j] = match parse_graphics(&log) {
            Ok(e)
                if pinned_ok
                    && image_ok
                    && e.node_name == node.name
                    && e.boot_id == node.boot_id =>
            {
                Ok(e)
            }
            Ok(_) => {
                receipt.notes.push(format!(
                    "{}: evidence from another node, boot or image",
                    names[j]
                ));
                Err(EvidenceError::Invalid("node_name"))
            }
            Err(e) => {
                receipt.notes.push(format!("{}: {e}", names[j]));
                Err(e)
            }
        };
    }
}
