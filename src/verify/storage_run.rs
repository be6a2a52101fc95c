//! `verify-storage` end to end (fleet-engine §7.1): for each selected target, its identity is
//! proven before anything is created; its workers and the filestore's CSI are checked as the
//! API states them; the host phase runs a probe pinned to every worker, the shared phase one
//! per worker on a single RWX claim; cleanup always runs (also when a phase failed or the run
//! was interrupted) and its result is proven, down to the probe paths and the claim's backing
//! directory; and the workers must be the same ones, with the same boot IDs, at the end.
//! Each target's public report comes from these typed results; the exact receipts (node names,
//! raw evidence, notes) go only to the private evidence directory, named by their hash.

use std::collections::BTreeSet;
use std::path::PathBuf;

use futures_util::StreamExt;
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::storage::v1::{CSIDriver, CSINode, StorageClass};
use kube::api::{Api, ListParams};
use serde::Serialize;
use sha2::{Digest, Sha256};
use tokio::sync::watch;

use super::cluster_checks::{CsiState, Pool, judge_csi, judge_workers};
use super::evidence_dir::{EvidenceDir, EvidenceDirError};
use super::identity::prove;
use super::json;
use super::manifests::RunContext;
use super::options::StorageOptions;
use super::select::{SelectError, select_targets, storage_skipped};
use super::storage_report::{Category, CleanupReport, ClusterReport, Role, StorageReport};
use super::workload::Workload;
use crate::cloud::domain::Cloud;
use crate::clusters::{ClusterClient, Node};
use crate::engine::addons::CSI_STORAGE_CLASS;
use crate::engine::ops::{Event, Outcome, Progress};
use crate::spec::{ClusterSpec, FleetSpec};
use crate::store::InventoryStore;

/// The filestore's CSI driver.
pub const CSI_DRIVER: &str = "mounted-fs-path.csi.nebius.ai";
const CSI_NAMESPACE: &str = "kube-system";
const CSI_DAEMON_SET: &str = "csi-mounted-fs-path-node";
/// Where the driver keeps a volume's data, relative to the filesystem's root.
pub(super) const BACKING_DIR: &str = "csi-mounted-fs-path-data";

/// Why a verification could not run at all (its report is then the "unavailable" document).
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error(transparent)]
    Select(#[from] SelectError),
    #[error(transparent)]
    Evidence(#[from] EvidenceDirError),
    #[error("the inventory cannot be read: {0}")]
    Store(String),
    #[error("the probe image must be named by digest (name@sha256:<64 hex>), not {0:?}")]
    Image(String),
}

/// A finished run: the public report, and where the private receipts are.
#[derive(Debug)]
pub struct StorageRun {
    pub report: StorageReport,
    pub receipts: Option<PathBuf>,
}

/// The image's digest, when it is named by one.
pub fn image_digest(image: &str) -> Option<&str> {
    let (_, digest) = image.rsplit_once("@sha256:")?;
    (digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_hexdigit())).then_some(digest)
}

/// What one worker was, as the API said: compared before and after.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(super) struct WorkerIdentity {
    name: String,
    uid: String,
    boot_id: String,
}

fn identities(nodes: &[Node]) -> Vec<WorkerIdentity> {
    let mut out: Vec<WorkerIdentity> = nodes
        .iter()
        .map(|n| WorkerIdentity {
            name: n.name.clone(),
            uid: n.uid.clone(),
            boot_id: n.boot_id.clone(),
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// The private receipt of one target: everything the public report leaves out.
#[derive(Debug, Default, Serialize)]
pub(super) struct Receipt {
    pub(super) schema: &'static str,
    pub(super) fleet: String,
    pub(super) project_key: String,
    pub(super) cluster: String,
    pub(super) run_id: String,
    pub(super) workers_before: Vec<WorkerIdentity>,
    pub(super) workers_after: Vec<WorkerIdentity>,
    pub(super) host_evidence: Vec<String>,
    pub(super) shared_evidence: Vec<String>,
    pub(super) path_evidence: Vec<String>,
    pub(super) notes: Vec<String>,
    pub(super) failures: Vec<Category>,
}

/// One target's run, as it goes.
pub(super) struct TargetRun<'a> {
    pub(super) run: RunContext,
    pub(super) spec: &'a ClusterSpec,
    pub(super) options: &'a StorageOptions,
    pub(super) failures: BTreeSet<Category>,
    pub(super) receipt: Receipt,
    /// Node order: by role, then name; the public indexes.
    pub(super) nodes: Vec<(Node, Role)>,
    pub(super) host: Vec<BTreeSet<Category>>,
    pub(super) shared: Vec<bool>,
    pub(super) absent: Vec<bool>,
    /// The claim's volume handle, once bound.
    pub(super) volume_handle: Option<String>,
    pub(super) cleanup: CleanupReport,
}

/// What every verification run checks and reads before its first target: the probe image
/// is named by digest, the selectors select, the receipt directory exists, the inventory reads.
pub(super) struct RunStart {
    pub selection: super::select::Selection,
    pub evidence: Option<EvidenceDir>,
    pub records: Vec<crate::store::TargetRecord>,
}

impl RunStart {
    pub(super) async fn begin<S: InventoryStore>(
        store: &S,
        spec: &FleetSpec,
        probe_image: &str,
        [only_projects, only_clusters]: [&[String]; 2],
        project_prefix: &str,
        evidence_dir: Option<&std::path::Path>,
    ) -> Result<RunStart, VerifyError> {
        if image_digest(probe_image).is_none() {
            return Err(VerifyError::Image(probe_image.to_string()));
        }
        let selection = select_targets(spec, only_projects, only_clusters, project_prefix)?;
        let evidence = evidence_dir.map(EvidenceDir::create).transpose()?;
        let records = store
            .targets(&spec.name)
            .await
            .map_err(|e| VerifyError::Store(e.to_string()))?;
        Ok(RunStart {
            selection,
            evidence,
            records,
        })
    }
}

/// Verifies the selected targets' shared storage.
pub async fn verify_storage<C: Cloud, S: InventoryStore>(
    cloud: &C,
    store: &S,
    spec: &FleetSpec,
    options: &StorageOptions,
    progress: Progress,
    interrupt: watch::Receiver<bool>,
) -> Result<StorageRun, VerifyError> {
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
    let mut targets = Vec::new();
    for (index, &(pi, ci)) in selection.targets.iter().enumerate() {
        let (progress, interrupt) = (progress.clone(), interrupt.clone());
        let (records, evidence) = (&records, &evidence);
        targets.push(async move {
            let project = &spec.projects[pi];
            let cluster = &project.clusters[ci];
            let key = project.key();
            if storage_skipped(cluster) {
                progress(&Event::done(
                    format_args!("{key}/{}", cluster.name),
                    Outcome::Skipped("filesystem off".into()),
                ));
                return Ok((index, ClusterReport::skipped(index)));
            }
            progress(&Event::step(
                format_args!("{key}/{}", cluster.name),
                "verifying storage",
            ));
            let mut target = TargetRun::new(spec, pi, ci, options);
            let proven = prove(
                cloud,
                records,
                spec,
                pi,
                ci,
                options.tenant.as_deref(),
                options.kubeconfigs.as_ref(),
            )
            .await;
            match proven {
                Err(e) => {
                    target.failures.insert(Category::TargetIdentityFailed);
                    target.receipt.notes.push(e.to_string());
                }
                Ok(proven) => match ClusterClient::connect(&proven.access).await {
                    Ok(kube) => target.verify(&kube, interrupt).await,
                    Err(e) => {
                        target
                            .failures
                            .insert(Category::VerificationOperationFailed);
                        target.receipt.notes.push(format!("connecting: {e}"));
                    }
                },
            }
            let (mut report, receipt) = target.finish(index);
            let bytes = json::pretty_sorted(&receipt).into_bytes();
            report.evidence_sha256 = match evidence {
                Some(dir) => dir.write(index, &bytes)?,
                None => hex::encode(Sha256::digest(&bytes)),
            };
            progress(&Event::done(
                format_args!("{key}/{}", cluster.name),
                Outcome::Verified {
                    kind: "storage",
                    passed: report.clone().conclude().passed,
                },
            ));
            Ok::<_, VerifyError>((index, report))
        });
    }
    // Targets are independent (each its own cluster and pods); reports keep selection order.
    let mut runs = futures_util::stream::iter(targets)
        .buffer_unordered(options.concurrency.max(1))
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect::<Result<Vec<_>, _>>()?;
    runs.sort_by_key(|(index, _)| *index);
    let clusters: Vec<ClusterReport> = runs.into_iter().map(|(_, report)| report).collect();
    Ok(StorageRun {
        report: StorageReport::from_clusters(clusters),
        receipts: evidence.map(|d| d.path),
    })
}

fn pools(spec: &ClusterSpec) -> Vec<Pool> {
    [(Role::Cpu, &spec.cpu_nodes), (Role::Gpu, &spec.gpu_nodes)]
        .into_iter()
        .filter_map(|(role, pool)| {
            let p = pool.as_ref()?;
            Some(Pool {
                role,
                platform: p.platform.clone(),
                preset: p.preset.clone(),
                count: p.count,
            })
        })
        .collect()
}

async fn csi_state(kube: &ClusterClient) -> Result<CsiState, kube::Error> {
    let client = kube.kube().clone();
    let classes = Api::<StorageClass>::all(client.clone())
        .list(&ListParams::default())
        .await?;
    let driver = Api::<CSIDriver>::all(client.clone())
        .get_opt(CSI_DRIVER)
        .await?;
    let csi_nodes = Api::<CSINode>::all(client.clone())
        .list(&ListParams::default())
        .await?;
    let daemon_set = Api::<DaemonSet>::namespaced(client.clone(), CSI_NAMESPACE)
        .get_opt(CSI_DAEMON_SET)
        .await?;
    let selector = daemon_set
        .as_ref()
        .and_then(|d| d.spec.as_ref()?.selector.match_labels.clone())
        .unwrap_or_default()
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",");
    let pods = if selector.is_empty() {
        Vec::new()
    } else {
        Api::<Pod>::namespaced(client, CSI_NAMESPACE)
            .list(&ListParams::default().labels(&selector))
            .await?
            .items
    };
    Ok(CsiState {
        storage_classes: classes.items.iter().map(value).collect(),
        driver_registered: driver.is_some(),
        registrations: csi_nodes
            .items
            .iter()
            .map(|n| {
                (
                    n.metadata.name.clone().unwrap_or_default(),
                    n.spec.drivers.iter().map(|d| d.name.clone()).collect(),
                )
            })
            .collect(),
        daemon_set: daemon_set.as_ref().map(value),
        pods: pods.iter().map(value).collect(),
    })
}

/// Any API object as JSON, for the checks that read it so.
fn value<T: Serialize>(object: &T) -> serde_json::Value {
    serde_json::to_value(object).unwrap_or_default()
}

pub(super) fn new_run_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..12].to_string()
}

/// Waits for `interrupt` to turn true (never, if its sender is gone).
pub(super) async fn interrupted(mut interrupt: watch::Receiver<bool>) {
    if interrupt.wait_for(|i| *i).await.is_err() {
        std::future::pending::<()>().await;
    }
}

impl<'a> TargetRun<'a> {
    fn new(
        spec: &'a FleetSpec,
        pi: usize,
        ci: usize,
        options: &'a StorageOptions,
    ) -> TargetRun<'a> {
        let project = &spec.projects[pi];
        let cluster = &project.clusters[ci];
        let run = RunContext {
            kind: "storage",
            run_id: new_run_id(),
            namespace: options.namespace.clone(),
            image: options.probe_image.clone(),
            mount_path: cluster.filestore_mount_path.clone(),
            mount_tag: cluster.filestore_mount_tag.clone(),
        };
        TargetRun {
            receipt: Receipt {
                schema: "fleetbot.verify.storage.receipt/v1",
                fleet: spec.name.clone(),
                project_key: project.key(),
                cluster: cluster.name.clone(),
                run_id: run.run_id.clone(),
                ..Receipt::default()
            },
            run,
            spec: cluster,
            options,
            failures: BTreeSet::new(),
            nodes: Vec::new(),
            host: Vec::new(),
            shared: Vec::new(),
            absent: Vec::new(),
            volume_handle: None,
            cleanup: CleanupReport::default(),
        }
    }

    pub(super) fn note(&mut self, category: Category, note: String) {
        self.failures.insert(category);
        self.receipt.notes.push(note);
    }

    /// Everything after identity, with cleanup always last.
    async fn verify(&mut self, kube: &ClusterClient, interrupt: watch::Receiver<bool>) {
        let before = match kube.nodes().await {
            Ok(nodes) => nodes,
            Err(e) => {
                return self.note(
                    Category::VerificationOperationFailed,
                    format!("listing nodes: {e}"),
                );
            }
        };
        let (worker_failures, roles) = judge_workers(&before, &pools(self.spec));
        self.receipt.workers_before = identities(&before);
        self.failures.extend(worker_failures);
        match csi_state(kube).await {
            Ok(state) => {
                self.failures
                    .extend(judge_csi(&state, &before, CSI_STORAGE_CLASS, CSI_DRIVER));
            }
            Err(e) => self.note(
                Category::VerificationOperationFailed,
                format!("reading the CSI: {e}"),
            ),
        }
        if !self.failures.is_empty() {
            // Nothing is created on a cluster whose workers or CSI are not as declared.
            return;
        }
        let mut nodes: Vec<(Node, Role)> = before
            .iter()
            .cloned()
            .zip(roles)
            .filter_map(|(n, r)| Some((n, r?)))
            .collect();
        nodes.sort_by(|a, b| (a.1 == Role::Gpu, &a.0.name).cmp(&(b.1 == Role::Gpu, &b.0.name)));
        self.nodes = nodes;
        let mut workload = Workload::new(
            kube.kube().clone(),
            &self.run.namespace,
            &self.run.selector(),
        );
        tokio::select! {
            () = self.phases(&mut workload) => {}
            () = interrupted(interrupt) => {
                self.note(Category::VerificationInterrupted, "interrupted: cleaning up".into());
            }
        }
        let cleanup = workload.cleanup(self.options.cleanup_timeout).await;
        self.prove_paths_absent(&mut workload).await;
        let last = workload.cleanup(self.options.cleanup_timeout).await;
        self.failures
            .extend(cleanup.failures.iter().chain(&last.failures).copied());
        self.receipt
            .notes
            .extend(cleanup.notes.into_iter().chain(last.notes));
        self.cleanup.pods_removed = cleanup.pods_removed + last.pods_removed;
        self.cleanup.claims_removed = cleanup.claims_removed;
        match kube.nodes().await {
            Ok(after) => {
                self.receipt.workers_after = identities(&after);
                if self.receipt.workers_after != self.receipt.workers_before {
                    self.note(
                        Category::StaleWorkerEvidence,
                        "the workers changed during the run".into(),
                    );
                }
            }
            Err(e) => self.note(
                Category::StaleWorkerEvidence,
                format!("listing nodes after: {e}"),
            ),
        }
    }
}
