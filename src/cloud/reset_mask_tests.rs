//! The SDK's own worked examples: each expected mask is what `get_full_update_reset_mask()`
//! of PyPI `nebius` 0.6.29 produced for the same message (/work/notes/nebius-sdk.md §1.4),
//! less the fields fleetbot's protos do not declare — what a client built from these protos
//! sends, and what the SDK itself sends for the fields both know.

use super::*;
use crate::cloud::proto::nebius::applications::v1alpha1 as apps;
use crate::cloud::proto::nebius::common::v1::ResourceMetadata;
use crate::cloud::proto::nebius::compute::v1 as compute;
use crate::cloud::proto::nebius::iam::v2 as iam2;
use crate::cloud::proto::nebius::mk8s::v1 as mk8s;
use crate::cloud::proto::nebius::storage::v1 as storage;
use crate::cloud::proto::nebius::vpc::v1 as vpc;

fn mask<M: Message + Name>(m: &M) -> String {
    for_update(m)
}

fn cpu_resources() -> mk8s::ResourcesSpec {
    mk8s::ResourcesSpec {
        platform: "cpu-d3".into(),
        size: Some(mk8s::resources_spec::Size::Preset("4vcpu-16gb".into())),
    }
}

#[test]
fn e1_an_empty_node_group_spec_names_every_field() {
    assert_eq!(
        mask(&mk8s::NodeGroupSpec::default()),
        "auto_repair,autoscaling,fixed_node_count,strategy,template,version"
    );
}

#[test]
fn e2_a_fixed_cpu_group_names_what_it_leaves_empty() {
    let spec = mk8s::NodeGroupSpec {
        version: "1.31".into(),
        size: Some(mk8s::node_group_spec::Size::FixedNodeCount(3)),
        template: Some(mk8s::NodeTemplate {
            metadata: Some(mk8s::NodeMetadataTemplate {
                labels: [("team".to_string(), "ml".to_string())].into(),
            }),
            resources: Some(cpu_resources()),
            boot_disk: Some(mk8s::DiskSpec {
                size: Some(mk8s::disk_spec::Size::SizeGibibytes(128)),
                r#type: mk8s::disk_spec::DiskType::NetworkSsd as i32,
                ..Default::default()
            }),
            network_interfaces: vec![mk8s::NetworkInterfaceTemplate {
                subnet_id: "vpcsubnet-e00aaaaaaaaaaaaaaa".into(),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    };
    assert_eq!(
        mask(&spec),
        "auto_repair,autoscaling,strategy,template.(boot_disk.(block_size_bytes,size_bytes,size_kibibytes,size_mebibytes),cloud_init_user_data,filesystems,gpu_cluster,gpu_settings,local_disks,max_pods,metadata,network_interfaces.*.(public_ip_address,security_groups),nvlink,os,preemptible,reservation_policy,resources,service_account_id,taints)"
    );
}

#[test]
fn e3_lists_of_messages_recurse_through_a_wildcard() {
    use mk8s::attached_filesystem_spec::{AttachMode, Type};
    let spec = mk8s::NodeGroupSpec {
        size: Some(mk8s::node_group_spec::Size::Autoscaling(
            mk8s::NodeGroupAutoscalingSpec {
                min_node_count: 0,
                max_node_count: 4,
            },
        )),
        template: Some(mk8s::NodeTemplate {
            resources: Some(mk8s::ResourcesSpec {
                platform: "gpu-h100-sxm".into(),
                size: Some(mk8s::resources_spec::Size::Preset(
                    "8gpu-128vcpu-1600gb".into(),
                )),
            }),
            gpu_settings: Some(mk8s::GpuSettings {
                drivers_preset: "cuda12".into(),
            }),
            taints: vec![mk8s::NodeTaint {
                key: "nvidia.com/gpu".into(),
                value: "true".into(),
                effect: mk8s::node_taint::Effect::NoSchedule as i32,
            }],
            filesystems: vec![mk8s::AttachedFilesystemSpec {
                attach_mode: AttachMode::ReadWrite as i32,
                mount_tag: "data".into(),
                r#type: Some(Type::ExistingFilesystem(mk8s::ExistingFilesystem {
                    id: "computefilesystem-e00aaaaaaaaaaaaaaa".into(),
                })),
            }],
            network_interfaces: vec![mk8s::NetworkInterfaceTemplate {
                public_ip_address: Some(mk8s::PublicIpAddress {}),
                ..Default::default()
            }],
            preemptible: Some(mk8s::PreemptibleSpec {}),
            ..Default::default()
        }),
        ..Default::default()
    };
    assert_eq!(
        mask(&spec),
        "auto_repair,autoscaling.min_node_count,fixed_node_count,strategy,template.(boot_disk,cloud_init_user_data,filesystems.*.existing_filesystem,gpu_cluster,gpu_settings,local_disks,max_pods,metadata,network_interfaces.*.(public_ip_address,security_groups,subnet_id),nvlink,os,preemptible,reservation_policy,resources,service_account_id,taints.*),version"
    );
}

#[test]
fn e4_a_whole_update_request_names_metadata_and_spec_paths() {
    let request = mk8s::UpdateNodeGroupRequest {
        metadata: Some(ResourceMetadata {
            id: "mk8snodegroup-e00aaaaaaaaaaaaaaa".into(),
            parent_id: "mk8scluster-e00aaaaaaaaaaaaaaa".into(),
            name: "gpu".into(),
            resource_version: 7,
            ..Default::default()
        }),
        spec: Some(mk8s::NodeGroupSpec {
            size: Some(mk8s::node_group_spec::Size::FixedNodeCount(2)),
            template: Some(mk8s::NodeTemplate {
                resources: Some(cpu_resources()),
                ..Default::default()
            }),
            ..Default::default()
        }),
    };
    assert_eq!(
        mask(&request),
        "metadata.(created_at,labels,updated_at),spec.(auto_repair,autoscaling,strategy,template.(boot_disk,cloud_init_user_data,filesystems,gpu_cluster,gpu_settings,local_disks,max_pods,metadata,network_interfaces,nvlink,os,preemptible,reservation_policy,resources,service_account_id,taints),version)"
    );
}

#[test]
fn e5_immutable_fields_are_never_named() {
    let spec = mk8s::ClusterSpec {
        control_plane: Some(mk8s::ControlPlaneSpec {
            version: "1.31".into(),
            subnet_id: "vpcsubnet-e00aaaaaaaaaaaaaaa".into(),
            endpoints: Some(mk8s::ControlPlaneEndpointsSpec {
                public_endpoint: Some(mk8s::PublicEndpointSpec::default()),
            }),
            etcd_cluster_size: 3,
            ..Default::default()
        }),
        kube_network: None,
    };
    assert_eq!(
        mask(&spec),
        "control_plane.(audit_logs,endpoints.public_endpoint.allowed_cidrs,karpenter),kube_network"
    );
    assert_eq!(
        mask(&mk8s::ClusterSpec::default()),
        "control_plane,kube_network"
    );
    // A spec whose only field is immutable gives the empty mask (E10b).
    assert_eq!(
        mask(&compute::GpuClusterSpec {
            infiniband_fabric: "fabric-3".into()
        }),
        ""
    );
    let filesystem = compute::FilesystemSpec {
        size: Some(compute::filesystem_spec::Size::SizeGibibytes(100)),
        r#type: compute::filesystem_spec::FilesystemType::NetworkSsd as i32,
        ..Default::default()
    };
    assert_eq!(
        mask(&filesystem),
        "forbid_deletion,size_bytes,size_kibibytes,size_mebibytes"
    );
    let release = apps::K8sReleaseSpec {
        cluster_id: "mk8scluster-e00aaaaaaaaaaaaaaa".into(),
        product_slug: "nebius/nvidia-gpu-operator".into(),
        namespace: "gpu-operator".into(),
        application_name: "gpu-operator".into(),
        set: [("a".to_string(), "b".to_string())].into(),
        ..Default::default()
    };
    assert_eq!(mask(&release), "values");
}

#[test]
fn e6_e7_buckets_and_their_lifecycle_rules() {
    let spec = storage::BucketSpec {
        versioning_policy: storage::VersioningPolicy::Enabled as i32,
        max_size_bytes: 10 << 30,
        ..Default::default()
    };
    assert_eq!(
        mask(&spec),
        "bucket_policy,cors,default_storage_class,force_storage_class,lifecycle_configuration,object_audit_logging"
    );
    let rule = |id: &str| storage::LifecycleRule {
        id: id.into(),
        status: storage::lifecycle_rule::Status::Enabled as i32,
        ..Default::default()
    };
    let spec = storage::BucketSpec {
        lifecycle_configuration: Some(storage::LifecycleConfiguration {
            rules: vec![
                storage::LifecycleRule {
                    filter: Some(storage::LifecycleFilter {
                        prefix: "tmp/".into(),
                        ..Default::default()
                    }),
                    expiration: Some(storage::LifecycleExpiration {
                        expired_with: Some(storage::lifecycle_expiration::ExpiredWith::Days(7)),
                        ..Default::default()
                    }),
                    ..rule("expire")
                },
                storage::LifecycleRule {
                    abort_incomplete_multipart_upload: Some(
                        storage::LifecycleAbortIncompleteMultipartUpload {
                            days_after_initiation: 2,
                        },
                    ),
                    ..rule("abort")
                },
            ],
            last_access_filter: None,
        }),
        ..Default::default()
    };
    assert_eq!(
        mask(&spec),
        "bucket_policy,cors,default_storage_class,force_storage_class,lifecycle_configuration.(last_access_filter,rules.*.(abort_incomplete_multipart_upload,expiration.(date,expired_object_delete_marker),filter.(object_size_greater_than_bytes,object_size_less_than_bytes),noncurrent_version_expiration,noncurrent_version_transition,transition)),max_size_bytes,object_audit_logging,versioning_policy"
    );
    // Without a spec, the mask resets the whole spec (E7b): a partial update must send it.
    let bare = storage::UpdateBucketRequest {
        metadata: Some(ResourceMetadata {
            id: "storagebucket-e00aaaaaaaaaaaaaaa".into(),
            ..Default::default()
        }),
        spec: None,
    };
    assert_eq!(
        mask(&bare),
        "metadata.(created_at,labels,name,parent_id,resource_version,updated_at),spec"
    );
}

#[test]
fn e8_networks_subnets_and_pools() {
    assert_eq!(
        mask(&vpc::NetworkSpec::default()),
        "ipv4_private_pools,ipv4_public_pools"
    );
    let subnet = vpc::SubnetSpec {
        network_id: "vpcnetwork-e00aaaaaaaaaaaaaaa".into(),
        ipv4_private_pools: Some(vpc::IPv4PrivateSubnetPools {
            pools: vec![vpc::SubnetPool {
                cidrs: vec![vpc::SubnetCidr {
                    cidr: "/24".into(),
                    ..Default::default()
                }],
            }],
            use_network_pools: false,
        }),
        ..Default::default()
    };
    assert_eq!(
        mask(&subnet),
        "ipv4_private_pools.(pools.*.cidrs.*.(max_mask_length,state),use_network_pools),ipv4_public_pools,route_table_id"
    );
    let pool = vpc::PoolSpec {
        source_pool_id: "vpcpool-e00aaaaaaaaaaaaaaa".into(),
        version: vpc::IpVersion::Ipv4 as i32,
        visibility: vpc::IpVisibility::Private as i32,
        cidrs: vec![vpc::PoolCidr {
            cidr: "10.0.0.0/16".into(),
            ..Default::default()
        }],
    };
    assert_eq!(mask(&pool), "cidrs.*.(max_mask_length,state)");
}

#[test]
fn e9_an_iam_v2_project_update() {
    let request = iam2::UpdateProjectRequest {
        metadata: Some(ResourceMetadata {
            id: "project-e00aaaaaaaaaaaaaaa".into(),
            parent_id: "tenant-e00aaaaaaaaaaaaaaa".into(),
            name: "fleet".into(),
            labels: [("a".to_string(), "b".to_string())].into(),
            ..Default::default()
        }),
        spec: Some(iam2::ProjectSpec {
            region: "eu-north1".into(),
        }),
    };
    assert_eq!(
        mask(&request),
        "metadata.(created_at,resource_version,updated_at),spec"
    );
}

#[test]
fn e13_to_e16_zero_values_oneofs_and_explicit_presence() {
    let strategy = mk8s::NodeGroupDeploymentStrategy {
        drain_timeout: Some(prost_types::Duration {
            seconds: 600,
            nanos: 0,
        }),
        max_surge: Some(mk8s::PercentOrCount {
            value: Some(mk8s::percent_or_count::Value::Count(1)),
        }),
        max_unavailable: None,
    };
    assert_eq!(
        mask(&strategy),
        "drain_timeout.nanos,max_surge.percent,max_unavailable"
    );
    let zero = mk8s::NodeGroupDeploymentStrategy {
        drain_timeout: Some(prost_types::Duration::default()),
        max_surge: Some(mk8s::PercentOrCount {
            value: Some(mk8s::percent_or_count::Value::Count(0)),
        }),
        max_unavailable: None,
    };
    assert_eq!(
        mask(&zero),
        "drain_timeout.(nanos,seconds),max_surge.(count,percent),max_unavailable"
    );
    let expiration = storage::LifecycleNoncurrentVersionExpiration {
        newer_noncurrent_versions: None,
        noncurrent_days: 30,
    };
    assert_eq!(mask(&expiration), "newer_noncurrent_versions");
    let explicit = storage::LifecycleNoncurrentVersionExpiration {
        newer_noncurrent_versions: Some(0),
        noncurrent_days: 30,
    };
    assert_eq!(mask(&explicit), "newer_noncurrent_versions");
    let policy = mk8s::ReservationPolicy {
        policy: mk8s::reservation_policy::Policy::Auto as i32,
        reservation_ids: vec!["capacityblockgroup-e00x".into()],
    };
    assert_eq!(mask(&policy), "policy");
    let condition = mk8s::NodeAutoRepairCondition {
        r#type: "Ready".into(),
        status: 0,
        trigger: Some(mk8s::node_auto_repair_condition::Trigger::Disabled(false)),
    };
    assert_eq!(mask(&condition), "disabled,status,timeout");
}

#[test]
fn e17_an_update_sent_back_as_read() {
    let request = storage::UpdateBucketRequest {
        metadata: Some(ResourceMetadata {
            id: "storagebucket-e00aaaaaaaaaaaaaaa".into(),
            parent_id: "project-e00aaaaaaaaaaaaaaa".into(),
            name: "logs".into(),
            resource_version: 3,
            created_at: Some(prost_types::Timestamp {
                seconds: 1_767_323_045,
                nanos: 0,
            }),
            updated_at: Some(prost_types::Timestamp {
                seconds: 1_767_323_045,
                nanos: 123_000_000,
            }),
            labels: [("app.kubernetes.io/name".to_string(), "x".to_string())].into(),
        }),
        spec: Some(storage::BucketSpec {
            versioning_policy: storage::VersioningPolicy::Disabled as i32,
            max_size_bytes: 0,
            ..Default::default()
        }),
    };
    assert_eq!(
        mask(&request),
        "metadata.(created_at.nanos,updated_at),spec.(bucket_policy,cors,default_storage_class,force_storage_class,lifecycle_configuration,max_size_bytes,object_audit_logging)"
    );
}

#[test]
fn the_syntax_round_trips_as_the_sdk_writes_it() {
    // The SDK's parser example: a group distributes what follows it over its branches.
    let parsed = Mask::parse("a, b.c, d.e.12, f.(j.h,i.j).k, l.*.m").unwrap();
    assert_eq!(parsed.marshal(), "a,b.c,d.e.12,f.(i.j.k,j.h.k),l.*.m");
    let quoted = Mask::parse(r#"metadata.labels."app.kubernetes.io/name""#).unwrap();
    assert_eq!(
        quoted.marshal(),
        r#"metadata.labels."app.kubernetes.io/name""#
    );
    assert!(Mask::parse("").unwrap().is_empty());
    assert!(Mask::parse("  ").unwrap().is_empty());
    for (bad, why) in [
        ("spec.", "unexpected end of mask"),
        ("a..b", "expecting field or submask"),
        ("a.(b", "unclosed left brace"),
        ("a)", "unmatched right brace"),
        ("a-b", "unexpected symbol"),
    ] {
        let error = Mask::parse(bad).unwrap_err();
        assert!(error.contains(why), "{bad}: {error}");
    }
}

#[test]
fn sub_masks_merge_named_keys_with_the_wildcard() {
    let m = Mask::parse("spec.template.network_interfaces.*.subnet_id,spec.template.network_interfaces.0.security_groups").unwrap();
    let interfaces = m
        .sub("spec")
        .and_then(|s| s.sub("template"))
        .and_then(|t| t.sub("network_interfaces"))
        .unwrap();
    assert_eq!(
        interfaces.sub("0").unwrap().marshal(),
        "security_groups,subnet_id"
    );
    assert_eq!(interfaces.sub("1").unwrap().marshal(), "subnet_id");
    assert!(m.sub("metadata").is_none());
}
