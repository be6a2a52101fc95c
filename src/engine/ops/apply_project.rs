//! Deploy's first phase, for one project: the project itself, then its bucket and its shared
//! subnet. Whatever is created is recorded before the next step, so a crash never orphans it.

use super::apply::Apply;
use super::error::ApplyError;
use super::keys::{Keys, lifecycle_part};
use super::object_storage::{Expected, ObjectStorageResult};
use super::progress::Event;
use super::records::now_ms;
use crate::cloud::client::idempotency_key;
use crate::cloud::domain::{Bucket, Cloud, Project, Subnet};
use crate::engine::desired::{DesiredBucket, DesiredProject};
use crate::engine::live::{self, ObservedProject};
use crate::store::{InventoryStore, ProjectRecord};

/// A resize names the version it starts from, so the same resize made again after another
/// change is a new request.
fn bucket_key(
    fleet: &str,
    project_key: &str,
    name: &str,
    bucket: &DesiredBucket,
    found: Option<&Bucket>,
) -> String {
    let size = bucket.max_size_bytes.to_string();
    let from = found.map(|b| format!("from-v{}", b.resource_version));
    let mut parts = vec![
        fleet,
        project_key,
        "bucket",
        name,
        &bucket.storage_class,
        &size,
    ];
    parts.extend(from.as_deref());
    idempotency_key(&parts)
}

impl<C: Cloud, S: InventoryStore> Apply<'_, C, S> {
    /// Creates (or verifies) the project, then its bucket (made ready: read back and probed)
    /// and shared subnet. What the live plan observed of an existing project is not read
    /// again, and a record whose facts did not change is not written again.
    pub(super) async fn project(
        &self,
        desired: &DesiredProject,
        observed: Option<&ObservedProject>,
        record: Option<ProjectRecord>,
    ) -> Result<(ProjectRecord, Option<ObjectStorageResult>), ApplyError> {
        let existing = observed.and_then(|o| o.project.as_ref());
        // The observation holds this project's buckets and subnets only if it existed then.
        let observed = observed.filter(|o| o.project.is_some());
        let mut saved = record.clone();
        let mut record = record.unwrap_or_else(|| ProjectRecord {
            fleet: self.fleet.to_string(),
            project_key: desired.key.clone(),
            ..Default::default()
        });
        let project = match existing {
            Some(p) => {
                (self.progress)(&Event::note(format!(
                    "project '{}' exists",
                    desired.display_name_or_id()
                )));
                p.clone()
            }
            None => self.create_project(desired, &mut record).await?,
        };
        record.project_id = project.id.clone();
        record.updated_at = now_ms();
        self.save(&record, &mut saved).await?;
        let mut storage = None;
        if let Some(bucket) = &desired.bucket {
            let found = observed.map(|o| o.buckets.clone());
            self.bucket(desired, bucket, &project.id, found, &mut record, &mut saved)
                .await?;
            let expected = Expected {
                project_id: &project.id,
                name: &record.bucket_name,
                region: &project.region,
                bucket,
            };
            storage = Some(
                self.bucket_ready(desired, bucket, &record.bucket_id, expected)
                    .await?,
            );
        }
        if desired.needs_subnet {
            let found = observed.map(|o| o.subnets.clone());
            self.subnet(desired, &project.id, found, &mut record, &mut saved)
                .await?;
        }
        Ok((record, storage))
    }

    /// Writes the record unless `saved`, what the inventory holds, has the same facts.
    async fn save(
        &self,
        record: &ProjectRecord,
        saved: &mut Option<ProjectRecord>,
    ) -> Result<(), ApplyError> {
        let unchanged = saved.as_ref().is_some_and(|s| {
            let mut s = s.clone();
            s.updated_at = record.updated_at;
            s == *record
        });
        if !unchanged {
            self.store.upsert_project(record).await?;
            *saved = Some(record.clone());
        }
        Ok(())
    }

    async fn create_project(
        &self,
        desired: &DesiredProject,
        record: &mut ProjectRecord,
    ) -> Result<Project, ApplyError> {
        (self.progress)(&Event::note(format!(
            "creating project '{}' under tenant (region {})",
            desired.display_name,
            if desired.region.is_empty() {
                "default"
            } else {
                &desired.region
            }
        )));
        let key = idempotency_key(&[
            self.fleet,
            &desired.key,
            "project",
            "create",
            &desired.display_name,
            &desired.region,
        ]);
        let p = self
            .cloud
            .create_project(
                self.tenant,
                &desired.display_name,
                &desired.region,
                &desired.labels,
                &key,
            )
            .await?;
        record.project_created = true;
        (self.progress)(&Event::note(format!(
            "created project '{}'",
            desired.display_name
        )));
        Ok(p)
    }

    async fn bucket(
        &self,
        desired: &DesiredProject,
        bucket: &DesiredBucket,
        project_id: &str,
        observed: Option<Vec<Bucket>>,
        record: &mut ProjectRecord,
        saved: &mut Option<ProjectRecord>,
    ) -> Result<(), ApplyError> {
        let name = live::bucket_name(bucket, Some(record), self.tenant, project_id, self.fleet);
        let existing = match observed {
            Some(buckets) => buckets,
            None => self.cloud.list_buckets(project_id).await?,
        };
        let found = existing.into_iter().find(|b| b.name == name);
        if found.as_ref().is_some_and(|b| b.scheduled_for_deletion) {
            // Never resized, reused or renamed around: a person decides (docs/engine.md).
            return Err(ApplyError::Readiness(format!(
                "object storage: {}",
                live::SCHEDULED_BUCKET_ADVICE
            )));
        }
        let key = bucket_key(self.fleet, &desired.key, &name, bucket, found.as_ref());
        let b = match found {
            Some(b) if b.max_size_bytes == bucket.max_size_bytes => b,
            Some(b) => {
                (self.progress)(&Event::note(format!(
                    "resizing the bucket of project {}",
                    desired.key
                )));
                self.cloud
                    .update_bucket(
                        &b.id,
                        &bucket.storage_class,
                        bucket.max_size_bytes,
                        &b.labels,
                        &key,
                    )
                    .await?
            }
            None => {
                (self.progress)(&Event::note(format!(
                    "creating the bucket of project {}",
                    desired.key
                )));
                self.cloud
                    .create_bucket(
                        project_id,
                        &name,
                        &bucket.storage_class,
                        bucket.max_size_bytes,
                        &desired.labels,
                        &key,
                    )
                    .await?
            }
        };
        record.bucket_id = b.id;
        record.bucket_name = name;
        self.save(record, saved).await
    }

    async fn subnet(
        &self,
        desired: &DesiredProject,
        project_id: &str,
        observed: Option<Vec<Subnet>>,
        record: &mut ProjectRecord,
        saved: &mut Option<ProjectRecord>,
    ) -> Result<(), ApplyError> {
        // The network's own lifecycle: destroy may reclaim it, and a later deploy that makes
        // a new one must not replay the old create.
        let generation = self.store.generation(self.fleet, &desired.key, "").await?;
        let lifecycle = lifecycle_part(generation);
        let subnets = match observed {
            Some(subnets) => subnets,
            None => self.cloud.list_subnets(project_id).await?,
        };
        let subnet_id = match live::choose_subnet(&subnets, Some(record)) {
            Some(s) => s.id.clone(),
            None => {
                self.create_subnet(desired, project_id, lifecycle.as_deref(), record, saved)
                    .await?
            }
        };
        record.subnet_id = subnet_id;
        record.updated_at = now_ms();
        self.save(record, saved).await
    }

    /// A network (unless one fleetbot created is recorded) and a subnet in it.
    async fn create_subnet(
        &self,
        desired: &DesiredProject,
        project_id: &str,
        lifecycle: Option<&str>,
        record: &mut ProjectRecord,
        saved: &mut Option<ProjectRecord>,
    ) -> Result<String, ApplyError> {
        let key = |resource: &str| {
            Keys::new(&[self.fleet, &desired.key, resource, "create"], lifecycle).key(&[])
        };
        let labels = &desired.labels;
        let network_id = if record.created_network_id.is_empty() {
            (self.progress)(&Event::note(format!(
                "creating network {}-net",
                desired.key
            )));
            let n = self
                .cloud
                .create_network(
                    project_id,
                    &format!("{}-net", desired.key),
                    labels,
                    &key("network"),
                )
                .await?;
            // Ownership is recorded before the subnet is created.
            record.created_network_id = n.id.clone();
            self.save(record, saved).await?;
            n.id
        } else {
            record.created_network_id.clone()
        };
        (self.progress)(&Event::note(format!(
            "creating subnet {}-subnet",
            desired.key
        )));
        let s = self
            .cloud
            .create_subnet(
                project_id,
                &format!("{}-subnet", desired.key),
                &network_id,
                labels,
                &key("subnet"),
            )
            .await?;
        record.created_subnet_id = s.id.clone();
        Ok(s.id)
    }
}
