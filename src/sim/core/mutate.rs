//! Creates, updates and deletes, the same for every resource kind: the checks the API makes
//! before it accepts a change, the charges it takes, and the operation it answers with.

use tonic::{Code, Status};

use super::errors::{invalid, not_found, service_error};
use super::{Core, now_ms, timestamp};
use crate::cloud::error::status_with_service_error;
use crate::cloud::proto::nebius::common::v1::{
    self as common, Operation, ResourceMetadata, service_error,
};
use crate::cloud::proto::nebius::mk8s::v1 as mk8s;
use crate::cloud::proto::nebius::vpc::v1 as vpc;
use crate::sim::resources::{Phase, Resource};

/// What a mutating call carries besides its body.
#[derive(Debug, Clone, Default)]
pub struct CallContext {
    /// `x-idempotency-key`.
    pub idempotency_key: Option<String>,
    /// A digest of the request, to tell a replay from a different request under a used key.
    pub request_digest: String,
    /// The request, packed, for `Operation.request`.
    pub request: Option<prost_types::Any>,
    /// Who is calling (the token's subject), for `Operation.created_by`.
    pub caller: String,
    /// A scripted fault that strikes after the call took effect: (code, message).
    pub lost_reply: Option<(Code, String)>,
    /// `x-resetmask`, as sent (an Update's; `None` when the header is absent).
    pub reset_mask: Option<String>,
}

impl Core {
    pub fn create<R: Resource>(
        &mut self,
        ctx: &CallContext,
        mut metadata: ResourceMetadata,
        spec: R::Spec,
        latency_ms: u64,
    ) -> Result<Operation, Status> {
        if let Some(op) = self.replay(ctx)? {
            return Ok(op);
        }
        if metadata.parent_id.is_empty() {
            return Err(invalid(
                R::SERVICE,
                "metadata.parent_id",
                "metadata.parent_id is required",
            ));
        }
        let region = self.create_region::<R>(&metadata, &spec)?;
        let unavailable = R::build(metadata.clone(), spec.clone()).unavailable(&region);
        if !unavailable.is_empty() {
            return Err(crate::sim::rules::validate::refusal(
                R::SERVICE,
                &unavailable,
            ));
        }
        self.refuse_taken_name::<R>(&metadata)?;
        let id = self.new_id(R::KIND, &region);
        let now = now_ms();
        metadata.id = id.clone();
        metadata.resource_version = 1;
        metadata.created_at = Some(timestamp(now));
        metadata.updated_at = Some(timestamp(now));
        let mut resource = R::build(metadata, spec);
        resource.fill_defaults(&self.fill_context(&resource));
        let op = self.new_operation(R::SERVICE, &region, format!("Create {}", R::KIND), &id, ctx);

        if let Err(failure) = self.charge(&region, &resource.charges(), &id, R::SERVICE) {
            return self.conclude(ctx, op, "create", 0, Some(failure));
        }
        resource.set_phase(Phase::Creating, &region);
        self.insert::<R>(resource);
        if R::KIND == "project" {
            self.create_default_network(&id)?;
        }
        self.conclude(ctx, op, "create", latency_ms, None)
    }

    /// Where a new resource will live: a project names its region (one the tenant has); any
    /// other resource lives where its parent does.
    fn create_region<R: Resource>(
        &self,
        metadata: &ResourceMetadata,
        spec: &R::Spec,
    ) -> Result<String, Status> {
        if R::KIND != "project" {
            return self
                .region_of_parent(&metadata.parent_id)
                .ok_or_else(|| not_found(R::SERVICE, &metadata.parent_id));
        }
        if metadata.parent_id != self.tenant_id {
            return Err(not_found("iam", &metadata.parent_id));
        }
        let region = R::build(metadata.clone(), spec.clone())
            .own_region()
            .unwrap_or_default();
        if !self.world.regions.contains(&region) {
            return Err(invalid(
                "iam",
                "spec.region",
                &format!("region {region:?} is not available to this tenant"),
            ));
        }
        Ok(region)
    }

    /// Names are unique among a parent's children of one kind.
    fn refuse_taken_name<R: Resource>(&self, metadata: &ResourceMetadata) -> Result<(), Status> {
        if metadata.name.is_empty() {
            return Ok(());
        }
        let Some(existing) = self
            .children::<R>(&metadata.parent_id)
            .into_iter()
            .find(|r| r.name() == metadata.name)
        else {
            return Ok(());
        };
        Err(status_with_service_error(
            Code::AlreadyExists,
            &format!(
                "{} named {:?} already exists in {}",
                R::KIND,
                metadata.name,
                metadata.parent_id
            ),
            service_error(
                R::SERVICE,
                "AlreadyExists",
                service_error::Details::ResourceAlreadyExists(common::ResourceAlreadyExists {
                    resource_id: existing.id().to_string(),
                }),
            ),
        ))
    }

    /// A new project comes with a default network and subnet, as on Nebius.
    fn create_default_network(&mut self, project_id: &str) -> Result<(), Status> {
        let ctx = CallContext {
            caller: "system".into(),
            ..Default::default()
        };
        let meta = |name: &str| ResourceMetadata {
            parent_id: project_id.to_string(),
            name: name.to_string(),
            ..Default::default()
        };
        let op = self.create::<vpc::Network>(
            &ctx,
            meta("default-network"),
            vpc::NetworkSpec::default(),
            0,
        )?;
        if op.status.as_ref().is_some_and(|s| s.code != 0) {
            return Ok(());
        }
        let spec = vpc::SubnetSpec {
            network_id: op.resource_id.clone(),
            ipv4_private_pools: Some(vpc::IPv4PrivateSubnetPools {
                pools: Vec::new(),
                use_network_pools: true,
            }),
            ..Default::default()
        };
        self.create::<vpc::Subnet>(&ctx, meta("default-subnet"), spec, 0)?;
        Ok(())
    }

    pub fn delete<R: Resource>(
        &mut self,
        ctx: &CallContext,
        id: &str,
        latency_ms: u64,
    ) -> Result<Operation, Status> {
        if let Some(op) = self.replay(ctx)? {
            return Ok(op);
        }
        let current: R = self.get(id)?;
        self.check_delete::<R>(id)?;
        let region = self.region_of(&current);
        let op = self.new_operation(R::SERVICE, &region, format!("Delete {}", R::KIND), id, ctx);
        if let Some(slot) = self.find_mut::<R>(id) {
            slot.set_phase(Phase::Deleting, &region);
        }
        self.conclude(ctx, op, "delete", latency_ms, None)
    }

    /// What a Delete checks before it acts: no other operation runs on the resource, and
    /// nothing that depends on it is left.
    pub fn check_delete<R: Resource>(&self, id: &str) -> Result<(), Status> {
        self.conflict(R::SERVICE, id)?;
        let Some(blocker) = self.delete_blocker::<R>(id) else {
            return Ok(());
        };
        Err(status_with_service_error(
            Code::FailedPrecondition,
            &blocker,
            service_error(
                R::SERVICE,
                "BadResourceState",
                service_error::Details::BadResourceState(common::BadResourceState {
                    resource_id: id.to_string(),
                    message: blocker.clone(),
                }),
            ),
        ))
    }

    /// A dry run's answer: an operation about `id`, done at once, that changed nothing.
    pub fn dry_run<R: Resource>(
        &mut self,
        ctx: &CallContext,
        id: &str,
    ) -> Result<Operation, Status> {
        let current: R = self.get(id)?;
        self.check_delete::<R>(id)?;
        let region = self.region_of(&current);
        let mut op =
            self.new_operation(R::SERVICE, &region, format!("Dry run {}", R::KIND), id, ctx);
        op.status = Some(crate::cloud::error::operation_status(Code::Ok, "", None));
        op.finished_at = Some(timestamp(now_ms()));
        self.state.operations.push(op.clone());
        self.persist()?;
        Ok(op)
    }

    /// Starts the accepted (or already failed) operation, remembers it under the call's
    /// idempotency key, and saves the state before the caller hears of it.
    pub(super) fn conclude(
        &mut self,
        ctx: &CallContext,
        op: Operation,
        action: &str,
        latency_ms: u64,
        failure: Option<tonic_types::Status>,
    ) -> Result<Operation, Status> {
        let op = self.start(op, action, latency_ms, failure);
        self.remember(ctx, &op.id);
        self.persist()?;
        Ok(op)
    }

    /// Why a resource cannot be deleted yet, if it cannot.
    fn delete_blocker<R: Resource>(&self, id: &str) -> Option<String> {
        match R::KIND {
            "vpcnetwork" => self
                .state
                .subnets
                .iter()
                .any(|s| s.spec.as_ref().is_some_and(|sp| sp.network_id == id))
                .then(|| format!("network {id} still has subnets")),
            "vpcsubnet" => self
                .state
                .clusters
                .iter()
                .any(|c| {
                    c.spec
                        .as_ref()
                        .and_then(|s| s.control_plane.as_ref())
                        .is_some_and(|cp| cp.subnet_id == id)
                })
                .then(|| format!("subnet {id} is used by a cluster")),
            "project" => {
                let holds = self.state.clusters.iter().any(|c| c.parent_id() == id)
                    || self.state.filesystems.iter().any(|f| f.parent_id() == id)
                    || self.state.gpu_clusters.iter().any(|g| g.parent_id() == id)
                    || self.state.buckets.iter().any(|b| b.parent_id() == id);
                holds.then(|| format!("project {id} still holds resources"))
            }
            "computefilesystem" => self
                .state
                .node_groups
                .iter()
                .any(|g| {
                    g.spec.as_ref().and_then(|s| s.template.as_ref()).is_some_and(|t| {
                        t.filesystems.iter().any(|f| {
                            matches!(&f.r#type, Some(mk8s::attached_filesystem_spec::Type::ExistingFilesystem(e)) if e.id == id)
                        })
                    })
                })
                .then(|| format!("filesystem {id} is attached to a node group")),
            _ => None,
        }
    }
}
