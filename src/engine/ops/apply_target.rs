//! Deploy's second phase, for one target: filesystem, GPU cluster, cluster and node groups in
//! that order, each ID recorded as soon as it is known, and the outcome recorded last.

use super::apply::Apply;
use super::deploy_result::TargetResult;
use super::error::ApplyError;
use super::keys::{Keys, lifecycle_part};
use super::progress::{Event, Outcome, Progress};
use super::records::{new_target, now_ms};
use super::since_plan::CHANGED_SINCE_PLAN;
use crate::cloud::domain::{Cloud, Cluster, Filesystem, GpuCluster, NodeGroup, NodeGroupSpec};
use crate::engine::desired::{self, DesiredFilesystem, DesiredNodeGroup, DesiredTarget};
use crate::engine::live::ObservedProject;
use crate::engine::target_status::TargetStatus;
use crate::store::{InventoryStore, ProjectRecord, TargetRecord};

/// Fields of a node group that only a replacement can change.
fn needs_replacement(have: &NodeGroupSpec, want: &NodeGroupSpec) -> bool {
    have.platform != want.platform
        || have.preset != want.preset
        || have.preemptible != want.preemptible
        || have.reservation != want.reservation
        || have.gpu_cluster_id != want.gpu_cluster_id
}

impl<C: Cloud, S: InventoryStore> Apply<'_, C, S> {
    /// Who applies the target, where, and in which project.
    fn stamp(&self, record: &mut TargetRecord, target: &DesiredTarget, project: &ProjectRecord) {
        record.tenant_id = self.tenant.to_string();
        record.profile = self.profile.to_string();
        record.region = target.region.clone();
        record.project_id = project.project_id.clone();
    }

    /// Applies one target and records its outcome. Failures are in the result, not an `Err`.
    /// `unchanged` is the record the live plan read, when that plan proved the target
    /// unchanged: the target is judged on what the plan showed, without reading its record
    /// again (a no-op re-deploy of 1,000 clusters spent a fifth of its CPU on those reads).
    /// Nothing is written on that path; any other path reads the record afresh. Before the
    /// first change, the cloud must still hold the target as `approved` (the approved plan's
    /// reading: `observed` itself, unless this plan was made after it) read it.
    pub(super) async fn target(
        &self,
        target: &DesiredTarget,
        project: &ProjectRecord,
        observed: &ObservedProject,
        approved: &ObservedProject,
        unchanged: Option<TargetRecord>,
    ) -> TargetResult {
        let key = &target.key;
        if let Some(recorded) = unchanged {
            let mut record = recorded.clone();
            self.stamp(&mut record, target, project);
            if record == recorded
                && let Some(result) = self
                    .proven_unchanged(target, project, observed, &record)
                    .await
            {
                return result;
            }
        }
        // Exactly what was approved: a target the cloud no longer holds as the plan read it is
        // not touched (and its record is left as it is).
        let changed = match self.changed_since_plan(target, project, approved).await {
            Ok(changed) => changed,
            Err(e) => Some(format!("it could not be read again before the change: {e}")),
        };
        if let Some(what) = changed {
            let message = format!(
                "{CHANGED_SINCE_PLAN} ({what}); nothing was changed on this target: plan again"
            );
            (self.progress)(&Event::done(key, Outcome::Failed(message.clone())));
            let mut result = TargetResult::new(key, &target.region, project).with_error(&message);
            result.changed_since_plan = true;
            return result;
        }
        // An unreadable inventory stops the target: a fresh record written over the real one
        // would forget what fleetbot created, and a later destroy would leave it behind.
        let mut record = match self
            .store
            .target(self.fleet, &key.project_key, &key.cluster)
            .await
        {
            Ok(found) => found.unwrap_or_else(|| new_target(self.fleet, key, target.backend)),
            Err(e) => {
                let message = e.to_string();
                (self.progress)(&Event::done(key, Outcome::Failed(message.clone())));
                return TargetResult::new(key, &target.region, project).with_error(&message);
            }
        };
        self.stamp(&mut record, target, project);
        let deployed = TargetStatus::from_record(&record.status) == TargetStatus::Deployed;
        if !deployed || record.applied_digest != target.digest {
            record.status = TargetStatus::Provisioning.into();
        }
        record.error.clear();
        record.updated_at = now_ms();
        let outcome = self
            .target_steps(target, project, observed, &mut record)
            .await;
        let mut result = TargetResult::new(key, &target.region, project);
        match outcome {
            Ok(endpoint) => {
                record.status = TargetStatus::Deployed.into();
                record.applied_digest = target.digest.clone();
                result.endpoint = endpoint;
                result.status = TargetStatus::Deployed;
                (self.progress)(&Event::done(key, Outcome::Deployed));
            }
            Err(e) => {
                // The cloud refused without acting (quota, capacity, an invalid request): the
                // next attempt is a new request, not a replay of the refused one.
                if e.took_no_effect()
                    && let Err(bump) = self
                        .store
                        .bump_generation(self.fleet, &key.project_key, &key.cluster)
                        .await
                {
                    result = result.with_error(&bump.to_string());
                }
                record.status = TargetStatus::Error.into();
                record.error = e.to_string();
                result = result.with_error(&record.error);
                (self.progress)(&Event::done(key, Outcome::Failed(e.to_string())));
            }
        }
        record.updated_at = now_ms();
        result.cluster_id = record.cluster_id.clone();
        result.node_group_ids = record.node_group_ids.clone();
        if let Err(e) = self.store.upsert_target(&record).await {
            result = result.with_error(&e.to_string());
        }
        result
    }

    /// Records a target that failed outside its steps (a timeout).
    pub(super) async fn record_failure(
        &self,
        target: &DesiredTarget,
        project: &ProjectRecord,
        error: &str,
    ) -> Result<(), crate::store::StoreError> {
        let key = &target.key;
        let mut record = self
            .store
            .target(self.fleet, &key.project_key, &key.cluster)
            .await?
            .unwrap_or_else(|| new_target(self.fleet, key, target.backend));
        record.status = TargetStatus::Error.into();
        record.error = error.to_string();
        self.stamp(&mut record, target, project);
        record.updated_at = now_ms();
        self.store.upsert_target(&record).await
    }

    async fn target_steps(
        &self,
        target: &DesiredTarget,
        project: &ProjectRecord,
        observed: &ObservedProject,
        record: &mut TargetRecord,
    ) -> Result<String, ApplyError> {
        let key = &target.key;
        let generation = self
            .store
            .generation(self.fleet, &key.project_key, &key.cluster)
            .await?;
        let lifecycle = lifecycle_part(generation);
        let steps = Steps {
            cloud: self.cloud,
            store: self.store,
            fleet: self.fleet,
            target,
            observed,
            progress: self.progress,
            kube: self.kube,
            project_id: &project.project_id,
            keys: Keys::new(
                &[self.fleet, &key.project_key, &key.cluster],
                lifecycle.as_deref(),
            ),
        };
        steps.save(record).await?;
        let subnet_id = if target.subnet_id.is_empty() {
            project.subnet_id.clone()
        } else {
            target.subnet_id.clone()
        };
        record.subnet_id = subnet_id.clone();
        let filesystem_id = steps.filesystem(record).await?;
        let gpu_cluster_id = steps.gpu_cluster(record).await?;
        let cluster = steps.cluster(&subnet_id).await?;
        record.cluster_id = cluster.id.clone();
        steps.save(record).await?;
        let attached = Attached {
            subnet_id: &subnet_id,
            filesystem_id: &filesystem_id,
            gpu_cluster_id: &gpu_cluster_id,
        };
        steps.node_groups(&cluster, &attached, record).await?;
        steps.addons(&cluster.id, record).await?;
        Ok(cluster.public_endpoint)
    }
}

/// What a target's node groups attach to, once it exists.
struct Attached<'a> {
    subnet_id: &'a str,
    filesystem_id: &'a str,
    gpu_cluster_id: &'a str,
}

/// One target's apply steps, with its idempotency keys in this lifecycle.
pub(super) struct Steps<'a, C, S> {
    pub(super) cloud: &'a C,
    pub(super) store: &'a S,
    pub(super) fleet: &'a str,
    pub(super) target: &'a DesiredTarget,
    observed: &'a ObservedProject,
    pub(super) progress: &'a Progress,
    pub(super) kube: &'a crate::clusters::Connections,
    pub(super) project_id: &'a str,
    pub(super) keys: Keys,
}

impl<C: Cloud, S: InventoryStore> Steps<'_, C, S> {
    pub(super) fn say(&self, what: &str) {
        (self.progress)(&Event::step(&self.target.key, what));
    }

    /// Starts a new lifecycle before a deletion, so that whatever is created again later (a
    /// group removed and re-added, a replaced shape restored) gets keys of its own. This run
    /// keeps its keys: what it still creates is new in name or shape.
    async fn new_lifecycle(&self) -> Result<(), ApplyError> {
        let key = &self.target.key;
        self.store
            .bump_generation(self.fleet, &key.project_key, &key.cluster)
            .await?;
        Ok(())
    }

    pub(super) async fn save(&self, record: &TargetRecord) -> Result<(), ApplyError> {
        self.store
            .upsert_target(record)
            .await
            .map_err(ApplyError::from)
    }

    /// The target's filesystem, created or grown as the spec says; returns its ID, if any.
    async fn filesystem(&self, record: &mut TargetRecord) -> Result<String, ApplyError> {
        match &self.target.filesystem {
            Some(DesiredFilesystem::Create {
                name,
                size_gibibytes,
            }) => {
                let fs = self.created_filesystem(name, *size_gibibytes).await?;
                record.filesystem_id = fs.id.clone();
                record.filesystem_created = true;
                self.save(record).await?;
                Ok(fs.id)
            }
            Some(DesiredFilesystem::Existing { id }) => {
                record.filesystem_id = id.clone();
                record.filesystem_created = false;
                Ok(id.clone())
            }
            None => Ok(String::new()),
        }
    }

    async fn created_filesystem(&self, name: &str, size: i64) -> Result<Filesystem, ApplyError> {
        let labels = &self.target.labels;
        let result = match self.observed.filesystems.iter().find(|f| f.name == name) {
            Some(fs) if fs.size_gibibytes < size => {
                self.say(&format!("resizing filesystem {name} to {size} GiB"));
                let k = self.keys.key(&[
                    "filesystem",
                    name,
                    "resize",
                    &size.to_string(),
                    &format!("from-v{}", fs.resource_version),
                ]);
                self.cloud.resize_filesystem(&fs.id, size, labels, &k).await
            }
            Some(fs) => Ok(fs.clone()),
            None => {
                self.say(&format!("creating filesystem {name} ({size} GiB)"));
                let k = self
                    .keys
                    .key(&["filesystem", name, "create", &size.to_string()]);
                self.cloud
                    .create_filesystem(self.project_id, name, size, labels, &k)
                    .await
            }
        };
        result.map_err(ApplyError::from)
    }

    /// The target's GPU cluster, created if missing; returns its ID, if any.
    async fn gpu_cluster(&self, record: &mut TargetRecord) -> Result<String, ApplyError> {
        let Some((name, fabric)) = &self.target.gpu_cluster else {
            return Ok(String::new());
        };
        let g: GpuCluster = match self.observed.gpu_clusters.iter().find(|g| &g.name == name) {
            Some(g) => g.clone(),
            None => {
                self.say(&format!("creating GPU cluster {name}"));
                let k = self.keys.key(&["gpu-cluster", name, "create", fabric]);
                self.cloud
                    .create_gpu_cluster(self.project_id, name, fabric, &self.target.labels, &k)
                    .await?
            }
        };
        record.gpu_cluster_id = g.id.clone();
        self.save(record).await?;
        Ok(g.id)
    }

    /// The target's cluster: created, updated in place (version, labels), or as it is.
    async fn cluster(&self, subnet_id: &str) -> Result<Cluster, ApplyError> {
        let (key, labels) = (&self.target.key, &self.target.labels);
        let spec = self.target.cluster_spec(subnet_id);
        let Some(c) = self
            .observed
            .clusters
            .iter()
            .find(|c| c.name == key.cluster)
        else {
            self.say("creating cluster");
            let k = self.keys.key(&[
                "cluster",
                "create",
                &DesiredTarget::resource_digest(&(
                    &spec.k8s_version,
                    &spec.subnet_id,
                    spec.public_endpoint,
                )),
            ]);
            return self
                .cloud
                .create_cluster(self.project_id, &key.cluster, &spec, labels, &k)
                .await
                .map_err(ApplyError::from);
        };
        let version_differs = !spec.k8s_version.is_empty()
            && !c.spec.k8s_version.is_empty()
            && c.spec.k8s_version != spec.k8s_version;
        if !version_differs && &c.labels == labels {
            return Ok(c.clone());
        }
        self.say("updating cluster");
        // A control plane keeps its subnet: the update names the one it has.
        let mut wanted = spec;
        wanted.subnet_id = c.spec.subnet_id.clone();
        let k = self.keys.key(&[
            "cluster",
            "update",
            &DesiredTarget::resource_digest(&(&wanted.k8s_version, labels)),
            &format!("from-v{}", c.resource_version),
        ]);
        self.cloud
            .update_cluster(&c.id, &wanted, labels, &k)
            .await
            .map_err(ApplyError::from)
    }

    /// The spec's node groups, each recorded once applied, then the stale ones deleted.
    async fn node_groups(
        &self,
        cluster: &Cluster,
        attached: &Attached<'_>,
        record: &mut TargetRecord,
    ) -> Result<(), ApplyError> {
        let existing = self.cloud.list_node_groups(&cluster.id).await?;
        let mut ids = Vec::new();
        for group in &self.target.node_groups {
            let found = existing.iter().find(|g| g.name == group.name);
            let ng = self.node_group(&cluster.id, group, found, attached).await?;
            ids.push(ng.id);
            record.node_group_ids = ids.clone();
            self.save(record).await?;
        }
        self.delete_stale(&existing).await
    }

    async fn node_group(
        &self,
        cluster_id: &str,
        group: &DesiredNodeGroup,
        found: Option<&NodeGroup>,
        attached: &Attached<'_>,
    ) -> Result<NodeGroup, ApplyError> {
        let want = self.target.node_group_spec(
            group,
            attached.filesystem_id,
            attached.gpu_cluster_id,
            found.map_or(attached.subnet_id, |g| g.spec.subnet_id.as_str()),
        );
        let digest = DesiredTarget::resource_digest(&(
            &group.shape,
            attached.filesystem_id,
            attached.gpu_cluster_id,
        ));
        let name = group.name.as_str();
        let labels = &self.target.labels;
        let Some(g) = found else {
            self.say(&format!(
                "creating node group {name} ({} node(s))",
                want.node_count
            ));
            return self
                .create_node_group(cluster_id, name, &want, &digest)
                .await;
        };
        if needs_replacement(&g.spec, &want) {
            self.say(&format!("replacing node group {name}"));
            self.new_lifecycle().await?;
            let k = self.keys.key(&["node-group", name, "delete", &g.id]);
            self.cloud.delete_node_group(&g.id, &k).await?;
            // The create names the group it replaces: the same shape made again after another
            // replacement is a new request, never a replay of a deleted group's create.
            let replaces = format!("{digest}-replaces-{}", g.id);
            return self
                .create_node_group(cluster_id, name, &want, &replaces)
                .await;
        }
        if g.spec == want && &g.labels == labels {
            return Ok(g.clone());
        }
        self.say(&format!("updating node group {name}"));
        let from = format!("from-v{}", g.resource_version);
        let k = self
            .keys
            .key(&["node-group", name, "update", &digest, &from]);
        self.cloud
            .update_node_group(&g.id, &want, labels, &k)
            .await
            .map_err(ApplyError::from)
    }

    async fn create_node_group(
        &self,
        cluster_id: &str,
        name: &str,
        want: &NodeGroupSpec,
        digest: &str,
    ) -> Result<NodeGroup, ApplyError> {
        let k = self.keys.key(&["node-group", name, "create", digest]);
        self.cloud
            .create_node_group(cluster_id, name, want, &self.target.labels, &k)
            .await
            .map_err(ApplyError::from)
    }

    /// Node groups this target owns that the spec no longer names.
    async fn delete_stale(&self, existing: &[NodeGroup]) -> Result<(), ApplyError> {
        let key = &self.target.key;
        for stale in existing
            .iter()
            .filter(|g| !self.target.node_groups.iter().any(|d| d.name == g.name))
        {
            if desired::owned_by(&stale.labels, self.fleet, &key.project_key, &key.cluster) {
                self.say(&format!(
                    "deleting node group {} (no longer in the spec)",
                    stale.name
                ));
                self.new_lifecycle().await?;
                let k = self
                    .keys
                    .key(&["node-group", &stale.name, "delete", &stale.id]);
                self.cloud.delete_node_group(&stale.id, &k).await?;
            }
        }
        Ok(())
    }
}
