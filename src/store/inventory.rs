//! The inventory records and the trait every store backend implements.

use std::future::Future;

use serde::{Deserialize, Serialize};

use super::StoreError;

/// One deployed (or attempted) target: what fleetbot created for it and where it stands.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct TargetRecord {
    pub fleet: String,
    pub project_key: String,
    pub cluster_name: String,
    /// `mk8s` (a record without one reads as `mk8s`).
    pub backend: String,
    /// The per-target status vocabulary of fleet-engine §6.3.
    pub status: String,
    pub tenant_id: String,
    pub region: String,
    pub profile: String,
    pub project_id: String,
    pub cluster_id: String,
    pub node_group_ids: Vec<String>,
    pub filesystem_id: String,
    /// Whether fleetbot created the filesystem (and may delete it).
    pub filesystem_created: bool,
    pub gpu_cluster_id: String,
    pub subnet_id: String,
    /// What fleetbot installed inside the cluster, in install order.
    pub addons: Vec<AddonRecord>,
    /// Digest of the desired state last applied in full.
    pub applied_digest: String,
    pub error: String,
    /// Unix milliseconds.
    pub updated_at: i64,
}

/// One add-on fleetbot installed: its release (empty for applied manifests) and the digest of
/// what it installed.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct AddonRecord {
    pub name: String,
    pub release_id: String,
    pub digest: String,
}

/// Per-project facts shared by the project's targets.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct ProjectRecord {
    pub fleet: String,
    pub project_key: String,
    pub project_id: String,
    /// Whether fleetbot created the project (projects are never deleted either way).
    pub project_created: bool,
    /// The network fleetbot created for the project, which destroy may reclaim.
    pub created_network_id: String,
    pub created_subnet_id: String,
    /// The subnet the project's clusters use (created or reused).
    pub subnet_id: String,
    pub bucket_id: String,
    pub bucket_name: String,
    pub updated_at: i64,
}

/// The inventory. Every write is atomic; a read error is [`StoreError::Unreadable`], on which
/// callers refuse to act.
pub trait InventoryStore: Send + Sync {
    /// A name for messages (a path or a database URL without credentials).
    fn location(&self) -> String;
    fn targets(
        &self,
        fleet: &str,
    ) -> impl Future<Output = Result<Vec<TargetRecord>, StoreError>> + Send;
    /// One target's record: what an apply of one target reads, at any fleet size.
    fn target(
        &self,
        fleet: &str,
        project_key: &str,
        cluster_name: &str,
    ) -> impl Future<Output = Result<Option<TargetRecord>, StoreError>> + Send {
        async move {
            Ok(self
                .targets(fleet)
                .await?
                .into_iter()
                .find(|r| r.project_key == project_key && r.cluster_name == cluster_name))
        }
    }
    fn upsert_target(
        &self,
        record: &TargetRecord,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
    fn remove_target(
        &self,
        fleet: &str,
        project_key: &str,
        cluster_name: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
    fn projects(
        &self,
        fleet: &str,
    ) -> impl Future<Output = Result<Vec<ProjectRecord>, StoreError>> + Send;
    fn upsert_project(
        &self,
        record: &ProjectRecord,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
    fn remove_project(
        &self,
        fleet: &str,
        project_key: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// The lifecycle generation of a target (`cluster_name` empty: of the project's network),
    /// 0 before its first completed destroy. It outlives the target's record.
    fn generation(
        &self,
        fleet: &str,
        project_key: &str,
        cluster_name: &str,
    ) -> impl Future<Output = Result<i64, StoreError>> + Send;
    /// Starts a new lifecycle, after a destroy has completed.
    fn bump_generation(
        &self,
        fleet: &str,
        project_key: &str,
        cluster_name: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
}
