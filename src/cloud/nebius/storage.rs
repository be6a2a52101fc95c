//! Object storage: buckets.

use tonic::transport::Channel;

use super::convert::{labels, meta_field, new_meta, relabelled, resource_version};
use super::rpc::{get, list_all, mutate, update};
use crate::cloud::client::{Host, NebiusClient};
use crate::cloud::domain::{Bucket, CloudResult, Labels, State};
use crate::cloud::proto::nebius::storage::v1 as storage;

type BucketService = storage::bucket_service_client::BucketServiceClient<Channel>;

pub(super) async fn list_buckets(
    client: &NebiusClient,
    project_id: &str,
) -> CloudResult<Vec<Bucket>> {
    list_all!(
        client,
        Host::Storage,
        storage::ListBucketsRequest,
        project_id,
        BucketService,
        bucket_from
    )
}

pub(super) async fn create_bucket(
    client: &NebiusClient,
    project_id: &str,
    name: &str,
    storage_class: &str,
    max_size_bytes: i64,
    labels: &Labels,
    key: &str,
) -> CloudResult<Bucket> {
    let req = storage::CreateBucketRequest {
        metadata: Some(new_meta(project_id, name, labels)),
        spec: Some(storage::BucketSpec {
            max_size_bytes,
            default_storage_class: storage_class_to(storage_class) as i32,
            ..Default::default()
        }),
    };
    let id = mutate!(client, Host::Storage, key, req, BucketService, create);
    get_bucket(client, &id).await
}

pub(super) async fn update_bucket(
    client: &NebiusClient,
    id: &str,
    storage_class: &str,
    max_size_bytes: i64,
    labels: &Labels,
    key: &str,
) -> CloudResult<Bucket> {
    let current = raw_bucket(client, id).await?;
    let metadata = relabelled(current.metadata, labels, "bucket metadata")?;
    let mut spec = current.spec.unwrap_or_default();
    spec.max_size_bytes = max_size_bytes;
    spec.default_storage_class = storage_class_to(storage_class) as i32;
    let req = storage::UpdateBucketRequest {
        metadata: Some(metadata),
        spec: Some(spec),
    };
    update!(client, Host::Storage, key, req, BucketService);
    get_bucket(client, id).await
}

pub(super) async fn delete_bucket(client: &NebiusClient, id: &str, key: &str) -> CloudResult<()> {
    let req = storage::DeleteBucketRequest {
        id: id.to_string(),
        purge: None,
    };
    mutate!(client, Host::Storage, key, req, BucketService, delete);
    Ok(())
}

async fn raw_bucket(client: &NebiusClient, id: &str) -> CloudResult<storage::Bucket> {
    let req = storage::GetBucketRequest { id: id.to_string() };
    get!(client, Host::Storage, req, BucketService)
}

pub(super) async fn get_bucket(client: &NebiusClient, id: &str) -> CloudResult<Bucket> {
    raw_bucket(client, id).await.map(bucket_from)
}

fn storage_class_to(name: &str) -> storage::StorageClass {
    match name {
        "enhanced_throughput" | "enhanced" => storage::StorageClass::EnhancedThroughput,
        "intelligent" => storage::StorageClass::Intelligent,
        _ => storage::StorageClass::Standard,
    }
}

fn storage_class_name(class: i32) -> &'static str {
    match storage::StorageClass::try_from(class) {
        Ok(storage::StorageClass::EnhancedThroughput) => "enhanced_throughput",
        Ok(storage::StorageClass::Intelligent) => "intelligent",
        _ => "standard",
    }
}

fn bucket_from(b: storage::Bucket) -> Bucket {
    let spec = b.spec.clone().unwrap_or_default();
    let status = b.status.clone().unwrap_or_default();
    Bucket {
        id: meta_field(&b.metadata, |m| &m.id),
        resource_version: resource_version(&b.metadata),
        project_id: meta_field(&b.metadata, |m| &m.parent_id),
        name: meta_field(&b.metadata, |m| &m.name),
        storage_class: storage_class_name(spec.default_storage_class).to_string(),
        max_size_bytes: spec.max_size_bytes,
        region: status.region.clone(),
        state: bucket_state(&status),
        // Soft-deleted: visible, named, unusable until undeleted or purged.
        scheduled_for_deletion: status.state
            == storage::bucket_status::State::ScheduledForDeletion as i32
            || status.deleted_at.is_some()
            || status.purge_at.is_some(),
        domain_name: status.domain_name.clone(),
        labels: labels(&b.metadata),
    }
}

/// Suspension wins over the lifecycle state, as for projects.
fn bucket_state(status: &storage::BucketStatus) -> State {
    use storage::bucket_status::State as S;
    if status.suspension_state == storage::bucket_status::SuspensionState::Suspended as i32 {
        return State::Suspended;
    }
    match status.state {
        s if s == S::Creating as i32 => State::Creating,
        s if s == S::Active as i32 => State::Ready,
        s if s == S::Updating as i32 => State::Updating,
        s if s == S::ScheduledForDeletion as i32 => State::Deleting,
        _ => State::Other,
    }
}
