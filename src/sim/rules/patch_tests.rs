//! The patch rules on the cases the API's README and the gosdk's `PatchWithResetMask` spell
//! out, on real node group and metadata messages.

use super::*;
use crate::cloud::proto::nebius::common::v1::ResourceMetadata;
use crate::cloud::proto::nebius::mk8s::v1 as mk8s;
use crate::cloud::schema::{from_dynamic, to_dynamic};

use mk8s::attached_filesystem_spec::{AttachMode, Type};

fn filesystem(tag: &str) -> mk8s::AttachedFilesystemSpec {
    mk8s::AttachedFilesystemSpec {
        attach_mode: AttachMode::ReadWrite as i32,
        mount_tag: tag.into(),
        r#type: Some(Type::ExistingFilesystem(mk8s::ExistingFilesystem {
            id: format!("computefilesystem-{tag}"),
        })),
    }
}

fn stored() -> mk8s::NodeGroupSpec {
    mk8s::NodeGroupSpec {
        version: "1.31".into(),
        size: Some(mk8s::node_group_spec::Size::FixedNodeCount(3)),
        template: Some(mk8s::NodeTemplate {
            metadata: Some(mk8s::NodeMetadataTemplate {
                labels: [("team".to_string(), "ml".to_string())].into(),
            }),
            resources: Some(mk8s::ResourcesSpec {
                platform: "cpu-d3".into(),
                size: Some(mk8s::resources_spec::Size::Preset("4vcpu-16gb".into())),
            }),
            boot_disk: Some(mk8s::DiskSpec {
                size: Some(mk8s::disk_spec::Size::SizeGibibytes(128)),
                r#type: mk8s::disk_spec::DiskType::NetworkSsd as i32,
                ..Default::default()
            }),
            gpu_settings: Some(mk8s::GpuSettings {
                drivers_preset: "cuda12".into(),
            }),
            filesystems: vec![filesystem("a"), filesystem("b")],
            cloud_init_user_data: "#cloud-config\n".into(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn apply(request: &mk8s::NodeGroupSpec, mask: Option<&str>) -> mk8s::NodeGroupSpec {
    let mut out = to_dynamic(&stored());
    let mask = mask.map(|m| Mask::parse(m).unwrap());
    patch(&mut out, &to_dynamic(request), mask.as_ref());
    from_dynamic(&out)
}

fn count_only(n: i64) -> mk8s::NodeGroupSpec {
    mk8s::NodeGroupSpec {
        size: Some(mk8s::node_group_spec::Size::FixedNodeCount(n)),
        ..Default::default()
    }
}

#[test]
fn without_a_mask_unset_fields_are_kept() {
    let got = apply(&count_only(5), None);
    let mut want = stored();
    want.size = Some(mk8s::node_group_spec::Size::FixedNodeCount(5));
    assert_eq!(got, want);
}

#[test]
fn a_partial_mask_resets_only_what_it_names() {
    // The case: a partial mask must not erase the template.
    let got = apply(&count_only(5), Some("fixed_node_count,version"));
    let mut want = stored();
    want.size = Some(mk8s::node_group_spec::Size::FixedNodeCount(5));
    want.version = String::new();
    assert_eq!(got, want);
}

#[test]
fn a_message_left_out_is_reset_whole_only_when_the_mask_names_it() {
    let mut request = stored();
    let template = request.template.as_mut().unwrap();
    template.boot_disk = None;
    let got = apply(&request, Some("template.boot_disk"));
    assert_eq!(got.template.unwrap().boot_disk, None);
    // `{a: {b, c}}` + request `{}` + mask `a.b` resets `b` only, as the SDK documents its
    // partial masks.
    let got = apply(&request, Some("template.boot_disk.type"));
    let disk = got.template.unwrap().boot_disk.unwrap();
    assert_eq!(disk.r#type, 0);
    assert_eq!(disk.size, Some(mk8s::disk_spec::Size::SizeGibibytes(128)));
    // `{a: {}}` + mask `a.b` keeps `c`.
    let mut request = stored();
    request.template.as_mut().unwrap().boot_disk = Some(mk8s::DiskSpec::default());
    let got = apply(&request, Some("template.boot_disk.type"));
    let disk = got.template.unwrap().boot_disk.unwrap();
    assert_eq!(disk.r#type, 0);
    assert_eq!(disk.size, Some(mk8s::disk_spec::Size::SizeGibibytes(128)));
}

#[test]
fn the_sdk_full_mask_removes_what_the_request_leaves_out() {
    let mut request = stored();
    let template = request.template.as_mut().unwrap();
    template.metadata = None;
    template.gpu_settings = None;
    template.cloud_init_user_data.clear();
    template.filesystems = vec![filesystem("b")];
    let mask = crate::cloud::reset_mask::Mask::of_message(&to_dynamic(&request)).marshal();
    let got = apply(&request, Some(&mask));
    let template = got.template.unwrap();
    assert_eq!(template.metadata, None);
    assert_eq!(template.gpu_settings, None);
    assert_eq!(template.cloud_init_user_data, "");
    // The list is the request's: element 0 patched from `b`, element 1 gone.
    assert_eq!(template.filesystems, vec![filesystem("b")]);
    // What the request still carries is unchanged.
    assert_eq!(
        template.boot_disk.unwrap().size,
        Some(mk8s::disk_spec::Size::SizeGibibytes(128))
    );
}

#[test]
fn a_oneof_member_replaces_its_sibling() {
    let request = mk8s::NodeGroupSpec {
        size: Some(mk8s::node_group_spec::Size::Autoscaling(
            mk8s::NodeGroupAutoscalingSpec {
                min_node_count: 1,
                max_node_count: 4,
            },
        )),
        ..Default::default()
    };
    let got = apply(&request, None);
    assert!(matches!(
        got.size,
        Some(mk8s::node_group_spec::Size::Autoscaling(_))
    ));
    assert!(got.template.is_some());
}

#[test]
fn maps_are_replaced_and_output_only_fields_kept() {
    let stored = ResourceMetadata {
        id: "x".into(),
        created_at: Some(prost_types::Timestamp {
            seconds: 10,
            nanos: 0,
        }),
        labels: [("a".to_string(), "1".to_string())].into(),
        ..Default::default()
    };
    let request = ResourceMetadata {
        created_at: Some(prost_types::Timestamp {
            seconds: 99,
            nanos: 0,
        }),
        labels: [("b".to_string(), "2".to_string())].into(),
        ..Default::default()
    };
    let mut out = to_dynamic(&stored);
    let mask = Mask::parse("created_at,name").unwrap();
    patch(&mut out, &to_dynamic(&request), Some(&mask));
    let got: ResourceMetadata = from_dynamic(&out);
    assert_eq!(got.created_at, stored.created_at);
    assert_eq!(got.labels, request.labels);
    assert_eq!(got.id, "x");
}
