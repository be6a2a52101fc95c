//! The public report of `verify-graphics` (fleet-engine §7.2), and how its counts and
//! categories follow from the graphics probes' typed evidence. Only counts, indexes,
//! categories and hashes: no field can hold a node name, an address, an ID or a path. A
//! target passes only with no failure; the fleet passes only when every selected target does.

use std::collections::BTreeSet;

use serde::Serialize;

use super::json;
use crate::probe::{EvidenceError, GraphicsEvidence, Library, VectorAdd, VulkanDevice};

/// The only GPU workload profile verify-graphics accepts.
pub const RTX_PROFILE: &str = "rtx-rendering";
/// GPUs each worker of a graphics target must have.
pub const GPUS_PER_NODE: i64 = 8;
/// The driver mode a graphics target must resolve to (the GPU Operator's driver).
pub const DRIVER_MODE: &str = "operator";

/// Why a target failed. The names are the reference's, so a script reading either tool's JSON
/// reads the same words. Declared in the alphabetical order of those names, so a sorted set
/// of them is in the order the reference's `sorted()` gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GraphicsCategory {
    GpuHealthFailed,
    GraphicsValidationFailed,
    InvalidGraphicsTarget,
    PartialGraphicsEvidence,
    TargetIdentityFailed,
    VerificationInterrupted,
    VerificationOperationFailed,
}

/// Every category, in order.
pub const ALL_CATEGORIES: [GraphicsCategory; 7] = [
    GraphicsCategory::GpuHealthFailed,
    GraphicsCategory::GraphicsValidationFailed,
    GraphicsCategory::InvalidGraphicsTarget,
    GraphicsCategory::PartialGraphicsEvidence,
    GraphicsCategory::TargetIdentityFailed,
    GraphicsCategory::VerificationInterrupted,
    GraphicsCategory::VerificationOperationFailed,
];

impl GraphicsCategory {
    pub fn as_str(self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    }

    /// The category in plain words, for a check run's reader.
    pub fn explain(self) -> &'static str {
        use GraphicsCategory::*;
        match self {
            InvalidGraphicsTarget => {
                "the target is not a graphics target: it needs the rtx-rendering profile, GPU workers with 8 GPUs each and the GPU Operator's driver"
            }
            PartialGraphicsEvidence => {
                "not every GPU worker proved CUDA, GLX, EGL and Vulkan working"
            }
            GraphicsValidationFailed => "a GPU worker's GLX, EGL or Vulkan check failed",
            GpuHealthFailed => "a GPU worker's CUDA check failed or it does not show all its GPUs",
            TargetIdentityFailed => {
                "the target's identity could not be proven; nothing was created in it"
            }
            VerificationOperationFailed => "a call to the cloud or the cluster failed",
            VerificationInterrupted => "the run was interrupted; cleanup ran",
        }
    }

    /// A GPU health check's own error, by whether it mentions graphics (as the reference
    /// tells the two apart).
    pub fn of_health_error(message: &str) -> GraphicsCategory {
        if message.to_ascii_lowercase().contains("graphics") {
            GraphicsCategory::GraphicsValidationFailed
        } else {
            GraphicsCategory::GpuHealthFailed
        }
    }
}

/// Whether a target can be verified for graphics at all: the RTX rendering profile, GPU
/// workers, eight GPUs each, and the GPU Operator's driver.
pub fn validate_target(
    profile: &str,
    gpu_count: i64,
    gpus_per_node: i64,
    driver_mode: &str,
) -> bool {
    profile == RTX_PROFILE
        && gpu_count > 0
        && gpus_per_node == GPUS_PER_NODE
        && driver_mode == DRIVER_MODE
}

/// How many workers proved each check, out of the GPU workers the target declares.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct GraphicsCounts {
    pub gpu_workers: usize,
    pub gpus: usize,
    pub cuda_workers: usize,
    pub glx_workers: usize,
    pub egl_workers: usize,
    pub vulkan_workers: usize,
}

/// One target's counts and the categories its evidence earns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GraphicsJudgement {
    pub counts: GraphicsCounts,
    pub failures: BTreeSet<GraphicsCategory>,
}

/// Judges one target's graphics evidence, one entry per GPU worker the probe was run on.
/// Missing or malformed evidence counts as nothing. The caller has already refused evidence
/// that is not from the worker it was pinned to (node name, boot ID): such evidence comes
/// here as an `Err`.
///
/// * `cuda_workers`: vectorAdd passed; `glx_workers`: GLX loaded; `egl_workers`: EGL loaded;
///   `vulkan_workers`: an NVIDIA Vulkan device enumerated; `gpus` = G × GPUs per node.
/// * `partial_graphics_evidence` when the smallest of the four counts is not G.
/// * `gpu_health_failed` when a worker's CUDA check failed or it counts other than
///   `gpus_per_node` devices; `graphics_validation_failed` when its GLX, EGL or Vulkan check
///   failed (in the reference, a health error that mentions graphics).
pub fn judge_graphics(
    expected_gpu_workers: usize,
    evidence: &[Result<GraphicsEvidence, EvidenceError>],
    gpus_per_node: i64,
) -> GraphicsJudgement {
    let complete: Vec<&GraphicsEvidence> =
        evidence.iter().filter_map(|e| e.as_ref().ok()).collect();
    let count = |ok: &dyn Fn(&GraphicsEvidence) -> bool| complete.iter().filter(|e| ok(e)).count();
    let counts = GraphicsCounts {
        gpu_workers: expected_gpu_workers,
        gpus: expected_gpu_workers * usize::try_from(gpus_per_node).unwrap_or(0),
        cuda_workers: count(&|e| e.vectoradd == VectorAdd::Passed),
        glx_workers: count(&|e| e.glx == Library::Loaded),
        egl_workers: count(&|e| e.egl == Library::Loaded),
        vulkan_workers: count(&|e| e.nvidia_device == VulkanDevice::Enumerated),
    };
    let mut failures = BTreeSet::new();
    let smallest = counts
        .cuda_workers
        .min(counts.glx_workers)
        .min(counts.egl_workers)
        .min(counts.vulkan_workers);
    if smallest != expected_gpu_workers {
        failures.insert(GraphicsCategory::PartialGraphicsEvidence);
    }
    for e in &complete {
        if e.vectoradd != VectorAdd::Passed || i64::from(e.cuda_devices) != gpus_per_node {
            failures.insert(GraphicsCategory::GpuHealthFailed);
        }
        if e.glx != Library::Loaded
            || e.egl != Library::Loaded
            || e.nvidia_device != VulkanDevice::Enumerated
        {
            failures.insert(GraphicsCategory::GraphicsValidationFailed);
        }
    }
    GraphicsJudgement { counts, failures }
}

/// One selected target, by index in the selection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GraphicsClusterReport {
    pub target_index: usize,
    pub passed: bool,
    pub gpu_workers: usize,
    pub gpus: usize,
    pub cuda_workers: usize,
    pub glx_workers: usize,
    pub egl_workers: usize,
    pub vulkan_workers: usize,
    /// Sorted, each once.
    pub failures: Vec<GraphicsCategory>,
    /// SHA-256 of the target's private receipt.
    pub evidence_sha256: String,
}

impl GraphicsClusterReport {
    /// A judged target. `passed` is decided by [`conclude`](Self::conclude).
    pub fn judged(
        target_index: usize,
        judgement: GraphicsJudgement,
        evidence_sha256: String,
    ) -> GraphicsClusterReport {
        let c = judgement.counts;
        GraphicsClusterReport {
            target_index,
            passed: false,
            gpu_workers: c.gpu_workers,
            gpus: c.gpus,
            cuda_workers: c.cuda_workers,
            glx_workers: c.glx_workers,
            egl_workers: c.egl_workers,
            vulkan_workers: c.vulkan_workers,
            failures: judgement.failures.into_iter().collect(),
            evidence_sha256,
        }
        .conclude()
    }

    /// A target that failed before any evidence: invalid, its identity unproven, a failed
    /// call or an interruption.
    pub fn failed(
        target_index: usize,
        failures: impl IntoIterator<Item = GraphicsCategory>,
        evidence_sha256: String,
    ) -> GraphicsClusterReport {
        GraphicsClusterReport::judged(
            target_index,
            GraphicsJudgement {
                counts: GraphicsCounts::default(),
                failures: failures.into_iter().collect(),
            },
            evidence_sha256,
        )
    }

    /// Sets the verdict from the failures: the only way `passed` is decided. A target with no
    /// GPU worker is no graphics target, so it can never pass for want of a failure.
    pub fn conclude(mut self) -> GraphicsClusterReport {
        let mut failures: BTreeSet<GraphicsCategory> = self.failures.iter().copied().collect();
        if self.gpu_workers == 0 && failures.is_empty() {
            failures.insert(GraphicsCategory::InvalidGraphicsTarget);
        }
        self.failures = failures.into_iter().collect();
        self.passed = self.failures.is_empty();
        self
    }
}

/// The whole run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GraphicsReport {
    pub passed: bool,
    pub selected_clusters: usize,
    pub verified_clusters: usize,
    pub clusters: Vec<GraphicsClusterReport>,
    /// Summed over passing targets.
    pub gpu_workers: usize,
    pub gpus: usize,
    pub cuda_workers: usize,
    pub glx_workers: usize,
    pub egl_workers: usize,
    pub vulkan_workers: usize,
    /// Every target's failures, sorted, each once.
    pub failures: Vec<GraphicsCategory>,
    /// SHA-256 of the reference's sorted JSON of `clusters`.
    pub evidence_sha256: String,
}

impl GraphicsReport {
    pub fn from_clusters(clusters: Vec<GraphicsClusterReport>) -> GraphicsReport {
        let clusters: Vec<GraphicsClusterReport> = clusters
            .into_iter()
            .map(GraphicsClusterReport::conclude)
            .collect();
        let passing: Vec<&GraphicsClusterReport> = clusters.iter().filter(|c| c.passed).collect();
        let sum = |f: fn(&GraphicsClusterReport) -> usize| passing.iter().map(|c| f(c)).sum();
        let failures: BTreeSet<GraphicsCategory> = clusters
            .iter()
            .flat_map(|c| c.failures.iter().copied())
            .collect();
        GraphicsReport {
            passed: !clusters.is_empty() && clusters.iter().all(|c| c.passed),
            selected_clusters: clusters.len(),
            verified_clusters: passing.len(),
            gpu_workers: sum(|c| c.gpu_workers),
            gpus: sum(|c| c.gpus),
            cuda_workers: sum(|c| c.cuda_workers),
            glx_workers: sum(|c| c.glx_workers),
            egl_workers: sum(|c| c.egl_workers),
            vulkan_workers: sum(|c| c.vulkan_workers),
            failures: failures.into_iter().collect(),
            evidence_sha256: json::digest(&clusters),
            clusters,
        }
    }

    /// What a failed run that could not even start prints.
    pub fn unavailable_json() -> String {
        json::pretty_sorted(&serde_json::json!({
            "passed": false,
            "failures": ["graphics_verification_unavailable"],
        }))
    }

    pub fn render_json(&self) -> String {
        json::pretty_sorted(self)
    }

    pub fn render_text(&self) -> String {
        let mut out = format!(
            "Fleet graphics verification {}: {}/{} clusters, {} workers and {} GPUs.\n",
            if self.passed { "passed" } else { "failed" },
            self.verified_clusters,
            self.selected_clusters,
            self.gpu_workers,
            self.gpus,
        );
        out.push_str(&format!(
            "Worker checks: CUDA={}, GLX={}, EGL={}, Vulkan={}.\n",
            self.cuda_workers, self.glx_workers, self.egl_workers, self.vulkan_workers
        ));
        for c in self.clusters.iter().filter(|c| !c.passed) {
            let failures: Vec<String> = c.failures.iter().map(|f| f.as_str()).collect();
            out.push_str(&format!(
                "  target {}: failed: {}\n",
                c.target_index,
                failures.join(", ")
            ));
        }
        out.push_str(&format!("Evidence sha256: {}\n", self.evidence_sha256));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::GRAPHICS_SCHEMA;

    fn worker(i: usize) -> GraphicsEvidence {
        GraphicsEvidence {
            schema: GRAPHICS_SCHEMA.into(),
            node_name: format!("n{i}"),
            boot_id: "boot".into(),
            driver_version: "580.173.02".into(),
            cuda_devices: 8,
            cuda_passed_devices: 8,
            vectoradd: VectorAdd::Passed,
            glx: Library::Loaded,
            egl: Library::Loaded,
            egl_devices: 8,
            nvidia_device: VulkanDevice::Enumerated,
            vulkan_devices: 8,
            errors: Vec::new(),
        }
    }

    fn all(n: usize) -> Vec<Result<GraphicsEvidence, EvidenceError>> {
        (0..n).map(|i| Ok(worker(i))).collect()
    }

    #[test]
    fn only_rtx_targets_with_eight_gpus_per_node_on_the_operator_driver_are_valid() {
        assert!(validate_target("rtx-rendering", 2, 8, "operator"));
        assert!(!validate_target("default", 2, 8, "operator"));
        assert!(!validate_target("rtx-rendering", 0, 8, "operator"));
        assert!(!validate_target("rtx-rendering", 2, 1, "operator"));
        assert!(!validate_target("rtx-rendering", 2, 8, "managed-image"));
    }

    #[test]
    fn every_worker_must_prove_all_four_checks() {
        let j = judge_graphics(2, &all(2), 8);
        assert!(j.failures.is_empty());
        assert_eq!(
            j.counts,
            GraphicsCounts {
                gpu_workers: 2,
                gpus: 16,
                cuda_workers: 2,
                glx_workers: 2,
                egl_workers: 2,
                vulkan_workers: 2,
            }
        );
        // A missing document counts as nothing.
        let j = judge_graphics(2, &[Ok(worker(0)), Err(EvidenceError::Missing)], 8);
        assert_eq!(
            j.failures,
            [GraphicsCategory::PartialGraphicsEvidence].into()
        );
        assert_eq!(j.counts.cuda_workers, 1);
        // More documents than workers is no more a match than fewer.
        let j = judge_graphics(1, &all(2), 8);
        assert_eq!(
            j.failures,
            [GraphicsCategory::PartialGraphicsEvidence].into()
        );

        let mut no_vulkan = worker(1);
        no_vulkan.nvidia_device = VulkanDevice::Absent;
        no_vulkan.vulkan_devices = 0;
        let j = judge_graphics(2, &[Ok(worker(0)), Ok(no_vulkan)], 8);
        assert_eq!(
            j.failures,
            [
                GraphicsCategory::PartialGraphicsEvidence,
                GraphicsCategory::GraphicsValidationFailed
            ]
            .into()
        );
        assert_eq!((j.counts.vulkan_workers, j.counts.cuda_workers), (1, 2));

        // Seven GPUs that all pass are still not the node's eight.
        let mut seven = worker(1);
        seven.cuda_devices = 7;
        seven.cuda_passed_devices = 7;
        let j = judge_graphics(2, &[Ok(worker(0)), Ok(seven)], 8);
        assert_eq!(j.failures, [GraphicsCategory::GpuHealthFailed].into());

        let mut failed = worker(0);
        failed.vectoradd = VectorAdd::Failed;
        failed.cuda_passed_devices = 7;
        let j = judge_graphics(1, &[Ok(failed)], 8);
        assert_eq!(
            j.failures,
            [
                GraphicsCategory::PartialGraphicsEvidence,
                GraphicsCategory::GpuHealthFailed
            ]
            .into()
        );
        assert_eq!(
            GraphicsCategory::of_health_error("graphics smoke: EGL missing"),
            GraphicsCategory::GraphicsValidationFailed
        );
        assert_eq!(
            GraphicsCategory::of_health_error("node not Ready"),
            GraphicsCategory::GpuHealthFailed
        );
    }

    fn passing_fleet() -> GraphicsReport {
        GraphicsReport::from_clusters(vec![
            GraphicsClusterReport::judged(0, judge_graphics(2, &all(2), 8), "a".repeat(64)),
            GraphicsClusterReport::judged(1, judge_graphics(1, &all(1), 8), "b".repeat(64)),
        ])
    }

    fn failing_fleet() -> GraphicsReport {
        let mut no_egl = worker(1);
        no_egl.egl = Library::Missing;
        no_egl.egl_devices = 0;
        GraphicsReport::from_clusters(vec![
            GraphicsClusterReport::judged(0, judge_graphics(2, &all(2), 8), "a".repeat(64)),
            GraphicsClusterReport::judged(
                1,
                judge_graphics(2, &[Ok(worker(0)), Ok(no_egl)], 8),
                "b".repeat(64),
            ),
            GraphicsClusterReport::failed(
                2,
                [GraphicsCategory::InvalidGraphicsTarget],
                String::new(),
            ),
        ])
    }

    #[test]
    fn verdicts_and_totals_follow_from_the_clusters() {
        let ok = passing_fleet();
        assert!(ok.passed);
        assert_eq!((ok.selected_clusters, ok.verified_clusters), (2, 2));
        assert_eq!((ok.gpu_workers, ok.gpus, ok.vulkan_workers), (3, 24, 3));
        assert!(ok.failures.is_empty());
        assert_eq!(ok.evidence_sha256, json::digest(&ok.clusters));

        // Failing targets add nothing to the totals; the fleet's failures are every target's.
        let bad = failing_fleet();
        assert!(!bad.passed);
        assert_eq!((bad.selected_clusters, bad.verified_clusters), (3, 1));
        assert_eq!((bad.gpu_workers, bad.gpus, bad.egl_workers), (2, 16, 2));
        assert_eq!(
            bad.failures,
            vec![
                GraphicsCategory::GraphicsValidationFailed,
                GraphicsCategory::InvalidGraphicsTarget,
                GraphicsCategory::PartialGraphicsEvidence,
            ]
        );
        assert_eq!(bad.clusters[1].egl_workers, 1);

        // No cluster is no pass, and a target with no GPU worker cannot pass.
        assert!(!GraphicsReport::from_clusters(Vec::new()).passed);
        let empty = GraphicsClusterReport::judged(0, judge_graphics(0, &[], 8), String::new());
        assert_eq!(
            empty.failures,
            vec![GraphicsCategory::InvalidGraphicsTarget]
        );
        assert!(!empty.passed);

        assert_eq!(
            GraphicsReport::unavailable_json(),
            "{\n  \"failures\": [\n    \"graphics_verification_unavailable\"\n  ],\n  \"passed\": false\n}"
        );
        assert_eq!(
            GraphicsCategory::PartialGraphicsEvidence.as_str(),
            "partial_graphics_evidence"
        );
        // Sorted categories are sorted names, as the reference sorts its strings.
        let names: Vec<String> = ALL_CATEGORIES.iter().map(|c| c.as_str()).collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
        assert!(ALL_CATEGORIES.windows(2).all(|w| w[0] < w[1]));
        assert!(ALL_CATEGORIES.iter().all(|c| !c.explain().is_empty()));
    }

    #[test]
    fn a_passing_rtx_fleet_reads_as_the_reference_prints_it() {
        let report = passing_fleet();
        insta::assert_snapshot!("graphics_passing_text", report.render_text());
        insta::assert_snapshot!("graphics_passing_json", report.render_json());
    }

    #[test]
    fn a_failing_fleet_reads_as_the_reference_prints_it() {
        let report = failing_fleet();
        insta::assert_snapshot!("graphics_failing_text", report.render_text());
        insta::assert_snapshot!("graphics_failing_json", report.render_json());
    }
}
