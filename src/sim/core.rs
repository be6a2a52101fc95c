//! The simulator's world state and the generic resource operations every service uses:
//! get, list, create, update, delete, long-running operations, quota and capacity accounting,
//! idempotency, conflicts, and persistence.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use prost::Message;
use tonic::{Code, Status};

use super::resources::{Charges, Phase, Resource};
use super::world::World;
use crate::cloud::error::{operation_status, status_with_service_error};
use crate::cloud::nid;
use crate::cloud::proto::fleetbot::sim::v1::{
    IdempotencyRecord, PendingOperation, ReservationRecord, SimState,
};
use crate::cloud::proto::nebius::capacity::v1 as capacity;
use crate::cloud::proto::nebius::common::v1::{
    self as common, Operation, ResourceMetadata, ServiceError, service_error,
};
use crate::cloud::proto::nebius::compute::v1 as compute;
use crate::cloud::proto::nebius::iam::v1 as iam;
use crate::cloud::proto::nebius::mk8s::v1 as mk8s;
use crate::cloud::proto::nebius::quotas::v1 as quotas;
use crate::cloud::proto::nebius::storage::v1 as storage;
use crate::cloud::proto::nebius::vpc::v1 as vpc;

/// The most items one page may hold, whatever the caller asks.
pub const MAX_PAGE_SIZE: usize = 1000;
const DEFAULT_PAGE_SIZE: usize = 100;

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
}

pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

pub fn timestamp(ms: i64) -> prost_types::Timestamp {
    prost_types::Timestamp {
        seconds: ms.div_euclid(1000),
        nanos: (ms.rem_euclid(1000) * 1_000_000) as i32,
    }
}

fn service_error(service: &str, code: &str, details: service_error::Details) -> ServiceError {
    ServiceError {
        service: service.to_string(),
        code: code.to_string(),
        retry_type: service_error::RetryType::Nothing as i32,
        details: Some(details),
    }
}

pub fn not_found(service: &str, id: &str) -> Status {
    status_with_service_error(
        Code::NotFound,
        &format!("resource {id} not found"),
        service_error(
            service,
            "NotFound",
            service_error::Details::ResourceNotFound(common::ResourceNotFound {
                resource_id: id.to_string(),
            }),
        ),
    )
}

fn invalid(service: &str, field: &str, message: &str) -> Status {
    status_with_service_error(
        Code::InvalidArgument,
        message,
        service_error(
            service,
            "BadRequest",
            service_error::Details::BadRequest(common::BadRequest {
                violations: vec![common::bad_request::Violation {
                    field: field.to_string(),
                    message: message.to_string(),
                    related_fields: Vec::new(),
                }],
            }),
        ),
    )
}

/// The simulated cloud.
pub struct Core {
    pub world: World,
    pub state: SimState,
    pub tenant_id: String,
    state_file: Option<PathBuf>,
    /// Bearer tokens issued by the token exchange, with their expiry (unix ms).
    pub issued_tokens: HashMap<String, i64>,
}

impl Core {
    /// Builds the world, or restores it from `state_file` when that exists.
    pub fn new(world: World, state_file: Option<PathBuf>) -> Result<Core, String> {
        let tenant_id = nid::make(
            "tenant",
            "eu-north1",
            &format!("{}/{}", world.name, world.tenant_name),
        );
        let mut core = Core {
            world,
            state: SimState::default(),
            tenant_id,
            state_file,
            issued_tokens: HashMap::new(),
        };
        let restored = match &core.state_file {
            Some(path) if path.exists() => {
                let bytes = std::fs::read(path)
                    .map_err(|e| format!("cannot read simulator state {}: {e}", path.display()))?;
                core.state = SimState::decode(bytes.as_slice()).map_err(|_| {
                    format!(
                        "simulator state {} is unreadable; refusing to start on a world it cannot prove",
                        path.display()
                    )
                })?;
                true
            }
            _ => false,
        };
        if restored {
            core.normalize_usage_states();
        } else {
            core.seed()?;
            core.persist().map_err(|e| e.message().to_string())?;
        }
        Ok(core)
    }

    /// State written before usage states followed usage kept `USED` at zero, which preflight
    /// rightly refuses as evidence; restored state is brought in line.
    fn normalize_usage_states(&mut self) {
        for a in &mut self.state.quota_allowances {
            if let Some(status) = a.status.as_mut() {
                status.usage_state = quota_usage_state(status.usage);
            }
        }
        for b in &mut self.state.capacity_block_groups {
            if let Some(status) = b.status.as_mut() {
                status.usage_state = block_usage_state(status.usage);
            }
        }
    }

    fn seed(&mut self) -> Result<(), String> {
        let world = self.world.clone();
        let now = now_ms();
        let tenant_meta = ResourceMetadata {
            id: self.tenant_id.clone(),
            name: world.tenant_name.clone(),
            created_at: Some(timestamp(now)),
            resource_version: 1,
            ..Default::default()
        };
        let mut tenant = iam::Container::build(tenant_meta, iam::ContainerSpec::default());
        tenant.set_phase(Phase::Ready, "eu-north1");
        self.state.tenants.push(tenant);

        for (region, entries) in &world.quotas {
            for (name, entry) in entries {
                let spec = entry.spec();
                let id = nid::make(
                    "quotaallowance",
                    region,
                    &format!("{}/{region}/{name}", world.name),
                );
                self.state.quota_allowances.push(quotas::QuotaAllowance {
                    metadata: Some(ResourceMetadata {
                        id,
                        parent_id: self.tenant_id.clone(),
                        name: name.clone(),
                        resource_version: 1,
                        ..Default::default()
                    }),
                    spec: Some(quotas::QuotaAllowanceSpec {
                        limit: spec.limit.finite(),
                        region: region.clone(),
                    }),
                    status: Some(quotas::QuotaAllowanceStatus {
                        state: quotas::quota_allowance_status::State::Active as i32,
                        usage: spec.usage,
                        service: name.split('.').next().unwrap_or("").to_string(),
                        unit: spec
                            .unit
                            .clone()
                            .unwrap_or_else(|| default_unit(name).to_string()),
                        usage_state: quota_usage_state(spec.usage),
                        ..Default::default()
                    }),
                });
            }
        }

        for block in &world.capacity_block_groups {
            let state = match block.state.as_str() {
                "allocating" => capacity::capacity_block_group_status::State::Allocating,
                "shutting" => capacity::capacity_block_group_status::State::Shutting,
                "inactive" => capacity::capacity_block_group_status::State::Inactive,
                "active" => capacity::capacity_block_group_status::State::Active,
                other => {
                    return Err(format!(
                        "capacity block group {:?}: unknown state {other:?}",
                        block.name
                    ));
                }
            };
            self.state
                .capacity_block_groups
                .push(capacity::CapacityBlockGroup {
                    metadata: Some(ResourceMetadata {
                        id: self.capacity_block_id(&block.name),
                        parent_id: self.tenant_id.clone(),
                        resource_version: 1,
                        ..Default::default()
                    }),
                    spec: Some(capacity::CapacityBlockGroupSpec {}),
                    status: Some(capacity::CapacityBlockGroupStatus {
                        region: block.region.clone(),
                        resource_affinity: Some(capacity::ResourceAffinity {
                            versions: Some(capacity::resource_affinity::Versions::ComputeV1(
                                capacity::ResourceAffinityComputeV1 {
                                    fabric: block.fabric.clone(),
                                    platform: block.platform.clone(),
                                },
                            )),
                        }),
                        service: "compute".into(),
                        state: state as i32,
                        current_limit: block.limit,
                        usage: block.usage,
                        usage_state: block_usage_state(block.usage),
                        ..Default::default()
                    }),
                });
        }

        for seed in &world.projects {
            let ctx = CallContext {
                caller: "world".into(),
                ..Default::default()
            };
            let meta = ResourceMetadata {
                parent_id: self.tenant_id.clone(),
                name: seed.name.clone(),
                ..Default::default()
            };
            let op = self
                .create::<iam::Container>(
                    &ctx,
                    meta,
                    iam::ContainerSpec {
                        region: seed.region.clone(),
                    },
                    0,
                )
                .map_err(|s| format!("seeding project {:?}: {}", seed.name, s.message()))?;
            if let Some(status) = &op.status
                && status.code != 0
            {
                return Err(format!(
                    "seeding project {:?}: {}",
                    seed.name, status.message
                ));
            }
        }
        Ok(())
    }

    /// The ID a world's capacity block group gets; tests use it to fill specs at run time.
    pub fn capacity_block_id(&self, name: &str) -> String {
        let region = self
            .world
            .capacity_block_groups
            .iter()
            .find(|b| b.name == name)
            .map_or("eu-north1", |b| b.region.as_str());
        nid::make(
            "capacityblockgroup",
            region,
            &format!("{}/{name}", self.world.name),
        )
    }

    /// Writes the state atomically (temporary file, then rename).
    pub fn persist(&self) -> Result<(), Status> {
        let Some(path) = &self.state_file else {
            return Ok(());
        };
        let tmp = path.with_extension("tmp");
        let write = || -> std::io::Result<()> {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            std::fs::write(&tmp, self.state.encode_to_vec())?;
            std::fs::rename(&tmp, path)
        };
        write().map_err(|e| Status::internal(format!("simulator cannot save its state: {e}")))
    }

    fn next_serial(&mut self) -> u64 {
        self.state.next_serial += 1;
        self.state.next_serial
    }

    pub fn new_id(&mut self, kind: &str, region: &str) -> String {
        let serial = self.next_serial();
        nid::make(kind, region, &format!("{}/{serial}", self.world.name))
    }

    /// The region a child of `parent_id` lives in: the project's, followed up through clusters.
    pub fn region_of_parent(&self, parent_id: &str) -> Option<String> {
        if let Some(project) = self.state.projects.iter().find(|p| p.id() == parent_id) {
            return project.spec.as_ref().map(|s| s.region.clone());
        }
        if let Some(cluster) = self.state.clusters.iter().find(|c| c.id() == parent_id) {
            return self.region_of_parent(cluster.parent_id());
        }
        None
    }

    fn region_of<R: Resource>(&self, resource: &R) -> String {
        resource
            .own_region()
            .or_else(|| self.region_of_parent(resource.parent_id()))
            .unwrap_or_default()
    }

    // --- reads -------------------------------------------------------------------------

    pub fn get<R: Resource>(&self, id: &str) -> Result<R, Status> {
        R::items(&self.state)
            .iter()
            .find(|r| r.id() == id)
            .cloned()
            .ok_or_else(|| not_found(R::SERVICE, id))
    }

    pub fn get_by_name<R: Resource>(&self, parent_id: &str, name: &str) -> Result<R, Status> {
        R::items(&self.state)
            .iter()
            .find(|r| r.parent_id() == parent_id && r.name() == name)
            .cloned()
            .ok_or_else(|| not_found(R::SERVICE, &format!("{name} in {parent_id}")))
    }

    /// One page of the items matching `keep`, and the token of the next page.
    pub fn list<R: Resource>(
        &self,
        page_size: i64,
        page_token: &str,
        keep: impl Fn(&R) -> bool,
    ) -> Result<(Vec<R>, String), Status> {
        let all: Vec<&R> = R::items(&self.state).iter().filter(|r| keep(r)).collect();
        paginate(&all, page_size, page_token, R::SERVICE)
    }

    // --- mutations ---------------------------------------------------------------------

    fn replay(&self, ctx: &CallContext) -> Result<Option<Operation>, Status> {
        let Some(key) = &ctx.idempotency_key else {
            return Ok(None);
        };
        let live_since = now_ms() - self.idempotency_window_ms();
        let Some(record) = self
            .state
            .idempotency
            .iter()
            .find(|r| &r.key == key && r.used_at_unix_ms > live_since)
        else {
            return Ok(None);
        };
        if record.request_digest != ctx.request_digest {
            return Err(Status::failed_precondition(
                "x-idempotency-key was already used for a different request",
            ));
        }
        Ok(self.operation(&record.operation_id).ok())
    }

    fn remember(&mut self, ctx: &CallContext, operation_id: &str) {
        if let Some(key) = &ctx.idempotency_key {
            let now = now_ms();
            // Keys past the window are forgotten, as the API forgets them; that also keeps the
            // persisted state from growing with every call ever made.
            let live_since = now - self.idempotency_window_ms();
            self.state
                .idempotency
                .retain(|r| r.used_at_unix_ms > live_since && &r.key != key);
            self.state.idempotency.push(IdempotencyRecord {
                key: key.clone(),
                operation_id: operation_id.to_string(),
                request_digest: ctx.request_digest.clone(),
                used_at_unix_ms: now,
            });
        }
    }

    fn idempotency_window_ms(&self) -> i64 {
        self.world.idempotency_window_seconds.saturating_mul(1000)
    }

    fn conflict(&self, service: &str, resource_id: &str) -> Result<(), Status> {
        if let Some(running) = self
            .state
            .pending
            .iter()
            .find(|p| p.resource_id == resource_id)
        {
            return Err(status_with_service_error(
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
            ));
        }
        Ok(())
    }

    fn new_operation(
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
            resource_id: resource_id.to_string(),
            ..Default::default()
        }
    }

    /// Stores an operation; with no latency (or a failure) it is finished at once.
    fn start(
        &mut self,
        mut op: Operation,
        action: &str,
        latency_ms: u64,
        failure: Option<tonic_types::Status>,
    ) -> Operation {
        if let Some(status) = failure {
            op.status = Some(status);
            op.finished_at = Some(timestamp(now_ms()));
        } else if latency_ms == 0 {
            self.state.operations.push(op.clone());
            self.state.pending.push(PendingOperation {
                operation_id: op.id.clone(),
                done_at_unix_ms: 0,
                action: action.to_string(),
                resource_id: op.resource_id.clone(),
            });
            self.advance();
            return self.operation(&op.id).unwrap_or(op);
        } else {
            self.state.pending.push(PendingOperation {
                operation_id: op.id.clone(),
                done_at_unix_ms: now_ms() + latency_ms as i64,
                action: action.to_string(),
                resource_id: op.resource_id.clone(),
            });
        }
        self.state.operations.push(op.clone());
        op
    }

    pub fn latency(&self) -> u64 {
        self.world.operation_latency_ms
    }

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
        let region = if R::KIND == "project" {
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
            region
        } else {
            self.region_of_parent(&metadata.parent_id)
                .ok_or_else(|| not_found(R::SERVICE, &metadata.parent_id))?
        };
        if !metadata.name.is_empty()
            && let Some(existing) = R::items(&self.state)
                .iter()
                .find(|r| r.parent_id() == metadata.parent_id && r.name() == metadata.name)
        {
            return Err(status_with_service_error(
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
            ));
        }
        let id = self.new_id(R::KIND, &region);
        let now = now_ms();
        metadata.id = id.clone();
        metadata.resource_version = 1;
        metadata.created_at = Some(timestamp(now));
        metadata.updated_at = Some(timestamp(now));
        let mut resource = R::build(metadata, spec);
        let op = self.new_operation(R::SERVICE, &region, format!("Create {}", R::KIND), &id, ctx);

        if let Err(failure) = self.charge(&region, &resource.charges(), &id, R::SERVICE) {
            let op = self.start(op, "create", 0, Some(failure));
            self.remember(ctx, &op.id);
            self.persist()?;
            return Ok(op);
        }
        resource.set_phase(Phase::Creating, &region);
        R::items_mut(&mut self.state).push(resource);
        if R::KIND == "project" {
            self.create_default_network(&id, &region)?;
        }
        let op = self.start(op, "create", latency_ms, None);
        self.remember(ctx, &op.id);
        self.persist()?;
        Ok(op)
    }

    /// A new project comes with a default network and subnet, as on Nebius.
    fn create_default_network(&mut self, project_id: &str, region: &str) -> Result<(), Status> {
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
        let network_id = op.resource_id.clone();
        let spec = vpc::SubnetSpec {
            network_id,
            ipv4_private_pools: Some(vpc::IPv4PrivateSubnetPools {
                pools: Vec::new(),
                use_network_pools: true,
            }),
            ..Default::default()
        };
        let _ = region;
        self.create::<vpc::Subnet>(&ctx, meta("default-subnet"), spec, 0)?;
        Ok(())
    }

    pub fn update<R: Resource>(
        &mut self,
        ctx: &CallContext,
        metadata: ResourceMetadata,
        spec: R::Spec,
        latency_ms: u64,
    ) -> Result<Operation, Status> {
        if let Some(op) = self.replay(ctx)? {
            return Ok(op);
        }
        let id = metadata.id.clone();
        let current: R = self.get(&id)?;
        self.conflict(R::SERVICE, &id)?;
        let current_version = current.metadata().map_or(0, |m| m.resource_version);
        if metadata.resource_version != 0 && metadata.resource_version != current_version {
            return Err(Status::failed_precondition(format!(
                "resource_version {} does not match the current {current_version}",
                metadata.resource_version
            )));
        }
        let region = self.region_of(&current);
        let mut next = current.clone();
        next.set_spec(spec);
        {
            let m = next.metadata_mut();
            m.labels = metadata.labels.clone();
            if !metadata.name.is_empty() {
                m.name = metadata.name.clone();
            }
            m.resource_version = current_version + 1;
            m.updated_at = Some(timestamp(now_ms()));
        }
        let op = self.new_operation(R::SERVICE, &region, format!("Update {}", R::KIND), &id, ctx);
        self.release(&region, &current.charges(), &id);
        if let Err(failure) = self.charge(&region, &next.charges(), &id, R::SERVICE) {
            // Put the old charges back: a refused update changes nothing.
            let _ = self.charge(&region, &current.charges(), &id, R::SERVICE);
            let op = self.start(op, "update", 0, Some(failure));
            self.remember(ctx, &op.id);
            self.persist()?;
            return Ok(op);
        }
        next.set_phase(Phase::Updating, &region);
        if let Some(slot) = R::items_mut(&mut self.state)
            .iter_mut()
            .find(|r| r.id() == id)
        {
            *slot = next;
        }
        let op = self.start(op, "update", latency_ms, None);
        self.remember(ctx, &op.id);
        self.persist()?;
        Ok(op)
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
        self.conflict(R::SERVICE, id)?;
        if let Some(blocker) = self.delete_blocker::<R>(id) {
            return Err(status_with_service_error(
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
            ));
        }
        let region = self.region_of(&current);
        let op = self.new_operation(R::SERVICE, &region, format!("Delete {}", R::KIND), id, ctx);
        if let Some(slot) = R::items_mut(&mut self.state)
            .iter_mut()
            .find(|r| r.id() == id)
        {
            slot.set_phase(Phase::Deleting, &region);
        }
        let op = self.start(op, "delete", latency_ms, None);
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

    /// Completes every operation whose time has come.
    pub fn advance(&mut self) {
        let now = now_ms();
        let (due, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut self.state.pending)
            .into_iter()
            .partition(|p| p.done_at_unix_ms <= now);
        self.state.pending = waiting;
        if due.is_empty() {
            return;
        }
        for p in due {
            let kind = nid::parse(&p.resource_id)
                .map(|n| n.kind.to_string())
                .unwrap_or_default();
            match kind.as_str() {
                "project" => self.finish::<iam::Container>(&p),
                "vpcnetwork" => self.finish::<vpc::Network>(&p),
                "vpcsubnet" => self.finish::<vpc::Subnet>(&p),
                "vpcpool" => self.finish::<vpc::Pool>(&p),
                "mk8scluster" => self.finish::<mk8s::Cluster>(&p),
                "mk8snodegroup" => self.finish::<mk8s::NodeGroup>(&p),
                "computefilesystem" => self.finish::<compute::Filesystem>(&p),
                "computegpucluster" => self.finish::<compute::GpuCluster>(&p),
                "storagebucket" => self.finish::<storage::Bucket>(&p),
                _ => {}
            }
            if let Some(op) = self
                .state
                .operations
                .iter_mut()
                .find(|o| o.id == p.operation_id)
            {
                op.status = Some(operation_status(Code::Ok, "", None));
                op.finished_at = Some(timestamp(now));
            }
        }
        let _ = self.persist();
    }

    fn finish<R: Resource>(&mut self, p: &PendingOperation) {
        let Ok(current) = self.get::<R>(&p.resource_id) else {
            return;
        };
        let region = self.region_of(&current);
        if p.action == "delete" {
            if R::KIND == "mk8scluster" {
                // Deleting a cluster deletes its node groups.
                let groups: Vec<mk8s::NodeGroup> = self
                    .state
                    .node_groups
                    .iter()
                    .filter(|g| g.parent_id() == p.resource_id)
                    .cloned()
                    .collect();
                for group in groups {
                    self.release(&region, &group.charges(), group.id());
                    self.state.node_groups.retain(|g| g.id() != group.id());
                }
            }
            self.release(&region, &current.charges(), &p.resource_id);
            R::items_mut(&mut self.state).retain(|r| r.id() != p.resource_id);
        } else if let Some(slot) = R::items_mut(&mut self.state)
            .iter_mut()
            .find(|r| r.id() == p.resource_id)
        {
            slot.set_phase(Phase::Ready, &region);
        }
    }

    pub fn operation(&self, id: &str) -> Result<Operation, Status> {
        self.state
            .operations
            .iter()
            .find(|o| o.id == id)
            .cloned()
            .ok_or_else(|| not_found("common", id))
    }

    // --- quota and capacity ------------------------------------------------------------

    fn allowance_mut(&mut self, region: &str, name: &str) -> Option<&mut quotas::QuotaAllowance> {
        let tenant = self.tenant_id.clone();
        self.state.quota_allowances.iter_mut().find(|a| {
            a.metadata
                .as_ref()
                .is_some_and(|m| m.name == name && m.parent_id == tenant)
                && a.spec.as_ref().is_some_and(|s| s.region == region)
        })
    }

    /// Takes quota and reserved capacity for a resource, or refuses with the failure the
    /// operation ends in. Quotas the tenant has no allowance for are not quota-controlled.
    fn charge(
        &mut self,
        region: &str,
        charges: &Charges,
        resource_id: &str,
        service: &str,
    ) -> Result<(), tonic_types::Status> {
        let mut violations = Vec::new();
        for (name, amount) in &charges.quotas {
            if *amount == 0 {
                continue;
            }
            if let Some(allowance) = self.allowance_mut(region, name) {
                let usage = allowance.status.as_ref().map_or(0, |s| s.usage);
                if let Some(limit) = allowance.spec.as_ref().and_then(|s| s.limit)
                    && usage.saturating_add(*amount) > limit
                {
                    violations.push(common::quota_failure::Violation {
                        quota: name.clone(),
                        message: format!(
                            "quota {name} in {region}: {amount} more requested, {} of {limit} available",
                            limit.saturating_sub(usage)
                        ),
                        limit: limit.to_string(),
                        requested: usage.saturating_add(*amount).to_string(),
                    });
                }
            }
        }
        if !violations.is_empty() {
            let names: Vec<&str> = violations.iter().map(|v| v.quota.as_str()).collect();
            let message = format!("quota exceeded: {}", names.join(", "));
            return Err(operation_status(
                Code::ResourceExhausted,
                &message,
                Some(ServiceError {
                    service: service.to_string(),
                    code: "QuotaExceeded".into(),
                    retry_type: service_error::RetryType::Nothing as i32,
                    details: Some(service_error::Details::QuotaFailure(common::QuotaFailure {
                        violations,
                    })),
                }),
            ));
        }
        if let Some(reservation) = &charges.reserved {
            let tenant = self.tenant_id.clone();
            let fits = |b: &capacity::CapacityBlockGroup| -> bool {
                let Some(status) = &b.status else {
                    return false;
                };
                let affinity_platform = status
                    .resource_affinity
                    .as_ref()
                    .and_then(|a| a.versions.as_ref())
                    .map(|capacity::resource_affinity::Versions::ComputeV1(c)| c.platform.clone())
                    .unwrap_or_default();
                b.metadata.as_ref().is_some_and(|m| m.parent_id == tenant)
                    && status.state == capacity::capacity_block_group_status::State::Active as i32
                    && status.region == region
                    && affinity_platform == reservation.platform
                    && status.usage.saturating_add(reservation.gpus) <= status.current_limit
            };
            let chosen = reservation.block_ids.iter().find(|id| {
                self.state
                    .capacity_block_groups
                    .iter()
                    .any(|b| b.metadata.as_ref().is_some_and(|m| &m.id == *id) && fits(b))
            });
            let Some(chosen) = chosen.cloned() else {
                return Err(operation_status(
                    Code::ResourceExhausted,
                    "not enough reserved capacity in the listed capacity block groups",
                    Some(ServiceError {
                        service: "compute".into(),
                        code: "NotEnoughResources".into(),
                        retry_type: service_error::RetryType::Nothing as i32,
                        details: Some(service_error::Details::NotEnoughResources(
                            common::NotEnoughResources {
                                violations: vec![common::not_enough_resources::Violation {
                                    resource_type: reservation.platform.clone(),
                                    message: format!(
                                        "{} reserved GPUs requested",
                                        reservation.gpus
                                    ),
                                    requested: reservation.gpus.to_string(),
                                }],
                            },
                        )),
                    }),
                ));
            };
            if let Some(block) = self
                .state
                .capacity_block_groups
                .iter_mut()
                .find(|b| b.metadata.as_ref().is_some_and(|m| m.id == chosen))
                && let Some(status) = block.status.as_mut()
            {
                status.usage += reservation.gpus;
                status.usage_state = block_usage_state(status.usage);
            }
            self.state.reservations.push(ReservationRecord {
                resource_id: resource_id.to_string(),
                block_id: chosen,
                gpus: reservation.gpus,
            });
        }
        for (name, amount) in &charges.quotas {
            if let Some(allowance) = self.allowance_mut(region, name) {
                let status = allowance.status.get_or_insert_with(Default::default);
                status.usage = status.usage.saturating_add(*amount);
                status.usage_state = quota_usage_state(status.usage);
            }
        }
        Ok(())
    }

    fn release(&mut self, region: &str, charges: &Charges, resource_id: &str) {
        for (name, amount) in &charges.quotas {
            if let Some(allowance) = self.allowance_mut(region, name) {
                let status = allowance.status.get_or_insert_with(Default::default);
                status.usage = status.usage.saturating_sub(*amount);
                status.usage_state = quota_usage_state(status.usage);
            }
        }
        if let Some(pos) = self
            .state
            .reservations
            .iter()
            .position(|r| r.resource_id == resource_id)
        {
            let record = self.state.reservations.remove(pos);
            if let Some(status) = self
                .state
                .capacity_block_groups
                .iter_mut()
                .find(|b| b.metadata.as_ref().is_some_and(|m| m.id == record.block_id))
                .and_then(|b| b.status.as_mut())
            {
                status.usage = status.usage.saturating_sub(record.gpus);
                status.usage_state = block_usage_state(status.usage);
            }
        }
    }
}

/// The usage state the API reports beside a usage counter: `USED` while anything is charged,
/// `NOT_USED` once usage is back to zero (a released allowance is not "used" at 0).
fn quota_usage_state(usage: u64) -> i32 {
    use quotas::quota_allowance_status::UsageState;
    if usage > 0 {
        UsageState::Used as i32
    } else {
        UsageState::NotUsed as i32
    }
}

fn block_usage_state(usage: u64) -> i32 {
    use capacity::capacity_block_group_status::UsageState;
    if usage > 0 {
        UsageState::Used as i32
    } else {
        UsageState::NotUsed as i32
    }
}

/// The unit an allowance reports by default.
pub fn default_unit(name: &str) -> &'static str {
    if name.starts_with("compute.disk.size.")
        || name.starts_with("compute.filesystem.size.")
        || name.starts_with("storage.bucket.size.")
    {
        "byte"
    } else {
        "count"
    }
}

/// Pages through `items` with the token being the offset of the next item.
pub fn paginate<T: Clone>(
    items: &[&T],
    page_size: i64,
    page_token: &str,
    service: &str,
) -> Result<(Vec<T>, String), Status> {
    let start: usize = if page_token.is_empty() {
        0
    } else {
        page_token
            .strip_prefix("p")
            .and_then(|n| n.parse().ok())
            .filter(|n| *n <= items.len())
            .ok_or_else(|| invalid(service, "page_token", "page_token is not valid"))?
    };
    let size = match page_size {
        n if n <= 0 => DEFAULT_PAGE_SIZE,
        n => (n as usize).min(MAX_PAGE_SIZE),
    };
    let end = (start + size).min(items.len());
    let page = items[start..end].iter().map(|i| (*i).clone()).collect();
    let next = if end < items.len() {
        format!("p{end}")
    } else {
        String::new()
    };
    Ok((page, next))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn core() -> Core {
        let world = World::from_yaml(
            "name: keys\nregions: [eu-north1]\nprojects: [{name: p, region: eu-north1}]\n",
        )
        .unwrap();
        Core::new(world, None).unwrap()
    }

    fn network(core: &mut Core, key: &str, name: &str) -> Result<Operation, Status> {
        let project = core.state.projects[0].metadata.clone().unwrap().id;
        let ctx = CallContext {
            idempotency_key: Some(key.into()),
            request_digest: name.into(),
            ..Default::default()
        };
        let meta = ResourceMetadata {
            parent_id: project,
            name: name.into(),
            ..Default::default()
        };
        core.create::<vpc::Network>(&ctx, meta, vpc::NetworkSpec::default(), 0)
    }

    #[test]
    fn restored_state_reports_usage_states_that_follow_usage() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sim.state");
        let world = World::from_yaml(
            "name: keys\nregions: [eu-north1]\nquotas: {eu-north1: {compute.disk.count: 5}}\n",
        )
        .unwrap();
        let mut core = Core::new(world.clone(), Some(path.clone())).unwrap();
        // As an older simulator left it: usage released, state still USED.
        let status = core.state.quota_allowances[0].status.as_mut().unwrap();
        status.usage = 0;
        status.usage_state = quotas::quota_allowance_status::UsageState::Used as i32;
        core.persist().unwrap();
        let restored = Core::new(world, Some(path)).unwrap();
        assert_eq!(
            restored.state.quota_allowances[0]
                .status
                .as_ref()
                .unwrap()
                .usage_state,
            quotas::quota_allowance_status::UsageState::NotUsed as i32
        );
    }

    #[test]
    fn idempotency_keys_are_remembered_for_the_window_only() {
        let mut core = core();
        let first = network(&mut core, "k", "a").unwrap();
        // A retry within the window is the same request: the same operation, nothing new.
        assert_eq!(network(&mut core, "k", "a").unwrap().id, first.id);
        let refused = network(&mut core, "k", "b").unwrap_err();
        assert!(
            refused
                .message()
                .contains("already used for a different request")
        );

        // Past the window the key is forgotten, as the API forgets it.
        let window = core.idempotency_window_ms();
        for r in &mut core.state.idempotency {
            r.used_at_unix_ms -= window + 1;
        }
        let later = network(&mut core, "k", "b").unwrap();
        assert_ne!(later.id, first.id);
        assert_eq!(
            core.state.idempotency.len(),
            1,
            "expired keys are dropped from the state"
        );
    }
}
