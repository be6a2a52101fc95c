//! The modules of `tests/strict_sim.rs` and what they share: a project with a cluster, and
//! raw gRPC calls with chosen headers (what the SDK or another client sends, not fleetbot).

pub mod buckets;
pub mod defaults;
pub mod iam;
pub mod removal;
pub mod request_ids;
pub mod updates;
pub mod validation;

use fleetbot::cloud::client::idempotency_key;
use fleetbot::cloud::domain::{Cluster, ClusterSpec, Labels, NodeGroup, NodeGroupSpec, Project};
use fleetbot::cloud::{Cloud, NebiusClient};
use fleetbot::sim::Simulator;
use tonic::metadata::MetadataValue;

use crate::support::TOKEN;

pub fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

pub async fn project(cloud: &NebiusClient, tenant: &str, name: &str) -> Project {
    cloud
        .create_project(
            tenant,
            name,
            "us-central1",
            &Labels::new(),
            &idempotency_key(&["p", name]),
        )
        .await
        .unwrap()
}

/// A project with a running cluster on its default subnet.
pub async fn cluster(cloud: &NebiusClient, tenant: &str, name: &str) -> (Project, Cluster) {
    let p = project(cloud, tenant, name).await;
    let subnet = cloud.list_subnets(&p.id).await.unwrap().remove(0);
    let spec = ClusterSpec {
        k8s_version: "1.31".into(),
        subnet_id: subnet.id,
        public_endpoint: true,
    };
    let c = cloud
        .create_cluster(
            &p.id,
            name,
            &spec,
            &Labels::new(),
            &idempotency_key(&["c", name]),
        )
        .await
        .unwrap();
    (p, c)
}

pub fn cpu_group() -> NodeGroupSpec {
    NodeGroupSpec {
        node_count: 3,
        platform: "cpu-d3".into(),
        preset: "4vcpu-16gb".into(),
        boot_disk_gibibytes: 128,
        cloud_init_user_data: "#cloud-config\n".into(),
        node_labels: labels(&[("team", "ml")]),
        ..Default::default()
    }
}

pub async fn node_group(cloud: &NebiusClient, cluster: &Cluster, name: &str) -> NodeGroup {
    cloud
        .create_node_group(
            &cluster.id,
            name,
            &cpu_group(),
            &labels(&[("owner", "t")]),
            &idempotency_key(&["ng", name]),
        )
        .await
        .unwrap()
}

/// A gRPC request with the test token and the given extra headers.
pub fn request<T>(body: T, headers: &[(&'static str, &str)]) -> tonic::Request<T> {
    let mut request = tonic::Request::new(body);
    request.metadata_mut().insert(
        "authorization",
        MetadataValue::try_from(format!("Bearer {TOKEN}")).unwrap(),
    );
    for (name, value) in headers {
        request
            .metadata_mut()
            .insert(*name, MetadataValue::try_from(*value).unwrap());
    }
    request
}

pub async fn channel(sim: &Simulator) -> tonic::transport::Channel {
    tonic::transport::Endpoint::from_shared(sim.endpoint())
        .unwrap()
        .connect()
        .await
        .unwrap()
}
