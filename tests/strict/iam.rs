//! IAM v2 beside v1: the simulator serves both over the same projects and tenants, and
//! fleetbot's client speaks v2 only for projects and tenants (v1's services end on
//! 2026-12-16).

use fleetbot::cloud::Cloud;
use fleetbot::cloud::domain::State;
use fleetbot::cloud::proto::nebius::iam::v1 as iam1;
use fleetbot::cloud::proto::nebius::iam::v2 as iam2;
use fleetbot::sim::resources::Resource;

use super::{channel, project, request};
use crate::support::{client, roomy_world, simulator};

#[tokio::test]
async fn v2_and_v1_serve_the_same_projects_and_fleetbot_uses_v2() {
    let sim = simulator(&roomy_world("")).await;
    let cloud = client(&sim);
    let tenant = sim.tenant_id();
    sim.service.clear_call_log();
    let p = project(&cloud, &tenant, "v2").await;
    assert_eq!(cloud.get_tenant(&tenant).await.unwrap().id, tenant);
    assert!(cloud.list_projects(&tenant).await.unwrap().contains(&p));
    let iam_calls: Vec<String> = sim
        .service
        .call_log()
        .into_iter()
        .filter(|c| c.contains("ProjectService") || c.contains("TenantService"))
        .collect();
    assert!(!iam_calls.is_empty());
    assert!(
        iam_calls.iter().all(|c| c.starts_with("/nebius.iam.v2.")),
        "{iam_calls:?}"
    );

    let ch = channel(&sim).await;
    let mut v2 = iam2::project_service_client::ProjectServiceClient::new(ch.clone());
    let listed = v2
        .list(request(
            iam2::ListProjectsRequest {
                parent_id: tenant.clone(),
                ..Default::default()
            },
            &[],
        ))
        .await
        .unwrap()
        .into_inner();
    let found = listed
        .items
        .iter()
        .find(|x| x.metadata.as_ref().unwrap().id == p.id)
        .unwrap();
    assert_eq!(found.spec.as_ref().unwrap().region, "us-central1");
    assert_eq!(
        found.status.as_ref().unwrap().project_state,
        iam2::project_status::ProjectState::Active as i32
    );
    let mut v1 = iam1::project_service_client::ProjectServiceClient::new(ch.clone());
    let old = v1
        .get(request(iam1::GetProjectRequest { id: p.id.clone() }, &[]))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(old.metadata, found.metadata);
    let mut tenants = iam2::tenant_service_client::TenantServiceClient::new(ch);
    let t = tenants
        .list(request(iam2::ListTenantsRequest::default(), &[]))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(t.items.len(), 1);

    // A suspended project reads as parked in v2, and fleetbot will not use it.
    sim.service.with_core(|core| {
        let stored = core
            .state
            .projects
            .iter_mut()
            .find(|c| c.id() == p.id)
            .unwrap();
        stored.status.as_mut().unwrap().suspension_state = iam1::SuspensionState::Suspended as i32;
    });
    assert_eq!(
        cloud.get_project(&p.id).await.unwrap().state,
        State::Suspended
    );
}
