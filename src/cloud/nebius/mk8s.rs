//! Managed Kubernetes: clusters and their node groups. The node group spec's conversions, both
//! ways, are in [`super::node_groups`].

use tonic::transport::Channel;

use super::convert::{labels, meta_field, new_meta, relabelled, resource_version};
use super::node_groups::{node_group_from, node_group_spec_to};
use super::rpc::{get, list_all, mutate, update};
use crate::cloud::client::{Host, NebiusClient};
use crate::cloud::domain::{
    CloudResult, Cluster, ClusterSpec, Labels, NodeGroup, NodeGroupSpec, State,
};
use crate::cloud::proto::nebius::mk8s::v1 as mk8s;

type ClusterService = mk8s::cluster_service_client::ClusterServiceClient<Channel>;
type NodeGroupService = mk8s::node_group_service_client::NodeGroupServiceClient<Channel>;

pub(super) async fn list_clusters(
    client: &NebiusClient,
    project_id: &str,
) -> CloudResult<Vec<Cluster>> {
    list_all!(
        client,
        Host::Mk8s,
        mk8s::ListClustersRequest,
        project_id,
        ClusterService,
        cluster_from
    )
}

async fn raw_cluster(client: &NebiusClient, id: &str) -> CloudResult<mk8s::Cluster> {
    let req = mk8s::GetClusterRequest {
        id: id.to_string(),
        resource_version: String::new(),
    };
    get!(client, Host::Mk8s, req, ClusterService)
}

pub(super) async fn get_cluster(client: &NebiusClient, id: &str) -> CloudResult<Cluster> {
    raw_cluster(client, id).await.map(cluster_from)
}

pub(super) async fn create_cluster(
    client: &NebiusClient,
    project_id: &str,
    name: &str,
    spec: &ClusterSpec,
    labels: &Labels,
    key: &str,
) -> CloudResult<Cluster> {
    let req = mk8s::CreateClusterRequest {
        metadata: Some(new_meta(project_id, name, labels)),
        spec: Some(cluster_spec_to(spec)),
    };
    let id = mutate!(client, Host::Mk8s, key, req, ClusterService, create);
    get_cluster(client, &id).await
}

pub(super) async fn update_cluster(
    client: &NebiusClient,
    id: &str,
    spec: &ClusterSpec,
    labels: &Labels,
    key: &str,
) -> CloudResult<Cluster> {
    let current = raw_cluster(client, id).await?;
    let req = mk8s::UpdateClusterRequest {
        metadata: Some(relabelled(current.metadata, labels, "cluster metadata")?),
        spec: Some(cluster_spec_to(spec)),
    };
    update!(client, Host::Mk8s, key, req, ClusterService);
    get_cluster(client, id).await
}

pub(super) async fn delete_cluster(client: &NebiusClient, id: &str, key: &str) -> CloudResult<()> {
    let req = mk8s::DeleteClusterRequest { id: id.to_string() };
    mutate!(client, Host::Mk8s, key, req, ClusterService, delete);
    Ok(())
}

pub(super) async fn list_node_groups(
    client: &NebiusClient,
    cluster_id: &str,
) -> CloudResult<Vec<NodeGroup>> {
    list_all!(
        client,
        Host::Mk8s,
        mk8s::ListNodeGroupsRequest,
        cluster_id,
        NodeGroupService,
        node_group_from
    )
}

pub(super) async fn create_node_group(
    client: &NebiusClient,
    cluster_id: &str,
    name: &str,
    spec: &NodeGroupSpec,
    labels: &Labels,
    key: &str,
) -> CloudResult<NodeGroup> {
    let req = mk8s::CreateNodeGroupRequest {
        metadata: Some(new_meta(cluster_id, name, labels)),
        spec: Some(node_group_spec_to(spec)),
    };
    let id = mutate!(client, Host::Mk8s, key, req, NodeGroupService, create);
    client.get_node_group(&id).await
}

pub(super) async fn update_node_group(
    client: &NebiusClient,
    id: &str,
    spec: &NodeGroupSpec,
    labels: &Labels,
    key: &str,
) -> CloudResult<NodeGroup> {
    let current = raw_node_group(client, id).await?;
    let req = mk8s::UpdateNodeGroupRequest {
        metadata: Some(relabelled(current.metadata, labels, "node group metadata")?),
        spec: Some(node_group_spec_to(spec)),
    };
    update!(client, Host::Mk8s, key, req, NodeGroupService);
    client.get_node_group(id).await
}

pub(super) async fn delete_node_group(
    client: &NebiusClient,
    id: &str,
    key: &str,
) -> CloudResult<()> {
    let req = mk8s::DeleteNodeGroupRequest { id: id.to_string() };
    mutate!(client, Host::Mk8s, key, req, NodeGroupService, delete);
    Ok(())
}

async fn raw_node_group(client: &NebiusClient, id: &str) -> CloudResult<mk8s::NodeGroup> {
    let req = mk8s::GetNodeGroupRequest {
        id: id.to_string(),
        resource_version: String::new(),
    };
    get!(client, Host::Mk8s, req, NodeGroupService)
}

impl NebiusClient {
    pub async fn get_node_group(&self, id: &str) -> CloudResult<NodeGroup> {
        raw_node_group(self, id).await.map(node_group_from)
    }
}

fn cluster_from(c: mk8s::Cluster) -> Cluster {
    use mk8s::cluster_status::State as S;
    let cp = c
        .spec
        .as_ref()
        .and_then(|s| s.control_plane.clone())
        .unwrap_or_default();
    let status = c.status.clone().unwrap_or_default();
    Cluster {
        id: meta_field(&c.metadata, |m| &m.id),
        resource_version: resource_version(&c.metadata),
        project_id: meta_field(&c.metadata, |m| &m.parent_id),
        name: meta_field(&c.metadata, |m| &m.name),
        spec: ClusterSpec {
            k8s_version: cp.version.clone(),
            subnet_id: cp.subnet_id.clone(),
            public_endpoint: cp
                .endpoints
                .as_ref()
                .is_some_and(|e| e.public_endpoint.is_some()),
        },
        state: match status.state {
            s if s == S::Provisioning as i32 => State::Creating,
            s if s == S::Running as i32 => State::Ready,
            s if s == S::Deleting as i32 => State::Deleting,
            _ => State::Other,
        },
        public_endpoint: status
            .control_plane
            .as_ref()
            .and_then(|cp| cp.endpoints.as_ref())
            .map(|e| e.public_endpoint.clone())
            .unwrap_or_default(),
        ca_certificate: status
            .control_plane
            .as_ref()
            .and_then(|cp| cp.auth.as_ref())
            .map(|a| a.cluster_ca_certificate.clone())
            .unwrap_or_default(),
        version: status
            .control_plane
            .as_ref()
            .map(|cp| cp.version.clone())
            .unwrap_or_default(),
        labels: labels(&c.metadata),
    }
}

fn cluster_spec_to(spec: &ClusterSpec) -> mk8s::ClusterSpec {
    mk8s::ClusterSpec {
        control_plane: Some(mk8s::ControlPlaneSpec {
            version: spec.k8s_version.clone(),
            subnet_id: spec.subnet_id.clone(),
            endpoints: Some(mk8s::ControlPlaneEndpointsSpec {
                public_endpoint: spec.public_endpoint.then(mk8s::PublicEndpointSpec::default),
            }),
            ..Default::default()
        }),
        kube_network: None,
    }
}
