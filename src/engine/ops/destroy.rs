//! Destroy: the selected targets the inventory records, torn down by exact IDs, then the
//! networks fleetbot created for projects with no target left. Projects and buckets are kept.

use serde::Serialize;

use super::destroy_target::{Teardown, left_behind};
use super::error::EngineError;
use super::options::{LifecycleOptions, select};
use super::progress::{Event, Outcome, Progress};
use super::records::{find_target, now_ms, require_selected_backends};
use crate::cloud::client::idempotency_key;
use crate::cloud::domain::Cloud;
use crate::engine::target_status::TargetStatus;
use crate::spec::FleetSpec;
use crate::store::{InventoryStore, ProjectRecord, TargetRecord};

/// One destroyed (or not) target or network.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DestroyEntry {
    pub project_key: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub cluster_name: String,
    pub status: TargetStatus,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub retry_command: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DestroyResult {
    pub name: String,
    pub cloud: String,
    pub clusters: Vec<DestroyEntry>,
    pub networks: Vec<DestroyEntry>,
    pub failed: usize,
}

impl DestroyResult {
    pub fn render_text(&self) -> String {
        use std::fmt::Write;
        let mut out = String::new();
        for c in &self.clusters {
            let _ = writeln!(out, "  {}/{}: {}", c.project_key, c.cluster_name, c.status);
            for e in &c.errors {
                let _ = writeln!(out, "      {e}");
            }
            if !c.retry_command.is_empty() {
                let _ = writeln!(out, "      retry: {}", c.retry_command);
            }
        }
        for n in &self.networks {
            let _ = writeln!(out, "  {}/network: {}", n.project_key, n.status);
        }
        if self.failed > 0 {
            let _ = writeln!(
                out,
                "Fleet '{}' teardown is incomplete; recovery state retained.",
                self.name
            );
        } else {
            let _ = writeln!(out, "Destroyed fleet '{}'.", self.name);
        }
        out
    }
}

impl DestroyEntry {
    pub(super) fn new(project_key: &str, cluster_name: &str, status: TargetStatus) -> DestroyEntry {
        DestroyEntry {
            project_key: project_key.to_string(),
            cluster_name: cluster_name.to_string(),
            status,
            errors: Vec::new(),
            retry_command: String::new(),
        }
    }
}

/// Tears down one recorded target. Once it is gone its record goes too; until then the record
/// stays, marked incomplete, so a retry finds it.
pub(super) async fn destroy_recorded<C: Cloud, S: InventoryStore>(
    cloud: &C,
    store: &S,
    fleet: &str,
    record: &TargetRecord,
    retry: String,
    progress: &Progress,
) -> Result<DestroyEntry, EngineError> {
    let (key, cluster) = (&record.project_key, &record.cluster_name);
    progress(&Event::step(format_args!("{key}/{cluster}"), "destroying"));
    // A new lifecycle before the first delete: after a teardown that stops half-way, the next
    // deploy re-creates what was deleted under new keys, not the first lifecycle's. An extra
    // bump (a teardown that then fails) is harmless: what exists is observed, not created.
    store.bump_generation(fleet, key, cluster).await?;
    match Teardown::new(cloud, fleet, record, progress).run().await {
        Ok(()) => {
            store.remove_target(fleet, key, cluster).await?;
            progress(&Event::done(
                format_args!("{key}/{cluster}"),
                Outcome::Destroyed,
            ));
            Ok(DestroyEntry::new(key, cluster, TargetStatus::Destroyed))
        }
        Err(errors) => {
            progress(&Event::done(
                format_args!("{key}/{cluster}"),
                Outcome::Failed("teardown incomplete".into()),
            ));
            let mut kept = record.clone();
            kept.status = TargetStatus::DestroyIncomplete.into();
            kept.error = errors.join("; ");
            kept.updated_at = now_ms();
            store.upsert_target(&kept).await?;
            let mut entry = DestroyEntry::new(key, cluster, TargetStatus::DestroyIncomplete);
            entry.errors = errors;
            entry.retry_command = retry;
            Ok(entry)
        }
    }
}

/// Deletes the subnet and network fleetbot created for a project, by their recorded IDs;
/// returns what failed.
async fn reclaim_network<C: Cloud>(
    cloud: &C,
    fleet: &str,
    record: &mut ProjectRecord,
) -> Vec<String> {
    let key = record.project_key.clone();
    let mut errors = Vec::new();
    // The subnet first: a network cannot go while a subnet is in it.
    let created = [
        ("subnet", &mut record.created_subnet_id),
        ("network", &mut record.created_network_id),
    ];
    for (kind, id) in created {
        if id.is_empty() {
            continue;
        }
        let k = idempotency_key(&[fleet, &key, kind, "delete", id]);
        let deleted = if kind == "subnet" {
            cloud.delete_subnet(id, &k).await
        } else {
            cloud.delete_network(id, &k).await
        };
        match left_behind(kind, deleted) {
            None => id.clear(),
            Some(error) => errors.push(error),
        }
    }
    errors
}

/// Network reclaim: only what fleetbot created, only when no target of the project remains.
async fn reclaim_networks<C: Cloud, S: InventoryStore>(
    cloud: &C,
    store: &S,
    fleet: &str,
    touched_projects: Vec<String>,
) -> Result<Vec<DestroyEntry>, EngineError> {
    let remaining = store.targets(fleet).await?;
    let project_records = store.projects(fleet).await?;
    let mut entries = Vec::new();
    for key in touched_projects {
        if remaining.iter().any(|r| r.project_key == key) {
            continue;
        }
        let Some(mut record) = project_records
            .iter()
            .find(|r| r.project_key == key)
            .cloned()
        else {
            continue;
        };
        if record.created_network_id.is_empty() && record.created_subnet_id.is_empty() {
            continue;
        }
        // As for targets: the network's new lifecycle starts before its first delete.
        store.bump_generation(fleet, &key, "").await?;
        let errors = reclaim_network(cloud, fleet, &mut record).await;
        if errors.is_empty() {
            record.subnet_id.clear();
        }
        record.updated_at = now_ms();
        store.upsert_project(&record).await?;
        let status = if errors.is_empty() {
            TargetStatus::Destroyed
        } else {
            TargetStatus::DestroyIncomplete
        };
        let mut entry = DestroyEntry::new(&key, "", status);
        entry.errors = errors;
        entries.push(entry);
    }
    Ok(entries)
}

/// Destroys the selected targets that the inventory records: node groups, cluster, GPU cluster
/// and filesystem, each by exact ID after its identity and ownership are proven; then the
/// networks fleetbot created for projects with no target left. Projects and buckets are kept.
pub(crate) async fn destroy<C: Cloud, S: InventoryStore>(
    cloud: &C,
    store: &S,
    spec: &FleetSpec,
    options: &LifecycleOptions,
    progress: Progress,
) -> Result<DestroyResult, EngineError> {
    let selected = select(
        spec,
        &options.only_projects,
        &options.only_clusters,
        &spec.project_prefix,
    )?;
    let records = store.targets(&spec.name).await?;
    require_selected_backends(spec, &selected, &records)?;
    let mut clusters = Vec::new();
    let mut touched_projects = Vec::new();
    for &(p, c) in &selected {
        let (key, cluster) = (spec.projects[p].key(), &spec.projects[p].clusters[c].name);
        if !touched_projects.contains(&key) {
            touched_projects.push(key.clone());
        }
        let Some(record) = find_target(&records, &key, cluster) else {
            clusters.push(DestroyEntry::new(&key, cluster, TargetStatus::Absent));
            continue;
        };
        let retry = format!(
            "fleetbot destroy --spec {} --only-projects {key} --only-clusters {cluster} --yes",
            options.spec_path
        );
        clusters.push(destroy_recorded(cloud, store, &spec.name, record, retry, &progress).await?);
    }
    let networks = reclaim_networks(cloud, store, &spec.name, touched_projects).await?;
    let incomplete = |entries: &[DestroyEntry]| {
        entries
            .iter()
            .filter(|e| e.status == TargetStatus::DestroyIncomplete)
            .count()
    };
    Ok(DestroyResult {
        name: spec.name.clone(),
        cloud: cloud.describe(),
        failed: incomplete(&clusters) + incomplete(&networks),
        clusters,
        networks,
    })
}
