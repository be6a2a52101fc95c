//! The simulator's gRPC services: the Nebius service traits, implemented over [`Core`].
//!
//! Every call goes through [`SimService::enter`]: scripted faults, then authentication, then
//! the completion of operations whose time has come.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use prost::{Message, Name};
use sha2::{Digest, Sha256};
use tonic::{Code, Request, Response, Status};

use super::core::{CallContext, Core, not_found, now_ms, paginate};
use super::resources::Resource;
use super::world::FaultSpec;
use crate::cloud::error::status_with_service_error;
use crate::cloud::nid;
use crate::cloud::proto::nebius::capacity::v1 as capacity;
use crate::cloud::proto::nebius::common::v1 as common;
use crate::cloud::proto::nebius::compute::v1 as compute;
use crate::cloud::proto::nebius::iam::v1 as iam;
use crate::cloud::proto::nebius::mk8s::v1 as mk8s;
use crate::cloud::proto::nebius::quotas::v1 as quotas;
use crate::cloud::proto::nebius::storage::v1 as storage;
use crate::cloud::proto::nebius::vpc::v1 as vpc;

/// Call counters and the seeded generator behind scripted faults.
#[derive(Debug, Default)]
struct FaultState {
    calls: HashMap<String, u64>,
    rng: u64,
    fired: u64,
    /// Every method called, in order (tests assert on it).
    log: Vec<String>,
}

impl FaultState {
    /// xorshift64*: deterministic for a world seed, good enough to spread failures.
    fn next_unit(&mut self) -> f64 {
        let mut x = self.rng.max(1);
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Shared state of one simulator instance.
pub struct Shared {
    core: Mutex<Core>,
    faults: Mutex<FaultState>,
}

/// The service object registered for every Nebius service.
#[derive(Clone)]
pub struct SimService {
    shared: Arc<Shared>,
}

/// `*`, the full method (`/nebius.mk8s.v1.ClusterService/Create`) or the short form
/// (`ClusterService/Create`).
fn fault_matches(fault: &FaultSpec, method: &str) -> bool {
    let short = method
        .trim_start_matches('/')
        .rsplit_once('/')
        .map(|(service, rpc)| format!("{}/{rpc}", service.rsplit('.').next().unwrap_or(service)))
        .unwrap_or_default();
    fault.method == "*" || method == fault.method || short == fault.method.trim_start_matches('/')
}

fn code_from_name(name: &str) -> Code {
    match name.to_ascii_lowercase().as_str() {
        "cancelled" => Code::Cancelled,
        "invalid_argument" => Code::InvalidArgument,
        "deadline_exceeded" => Code::DeadlineExceeded,
        "not_found" => Code::NotFound,
        "already_exists" => Code::AlreadyExists,
        "permission_denied" => Code::PermissionDenied,
        "resource_exhausted" => Code::ResourceExhausted,
        "failed_precondition" => Code::FailedPrecondition,
        "aborted" => Code::Aborted,
        "internal" => Code::Internal,
        "unauthenticated" => Code::Unauthenticated,
        "unknown" => Code::Unknown,
        _ => Code::Unavailable,
    }
}

impl SimService {
    pub fn new(core: Core) -> SimService {
        let seed = core.world.seed;
        SimService {
            shared: Arc::new(Shared {
                core: Mutex::new(core),
                faults: Mutex::new(FaultState {
                    calls: HashMap::new(),
                    rng: seed ^ 0x9E37_79B9_7F4A_7C15,
                    fired: 0,
                    log: Vec::new(),
                }),
            }),
        }
    }

    /// The world state, with due operations completed.
    pub fn lock(&self) -> MutexGuard<'_, Core> {
        let mut core = self.shared.core.lock().unwrap_or_else(|p| p.into_inner());
        core.advance();
        core
    }

    /// Faults, authentication and the call context, in that order.
    async fn enter<M: Message + Name>(
        &self,
        request: &Request<M>,
        method: &str,
    ) -> Result<CallContext, Status> {
        let lost_reply = self.inject_fault(method).await?;
        let caller = self.authenticate(request)?;
        let body = request.get_ref();
        Ok(CallContext {
            idempotency_key: request
                .metadata()
                .get("x-idempotency-key")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string),
            request_digest: hex::encode(Sha256::digest(body.encode_to_vec())),
            request: prost_types::Any::from_msg(body).ok(),
            caller,
            lost_reply,
        })
    }

    /// Faults for calls that take no bearer token.
    pub async fn inject_fault_public(&self, method: &str) -> Result<(), Status> {
        self.inject_fault(method).await.map(|_| ())
    }

    /// Applies scripted latency and failures. A failure that strikes after the effect is
    /// returned for the handler to raise once it has acted.
    async fn inject_fault(&self, method: &str) -> Result<Option<(Code, String)>, Status> {
        let (latency, failure) = {
            let faults = self
                .shared
                .core
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .world
                .faults
                .clone();
            let mut state = self.shared.faults.lock().unwrap_or_else(|p| p.into_inner());
            let mut latency = 0u64;
            let mut failure = None;
            state.log.push(method.to_string());
            let count = {
                let c = state.calls.entry(method.to_string()).or_insert(0);
                *c += 1;
                *c
            };
            for fault in faults.iter().filter(|f| fault_matches(f, method)) {
                latency += fault.latency_ms;
                let roll = fault.error_rate > 0.0 && state.next_unit() < fault.error_rate;
                if failure.is_none() && (fault.fail_nth.contains(&count) || roll) {
                    failure = Some(fault.clone());
                    state.fired += 1;
                }
            }
            (latency, failure)
        };
        if latency > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(latency)).await;
        }
        if let Some(fault) = failure {
            let code = code_from_name(&fault.code);
            let message = format!("injected fault for {method}");
            if fault.after_effect {
                return Ok(Some((code, message)));
            }
            return Err(match fault.retry_type.as_deref() {
                None => Status::new(code, message),
                Some(kind) => {
                    let retry = match kind {
                        "call" => common::service_error::RetryType::Call,
                        "unit_of_work" => common::service_error::RetryType::UnitOfWork,
                        "nothing" => common::service_error::RetryType::Nothing,
                        _ => common::service_error::RetryType::Unspecified,
                    };
                    status_with_service_error(
                        code,
                        &message,
                        common::ServiceError {
                            service: "sim".into(),
                            code: "InjectedFault".into(),
                            retry_type: retry as i32,
                            details: None,
                        },
                    )
                }
            });
        }
        Ok(None)
    }

    /// Checks the bearer token; returns who the caller is.
    fn authenticate<M>(&self, request: &Request<M>) -> Result<String, Status> {
        let token = request
            .metadata()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .ok_or_else(|| Status::unauthenticated("authorization: Bearer <token> is required"))?;
        let core = self.shared.core.lock().unwrap_or_else(|p| p.into_inner());
        if core.world.static_tokens.iter().any(|t| t == token) {
            return Ok("static-token".into());
        }
        match core.issued_tokens.get(token) {
            Some(expiry) if *expiry > now_ms() => Ok("service-account".into()),
            Some(_) => Err(Status::unauthenticated("token expired")),
            None => Err(Status::unauthenticated("unknown token")),
        }
    }

    /// Every method called so far, in order.
    pub fn call_log(&self) -> Vec<String> {
        self.shared
            .faults
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .log
            .clone()
    }

    /// The calls that could change the world (creates, updates, deletes and the like).
    pub fn mutation_calls(&self) -> Vec<String> {
        const READS: &[&str] = &[
            "/Get",
            "/GetByName",
            "/List",
            "/ListByNetwork",
            "/ListBySourcePool",
            "/ListResources",
            "/GetByResourceAffinity",
            "/ListControlPlaneVersions",
            "/GetCompatibilityMatrix",
            "/ListOperationsByParent",
            "/Exchange",
        ];
        self.call_log()
            .into_iter()
            .filter(|m| !READS.iter().any(|r| m.ends_with(r)))
            .collect()
    }

    /// Forgets the call log.
    pub fn clear_call_log(&self) {
        self.shared
            .faults
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .log
            .clear();
    }

    /// How many scripted faults have struck so far.
    pub fn faults_fired(&self) -> u64 {
        self.shared
            .faults
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .fired
    }

    /// Accepts `token` as a bearer token (the embedded default hands one to its client).
    pub fn accept_token(&self, token: &str, expires_at_ms: i64) {
        self.shared
            .core
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .issued_tokens
            .insert(token.to_string(), expires_at_ms);
    }

    /// The token exchange's access to the world.
    pub fn with_core<T>(&self, f: impl FnOnce(&mut Core) -> T) -> T {
        let mut core = self.shared.core.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut core)
    }
}

/// Raises a fault scripted to strike after the effect.
fn lost(ctx: &CallContext) -> Result<(), Status> {
    match &ctx.lost_reply {
        Some((code, message)) => Err(Status::new(*code, message.clone())),
        None => Ok(()),
    }
}

macro_rules! crud {
    (
        $trait:path, $service:literal, $res:ty,
        get: $get:ty, by_name: $by_name:ty, list: $list:ty => $list_resp:ty,
        create: $create:ty, update: $update:ty, delete: $delete:ty,
        { $($extra:tt)* }
    ) => {
        #[tonic::async_trait]
        impl $trait for SimService {
            async fn get(&self, request: Request<$get>) -> Result<Response<$res>, Status> {
                self.enter(&request, concat!("/", $service, "/Get")).await?;
                Ok(Response::new(self.lock().get::<$res>(&request.get_ref().id)?))
            }
            async fn get_by_name(&self, request: Request<$by_name>) -> Result<Response<$res>, Status> {
                self.enter(&request, concat!("/", $service, "/GetByName")).await?;
                let r = request.get_ref();
                Ok(Response::new(self.lock().get_by_name::<$res>(&r.parent_id, &r.name)?))
            }
            async fn list(&self, request: Request<$list>) -> Result<Response<$list_resp>, Status> {
                self.enter(&request, concat!("/", $service, "/List")).await?;
                let r = request.get_ref();
                let (items, next_page_token) = self
                    .lock()
                    .list::<$res>(r.page_size, &r.page_token, |x| x.parent_id() == r.parent_id)?;
                let mut response = <$list_resp>::default();
                response.items = items;
                response.next_page_token = next_page_token;
                Ok(Response::new(response))
            }
            async fn create(&self, request: Request<$create>) -> Result<Response<common::Operation>, Status> {
                let ctx = self.enter(&request, concat!("/", $service, "/Create")).await?;
                let r = request.into_inner();
                let mut core = self.lock();
                let latency = core.latency();
                let op = core.create::<$res>(&ctx, r.metadata.unwrap_or_default(), r.spec.unwrap_or_default(), latency)?;
                lost(&ctx)?;
                Ok(Response::new(op))
            }
            async fn update(&self, request: Request<$update>) -> Result<Response<common::Operation>, Status> {
                let ctx = self.enter(&request, concat!("/", $service, "/Update")).await?;
                let r = request.into_inner();
                let mut core = self.lock();
                let latency = core.latency();
                let op = core.update::<$res>(&ctx, r.metadata.unwrap_or_default(), r.spec.unwrap_or_default(), latency)?;
                lost(&ctx)?;
                Ok(Response::new(op))
            }
            async fn delete(&self, request: Request<$delete>) -> Result<Response<common::Operation>, Status> {
                let ctx = self.enter(&request, concat!("/", $service, "/Delete")).await?;
                let mut core = self.lock();
                let latency = core.latency();
                let op = core.delete::<$res>(&ctx, &request.get_ref().id, latency)?;
                lost(&ctx)?;
                Ok(Response::new(op))
            }
            $($extra)*
        }
    };
}

fn operations_of(
    core: &Core,
    parent_id: &str,
    page_size: i64,
    page_token: &str,
) -> Result<common::ListOperationsResponse, Status> {
    let children: Vec<String> = core
        .state
        .filesystems
        .iter()
        .filter(|f| f.parent_id() == parent_id)
        .map(|f| f.id().to_string())
        .chain(
            core.state
                .gpu_clusters
                .iter()
                .filter(|g| g.parent_id() == parent_id)
                .map(|g| g.id().to_string()),
        )
        .collect();
    let ops: Vec<&common::Operation> = core
        .state
        .operations
        .iter()
        .filter(|o| children.contains(&o.resource_id))
        .collect();
    let (operations, next_page_token) = paginate(&ops, page_size, page_token, "compute")?;
    Ok(common::ListOperationsResponse {
        operations,
        next_page_token,
    })
}

crud!(
    vpc::network_service_server::NetworkService, "nebius.vpc.v1.NetworkService", vpc::Network,
    get: vpc::GetNetworkRequest, by_name: vpc::GetNetworkByNameRequest,
    list: vpc::ListNetworksRequest => vpc::ListNetworksResponse,
    create: vpc::CreateNetworkRequest, update: vpc::UpdateNetworkRequest, delete: vpc::DeleteNetworkRequest,
    {
        async fn create_default(&self, request: Request<vpc::CreateDefaultNetworkRequest>) -> Result<Response<common::Operation>, Status> {
            let ctx = self.enter(&request, "/nebius.vpc.v1.NetworkService/CreateDefault").await?;
            let r = request.into_inner();
            let mut core = self.lock();
            let latency = core.latency();
            Ok(Response::new(core.create::<vpc::Network>(&ctx, r.metadata.unwrap_or_default(), vpc::NetworkSpec::default(), latency)?))
        }
    }
);

crud!(
    vpc::subnet_service_server::SubnetService, "nebius.vpc.v1.SubnetService", vpc::Subnet,
    get: vpc::GetSubnetRequest, by_name: vpc::GetSubnetByNameRequest,
    list: vpc::ListSubnetsRequest => vpc::ListSubnetsResponse,
    create: vpc::CreateSubnetRequest, update: vpc::UpdateSubnetRequest, delete: vpc::DeleteSubnetRequest,
    {
        async fn list_by_network(&self, request: Request<vpc::ListSubnetsByNetworkRequest>) -> Result<Response<vpc::ListSubnetsResponse>, Status> {
            self.enter(&request, "/nebius.vpc.v1.SubnetService/ListByNetwork").await?;
            let r = request.get_ref();
            let (items, next_page_token) = self.lock().list::<vpc::Subnet>(r.page_size, &r.page_token, |s| {
                s.spec.as_ref().is_some_and(|sp| sp.network_id == r.network_id)
            })?;
            Ok(Response::new(vpc::ListSubnetsResponse { items, next_page_token }))
        }
    }
);

crud!(
    vpc::pool_service_server::PoolService, "nebius.vpc.v1.PoolService", vpc::Pool,
    get: vpc::GetPoolRequest, by_name: vpc::GetPoolByNameRequest,
    list: vpc::ListPoolsRequest => vpc::ListPoolsResponse,
    create: vpc::CreatePoolRequest, update: vpc::UpdatePoolRequest, delete: vpc::DeletePoolRequest,
    {
        async fn list_by_source_pool(&self, request: Request<vpc::ListPoolsBySourcePoolRequest>) -> Result<Response<vpc::ListPoolsResponse>, Status> {
            self.enter(&request, "/nebius.vpc.v1.PoolService/ListBySourcePool").await?;
            let r = request.get_ref();
            let (items, next_page_token) = self.lock().list::<vpc::Pool>(r.page_size, &r.page_token, |p| {
                p.spec.as_ref().is_some_and(|sp| sp.source_pool_id == r.pool_id)
            })?;
            Ok(Response::new(vpc::ListPoolsResponse { items, next_page_token }))
        }
    }
);

crud!(
    mk8s::cluster_service_server::ClusterService, "nebius.mk8s.v1.ClusterService", mk8s::Cluster,
    get: mk8s::GetClusterRequest, by_name: common::GetByNameRequest,
    list: mk8s::ListClustersRequest => mk8s::ListClustersResponse,
    create: mk8s::CreateClusterRequest, update: mk8s::UpdateClusterRequest, delete: mk8s::DeleteClusterRequest,
    {
        async fn list_control_plane_versions(&self, request: Request<mk8s::ListClusterControlPlaneVersionsRequest>) -> Result<Response<mk8s::ListClusterControlPlaneVersionsResponse>, Status> {
            self.enter(&request, "/nebius.mk8s.v1.ClusterService/ListControlPlaneVersions").await?;
            let items = ["1.31", "1.32", "1.33", "1.34"]
                .iter()
                .map(|v| mk8s::ClusterControlPlaneVersion { version: v.to_string(), ..Default::default() })
                .collect();
            Ok(Response::new(mk8s::ListClusterControlPlaneVersionsResponse { items }))
        }
    }
);

crud!(
    mk8s::node_group_service_server::NodeGroupService, "nebius.mk8s.v1.NodeGroupService", mk8s::NodeGroup,
    get: mk8s::GetNodeGroupRequest, by_name: common::GetByNameRequest,
    list: mk8s::ListNodeGroupsRequest => mk8s::ListNodeGroupsResponse,
    create: mk8s::CreateNodeGroupRequest, update: mk8s::UpdateNodeGroupRequest, delete: mk8s::DeleteNodeGroupRequest,
    {
        async fn upgrade(&self, request: Request<mk8s::UpgradeNodeGroupRequest>) -> Result<Response<common::Operation>, Status> {
            let ctx = self.enter(&request, "/nebius.mk8s.v1.NodeGroupService/Upgrade").await?;
            let mut core = self.lock();
            let group: mk8s::NodeGroup = core.get(&request.get_ref().id)?;
            let latency = core.latency();
            let metadata = group.metadata.clone().unwrap_or_default();
            Ok(Response::new(core.update::<mk8s::NodeGroup>(&ctx, metadata, group.spec.unwrap_or_default(), latency)?))
        }
        async fn get_compatibility_matrix(&self, request: Request<mk8s::GetNodeGroupCompatibilityMatrixRequest>) -> Result<Response<mk8s::NodeGroupCompatibilityMatrix>, Status> {
            self.enter(&request, "/nebius.mk8s.v1.NodeGroupService/GetCompatibilityMatrix").await?;
            let r = request.get_ref();
            let version = if r.cluster_kubernetes_version.is_empty() { "1.31".to_string() } else { r.cluster_kubernetes_version.clone() };
            let items = ["cuda12", "cuda12.8", "cuda13.0"]
                .iter()
                .map(|p| mk8s::NodeGroupCompatibilityVersionItem {
                    os: "ubuntu24.04".into(),
                    drivers_preset: p.to_string(),
                    compatible_platforms: vec![r.platform.clone()],
                })
                .collect();
            Ok(Response::new(mk8s::NodeGroupCompatibilityMatrix {
                versions: vec![mk8s::NodeGroupCompatibilityVersion { kubernetes_version: version, items }],
            }))
        }
    }
);

crud!(
    compute::filesystem_service_server::FilesystemService, "nebius.compute.v1.FilesystemService", compute::Filesystem,
    get: compute::GetFilesystemRequest, by_name: common::GetByNameRequest,
    list: compute::ListFilesystemsRequest => compute::ListFilesystemsResponse,
    create: compute::CreateFilesystemRequest, update: compute::UpdateFilesystemRequest, delete: compute::DeleteFilesystemRequest,
    {
        async fn list_operations_by_parent(&self, request: Request<compute::ListOperationsByParentRequest>) -> Result<Response<common::ListOperationsResponse>, Status> {
            self.enter(&request, "/nebius.compute.v1.FilesystemService/ListOperationsByParent").await?;
            let r = request.get_ref();
            Ok(Response::new(operations_of(&self.lock(), &r.parent_id, r.page_size, &r.page_token)?))
        }
    }
);

crud!(
    compute::gpu_cluster_service_server::GpuClusterService, "nebius.compute.v1.GpuClusterService", compute::GpuCluster,
    get: compute::GetGpuClusterRequest, by_name: common::GetByNameRequest,
    list: compute::ListGpuClustersRequest => compute::ListGpuClustersResponse,
    create: compute::CreateGpuClusterRequest, update: compute::UpdateGpuClusterRequest, delete: compute::DeleteGpuClusterRequest,
    {
        async fn list_operations_by_parent(&self, request: Request<compute::ListOperationsByParentRequest>) -> Result<Response<common::ListOperationsResponse>, Status> {
            self.enter(&request, "/nebius.compute.v1.GpuClusterService/ListOperationsByParent").await?;
            let r = request.get_ref();
            Ok(Response::new(operations_of(&self.lock(), &r.parent_id, r.page_size, &r.page_token)?))
        }
    }
);

crud!(
    storage::bucket_service_server::BucketService, "nebius.storage.v1.BucketService", storage::Bucket,
    get: storage::GetBucketRequest, by_name: storage::GetBucketByNameRequest,
    list: storage::ListBucketsRequest => storage::ListBucketsResponse,
    create: storage::CreateBucketRequest, update: storage::UpdateBucketRequest, delete: storage::DeleteBucketRequest,
    {
        async fn purge(&self, request: Request<storage::PurgeBucketRequest>) -> Result<Response<common::Operation>, Status> {
            self.enter(&request, "/nebius.storage.v1.BucketService/Purge").await?;
            let core = self.lock();
            let bucket: storage::Bucket = core.get(&request.get_ref().id)?;
            Err(Status::failed_precondition(format!("bucket {} is not scheduled for deletion", bucket.id())))
        }
        async fn undelete(&self, request: Request<storage::UndeleteBucketRequest>) -> Result<Response<common::Operation>, Status> {
            self.enter(&request, "/nebius.storage.v1.BucketService/Undelete").await?;
            let core = self.lock();
            let bucket: storage::Bucket = core.get(&request.get_ref().id)?;
            Err(Status::failed_precondition(format!("bucket {} is not scheduled for deletion", bucket.id())))
        }
    }
);

#[tonic::async_trait]
impl iam::project_service_server::ProjectService for SimService {
    async fn create(
        &self,
        request: Request<iam::CreateProjectRequest>,
    ) -> Result<Response<common::Operation>, Status> {
        let ctx = self
            .enter(&request, "/nebius.iam.v1.ProjectService/Create")
            .await?;
        let r = request.into_inner();
        let mut core = self.lock();
        let latency = core.latency();
        let op = core.create::<iam::Container>(
            &ctx,
            r.metadata.unwrap_or_default(),
            r.spec.unwrap_or_default(),
            latency,
        )?;
        lost(&ctx)?;
        Ok(Response::new(op))
    }
    async fn get(
        &self,
        request: Request<iam::GetProjectRequest>,
    ) -> Result<Response<iam::Container>, Status> {
        self.enter(&request, "/nebius.iam.v1.ProjectService/Get")
            .await?;
        Ok(Response::new(
            self.lock().get::<iam::Container>(&request.get_ref().id)?,
        ))
    }
    async fn get_by_name(
        &self,
        request: Request<iam::GetProjectByNameRequest>,
    ) -> Result<Response<iam::Container>, Status> {
        self.enter(&request, "/nebius.iam.v1.ProjectService/GetByName")
            .await?;
        let r = request.get_ref();
        Ok(Response::new(
            self.lock()
                .get_by_name::<iam::Container>(&r.parent_id, &r.name)?,
        ))
    }
    async fn list(
        &self,
        request: Request<iam::ListProjectsRequest>,
    ) -> Result<Response<iam::ListProjectsResponse>, Status> {
        self.enter(&request, "/nebius.iam.v1.ProjectService/List")
            .await?;
        let r = request.get_ref();
        let (items, next_page_token) =
            self.lock()
                .list::<iam::Container>(r.page_size, &r.page_token, |p| {
                    p.parent_id() == r.parent_id
                })?;
        Ok(Response::new(iam::ListProjectsResponse {
            items,
            next_page_token,
        }))
    }
    async fn update(
        &self,
        request: Request<iam::UpdateProjectRequest>,
    ) -> Result<Response<common::Operation>, Status> {
        let ctx = self
            .enter(&request, "/nebius.iam.v1.ProjectService/Update")
            .await?;
        let r = request.into_inner();
        let mut core = self.lock();
        let latency = core.latency();
        Ok(Response::new(core.update::<iam::Container>(
            &ctx,
            r.metadata.unwrap_or_default(),
            r.spec.unwrap_or_default(),
            latency,
        )?))
    }
}

#[tonic::async_trait]
impl iam::tenant_service_server::TenantService for SimService {
    async fn get(
        &self,
        request: Request<iam::GetTenantRequest>,
    ) -> Result<Response<iam::Container>, Status> {
        self.enter(&request, "/nebius.iam.v1.TenantService/Get")
            .await?;
        let core = self.lock();
        core.state
            .tenants
            .iter()
            .find(|t| t.id() == request.get_ref().id)
            .cloned()
            .map(Response::new)
            .ok_or_else(|| not_found("iam", &request.get_ref().id))
    }
    async fn list(
        &self,
        request: Request<iam::ListTenantsRequest>,
    ) -> Result<Response<iam::ListTenantsResponse>, Status> {
        self.enter(&request, "/nebius.iam.v1.TenantService/List")
            .await?;
        let r = request.get_ref();
        let core = self.lock();
        let all: Vec<&iam::Container> = core.state.tenants.iter().collect();
        let (items, next_page_token) = paginate(&all, r.page_size, &r.page_token, "iam")?;
        Ok(Response::new(iam::ListTenantsResponse {
            items,
            next_page_token,
        }))
    }
}

#[tonic::async_trait]
impl common::operation_service_server::OperationService for SimService {
    async fn get(
        &self,
        request: Request<common::GetOperationRequest>,
    ) -> Result<Response<common::Operation>, Status> {
        self.enter(&request, "/nebius.common.v1.OperationService/Get")
            .await?;
        Ok(Response::new(self.lock().operation(&request.get_ref().id)?))
    }
    async fn list(
        &self,
        request: Request<common::ListOperationsRequest>,
    ) -> Result<Response<common::ListOperationsResponse>, Status> {
        self.enter(&request, "/nebius.common.v1.OperationService/List")
            .await?;
        let r = request.get_ref();
        let core = self.lock();
        let ops: Vec<&common::Operation> = core
            .state
            .operations
            .iter()
            .filter(|o| o.resource_id == r.resource_id)
            .collect();
        let (operations, next_page_token) = paginate(&ops, r.page_size, &r.page_token, "common")?;
        Ok(Response::new(common::ListOperationsResponse {
            operations,
            next_page_token,
        }))
    }
}

fn tenant_allowances_only() -> Status {
    Status::permission_denied(
        "tenant quota allowances are changed by the Nebius account team, not through this API",
    )
}

#[tonic::async_trait]
impl quotas::quota_allowance_service_server::QuotaAllowanceService for SimService {
    async fn list(
        &self,
        request: Request<quotas::ListQuotaAllowancesRequest>,
    ) -> Result<Response<quotas::ListQuotaAllowancesResponse>, Status> {
        self.enter(&request, "/nebius.quotas.v1.QuotaAllowanceService/List")
            .await?;
        let r = request.get_ref();
        let core = self.lock();
        let all: Vec<&quotas::QuotaAllowance> = core
            .state
            .quota_allowances
            .iter()
            .filter(|a| {
                a.metadata
                    .as_ref()
                    .is_some_and(|m| m.parent_id == r.parent_id)
            })
            .collect();
        let (items, next_page_token) = paginate(&all, r.page_size, &r.page_token, "quotas")?;
        Ok(Response::new(quotas::ListQuotaAllowancesResponse {
            items,
            next_page_token,
        }))
    }
    async fn get(
        &self,
        request: Request<quotas::GetQuotaAllowanceRequest>,
    ) -> Result<Response<quotas::QuotaAllowance>, Status> {
        self.enter(&request, "/nebius.quotas.v1.QuotaAllowanceService/Get")
            .await?;
        let id = &request.get_ref().id;
        self.lock()
            .state
            .quota_allowances
            .iter()
            .find(|a| a.metadata.as_ref().is_some_and(|m| &m.id == id))
            .cloned()
            .map(Response::new)
            .ok_or_else(|| not_found("quotas", id))
    }
    async fn get_by_name(
        &self,
        request: Request<quotas::GetByNameRequest>,
    ) -> Result<Response<quotas::QuotaAllowance>, Status> {
        self.enter(
            &request,
            "/nebius.quotas.v1.QuotaAllowanceService/GetByName",
        )
        .await?;
        let r = request.get_ref();
        self.lock()
            .state
            .quota_allowances
            .iter()
            .find(|a| {
                a.metadata
                    .as_ref()
                    .is_some_and(|m| m.parent_id == r.parent_id && m.name == r.name)
                    && a.spec.as_ref().is_some_and(|s| s.region == r.region)
            })
            .cloned()
            .map(Response::new)
            .ok_or_else(|| not_found("quotas", &format!("{} in {}", r.name, r.region)))
    }
    async fn create(
        &self,
        request: Request<quotas::CreateQuotaAllowanceRequest>,
    ) -> Result<Response<common::Operation>, Status> {
        self.enter(&request, "/nebius.quotas.v1.QuotaAllowanceService/Create")
            .await?;
        Err(tenant_allowances_only())
    }
    async fn update(
        &self,
        request: Request<quotas::UpdateQuotaAllowanceRequest>,
    ) -> Result<Response<common::Operation>, Status> {
        self.enter(&request, "/nebius.quotas.v1.QuotaAllowanceService/Update")
            .await?;
        Err(tenant_allowances_only())
    }
    async fn delete(
        &self,
        request: Request<quotas::DeleteQuotaAllowanceRequest>,
    ) -> Result<Response<common::Operation>, Status> {
        self.enter(&request, "/nebius.quotas.v1.QuotaAllowanceService/Delete")
            .await?;
        Err(tenant_allowances_only())
    }
}

fn block_affinity(
    block: &capacity::CapacityBlockGroup,
) -> Option<&capacity::ResourceAffinityComputeV1> {
    block
        .status
        .as_ref()?
        .resource_affinity
        .as_ref()?
        .versions
        .as_ref()
        .map(|capacity::resource_affinity::Versions::ComputeV1(c)| c)
}

#[tonic::async_trait]
impl capacity::capacity_block_group_service_server::CapacityBlockGroupService for SimService {
    async fn get(
        &self,
        request: Request<capacity::GetCapacityBlockGroupRequest>,
    ) -> Result<Response<capacity::CapacityBlockGroup>, Status> {
        self.enter(
            &request,
            "/nebius.capacity.v1.CapacityBlockGroupService/Get",
        )
        .await?;
        let id = &request.get_ref().id;
        self.lock()
            .state
            .capacity_block_groups
            .iter()
            .find(|b| b.metadata.as_ref().is_some_and(|m| &m.id == id))
            .cloned()
            .map(Response::new)
            .ok_or_else(|| not_found("capacity", id))
    }
    async fn get_by_resource_affinity(
        &self,
        request: Request<capacity::GetCapacityBlockGroupByResourceAffinityRequest>,
    ) -> Result<Response<capacity::CapacityBlockGroup>, Status> {
        self.enter(
            &request,
            "/nebius.capacity.v1.CapacityBlockGroupService/GetByResourceAffinity",
        )
        .await?;
        let r = request.get_ref();
        let wanted = r
            .resource_affinity
            .as_ref()
            .and_then(|a| a.versions.as_ref())
            .map(|capacity::resource_affinity::Versions::ComputeV1(c)| c.clone());
        self.lock()
            .state
            .capacity_block_groups
            .iter()
            .find(|b| {
                b.metadata
                    .as_ref()
                    .is_some_and(|m| m.parent_id == r.parent_id)
                    && b.status.as_ref().is_some_and(|s| s.region == r.region)
                    && block_affinity(b) == wanted.as_ref()
            })
            .cloned()
            .map(Response::new)
            .ok_or_else(|| not_found("capacity", "capacity block group with that affinity"))
    }
    async fn list(
        &self,
        request: Request<capacity::ListCapacityBlockGroupsRequest>,
    ) -> Result<Response<capacity::ListCapacityBlockGroupsResponse>, Status> {
        self.enter(
            &request,
            "/nebius.capacity.v1.CapacityBlockGroupService/List",
        )
        .await?;
        let r = request.get_ref();
        let core = self.lock();
        let all: Vec<&capacity::CapacityBlockGroup> = core
            .state
            .capacity_block_groups
            .iter()
            .filter(|b| {
                b.metadata
                    .as_ref()
                    .is_some_and(|m| m.parent_id == r.parent_id)
            })
            .collect();
        let (items, next_page_token) =
            paginate(&all, r.page_size.min(200), &r.page_token, "capacity")?;
        Ok(Response::new(capacity::ListCapacityBlockGroupsResponse {
            items,
            next_page_token,
        }))
    }
    async fn list_resources(
        &self,
        request: Request<capacity::ListCapacityBlockGroupResourcesRequest>,
    ) -> Result<Response<capacity::ListCapacityBlockGroupResourcesResponse>, Status> {
        self.enter(
            &request,
            "/nebius.capacity.v1.CapacityBlockGroupService/ListResources",
        )
        .await?;
        let id = &request.get_ref().id;
        let core = self.lock();
        if !core
            .state
            .capacity_block_groups
            .iter()
            .any(|b| b.metadata.as_ref().is_some_and(|m| &m.id == id))
        {
            return Err(not_found("capacity", id));
        }
        let resource_ids = core
            .state
            .reservations
            .iter()
            .filter(|r| &r.block_id == id)
            .map(|r| r.resource_id.clone())
            .collect();
        Ok(Response::new(
            capacity::ListCapacityBlockGroupResourcesResponse { resource_ids },
        ))
    }
}

/// Each block has one active interval covering its whole limit.
fn interval_of(block: &capacity::CapacityBlockGroup) -> capacity::CapacityInterval {
    let meta = block.metadata.clone().unwrap_or_default();
    let status = block.status.clone().unwrap_or_default();
    let region = status.region.clone();
    capacity::CapacityInterval {
        metadata: Some(common::ResourceMetadata {
            id: nid::make("capacityinterval", &region, &meta.id),
            parent_id: meta.id.clone(),
            resource_version: 1,
            ..Default::default()
        }),
        spec: Some(capacity::CapacityIntervalSpec {}),
        status: Some(capacity::CapacityIntervalStatus {
            container_id: meta.parent_id,
            region,
            resource_affinity: status.resource_affinity,
            service: "compute".into(),
            quantity: status.current_limit,
            state: capacity::capacity_interval_status::State::Active as i32,
            ..Default::default()
        }),
    }
}

#[tonic::async_trait]
impl capacity::capacity_interval_service_server::CapacityIntervalService for SimService {
    async fn get(
        &self,
        request: Request<capacity::GetCapacityIntervalRequest>,
    ) -> Result<Response<capacity::CapacityInterval>, Status> {
        self.enter(&request, "/nebius.capacity.v1.CapacityIntervalService/Get")
            .await?;
        let id = &request.get_ref().id;
        self.lock()
            .state
            .capacity_block_groups
            .iter()
            .map(interval_of)
            .find(|i| i.metadata.as_ref().is_some_and(|m| &m.id == id))
            .map(Response::new)
            .ok_or_else(|| not_found("capacity", id))
    }
    async fn list(
        &self,
        request: Request<capacity::ListCapacityIntervalsRequest>,
    ) -> Result<Response<capacity::ListCapacityIntervalsResponse>, Status> {
        self.enter(&request, "/nebius.capacity.v1.CapacityIntervalService/List")
            .await?;
        let r = request.get_ref();
        let core = self.lock();
        let intervals: Vec<capacity::CapacityInterval> = core
            .state
            .capacity_block_groups
            .iter()
            .filter(|b| b.metadata.as_ref().is_some_and(|m| m.id == r.parent_id))
            .map(interval_of)
            .collect();
        let refs: Vec<&capacity::CapacityInterval> = intervals.iter().collect();
        let (items, next_page_token) = paginate(&refs, r.page_size, &r.page_token, "capacity")?;
        Ok(Response::new(capacity::ListCapacityIntervalsResponse {
            items,
            next_page_token,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fault(method: &str) -> FaultSpec {
        FaultSpec {
            method: method.into(),
            code: "unavailable".into(),
            error_rate: 0.0,
            fail_nth: vec![],
            latency_ms: 0,
            retry_type: None,
            after_effect: false,
        }
    }

    #[test]
    fn faults_match_full_short_and_wildcard_methods() {
        let m = "/nebius.mk8s.v1.ClusterService/Create";
        assert!(fault_matches(&fault("ClusterService/Create"), m));
        assert!(fault_matches(&fault(m), m));
        assert!(fault_matches(&fault("*"), m));
        assert!(!fault_matches(&fault("NodeGroupService/Create"), m));
        assert!(!fault_matches(&fault("ClusterService/Get"), m));
    }
}
