//! The MIG report as the CLI prints it: the reference calls verification output safe to
//! publish, but a Nebius node's name is its compute instance's ID. Each GPU node is shown as
//! its worker ordinal (`worker-1`, … over the node names in order), and the report as read,
//! with the ordinals' node names, is a receipt for `--evidence-dir` only.

use std::collections::BTreeMap;

use serde::Serialize;

use super::json;
use super::mig_report::{MigFinding, MigVerificationReport};

/// Each node's public name: `worker-<n>`, counting from 1 over the distinct names sorted, so
/// the same nodes are always the same workers.
pub fn worker_names<'a>(nodes: impl IntoIterator<Item = &'a str>) -> BTreeMap<String, String> {
    let mut names: Vec<&str> = nodes.into_iter().collect();
    names.sort_unstable();
    names.dedup();
    names
        .into_iter()
        .enumerate()
        .map(|(i, name)| (name.to_string(), format!("worker-{}", i + 1)))
        .collect()
}

/// The private receipt: the report as read and which node each worker is.
#[derive(Serialize)]
struct Receipt<'a> {
    report: &'a MigVerificationReport,
    workers: BTreeMap<&'a str, &'a str>,
}

/// `text` with every node name in it replaced by its worker name (longest names first, so a
/// name inside another is never half replaced).
fn without_node_names(text: &str, workers: &[(&String, &String)]) -> String {
    workers
        .iter()
        .fold(text.to_string(), |out, (node, worker)| {
            out.replace(node.as_str(), worker)
        })
}

impl MigVerificationReport {
    /// The report with every node named by its worker ordinal (in rows, driver rows and
    /// findings, and inside any message that quotes a node's name), and the private receipt
    /// (the report as read, with each worker's node name) for `--evidence-dir`.
    pub fn published(&self) -> (MigVerificationReport, String) {
        let names = self
            .nodes
            .iter()
            .map(|n| n.name.as_str())
            .chain(self.hardware.iter().map(|h| h.node.as_str()))
            .chain(self.errors.iter().filter_map(|e| e.node.as_deref()))
            .filter(|n| !n.is_empty());
        let workers = worker_names(names);
        let mut longest: Vec<(&String, &String)> = workers.iter().collect();
        longest.sort_by_key(|(node, _)| std::cmp::Reverse(node.len()));
        let public = |name: &str| workers.get(name).cloned().unwrap_or_default();
        let mut out = self.clone();
        for n in &mut out.nodes {
            n.name = public(&n.name);
        }
        for h in &mut out.hardware {
            h.node = public(&h.node);
        }
        out.errors = self
            .errors
            .iter()
            .map(|e| MigFinding {
                problem: e.problem,
                node: e.node.as_deref().map(public),
                message: without_node_names(&e.message, &longest),
            })
            .collect();
        let receipt = Receipt {
            report: self,
            workers: workers
                .iter()
                .map(|(node, worker)| (worker.as_str(), node.as_str()))
                .collect(),
        };
        (out, json::pretty_sorted(&receipt))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::mig_report::{CudaSmoke, MigHardware, MigNode, MigProblem};

    fn node(name: &str) -> MigNode {
        MigNode {
            name: name.into(),
            product: "NVIDIA-RTX-PRO-6000".into(),
            config: "all-balanced".into(),
            config_state: "success".into(),
            capacity: BTreeMap::new(),
            allocatable: BTreeMap::new(),
            schedulable: true,
            ready: true,
        }
    }

    /// Issue #32: the plain output named nodes by their compute instance IDs.
    #[test]
    fn nodes_are_published_as_worker_ordinals_and_their_names_kept_for_the_receipt() {
        let (a, b) = (
            crate::privacy::testdata::nid_seeded("computeinstance", "e00", 20, 1),
            crate::privacy::testdata::nid_seeded("computeinstance", "e00", 20, 2),
        );
        let (first, second) = if a < b { (&a, &b) } else { (&b, &a) };
        let report = MigVerificationReport {
            ready: false,
            operator_state: "ready".into(),
            operator_version: "v26.3.3".into(),
            nodes: vec![node(second), node(first)],
            hardware: vec![MigHardware {
                node: first.clone(),
                gpu_index: 0,
                mig_mode: "Enabled".into(),
                instances: vec!["1g.24gb".into()],
            }],
            cuda_smoke: CudaSmoke::NotRun,
            errors: vec![
                MigFinding::node(
                    MigProblem::NodeNotReady,
                    second,
                    format!("nodes \"{second}\" is not Ready"),
                ),
                MigFinding::cluster(MigProblem::OperatorNotReady, "the Operator is not ready"),
            ],
            evidence_sha256: String::new(),
        };
        let (public, receipt) = report.published();
        let text = public.render_text();
        let json = public.render_json();
        for shown in [&text, &json] {
            assert!(!shown.contains(first.as_str()) && !shown.contains(second.as_str()));
        }
        assert_eq!(
            public
                .nodes
                .iter()
                .map(|n| n.name.as_str())
                .collect::<Vec<_>>(),
            ["worker-2", "worker-1"]
        );
        assert_eq!(public.hardware[0].node, "worker-1");
        assert!(text.contains("  worker-1: NVIDIA-RTX-PRO-6000, all-balanced (success)"));
        assert!(
            text.contains("[FAIL] node worker-2: nodes \"worker-2\" is not Ready\n"),
            "{text}"
        );
        assert!(text.contains("[FAIL] the Operator is not ready\n"));
        // The receipt keeps what was read, and says which node each worker is.
        let receipt: serde_json::Value = serde_json::from_str(&receipt).unwrap();
        assert_eq!(receipt["workers"]["worker-1"], first.as_str());
        assert_eq!(receipt["workers"]["worker-2"], second.as_str());
        assert_eq!(receipt["report"]["nodes"][0]["name"], second.as_str());
    }
}
