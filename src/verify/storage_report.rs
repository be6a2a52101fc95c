//! The public report of `verify-storage` (fleet-engine §7.1), and how its verdicts follow from
//! the probes' typed evidence. Only counts, indexes, categories, requested capacity, hashes
//! and cleanup counts: no field can hold a node name, an address, an ID or a path. A target
//! passes only with no failure and a non-empty node list; the fleet passes only when every
//! selected target does.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::json;
use crate::probe::{EvidenceError, HostEvidence, SharedEvidence};

const GIB: u64 = 1024 * 1024 * 1024;

/// Why a target failed. The names are the reference's, so a script reading either tool's JSON
/// reads the same words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    WorkerCountMismatch,
    WorkerShapeMismatch,
    WorkerUnhealthy,
    WorkerBootIdentityMissing,
    NodeIdentityMismatch,
    DefaultStorageClassMismatch,
    StorageClassPolicyMismatch,
    CsiDriverMismatch,
    CsiWorkerRegistrationMissing,
    CsiWorkloadUnhealthy,
    CsiWorkerWorkloadMissing,
    CsiOwnerMismatch,
    CsiGenerationUnhealthy,
    PvcBindingMismatch,
    PvcDefaultClassMismatch,
    PvcRwxMissing,
    VolumeClaimIdentityMismatch,
    VolumeDriverMismatch,
    VolumeCleanupPolicyMismatch,
    PartialHostEvidence,
    HostMountMismatch,
    CapacityMismatch,
    PartialWriteEvidence,
    NonUniquePayloadEvidence,
    PartialCrossNodeEvidence,
    CrossNodeEvidenceMismatch,
    SharedBackingIdentityMismatch,
    ProbeCleanupFailed,
    ProbeAbsenceUnverified,
    ClaimProbeCleanupFailed,
    BackingCleanupFailed,
    BackingAbsenceUnverified,
    VolumeCleanupFailed,
    VolumeIdentityMismatch,
    ResourceCleanupFailed,
    ResourceAbsenceUnverified,
    ClaimIdentityUnverified,
    OwnershipMismatch,
    OwnershipMissing,
    ImageDigestMismatch,
    ProbeCommandMismatch,
    WorkloadFailed,
    WorkloadStartFailed,
    WorkerUnschedulable,
    PartialEvidence,
    ProbeFailed,
    StaleWorkerEvidence,
    TargetIdentityFailed,
    VerificationOperationFailed,
    VerificationInterrupted,
}

impl Category {
    pub fn as_str(self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    }

    /// The category in plain words, for a check run's reader.
    pub fn explain(self) -> &'static str {
        use Category::*;
        match self {
            WorkerCountMismatch => {
                "the cluster does not have exactly the workers the spec declares"
            }
            WorkerShapeMismatch => {
                "a worker's platform or preset matches no pool, or more than one"
            }
            WorkerUnhealthy => "a worker is not Ready or not schedulable",
            WorkerBootIdentityMissing => "a worker reports no boot ID",
            NodeIdentityMismatch => "a probe ran on another node than the one it was pinned to",
            DefaultStorageClassMismatch => {
                "the default StorageClass is not exactly the filestore's"
            }
            StorageClassPolicyMismatch => {
                "the filestore's StorageClass has the wrong provisioner or reclaim policy"
            }
            CsiDriverMismatch => "the filestore's CSI driver is not registered in the cluster",
            CsiWorkerRegistrationMissing => {
                "a worker has no CSI registration for the filestore's driver"
            }
            CsiWorkloadUnhealthy => "the CSI driver's pods are not all running and ready",
            CsiWorkerWorkloadMissing => "a worker runs no CSI driver pod",
            CsiOwnerMismatch => "a CSI driver pod is not owned by the driver's DaemonSet",
            CsiGenerationUnhealthy => {
                "the CSI driver's DaemonSet has not rolled out its current generation"
            }
            PvcBindingMismatch => "the shared claim did not bind as expected",
            PvcDefaultClassMismatch => "the shared claim did not get the filestore's class",
            PvcRwxMissing => "the shared claim is not ReadWriteMany",
            VolumeClaimIdentityMismatch => "the volume is bound to another claim",
            VolumeDriverMismatch => "the volume is not served by the filestore's driver",
            VolumeCleanupPolicyMismatch => "the volume would not be deleted with its claim",
            PartialHostEvidence => "a worker's host probe left no complete evidence",
            HostMountMismatch => {
                "a worker's filestore mount is missing, read-only, of the wrong type or source, or not nofail"
            }
            CapacityMismatch => "a worker's filestore does not have exactly the requested capacity",
            PartialWriteEvidence => "a worker could not write and read back its payload",
            NonUniquePayloadEvidence => "two workers produced the same payload",
            PartialCrossNodeEvidence => "a worker did not read every worker's payload",
            CrossNodeEvidenceMismatch => {
                "a worker read a payload that differs from what was written"
            }
            SharedBackingIdentityMismatch => "the shared volume's backing path is not the driver's",
            ProbeCleanupFailed => "a probe pod could not be removed",
            ProbeAbsenceUnverified => "a probe path could not be proven gone",
            ClaimProbeCleanupFailed => "a shared-phase pod could not be removed",
            BackingCleanupFailed => "the shared volume's backing directory could not be removed",
            BackingAbsenceUnverified => {
                "the shared volume's backing directory could not be proven gone"
            }
            VolumeCleanupFailed => "the shared volume could not be removed",
            VolumeIdentityMismatch => "the shared volume changed identity during the run",
            ResourceCleanupFailed => "a resource the run created could not be removed",
            ResourceAbsenceUnverified => "a resource the run created could not be proven gone",
            ClaimIdentityUnverified => "the shared claim's identity could not be confirmed",
            OwnershipMismatch => "a resource carries another run's identity labels",
            OwnershipMissing => "a resource lacks the run's identity labels",
            ImageDigestMismatch => "a probe pod ran another image than the pinned digest",
            ProbeCommandMismatch => "a probe pod ran another command than the probe's",
            WorkloadFailed => "a probe exited with an error",
            WorkloadStartFailed => "a probe pod never started",
            WorkerUnschedulable => "a probe pod could not be scheduled on its worker",
            PartialEvidence => "the evidence is incomplete",
            ProbeFailed => "a probe failed",
            StaleWorkerEvidence => "a worker changed (name, UID or boot) during the run",
            TargetIdentityFailed => {
                "the target's identity could not be proven; nothing was created in it"
            }
            VerificationOperationFailed => "a call to the cloud or the cluster failed",
            VerificationInterrupted => "the run was interrupted; cleanup ran",
        }
    }
}

/// A node check's outcome as the report prints it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Check {
    Passed,
    Failed,
}

impl Check {
    pub fn of(ok: bool) -> Check {
        if ok { Check::Passed } else { Check::Failed }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Cpu,
    Gpu,
}

/// One worker, by index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeReport {
    pub node_index: usize,
    pub role: Role,
    pub host_mount: Check,
    pub capacity: Check,
    pub host_io: Check,
    pub shared_visibility: Check,
    pub cleanup: Check,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CleanupReport {
    pub pods_removed: usize,
    pub claims_removed: usize,
    pub probe_paths_absent: bool,
}

/// One selected target, by index in the selection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClusterReport {
    pub target_index: usize,
    pub passed: bool,
    pub skipped: bool,
    pub requested_gibibytes: u64,
    pub cpu_workers: usize,
    pub gpu_workers: usize,
    pub nodes: Vec<NodeReport>,
    /// Sorted, each once.
    pub failures: Vec<Category>,
    /// SHA-256 of the target's private receipt.
    pub evidence_sha256: String,
    pub cleanup: CleanupReport,
}

impl ClusterReport {
    /// A target whose filesystem is off: passed and skipped, nothing checked.
    pub fn skipped(target_index: usize) -> ClusterReport {
        ClusterReport {
            target_index,
            passed: true,
            skipped: true,
            requested_gibibytes: 0,
            cpu_workers: 0,
            gpu_workers: 0,
            nodes: Vec::new(),
            failures: Vec::new(),
            evidence_sha256: String::new(),
            cleanup: CleanupReport::default(),
        }
    }

    /// Sets the verdict from the failures and nodes: the only way `passed` is decided.
    pub fn conclude(mut self) -> ClusterReport {
        let failures: BTreeSet<Category> = self.failures.iter().copied().collect();
        self.failures = failures.into_iter().collect();
        self.passed = self.skipped || (self.failures.is_empty() && !self.nodes.is_empty());
        self
    }
}

/// The whole run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StorageReport {
    pub passed: bool,
    pub selected_clusters: usize,
    pub skipped_clusters: usize,
    pub verified_clusters: usize,
    /// Summed over passing targets.
    pub cpu_workers: usize,
    pub gpu_workers: usize,
    /// Summed over enabled targets.
    pub requested_gibibytes: u64,
    /// SHA-256 of the reference's sorted JSON of `clusters`.
    pub evidence_sha256: String,
    pub clusters: Vec<ClusterReport>,
}

impl StorageReport {
    pub fn from_clusters(clusters: Vec<ClusterReport>) -> StorageReport {
        let clusters: Vec<ClusterReport> =
            clusters.into_iter().map(ClusterReport::conclude).collect();
        let passing = clusters.iter().filter(|c| c.passed && !c.skipped);
        StorageReport {
            passed: !clusters.is_empty() && clusters.iter().all(|c| c.passed),
            selected_clusters: clusters.len(),
            skipped_clusters: clusters.iter().filter(|c| c.skipped).count(),
            verified_clusters: passing.clone().count(),
            cpu_workers: passing.clone().map(|c| c.cpu_workers).sum(),
            gpu_workers: passing.map(|c| c.gpu_workers).sum(),
            requested_gibibytes: clusters
                .iter()
                .filter(|c| !c.skipped)
                .map(|c| c.requested_gibibytes)
                .sum(),
            evidence_sha256: json::digest(&clusters),
            clusters,
        }
    }

    /// What a failed run that could not even start prints.
    pub fn unavailable_json() -> String {
        json::pretty_sorted(&serde_json::json!({
            "passed": false,
            "failures": ["storage_verification_unavailable"],
        }))
    }

    pub fn render_json(&self) -> String {
        json::pretty_sorted(self)
    }

    pub fn render_text(&self) -> String {
        let mut out = format!(
            "Fleet storage verification {}: {}/{} clusters, {} CPU and {} GPU workers, {} GiB requested.\n",
            if self.passed { "passed" } else { "failed" },
            self.verified_clusters,
            self.selected_clusters,
            self.cpu_workers,
            self.gpu_workers,
            self.requested_gibibytes,
        );
        if self.skipped_clusters > 0 {
            out.push_str(&format!(
                "Skipped {} cluster(s) whose filesystem is disabled.\n",
                self.skipped_clusters
            ));
        }
        for c in self.clusters.iter().filter(|c| !c.passed) {
            let failures: Vec<String> = c.failures.iter().map(|f| f.as_str()).collect();
            out.push_str(&format!(
                "  target {}: failed: {}\n",
                c.target_index,
                if failures.is_empty() {
                    "no worker evidence".into()
                } else {
                    failures.join(", ")
                }
            ));
        }
        out.push_str(&format!("Evidence sha256: {}\n", self.evidence_sha256));
        out
    }
}

/// What the verifier expects of one worker's host phase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectedHost {
    pub node_name: String,
    pub boot_id: String,
    pub requested_gibibytes: u64,
}

/// The categories one worker's host evidence earns; none means its host checks passed.
pub fn judge_host(
    expected: &ExpectedHost,
    evidence: &Result<HostEvidence, EvidenceError>,
) -> BTreeSet<Category> {
    let mut out = BTreeSet::new();
    let e = match evidence {
        Ok(e) => e,
        Err(_) => {
            out.insert(Category::PartialHostEvidence);
            return out;
        }
    };
    if e.node_name != expected.node_name {
        out.insert(Category::NodeIdentityMismatch);
    }
    if e.boot_id != expected.boot_id {
        out.insert(Category::StaleWorkerEvidence);
    }
    if e.filesystem_type != "virtiofs" || !e.source_matches || !e.read_write || !e.nofail {
        out.insert(Category::HostMountMismatch);
    }
    let requested = expected.requested_gibibytes * GIB;
    if e.requested_bytes != requested
        || e.capacity_bytes < requested
        || e.capacity_bytes >= requested.saturating_add(e.fragment_size)
    {
        out.insert(Category::CapacityMismatch);
    }
    if !e.read_back || e.payload_sha256.len() != 64 {
        out.insert(Category::PartialWriteEvidence);
    }
    if !e.probe_deleted {
        out.insert(Category::ProbeAbsenceUnverified);
    }
    out
}

/// The categories the shared phase earns across all workers: every worker's payload is
/// unique, and every worker read exactly every payload.
pub fn judge_shared(evidence: &[Result<SharedEvidence, EvidenceError>]) -> BTreeSet<Category> {
    let mut out = BTreeSet::new();
    let complete: Vec<&SharedEvidence> = evidence.iter().filter_map(|e| e.as_ref().ok()).collect();
    if complete.len() != evidence.len() || evidence.is_empty() {
        out.insert(Category::PartialCrossNodeEvidence);
    }
    let written: BTreeMap<usize, String> = complete
        .iter()
        .map(|e| (e.node_index, e.payload_sha256.clone()))
        .collect();
    let unique: BTreeSet<&String> = written.values().collect();
    if unique.len() != written.len() || written.len() != complete.len() {
        out.insert(Category::NonUniquePayloadEvidence);
    }
    for e in &complete {
        if e.read_count != evidence.len() {
            out.insert(Category::PartialCrossNodeEvidence);
        } else if e.verified_checksums != written {
            out.insert(Category::CrossNodeEvidenceMismatch);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::evidence::{HOST_SCHEMA, SHARED_SCHEMA};

    fn host(name: &str) -> HostEvidence {
        HostEvidence {
            schema: HOST_SCHEMA.into(),
            node_name: name.into(),
            boot_id: "boot".into(),
            filesystem_type: "virtiofs".into(),
            source_matches: true,
            read_write: true,
            nofail: true,
            requested_bytes: 256 * GIB,
            capacity_bytes: 256 * GIB,
            fragment_size: 4096,
            payload_sha256: "a".repeat(64),
            read_back: true,
            probe_deleted: true,
        }
    }

    fn expected(name: &str) -> ExpectedHost {
        ExpectedHost {
            node_name: name.into(),
            boot_id: "boot".into(),
            requested_gibibytes: 256,
        }
    }

    #[test]
    fn each_host_fault_earns_its_category() {
        assert!(judge_host(&expected("n"), &Ok(host("n"))).is_empty());
        type Fault = Box<dyn Fn(&mut HostEvidence)>;
        let cases: Vec<(Fault, Category)> = vec![
            (
                Box::new(|e| e.filesystem_type = "ext4".into()),
                Category::HostMountMismatch,
            ),
            (
                Box::new(|e| e.read_write = false),
                Category::HostMountMismatch,
            ),
            (Box::new(|e| e.nofail = false), Category::HostMountMismatch),
            (
                Box::new(|e| e.capacity_bytes -= 1),
                Category::CapacityMismatch,
            ),
            (
                Box::new(|e| e.capacity_bytes += 4096),
                Category::CapacityMismatch,
            ),
            (
                Box::new(|e| e.read_back = false),
                Category::PartialWriteEvidence,
            ),
            (
                Box::new(|e| e.probe_deleted = false),
                Category::ProbeAbsenceUnverified,
            ),
            (
                Box::new(|e| e.node_name = "other".into()),
                Category::NodeIdentityMismatch,
            ),
            (
                Box::new(|e| e.boot_id = "rebooted".into()),
                Category::StaleWorkerEvidence,
            ),
        ];
        for (fault, category) in cases {
            let mut e = host("n");
            fault(&mut e);
            assert_eq!(judge_host(&expected("n"), &Ok(e)), [category].into());
        }
        // Within one fragment over the request is still exact.
        let mut e = host("n");
        e.capacity_bytes += 4095;
        assert!(judge_host(&expected("n"), &Ok(e)).is_empty());
        assert_eq!(
            judge_host(&expected("n"), &Err(EvidenceError::Missing)),
            [Category::PartialHostEvidence].into()
        );
    }

    fn shared(
        i: usize,
        own: char,
        read: &[(usize, char)],
    ) -> Result<SharedEvidence, EvidenceError> {
        Ok(SharedEvidence {
            schema: SHARED_SCHEMA.into(),
            node_name: format!("n{i}"),
            node_index: i,
            payload_sha256: own.to_string().repeat(64),
            verified_checksums: read
                .iter()
                .map(|(j, c)| (*j, c.to_string().repeat(64)))
                .collect(),
            read_count: read.len(),
        })
    }

    #[test]
    fn every_worker_must_read_every_unique_payload() {
        let all = [(0, 'a'), (1, 'b')];
        assert!(judge_shared(&[shared(0, 'a', &all), shared(1, 'b', &all)]).is_empty());
        assert_eq!(
            judge_shared(&[shared(0, 'a', &all), shared(1, 'b', &all[..1])]),
            [Category::PartialCrossNodeEvidence].into()
        );
        assert_eq!(
            judge_shared(&[shared(0, 'a', &[(0, 'a'), (1, 'c')]), shared(1, 'b', &all)]),
            [Category::CrossNodeEvidenceMismatch].into()
        );
        let same = [(0, 'a'), (1, 'a')];
        assert!(
            judge_shared(&[shared(0, 'a', &same), shared(1, 'a', &same)])
                .contains(&Category::NonUniquePayloadEvidence)
        );
        assert!(
            judge_shared(&[shared(0, 'a', &all), Err(EvidenceError::Missing)])
                .contains(&Category::PartialCrossNodeEvidence)
        );
    }

    fn node(i: usize, role: Role) -> NodeReport {
        NodeReport {
            node_index: i,
            role,
            host_mount: Check::Passed,
            capacity: Check::Passed,
            host_io: Check::Passed,
            shared_visibility: Check::Passed,
            cleanup: Check::of(true),
        }
    }

    #[test]
    fn verdicts_counts_and_text_follow_from_the_clusters() {
        let ok = ClusterReport {
            target_index: 0,
            passed: false,
            skipped: false,
            requested_gibibytes: 256,
            cpu_workers: 2,
            gpu_workers: 1,
            nodes: vec![node(0, Role::Cpu), node(1, Role::Cpu), node(2, Role::Gpu)],
            failures: Vec::new(),
            evidence_sha256: "e".repeat(64),
            cleanup: CleanupReport {
                pods_removed: 6,
                claims_removed: 1,
                probe_paths_absent: true,
            },
        };
        let empty = ClusterReport {
            target_index: 1,
            nodes: Vec::new(),
            ..ok.clone()
        };
        let report = StorageReport::from_clusters(vec![ok.clone(), ClusterReport::skipped(2)]);
        assert!(report.passed);
        assert_eq!(
            (
                report.selected_clusters,
                report.skipped_clusters,
                report.verified_clusters
            ),
            (2, 1, 1)
        );
        assert_eq!(
            (
                report.cpu_workers,
                report.gpu_workers,
                report.requested_gibibytes
            ),
            (2, 1, 256)
        );
        assert!(report.render_text().starts_with(
            "Fleet storage verification passed: 1/2 clusters, 2 CPU and 1 GPU workers, 256 GiB requested.\nSkipped 1 cluster(s) whose filesystem is disabled.\n"
        ));
        // No node evidence is a failure, never a pass; failing targets add no workers.
        let failed = StorageReport::from_clusters(vec![ok, empty]);
        assert!(!failed.passed);
        assert_eq!((failed.verified_clusters, failed.cpu_workers), (1, 2));
        assert_eq!(failed.requested_gibibytes, 512);
        assert!(
            failed
                .render_text()
                .contains("  target 1: failed: no worker evidence\n")
        );
        let json: serde_json::Value = serde_json::from_str(&failed.render_json()).unwrap();
        assert_eq!(json["clusters"][0]["nodes"][2]["role"], "gpu");
        assert_eq!(json["clusters"][0]["cleanup"]["pods_removed"], 6);
        assert_eq!(failed.evidence_sha256, json::digest(&failed.clusters));
        assert_eq!(
            StorageReport::unavailable_json(),
            "{\n  \"failures\": [\n    \"storage_verification_unavailable\"\n  ],\n  \"passed\": false\n}"
        );
        assert_eq!(
            Category::TargetIdentityFailed.as_str(),
            "target_identity_failed"
        );
    }
}
