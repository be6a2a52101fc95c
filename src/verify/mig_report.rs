//! The report of `verify-mig` (fleet-engine §7.3), and the pure judgement of a MIG cluster's
//! GPU nodes from what the cluster's API says: each node's MIG config label is the expected
//! layout and applied (`nvidia.com/mig.config.state: success`), it advertises exactly the
//! layout's slices for its GPUs, and it is Ready and schedulable.
//!
//! Unlike the storage and graphics reports, this one names nodes: that is the reference's
//! shape. A Nebius node's name is its compute instance's ID, so what is printed is
//! [`MigVerificationReport::published`] (`mig_public.rs`: workers by ordinal); the names
//! themselves go only to `--evidence-dir`, and never to a check run or a comment.

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
    /// The GPU Operator's version.
    pub operator_version: String,
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
            operator_version: mig_pins::GPU_OPERATOR_VERSION.into(),
        }
    }

    /// One GPU's instances under the layout, as NVML names their profiles, sorted.
    pub fn instances(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .per_gpu
            .iter()
            .flat_map(|(resource, n)| {
                let profile = resource.strip_prefix("nvidia.com/mig-").unwrap_or(resource);
                std::iter::repeat_n(profile.to_string(), usize::try_from(*n).unwrap_or(0))
            })
            .collect();
        out.sort();
        out
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

/// What kind of problem a finding is: the public word for it, which a check run may show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MigProblem {
    TargetIdentityFailed,
    VerificationOperationFailed,
    VerificationInterrupted,
    NoGpuNodes,
    MigConfigMismatch,
    MigConfigNotApplied,
    GpuCountMissing,
    MigSlicesMismatch,
    NodeUnschedulable,
    NodeNotReady,
    OperatorNotReady,
    OperatorVersionMismatch,
    StaleDriverPod,
    MigModeDisabled,
    MigLayoutMismatch,
    MigEvidenceInvalid,
    CudaSmokeFailed,
    NotSteady,
}

impl MigProblem {
    pub fn as_str(self) -> &'static str {
        match self {
            MigProblem::TargetIdentityFailed => "target_identity_failed",
            MigProblem::VerificationOperationFailed => "verification_operation_failed",
            MigProblem::VerificationInterrupted => "verification_interrupted",
            MigProblem::NoGpuNodes => "no_gpu_nodes",
            MigProblem::MigConfigMismatch => "mig_config_mismatch",
            MigProblem::MigConfigNotApplied => "mig_config_not_applied",
            MigProblem::GpuCountMissing => "gpu_count_missing",
            MigProblem::MigSlicesMismatch => "mig_slices_mismatch",
            MigProblem::NodeUnschedulable => "node_unschedulable",
            MigProblem::NodeNotReady => "node_not_ready",
            MigProblem::OperatorNotReady => "operator_not_ready",
            MigProblem::OperatorVersionMismatch => "operator_version_mismatch",
            MigProblem::StaleDriverPod => "stale_driver_pod",
            MigProblem::MigModeDisabled => "mig_mode_disabled",
            MigProblem::MigLayoutMismatch => "mig_layout_mismatch",
            MigProblem::MigEvidenceInvalid => "mig_evidence_invalid",
            MigProblem::CudaSmokeFailed => "cuda_smoke_failed",
            MigProblem::NotSteady => "not_steady",
        }
    }

    /// The category in plain words, for a check run.
    pub fn explain(self) -> &'static str {
        match self {
            MigProblem::TargetIdentityFailed => {
                "the cluster could not be proven to be the one this fleet deployed"
            }
            MigProblem::VerificationOperationFailed => {
                "a Kubernetes call or a probe pod failed, or its cleanup could not be proven"
            }
            MigProblem::VerificationInterrupted => "the run was interrupted",
            MigProblem::NoGpuNodes => "the cluster has no GPU node",
            MigProblem::MigConfigMismatch => "a GPU node asks for another MIG layout",
            MigProblem::MigConfigNotApplied => "the MIG manager has not applied a node's layout",
            MigProblem::GpuCountMissing => "a GPU node does not say how many GPUs it has",
            MigProblem::MigSlicesMismatch => {
                "a GPU node does not advertise exactly its layout's MIG slices"
            }
            MigProblem::NodeUnschedulable => "a GPU node is cordoned",
            MigProblem::NodeNotReady => "a GPU node is not Ready",
            MigProblem::OperatorNotReady => "the GPU Operator's ClusterPolicy is not ready",
            MigProblem::OperatorVersionMismatch => "the GPU Operator is not the pinned version",
            MigProblem::StaleDriverPod => {
                "a driver pod runs an old template (OnDelete); `--reconcile` replaces it safely"
            }
            MigProblem::MigModeDisabled => "a GPU's driver reports MIG mode off",
            MigProblem::MigLayoutMismatch => {
                "a GPU's instances, as its driver lists them, are not the layout"
            }
            MigProblem::MigEvidenceInvalid => {
                "a MIG probe's evidence is missing, malformed or not from its node"
            }
            MigProblem::CudaSmokeFailed => "vectorAdd failed on a MIG slice",
            MigProblem::NotSteady => {
                "two consecutive snapshots did not agree within the health timeout"
            }
        }
    }
}

/// One thing wrong: its kind, the node it is about (private: the operator's terminal only),
/// and a message that names no node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigFinding {
    pub problem: MigProblem,
    pub node: Option<String>,
    pub message: String,
}

impl MigFinding {
    pub fn node(problem: MigProblem, node: &str, message: String) -> MigFinding {
        MigFinding {
            problem,
            node: Some(node.to_string()),
            message,
        }
    }

    pub fn cluster(problem: MigProblem, message: impl Into<String>) -> MigFinding {
        MigFinding {
            problem,
            node: None,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for MigFinding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.node {
            Some(node) => write!(f, "node {node}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl Serialize for MigFinding {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// The GPU nodes' rows and what is wrong with them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigJudgement {
    pub nodes: Vec<MigNode>,
    pub errors: Vec<MigFinding>,
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
            errors.push(MigFinding::node(
                MigProblem::MigConfigMismatch,
                name,
                format!("{CONFIG_LABEL} is {config:?}, not {:?}", expected.config),
            ));
        }
        if state != CONFIG_APPLIED {
            errors.push(MigFinding::node(
                MigProblem::MigConfigNotApplied,
                name,
                format!("{CONFIG_STATE_LABEL} is {state:?}, not {CONFIG_APPLIED:?}"),
            ));
        }
        let gpus = match label(node, GPU_COUNT_LABEL).parse::<i64>() {
            Ok(n) if n > 0 => n,
            _ => {
                errors.push(MigFinding::node(
                    MigProblem::GpuCountMissing,
                    name,
                    format!("no GPU count ({GPU_COUNT_LABEL})"),
                ));
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
                    errors.push(MigFinding::node(
                        MigProblem::MigSlicesMismatch,
                        name,
                        format!("{resource} is {text:?}, not a count"),
                    ));
                    0
                }),
            };
            if have != want {
                errors.push(MigFinding::node(
                    MigProblem::MigSlicesMismatch,
                    name,
                    format!("{resource} allocatable {have}, expected {want}"),
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
            errors.push(MigFinding::node(
                MigProblem::NodeUnschedulable,
                name,
                "not schedulable".into(),
            ));
        }
        if !node.ready {
            errors.push(MigFinding::node(
                MigProblem::NodeNotReady,
                name,
                "not Ready".into(),
            ));
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
        errors.push(MigFinding::cluster(
            MigProblem::NoGpuNodes,
            "no GPU node in the cluster",
        ));
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
    pub errors: Vec<MigFinding>,
    /// The SHA-256 of the private receipt written under `--evidence-dir`; absent without one.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub evidence_sha256: String,
}

impl MigVerificationReport {
    /// The report; `ready` only when the Operator is ready at its pinned version, every node
    /// row is right, every GPU the driver reports has MIG on with exactly the layout's
    /// instances, vectorAdd passed on every slice, and nothing else (`extra`: identity,
    /// stale driver pods, evidence, cleanup) was found.
    pub fn new(
        operator_state: String,
        operator_version: String,
        judgement: MigJudgement,
        hardware: Vec<MigHardware>,
        cuda_smoke: CudaSmoke,
        extra: Vec<MigFinding>,
        expected: &MigExpectation,
    ) -> MigVerificationReport {
        let mut errors = extra;
        errors.extend(judgement.errors);
        if operator_state != "ready" {
            errors.push(MigFinding::cluster(
                MigProblem::OperatorNotReady,
                format!("GPU Operator state is {operator_state:?}, not \"ready\""),
            ));
        }
        if operator_version != expected.operator_version {
            errors.push(MigFinding::cluster(
                MigProblem::OperatorVersionMismatch,
                format!(
                    "GPU Operator version is {operator_version:?}, not {:?}",
                    expected.operator_version
                ),
            ));
        }
        let layout = expected.instances();
        for h in &hardware {
            if h.mig_mode != "Enabled" {
                errors.push(MigFinding::node(
                    MigProblem::MigModeDisabled,
                    &h.node,
                    format!("GPU {} has MIG mode {:?}", h.gpu_index, h.mig_mode),
                ));
                continue;
            }
            let mut found = h.instances.clone();
            found.sort();
            if found != layout {
                errors.push(MigFinding::node(
                    MigProblem::MigLayoutMismatch,
                    &h.node,
                    format!(
                        "GPU {} has instances [{}], not [{}]",
                        h.gpu_index,
                        found.join(", "),
                        layout.join(", ")
                    ),
                ));
            }
        }
        match cuda_smoke {
            CudaSmoke::Passed => {}
            CudaSmoke::Failed => errors.push(MigFinding::cluster(
                MigProblem::CudaSmokeFailed,
                "the CUDA smoke on a MIG slice failed",
            )),
            // Readiness is never inferred: a smoke that did not run is not a pass.
            CudaSmoke::NotRun if errors.is_empty() => errors.push(MigFinding::cluster(
                MigProblem::CudaSmokeFailed,
                "the CUDA smoke on the MIG slices did not run",
            )),
            CudaSmoke::NotRun => {}
        }
        MigVerificationReport {
            ready: errors.is_empty() && !judgement.nodes.is_empty(),
            operator_state,
            operator_version,
            nodes: judgement.nodes,
            hardware,
            cuda_smoke,
            errors,
            evidence_sha256: String::new(),
        }
    }

    /// The problems found, each once, in their order.
    pub fn problems(&self) -> Vec<MigProblem> {
        let mut out: Vec<MigProblem> = self.errors.iter().map(|e| e.problem).collect();
        out.sort();
        out.dedup();
        out
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
        if !self.evidence_sha256.is_empty() {
            out.push_str(&format!("Evidence sha256: {}\n", self.evidence_sha256));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(findings: &[MigFinding]) -> Vec<String> {
        findings.iter().map(ToString::to_string).collect()
    }

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
        assert_eq!(j.errors, Vec::new());
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
            Vec::new(),
            &MigExpectation::pinned(),
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
            texts(&j.errors),
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
            Vec::new(),
            &MigExpectation::pinned(),
        );
        assert!(!report.ready);
        let text = report.render_text();
        assert!(text.starts_with("MIG NOT ready: 2 node(s), Operator unknown\n"));
        assert!(text.contains(
            "  gpu-0: NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition, all-balanced (pending), mig-1g.24gb 1/2, mig-2g.48gb 1/1, NotReady, unschedulable\n"
        ));
        assert!(text.contains("[FAIL] GPU Operator state is \"notReady\", not \"ready\"\n"));
        assert!(text.ends_with("[FAIL] the CUDA smoke on a MIG slice failed\n"));
        assert!(text.contains("[FAIL] GPU Operator version is \"\", not \"v26.3.3\"\n"));
        assert_eq!(text.matches("[FAIL] ").count(), 9);
        assert_eq!(
            report.problems(),
            [
                MigProblem::MigConfigMismatch,
                MigProblem::MigConfigNotApplied,
                MigProblem::MigSlicesMismatch,
                MigProblem::NodeUnschedulable,
                MigProblem::NodeNotReady,
                MigProblem::OperatorNotReady,
                MigProblem::OperatorVersionMismatch,
                MigProblem::CudaSmokeFailed,
            ]
        );
    }

    #[test]
    fn a_cluster_without_gpu_nodes_is_not_ready() {
        let j = judge_mig(&[cpu_node()], &MigExpectation::pinned());
        assert_eq!(texts(&j.errors), vec!["no GPU node in the cluster"]);
        let report = MigVerificationReport::new(
            "ready".into(),
            mig_pins::GPU_OPERATOR_VERSION.into(),
            j,
            Vec::new(),
            CudaSmoke::NotRun,
            Vec::new(),
            &MigExpectation::pinned(),
        );
        assert!(!report.ready);
        let mut no_count = mig_node("gpu-0");
        no_count.labels.remove(GPU_COUNT_LABEL);
        let j = judge_mig(&[no_count], &MigExpectation::pinned());
        assert!(
            texts(&j.errors)
                .contains(&"node gpu-0: no GPU count (nvidia.com/gpu.count)".to_string())
        );
    }

    #[test]
    fn hardware_must_show_mig_on_with_the_layout_and_the_smoke_must_have_run() {
        let nodes = [mig_node("gpu-0")];
        let hw = |mode: &str, instances: &[&str]| MigHardware {
            node: "gpu-0".into(),
            gpu_index: 0,
            mig_mode: mode.into(),
            instances: instances.iter().map(|s| s.to_string()).collect(),
        };
        let judge = |hardware: Vec<MigHardware>, smoke: CudaSmoke| {
            MigVerificationReport::new(
                "ready".into(),
                mig_pins::GPU_OPERATOR_VERSION.into(),
                judge_mig(&nodes, &MigExpectation::pinned()),
                hardware,
                smoke,
                Vec::new(),
                &MigExpectation::pinned(),
            )
        };
        let order = judge(
            vec![hw("Enabled", &["2g.48gb", "1g.24gb", "1g.24gb"])],
            CudaSmoke::Passed,
        );
        assert!(order.ready, "{:?}", order.errors);
        let off = judge(vec![hw("Disabled", &[])], CudaSmoke::Passed);
        assert_eq!(off.problems(), [MigProblem::MigModeDisabled]);
        let other = judge(
            vec![hw("Enabled", &["1g.24gb", "1g.24gb"])],
            CudaSmoke::Passed,
        );
        assert_eq!(
            texts(&other.errors),
            ["node gpu-0: GPU 0 has instances [1g.24gb, 1g.24gb], not [1g.24gb, 1g.24gb, 2g.48gb]"]
        );
        let unrun = judge(
            vec![hw("Enabled", &["1g.24gb", "1g.24gb", "2g.48gb"])],
            CudaSmoke::NotRun,
        );
        assert!(!unrun.ready);
        assert_eq!(unrun.problems(), [MigProblem::CudaSmokeFailed]);
        let json: serde_json::Value = serde_json::from_str(&other.render_json()).unwrap();
        assert_eq!(json["errors"][0], texts(&other.errors)[0]);
    }
}
