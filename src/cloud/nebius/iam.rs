//! IAM: the tenant and its projects (containers, in Nebius's terms).

use tonic::transport::Channel;

use super::convert::{labels, meta_field, new_meta};
use super::rpc::{get, list_all, mutate};
use crate::cloud::client::{Host, NebiusClient};
use crate::cloud::domain::{CloudResult, Labels, Project, State, Tenant};
use crate::cloud::proto::nebius::iam::v1 as iam;

type TenantService = iam::tenant_service_client::TenantServiceClient<Channel>;
type ProjectService = iam::project_service_client::ProjectServiceClient<Channel>;

pub(super) async fn get_tenant(client: &NebiusClient, id: &str) -> CloudResult<Tenant> {
    let req = iam::GetTenantRequest { id: id.to_string() };
    let t = get!(client, Host::Iam, req, TenantService)?;
    Ok(Tenant {
        id: meta_field(&t.metadata, |m| &m.id),
        name: meta_field(&t.metadata, |m| &m.name),
    })
}

pub(super) async fn list_projects(
    client: &NebiusClient,
    tenant_id: &str,
) -> CloudResult<Vec<Project>> {
    list_all!(
        client,
        Host::Iam,
        iam::ListProjectsRequest,
        tenant_id,
        ProjectService,
        project_from
    )
}

pub(super) async fn get_project(client: &NebiusClient, id: &str) -> CloudResult<Project> {
    let req = iam::GetProjectRequest { id: id.to_string() };
    get!(client, Host::Iam, req, ProjectService).map(project_from)
}

pub(super) async fn create_project(
    client: &NebiusClient,
    tenant_id: &str,
    name: &str,
    region: &str,
    labels: &Labels,
    key: &str,
) -> CloudResult<Project> {
    let req = iam::CreateProjectRequest {
        metadata: Some(new_meta(tenant_id, name, labels)),
        spec: Some(iam::ContainerSpec {
            region: region.to_string(),
        }),
    };
    let id = mutate!(client, Host::Iam, key, req, ProjectService, create);
    get_project(client, &id).await
}

fn project_from(c: iam::Container) -> Project {
    let status = c.status.clone().unwrap_or_default();
    let state = project_state(&status);
    let region = c
        .spec
        .as_ref()
        .map(|s| s.region.clone())
        .filter(|r| !r.is_empty())
        .unwrap_or(status.region);
    Project {
        id: meta_field(&c.metadata, |m| &m.id),
        tenant_id: meta_field(&c.metadata, |m| &m.parent_id),
        name: meta_field(&c.metadata, |m| &m.name),
        region,
        state,
        labels: labels(&c.metadata),
    }
}

/// Suspension wins over the lifecycle state: a suspended project is unusable whatever its
/// lifecycle says.
fn project_state(status: &iam::ContainerStatus) -> State {
    if status.suspension_state == iam::SuspensionState::Suspended as i32
        || status.suspension_state == iam::SuspensionState::Suspending as i32
    {
        return State::Suspended;
    }
    match iam::State::try_from(status.container_state) {
        Ok(iam::State::Active) => State::Ready,
        Ok(iam::State::Creating) | Ok(iam::State::Created) | Ok(iam::State::Activating) => {
            State::Creating
        }
        Ok(iam::State::SchedulingForDeletion)
        | Ok(iam::State::ScheduledForDeletion)
        | Ok(iam::State::SchedulingForDeletionByParent)
        | Ok(iam::State::ScheduledForDeletionByParent)
        | Ok(iam::State::Purging)
        | Ok(iam::State::Purged) => State::Deleting,
        _ => State::Other,
    }
}
