//! The inventory records and the trait every store backend implements.

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
/// callers refuse to act. Object-safe, so a planner holds one `Arc<dyn InventoryStore>`
/// whichever backend the server opened.
#[async_trait::async_trait]
pub trait InventoryStore: Send + Sync {
    /// A name for messages (a path or a database URL without credentials).
    fn location(&self) -> String;
    async fn targets(&self, fleet: &str) -> Result<Vec<TargetRecord>, StoreError>;
    /// One target's record: what an apply of one target reads, at any fleet size.
    async fn target(
        &self,
        fleet: &str,
        project_key: &str,
        cluster_name: &str,
    ) -> Result<Option<TargetRecord>, StoreError> {
        Ok(self
            .targets(fleet)
            .await?
            .into_iter()
            .find(|r| r.project_key == project_key && r.cluster_name == cluster_name))
    }
    async fn upsert_target(&self, record: &TargetRecord) -> Result<(), StoreError>;
    async fn remove_target(
        &self,
        fleet: &str,
        project_key: &str,
        cluster_name: &str,
    ) -> Result<(), StoreError>;
    async fn projects(&self, fleet: &str) -> Result<Vec<ProjectRecord>, StoreError>;
    async fn upsert_project(&self, record: &ProjectRecord) -> Result<(), StoreError>;
    async fn remove_project(&self, fleet: &str, project_key: &str) -> Result<(), StoreError>;
    /// The lifecycle generation of a target (`cluster_name` empty: of the project's network),
    /// 0 before its first completed destroy. It outlives the target's record.
    async fn generation(
        &self,
        fleet: &str,
        project_key: &str,
        cluster_name: &str,
    ) -> Result<i64, StoreError>;
    /// Starts a new lifecycle, after a destroy has completed.
    async fn bump_generation(
        &self,
        fleet: &str,
        project_key: &str,
        cluster_name: &str,
    ) -> Result<(), StoreError>;
}

/// A shared store is a store: what a planner holds as `Arc<dyn InventoryStore>` is passed to
/// the engine, which takes any `InventoryStore + Clone`.
#[async_trait::async_trait]
impl<T: InventoryStore + ?Sized> InventoryStore for std::sync::Arc<T> {
    fn location(&self) -> String {
        (**self).location()
    }
    async fn targets(&self, fleet: &str) -> Result<Vec<TargetRecord>, StoreError> {
        (**self).targets(fleet).await
    }
    async fn target(
        &self,
        fleet: &str,
        project_key: &str,
        cluster_name: &str,
    ) -> Result<Option<TargetRecord>, StoreError> {
        (**self).target(fleet, project_key, cluster_name).await
    }
    async fn upsert_target(&self, record: &TargetRecord) -> Result<(), StoreError> {
        (**self).upsert_target(record).await
    }
    async fn remove_target(
        &self,
        fleet: &str,
        project_key: &str,
        cluster_name: &str,
    ) -> Result<(), StoreError> {
        (**self)
            .remove_target(fleet, project_key, cluster_name)
            .await
    }
    async fn projects(&self, fleet: &str) -> Result<Vec<ProjectRecord>, StoreError> {
        (**self).projects(fleet).await
    }
    async fn upsert_project(&self, record: &ProjectRecord) -> Result<(), StoreError> {
        (**self).upsert_project(record).await
    }
    async fn remove_project(&self, fleet: &str, project_key: &str) -> Result<(), StoreError> {
        (**self).remove_project(fleet, project_key).await
    }
    async fn generation(
        &self,
        fleet: &str,
        project_key: &str,
        cluster_name: &str,
    ) -> Result<i64, StoreError> {
        (**self).generation(fleet, project_key, cluster_name).await
    }
    async fn bump_generation(
        &self,
        fleet: &str,
        project_key: &str,
        cluster_name: &str,
    ) -> Result<(), StoreError> {
        (**self)
            .bump_generation(fleet, project_key, cluster_name)
            .await
    }
}
