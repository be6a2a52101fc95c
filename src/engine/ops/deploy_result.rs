//! What a deploy reports: one outcome per target, the counts, and the terminal text.

use serde::{Serialize, Serializer};

use super::destroy::DestroyEntry;
use super::object_storage::ObjectStorageResult;
use crate::engine::desired::TargetKey;
use crate::engine::target_status::TargetStatus;
use crate::spec::Backend;
use crate::store::ProjectRecord;

/// A backend as its name, as the results have always shown it.
pub(super) fn backend_name<S: Serializer>(backend: &Backend, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(backend.as_str())
}

/// One target's outcome (fleet-engine §8.4; operator output, not sanitized).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TargetResult {
    #[serde(serialize_with = "backend_name")]
    pub backend: Backend,
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
    pub status: TargetStatus,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub error: String,
    /// The project's object storage, once its bucket is ready (§6.9); absent without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object_storage: Option<ObjectStorageResult>,
    /// Not touched: the cloud no longer held the target as the approved plan read it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub changed_since_plan: bool,
}

impl TargetResult {
    /// A target of `project` that has nothing applied yet, and so has not succeeded.
    pub(super) fn new(key: &TargetKey, region: &str, project: &ProjectRecord) -> TargetResult {
        TargetResult {
            backend: Backend::Mk8s,
            project_key: key.project_key.clone(),
            cluster_name: key.cluster.clone(),
            project_id: project.project_id.clone(),
            project_created: project.project_created,
            region: region.to_string(),
            cluster_id: String::new(),
            endpoint: String::new(),
            node_group_ids: Vec::new(),
            status: TargetStatus::Error,
            error: String::new(),
            object_storage: None,
            changed_since_plan: false,
        }
    }

    pub(super) fn with_error(mut self, error: &str) -> TargetResult {
        self.status = TargetStatus::Error;
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
    pub(super) fn of(backends: impl Iterator<Item = Backend>) -> BackendCounts {
        let mut counts = BackendCounts::default();
        for backend in backends {
            match backend {
                Backend::Mk8s => counts.mk8s += 1,
                Backend::Soperator => counts.soperator += 1,
            }
        }
        counts
    }
}

/// The result of a deploy.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DeployResult {
    pub name: String,
    pub tenant_id: String,
    pub region: String,
    pub project_prefix: String,
    pub profile: String,
    pub cloud: String,
    pub plan_digest: String,
    /// Whether the live plan applied had anything to create, change or delete; `false` for a
    /// redeploy of a fleet that already matched its spec.
    pub changed: bool,
    pub clusters: Vec<TargetResult>,
    pub deployed: usize,
    pub failed: usize,
    pub backend_counts: BackendCounts,
    /// With prune: the recorded targets the spec no longer declares, torn down (or left
    /// `destroy-incomplete`, which counts in `failed`). Absent when there were none, so the
    /// result of a deploy without any keeps its shape.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pruned: Vec<DestroyEntry>,
    /// Without prune: `project/cluster` of each recorded target the spec no longer declares
    /// that is still running; deploy leaves it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_pruned: Vec<String>,
}

impl DeployResult {
    /// Folds in the result of another deploy of the same fleet (a later wave): its targets
    /// are added, counts summed, and the fleet's own fields kept from the first that had them.
    pub fn absorb(&mut self, other: DeployResult) {
        if self.name.is_empty() {
            self.name = other.name;
            self.tenant_id = other.tenant_id;
            self.region = other.region;
            self.project_prefix = other.project_prefix;
            self.profile = other.profile;
            self.cloud = other.cloud;
            self.plan_digest = other.plan_digest;
        }
        self.changed |= other.changed;
        self.clusters.extend(other.clusters);
        self.deployed += other.deployed;
        self.failed += other.failed;
        self.backend_counts.mk8s += other.backend_counts.mk8s;
        self.backend_counts.soperator += other.backend_counts.soperator;
        self.pruned.extend(other.pruned);
        for target in other.not_pruned {
            if !self.not_pruned.contains(&target) {
                self.not_pruned.push(target);
            }
        }
    }
}

impl DeployResult {
    pub fn recount(&mut self) {
        self.deployed = self
            .clusters
            .iter()
            .filter(|c| c.status == TargetStatus::Deployed)
            .count();
        self.failed = self
            .clusters
            .iter()
            .map(|c| &c.status)
            .chain(self.pruned.iter().map(|p| &p.status))
            .filter(|status| status.is_failure())
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
            if c.status == TargetStatus::Deployed {
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
                    c.status.as_str()
                } else {
                    c.error.as_str()
                };
                let _ = writeln!(
                    out,
                    "  [FAIL] {}/{}: {}",
                    c.project_key, c.cluster_name, why
                );
            }
        }
        for p in &self.pruned {
            let target = format!("{}/{}", p.project_key, p.cluster_name);
            if p.status.is_failure() {
                let _ = writeln!(
                    out,
                    "  [FAIL] {target}: removed from the spec; teardown incomplete: {}",
                    p.errors.join("; ")
                );
                if !p.retry_command.is_empty() {
                    let _ = writeln!(out, "      retry: {}", p.retry_command);
                }
            } else {
                let _ = writeln!(
                    out,
                    "  [pruned] {target}: removed from the spec; {}",
                    p.status
                );
            }
        }
        for target in &self.not_pruned {
            let _ = writeln!(
                out,
                "  [kept] {target}: removed from the spec and still running; deploy --prune deletes it"
            );
        }
        if !self.changed && self.failed == 0 {
            let _ = writeln!(
                out,
                "Nothing changed: every selected target already matched the spec."
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_result_shows_its_backend_and_status_as_text() {
        let key = TargetKey {
            project_key: "a".into(),
            cluster: "train".into(),
        };
        let result =
            TargetResult::new(&key, "eu-north1", &ProjectRecord::default()).with_error("boom");
        assert_eq!(
            serde_json::to_string(&result).unwrap(),
            r#"{"backend":"mk8s","project_key":"a","cluster_name":"train","project_created":false,"region":"eu-north1","node_group_ids":[],"status":"error","error":"boom"}"#
        );
    }

    fn result() -> DeployResult {
        DeployResult {
            name: "f".into(),
            tenant_id: "t".into(),
            region: "eu-north1".into(),
            project_prefix: String::new(),
            profile: String::new(),
            cloud: "sim".into(),
            plan_digest: "d".into(),
            changed: true,
            clusters: Vec::new(),
            deployed: 0,
            failed: 0,
            backend_counts: BackendCounts::default(),
            pruned: Vec::new(),
            not_pruned: Vec::new(),
        }
    }

    #[test]
    fn a_result_without_prune_entries_keeps_its_shape() {
        let json = serde_json::to_value(result()).unwrap();
        let keys: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert!(
            !keys.contains(&"pruned") && !keys.contains(&"not_pruned"),
            "{keys:?}"
        );
    }

    #[test]
    fn pruned_targets_count_their_failures_and_kept_ones_say_how_to_delete_them() {
        let mut r = result();
        let gone = DestroyEntry::new("a", "old", TargetStatus::Destroyed);
        let mut stuck = DestroyEntry::new("a", "older", TargetStatus::DestroyIncomplete);
        stuck.errors = vec!["cluster: busy".into()];
        r.pruned = vec![gone, stuck];
        r.not_pruned = vec!["platform/old".into()];
        r.recount();
        assert_eq!(r.failed, 1);
        let text = r.render_text();
        assert!(
            text.contains("  [pruned] a/old: removed from the spec; destroyed\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "  [FAIL] a/older: removed from the spec; teardown incomplete: cluster: busy"
            ),
            "{text}"
        );
        assert!(
            text.contains("  [kept] platform/old: removed from the spec and still running; deploy --prune deletes it\n"),
            "{text}"
        );
    }
}
