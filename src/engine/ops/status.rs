//! Status: every spec target's inventory record merged with a live read of its cluster.

use serde::Serialize;

use super::deploy_result::{BackendCounts, backend_name};
use super::error::EngineError;
use super::records::{find_target, require_backend};
use crate::cloud::domain::Cloud;
use crate::engine::target_status::TargetStatus;
use crate::spec::{Backend, ClusterSpec, FleetSpec};
use crate::store::{InventoryStore, TargetRecord};

/// One target's status: the inventory merged with a live read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StatusEntry {
    #[serde(serialize_with = "backend_name")]
    pub backend: Backend,
    pub project_key: String,
    pub cluster_name: String,
    pub status: TargetStatus,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub project_id: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub cluster_id: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub live_state: String,
    pub node_groups: usize,
    pub nodes_ready: i64,
    pub nodes_wanted: i64,
    /// What fleetbot installed inside the cluster, with each add-on's live state.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub addons: Vec<AddonStatus>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub error: String,
}

/// One add-on of a target: `deployed`, `installing`, `failed`, … as the marketplace says,
/// `applied` for manifests, `absent` when the recorded release is gone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AddonStatus {
    pub name: String,
    pub state: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StatusResult {
    pub name: String,
    pub cloud: String,
    pub clusters: Vec<StatusEntry>,
    pub deployed: usize,
    pub failed: usize,
    pub backend_counts: BackendCounts,
}

impl StatusResult {
    pub fn render_text(&self) -> String {
        use std::fmt::Write;
        let mut out = format!("Fleet '{}':\n", self.name);
        for c in &self.clusters {
            let line = format!(
                "  {}/{}: {} {}",
                c.project_key, c.cluster_name, c.status, c.cluster_id
            );
            let _ = writeln!(out, "{}", line.trim_end());
            if c.node_groups > 0 {
                let _ = writeln!(
                    out,
                    "    nodes: {} of {} ready in {} node group{}",
                    c.nodes_ready,
                    c.nodes_wanted,
                    c.node_groups,
                    if c.node_groups == 1 { "" } else { "s" }
                );
            }
            if !c.addons.is_empty() {
                let addons: Vec<String> = c
                    .addons
                    .iter()
                    .map(|a| format!("{} {}", a.name, a.state))
                    .collect();
                let _ = writeln!(out, "    add-ons: {}", addons.join(", "));
            }
            if c.status == TargetStatus::Deployed
                && let Some(why) = c.unhealthy()
            {
                let _ = writeln!(out, "    not healthy: {why}");
            }
        }
        out
    }

    /// Whether every spec target is deployed and healthy: what `fleetbot status`'s exit code
    /// says, so a script need not read the document to know.
    pub fn healthy(&self) -> bool {
        self.clusters.iter().all(|c| c.unhealthy().is_none())
    }
}

/// Add-on states that are a working install.
const HEALTHY_ADDON_STATES: [&str; 2] = ["deployed", "applied"];

impl StatusEntry {
    /// Why this target is not deployed and healthy, or `None` when it is: recorded deployed,
    /// its cluster read live as ready, every node group's nodes ready, every add-on working.
    pub fn unhealthy(&self) -> Option<String> {
        if self.status != TargetStatus::Deployed {
            return Some(format!("{}", self.status));
        }
        if self.live_state != "ready" {
            let state = if self.live_state.is_empty() {
                "unread"
            } else {
                &self.live_state
            };
            return Some(format!("the cluster is {state}"));
        }
        if self.nodes_ready < self.nodes_wanted {
            return Some(format!(
                "{} of {} nodes ready",
                self.nodes_ready, self.nodes_wanted
            ));
        }
        let broken: Vec<String> = self
            .addons
            .iter()
            .filter(|a| !HEALTHY_ADDON_STATES.contains(&a.state.as_str()))
            .map(|a| format!("{} {}", a.name, a.state))
            .collect();
        (!broken.is_empty()).then(|| format!("add-ons {}", broken.join(", ")))
    }
}

impl StatusEntry {
    fn unknown(key: &str, cluster: &ClusterSpec) -> StatusEntry {
        StatusEntry {
            backend: cluster.backend,
            project_key: key.to_string(),
            cluster_name: cluster.name.clone(),
            status: TargetStatus::Unknown,
            project_id: String::new(),
            cluster_id: String::new(),
            live_state: String::new(),
            node_groups: 0,
            nodes_ready: 0,
            nodes_wanted: 0,
            addons: Vec::new(),
            error: String::new(),
        }
    }

    fn fail(&mut self, error: impl ToString) {
        self.status = TargetStatus::StatusError;
        self.error = error.to_string();
    }
}

/// Merges the live cluster and its node groups into a recorded target's entry.
async fn read_live<C: Cloud>(cloud: &C, entry: &mut StatusEntry, record: &TargetRecord) {
    let c = match cloud.get_cluster(&entry.cluster_id).await {
        Ok(c) => c,
        Err(e) if e.is_not_found() => {
            entry.live_state = "absent".into();
            if entry.status == TargetStatus::Deployed {
                entry.fail("the recorded cluster no longer exists");
            }
            return;
        }
        Err(e) => {
            entry.fail(e);
            return;
        }
    };
    entry.live_state = format!("{:?}", c.state).to_lowercase();
    match cloud.list_node_groups(&c.id).await {
        Ok(groups) => {
            entry.node_groups = groups.len();
            entry.nodes_ready = groups.iter().map(|g| g.ready_node_count).sum();
            // An autoscaling group promises its minimum; more is the autoscaler's choice.
            entry.nodes_wanted = groups
                .iter()
                .map(|g| g.spec.autoscale_min.unwrap_or(g.spec.node_count))
                .sum();
        }
        Err(e) => entry.fail(e),
    }
    if record.addons.is_empty() {
        return;
    }
    match cloud.list_releases(&c.project_id, &c.id).await {
        Ok(releases) => {
            entry.addons = record
                .addons
                .iter()
                .map(|a| AddonStatus {
                    name: a.name.clone(),
                    state: if a.release_id.is_empty() {
                        "applied".into()
                    } else {
                        releases
                            .iter()
                            .find(|r| r.id == a.release_id)
                            .map_or("absent", |r| r.state.as_str())
                            .into()
                    },
                })
                .collect();
        }
        Err(e) => entry.fail(e),
    }
}

async fn status_entry<C: Cloud>(
    cloud: &C,
    key: &str,
    cluster: &ClusterSpec,
    record: Option<&TargetRecord>,
) -> Result<StatusEntry, EngineError> {
    let mut entry = StatusEntry::unknown(key, cluster);
    let Some(r) = record else {
        return Ok(entry);
    };
    require_backend(
        r,
        cluster,
        "refusing status without backend ownership proof",
    )?;
    entry.status = TargetStatus::from_record(&r.status);
    entry.project_id = r.project_id.clone();
    entry.cluster_id = r.cluster_id.clone();
    entry.error = r.error.clone();
    if !r.cluster_id.is_empty() {
        read_live(cloud, &mut entry, r).await;
    }
    Ok(entry)
}

/// Every spec target: its inventory record merged with a live read of its cluster.
pub async fn status<C: Cloud, S: InventoryStore>(
    cloud: &C,
    store: &S,
    spec: &FleetSpec,
) -> Result<StatusResult, EngineError> {
    let records = store.targets(&spec.name).await?;
    let mut clusters = Vec::new();
    for (project, cluster) in spec.cluster_targets() {
        let key = project.key();
        let record = find_target(&records, &key, &cluster.name);
        clusters.push(status_entry(cloud, &key, cluster, record).await?);
    }
    Ok(StatusResult {
        name: spec.name.clone(),
        cloud: cloud.describe(),
        deployed: clusters
            .iter()
            .filter(|c| c.status == TargetStatus::Deployed)
            .count(),
        failed: clusters
            .iter()
            .filter(|c| c.status.is_failure() && c.status != TargetStatus::Unknown)
            .count(),
        backend_counts: BackendCounts::of(clusters.iter().map(|c| c.backend)),
        clusters,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployed() -> StatusEntry {
        StatusEntry {
            status: TargetStatus::Deployed,
            cluster_id: "c".into(),
            live_state: "ready".into(),
            node_groups: 2,
            nodes_ready: 3,
            nodes_wanted: 3,
            addons: vec![AddonStatus {
                name: "gpu-operator".into(),
                state: "deployed".into(),
            }],
            ..StatusEntry::unknown("a", &crate::spec::ClusterSpec::default())
        }
    }

    #[test]
    fn healthy_means_deployed_ready_with_every_node_and_add_on_working() {
        assert_eq!(deployed().unhealthy(), None);
        type Breaks = fn(&mut StatusEntry);
        let cases: [(Breaks, &str); 5] = [
            (|e| e.status = TargetStatus::Unknown, "unknown"),
            (
                |e| e.live_state = "updating".into(),
                "the cluster is updating",
            ),
            (|e| e.live_state.clear(), "the cluster is unread"),
            (|e| e.nodes_ready = 2, "2 of 3 nodes ready"),
            (
                |e| e.addons[0].state = "installing".into(),
                "add-ons gpu-operator installing",
            ),
        ];
        for (break_it, why) in cases {
            let mut entry = deployed();
            break_it(&mut entry);
            assert_eq!(entry.unhealthy().as_deref(), Some(why));
            let text = StatusResult {
                name: "f".into(),
                cloud: String::new(),
                clusters: vec![entry.clone()],
                deployed: 1,
                failed: 0,
                backend_counts: BackendCounts::default(),
            }
            .render_text();
            // Only a deployed target gets the line; the others' status says it already.
            assert_eq!(
                text.contains(&format!("    not healthy: {why}\n")),
                entry.status == TargetStatus::Deployed,
                "{text}"
            );
            let result = StatusResult {
                name: "f".into(),
                cloud: String::new(),
                clusters: vec![deployed(), entry],
                deployed: 2,
                failed: 0,
                backend_counts: BackendCounts::default(),
            };
            assert!(!result.healthy());
        }
    }
}
