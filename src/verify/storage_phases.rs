//! The phases of one storage verification target, each creating probe pods through the
//! run's [`Workload`] and turning what they print into categories: the host phase on every
//! worker, the shared phase on one RWX claim with its binding and backing directory checked,
//! the absence proofs after cleanup, and the target's public node rows and private receipt.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;

use super::manifests::{command_of, pinned_node};
use super::storage_report::{
    Category, Check, ClusterReport, ExpectedHost, NodeReport, judge_host, judge_shared,
};
use super::storage_run::{BACKING_DIR, CSI_DRIVER, Receipt, TargetRun, image_digest};
use super::workload::{PodEnd, PodRun, Purpose, Workload};
use crate::engine::addons::CSI_STORAGE_CLASS;
use crate::probe::{EvidenceError, PathState, parse_host, parse_paths, parse_shared};

/// The shared phase's file of worker `index` (as the probe names it).
fn shared_file(run_id: &str, index: usize) -> String {
    format!("fleetbot-{run_id}-{index}.bin")
}

impl TargetRun<'_> {
    pub(super) async fn phases(&mut self, workload: &mut Workload) {
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
                self.options.kind.start_timeout,
                self.options.kind.phase_timeout,
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
            .wait_bound(&self.run.claim_name(), self.options.kind.start_timeout)
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
        let wait = self.options.kind.phase_timeout.as_secs().max(1);
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
        let written: BTreeMap<usize, String> = evidence
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
    async fn check_backing(&mut self, workload: &mut Workload, written: &BTreeMap<usize, String>) {
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
        let expected: BTreeMap<String, String> = written
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
    pub(super) async fn prove_paths_absent(&mut self, workload: &mut Workload) {
        let n = self.nodes.len();
        self.absent = vec![false; n];
        if n == 0 {
            return;
        }
        // Every worker's probe directory, each looked for from every worker: the filesystem
        // is one.
        let probe_dirs: Vec<String> = self
            .nodes
            .iter()
            .map(|(node, _)| self.run.probe_dir(&node.name))
            .collect();
        let backing = self
            .volume_handle
            .as_ref()
            .map(|h| format!("{BACKING_DIR}/{h}"));
        let mut paths = probe_dirs.clone();
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
            let probes = probe_dirs.iter().map(|dir| {
                (
                    dir.as_str(),
                    Category::ProbeCleanupFailed,
                    Category::ProbeAbsenceUnverified,
                )
            });
            let backing = backing.as_deref().map(|dir| {
                (
                    dir,
                    Category::BackingCleanupFailed,
                    Category::BackingAbsenceUnverified,
                )
            });
            for (path, present, unverified) in probes.chain(backing) {
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
    pub(super) fn finish(mut self, index: usize) -> (ClusterReport, Receipt) {
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
