//! Requests are validated from the annotations of the descriptor set the simulator is built
//! from: a create missing a required field, or an update changing an immutable one, is
//! refused with `INVALID_ARGUMENT` and a field violation naming its path.

use fleetbot::cloud::Cloud;
use fleetbot::cloud::client::Host;
use fleetbot::cloud::error::{CloudError, ErrorKind};
use fleetbot::cloud::proto::nebius::common::v1::ResourceMetadata;
use fleetbot::cloud::proto::nebius::compute::v1 as compute;
use fleetbot::cloud::proto::nebius::mk8s::v1 as mk8s;
use fleetbot::cloud::proto::nebius::storage::v1 as storage;
use fleetbot::cloud::proto::nebius::vpc::v1 as vpc;
use tonic::transport::Channel;

use super::{channel, cluster, labels, request};
use crate::support::{client, roomy_world, simulator};

fn meta(parent: &str, name: &str) -> Option<ResourceMetadata> {
    Some(ResourceMetadata {
        parent_id: parent.into(),
        name: name.into(),
        ..Default::default()
    })
}

/// The violated fields of a refusal, which must be `INVALID_ARGUMENT`.
fn fields(status: tonic::Status) -> Vec<String> {
    assert_eq!(status.code(), tonic::Code::InvalidArgument, "{status:?}");
    match CloudError::from_status(&status).kind {
        ErrorKind::InvalidArgument { fields } => fields,
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn creates_missing_a_required_field_are_refused_naming_it() {
    let sim = simulator(&roomy_world("")).await;
    let cloud = client(&sim);
    let (p, c) = cluster(&cloud, &sim.tenant_id(), "req").await;
    let ch: Channel = channel(&sim).await;

    let mut groups = mk8s::node_group_service_client::NodeGroupServiceClient::new(ch.clone());
    let no_template = mk8s::CreateNodeGroupRequest {
        metadata: meta(&c.id, "g"),
        spec: Some(mk8s::NodeGroupSpec {
            size: Some(mk8s::node_group_spec::Size::FixedNodeCount(1)),
            ..Default::default()
        }),
    };
    let refused = groups.create(request(no_template, &[])).await.unwrap_err();
    assert_eq!(fields(refused), ["spec.template"]);

    let mut clusters = mk8s::cluster_service_client::ClusterServiceClient::new(ch.clone());
    let no_subnet = mk8s::CreateClusterRequest {
        metadata: meta(&p.id, "c2"),
        spec: Some(mk8s::ClusterSpec {
            control_plane: Some(mk8s::ControlPlaneSpec {
                version: "1.31".into(),
                ..Default::default()
            }),
            kube_network: None,
        }),
    };
    let refused = clusters.create(request(no_subnet, &[])).await.unwrap_err();
    assert_eq!(fields(refused), ["spec.control_plane.subnet_id"]);

    let mut filesystems =
        compute::filesystem_service_client::FilesystemServiceClient::new(ch.clone());
    let no_type = compute::CreateFilesystemRequest {
        metadata: meta(&p.id, "fs"),
        spec: Some(compute::FilesystemSpec {
            size: Some(compute::filesystem_spec::Size::SizeGibibytes(64)),
            ..Default::default()
        }),
    };
    let refused = filesystems.create(request(no_type, &[])).await.unwrap_err();
    assert_eq!(fields(refused), ["spec.type"]);

    let mut subnets = vpc::subnet_service_client::SubnetServiceClient::new(ch.clone());
    let no_network = vpc::CreateSubnetRequest {
        metadata: meta(&p.id, "s"),
        spec: Some(vpc::SubnetSpec::default()),
    };
    let refused = subnets.create(request(no_network, &[])).await.unwrap_err();
    assert_eq!(fields(refused), ["spec.network_id"]);

    // Nothing refused was created.
    assert!(cloud.list_node_groups(&c.id).await.unwrap().is_empty());
    assert!(cloud.list_filesystems(&p.id).await.unwrap().is_empty());
}

#[tokio::test]
async fn updates_changing_an_immutable_field_are_refused_naming_it() {
    let sim = simulator(&roomy_world("")).await;
    let cloud = client(&sim);
    let (p, _) = cluster(&cloud, &sim.tenant_id(), "imm").await;
    let ch = channel(&sim).await;
    let fs = cloud
        .create_filesystem(&p.id, "fs", 64, &labels(&[]), "k-fs")
        .await
        .unwrap();
    let mut filesystems =
        compute::filesystem_service_client::FilesystemServiceClient::new(ch.clone());
    let current = filesystems
        .get(request(
            compute::GetFilesystemRequest { id: fs.id.clone() },
            &[],
        ))
        .await
        .unwrap()
        .into_inner();
    let mut spec = current.spec.unwrap();
    spec.r#type = compute::filesystem_spec::FilesystemType::NetworkHdd as i32;
    let change_type = compute::UpdateFilesystemRequest {
        metadata: current.metadata.clone(),
        spec: Some(spec),
    };
    let refused = filesystems
        .update(request(change_type, &[]))
        .await
        .unwrap_err();
    assert_eq!(fields(refused), ["spec.type"]);

    let bucket = cloud
        .create_bucket(
            &p.id,
            "named-once",
            "standard",
            1 << 30,
            &labels(&[]),
            "k-b",
        )
        .await
        .unwrap();
    let mut buckets = storage::bucket_service_client::BucketServiceClient::new(ch);
    let rename = storage::UpdateBucketRequest {
        metadata: Some(ResourceMetadata {
            id: bucket.id.clone(),
            name: "renamed".into(),
            ..Default::default()
        }),
        spec: Some(storage::BucketSpec::default()),
    };
    let refused = buckets.update(request(rename, &[])).await.unwrap_err();
    assert_eq!(fields(refused), ["metadata.name"]);
    assert_eq!(
        cloud.get_bucket(&bucket.id).await.unwrap().name,
        "named-once"
    );

    // The same spec sent back (as the SDK does with a read resource) is accepted.
    let same = compute::UpdateFilesystemRequest {
        metadata: current.metadata,
        spec: current.spec,
    };
    let op = filesystems
        .update(request(same, &[]))
        .await
        .unwrap()
        .into_inner();
    cloud.wait(Host::Compute, op).await.unwrap();
}
