//! `nebius.iam.v1`: projects and the tenant (the token exchange is in [`crate::sim::auth`]).

use tonic::{Request, Response, Status};

use super::{SimService, lost};
use crate::cloud::proto::nebius::common::v1 as common;
use crate::cloud::proto::nebius::iam::v1 as iam;
use crate::sim::core::{not_found, paginate};
use crate::sim::resources::Resource;

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
        let (items, next_page_token) = self.lock().list_children::<iam::Container>(
            &r.parent_id,
            r.page_size,
            &r.page_token,
            |_| true,
        )?;
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
            r.spec,
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
