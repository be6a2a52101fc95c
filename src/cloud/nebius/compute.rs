//! Compute: shared filesystems, GPU clusters (the InfiniBand fabric a GPU pool joins) and the
//! platform catalogue.

use tonic::transport::Channel;

use super::convert::{labels, meta_field, new_meta, relabelled, resource_version};
use super::rpc::{get, list_all, mutate, update};
use crate::cloud::client::{Host, NebiusClient};
use crate::cloud::domain::{
    CloudResult, Filesystem, GpuCluster, Labels, Platform, PlatformPreset, State,
};
use crate::cloud::proto::nebius::compute::v1 as compute;

type FilesystemService = compute::filesystem_service_client::FilesystemServiceClient<Channel>;
type GpuClusterService = compute::gpu_cluster_service_client::GpuClusterServiceClient<Channel>;
type PlatformService = compute::platform_service_client::PlatformServiceClient<Channel>;

pub(super) async fn list_platforms(
    client: &NebiusClient,
    project_id: &str,
) -> CloudResult<Vec<Platform>> {
    list_all!(
        client,
        Host::Compute,
        compute::ListPlatformsRequest,
        project_id,
        PlatformService,
        platform_from
    )
}

fn platform_from(p: compute::Platform) -> Platform {
    let spec = p.spec.unwrap_or_default();
    Platform {
        name: p.metadata.map(|m| m.name).unwrap_or_default(),
        gpu_quota: spec.gpu_count_quota_type,
        presets: spec
            .presets
            .into_iter()
            .map(|preset| {
                let r = preset.resources.unwrap_or_default();
                PlatformPreset {
                    name: preset.name,
                    vcpus: r.vcpu_count.max(0) as u32,
                    memory_gib: r.memory_gibibytes.max(0) as u32,
                    gpus: r.gpu_count.max(0) as u32,
                }
            })
            .collect(),
    }
}

pub(super) async fn list_filesystems(
    client: &NebiusClient,
    project_id: &str,
) -> CloudResult<Vec<Filesystem>> {
    list_all!(
        client,
        Host::Compute,
        compute::ListFilesystemsRequest,
        project_id,
        FilesystemService,
        filesystem_from
    )
}

async fn raw_filesystem(client: &NebiusClient, id: &str) -> CloudResult<compute::Filesystem> {
    let req = compute::GetFilesystemRequest { id: id.to_string() };
    get!(client, Host::Compute, req, FilesystemService)
}

pub(super) async fn get_filesystem(client: &NebiusClient, id: &str) -> CloudResult<Filesystem> {
    raw_filesystem(client, id).await.map(filesystem_from)
}

pub(super) async fn create_filesystem(
    client: &NebiusClient,
    project_id: &str,
    name: &str,
    size_gibibytes: i64,
    labels: &Labels,
    key: &str,
) -> CloudResult<Filesystem> {
    let req = compute::CreateFilesystemRequest {
        metadata: Some(new_meta(project_id, name, labels)),
        spec: Some(compute::FilesystemSpec {
            size: Some(compute::filesystem_spec::Size::SizeGibibytes(
                size_gibibytes,
            )),
            r#type: compute::filesystem_spec::FilesystemType::NetworkSsd as i32,
            ..Default::default()
        }),
    };
    let id = mutate!(client, Host::Compute, key, req, FilesystemService, create);
    get_filesystem(client, &id).await
}

pub(super) async fn resize_filesystem(
    client: &NebiusClient,
    id: &str,
    size_gibibytes: i64,
    labels: &Labels,
    key: &str,
) -> CloudResult<Filesystem> {
    let current = raw_filesystem(client, id).await?;
    let metadata = relabelled(current.metadata, labels, "filesystem metadata")?;
    let mut spec = current.spec.unwrap_or_default();
    spec.size = Some(compute::filesystem_spec::Size::SizeGibibytes(
        size_gibibytes,
    ));
    let req = compute::UpdateFilesystemRequest {
        metadata: Some(metadata),
        spec: Some(spec),
    };
    update!(client, Host::Compute, key, req, FilesystemService);
    get_filesystem(client, id).await
}

pub(super) async fn delete_filesystem(
    client: &NebiusClient,
    id: &str,
    key: &str,
) -> CloudResult<()> {
    let req = compute::DeleteFilesystemRequest { id: id.to_string() };
    mutate!(client, Host::Compute, key, req, FilesystemService, delete);
    Ok(())
}

pub(super) async fn list_gpu_clusters(
    client: &NebiusClient,
    project_id: &str,
) -> CloudResult<Vec<GpuCluster>> {
    list_all!(
        client,
        Host::Compute,
        compute::ListGpuClustersRequest,
        project_id,
        GpuClusterService,
        gpu_cluster_from
    )
}

pub(super) async fn create_gpu_cluster(
    client: &NebiusClient,
    project_id: &str,
    name: &str,
    fabric: &str,
    labels: &Labels,
    key: &str,
) -> CloudResult<GpuCluster> {
    let req = compute::CreateGpuClusterRequest {
        metadata: Some(new_meta(project_id, name, labels)),
        spec: Some(compute::GpuClusterSpec {
            infiniband_fabric: fabric.to_string(),
        }),
    };
    let id = mutate!(client, Host::Compute, key, req, GpuClusterService, create);
    let req = compute::GetGpuClusterRequest { id };
    get!(client, Host::Compute, req, GpuClusterService).map(gpu_cluster_from)
}

pub(super) async fn delete_gpu_cluster(
    client: &NebiusClient,
    id: &str,
    key: &str,
) -> CloudResult<()> {
    let req = compute::DeleteGpuClusterRequest { id: id.to_string() };
    mutate!(client, Host::Compute, key, req, GpuClusterService, delete);
    Ok(())
}

fn filesystem_from(f: compute::Filesystem) -> Filesystem {
    use compute::filesystem_spec::Size;
    use compute::filesystem_status::State as S;
    let gib = 1024 * 1024 * 1024;
    let size = match f.spec.as_ref().and_then(|s| s.size) {
        Some(Size::SizeGibibytes(g)) => g,
        Some(Size::SizeMebibytes(m)) => m / 1024,
        Some(Size::SizeKibibytes(k)) => k / (1024 * 1024),
        Some(Size::SizeBytes(b)) => b / gib,
        None => 0,
    };
    let state = match f.status.as_ref().map(|s| s.state) {
        Some(s) if s == S::Creating as i32 => State::Creating,
        Some(s) if s == S::Ready as i32 => State::Ready,
        Some(s) if s == S::Updating as i32 => State::Updating,
        Some(s) if s == S::Deleting as i32 => State::Deleting,
        _ => State::Other,
    };
    Filesystem {
        id: meta_field(&f.metadata, |m| &m.id),
        resource_version: resource_version(&f.metadata),
        project_id: meta_field(&f.metadata, |m| &m.parent_id),
        name: meta_field(&f.metadata, |m| &m.name),
        size_gibibytes: size,
        state,
        labels: labels(&f.metadata),
    }
}

fn gpu_cluster_from(g: compute::GpuCluster) -> GpuCluster {
    GpuCluster {
        id: meta_field(&g.metadata, |m| &m.id),
        project_id: meta_field(&g.metadata, |m| &m.parent_id),
        name: meta_field(&g.metadata, |m| &m.name),
        infiniband_fabric: g
            .spec
            .as_ref()
            .map(|s| s.infiniband_fabric.clone())
            .unwrap_or_default(),
        // GPU clusters report no lifecycle state, only whether a change is still applying.
        state: if g.status.as_ref().is_some_and(|s| s.reconciling) {
            State::Updating
        } else {
            State::Ready
        },
        labels: labels(&g.metadata),
    }
}
