//! Long-running operations: one per accepted change, pending until the world's latency has
//! passed, then finished (the resource ready, or gone) on the next call that looks.

use tonic::{Code, Status};

use super::errors::not_found;
use super::{CallContext, Core, now_ms, timestamp};
use crate::cloud::error::{operation_status, status_with_service_error};
use crate::cloud::nid;
use crate::cloud::proto::fleetbot::sim::v1::PendingOperation;
use crate::cloud::proto::nebius::applications::v1alpha1 as apps;
use crate::cloud::proto::nebius::common::v1::{
    self as common, Operation, ServiceError, service_error,
};
use crate::cloud::proto::nebius::compute::v1 as compute;
use crate::cloud::proto::nebius::iam::v1 as iam;
use crate::cloud::proto::nebius::iam::v2 as iam2;
use crate::cloud::proto::nebius::mk8s::v1 as mk8s;
use crate::cloud::proto::nebius::storage::v1 as storage;
use crate::cloud::proto::nebius::vpc::v1 as vpc;
use crate::sim::resources::{Phase, Resource};

impl Core {
    pub fn latency(&self) -> u64 {
        self.world.operation_latency_ms
    }

    /// An operation by ID. Searched from the newest: it is the one a caller waits for, and
    /// the history grows with every change the world has seen.
    pub fn operation(&self, id: &str) -> Result<Operation, Status> {
        self.state
            .operations
            .iter()
            .rev()
            .find(|o| o.id == id)
            .cloned()
            .ok_or_else(|| not_found("common", id))
    }

    /// One change at a time per resource: another is refused while one is running.
    pub(super) fn conflict(&self, service: &str, resource_id: &str) -> Result<(), Status> {
        let Some(running) = self
            .state
            .pending
            .iter()
            .find(|p| p.resource_id == resource_id)
        else {
            return Ok(());
        };
        Err(status_with_service_error(
            Code::Aborted,
            &format!(
                "another operation ({}) is running on {resource_id}",
                running.operation_id
            ),
            ServiceError {
                service: service.to_string(),
                code: "OperationConflict".into(),
                retry_type: service_error::RetryType::UnitOfWork as i32,
                details: Some(service_error::Details::OperationConflict(
                    common::OperationConflict {
                        conflicting_operation_id: running.operation_id.clone(),
                        resource_id: resource_id.to_string(),
                    },
                )),
            },
        ))
    }

    pub(super) fn new_operation(
        &mut self,
        service: &str,
        region: &str,
        description: String,
        resource_id: &str,
        ctx: &CallContext,
    ) -> Operation {
        let id = self.new_id(
            &format!("{service}operation"),
            if region.is_empty() {
                "eu-north1"
            } else {
                region
            },
        );
        Operation {
            id,
            description,
            created_at: Some(timestamp(now_ms())),
            created_by: ctx.caller.clone(),
            request: ctx.request.clone(),
            // As production shows it: the headers that shaped the request, lower-cased.
            request_headers: ctx
                .reset_mask
                .iter()
                .map(|mask| {
                    (
                        crate::cloud::reset_mask::HEADER.to_string(),
                        common::operation::RequestHeader {
                            values: vec![mask.clone()],
                        },
                    )
                })
                .collect(),
            resource_id: resource_id.to_string(),
            ..Default::default()
        }
    }

    /// Stores an operation; with no latency (or a failure) it is finished at once.
    pub(super) fn start(
        &mut self,
        mut op: Operation,
        action: &str,
        latency_ms: u64,
        failure: Option<tonic_types::Status>,
    ) -> Operation {
        let pending = |done_at_unix_ms| PendingOperation {
            operation_id: op.id.clone(),
            done_at_unix_ms,
            action: action.to_string(),
            resource_id: op.resource_id.clone(),
        };
        if let Some(status) = failure {
            op.status = Some(status);
            op.finished_at = Some(timestamp(now_ms()));
        } else if latency_ms == 0 {
            let pending = pending(0);
            self.state.operations.push(op.clone());
            self.state.pending.push(pending);
            self.advance();
            return self.operation(&op.id).unwrap_or(op);
        } else {
            let pending = pending(now_ms() + latency_ms as i64);
            self.state.pending.push(pending);
        }
        self.state.operations.push(op.clone());
        op
    }

    /// Completes every operation whose time has come.
    pub fn advance(&mut self) {
        self.purge_due_buckets();
        let now = now_ms();
        let (due, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut self.state.pending)
            .into_iter()
            .partition(|p| p.done_at_unix_ms <= now);
        self.state.pending = waiting;
        if due.is_empty() {
            return;
        }
        // Settling reaches into some resources directly (a release's status): a completed
        // operation is a change however it was made.
        self.generation += 1;
        for p in due {
            self.touch_id(&p.resource_id);
            self.finish_resource(&p);
            if let Some(op) = self
                .state
                .operations
                .iter_mut()
                .rev()
                .find(|o| o.id == p.operation_id)
            {
                op.status = Some(operation_status(Code::Ok, "", None));
                op.finished_at = Some(timestamp(now));
            }
        }
        let _ = self.persist();
    }

    /// The resource an operation is about, by the kind in its ID.
    fn finish_resource(&mut self, p: &PendingOperation) {
        let kind = nid::parse(&p.resource_id)
            .map(|n| n.kind.to_string())
            .unwrap_or_default();
        match kind.as_str() {
            "project" => self.finish::<iam::Container>(p),
            "vpcnetwork" => self.finish::<vpc::Network>(p),
            "vpcsubnet" => self.finish::<vpc::Subnet>(p),
            "vpcpool" => self.finish::<vpc::Pool>(p),
            "mk8scluster" => self.finish::<mk8s::Cluster>(p),
            "mk8snodegroup" => self.finish::<mk8s::NodeGroup>(p),
            "computefilesystem" => self.finish::<compute::Filesystem>(p),
            "computegpucluster" => self.finish::<compute::GpuCluster>(p),
            "storagebucket" => self.finish::<storage::Bucket>(p),
            "applicationrelease" => {
                self.finish::<apps::K8sRelease>(p);
                self.settle_release(p);
            }
            "serviceaccount" => self.finish::<iam::ServiceAccount>(p),
            "accesskey" => self.finish::<iam2::AccessKey>(p),
            _ => {}
        }
    }

    fn finish<R: Resource>(&mut self, p: &PendingOperation) {
        let Ok(current) = self.get::<R>(&p.resource_id) else {
            return;
        };
        let region = self.region_of(&current);
        if p.action == "delete" {
            if R::KIND == "mk8scluster" {
                self.delete_children::<mk8s::NodeGroup>(&region, &p.resource_id);
                // A cluster's releases live inside it and go with it.
                let releases: Vec<String> = apps::K8sRelease::items(&self.state)
                    .iter()
                    .filter(|r| {
                        r.spec
                            .as_ref()
                            .is_some_and(|s| s.cluster_id == p.resource_id)
                    })
                    .map(|r| r.id().to_string())
                    .collect();
                for release in releases {
                    self.remove::<apps::K8sRelease>(&release);
                }
            }
            if R::KIND == "project" {
                // Its default network and subnet (all a deletable project holds) go with it.
                self.delete_children::<vpc::Subnet>(&region, &p.resource_id);
                self.delete_children::<vpc::Network>(&region, &p.resource_id);
            }
            self.release(&region, &current.charges(), &p.resource_id);
            // A bucket's objects go with it.
            self.state.objects.retain(|o| o.bucket_id != p.resource_id);
            self.remove::<R>(&p.resource_id);
        } else if p.action == "schedule-deletion" {
            // A soft-deleted bucket stays as it is until purged or undeleted.
        } else if let Some(slot) = self.find_mut::<R>(&p.resource_id) {
            slot.set_phase(Phase::Ready, &region);
            if R::KIND == "mk8snodegroup" {
                self.degrade_node_group(&p.resource_id);
            }
        }
    }

    /// Removes the resources of one kind under `parent_id`, freeing what they were charged.
    fn delete_children<R: Resource>(&mut self, region: &str, parent_id: &str) {
        let children: Vec<R> = self.children::<R>(parent_id).into_iter().cloned().collect();
        for child in children {
            self.release(region, &child.charges(), child.id());
            self.remove::<R>(child.id());
        }
    }

    /// A node group of a degraded cluster (the world's `degraded_clusters`) has one node fewer
    /// ready than it asks for.
    fn degrade_node_group(&mut self, id: &str) {
        let Some(group) = self.find::<mk8s::NodeGroup>(id) else {
            return;
        };
        let degraded = self
            .find::<mk8s::Cluster>(group.parent_id())
            .and_then(|c| c.metadata.as_ref())
            .is_some_and(|m| self.world.degraded_clusters.contains(&m.name));
        if !degraded {
            return;
        }
        if let Some(status) = self
            .find_mut::<mk8s::NodeGroup>(id)
            .and_then(|g| g.status.as_mut())
        {
            status.ready_node_count = (status.ready_node_count - 1).max(0);
        }
    }
}
