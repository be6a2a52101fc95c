//! The `fleet/verify-mig` check run: one section per fleet, a row per MIG cluster by its
//! public name with counts only (GPU nodes, nodes whose layout is applied and whole, slices
//! advertised of those the layout gives, the Operator's state, the slice smoke), and each
//! problem kind explained in plain words. The MIG report names nodes for the operator's
//! terminal; nothing here reads a node's name, and the conclusion comes from the same reports.

use std::collections::BTreeSet;

use super::verify::{FleetVerification, VerifyCheck, finish_check};
use crate::verify::MigFleetReport;
use crate::verify::mig_report::{CudaSmoke, MigProblem, MigVerificationReport};

/// (nodes right, slices advertised, slices the layout gives)
fn counts(r: &MigVerificationReport) -> (usize, i64, i64) {
    let right = r
        .nodes
        .iter()
        .filter(|n| {
            n.ready
                && n.schedulable
                && n.config_state == "success"
                && n.capacity
                    .iter()
                    .all(|(k, want)| n.allocatable.get(k) == Some(want))
        })
        .count();
    let have = r.nodes.iter().flat_map(|n| n.allocatable.values()).sum();
    let want = r.nodes.iter().flat_map(|n| n.capacity.values()).sum();
    (right, have, want)
}

pub fn mig_check(fleets: &[FleetVerification<MigFleetReport>]) -> VerifyCheck {
    let all_passed = !fleets.is_empty()
        && fleets
            .iter()
            .all(|f| f.outcome.as_ref().is_ok_and(MigFleetReport::passed));
    let targets: Vec<&MigVerificationReport> = fleets
        .iter()
        .filter_map(|f| f.outcome.as_ref().ok())
        .flat_map(|r| r.clusters.iter().map(|c| &c.report))
        .collect();
    let ready = targets.iter().filter(|r| r.ready).count();
    let title = if all_passed {
        format!("MIG ready: {ready}/{} clusters", targets.len())
    } else if fleets.iter().any(|f| f.outcome.is_err()) {
        "MIG verification could not run".to_string()
    } else {
        format!("MIG not ready: {ready}/{} clusters ready", targets.len())
    };
    let mut summary = String::new();
    let mut seen: BTreeSet<MigProblem> = BTreeSet::new();
    for fleet in fleets {
        summary.push_str(&format!("### `{}`\n\n", fleet.path));
        let report = match &fleet.outcome {
            Err(message) => {
                summary.push_str(&format!(
                    "**Not verified:** {message}. Nothing counts as ready until a run completes.\n\n"
                ));
                continue;
            }
            Ok(report) => report,
        };
        summary.push_str(
            "| Cluster | Result | GPU nodes | Layout applied | MIG slices | Operator | Slice vectorAdd | Problems |\n",
        );
        summary.push_str("|---|---|---:|---:|---:|---|---|---|\n");
        for c in &report.clusters {
            let r = &c.report;
            let name = fleet
                .names
                .get(c.target_index)
                .cloned()
                .unwrap_or_else(|| format!("target {}", c.target_index));
            let problems = r.problems();
            seen.extend(problems.iter().copied());
            let (right, have, want) = counts(r);
            let words: Vec<String> = problems
                .iter()
                .map(|p| format!("`{}`", p.as_str()))
                .collect();
            summary.push_str(&format!(
                "| {name} | {} | {} | {right} | {have}/{want} | {} | {} | {} |\n",
                if r.ready {
                    "✅ ready"
                } else {
                    "❌ not ready"
                },
                r.nodes.len(),
                match (r.operator_state.as_str(), r.operator_version.as_str()) {
                    ("", _) => "unknown".to_string(),
                    (state, "") => state.to_string(),
                    (state, version) => format!("{state} ({version})"),
                },
                match r.cuda_smoke {
                    CudaSmoke::Passed => "passed",
                    CudaSmoke::Failed => "failed",
                    CudaSmoke::NotRun => "not run",
                },
                if words.is_empty() {
                    "—".to_string()
                } else {
                    words.join(", ")
                }
            ));
        }
        summary.push('\n');
    }
    finish_check(
        all_passed,
        title,
        summary,
        "problems",
        seen.iter()
            .map(|p| (p.as_str().to_string(), p.explain().to_string())),
        "Which node and which slice is in `fleetbot verify-mig`'s own report, not posted here.\n",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clusters::Node;
    use crate::github::CheckConclusion;
    use crate::verify::MigTarget;
    use crate::verify::mig_report::{MigExpectation, MigFinding, judge_mig};

    fn node(name: &str, ready: bool) -> Node {
        Node {
            name: name.into(),
            uid: "u".into(),
            ready,
            labels: [
                ("nvidia.com/gpu.present", "true"),
                ("nvidia.com/mig.config", "all-balanced"),
                ("nvidia.com/mig.config.state", "success"),
                ("nvidia.com/gpu.count", "1"),
            ]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
            allocatable: [
                ("nvidia.com/mig-1g.24gb", "2"),
                ("nvidia.com/mig-2g.48gb", "1"),
            ]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
            taints: Vec::new(),
            boot_id: "b".into(),
        }
    }

    #[test]
    fn the_check_counts_and_explains_without_naming_a_node() {
        let expected = MigExpectation::pinned();
        let report = MigVerificationReport::new(
            "ready".into(),
            "v26.3.3".into(),
            judge_mig(
                &[node("secret-node-a", true), node("secret-node-b", false)],
                &expected,
            ),
            Vec::new(),
            CudaSmoke::NotRun,
            vec![MigFinding::node(
                MigProblem::StaleDriverPod,
                "secret-node-a",
                "driver pod nvidia-driver-daemonset-x runs template generation 1 of 3".into(),
            )],
            &expected,
        );
        let check = mig_check(&[FleetVerification {
            path: "fleets/mig.yaml".into(),
            names: vec!["research/mig".into()],
            outcome: Ok(MigFleetReport {
                clusters: vec![MigTarget {
                    target_index: 0,
                    report,
                }],
            }),
        }]);
        assert_eq!(check.conclusion, CheckConclusion::Failure);
        assert!(!check.summary.contains("secret-node"), "{}", check.summary);
        assert!(!check.summary.contains("nvidia-driver-daemonset-x"));
        insta::assert_snapshot!(
            "verify_mig_check_failed",
            format!("{}\n\n{}", check.title, check.summary)
        );
        assert_eq!(mig_check(&[]).conclusion, CheckConclusion::Failure);
    }
}
