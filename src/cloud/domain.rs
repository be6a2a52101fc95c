//! What the engine needs from a cloud, in its own terms: the [`Cloud`] trait and the domain
//! types it trades in. The engine never sees generated protobuf types.

use std::collections::BTreeMap;
use std::future::Future;

use super::error::CloudError;

pub type Labels = BTreeMap<String, String>;
pub type CloudResult<T> = Result<T, CloudError>;

/// Lifecycle state, common to every resource kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    Creating,
    Ready,
    Updating,
    Deleting,
    Suspended,
    Other,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tenant {
    pub id: String,
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Project {
    pub id: String,
    pub tenant_id: String,
    pub name: String,
    pub region: String,
    pub state: State,
    pub labels: Labels,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Network {
    pub id: String,
    pub project_id: String,
    pub name: String,
    pub state: State,
    pub labels: Labels,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subnet {
    pub id: String,
    pub project_id: String,
    pub name: String,
    pub network_id: String,
    pub cidrs: Vec<String>,
    pub state: State,
    pub labels: Labels,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filesystem {
    pub id: String,
    /// The resource's version as the service reports it; an update's idempotency key names the
    /// version it starts from, so the same change made again later is a new request.
    pub resource_version: i64,
    pub project_id: String,
    pub name: String,
    pub size_gibibytes: i64,
    pub state: State,
    pub labels: Labels,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuCluster {
    pub id: String,
    pub project_id: String,
    pub name: String,
    pub infiniband_fabric: String,
    pub state: State,
    pub labels: Labels,
}

/// A compute platform a project's region offers, and its presets (`PlatformService.List`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Platform {
    pub name: String,
    /// The tenant quota its GPUs count against; empty on a platform without GPUs.
    pub gpu_quota: String,
    pub presets: Vec<PlatformPreset>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlatformPreset {
    pub name: String,
    pub vcpus: u32,
    pub memory_gib: u32,
    pub gpus: u32,
}

/// What fleetbot asks of a managed Kubernetes control plane.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClusterSpec {
    /// `<major>.<minor>`, or empty for the service default.
    pub k8s_version: String,
    pub subnet_id: String,
    pub public_endpoint: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cluster {
    pub id: String,
    /// The resource's version as the service reports it; an update's idempotency key names the
    /// version it starts from, so the same change made again later is a new request.
    pub resource_version: i64,
    pub project_id: String,
    pub name: String,
    pub spec: ClusterSpec,
    pub state: State,
    pub public_endpoint: String,
    /// The control plane's CA certificate (PEM), as its status reports it.
    pub ca_certificate: String,
    /// The running control-plane version, as the service reports it.
    pub version: String,
    pub labels: Labels,
}

/// A filesystem attached to every node of a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttachedFilesystem {
    pub filesystem_id: String,
    pub mount_tag: String,
    pub read_write: bool,
}

/// Capacity-block placement of a node group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reservation {
    /// `AUTO`, `FORBID` or `STRICT`.
    pub policy: String,
    pub capacity_block_group_ids: Vec<String>,
}

/// A node group's template and size.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NodeGroupSpec {
    /// The fixed node count, or an autoscaling group's maximum.
    pub node_count: i64,
    /// `Some(min)` for an autoscaling group (`node_count` is its maximum).
    pub autoscale_min: Option<i64>,
    pub platform: String,
    pub preset: String,
    pub boot_disk_gibibytes: i64,
    pub gpu_cluster_id: String,
    pub drivers_preset: String,
    pub filesystems: Vec<AttachedFilesystem>,
    pub cloud_init_user_data: String,
    pub preemptible: bool,
    pub reservation: Option<Reservation>,
    pub subnet_id: String,
    pub public_ip: bool,
    pub node_labels: Labels,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeGroup {
    pub id: String,
    /// The resource's version as the service reports it; an update's idempotency key names the
    /// version it starts from, so the same change made again later is a new request.
    pub resource_version: i64,
    pub cluster_id: String,
    pub name: String,
    pub spec: NodeGroupSpec,
    pub state: State,
    pub node_count: i64,
    pub ready_node_count: i64,
    pub labels: Labels,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bucket {
    pub id: String,
    /// The resource's version as the service reports it; an update's idempotency key names the
    /// version it starts from, so the same change made again later is a new request.
    pub resource_version: i64,
    pub project_id: String,
    pub name: String,
    /// `standard`, `enhanced_throughput` or `intelligent`.
    pub storage_class: String,
    pub max_size_bytes: i64,
    pub region: String,
    pub state: State,
    pub scheduled_for_deletion: bool,
    /// The S3 endpoint's host (`status.domain_name`), e.g. `storage.eu-north1.nebius.cloud`.
    pub domain_name: String,
    pub labels: Labels,
}

impl Bucket {
    /// The S3 endpoint URL for the bucket's domain name: HTTPS, except for a loopback
    /// `host:port`, where nothing crosses a network (the rule `NEBIUS_ENDPOINT` follows).
    pub fn s3_endpoint(&self) -> String {
        let host = self
            .domain_name
            .rsplit_once(':')
            .map_or(self.domain_name.as_str(), |(h, _)| h);
        if host.starts_with("127.") || matches!(host, "localhost" | "[::1]") {
            format!("http://{}", self.domain_name)
        } else {
            format!("https://{}", self.domain_name)
        }
    }
}

/// A project-scoped IAM service account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceAccount {
    pub id: String,
    pub project_id: String,
    pub name: String,
    pub description: String,
    pub active: bool,
    pub labels: Labels,
}

/// An S3 access key of a service account, without its secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessKey {
    pub id: String,
    pub project_id: String,
    pub service_account_id: String,
    /// The S3 access key ID (not secret: it names the key in every signed request).
    pub aws_access_key_id: String,
    pub description: String,
    /// `ACTIVE`, `INACTIVE`, `EXPIRED`, `DELETING`, `DELETED`, …
    pub state: String,
}

/// An access key's secret. It has no `Debug` or `Display` that shows the value and no
/// `Serialize`, so it cannot reach a log, an output or the store by accident; the only way
/// to the value is [`AccessKeySecret::expose`], for the S3 client's credentials.
#[derive(Clone, PartialEq, Eq)]
pub struct AccessKeySecret(String);

impl AccessKeySecret {
    pub fn new(value: String) -> AccessKeySecret {
        AccessKeySecret(value)
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for AccessKeySecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AccessKeySecret(<redacted>)")
    }
}

/// A quota allowance exactly as reported, for the quota budget to interpret fail-closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuotaAllowance {
    pub id: String,
    pub parent_id: String,
    pub name: String,
    pub region: String,
    /// `None`: unlimited.
    pub limit: Option<u64>,
    pub usage: u64,
    pub usage_percentage: String,
    /// `USAGE_STATE_USED`, `USAGE_STATE_NOT_USED`, …
    pub usage_state: String,
    pub unit: String,
    /// `STATE_ACTIVE`, …
    pub state: String,
}

/// A capacity block group exactly as reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapacityBlockGroup {
    pub id: String,
    pub parent_id: String,
    pub region: String,
    pub platform: String,
    pub fabric: String,
    /// `STATE_ACTIVE`, …
    pub state: String,
    pub current_limit: u64,
    pub usage: u64,
    pub usage_percentage: String,
    /// `USAGE_STATE_NOT_USED`, …
    pub usage_state: String,
}

/// What a marketplace application release installs. `values` and `set` are write-only upstream
/// (never read back, sensitive): a [`Release`] read from the cloud carries neither.
#[derive(Clone, PartialEq, Eq)]
pub struct ReleaseSpec {
    pub cluster_id: String,
    /// The marketplace product, e.g. `nebius/nvidia-gpu-operator`.
    pub product_slug: String,
    pub namespace: String,
    pub application_name: String,
    /// Helm values, YAML.
    pub values: String,
    pub set: BTreeMap<String, String>,
}

impl std::fmt::Debug for ReleaseSpec {
    /// Values may hold secrets (upstream marks them sensitive): never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReleaseSpec")
            .field("cluster_id", &self.cluster_id)
            .field("product_slug", &self.product_slug)
            .field("namespace", &self.namespace)
            .field("application_name", &self.application_name)
            .field("values", &"<redacted>")
            .field("set", &"<redacted>")
            .finish()
    }
}

/// Where a release is in its life, as the marketplace reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReleaseState {
    Unspecified,
    Created,
    Running,
    Installing,
    Deployed,
    Failed,
}

impl ReleaseState {
    pub fn as_str(self) -> &'static str {
        match self {
            ReleaseState::Unspecified => "unspecified",
            ReleaseState::Created => "created",
            ReleaseState::Running => "running",
            ReleaseState::Installing => "installing",
            ReleaseState::Deployed => "deployed",
            ReleaseState::Failed => "failed",
        }
    }
}

/// A marketplace application release (`nebius.applications.v1alpha1.K8sRelease`) as read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Release {
    pub id: String,
    pub project_id: String,
    pub cluster_id: String,
    pub product_slug: String,
    pub namespace: String,
    pub application_name: String,
    pub state: ReleaseState,
    /// The marketplace's own words on a failure; may name private values, so callers sanitize.
    pub error_message: String,
    pub labels: Labels,
}

/// Everything the engine does to a cloud. Every mutation takes an idempotency key, so a
/// restarted apply replays instead of creating twice; creations wait for their operation and
/// return the resource as the service reports it.
pub trait Cloud: Send + Sync {
    /// Names the cloud in output ("the embedded simulator", "Nebius (api.nebius.cloud:443)").
    fn describe(&self) -> String;

    fn get_tenant(&self, id: &str) -> impl Future<Output = CloudResult<Tenant>> + Send;

    fn list_projects(
        &self,
        tenant_id: &str,
    ) -> impl Future<Output = CloudResult<Vec<Project>>> + Send;
    fn get_project(&self, id: &str) -> impl Future<Output = CloudResult<Project>> + Send;
    fn create_project(
        &self,
        tenant_id: &str,
        name: &str,
        region: &str,
        labels: &Labels,
        key: &str,
    ) -> impl Future<Output = CloudResult<Project>> + Send;

    fn list_networks(
        &self,
        project_id: &str,
    ) -> impl Future<Output = CloudResult<Vec<Network>>> + Send;
    fn create_network(
        &self,
        project_id: &str,
        name: &str,
        labels: &Labels,
        key: &str,
    ) -> impl Future<Output = CloudResult<Network>> + Send;
    fn delete_network(&self, id: &str, key: &str) -> impl Future<Output = CloudResult<()>> + Send;

    fn list_subnets(
        &self,
        project_id: &str,
    ) -> impl Future<Output = CloudResult<Vec<Subnet>>> + Send;
    fn create_subnet(
        &self,
        project_id: &str,
        name: &str,
        network_id: &str,
        labels: &Labels,
        key: &str,
    ) -> impl Future<Output = CloudResult<Subnet>> + Send;
    fn delete_subnet(&self, id: &str, key: &str) -> impl Future<Output = CloudResult<()>> + Send;

    fn list_filesystems(
        &self,
        project_id: &str,
    ) -> impl Future<Output = CloudResult<Vec<Filesystem>>> + Send;
    fn get_filesystem(&self, id: &str) -> impl Future<Output = CloudResult<Filesystem>> + Send;
    fn create_filesystem(
        &self,
        project_id: &str,
        name: &str,
        size_gibibytes: i64,
        labels: &Labels,
        key: &str,
    ) -> impl Future<Output = CloudResult<Filesystem>> + Send;
    fn resize_filesystem(
        &self,
        id: &str,
        size_gibibytes: i64,
        labels: &Labels,
        key: &str,
    ) -> impl Future<Output = CloudResult<Filesystem>> + Send;
    fn delete_filesystem(
        &self,
        id: &str,
        key: &str,
    ) -> impl Future<Output = CloudResult<()>> + Send;

    fn list_gpu_clusters(
        &self,
        project_id: &str,
    ) -> impl Future<Output = CloudResult<Vec<GpuCluster>>> + Send;
    /// The platforms and presets the project's region offers.
    fn list_platforms(
        &self,
        project_id: &str,
    ) -> impl Future<Output = CloudResult<Vec<Platform>>> + Send;
    fn create_gpu_cluster(
        &self,
        project_id: &str,
        name: &str,
        fabric: &str,
        labels: &Labels,
        key: &str,
    ) -> impl Future<Output = CloudResult<GpuCluster>> + Send;
    fn delete_gpu_cluster(
        &self,
        id: &str,
        key: &str,
    ) -> impl Future<Output = CloudResult<()>> + Send;

    fn list_clusters(
        &self,
        project_id: &str,
    ) -> impl Future<Output = CloudResult<Vec<Cluster>>> + Send;
    fn get_cluster(&self, id: &str) -> impl Future<Output = CloudResult<Cluster>> + Send;
    fn create_cluster(
        &self,
        project_id: &str,
        name: &str,
        spec: &ClusterSpec,
        labels: &Labels,
        key: &str,
    ) -> impl Future<Output = CloudResult<Cluster>> + Send;
    fn update_cluster(
        &self,
        id: &str,
        spec: &ClusterSpec,
        labels: &Labels,
        key: &str,
    ) -> impl Future<Output = CloudResult<Cluster>> + Send;
    fn delete_cluster(&self, id: &str, key: &str) -> impl Future<Output = CloudResult<()>> + Send;

    fn list_node_groups(
        &self,
        cluster_id: &str,
    ) -> impl Future<Output = CloudResult<Vec<NodeGroup>>> + Send;
    fn create_node_group(
        &self,
        cluster_id: &str,
        name: &str,
        spec: &NodeGroupSpec,
        labels: &Labels,
        key: &str,
    ) -> impl Future<Output = CloudResult<NodeGroup>> + Send;
    fn update_node_group(
        &self,
        id: &str,
        spec: &NodeGroupSpec,
        labels: &Labels,
        key: &str,
    ) -> impl Future<Output = CloudResult<NodeGroup>> + Send;
    fn delete_node_group(
        &self,
        id: &str,
        key: &str,
    ) -> impl Future<Output = CloudResult<()>> + Send;

    fn list_buckets(
        &self,
        project_id: &str,
    ) -> impl Future<Output = CloudResult<Vec<Bucket>>> + Send;
    fn create_bucket(
        &self,
        project_id: &str,
        name: &str,
        storage_class: &str,
        max_size_bytes: i64,
        labels: &Labels,
        key: &str,
    ) -> impl Future<Output = CloudResult<Bucket>> + Send;
    fn update_bucket(
        &self,
        id: &str,
        storage_class: &str,
        max_size_bytes: i64,
        labels: &Labels,
        key: &str,
    ) -> impl Future<Output = CloudResult<Bucket>> + Send;
    fn delete_bucket(&self, id: &str, key: &str) -> impl Future<Output = CloudResult<()>> + Send;
    /// The bucket as the service reports it now (the provider read-back).
    fn get_bucket(&self, id: &str) -> impl Future<Output = CloudResult<Bucket>> + Send;

    /// The project's service account of that name, or `None` (`GetByName` found nothing).
    fn find_service_account(
        &self,
        project_id: &str,
        name: &str,
    ) -> impl Future<Output = CloudResult<Option<ServiceAccount>>> + Send;
    fn create_service_account(
        &self,
        project_id: &str,
        name: &str,
        description: &str,
        labels: &Labels,
        key: &str,
    ) -> impl Future<Output = CloudResult<ServiceAccount>> + Send;
    /// A new S3 access key for a service account (secret delivered inline; read it with
    /// [`Cloud::get_access_key_secret`]).
    fn create_access_key(
        &self,
        project_id: &str,
        service_account_id: &str,
        description: &str,
        key: &str,
    ) -> impl Future<Output = CloudResult<AccessKey>> + Send;
    fn get_access_key_secret(
        &self,
        id: &str,
    ) -> impl Future<Output = CloudResult<AccessKeySecret>> + Send;
    /// Every access key of a service account.
    fn list_access_keys(
        &self,
        service_account_id: &str,
    ) -> impl Future<Output = CloudResult<Vec<AccessKey>>> + Send;
    fn delete_access_key(
        &self,
        id: &str,
        key: &str,
    ) -> impl Future<Output = CloudResult<()>> + Send;

    fn list_quota_allowances(
        &self,
        parent_id: &str,
    ) -> impl Future<Output = CloudResult<Vec<QuotaAllowance>>> + Send;
    fn list_capacity_block_groups(
        &self,
        tenant_id: &str,
    ) -> impl Future<Output = CloudResult<Vec<CapacityBlockGroup>>> + Send;

    /// The marketplace releases of one cluster (upstream requires both IDs).
    fn list_releases(
        &self,
        project_id: &str,
        cluster_id: &str,
    ) -> impl Future<Output = CloudResult<Vec<Release>>> + Send;
    fn get_release(&self, id: &str) -> impl Future<Output = CloudResult<Release>> + Send;
    /// Starts an install; returns the release as accepted (it is usually still installing).
    fn create_release(
        &self,
        project_id: &str,
        spec: &ReleaseSpec,
        labels: &Labels,
        key: &str,
    ) -> impl Future<Output = CloudResult<Release>> + Send;
    fn delete_release(&self, id: &str, key: &str) -> impl Future<Output = CloudResult<()>> + Send;

    /// A bearer token for the clusters' Kubernetes APIs (Managed Kubernetes accepts the IAM
    /// token), fresh enough to use now.
    fn bearer_token(&self) -> impl Future<Output = CloudResult<String>> + Send;
}
