//! What a deploy reports: one outcome per target, the counts, and the terminal text.

use serde::Serialize;

use crate::engine::desired::TargetKey;
use crate::store::ProjectRecord;

/// Statuses that do not count as failures (fleet-engine §6.3 `_recount`).
pub const NOT_FAILED: &[&str] = &["deployed", "destroyed", "absent"];

/// One target's outcome (fleet-engine §8.4; operator output, not sanitized).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TargetResult {
    pub backend: &'static str,
    pub project_key: String,
    pub cluster_name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub project_id: String,
    pub project_created: bool,
    pub region: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub cluster_id: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub endpoint: String,
    pub node_group_ids: Vec<String>,
    pub status: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub error: String,
}

impl TargetResult {
    /// A target of `project` that has nothing applied yet, and so has not succeeded.
    pub(super) fn new(key: &TargetKey, region: &str, project: &ProjectRecord) -> TargetResult {
        TargetResult {
            backend: "mk8s",
            project_key: key.project_key.clone(),
            cluster_name: key.cluster.clone(),
            project_id: project.project_id.clone(),
            project_created: project.project_created,
            region: region.to_string(),
            cluster_id: String::new(),
            endpoint: String::new(),
            node_group_ids: Vec::new(),
            status: "error".into(),
            error: String::new(),
        }
    }

    pub(super) fn with_error(mut self, error: &str) -> TargetResult {
        self.status = "error".into();
        self.error = error.to_string();
        self
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct BackendCounts {
    pub mk8s: usize,
    pub soperator: usize,
}

impl BackendCounts {
    pub(super) fn of<'a>(backends: impl Iterator<Item = &'a str>) -> BackendCounts {
        let mut counts = BackendCounts::default();
        for backend in backends {
            match backend {
                "mk8s" => counts.mk8s += 1,
                "soperator" => counts.soperator += 1,
                _ => {}
            }
        }
        counts
    }
}

/// The result of a deploy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeployResult {
    pub name: String,
    pub tenant_id: String,
    pub region: String,
    pub project_prefix: String,
    pub profile: String,
    pub cloud: String,
    pub plan_digest: String,
    pub clusters: Vec<TargetResult>,
    pub deployed: usize,
    pub failed: usize,
    pub backend_counts: BackendCounts,
}

impl DeployResult {
    pub fn recount(&mut self) {
        self.deployed = self
            .clusters
            .iter()
            .filter(|c| c.status == "deployed")
            .count();
        self.failed = self
            .clusters
            .iter()
            .filter(|c| !NOT_FAILED.contains(&c.status.as_str()))
            .count();
        self.backend_counts = BackendCounts::of(self.clusters.iter().map(|c| c.backend));
    }

    /// `Fleet '<name>' in <region> (tenant <tenant>): <d> deployed, <f> failed.` and one line
    /// per cluster.
    pub fn render_text(&self) -> String {
        use std::fmt::Write;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "Fleet '{}' in {} (tenant {}): {} deployed, {} failed.",
            self.name, self.region, self.tenant_id, self.deployed, self.failed
        );
        for c in &self.clusters {
            if c.status == "deployed" {
                let id = if c.cluster_id.is_empty() {
                    "(no id)"
                } else {
                    &c.cluster_id
                };
                let _ = writeln!(
                    out,
                    "  [ok]   {}/{} -> {} (context fleet-{}-{}-{})",
                    c.project_key, c.cluster_name, id, self.name, c.project_key, c.cluster_name
                );
            } else {
                let why = if c.error.is_empty() {
                    &c.status
                } else {
                    &c.error
                };
                let _ = writeln!(
                    out,
                    "  [FAIL] {}/{}: {}",
                    c.project_key, c.cluster_name, why
                );
            }
        }
        out
    }
}
