//! `nebius.storage.v1`: object storage buckets, soft-deleted as Nebius deletes them
//! ([`crate::sim::core`]'s bucket lifecycle: Delete schedules, Undelete restores, Purge ends).

use tonic::{Request, Response, Status};

use super::crud::crud;
use super::{SimService, lost};
use crate::cloud::proto::nebius::common::v1 as common;
use crate::cloud::proto::nebius::storage::v1 as storage;

crud!(
    storage::bucket_service_server::BucketService, "nebius.storage.v1.BucketService", storage::Bucket,
    get: storage::GetBucketRequest, by_name: storage::GetBucketByNameRequest,
    list: storage::ListBucketsRequest => storage::ListBucketsResponse,
    create: storage::CreateBucketRequest, update: storage::UpdateBucketRequest,
    delete: storage::DeleteBucketRequest => soft_delete_bucket,
    {
        async fn purge(&self, request: Request<storage::PurgeBucketRequest>) -> Result<Response<common::Operation>, Status> {
            let ctx = self.enter(&request, "/nebius.storage.v1.BucketService/Purge").await?;
            let mut core = self.lock();
            let latency = core.latency();
            let op = core.purge_bucket(&ctx, &request.get_ref().id, latency)?;
            lost(&ctx)?;
            Ok(Response::new(op))
        }
        async fn undelete(&self, request: Request<storage::UndeleteBucketRequest>) -> Result<Response<common::Operation>, Status> {
            let ctx = self.enter(&request, "/nebius.storage.v1.BucketService/Undelete").await?;
            let mut core = self.lock();
            let latency = core.latency();
            let op = core.undelete_bucket(&ctx, &request.get_ref().id, latency)?;
            lost(&ctx)?;
            Ok(Response::new(op))
        }
    }
);

impl SimService {
    async fn soft_delete_bucket(
        &self,
        request: Request<storage::DeleteBucketRequest>,
    ) -> Result<Response<common::Operation>, Status> {
        let ctx = self
            .enter(&request, "/nebius.storage.v1.BucketService/Delete")
            .await?;
        let r = request.into_inner();
        let mut core = self.lock();
        let latency = core.latency();
        let op = core.delete_bucket(&ctx, &r.id, r.purge, latency)?;
        lost(&ctx)?;
        Ok(Response::new(op))
    }
}
