//! `nebius.applications.v1alpha1.K8sReleaseService`: marketplace releases. Values and `set`
//! are INPUT_ONLY upstream: kept for the simulator to play, never sent back.

use tonic::{Request, Response, Status};

use super::SimService;
use crate::cloud::proto::nebius::applications::v1alpha1 as apps;
use crate::cloud::proto::nebius::common::v1::Operation;
use crate::sim::core::errors_invalid;

const SERVICE: &str = "/nebius.applications.v1alpha1.K8sReleaseService";

/// A release as the API returns it: without its write-only values.
fn redacted(mut release: apps::K8sRelease) -> apps::K8sRelease {
    if let Some(spec) = release.spec.as_mut() {
        spec.values.clear();
        spec.set.clear();
    }
    release
}

#[tonic::async_trait]
impl apps::k8s_release_service_server::K8sReleaseService for SimService {
    async fn get(
        &self,
        request: Request<apps::GetK8sReleaseRequest>,
    ) -> Result<Response<apps::K8sRelease>, Status> {
        self.enter(&request, &format!("{SERVICE}/Get")).await?;
        let release = self.lock().get::<apps::K8sRelease>(&request.get_ref().id)?;
        Ok(Response::new(redacted(release)))
    }

    async fn list(
        &self,
        request: Request<apps::ListK8sReleasesRequest>,
    ) -> Result<Response<apps::ListK8sReleasesResponse>, Status> {
        self.enter(&request, &format!("{SERVICE}/List")).await?;
        let r = request.get_ref();
        for (field, value) in [("parent_id", &r.parent_id), ("cluster_id", &r.cluster_id)] {
            if value.is_empty() {
                return Err(errors_invalid(
                    "applications",
                    field,
                    &format!("{field} is required"),
                ));
            }
        }
        let (items, next_page_token) = self.lock().list_children::<apps::K8sRelease>(
            &r.parent_id,
            r.page_size,
            &r.page_token,
            |x| {
                x.spec
                    .as_ref()
                    .is_some_and(|s| s.cluster_id == r.cluster_id)
            },
        )?;
        Ok(Response::new(apps::ListK8sReleasesResponse {
            items: items.into_iter().map(redacted).collect(),
            next_page_token,
        }))
    }

    async fn create(
        &self,
        request: Request<apps::CreateK8sReleaseRequest>,
    ) -> Result<Response<Operation>, Status> {
        let ctx = self.enter(&request, &format!("{SERVICE}/Create")).await?;
        let r = request.into_inner();
        let metadata = r.metadata.unwrap_or_default();
        let spec = r.spec.unwrap_or_default();
        let mut core = self.lock();
        // A replayed create answers with its operation, even though the name is now taken.
        if ctx.idempotency_key.is_none() || !core.is_replay(&ctx) {
            core.check_new_release(&metadata.parent_id, &spec)?;
        }
        let latency = core.latency();
        let op = core.create::<apps::K8sRelease>(&ctx, metadata, spec, latency)?;
        super::lost(&ctx)?;
        Ok(Response::new(op))
    }

    async fn update(
        &self,
        request: Request<apps::UpdateK8sReleaseRequest>,
    ) -> Result<Response<Operation>, Status> {
        let ctx = self.enter(&request, &format!("{SERVICE}/Update")).await?;
        let r = request.into_inner();
        let metadata = r.metadata.unwrap_or_default();
        // The identity fields are IMMUTABLE upstream: the update's validation refuses a change.
        let mut core = self.lock();
        let latency = core.latency();
        let op = core.update::<apps::K8sRelease>(&ctx, metadata, r.spec, latency)?;
        super::lost(&ctx)?;
        Ok(Response::new(op))
    }

    async fn delete(
        &self,
        request: Request<apps::DeleteK8sReleaseRequest>,
    ) -> Result<Response<Operation>, Status> {
        let ctx = self.enter(&request, &format!("{SERVICE}/Delete")).await?;
        let mut core = self.lock();
        let latency = core.latency();
        let op = core.delete::<apps::K8sRelease>(&ctx, &request.get_ref().id, latency)?;
        super::lost(&ctx)?;
        Ok(Response::new(op))
    }
}
