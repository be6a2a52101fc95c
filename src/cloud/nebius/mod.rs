//! [`Cloud`] over the Nebius gRPC API: each domain call routed to the module of the service
//! that serves it. Those modules await operations, read every page ([`rpc`]) and convert
//! protobuf messages to domain types ([`convert`] holds what the conversions share).

mod access;
mod applications;
mod capacity;
mod compute;
mod convert;
mod iam;
mod mk8s;
mod node_groups;
mod rpc;
mod storage;
mod vpc;

use super::client::NebiusClient;
use super::domain::{
    AccessKey, AccessKeySecret, Bucket, CapacityBlockGroup, Cloud, CloudResult, Cluster,
    ClusterSpec, Filesystem, GpuCluster, Labels, Network, NodeGroup, NodeGroupSpec, Platform,
    Project, QuotaAllowance, Release, ReleaseSpec, ServiceAccount, Subnet, Tenant,
};

/// One entry per [`Cloud`] method: the service module whose function of the same name serves
/// it. A trait impl must be one block, so the service modules cannot hold its methods; this
/// table forwards to them without writing every signature out a third time.
macro_rules! route {
    ($($service:ident::$method:ident($($arg:ident: $ty:ty),*) -> $out:ty;)*) => {
        $(
            async fn $method(&self, $($arg: $ty),*) -> CloudResult<$out> {
                $service::$method(self, $($arg),*).await
            }
        )*
    };
}

impl Cloud for NebiusClient {
    fn describe(&self) -> String {
        self.description().to_string()
    }

    route! {
        iam::get_tenant(id: &str) -> Tenant;
        iam::list_projects(tenant_id: &str) -> Vec<Project>;
        iam::get_project(id: &str) -> Project;
        iam::create_project(
            tenant_id: &str, name: &str, region: &str, labels: &Labels, key: &str
        ) -> Project;

        vpc::list_networks(project_id: &str) -> Vec<Network>;
        vpc::create_network(project_id: &str, name: &str, labels: &Labels, key: &str) -> Network;
        vpc::delete_network(id: &str, key: &str) -> ();
        vpc::list_subnets(project_id: &str) -> Vec<Subnet>;
        vpc::create_subnet(
            project_id: &str, name: &str, network_id: &str, labels: &Labels, key: &str
        ) -> Subnet;
        vpc::delete_subnet(id: &str, key: &str) -> ();

        compute::list_filesystems(project_id: &str) -> Vec<Filesystem>;
        compute::get_filesystem(id: &str) -> Filesystem;
        compute::create_filesystem(
            project_id: &str, name: &str, size_gibibytes: i64, labels: &Labels, key: &str
        ) -> Filesystem;
        compute::resize_filesystem(
            id: &str, size_gibibytes: i64, labels: &Labels, key: &str
        ) -> Filesystem;
        compute::delete_filesystem(id: &str, key: &str) -> ();
        compute::list_gpu_clusters(project_id: &str) -> Vec<GpuCluster>;
        compute::list_platforms(project_id: &str) -> Vec<Platform>;
        compute::create_gpu_cluster(
            project_id: &str, name: &str, fabric: &str, labels: &Labels, key: &str
        ) -> GpuCluster;
        compute::delete_gpu_cluster(id: &str, key: &str) -> ();

        mk8s::list_clusters(project_id: &str) -> Vec<Cluster>;
        mk8s::get_cluster(id: &str) -> Cluster;
        mk8s::create_cluster(
            project_id: &str, name: &str, spec: &ClusterSpec, labels: &Labels, key: &str
        ) -> Cluster;
        mk8s::update_cluster(id: &str, spec: &ClusterSpec, labels: &Labels, key: &str) -> Cluster;
        mk8s::delete_cluster(id: &str, key: &str) -> ();
        mk8s::list_node_groups(cluster_id: &str) -> Vec<NodeGroup>;
        mk8s::create_node_group(
            cluster_id: &str, name: &str, spec: &NodeGroupSpec, labels: &Labels, key: &str
        ) -> NodeGroup;
        mk8s::update_node_group(
            id: &str, spec: &NodeGroupSpec, labels: &Labels, key: &str
        ) -> NodeGroup;
        mk8s::delete_node_group(id: &str, key: &str) -> ();

        storage::list_buckets(project_id: &str) -> Vec<Bucket>;
        storage::create_bucket(
            project_id: &str, name: &str, storage_class: &str, max_size_bytes: i64,
            labels: &Labels, key: &str
        ) -> Bucket;
        storage::update_bucket(
            id: &str, storage_class: &str, max_size_bytes: i64, labels: &Labels, key: &str
        ) -> Bucket;
        storage::delete_bucket(id: &str, key: &str) -> ();
        storage::get_bucket(id: &str) -> Bucket;

        access::find_service_account(project_id: &str, name: &str) -> Option<ServiceAccount>;
        access::create_service_account(
            project_id: &str, name: &str, description: &str, labels: &Labels, key: &str
        ) -> ServiceAccount;
        access::create_access_key(
            project_id: &str, service_account_id: &str, description: &str, key: &str
        ) -> AccessKey;
        access::get_access_key_secret(id: &str) -> AccessKeySecret;
        access::list_access_keys(service_account_id: &str) -> Vec<AccessKey>;
        access::delete_access_key(id: &str, key: &str) -> ();

        capacity::list_quota_allowances(parent_id: &str) -> Vec<QuotaAllowance>;
        capacity::list_capacity_block_groups(tenant_id: &str) -> Vec<CapacityBlockGroup>;

        applications::list_releases(project_id: &str, cluster_id: &str) -> Vec<Release>;
        applications::get_release(id: &str) -> Release;
        applications::create_release(
            project_id: &str, spec: &ReleaseSpec, labels: &Labels, key: &str
        ) -> Release;
        applications::delete_release(id: &str, key: &str) -> ();
    }

    async fn bearer_token(&self) -> CloudResult<String> {
        NebiusClient::bearer_token(self).await
    }
}
