//! A Managed Kubernetes node group in both directions: the domain spec as the request's
//! template, and the service's node group (its template and status) as the domain type.

use super::convert::{copied, labels, meta_field, resource_version};
use crate::cloud::domain::{AttachedFilesystem, NodeGroup, NodeGroupSpec, Reservation, State};
use crate::cloud::proto::nebius::mk8s::v1 as mk8s;

use mk8s::attached_filesystem_spec::{AttachMode, Type};
use mk8s::reservation_policy::Policy;

pub(super) fn node_group_spec_to(spec: &NodeGroupSpec) -> mk8s::NodeGroupSpec {
    mk8s::NodeGroupSpec {
        version: String::new(),
        size: Some(match spec.autoscale_min {
            Some(min) => mk8s::node_group_spec::Size::Autoscaling(mk8s::NodeGroupAutoscalingSpec {
                min_node_count: min,
                max_node_count: spec.node_count,
            }),
            None => mk8s::node_group_spec::Size::FixedNodeCount(spec.node_count),
        }),
        template: Some(node_template_to(spec)),
        strategy: None,
        auto_repair: None,
    }
}

fn node_template_to(spec: &NodeGroupSpec) -> mk8s::NodeTemplate {
    mk8s::NodeTemplate {
        metadata: (!spec.node_labels.is_empty()).then(|| mk8s::NodeMetadataTemplate {
            labels: copied(&spec.node_labels),
        }),
        resources: Some(mk8s::ResourcesSpec {
            platform: spec.platform.clone(),
            size: Some(mk8s::resources_spec::Size::Preset(spec.preset.clone())),
        }),
        boot_disk: Some(mk8s::DiskSpec {
            size: Some(mk8s::disk_spec::Size::SizeGibibytes(
                spec.boot_disk_gibibytes,
            )),
            r#type: mk8s::disk_spec::DiskType::NetworkSsd as i32,
            ..Default::default()
        }),
        gpu_settings: (!spec.drivers_preset.is_empty()).then(|| mk8s::GpuSettings {
            drivers_preset: spec.drivers_preset.clone(),
        }),
        gpu_cluster: (!spec.gpu_cluster_id.is_empty()).then(|| mk8s::GpuClusterSpec {
            id: spec.gpu_cluster_id.clone(),
        }),
        network_interfaces: vec![mk8s::NetworkInterfaceTemplate {
            public_ip_address: spec.public_ip.then(mk8s::PublicIpAddress::default),
            subnet_id: spec.subnet_id.clone(),
            security_groups: Vec::new(),
        }],
        filesystems: spec
            .filesystems
            .iter()
            .map(attached_filesystem_to)
            .collect(),
        cloud_init_user_data: spec.cloud_init_user_data.clone(),
        preemptible: spec.preemptible.then(mk8s::PreemptibleSpec::default),
        reservation_policy: spec.reservation.as_ref().map(|r| mk8s::ReservationPolicy {
            policy: policy_to(&r.policy) as i32,
            reservation_ids: r.capacity_block_group_ids.clone(),
        }),
        ..Default::default()
    }
}

fn attached_filesystem_to(f: &AttachedFilesystem) -> mk8s::AttachedFilesystemSpec {
    mk8s::AttachedFilesystemSpec {
        attach_mode: if f.read_write {
            AttachMode::ReadWrite
        } else {
            AttachMode::ReadOnly
        } as i32,
        mount_tag: f.mount_tag.clone(),
        r#type: Some(Type::ExistingFilesystem(mk8s::ExistingFilesystem {
            id: f.filesystem_id.clone(),
        })),
    }
}

fn policy_to(name: &str) -> Policy {
    match name {
        "STRICT" => Policy::Strict,
        "FORBID" => Policy::Forbid,
        _ => Policy::Auto,
    }
}

fn policy_name(policy: i32) -> &'static str {
    match Policy::try_from(policy) {
        Ok(Policy::Strict) => "STRICT",
        Ok(Policy::Forbid) => "FORBID",
        _ => "AUTO",
    }
}

pub(super) fn node_group_from(g: mk8s::NodeGroup) -> NodeGroup {
    use mk8s::node_group_status::State as S;
    let status = g.status.clone().unwrap_or_default();
    NodeGroup {
        id: meta_field(&g.metadata, |m| &m.id),
        resource_version: resource_version(&g.metadata),
        cluster_id: meta_field(&g.metadata, |m| &m.parent_id),
        name: meta_field(&g.metadata, |m| &m.name),
        spec: node_group_spec_from(g.spec.clone().unwrap_or_default()),
        state: match status.state {
            s if s == S::Provisioning as i32 => State::Creating,
            s if s == S::Running as i32 => State::Ready,
            s if s == S::Deleting as i32 => State::Deleting,
            _ => State::Other,
        },
        node_count: status.node_count,
        ready_node_count: status.ready_node_count,
        labels: labels(&g.metadata),
    }
}

fn node_group_spec_from(spec: mk8s::NodeGroupSpec) -> NodeGroupSpec {
    let template = spec.template.clone().unwrap_or_default();
    let resources = template.resources.clone().unwrap_or_default();
    let interface = template
        .network_interfaces
        .first()
        .cloned()
        .unwrap_or_default();
    NodeGroupSpec {
        autoscale_min: match spec.size {
            Some(mk8s::node_group_spec::Size::Autoscaling(a)) => Some(a.min_node_count),
            _ => None,
        },
        node_count: match spec.size {
            Some(mk8s::node_group_spec::Size::FixedNodeCount(n)) => n,
            Some(mk8s::node_group_spec::Size::Autoscaling(a)) => a.max_node_count,
            None => 0,
        },
        platform: resources.platform.clone(),
        preset: match resources.size {
            Some(mk8s::resources_spec::Size::Preset(p)) => p,
            None => String::new(),
        },
        boot_disk_gibibytes: boot_disk_gibibytes(&template),
        gpu_cluster_id: template
            .gpu_cluster
            .as_ref()
            .map(|g| g.id.clone())
            .unwrap_or_default(),
        drivers_preset: template
            .gpu_settings
            .as_ref()
            .map(|g| g.drivers_preset.clone())
            .unwrap_or_default(),
        filesystems: attached_filesystems_from(&template.filesystems),
        cloud_init_user_data: template.cloud_init_user_data.clone(),
        preemptible: template.preemptible.is_some(),
        reservation: template.reservation_policy.as_ref().map(|r| Reservation {
            policy: policy_name(r.policy).to_string(),
            capacity_block_group_ids: r.reservation_ids.clone(),
        }),
        subnet_id: interface.subnet_id.clone(),
        public_ip: interface.public_ip_address.is_some(),
        node_labels: template
            .metadata
            .as_ref()
            .map(|m| copied(&m.labels))
            .unwrap_or_default(),
    }
}

fn boot_disk_gibibytes(template: &mk8s::NodeTemplate) -> i64 {
    use mk8s::disk_spec::Size;
    let gib = 1024 * 1024 * 1024;
    match template.boot_disk.as_ref().and_then(|d| d.size) {
        Some(Size::SizeGibibytes(v)) => v,
        Some(Size::SizeMebibytes(v)) => v / 1024,
        Some(Size::SizeKibibytes(v)) => v / (1024 * 1024),
        Some(Size::SizeBytes(v)) => v / gib,
        None => 0,
    }
}

/// An attachment that names no filesystem is skipped: the domain type needs the ID.
fn attached_filesystems_from(
    filesystems: &[mk8s::AttachedFilesystemSpec],
) -> Vec<AttachedFilesystem> {
    filesystems
        .iter()
        .filter_map(|f| {
            let Some(Type::ExistingFilesystem(e)) = &f.r#type else {
                return None;
            };
            Some(AttachedFilesystem {
                filesystem_id: e.id.clone(),
                mount_tag: f.mount_tag.clone(),
                read_write: f.attach_mode == AttachMode::ReadWrite as i32,
            })
        })
        .collect()
}
