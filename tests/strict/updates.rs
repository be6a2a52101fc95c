//! Updates are patches: what a request leaves unset keeps its value unless the reset mask
//! names it, a partial mask resets only what it names, and fleetbot's client sends the mask
//! the SDK would, so every removal it makes takes effect.

use fleetbot::cloud::Cloud;
use fleetbot::cloud::client::Host;
use fleetbot::cloud::domain::{AttachedFilesystem, NodeGroupSpec};
use fleetbot::cloud::proto::nebius::common::v1::ResourceMetadata;
use fleetbot::cloud::proto::nebius::mk8s::v1 as mk8s;
use fleetbot::cloud::proto::nebius::storage::v1 as storage;
use fleetbot::cloud::reset_mask;

use super::{channel, cluster, cpu_group, labels, node_group, request};
use crate::support::{client, roomy_world, simulator};

type NodeGroups =
    mk8s::node_group_service_client::NodeGroupServiceClient<tonic::transport::Channel>;

fn count_only(id: &str, n: i64) -> mk8s::UpdateNodeGroupRequest {
    mk8s::UpdateNodeGroupRequest {
        metadata: Some(ResourceMetadata {
            id: id.into(),
            ..Default::default()
        }),
        spec: Some(mk8s::NodeGroupSpec {
            size: Some(mk8s::node_group_spec::Size::FixedNodeCount(n)),
            ..Default::default()
        }),
    }
}

#[tokio::test]
async fn an_update_keeps_what_it_leaves_unset_unless_the_mask_names_it() {
    let sim = simulator(&roomy_world("")).await;
    let cloud = client(&sim);
    let (_, c) = cluster(&cloud, &sim.tenant_id(), "patch").await;
    let group = node_group(&cloud, &c, "cpu").await;
    let mut raw = NodeGroups::new(channel(&sim).await);

    // No mask: only the count changes; template and labels stay.
    let op = raw
        .update(request(count_only(&group.id, 5), &[]))
        .await
        .unwrap()
        .into_inner();
    cloud.wait(Host::Mk8s, op).await.unwrap();
    let got = cloud.get_node_group(&group.id).await.unwrap();
    let want = NodeGroupSpec {
        node_count: 5,
        ..group.spec.clone()
    };
    assert_eq!(got.spec, want);
    assert_eq!(got.labels, group.labels);

    // A partial mask resets what it names and nothing else (the template stays).
    let op = raw
        .update(request(
            count_only(&group.id, 2),
            &[(reset_mask::HEADER, "spec.fixed_node_count,metadata.labels")],
        ))
        .await
        .unwrap()
        .into_inner();
    cloud.wait(Host::Mk8s, op).await.unwrap();
    let got = cloud.get_node_group(&group.id).await.unwrap();
    assert_eq!(
        got.spec,
        NodeGroupSpec {
            node_count: 2,
            ..group.spec.clone()
        }
    );
    assert!(got.labels.is_empty(), "{:?}", got.labels);

    // The SDK's own partial-mask example: no spec, a mask inside it; only that path resets.
    let bare = mk8s::UpdateNodeGroupRequest {
        spec: None,
        ..count_only(&group.id, 1)
    };
    let op = raw
        .update(request(
            bare.clone(),
            &[(reset_mask::HEADER, "spec.version")],
        ))
        .await
        .unwrap()
        .into_inner();
    cloud.wait(Host::Mk8s, op).await.unwrap();
    let got = cloud.get_node_group(&group.id).await.unwrap();
    assert_eq!(
        got.spec,
        NodeGroupSpec {
            node_count: 2,
            ..group.spec.clone()
        }
    );
    // A mask naming the spec itself resets it whole: the node group would lack its required
    // template, which the API refuses.
    let refused = raw
        .update(request(bare, &[(reset_mask::HEADER, "spec")]))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::InvalidArgument, "{refused:?}");
}

#[tokio::test]
async fn fleetbot_sends_the_sdk_mask_with_every_update_and_removals_take_effect() {
    let sim = simulator(&roomy_world("")).await;
    let cloud = client(&sim);
    let tenant = sim.tenant_id();
    let (p, c) = cluster(&cloud, &tenant, "removal").await;
    let fs = cloud
        .create_filesystem(&p.id, "fs", 100, &labels(&[]), "k-fs")
        .await
        .unwrap();
    let mut spec = cpu_group();
    spec.drivers_preset = "cuda12".into();
    spec.filesystems = vec![AttachedFilesystem {
        filesystem_id: fs.id.clone(),
        mount_tag: "data".into(),
        read_write: true,
    }];
    let group = cloud
        .create_node_group(&c.id, "g", &spec, &labels(&[("a", "1")]), "k-g")
        .await
        .unwrap();
    assert_eq!(group.spec.node_labels, labels(&[("team", "ml")]));

    // Every removable thing removed at once, and a smaller pool.
    let removed = NodeGroupSpec {
        node_count: 1,
        drivers_preset: String::new(),
        filesystems: Vec::new(),
        cloud_init_user_data: String::new(),
        node_labels: labels(&[]),
        ..group.spec.clone()
    };
    let after = cloud
        .update_node_group(&group.id, &removed, &labels(&[]), "k-g-remove")
        .await
        .unwrap();
    assert_eq!(after.spec, removed);
    assert!(after.labels.is_empty());

    // What the client sent is what the SDK computes from the same request.
    let ops = sim.service.with_core(|core| core.state.operations.clone());
    let update = ops
        .iter()
        .rev()
        .find(|o| o.description.starts_with("Update mk8snodegroup"))
        .unwrap();
    let sent = &update.request_headers[reset_mask::HEADER].values[0];
    let request: mk8s::UpdateNodeGroupRequest = update.request.as_ref().unwrap().to_msg().unwrap();
    assert_eq!(sent, &reset_mask::for_update(&request));
    assert!(sent.starts_with("metadata.(created_at,labels,"), "{sent}");
    for path in [
        "gpu_settings",
        "filesystems",
        "cloud_init_user_data",
        "template.(boot_disk",
    ] {
        assert!(sent.contains(path), "{path} not in {sent}");
    }

    // A bucket's cap back to unlimited.
    let bucket = cloud
        .create_bucket(&p.id, "capped", "standard", 1 << 30, &labels(&[]), "k-b")
        .await
        .unwrap();
    let unlimited = cloud
        .update_bucket(&bucket.id, "standard", 0, &labels(&[]), "k-b-unlimited")
        .await
        .unwrap();
    assert_eq!(unlimited.max_size_bytes, 0);
    let raw: storage::Bucket = sim.service.with_core(|core| core.get(&bucket.id).unwrap());
    assert_eq!(raw.spec.unwrap().max_size_bytes, 0);
}
