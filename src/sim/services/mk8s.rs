//! `nebius.mk8s.v1`: Managed Kubernetes clusters and node groups.

use tonic::{Request, Response, Status};

use super::crud::crud;
use crate::cloud::proto::nebius::common::v1 as common;
use crate::cloud::proto::nebius::mk8s::v1 as mk8s;

crud!(
    mk8s::cluster_service_server::ClusterService, "nebius.mk8s.v1.ClusterService", mk8s::Cluster,
    get: mk8s::GetClusterRequest, by_name: common::GetByNameRequest,
    list: mk8s::ListClustersRequest => mk8s::ListClustersResponse,
    create: mk8s::CreateClusterRequest, update: mk8s::UpdateClusterRequest, delete: mk8s::DeleteClusterRequest,
    {
        async fn list_control_plane_versions(&self, request: Request<mk8s::ListClusterControlPlaneVersionsRequest>) -> Result<Response<mk8s::ListClusterControlPlaneVersionsResponse>, Status> {
            self.enter(&request, "/nebius.mk8s.v1.ClusterService/ListControlPlaneVersions").await?;
            let items = ["1.31", "1.32", "1.33", "1.34"]
                .iter()
                .map(|v| mk8s::ClusterControlPlaneVersion { version: v.to_string(), ..Default::default() })
                .collect();
            Ok(Response::new(mk8s::ListClusterControlPlaneVersionsResponse { items }))
        }
    }
);

crud!(
    mk8s::node_group_service_server::NodeGroupService, "nebius.mk8s.v1.NodeGroupService", mk8s::NodeGroup,
    get: mk8s::GetNodeGroupRequest, by_name: common::GetByNameRequest,
    list: mk8s::ListNodeGroupsRequest => mk8s::ListNodeGroupsResponse,
    create: mk8s::CreateNodeGroupRequest, update: mk8s::UpdateNodeGroupRequest, delete: mk8s::DeleteNodeGroupRequest,
    {
        async fn upgrade(&self, request: Request<mk8s::UpgradeNodeGroupRequest>) -> Result<Response<common::Operation>, Status> {
            let ctx = self.enter(&request, "/nebius.mk8s.v1.NodeGroupService/Upgrade").await?;
            let mut core = self.lock();
            let group: mk8s::NodeGroup = core.get(&request.get_ref().id)?;
            let latency = core.latency();
            let metadata = group.metadata.clone().unwrap_or_default();
            Ok(Response::new(core.update::<mk8s::NodeGroup>(&ctx, metadata, group.spec, latency)?))
        }
        async fn get_compatibility_matrix(&self, request: Request<mk8s::GetNodeGroupCompatibilityMatrixRequest>) -> Result<Response<mk8s::NodeGroupCompatibilityMatrix>, Status> {
            self.enter(&request, "/nebius.mk8s.v1.NodeGroupService/GetCompatibilityMatrix").await?;
            let r = request.get_ref();
            let version = if r.cluster_kubernetes_version.is_empty() { "1.31".to_string() } else { r.cluster_kubernetes_version.clone() };
            let items = ["cuda12", "cuda12.8", "cuda13.0"]
                .iter()
                .map(|p| mk8s::NodeGroupCompatibilityVersionItem {
                    os: "ubuntu24.04".into(),
                    drivers_preset: p.to_string(),
                    compatible_platforms: vec![r.platform.clone()],
                })
                .collect();
            Ok(Response::new(mk8s::NodeGroupCompatibilityMatrix {
                versions: vec![mk8s::NodeGroupCompatibilityVersion { kubernetes_version: version, items }],
            }))
        }
    }
);
