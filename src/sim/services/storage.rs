//! `nebius.storage.v1`: object storage buckets.

use tonic::{Request, Response, Status};

use super::crud::crud;
use crate::cloud::proto::nebius::common::v1 as common;
use crate::cloud::proto::nebius::storage::v1 as storage;
use crate::sim::resources::Resource;

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
