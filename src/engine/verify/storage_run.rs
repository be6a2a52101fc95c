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
use std::time::Duration;

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
use super::manifests::{RunContext, command_of, pinned_node};
use super::select::{SelectError, select_targets, storage_skipped};
use super::storage_report::{
    Category, Check, CleanupReport, ClusterReport, ExpectedHost, NodeReport, Role, StorageReport,
    judge_host, judge_shared,
};
use super::workload::{PodEnd, PodRun, Purpose, Workload};
use crate::cloud::domain::Cloud;
use crate::clusters::kubeconfig::KubeconfigMap;
use crate::clusters::{ClusterClient, Node};
use crate::engine::addons::CSI_STORAGE_CLASS;
use crate::engine::ops::Progress;
use crate::probe::{EvidenceError, PathState, parse_host, parse_paths, parse_shared};
use crate::spec::{ClusterSpec, FleetSpec};
use crate::store::InventoryStore;

/// The filestore's CSI driver.
pub const CSI_DRIVER: &str = "mounted-fs-path.csi.nebius.ai";
const CSI_NAMESPACE: &str = "kube-system";
const CSI_DAEMON_SET: &str = "csi-mounted-fs-path-node";
/// Where the driver keeps a volume's data, relative to the filesystem's root.
const BACKING_DIR: &str = "csi-mounted-fs-path-data";

/// How a storage verification runs.
#[derive(Debug, Clone)]
pub struct StorageOptions {
    pub only_projects: Vec<String>,
    pub only_clusters: Vec<String>,
    pub project_prefix: String,
    /// The tenant the profile's credentials belong to.
    pub tenant: Option<String>,
    pub kubeconfigs: Option<KubeconfigMap>,
    /// The probe image, by digest.
    pub probe_image: String,
    pub namespace: String,
    /// A probe pod must be running this soon after it is created.
    pub start_timeout: Duration,
    /// And done this soon.
    pub phase_timeout: Duration,
    pub cleanup_timeout: Duration,
    /// Private receipts go to a fresh directory under here.
    pub evidence_dir: Option<PathBuf>,
}

impl StorageOptions {
    pub fn new(probe_image: &str) -> StorageOptions {
        StorageOptions {
            only_projects: Vec::new(),
            only_clusters: Vec::new(),
            project_prefix: String::new(),
            tenant: None,
            kubeconfigs: None,
            probe_image: probe_image.to_string(),
            namespace: "default".into(),
            start_timeout: Duration::from_secs(300),
            phase_timeout: Duration::from_secs(600),
            cleanup_timeout: Duration::from_secs(300),
            evidence_dir: None,
        }
    }
}

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
struct WorkerIdentity {
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
struct Receipt {
    schema: &'static str,
    fleet: String,
    project_key: String,
    cluster: String,
    run_id: String,
    workers_before: Vec<WorkerIdentity>,
    workers_after: Vec<WorkerIdentity>,
    host_evidence: Vec<String>,
    shared_evidence: Vec<String>,
    path_evidence: Vec<String>,
    notes: Vec<String>,
    failures: Vec<Category>,
}

/// One target's run, as it goes.
struct TargetRun<'a> {
    run: RunContext,
    spec: &'a ClusterSpec,
    options: &'a StorageOptions,
    failures: BTreeSet<Category>,
    receipt: Receipt,
    /// Node order: by role, then name; the public indexes.
    nodes: Vec<(Node, Role)>,
    host: Vec<BTreeSet<Category>>,
    shared: Vec<bool>,
    absent: Vec<bool>,
    /// The claim's volume handle, once bound.
    volume_handle: Option<String>,
    cleanup: CleanupReport,
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
    if image_digest(&options.probe_image).is_none() {
        return Err(VerifyError::Image(options.probe_image.clone()));
    }
    let selection = select_targets(
        spec,
        &options.only_projects,
        &options.only_clusters,
        &options.project_prefix,
    )?;
    let evidence = options
        .evidence_dir
        .as_deref()
        .map(EvidenceDir::create)
        .transpose()?;
    let records = store
        .targets(&spec.name)
        .await
        .map_err(|e| VerifyError::Store(e.to_string()))?;
    let mut clusters = Vec::new();
    for (index, &(pi, ci)) in selection.targets.iter().enumerate() {
        let project = &spec.projects[pi];
        let cluster = &project.clusters[ci];
        if storage_skipped(cluster) {
            progress(&format!(
                "{}/{}: filesystem off, skipped",
                project.key(),
                cluster.name
            ));
            clusters.push(ClusterReport::skipped(index));
            continue;
        }
        progress(&format!(
            "{}/{}: verifying storage",
            project.key(),
            cluster.name
        ));
        let mut target = TargetRun::new(spec, pi, ci, options);
        let proven = prove(
            cloud,
            &records,
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
                Ok(kube) => target.verify(&kube, interrupt.clone()).await,
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
        report.evidence_sha256 = match &evidence {
            Some(dir) => dir.write(index, &bytes)?,
            None => hex::encode(Sha256::digest(&bytes)),
        };
        progress(&format!(
            "{}/{}: storage {}",
            project.key(),
            cluster.name,
            if report.clone().conclude().passed {
                "passed"
            } else {
                "failed"
            }
        ));
        clusters.push(report);
    }
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

fn new_run_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..12].to_string()
}

/// Waits for `interrupt` to turn true (never, if its sender is gone).
async fn interrupted(mut interrupt: watch::Receiver<bool>) {
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

    fn note(&mut self, category: Category, note: String) {
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

/// The shared phase's file of worker `index` (as the probe names it).
fn shared_file(run_id: &str, index: usize) -> String {
    format!("fleetbot-{run_id}-{index}.bin")
}

impl TargetRun<'_> {
    async fn phases(&mut self, workload: &mut Workload) {
        self.host_phase(workload).await;
        self.shared_phase(workload).await;
    }

    fn requested_bytes(&self) -> u64 {
        u64::try_from(self.spec.filestore_disk_size_gibibytes).unwrap_or(0) << 30
    }

    /// Creates one pod per worker and waits for them all; the pods as sent and how they ended.
    async fn run_pods(
        &mut self,
        workload: &mut Workload,
        pods: Vec<Pod>,
        purpose: Purpose,
    ) -> Vec<(Pod, Option<PodRun>)> {
        let mut created = Vec::new();
        for pod in pods {
            match workload.create_pod(&pod, purpose).await {
                Ok(()) => created.push(pod),
                Err(e) => {
                    self.note(Category::WorkloadStartFailed, e);
                    break;
                }
            }
        }
        let names: Vec<String> = created
            .iter()
            .map(|p| p.metadata.name.clone().unwrap_or_default())
            .collect();
        let mut runs = workload
            .wait_pods(
                &names,
                self.options.start_timeout,
                self.options.phase_timeout,
            )
            .await
            .into_iter();
        created.into_iter().map(|p| (p, runs.next())).collect()
    }

    /// What one probe pod printed, when it is proven to be the probe that was sent, by digest,
    /// on the node it was pinned to.
    fn log_of(&mut self, sent: &Pod, run: Option<&PodRun>) -> Option<String> {
        let name = sent.metadata.name.clone().unwrap_or_default();
        let Some(run) = run else {
            self.note(
                Category::WorkloadStartFailed,
                format!("{name}: never created"),
            );
            return None;
        };
        let log = match &run.end {
            PodEnd::Succeeded(log) => Some(log.clone()),
            PodEnd::NeverStarted => {
                self.note(
                    Category::WorkloadStartFailed,
                    format!("{name}: did not start in time"),
                );
                None
            }
            PodEnd::Failed(message) => {
                self.note(Category::WorkloadFailed, format!("{name}: {message}"));
                None
            }
            PodEnd::TimedOut => {
                self.note(
                    Category::WorkloadFailed,
                    format!("{name}: did not finish in time"),
                );
                None
            }
            PodEnd::Gone => {
                self.note(
                    Category::OwnershipMissing,
                    format!("{name}: deleted by someone else"),
                );
                None
            }
            PodEnd::Replaced => {
                self.note(
                    Category::OwnershipMismatch,
                    format!("{name}: replaced by another object"),
                );
                None
            }
        }?;
        let pinned = pinned_node(sent);
        if run.node_name != pinned {
            self.note(
                Category::NodeIdentityMismatch,
                format!("{name}: ran on another node"),
            );
            return None;
        }
        if image_digest(&run.image_id) != image_digest(&self.options.probe_image) {
            self.note(
                Category::ImageDigestMismatch,
                format!("{name}: image {:?}", run.image_id),
            );
            return None;
        }
        if run.pod.as_ref().and_then(command_of) != command_of(sent) {
            self.note(
                Category::ProbeCommandMismatch,
                format!("{name}: its command was changed"),
            );
            return None;
        }
        Some(log)
    }

    async fn host_phase(&mut self, workload: &mut Workload) {
        let bytes = self.requested_bytes();
        let pods: Vec<Pod> = self
            .nodes
            .iter()
            .enumerate()
            .map(|(j, (node, _))| self.run.host_pod(j, &node.name, bytes))
            .collect();
        let runs = self.run_pods(workload, pods, Purpose::Probe).await;
        let nodes = self.nodes.clone();
        for (j, (node, _)) in nodes.iter().enumerate() {
            let (sent, run) = match runs.get(j) {
                Some((sent, run)) => (Some(sent), run.as_ref()),
                None => (None, None),
            };
            let log = sent.and_then(|s| self.log_of(s, run));
            self.receipt
                .host_evidence
                .push(log.clone().unwrap_or_default());
            let evidence = log
                .as_deref()
                .map_or(Err(EvidenceError::Missing), parse_host);
            let expected = ExpectedHost {
                node_name: node.name.clone(),
                boot_id: node.boot_id.clone(),
                requested_gibibytes: bytes >> 30,
            };
            let judged = judge_host(&expected, &evidence);
            self.failures.extend(judged.iter().copied());
            self.host.push(judged);
        }
    }

    async fn shared_phase(&mut self, workload: &mut Workload) {
        let n = self.nodes.len();
        self.shared = vec![false; n];
        let claim = self.run.claim();
        let claim_uid = match workload.create_claim(&claim).await {
            Ok(uid) => uid,
            Err(e) => return self.note(Category::PvcBindingMismatch, e),
        };
        let Some((bound, volume)) = workload
            .wait_bound(&self.run.claim_name(), self.options.start_timeout)
            .await
        else {
            return self.note(
                Category::PvcBindingMismatch,
                "the shared claim did not bind".into(),
            );
        };
        let claim_spec = bound.spec.clone().unwrap_or_default();
        if claim_spec.storage_class_name.as_deref() != Some(CSI_STORAGE_CLASS) {
            self.note(
                Category::PvcDefaultClassMismatch,
                format!("the claim got class {:?}", claim_spec.storage_class_name),
            );
        }
        let modes = bound
            .status
            .as_ref()
            .and_then(|s| s.access_modes.clone())
            .unwrap_or_default();
        if !modes.iter().any(|m| m == "ReadWriteMany") {
            self.note(
                Category::PvcRwxMissing,
                "the claim is not ReadWriteMany".into(),
            );
        }
        let pv = volume.spec.clone().unwrap_or_default();
        if pv.claim_ref.as_ref().and_then(|r| r.uid.as_deref()) != Some(claim_uid.as_str()) {
            self.note(
                Category::VolumeClaimIdentityMismatch,
                "the volume is bound to another claim".into(),
            );
        }
        let csi = pv.csi.clone().unwrap_or_default();
        if csi.driver != CSI_DRIVER || csi.volume_handle.is_empty() {
            self.note(
                Category::VolumeDriverMismatch,
                format!("the volume's driver is {:?}", csi.driver),
            );
        }
        if pv.persistent_volume_reclaim_policy.as_deref() != Some("Delete") {
            self.note(
                Category::VolumeCleanupPolicyMismatch,
                "the volume is not reclaimed on delete".into(),
            );
        }
        if !csi.volume_handle.is_empty() {
            self.volume_handle = Some(csi.volume_handle.clone());
        }
        let wait = self.options.phase_timeout.as_secs().max(1);
        let pods: Vec<Pod> = self
            .nodes
            .iter()
            .enumerate()
            .map(|(j, (node, _))| self.run.shared_pod(j, &node.name, n, wait))
            .collect();
        let runs = self.run_pods(workload, pods, Purpose::ClaimProbe).await;
        let mut evidence = Vec::new();
        for j in 0..n {
            let log = match runs.get(j) {
                Some((sent, run)) => self.log_of(sent, run.as_ref()),
                None => None,
            };
            self.receipt
                .shared_evidence
                .push(log.clone().unwrap_or_default());
            evidence.push(
                log.as_deref()
                    .map_or(Err(EvidenceError::Missing), parse_shared),
            );
        }
        let judged = judge_shared(&evidence);
        let written: std::collections::BTreeMap<usize, String> = evidence
            .iter()
            .filter_map(|e| e.as_ref().ok())
            .map(|e| (e.node_index, e.payload_sha256.clone()))
            .collect();
        for (j, e) in evidence.iter().enumerate() {
            self.shared[j] = e.as_ref().is_ok_and(|e| {
                e.node_index == j && e.read_count == n && e.verified_checksums == written
            }) && !judged.contains(&Category::NonUniquePayloadEvidence);
        }
        self.failures.extend(judged);
        self.check_backing(workload, &written).await;
    }

    /// The claim's data is where the driver keeps it: `csi-mounted-fs-path-data/<handle>`
    /// on the filesystem holds exactly the payloads the workers wrote.
    async fn check_backing(
        &mut self,
        workload: &mut Workload,
        written: &std::collections::BTreeMap<usize, String>,
    ) {
        let (Some(handle), Some((node, _))) =
            (self.volume_handle.clone(), self.nodes.first().cloned())
        else {
            return;
        };
        let dir = format!("{BACKING_DIR}/{handle}");
        let pod = self
            .run
            .paths_pod("backing", 0, &node.name, Some(&dir), &[]);
        let runs = self.run_pods(workload, vec![pod], Purpose::Probe).await;
        let log = runs
            .first()
            .and_then(|(sent, run)| self.log_of(sent, run.as_ref()));
        self.receipt
            .path_evidence
            .push(log.clone().unwrap_or_default());
        let expected: std::collections::BTreeMap<String, String> = written
            .iter()
            .map(|(j, sum)| (shared_file(&self.run.run_id, *j), sum.clone()))
            .collect();
        let listed = log
            .as_deref()
            .map(parse_paths)
            .and_then(Result::ok)
            .and_then(|e| e.listed);
        if listed.as_ref() != Some(&expected) || expected.len() != self.nodes.len() {
            self.note(
                Category::SharedBackingIdentityMismatch,
                "the volume's backing directory does not hold exactly the workers' payloads".into(),
            );
        }
    }

    /// After cleanup: every worker proves the host probe's directory and the claim's backing
    /// directory are gone.
    async fn prove_paths_absent(&mut self, workload: &mut Workload) {
        let n = self.nodes.len();
        self.absent = vec![false; n];
        if n == 0 {
            return;
        }
        let probe_dir = self.run.probe_dir();
        let backing = self
            .volume_handle
            .as_ref()
            .map(|h| format!("{BACKING_DIR}/{h}"));
        let mut paths = vec![probe_dir.clone()];
        paths.extend(backing.clone());
        let pods: Vec<Pod> = self
            .nodes
            .iter()
            .enumerate()
            .map(|(j, (node, _))| self.run.paths_pod("absent", j, &node.name, None, &paths))
            .collect();
        let runs = self.run_pods(workload, pods, Purpose::Probe).await;
        for j in 0..n {
            let log = match runs.get(j) {
                Some((sent, run)) => self.log_of(sent, run.as_ref()),
                None => None,
            };
            self.receipt
                .path_evidence
                .push(log.clone().unwrap_or_default());
            let evidence = log.as_deref().map(parse_paths).and_then(Result::ok);
            let state = |path: &str| {
                evidence
                    .as_ref()
                    .and_then(|e| e.absent.get(path).copied())
                    .unwrap_or(PathState::Unverified)
            };
            let mut ok = true;
            for (path, present, unverified) in [
                (
                    Some(probe_dir.as_str()),
                    Category::ProbeCleanupFailed,
                    Category::ProbeAbsenceUnverified,
                ),
                (
                    backing.as_deref(),
                    Category::BackingCleanupFailed,
                    Category::BackingAbsenceUnverified,
                ),
            ] {
                let Some(path) = path else { continue };
                match state(path) {
                    PathState::Absent => {}
                    PathState::Present => {
                        ok = false;
                        self.note(present, format!("node {j}: {path} is still there"));
                    }
                    PathState::Unverified => {
                        ok = false;
                        self.note(
                            unverified,
                            format!("node {j}: {path} could not be proven gone"),
                        );
                    }
                }
            }
            self.absent[j] = ok;
        }
    }

    /// The public report and the private receipt.
    fn finish(mut self, index: usize) -> (ClusterReport, Receipt) {
        let count = |p: &Option<crate::spec::NodePoolSpec>| {
            p.as_ref()
                .map_or(0, |p| usize::try_from(p.count).unwrap_or(0))
        };
        let cleanup_failed = self.failures.iter().any(|c| {
            matches!(
                c,
                Category::ProbeCleanupFailed
                    | Category::ClaimProbeCleanupFailed
                    | Category::VolumeCleanupFailed
                    | Category::ResourceCleanupFailed
                    | Category::ResourceAbsenceUnverified
            )
        });
        let nodes: Vec<NodeReport> = self
            .nodes
            .iter()
            .enumerate()
            .map(|(j, (_, role))| {
                let host = self.host.get(j);
                let clear =
                    |bad: &[Category]| host.is_some_and(|h| !bad.iter().any(|c| h.contains(c)));
                NodeReport {
                    node_index: j,
                    role: *role,
                    host_mount: Check::of(clear(&[
                        Category::PartialHostEvidence,
                        Category::HostMountMismatch,
                        Category::NodeIdentityMismatch,
                        Category::StaleWorkerEvidence,
                    ])),
                    capacity: Check::of(clear(&[
                        Category::PartialHostEvidence,
                        Category::CapacityMismatch,
                    ])),
                    host_io: Check::of(clear(&[
                        Category::PartialHostEvidence,
                        Category::PartialWriteEvidence,
                        Category::ProbeAbsenceUnverified,
                    ])),
                    shared_visibility: Check::of(self.shared.get(j).copied().unwrap_or(false)),
                    cleanup: Check::of(
                        self.absent.get(j).copied().unwrap_or(false) && !cleanup_failed,
                    ),
                }
            })
            .collect();
        self.cleanup.probe_paths_absent = !self.absent.is_empty() && self.absent.iter().all(|a| *a);
        self.receipt.failures = self.failures.iter().copied().collect();
        let report = ClusterReport {
            target_index: index,
            passed: false,
            skipped: false,
            requested_gibibytes: self.requested_bytes() >> 30,
            cpu_workers: count(&self.spec.cpu_nodes),
            gpu_workers: count(&self.spec.gpu_nodes),
            nodes,
            failures: self.failures.into_iter().collect(),
            evidence_sha256: String::new(),
            cleanup: self.cleanup,
        };
        (report, self.receipt)
    }
}
