//! `nebius.compute.v1`: shared filesystems, GPU clusters and the platform catalogue.

use tonic::{Request, Response, Status};

use super::SimService;
use super::crud::crud;
use crate::cloud::proto::nebius::common::v1 as common;
use crate::cloud::proto::nebius::compute::v1 as compute;
use crate::sim::core::{Core, paginate};
use crate::sim::resources::Resource;

impl SimService {
    /// `ListOperationsByParent`, the same for both services: every operation on the
    /// filesystems and GPU clusters under the parent.
    async fn compute_operations(
        &self,
        request: Request<compute::ListOperationsByParentRequest>,
        method: &str,
    ) -> Result<Response<common::ListOperationsResponse>, Status> {
        self.enter(&request, method).await?;
        let r = request.get_ref();
        Ok(Response::new(operations_of(
            &self.lock(),
            &r.parent_id,
            r.page_size,
            &r.page_token,
        )?))
    }
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
    compute::filesystem_service_server::FilesystemService, "nebius.compute.v1.FilesystemService", compute::Filesystem,
    get: compute::GetFilesystemRequest, by_name: common::GetByNameRequest,
    list: compute::ListFilesystemsRequest => compute::ListFilesystemsResponse,
    create: compute::CreateFilesystemRequest, update: compute::UpdateFilesystemRequest, delete: compute::DeleteFilesystemRequest,
    {
        async fn list_operations_by_parent(&self, request: Request<compute::ListOperationsByParentRequest>) -> Result<Response<common::ListOperationsResponse>, Status> {
            self.compute_operations(request, "/nebius.compute.v1.FilesystemService/ListOperationsByParent").await
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
            self.compute_operations(request, "/nebius.compute.v1.GpuClusterService/ListOperationsByParent").await
        }
    }
);

/// The catalogue of a project's region: what `parent_id`'s node groups may ask for.
#[tonic::async_trait]
impl compute::platform_service_server::PlatformService for SimService {
    async fn get_by_name(
        &self,
        request: Request<common::GetByNameRequest>,
    ) -> Result<Response<compute::Platform>, Status> {
        self.enter(&request, "/nebius.compute.v1.PlatformService/GetByName")
            .await?;
        let r = request.get_ref();
        let region = platform_region(&self.lock(), &r.parent_id)?;
        crate::sim::catalogue::in_region(&region)
            .find(|p| p.name == r.name)
            .map(|p| Response::new(p.to_proto(&r.parent_id, platform_id(&region, p.name))))
            .ok_or_else(|| crate::sim::core::not_found("compute", &r.name))
    }

    async fn list(
        &self,
        request: Request<compute::ListPlatformsRequest>,
    ) -> Result<Response<compute::ListPlatformsResponse>, Status> {
        self.enter(&request, "/nebius.compute.v1.PlatformService/List")
            .await?;
        let r = request.get_ref();
        let region = platform_region(&self.lock(), &r.parent_id)?;
        let all: Vec<compute::Platform> = crate::sim::catalogue::in_region(&region)
            .map(|p| p.to_proto(&r.parent_id, platform_id(&region, p.name)))
            .collect();
        let refs: Vec<&compute::Platform> = all.iter().collect();
        let (items, next_page_token) = paginate(&refs, r.page_size, &r.page_token, "compute")?;
        Ok(Response::new(compute::ListPlatformsResponse {
            items,
            next_page_token,
        }))
    }
}

/// The region whose catalogue a project sees; an unknown project is NotFound, an empty one
/// a missing required field.
fn platform_region(core: &Core, parent_id: &str) -> Result<String, Status> {
    if parent_id.is_empty() {
        return Err(crate::sim::core::errors_invalid(
            "compute",
            "parent_id",
            "value is required",
        ));
    }
    core.state
        .projects
        .iter()
        .find(|p| p.id() == parent_id)
        .and_then(|p| p.spec.as_ref().map(|s| s.region.clone()))
        .ok_or_else(|| crate::sim::core::not_found("compute", parent_id))
}

fn platform_id(region: &str, name: &str) -> String {
    crate::cloud::nid::make("computeplatform", region, name)
}
