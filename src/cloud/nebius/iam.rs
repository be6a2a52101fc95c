//! IAM: the tenant and its projects, over IAM v2 (v1's Project and Tenant services end on
//! 2026-12-16; every project and tenant stays reachable through v2).

use tonic::transport::Channel;

use super::convert::{labels, meta_field, new_meta};
use super::rpc::{get, list_all, mutate};
use crate::cloud::client::{Host, NebiusClient};
use crate::cloud::domain::{CloudResult, Labels, Project, State, Tenant};
use crate::cloud::proto::nebius::iam::v2 as iam;

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
        spec: Some(iam::ProjectSpec {
            region: region.to_string(),
        }),
    };
    let id = mutate!(client, Host::Iam, key, req, ProjectService, create);
    get_project(client, &id).await
}

fn project_from(p: iam::Project) -> Project {
    let state = p
        .status
        .as_ref()
        .map_or(State::Other, |s| project_state(s.project_state));
    Project {
        id: meta_field(&p.metadata, |m| &m.id),
        tenant_id: meta_field(&p.metadata, |m| &m.parent_id),
        name: meta_field(&p.metadata, |m| &m.name),
        region: p
            .spec
            .as_ref()
            .map(|s| s.region.clone())
            .unwrap_or_default(),
        state,
        labels: labels(&p.metadata),
    }
}

/// A parked (or parking) project cannot be used, whatever else it is: fleetbot treats it as
/// suspended, as it treated v1's suspension.
fn project_state(state: i32) -> State {
    use iam::project_status::ProjectState as S;
    match S::try_from(state) {
        Ok(S::Active) => State::Ready,
        Ok(S::Creating | S::Created | S::Activating) => State::Creating,
        Ok(S::Parking | S::Parked) => State::Suspended,
        Ok(S::Purging) => State::Deleting,
        _ => State::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iam::project_status::ProjectState as S;

    #[test]
    fn every_v2_project_state_reads_as_a_domain_state() {
        assert_eq!(project_state(S::Active as i32), State::Ready);
        assert_eq!(project_state(S::Parked as i32), State::Suspended);
        assert_eq!(project_state(S::Parking as i32), State::Suspended);
        assert_eq!(project_state(S::Purging as i32), State::Deleting);
        assert_eq!(project_state(S::Created as i32), State::Creating);
        assert_eq!(project_state(S::StateUnspecified as i32), State::Other);
        let p = project_from(iam::Project {
            metadata: None,
            spec: Some(iam::ProjectSpec {
                region: "eu-north1".into(),
            }),
            status: None,
        });
        assert_eq!((p.region.as_str(), p.state), ("eu-north1", State::Other));
    }
}
