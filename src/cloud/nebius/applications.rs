//! Marketplace applications: `K8sRelease`s installed into mk8s clusters.

use tonic::transport::Channel;

use super::convert::{copied, labels, meta_field};
use super::rpc::{get, mutate};
use crate::cloud::client::{Host, NebiusClient};
use crate::cloud::domain::{CloudResult, Labels, Release, ReleaseSpec, ReleaseState};
use crate::cloud::proto::nebius::applications::v1alpha1 as apps;
use crate::cloud::proto::nebius::common::v1::ResourceMetadata;

type ReleaseService = apps::k8s_release_service_client::K8sReleaseServiceClient<Channel>;

pub(super) async fn list_releases(
    client: &NebiusClient,
    project_id: &str,
    cluster_id: &str,
) -> CloudResult<Vec<Release>> {
    let this = client.clone();
    client
        .list_all(|page_token| {
            let this = this.clone();
            let req = apps::ListK8sReleasesRequest {
                parent_id: project_id.to_string(),
                cluster_id: cluster_id.to_string(),
                page_size: super::rpc::PAGE_SIZE,
                page_token,
                filter: String::new(),
            };
            async move {
                let response = this
                    .call(
                        Host::Applications,
                        None,
                        req,
                        |channel, request| async move {
                            ReleaseService::new(channel).list(request).await
                        },
                    )
                    .await?;
                Ok((
                    response.items.into_iter().map(release_from).collect(),
                    response.next_page_token,
                ))
            }
        })
        .await
}

pub(super) async fn get_release(client: &NebiusClient, id: &str) -> CloudResult<Release> {
    let req = apps::GetK8sReleaseRequest { id: id.to_string() };
    get!(client, Host::Applications, req, ReleaseService).map(release_from)
}

pub(super) async fn create_release(
    client: &NebiusClient,
    project_id: &str,
    spec: &ReleaseSpec,
    labels: &Labels,
    key: &str,
) -> CloudResult<Release> {
    let req = apps::CreateK8sReleaseRequest {
        // UNNAMED upstream: the release has no name of its own.
        metadata: Some(ResourceMetadata {
            parent_id: project_id.to_string(),
            labels: copied(labels),
            ..Default::default()
        }),
        spec: Some(apps::K8sReleaseSpec {
            cluster_id: spec.cluster_id.clone(),
            product_slug: spec.product_slug.clone(),
            namespace: spec.namespace.clone(),
            application_name: spec.application_name.clone(),
            values: spec.values.clone(),
            set: copied(&spec.set),
        }),
    };
    let id = mutate!(client, Host::Applications, key, req, ReleaseService, create);
    get_release(client, &id).await
}

pub(super) async fn delete_release(client: &NebiusClient, id: &str, key: &str) -> CloudResult<()> {
    let req = apps::DeleteK8sReleaseRequest { id: id.to_string() };
    mutate!(client, Host::Applications, key, req, ReleaseService, delete);
    Ok(())
}

fn release_state(state: i32) -> ReleaseState {
    use apps::k8s_release_status::State as S;
    match S::try_from(state) {
        Ok(S::Created) => ReleaseState::Created,
        Ok(S::Running) => ReleaseState::Running,
        Ok(S::Installing) => ReleaseState::Installing,
        Ok(S::Deployed) => ReleaseState::Deployed,
        Ok(S::Failed) => ReleaseState::Failed,
        Ok(S::Unspecified) | Err(_) => ReleaseState::Unspecified,
    }
}

fn release_from(r: apps::K8sRelease) -> Release {
    let spec = r.spec.clone().unwrap_or_default();
    let status = r.status.clone().unwrap_or_default();
    Release {
        id: meta_field(&r.metadata, |m| &m.id),
        project_id: meta_field(&r.metadata, |m| &m.parent_id),
        cluster_id: spec.cluster_id,
        product_slug: spec.product_slug,
        namespace: spec.namespace,
        application_name: spec.application_name,
        state: release_state(status.state),
        error_message: status.error_message,
        labels: labels(&r.metadata),
    }
}
