//! `nebius.iam.v2`: projects and tenants, beside v1 (which ends on 2026-12-16; "all projects
//! remain accessible through the v2 API"). Both versions serve the same stored containers:
//! v2 types them (`Project`, `Tenant`), keeps the region in the spec only, and reports one
//! state. v1's suspension has no v2 counterpart; the simulator reports a suspended container
//! as `PARKED` (docs/cloud.md).

use tonic::{Code, Request, Response, Status};

use super::{SimService, lost};
use crate::cloud::proto::nebius::common::v1 as common;
use crate::cloud::proto::nebius::iam::v1 as iam;
use crate::cloud::proto::nebius::iam::v2 as iam2;
use crate::sim::core::{not_found, paginate};
use crate::sim::resources::Resource;

use iam2::project_status::ProjectState;
use iam2::tenant_status::TenantState;

/// v2's page size when none is asked for ("Default value: 10").
const DEFAULT_PAGE_SIZE: i64 = 10;

fn page_size(asked: i64) -> i64 {
    if asked > 0 { asked } else { DEFAULT_PAGE_SIZE }
}

/// A v1 container's state in v2's terms (the two enums number differently).
fn state_number(status: &iam::ContainerStatus, tenant: bool) -> i32 {
    use iam::State as S;
    let suspended = status.suspension_state == iam::SuspensionState::Suspended as i32;
    let suspending = status.suspension_state == iam::SuspensionState::Suspending as i32;
    let project = match iam::State::try_from(status.container_state) {
        _ if suspended => ProjectState::Parked,
        _ if suspending => ProjectState::Parking,
        Ok(S::Active) => ProjectState::Active,
        Ok(S::Creating) => ProjectState::Creating,
        Ok(S::Created) => ProjectState::Created,
        Ok(S::Activating) => ProjectState::Activating,
        Ok(S::Parking) => ProjectState::Parking,
        Ok(S::Parked) => ProjectState::Parked,
        Ok(S::Purging | S::Purged)
        | Ok(S::SchedulingForDeletion | S::ScheduledForDeletion)
        | Ok(S::SchedulingForDeletionByParent | S::ScheduledForDeletionByParent) => {
            ProjectState::Purging
        }
        _ => ProjectState::StateUnspecified,
    };
    if !tenant {
        return project as i32;
    }
    let state = match project {
        ProjectState::Active => TenantState::Active,
        ProjectState::Creating => TenantState::Creating,
        ProjectState::Created => TenantState::Created,
        ProjectState::Activating => TenantState::Activating,
        ProjectState::Parking => TenantState::Parking,
        ProjectState::Parked => TenantState::Parked,
        _ => TenantState::StateUnspecified,
    };
    state as i32
}

fn project(c: iam::Container) -> iam2::Project {
    let status = c.status.unwrap_or_default();
    iam2::Project {
        metadata: c.metadata,
        spec: Some(iam2::ProjectSpec {
            region: c
                .spec
                .map(|s| s.region)
                .filter(|r| !r.is_empty())
                .unwrap_or_else(|| status.region.clone()),
        }),
        status: Some(iam2::ProjectStatus {
            project_state: state_number(&status, false),
        }),
    }
}

fn tenant(c: iam::Container) -> iam2::Tenant {
    let status = c.status.unwrap_or_default();
    iam2::Tenant {
        metadata: c.metadata,
        spec: Some(iam2::TenantSpec {}),
        status: Some(iam2::TenantStatus {
            tenant_state: state_number(&status, true),
        }),
    }
}

fn container_spec(spec: Option<iam2::ProjectSpec>) -> Option<iam::ContainerSpec> {
    spec.map(|s| iam::ContainerSpec { region: s.region })
}

const PROJECTS: &str = "/nebius.iam.v2.ProjectService";
const TENANTS: &str = "/nebius.iam.v2.TenantService";

#[tonic::async_trait]
impl iam2::project_service_server::ProjectService for SimService {
    async fn create(
        &self,
        request: Request<iam2::CreateProjectRequest>,
    ) -> Result<Response<common::Operation>, Status> {
        let ctx = self.enter(&request, &format!("{PROJECTS}/Create")).await?;
        let r = request.into_inner();
        let mut core = self.lock();
        let latency = core.latency();
        let op = core.create::<iam::Container>(
            &ctx,
            r.metadata.unwrap_or_default(),
            container_spec(r.spec).unwrap_or_default(),
            latency,
        )?;
        lost(&ctx)?;
        Ok(Response::new(op))
    }

    async fn get(
        &self,
        request: Request<iam2::GetProjectRequest>,
    ) -> Result<Response<iam2::Project>, Status> {
        self.enter(&request, &format!("{PROJECTS}/Get")).await?;
        let found = self.lock().get::<iam::Container>(&request.get_ref().id)?;
        Ok(Response::new(project(found)))
    }

    async fn get_by_name(
        &self,
        request: Request<iam2::GetProjectByNameRequest>,
    ) -> Result<Response<iam2::Project>, Status> {
        self.enter(&request, &format!("{PROJECTS}/GetByName"))
            .await?;
        let r = request.get_ref();
        let found = self
            .lock()
            .get_by_name::<iam::Container>(&r.parent_id, &r.name)?;
        Ok(Response::new(project(found)))
    }

    async fn list(
        &self,
        request: Request<iam2::ListProjectsRequest>,
    ) -> Result<Response<iam2::ListProjectsResponse>, Status> {
        self.enter(&request, &format!("{PROJECTS}/List")).await?;
        let r = request.get_ref();
        let (items, next_page_token) = self.lock().list_children::<iam::Container>(
            &r.parent_id,
            page_size(r.page_size),
            &r.page_token,
            |_| true,
        )?;
        Ok(Response::new(iam2::ListProjectsResponse {
            items: items.into_iter().map(project).collect(),
            next_page_token,
        }))
    }

    async fn update(
        &self,
        request: Request<iam2::UpdateProjectRequest>,
    ) -> Result<Response<common::Operation>, Status> {
        let ctx = self.enter(&request, &format!("{PROJECTS}/Update")).await?;
        let r = request.into_inner();
        let mut core = self.lock();
        let latency = core.latency();
        let op = core.update::<iam::Container>(
            &ctx,
            r.metadata.unwrap_or_default(),
            container_spec(r.spec),
            latency,
        )?;
        lost(&ctx)?;
        Ok(Response::new(op))
    }

    async fn delete(
        &self,
        request: Request<iam2::DeleteProjectRequest>,
    ) -> Result<Response<common::Operation>, Status> {
        let ctx = self.enter(&request, &format!("{PROJECTS}/Delete")).await?;
        let r = request.into_inner();
        let mut core = self.lock();
        let latency = core.latency();
        let op = if r.dry_run {
            // Checks what a deletion checks, deletes nothing.
            core.dry_run::<iam::Container>(&ctx, &r.id)?
        } else {
            core.delete::<iam::Container>(&ctx, &r.id, latency)?
        };
        lost(&ctx)?;
        Ok(Response::new(op))
    }
}

#[tonic::async_trait]
impl iam2::tenant_service_server::TenantService for SimService {
    async fn get(
        &self,
        request: Request<iam2::GetTenantRequest>,
    ) -> Result<Response<iam2::Tenant>, Status> {
        self.enter(&request, &format!("{TENANTS}/Get")).await?;
        let id = &request.get_ref().id;
        let core = self.lock();
        let found = core.state.tenants.iter().find(|t| t.id() == id).cloned();
        found
            .map(|t| Response::new(tenant(t)))
            .ok_or_else(|| not_found("iam", id))
    }

    async fn get_by_name(
        &self,
        request: Request<iam2::GetTenantByNameRequest>,
    ) -> Result<Response<iam2::Tenant>, Status> {
        self.enter(&request, &format!("{TENANTS}/GetByName"))
            .await?;
        let r = request.get_ref();
        if !r.parent_id.is_empty() {
            return Err(crate::sim::core::errors_invalid(
                "iam",
                "parent_id",
                "only an empty parent_id is allowed: tenants are top-level",
            ));
        }
        let core = self.lock();
        let found = core
            .state
            .tenants
            .iter()
            .find(|t| t.name() == r.name)
            .cloned();
        found
            .map(|t| Response::new(tenant(t)))
            .ok_or_else(|| not_found("iam", &r.name))
    }

    async fn list(
        &self,
        request: Request<iam2::ListTenantsRequest>,
    ) -> Result<Response<iam2::ListTenantsResponse>, Status> {
        self.enter(&request, &format!("{TENANTS}/List")).await?;
        let r = request.get_ref();
        let core = self.lock();
        let all: Vec<&iam::Container> = core.state.tenants.iter().collect();
        let (items, next_page_token) =
            paginate(&all, page_size(r.page_size), &r.page_token, "iam")?;
        Ok(Response::new(iam2::ListTenantsResponse {
            items: items.into_iter().map(tenant).collect(),
            next_page_token,
        }))
    }

    async fn update(
        &self,
        request: Request<iam2::UpdateTenantRequest>,
    ) -> Result<Response<common::Operation>, Status> {
        self.enter(&request, &format!("{TENANTS}/Update")).await?;
        Err(Status::new(
            Code::Unimplemented,
            "the simulator does not change tenants",
        ))
    }
}
