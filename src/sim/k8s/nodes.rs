//! Kubernetes nodes that follow the simulated node groups: names, labels, taints, allocatable
//! CPU, memory, GPUs (MIG slices when the group asks for a MIG layout), Ready.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Value, json};

use super::addons::{GPU_PRESENT, GpuPlugin, gpu_plugin};
use super::hosts::{HostFacts, HostMount, cloud_init_mounts};
use super::scope::Scope;
use crate::cloud::nid;
use crate::cloud::proto::nebius::mk8s::v1 as mk8s;
use crate::sim::core::Core;
use crate::sim::resources::{Resource, node_group_hardware};

/// The label every node carries with its node group's ID.
pub const NODE_GROUP_LABEL: &str = "mk8s.nebius.ai/node-group-id";
/// The GPU Operator's MIG layout label (fleet-engine §2.6).
pub const MIG_CONFIG_LABEL: &str = "nvidia.com/mig.config";

/// A cluster, as its API serves it.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterView {
    pub id: String,
    /// Whether the control plane answers (RUNNING).
    pub running: bool,
    /// `1.31`: the control plane's minor version.
    pub version: String,
    pub nodes: Vec<Value>,
    /// The cluster's DEPLOYED marketplace releases, to play inside it.
    pub releases: Vec<super::addons::Played>,
    /// Each node's host: its boot ID and the shared filesystems it mounts.
    pub hosts: Vec<(String, HostFacts)>,
}

/// What a node of `group` has on its host: the filesystems its template attaches, at the
/// paths and with the options its cloud-init mounts them.
fn host_facts(group: &mk8s::NodeGroup, node: &Value, size_of: &dyn Fn(&str) -> u64) -> HostFacts {
    let template = group
        .spec
        .as_ref()
        .and_then(|s| s.template.clone())
        .unwrap_or_default();
    let mounts = cloud_init_mounts(&template.cloud_init_user_data);
    let read_write = mk8s::attached_filesystem_spec::AttachMode::ReadWrite as i32;
    HostFacts {
        boot_id: node
            .pointer("/status/nodeInfo/bootID")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        mounts: template
            .filesystems
            .iter()
            .filter_map(|f| {
                let id = match &f.r#type {
                    Some(mk8s::attached_filesystem_spec::Type::ExistingFilesystem(e)) => {
                        e.id.clone()
                    }
                    None => return None,
                };
                let (_, path, options) = mounts.iter().find(|(tag, _, _)| *tag == f.mount_tag)?;
                Some(HostMount {
                    size_bytes: size_of(&id),
                    filesystem_id: id,
                    tag: f.mount_tag.clone(),
                    path: path.clone(),
                    options: options.clone(),
                    read_write: f.attach_mode == read_write,
                })
            })
            .collect(),
    }
}

fn node_count(group: &mk8s::NodeGroup) -> i64 {
    group.status.as_ref().map_or(0, |s| s.node_count)
}

fn node(
    cluster: &mk8s::Cluster,
    group: &mk8s::NodeGroup,
    region: &str,
    index: i64,
    version: &str,
    plugin: Option<&GpuPlugin>,
) -> Value {
    let template = group
        .spec
        .as_ref()
        .and_then(|s| s.template.clone())
        .unwrap_or_default();
    let resources = template.resources.clone().unwrap_or_default();
    let preset = match resources.size {
        Some(mk8s::resources_spec::Size::Preset(p)) => p,
        None => String::new(),
    };
    let hardware = group.spec.as_ref().and_then(node_group_hardware);
    let (vcpus, memory, gpus) =
        hardware.map_or((0, 0, 0), |(_, p)| (p.vcpus, p.memory_gib, p.gpus));
    let name = nid::make(
        "computeinstance",
        region,
        &format!("{}/node/{index}", group.id()),
    );
    let mut labels: BTreeMap<String, String> = template
        .metadata
        .as_ref()
        .map(|m| m.labels.clone().into_iter().collect())
        .unwrap_or_default();
    // GPUs are advertised by the device plugin (and labelled by GPU Feature Discovery): a node
    // without one shows none, whatever its hardware.
    let gpus = if plugin.is_some() { gpus } else { 0 };
    let mig =
        gpus > 0 && labels.contains_key(MIG_CONFIG_LABEL) && plugin.is_some_and(|p| p.mig_mixed);
    labels.insert("kubernetes.io/hostname".into(), name.clone());
    labels.insert("kubernetes.io/os".into(), "linux".into());
    labels.insert("kubernetes.io/arch".into(), "amd64".into());
    labels.insert(
        "node.kubernetes.io/instance-type".into(),
        resources.platform.clone(),
    );
    labels.insert("nebius.com/resource-preset".into(), preset.clone());
    labels.insert("topology.kubernetes.io/region".into(), region.into());
    labels.insert(NODE_GROUP_LABEL.into(), group.id().to_string());
    labels.insert("mk8s.nebius.ai/cluster-id".into(), cluster.id().to_string());
    if gpus > 0 {
        labels.insert(GPU_PRESENT.into(), "true".into());
        if mig {
            labels.insert("nvidia.com/mig.strategy".into(), "mixed".into());
            labels.insert("nvidia.com/mig.config.state".into(), "success".into());
        }
        labels.insert(
            "nvidia.com/gpu.product".into(),
            hardware.map_or("", |(p, _)| p.gpu_product).into(),
        );
        labels.insert("nvidia.com/gpu.count".into(), gpus.to_string());
    }
    if template.preemptible.is_some() {
        labels.insert("node.kubernetes.io/preemptible".into(), "true".into());
    }
    let mut capacity = json!({
        "cpu": vcpus.to_string(),
        "memory": format!("{memory}Gi"),
        "pods": "110",
        "ephemeral-storage": "100Gi",
    });
    if gpus > 0 {
        if mig {
            capacity["nvidia.com/gpu"] = json!("0");
            capacity["nvidia.com/mig-1g.24gb"] = json!((2 * gpus).to_string());
            capacity["nvidia.com/mig-2g.48gb"] = json!(gpus.to_string());
        } else {
            capacity["nvidia.com/gpu"] = json!(gpus.to_string());
        }
    }
    let taints: Vec<Value> = template
        .taints
        .iter()
        .map(|t| {
            let effect = match mk8s::node_taint::Effect::try_from(t.effect) {
                Ok(mk8s::node_taint::Effect::NoExecute) => "NoExecute",
                Ok(mk8s::node_taint::Effect::PreferNoSchedule) => "PreferNoSchedule",
                _ => "NoSchedule",
            };
            json!({"key": t.key, "value": t.value, "effect": effect})
        })
        .collect();
    let identity = uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_OID, name.as_bytes()).to_string();
    let mut spec = json!({"providerID": format!("nebius://{name}")});
    if !taints.is_empty() {
        spec["taints"] = json!(taints);
    }
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
        "status": {
            "capacity": capacity,
            "allocatable": capacity,
            "conditions": [{
                "type": "Ready",
                "status": "True",
                "reason": "KubeletReady",
                "message": "kubelet is posting ready status",
            }],
            "addresses": [
                {"type": "InternalIP", "address": format!("10.0.{}.{}", index / 250, index % 250 + 2)},
                {"type": "Hostname", "address": name},
            ],
            "nodeInfo": {
                "kubeletVersion": format!("v{version}.0"),
                "containerRuntimeVersion": "containerd://1.7.27",
                "operatingSystem": "linux",
                "architecture": "amd64",
                "osImage": "Ubuntu 24.04 LTS",
                "kernelVersion": "6.8.0-nebius",
                "machineID": identity.replace('-', ""),
                "systemUUID": identity,
                "bootID": uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_URL, name.as_bytes()).to_string(),
            },
        },
    })
}

/// A filesystem's size in bytes, as its status (else its spec) states it.
fn filesystem_bytes(fs: &crate::cloud::proto::nebius::compute::v1::Filesystem) -> u64 {
    use crate::cloud::proto::nebius::compute::v1::filesystem_spec::Size;
    let from_status = fs.status.as_ref().map_or(0, |s| s.size_bytes);
    let from_spec = match fs.spec.as_ref().and_then(|s| s.size) {
        Some(Size::SizeBytes(b)) => b,
        Some(Size::SizeKibibytes(k)) => k << 10,
        Some(Size::SizeMebibytes(m)) => m << 20,
        Some(Size::SizeGibibytes(g)) => g << 30,
        None => 0,
    };
    u64::try_from(if from_status > 0 {
        from_status
    } else {
        from_spec
    })
    .unwrap_or(0)
}

/// What the clusters in `scope` show: their nodes and hosts from their node groups, and
/// their deployed releases.
pub fn views(core: &Core, scope: Scope<'_>) -> Vec<ClusterView> {
    let running = mk8s::cluster_status::State::Running as i32;
    let regions: HashMap<&str, &str> = core
        .state
        .projects
        .iter()
        .filter_map(|p| Some((p.id(), p.spec.as_ref()?.region.as_str())))
        .collect();
    // Every cluster: one pass over the node groups, not one lookup a cluster; named ones:
    // their own node groups, found by parent.
    let (clusters, groups): (Vec<&mk8s::Cluster>, HashMap<&str, Vec<&mk8s::NodeGroup>>) =
        match scope {
            Scope::Every => {
                let mut groups: HashMap<&str, Vec<&mk8s::NodeGroup>> = HashMap::new();
                for g in &core.state.node_groups {
                    groups.entry(g.parent_id()).or_default().push(g);
                }
                (core.state.clusters.iter().collect(), groups)
            }
            Scope::Named(ids) => {
                let clusters: Vec<&mk8s::Cluster> = ids
                    .iter()
                    .filter_map(|id| core.find::<mk8s::Cluster>(id))
                    .collect();
                let groups = clusters
                    .iter()
                    .map(|c| (c.id(), core.children::<mk8s::NodeGroup>(c.id())))
                    .collect();
                (clusters, groups)
            }
        };
    let sizes: HashMap<&str, u64> = core
        .state
        .filesystems
        .iter()
        .map(|f| (f.id(), filesystem_bytes(f)))
        .collect();
    let size_of = |id: &str| sizes.get(id).copied().unwrap_or(0);
    let mut releases = super::addons::deployed_by_cluster(core, scope);
    clusters
        .into_iter()
        .map(|cluster| {
            let region = regions
                .get(cluster.parent_id())
                .copied()
                .unwrap_or_default();
            let version = cluster
                .spec
                .as_ref()
                .and_then(|s| s.control_plane.as_ref())
                .map(|c| c.version.clone())
                .filter(|v| !v.is_empty())
                .unwrap_or_else(|| "1.31".into());
            let releases = releases.remove(cluster.id()).unwrap_or_default();
            let plugin = gpu_plugin(&releases);
            let mut hosts = Vec::new();
            let mut nodes = Vec::new();
            for g in groups.get(cluster.id()).into_iter().flatten() {
                for i in 0..node_count(g) {
                    let n = node(cluster, g, region, i, &version, plugin.as_ref());
                    hosts.push((
                        n["metadata"]["name"]
                            .as_str()
                            .unwrap_or_default()
                            .to_string(),
                        host_facts(g, &n, &size_of),
                    ));
                    nodes.push(n);
                }
            }
            ClusterView {
                releases,
                hosts,
                id: cluster.id().to_string(),
                running: cluster.status.as_ref().is_some_and(|s| s.state == running),
                version,
                nodes,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(labels: &[(&str, &str)], preset: &str, platform: &str) -> mk8s::NodeGroup {
        mk8s::NodeGroup {
            metadata: Some(crate::cloud::proto::nebius::common::v1::ResourceMetadata {
                id: "mk8snodegroup-test".into(),
                ..Default::default()
            }),
            spec: Some(mk8s::NodeGroupSpec {
                template: Some(mk8s::NodeTemplate {
                    metadata: Some(mk8s::NodeMetadataTemplate {
                        labels: labels
                            .iter()
                            .map(|(k, v)| (k.to_string(), v.to_string()))
                            .collect(),
                    }),
                    taints: vec![mk8s::NodeTaint {
                        key: "nvidia.com/gpu".into(),
                        value: "present".into(),
                        effect: mk8s::node_taint::Effect::NoSchedule as i32,
                    }],
                    resources: Some(mk8s::ResourcesSpec {
                        platform: platform.into(),
                        size: Some(mk8s::resources_spec::Size::Preset(preset.into())),
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn gpu_nodes_carry_their_gpus_or_mig_slices_and_the_template() {
        let cluster = mk8s::Cluster::default();
        const PLUGIN: Option<&GpuPlugin> = Some(&GpuPlugin { mig_mixed: true });
        let bare = node(
            &cluster,
            &group(&[], "8gpu-128vcpu-1600gb", "gpu-h200-sxm"),
            "eu-north1",
            0,
            "1.31",
            None,
        );
        // No device plugin, no GPUs advertised.
        assert!(
            bare["status"]["allocatable"]
                .get("nvidia.com/gpu")
                .is_none()
        );
        assert!(bare["metadata"]["labels"].get(GPU_PRESENT).is_none());
        let plain = node(
            &cluster,
            &group(&[("team", "render")], "8gpu-128vcpu-1600gb", "gpu-h200-sxm"),
            "eu-north1",
            0,
            "1.31",
            PLUGIN,
        );
        assert_eq!(plain["status"]["allocatable"]["nvidia.com/gpu"], "8");
        assert_eq!(plain["status"]["allocatable"]["memory"], "1600Gi");
        assert_eq!(
            plain["metadata"]["labels"]["nvidia.com/gpu.product"],
            "NVIDIA-H200"
        );
        assert_eq!(plain["metadata"]["labels"]["team"], "render");
        assert_eq!(
            plain["metadata"]["labels"][NODE_GROUP_LABEL],
            "mk8snodegroup-test"
        );
        assert_eq!(plain["spec"]["taints"][0]["effect"], "NoSchedule");
        let mig = node(
            &cluster,
            &group(
                &[(MIG_CONFIG_LABEL, "all-balanced")],
                "1gpu-24vcpu-218gb",
                "gpu-rtx6000",
            ),
            "eu-north1",
            0,
            "1.31",
            PLUGIN,
        );
        let allocatable = &mig["status"]["allocatable"];
        assert_eq!(allocatable["nvidia.com/gpu"], "0");
        assert_eq!(allocatable["nvidia.com/mig-1g.24gb"], "2");
        assert_eq!(allocatable["nvidia.com/mig-2g.48gb"], "1");
        // Names and identities are stable per group and index, and differ between indexes.
        let again = node(
            &cluster,
            &group(&[], "8gpu-128vcpu-1600gb", "gpu-h200-sxm"),
            "eu-north1",
            0,
            "1.31",
            PLUGIN,
        );
        let next = node(
            &cluster,
            &group(&[], "8gpu-128vcpu-1600gb", "gpu-h200-sxm"),
            "eu-north1",
            1,
            "1.31",
            PLUGIN,
        );
        assert_eq!(plain["metadata"]["name"], again["metadata"]["name"]);
        assert_ne!(plain["metadata"]["name"], next["metadata"]["name"]);
        assert_ne!(
            plain["status"]["nodeInfo"]["bootID"],
            next["status"]["nodeInfo"]["bootID"]
        );
    }
}
