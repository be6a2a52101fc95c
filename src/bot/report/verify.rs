//! The `fleet/verify-storage` and `fleet/verify-graphics` check runs: one section per fleet, with a row per cluster by its
//! public name, each failure category explained in plain words, and the evidence hashes. It is
//! rendered from the typed [`StorageReport`]s alone, and its conclusion is computed from the
//! same reports, so the text and the verdict cannot disagree. A report has no field for a node
//! name, an address, a cloud ID or a path, so none can reach GitHub.

use std::collections::BTreeSet;

use crate::github::CheckConclusion;
use crate::verify::graphics_report::{GraphicsCategory, GraphicsReport};
use crate::verify::{Category, StorageReport};

/// The check runs' names.
pub const STORAGE_CHECK: &str = "fleet/verify-storage";
pub const GRAPHICS_CHECK: &str = "fleet/verify-graphics";
pub const MIG_CHECK: &str = "fleet/verify-mig";

/// Ends a verification check's summary: each category seen explained once, the footer, and
/// the conclusion from the same verdict the title was written from.
pub(super) fn finish_check(
    all_passed: bool,
    title: String,
    mut summary: String,
    what: &str,
    explained: impl Iterator<Item = (String, String)>,
    footer: &str,
) -> VerifyCheck {
    let lines: Vec<String> = explained
        .map(|(word, meaning)| format!("- `{word}`: {meaning}\n"))
        .collect();
    if !lines.is_empty() {
        summary.push_str(&format!("#### What the {what} mean\n\n"));
        summary.push_str(&lines.concat());
        summary.push('\n');
    }
    summary.push_str(footer);
    VerifyCheck {
        conclusion: if all_passed {
            CheckConclusion::Success
        } else {
            CheckConclusion::Failure
        },
        title,
        summary,
    }
}

/// The check run of a kind of verification.
pub fn check_name(kind: crate::verify::Kind) -> &'static str {
    use crate::verify::Kind;
    match kind {
        Kind::Storage => STORAGE_CHECK,
        Kind::Graphics => GRAPHICS_CHECK,
        Kind::Mig => MIG_CHECK,
    }
}

/// One fleet's verification.
#[derive(Debug, Clone)]
pub struct FleetVerification<R = StorageReport> {
    /// The spec's path in the repository.
    pub path: String,
    /// Each selected target's public name (`project-label/cluster`), by target index.
    pub names: Vec<String>,
    /// The report, or why it could not run (a public message).
    pub outcome: Result<R, String>,
}

/// What the check run says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyCheck {
    pub conclusion: CheckConclusion,
    pub title: String,
    pub summary: String,
}

fn passed(f: &FleetVerification) -> bool {
    f.outcome.as_ref().is_ok_and(|r| r.passed)
}

/// The check run for `fleets` (in the order given).
pub fn storage_check(fleets: &[FleetVerification]) -> VerifyCheck {
    let all_passed = !fleets.is_empty() && fleets.iter().all(passed);
    let reports: Vec<&StorageReport> = fleets
        .iter()
        .filter_map(|f| f.outcome.as_ref().ok())
        .collect();
    let verified: usize = reports.iter().map(|r| r.verified_clusters).sum();
    let selected: usize = reports.iter().map(|r| r.selected_clusters).sum();
    let skipped = match reports.iter().map(|r| r.skipped_clusters).sum::<usize>() {
        0 => String::new(),
        n => format!(" ({n} skipped)"),
    };
    let title = if all_passed {
        format!("Storage verified: {verified}/{selected} clusters{skipped}")
    } else if fleets.iter().any(|f| f.outcome.is_err()) {
        "Storage verification could not run".to_string()
    } else {
        format!("Storage verification failed: {verified}/{selected} clusters verified{skipped}")
    };
    let mut summary = String::new();
    let mut seen: BTreeSet<Category> = BTreeSet::new();
    for fleet in fleets {
        summary.push_str(&format!("### `{}`\n\n", fleet.path));
        match &fleet.outcome {
            Err(message) => {
                summary.push_str(&format!(
                    "**Not verified:** {message}. Nothing counts as verified until a run completes.\n\n"
                ));
            }
            Ok(report) => {
                summary.push_str(report.render_text().lines().next().unwrap_or_default());
                summary.push_str("\n\n| Cluster | Result | CPU workers | GPU workers | GiB | Cleanup | Failures |\n");
                summary.push_str("|---|---|---:|---:|---:|---|---|\n");
                for c in &report.clusters {
                    let name = fleet
                        .names
                        .get(c.target_index)
                        .cloned()
                        .unwrap_or_else(|| format!("target {}", c.target_index));
                    let result = if c.skipped {
                        "⏭️ skipped (filesystem off)"
                    } else if c.passed {
                        "✅ passed"
                    } else {
                        "❌ failed"
                    };
                    let cleanup = if c.skipped {
                        "—".to_string()
                    } else {
                        format!(
                            "{} pod(s), {} claim(s) removed; probe paths {}",
                            c.cleanup.pods_removed,
                            c.cleanup.claims_removed,
                            if c.cleanup.probe_paths_absent {
                                "gone"
                            } else {
                                "not proven gone"
                            }
                        )
                    };
                    let failures: Vec<String> = c
                        .failures
                        .iter()
                        .map(|f| format!("`{}`", f.as_str()))
                        .collect();
                    seen.extend(c.failures.iter().copied());
                    summary.push_str(&format!(
                        "| {name} | {result} | {} | {} | {} | {cleanup} | {} |\n",
                        c.cpu_workers,
                        c.gpu_workers,
                        if c.skipped { 0 } else { c.requested_gibibytes },
                        if failures.is_empty() {
                            if c.passed {
                                "—".to_string()
                            } else {
                                "no worker evidence".to_string()
                            }
                        } else {
                            failures.join(", ")
                        }
                    ));
                }
                summary.push_str(&format!(
                    "\nEvidence: `sha256:{}`\n\n",
                    report.evidence_sha256
                ));
            }
        }
    }
    finish_check(
        all_passed,
        title,
        summary,
        "failures",
        seen.iter()
            .map(|c| (c.as_str().to_string(), c.explain().to_string())),
        "Exact receipts (which worker, which evidence) are kept with fleetbot, not posted here.\n",
    )
}

/// The graphics check run for `fleets`.
pub fn graphics_check(fleets: &[FleetVerification<GraphicsReport>]) -> VerifyCheck {
    let all_passed = !fleets.is_empty()
        && fleets
            .iter()
            .all(|f| f.outcome.as_ref().is_ok_and(|r| r.passed));
    let reports: Vec<&GraphicsReport> = fleets
        .iter()
        .filter_map(|f| f.outcome.as_ref().ok())
        .collect();
    let verified: usize = reports.iter().map(|r| r.verified_clusters).sum();
    let selected: usize = reports.iter().map(|r| r.selected_clusters).sum();
    let title = if all_passed {
        format!("Graphics verified: {verified}/{selected} clusters")
    } else if fleets.iter().any(|f| f.outcome.is_err()) {
        "Graphics verification could not run".to_string()
    } else {
        format!("Graphics verification failed: {verified}/{selected} clusters verified")
    };
    let mut summary = String::new();
    let mut seen: BTreeSet<GraphicsCategory> = BTreeSet::new();
    for fleet in fleets {
        summary.push_str(&format!("### `{}`\n\n", fleet.path));
        let report = match &fleet.outcome {
            Err(message) => {
                summary.push_str(&format!(
                    "**Not verified:** {message}. Nothing counts as verified until a run completes.\n\n"
                ));
                continue;
            }
            Ok(report) => report,
        };
        for line in report.render_text().lines().take(2) {
            summary.push_str(line);
            summary.push('\n');
        }
        summary.push_str(
            "\n| Cluster | Result | GPU workers | GPUs | CUDA | GLX | EGL | Vulkan | Failures |\n",
        );
        summary.push_str("|---|---|---:|---:|---:|---:|---:|---:|---|\n");
        for c in &report.clusters {
            let name = fleet
                .names
                .get(c.target_index)
                .cloned()
                .unwrap_or_else(|| format!("target {}", c.target_index));
            seen.extend(c.failures.iter().copied());
            let failures: Vec<String> = c
                .failures
                .iter()
                .map(|f| format!("`{}`", f.as_str()))
                .collect();
            summary.push_str(&format!(
                "| {name} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                if c.passed { "✅ passed" } else { "❌ failed" },
                c.gpu_workers,
                c.gpus,
                c.cuda_workers,
                c.glx_workers,
                c.egl_workers,
                c.vulkan_workers,
                if failures.is_empty() {
                    "—".to_string()
                } else {
                    failures.join(", ")
                }
            ));
        }
        summary.push_str(&format!(
            "\nEvidence: `sha256:{}`\n\n",
            report.evidence_sha256
        ));
    }
    finish_check(
        all_passed,
        title,
        summary,
        "failures",
        seen.iter()
            .map(|c| (c.as_str().to_string(), c.explain().to_string())),
        "Exact receipts (which worker, which evidence) are kept with fleetbot, not posted here.\n",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::storage_report::{CleanupReport, ClusterReport};

    fn report(failures: Vec<Category>) -> StorageReport {
        let cluster = ClusterReport {
            target_index: 0,
            passed: false,
            skipped: false,
            requested_gibibytes: 64,
            cpu_workers: 2,
            gpu_workers: 0,
            nodes: vec![crate::verify::NodeReport {
                node_index: 0,
                role: crate::verify::storage_report::Role::Cpu,
                host_mount: crate::verify::storage_report::Check::Passed,
                capacity: crate::verify::storage_report::Check::Passed,
                host_io: crate::verify::storage_report::Check::Passed,
                shared_visibility: crate::verify::storage_report::Check::Passed,
                cleanup: crate::verify::storage_report::Check::Passed,
            }],
            failures,
            evidence_sha256: "e".repeat(64),
            cleanup: CleanupReport {
                pods_removed: 5,
                claims_removed: 1,
                probe_paths_absent: true,
            },
        };
        StorageReport::from_clusters(vec![cluster, ClusterReport::skipped(1)])
    }

    fn fleet(outcome: Result<StorageReport, String>) -> FleetVerification {
        FleetVerification {
            path: "fleets/prod.yaml".into(),
            names: vec!["prod-a/c".into(), "prod-a/nofs".into()],
            outcome,
        }
    }

    #[test]
    fn the_conclusion_and_the_text_come_from_the_same_reports() {
        let ok = storage_check(&[fleet(Ok(report(Vec::new())))]);
        assert_eq!(ok.conclusion, CheckConclusion::Success);
        insta::assert_snapshot!(
            "verify_storage_check_passed",
            format!("{}\n\n{}", ok.title, ok.summary)
        );
        let bad = storage_check(&[fleet(Ok(report(vec![Category::HostMountMismatch])))]);
        assert_eq!(bad.conclusion, CheckConclusion::Failure);
        assert!(bad.summary.contains("`host_mount_mismatch`: "));
        insta::assert_snapshot!(
            "verify_storage_check_failed",
            format!("{}\n\n{}", bad.title, bad.summary)
        );
        let unavailable = storage_check(&[fleet(Err("no probe image is configured".into()))]);
        assert_eq!(unavailable.conclusion, CheckConclusion::Failure);
        assert_eq!(unavailable.title, "Storage verification could not run");
        assert_eq!(storage_check(&[]).conclusion, CheckConclusion::Failure);
    }

    #[test]
    fn a_graphics_check_fails_with_its_categories_explained() {
        use crate::verify::graphics_report::GraphicsClusterReport;
        let report = GraphicsReport::from_clusters(vec![GraphicsClusterReport::failed(
            0,
            [GraphicsCategory::InvalidGraphicsTarget],
            "f".repeat(64),
        )]);
        let check = graphics_check(&[FleetVerification {
            path: "fleets/render.yaml".into(),
            names: vec!["render-a/plain".into()],
            outcome: Ok(report),
        }]);
        assert_eq!(check.conclusion, CheckConclusion::Failure);
        insta::assert_snapshot!(
            "verify_graphics_check_failed",
            format!("{}\n\n{}", check.title, check.summary)
        );
    }
}
