//! Tearing down one recorded target: add-on releases, node groups, cluster, GPU cluster and filesystem, each
//! deleted by the exact ID the inventory records after its identity and labels prove it is this
//! target's. Nothing is ever deleted by name.

use super::keys::Keys;
use super::progress::{Event, Progress};
use crate::cloud::domain::{Cloud, CloudResult, Cluster, Labels};
use crate::engine::desired;
use crate::store::TargetRecord;

/// What a deletion left behind, as `<what>: <error>`; nothing when it succeeded or found the
/// resource already gone.
pub(super) fn left_behind(what: &str, result: CloudResult<()>) -> Option<String> {
    match result {
        Err(e) if !e.is_not_found() => Some(format!("{what}: {e}")),
        _ => None,
    }
}

pub(super) struct Teardown<'a, C> {
    cloud: &'a C,
    fleet: &'a str,
    record: &'a TargetRecord,
    progress: &'a Progress,
    keys: Keys,
}

impl<'a, C: Cloud> Teardown<'a, C> {
    pub(super) fn new(
        cloud: &'a C,
        fleet: &'a str,
        record: &'a TargetRecord,
        progress: &'a Progress,
    ) -> Self {
        let (pk, cn) = (record.project_key.as_str(), record.cluster_name.as_str());
        Teardown {
            cloud,
            fleet,
            record,
            progress,
            keys: Keys::new(&[fleet, pk, cn, "destroy"], None),
        }
    }

    fn owned(&self, labels: &Labels) -> bool {
        let r = self.record;
        desired::owned_by(labels, self.fleet, &r.project_key, &r.cluster_name)
    }

    fn say(&self, what: &str) {
        let r = self.record;
        (self.progress)(&Event::step(
            format_args!("{}/{}", r.project_key, r.cluster_name),
            what,
        ));
    }

    /// Deletes what the record names; the errors say what is left.
    pub(super) async fn run(&self) -> Result<(), Vec<String>> {
        if self.record.project_id.is_empty() {
            return Err(vec![
                "the inventory records no project ID; refusing destructive name inference".into(),
            ]);
        }
        let cluster_id = self.cluster_id().await?;
        if !cluster_id.is_empty() {
            self.delete_cluster(&cluster_id).await?;
        }
        let mut errors = Vec::new();
        errors.extend(self.delete_gpu_cluster().await);
        errors.extend(self.delete_filesystem().await);
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }

    /// The recorded cluster ID; after a crash between creating the cluster and recording it,
    /// the cluster of this name, but only with this target's labels.
    async fn cluster_id(&self) -> Result<String, Vec<String>> {
        let record = self.record;
        if !record.cluster_id.is_empty() {
            return Ok(record.cluster_id.clone());
        }
        let clusters = self
            .cloud
            .list_clusters(&record.project_id)
            .await
            .map_err(|e| vec![format!("cannot list clusters: {e}")])?;
        Ok(clusters
            .iter()
            .find(|c| c.name == record.cluster_name && self.owned(&c.labels))
            .map(|c| c.id.clone())
            .unwrap_or_default())
    }

    /// The cluster's node groups, then the cluster; refuses a cluster that is not the record's
    /// or holds a node group fleetbot does not manage.
    async fn delete_cluster(&self, cluster_id: &str) -> Result<(), Vec<String>> {
        let c = match self.cloud.get_cluster(cluster_id).await {
            Ok(c) => c,
            Err(e) if e.is_not_found() => return Ok(()),
            Err(e) => return Err(vec![format!("cannot read cluster: {e}")]),
        };
        self.verify_cluster(cluster_id, &c)?;
        let groups = self
            .cloud
            .list_node_groups(&c.id)
            .await
            .map_err(|e| vec![e.to_string()])?;
        if let Some(foreign) = groups.iter().find(|g| !self.owned(&g.labels)) {
            return Err(vec![format!(
                "node group {:?} in the cluster is not managed by fleetbot; refusing to delete the cluster",
                foreign.name
            )]);
        }
        let releases = self
            .cloud
            .list_releases(&c.project_id, &c.id)
            .await
            .map_err(|e| vec![format!("cannot list the cluster's add-ons: {e}")])?;
        let recorded = |id: &str| self.record.addons.iter().any(|a| a.release_id == id);
        if let Some(foreign) = releases
            .iter()
            .find(|r| !(recorded(&r.id) || self.owned(&r.labels)))
        {
            return Err(vec![format!(
                "add-on {:?} ({}) in the cluster was not installed by fleetbot; refusing to delete the cluster",
                foreign.application_name, foreign.product_slug
            )]);
        }
        let mut errors = Vec::new();
        for r in &releases {
            self.say(&format!("removing add-on {}", r.application_name));
            let k = self.keys.key(&["addon", &r.id]);
            let deleted = self.cloud.delete_release(&r.id, &k).await;
            errors.extend(left_behind(
                &format!("add-on {}", r.application_name),
                deleted,
            ));
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        for g in &groups {
            self.say(&format!("deleting node group {}", g.name));
            let k = self.keys.key(&["node-group", &g.id]);
            let deleted = self.cloud.delete_node_group(&g.id, &k).await;
            errors.extend(left_behind(&format!("node group {}", g.name), deleted));
        }
        if errors.is_empty() {
            self.say("deleting cluster");
            let k = self.keys.key(&["cluster", &c.id]);
            errors.extend(left_behind(
                "cluster",
                self.cloud.delete_cluster(&c.id, &k).await,
            ));
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }

    fn verify_cluster(&self, cluster_id: &str, c: &Cluster) -> Result<(), Vec<String>> {
        let r = self.record;
        if c.project_id == r.project_id && c.name == r.cluster_name && self.owned(&c.labels) {
            return Ok(());
        }
        Err(vec![format!(
            "cluster {cluster_id} does not match the inventory (project, name or ownership labels differ); refusing to delete it"
        )])
    }

    /// Deletes the recorded GPU cluster if it carries this target's labels; returns what failed.
    async fn delete_gpu_cluster(&self) -> Option<String> {
        let r = self.record;
        if r.gpu_cluster_id.is_empty() {
            return None;
        }
        let all = match self.cloud.list_gpu_clusters(&r.project_id).await {
            Ok(all) => all,
            Err(e) => return Some(format!("cannot list GPU clusters: {e}")),
        };
        let g = all.iter().find(|g| g.id == r.gpu_cluster_id)?;
        if !self.owned(&g.labels) {
            return Some("the recorded GPU cluster is not labelled as this target's; kept".into());
        }
        let k = self.keys.key(&["gpu-cluster", &g.id]);
        left_behind(
            "GPU cluster",
            self.cloud.delete_gpu_cluster(&g.id, &k).await,
        )
    }

    /// Deletes the filesystem fleetbot created if it carries this target's labels; returns
    /// what failed.
    async fn delete_filesystem(&self) -> Option<String> {
        let r = self.record;
        if !r.filesystem_created || r.filesystem_id.is_empty() {
            return None;
        }
        let fs = match self.cloud.get_filesystem(&r.filesystem_id).await {
            Ok(fs) => fs,
            Err(e) if e.is_not_found() => return None,
            Err(e) => return Some(format!("cannot read filesystem: {e}")),
        };
        if !self.owned(&fs.labels) {
            return Some("the recorded filesystem is not labelled as this target's; kept".into());
        }
        let k = self.keys.key(&["filesystem", &fs.id]);
        left_behind("filesystem", self.cloud.delete_filesystem(&fs.id, &k).await)
    }
}
