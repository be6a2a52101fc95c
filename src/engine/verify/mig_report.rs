//! The report of `verify-mig` (fleet-engine §7.3), and the pure judgement of a MIG cluster's
//! GPU nodes from what the cluster's API says: each node's MIG config label is the expected
//! layout and applied (`nvidia.com/mig.config.state: success`), it advertises exactly the
//! layout's slices for its GPUs, and it is Ready and schedulable.
//!
//! Unlike the storage and graphics reports, this one names nodes: that is the reference's
//! shape, for the operator's own terminal. It must never reach a check run, a comment or any
//! other public surface.

use std::collections::BTreeMap;

use serde::Serialize;

use super::json;
use crate::clusters::Node;
use crate::spec::model::mig_pins;

pub const CONFIG_LABEL: &str = "nvidia.com/mig.config";
pub const CONFIG_STATE_LABEL: &str = "nvidia.com/mig.config.state";
pub const PRODUCT_LABEL: &str = "nvidia.com/gpu.product";
pub const GPU_COUNT_LABEL: &str = "nvidia.com/gpu.count";
const GPU_PRESENT_LABEL: &str = "nvidia.com/gpu.present";
/// The state the MIG manager writes once a layout is applied.
const CONFIG_APPLIED: &str = "success";

/// What a MIG target's GPU nodes must show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigExpectation {
    /// The layout's name, as the MIG config label carries it.
    pub config: String,
    /// MIG resource → slices each GPU gives under the layout.
    pub per_gpu: BTreeMap<String, i64>,
}

impl MigExpectation {
    /// fleetbot's pinned layout (`all-balanced` on the RTX PRO 6000's 96 GB, the MIG pool's
    /// platform): two 1g.24gb slices and one 2g.48gb slice per GPU, as the GPU Operator's
    /// values and the add-on promises say (engine/addons.rs).
    pub fn pinned() -> MigExpectation {
        MigExpectation {
            config: mig_pins::CONFIG.into(),
            per_gpu: [
                ("nvidia.com/mig-1g.24gb".to_string(), 2),
                ("nvidia.com/mig-2g.48gb".to_string(), 1),
            ]
            .into(),
        }
    }
}

/// One GPU node as the report shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MigNode {
    pub name: String,
    pub product: String,
    pub config: String,
    pub config_state: String,
    /// MIG resource → the slices the node's GPUs give under the expected layout
    /// (`nvidia.com/gpu.count` × slices per GPU): what `allocatable` must equal.
    pub capacity: BTreeMap<String, i64>,
    /// MIG resource → what the node advertises (0 where it advertises none).
    pub allocatable: BTreeMap<String, i64>,
    pub schedulable: bool,
    pub ready: bool,
}

/// One GPU's MIG state as the node's driver reports it (`nvidia-smi` in the driver pod).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MigHardware {
    pub node: String,
    pub gpu_index: u32,
    /// `Enabled` once MIG mode is on.
    pub mig_mode: String,
    /// The GPU instances' profiles (`1g.24gb`, …).
    pub instances: Vec<String>,
}

/// The CUDA smoke on a MIG slice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CudaSmoke {
    NotRun,
    Passed,
    Failed,
}

/// The GPU nodes' rows and what is wrong with them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigJudgement {
    pub nodes: Vec<MigNode>,
    pub errors: Vec<String>,
}

fn label<'a>(node: &'a Node, key: &str) -> &'a str {
    node.labels.get(key).map(String::as_str).unwrap_or_default()
}

/// Judges the cluster's GPU nodes (those GPU Feature Discovery marks, or that carry a MIG
/// config label) against the expected layout. Pure: the same nodes give the same rows.
pub fn judge_mig(nodes: &[Node], expected: &MigExpectation) -> MigJudgement {
    let mut rows = Vec::new();
    let mut errors = Vec::new();
    let gpu_nodes = nodes
        .iter()
        .filter(|n| label(n, GPU_PRESENT_LABEL) == "true" || n.labels.contains_key(CONFIG_LABEL));
    for node in gpu_nodes {
        let name = &node.name;
        let config = label(node, CONFIG_LABEL);
        let state = label(node, CONFIG_STATE_LABEL);
        if config != expected.config {
            errors.push(format!(
                "node {name}: {CONFIG_LABEL} is {config:?}, not {:?}",
                expected.config
            ));
        }
        if state != CONFIG_APPLIED {
            errors.push(format!(
                "node {name}: {CONFIG_STATE_LABEL} is {state:?}, not {CONFIG_APPLIED:?}"
            ));
        }
        let gpus = match label(node, GPU_COUNT_LABEL).parse::<i64>() {
            Ok(n) if n > 0 => n,
            _ => {
                errors.push(format!("node {name}: no GPU count ({GPU_COUNT_LABEL})"));
                0
            }
        };
        let mut capacity = BTreeMap::new();
        let mut allocatable = BTreeMap::new();
        for (resource, per_gpu) in &expected.per_gpu {
            let want = gpus * per_gpu;
            let have = match node.allocatable.get(resource) {
                None => 0,
                Some(text) => text.parse::<i64>().unwrap_or_else(|_| {
                    errors.push(format!("node {name}: {resource} is {text:?}, not a count"));
                    0
                }),
            };
            if have != want {
                errors.push(format!(
                    "node {name}: {resource} allocatable {have}, expected {want}"
                ));
            }
            capacity.insert(resource.clone(), want);
            allocatable.insert(resource.clone(), have);
        }
        // Cordoned, as the storage checks read it (the kubelet's unschedulable taint).
        let schedulable = !node
            .taints
            .iter()
            .any(|t| t.starts_with("node.kubernetes.io/unschedulable"));
        if !schedulable {
            errors.push(format!("node {name}: not schedulable"));
        }
        if !node.ready {
            errors.push(format!("node {name}: not Ready"));
        }
        rows.push(MigNode {
            name: name.clone(),
            product: label(node, PRODUCT_LABEL).to_string(),
            config: config.to_string(),
            config_state: state.to_string(),
            capacity,
            allocatable,
            schedulable,
            ready: node.ready,
        });
    }
    if rows.is_empty() {
        errors.push("no GPU node in the cluster".into());
    }
    MigJudgement {
        nodes: rows,
        errors,
    }
}

/// `MigVerificationReport.as_dict()`'s shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MigVerificationReport {
    pub ready: bool,
    /// The GPU Operator's ClusterPolicy state (`ready` when it has converged).
    pub operator_state: String,
    pub operator_version: String,
    pub nodes: Vec<MigNode>,
    pub hardware: Vec<MigHardware>,
    pub cuda_smoke: CudaSmoke,
    pub errors: Vec<String>,
}

impl MigVerificationReport {
    /// The report; `ready` only when the Operator is ready, every node row is right, every
    /// GPU the driver reports has MIG on, and the CUDA smoke did not fail.
    pub fn new(
        operator_state: String,
        operator_version: String,
        judgement: MigJudgement,
        hardware: Vec<MigHardware>,
        cuda_smoke: CudaSmoke,
    ) -> MigVerificationReport {
        let mut errors = judgement.errors;
        if operator_state != "ready" {
            errors.push(format!(
                "GPU Operator state is {operator_state:?}, not \"ready\""
            ));
        }
        for h in hardware.iter().filter(|h| h.mig_mode != "Enabled") {
            errors.push(format!(
                "node {}: GPU {} has MIG mode {:?}",
                h.node, h.gpu_index, h.mig_mode
            ));
        }
        if cuda_smoke == CudaSmoke::Failed {
            errors.push("the CUDA smoke on a MIG slice failed".into());
        }
        MigVerificationReport {
            ready: errors.is_empty() && !judgement.nodes.is_empty(),
            operator_state,
            operator_version,
            nodes: judgement.nodes,
            hardware,
            cuda_smoke,
            errors,
        }
    }

    pub fn render_json(&self) -> String {
        json::pretty_sorted(self)
    }

    pub fn render_text(&self) -> String {
        let version = if self.operator_version.is_empty() {
            "unknown"
        } else {
            &self.operator_version
        };
        let mut out = format!(
            "MIG {}: {} node(s), Operator {version}\n",
            if self.ready { "ready" } else { "NOT ready" },
            self.nodes.len(),
        );
        for n in &self.nodes {
            let slices: Vec<String> = n
                .capacity
                .iter()
                .map(|(resource, want)| {
                    let short = resource.strip_prefix("nvidia.com/").unwrap_or(resource);
                    let have = n.allocatable.get(resource).copied().unwrap_or(0);
                    format!("{short} {have}/{want}")
                })
                .collect();
            out.push_str(&format!(
                "  {}: {}, {} ({}), {}, {}, {}\n",
                n.name,
                if n.product.is_empty() {
                    "unknown GPU"
                } else {
                    &n.product
                },
                if n.config.is_empty() {
                    "no MIG config"
                } else {
                    &n.config
                },
                if n.config_state.is_empty() {
                    "no state"
                } else {
                    &n.config_state
                },
                slices.join(", "),
                if n.ready { "Ready" } else { "NotReady" },
                if n.schedulable {
                    "schedulable"
                } else {
                    "unschedulable"
                },
            ));
        }
        for e in &self.errors {
            out.push_str(&format!("[FAIL] {e}\n"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mig_node(name: &str) -> Node {
        Node {
            name: name.into(),
            uid: format!("uid-{name}"),
            ready: true,
            labels: [
                (GPU_PRESENT_LABEL, "true"),
                (CONFIG_LABEL, "all-balanced"),
                (CONFIG_STATE_LABEL, "success"),
                (
                    PRODUCT_LABEL,
                    "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition",
                ),
                (GPU_COUNT_LABEL, "1"),
            ]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
            allocatable: [
                ("nvidia.com/gpu", "0"),
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

    fn cpu_node() -> Node {
        Node {
            labels: BTreeMap::new(),
            allocatable: BTreeMap::new(),
            ..mig_node("cpu-0")
        }
    }

    #[test]
    fn applied_layouts_with_their_slices_are_ready() {
        let j = judge_mig(
            &[cpu_node(), mig_node("gpu-0"), mig_node("gpu-1")],
            &MigExpectation::pinned(),
        );
        assert_eq!(j.errors, Vec::<String>::new());
        assert_eq!(j.nodes.len(), 2);
        assert_eq!(j.nodes[0].capacity["nvidia.com/mig-1g.24gb"], 2);
        let report = MigVerificationReport::new(
            "ready".into(),
            mig_pins::GPU_OPERATOR_VERSION.into(),
            j,
            vec![MigHardware {
                node: "gpu-0".into(),
                gpu_index: 0,
                mig_mode: "Enabled".into(),
                instances: vec!["1g.24gb".into(), "1g.24gb".into(), "2g.48gb".into()],
            }],
            CudaSmoke::Passed,
        );
        assert!(report.ready);
        assert_eq!(
            report.render_text(),
            "MIG ready: 2 node(s), Operator v26.3.3\n  gpu-0: NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition, all-balanced (success), mig-1g.24gb 2/2, mig-2g.48gb 1/1, Ready, schedulable\n  gpu-1: NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition, all-balanced (success), mig-1g.24gb 2/2, mig-2g.48gb 1/1, Ready, schedulable\n"
        );
        let json: serde_json::Value = serde_json::from_str(&report.render_json()).unwrap();
        assert_eq!(json["nodes"][1]["allocatable"]["nvidia.com/mig-2g.48gb"], 1);
        assert_eq!(json["cuda_smoke"], "passed");
        assert_eq!(json["hardware"][0]["mig_mode"], "Enabled");
        let keys: Vec<&String> = json.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "cuda_smoke",
                "errors",
                "hardware",
                "nodes",
                "operator_state",
                "operator_version",
                "ready"
            ]
        );
    }

    #[test]
    fn every_fault_of_a_node_is_one_fail_line() {
        let mut pending = mig_node("gpu-0");
        pending
            .labels
            .insert(CONFIG_STATE_LABEL.into(), "pending".into());
        pending
            .allocatable
            .insert("nvidia.com/mig-1g.24gb".into(), "1".into());
        pending
            .taints
            .push("node.kubernetes.io/unschedulable=:NoSchedule".into());
        pending.ready = false;
        let mut other = mig_node("gpu-1");
        other
            .labels
            .insert(CONFIG_LABEL.into(), "all-1g.12gb".into());
        other.allocatable.remove("nvidia.com/mig-2g.48gb");
        let j = judge_mig(&[pending, other], &MigExpectation::pinned());
        assert_eq!(
            j.errors,
            vec![
                "node gpu-0: nvidia.com/mig.config.state is \"pending\", not \"success\"",
                "node gpu-0: nvidia.com/mig-1g.24gb allocatable 1, expected 2",
                "node gpu-0: not schedulable",
                "node gpu-0: not Ready",
                "node gpu-1: nvidia.com/mig.config is \"all-1g.12gb\", not \"all-balanced\"",
                "node gpu-1: nvidia.com/mig-2g.48gb allocatable 0, expected 1",
            ]
        );
        let report = MigVerificationReport::new(
            "notReady".into(),
            String::new(),
            j,
            Vec::new(),
            CudaSmoke::Failed,
        );
        assert!(!report.ready);
        let text = report.render_text();
        assert!(text.starts_with("MIG NOT ready: 2 node(s), Operator unknown\n"));
        assert!(text.contains(
            "  gpu-0: NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition, all-balanced (pending), mig-1g.24gb 1/2, mig-2g.48gb 1/1, NotReady, unschedulable\n"
        ));
        assert!(text.contains("[FAIL] GPU Operator state is \"notReady\", not \"ready\"\n"));
        assert!(text.ends_with("[FAIL] the CUDA smoke on a MIG slice failed\n"));
        assert_eq!(text.matches("[FAIL] ").count(), 8);
    }

    #[test]
    fn a_cluster_without_gpu_nodes_is_not_ready() {
        let j = judge_mig(&[cpu_node()], &MigExpectation::pinned());
        assert_eq!(j.errors, vec!["no GPU node in the cluster"]);
        let report = MigVerificationReport::new(
            "ready".into(),
            "v".into(),
            j,
            Vec::new(),
            CudaSmoke::NotRun,
        );
        assert!(!report.ready);
        let mut no_count = mig_node("gpu-0");
        no_count.labels.remove(GPU_COUNT_LABEL);
        let j = judge_mig(&[no_count], &MigExpectation::pinned());
        assert!(
            j.errors
                .contains(&"node gpu-0: no GPU count (nvidia.com/gpu.count)".to_string())
        );
    }
}
