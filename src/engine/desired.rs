//! Desired state: what each spec target needs from the Nebius API (cluster, node groups,
//! filesystem, GPU cluster) and what each project needs (network, bucket), all labelled.

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::cloud::domain::{
    AttachedFilesystem, ClusterSpec as CloudClusterSpec, Labels, NodeGroupSpec, Reservation,
};
use crate::spec::{Backend, ClusterSpec, FleetSpec, NodePoolSpec, ProjectSpec, gpus_per_node};

/// Label keys that prove fleetbot owns a resource.
pub const LABEL_MANAGED_BY: &str = "managed-by";
pub const LABEL_FLEET: &str = "fleetbot-fleet";
pub const LABEL_PROJECT_KEY: &str = "fleetbot-project-key";
pub const LABEL_CLUSTER: &str = "fleetbot-cluster";
pub const MANAGED_BY: &str = "fleetbot";

/// Boot disk of CPU nodes when the pool does not set one.
pub const DEFAULT_CPU_DISK_GIB: i64 = 128;

/// The labels of a project-level resource.
pub fn project_labels(fleet: &str, project_key: &str) -> Labels {
    [
        (LABEL_MANAGED_BY, MANAGED_BY),
        (LABEL_FLEET, fleet),
        (LABEL_PROJECT_KEY, project_key),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// The labels of a target's resources.
pub fn target_labels(fleet: &str, project_key: &str, cluster: &str) -> Labels {
    let mut labels = project_labels(fleet, project_key);
    labels.insert(LABEL_CLUSTER.into(), cluster.into());
    labels
}

/// Whether `labels` prove the resource belongs to exactly this owner (`cluster` empty for
/// project-level resources).
pub fn owned_by(labels: &Labels, fleet: &str, project_key: &str, cluster: &str) -> bool {
    let get = |k: &str| labels.get(k).map(String::as_str).unwrap_or("");
    get(LABEL_MANAGED_BY) == MANAGED_BY
        && get(LABEL_FLEET) == fleet
        && get(LABEL_PROJECT_KEY) == project_key
        && get(LABEL_CLUSTER) == cluster
}

pub(crate) fn digest_of(value: &impl Serialize) -> String {
    let bytes = serde_json::to_vec(value).expect("desired state serializes");
    hex::encode(Sha256::digest(bytes))
}

/// A target's key: `<project_key>/<cluster>`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct TargetKey {
    pub project_key: String,
    pub cluster: String,
}

impl std::fmt::Display for TargetKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.project_key, self.cluster)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DesiredBucket {
    /// The explicit name, or empty: the name is generated once the project ID is known.
    pub explicit_name: String,
    pub storage_class: String,
    pub max_size_bytes: i64,
}

/// What a project needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DesiredProject {
    pub key: String,
    /// The provider name to find or create (empty for an explicit `project_id` without a name).
    pub display_name: String,
    /// An existing project, used verbatim; never created. A runtime binding's ID when the
    /// operator gave one (see [`crate::runtime`]).
    pub project_id: String,
    /// The spec's own `project_id` (a placeholder when bound at run time): what is shown.
    pub public_id: String,
    pub region: String,
    pub bucket: Option<DesiredBucket>,
    /// Whether any selected target needs the shared project subnet.
    pub needs_subnet: bool,
    pub labels: Labels,
}

impl DesiredProject {
    /// The name to show: the display name, or the pinned ID of a project found by ID alone
    /// (as the spec writes it: a runtime binding is never shown).
    pub fn display_name_or_id(&self) -> &str {
        if self.display_name.is_empty() {
            if self.public_id.is_empty() {
                &self.project_id
            } else {
                &self.public_id
            }
        } else {
            &self.display_name
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum DesiredFilesystem {
    /// Created and owned by fleetbot.
    Create { name: String, size_gibibytes: i64 },
    /// An existing filesystem (`existing_filestore`), attached but never changed.
    Existing { id: String },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DesiredNodeGroup {
    pub name: String,
    /// Whether the group is the GPU pool's (its GPU cluster binding comes from the target).
    pub gpu: bool,
    #[serde(skip)]
    pub spec: NodeGroupSpec,
    /// The spec in a form that can be hashed (IDs resolved at apply time are left out).
    pub shape: NodeGroupShape,
}

/// The parts of a node group that are decided by the spec alone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeGroupShape {
    pub node_count: i64,
    /// An autoscaling group's minimum (`node_count` is then its maximum).
    pub autoscale_min: Option<i64>,
    pub platform: String,
    pub preset: String,
    pub boot_disk_gibibytes: i64,
    pub drivers_preset: String,
    pub preemptible: bool,
    pub reservation: Option<(String, Vec<String>)>,
    pub mount_tag: String,
    pub cloud_init_digest: String,
    pub node_labels: Labels,
}

/// What one `(project, cluster)` target needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DesiredTarget {
    pub key: TargetKey,
    /// The adapter that owns the target (recorded in the inventory; ownership is checked).
    #[serde(skip)]
    pub backend: Backend,
    pub region: String,
    pub k8s_version: String,
    /// An explicit `subnet_id`, else empty (the shared project subnet).
    pub subnet_id: String,
    pub filesystem: Option<DesiredFilesystem>,
    /// `(name, fabric)` when a GPU cluster is needed.
    pub gpu_cluster: Option<(String, String)>,
    pub node_groups: Vec<DesiredNodeGroup>,
    /// What is installed inside the cluster once it runs.
    pub addons: Vec<crate::engine::addons::DesiredAddon>,
    pub labels: Labels,
    /// Hash of everything above: changes exactly when the desired state does.
    pub digest: String,
}

/// Cloud-init that mounts the shared filesystem at boot, `nofail` so a missing mount never
/// blocks a node from joining, and installs the SSH key when there is one.
pub fn cloud_init(mount: Option<(&str, &str)>, ssh_public_key: &str) -> String {
    let mut out = String::from("#cloud-config\n");
    if !ssh_public_key.trim().is_empty() {
        out.push_str("users:\n  - name: ubuntu\n    sudo: ALL=(ALL) NOPASSWD:ALL\n    shell: /bin/bash\n    ssh_authorized_keys:\n");
        out.push_str(&format!("      - {}\n", ssh_public_key.trim()));
    }
    if let Some((tag, path)) = mount {
        out.push_str(&format!(
            "bootcmd:\n  - [mkdir, -p, \"{path}\"]\nmounts:\n  - [\"{tag}\", \"{path}\", virtiofs, \"defaults,nofail\", \"0\", \"2\"]\n"
        ));
    }
    out
}

/// The GPU node-group layout (fleet-engine §10.2): `count` nodes in one group, except a
/// reserved multi-node pool without a GPU cluster, which gets one group per node so a stuck
/// reservation slot does not hold up its siblings.
pub fn gpu_layout(count: i64, reserved: bool, gpu_cluster: bool) -> (i64, i64) {
    if reserved && count > 1 && !gpu_cluster {
        (count, 1)
    } else {
        (1, count)
    }
}

fn desired_filesystem(cluster: &ClusterSpec) -> Option<DesiredFilesystem> {
    if !cluster.enable_filestore {
        return None;
    }
    Some(if cluster.existing_filestore.is_empty() {
        DesiredFilesystem::Create {
            name: format!("{}-shared-fs", cluster.name),
            size_gibibytes: cluster.filestore_disk_size_gibibytes,
        }
    } else {
        DesiredFilesystem::Existing {
            id: cluster.existing_filestore.clone(),
        }
    })
}

/// The GPU cluster's name and fabric, when the target has one.
fn desired_gpu_cluster(cluster: &ClusterSpec) -> Option<(String, String)> {
    cluster.resolved_enable_gpu_cluster().then(|| {
        (
            format!(
                "{}-{}",
                cluster.name,
                crate::spec::names::slug(&cluster.infiniband_fabric)
            ),
            cluster.infiniband_fabric.clone(),
        )
    })
}

impl DesiredNodeGroup {
    pub(crate) fn new(
        name: String,
        gpu: bool,
        shape: NodeGroupShape,
        cloud_init: &str,
    ) -> DesiredNodeGroup {
        let spec = NodeGroupSpec {
            node_count: shape.node_count,
            autoscale_min: shape.autoscale_min,
            platform: shape.platform.clone(),
            preset: shape.preset.clone(),
            boot_disk_gibibytes: shape.boot_disk_gibibytes,
            gpu_cluster_id: String::new(),
            drivers_preset: shape.drivers_preset.clone(),
            filesystems: Vec::new(),
            cloud_init_user_data: cloud_init.to_string(),
            preemptible: shape.preemptible,
            reservation: shape.reservation.as_ref().map(|(policy, ids)| Reservation {
                policy: policy.clone(),
                capacity_block_group_ids: ids.clone(),
            }),
            subnet_id: String::new(),
            public_ip: false,
            node_labels: shape.node_labels.clone(),
        };
        DesiredNodeGroup {
            name,
            gpu,
            spec,
            shape,
        }
    }
}

/// What every node group of a target shares: its filesystem mount and its cloud-init.
struct NodeBoot {
    mount_tag: String,
    cloud_init: String,
    cloud_init_digest: String,
}

fn cpu_group(cluster: &ClusterSpec, cpu: &NodePoolSpec, boot: &NodeBoot) -> DesiredNodeGroup {
    let shape = NodeGroupShape {
        node_count: cpu.count,
        autoscale_min: None,
        platform: cpu.platform.clone(),
        preset: cpu.preset.clone(),
        boot_disk_gibibytes: if cpu.disk_size_gib > 0 {
            cpu.disk_size_gib
        } else {
            DEFAULT_CPU_DISK_GIB
        },
        drivers_preset: String::new(),
        preemptible: false,
        reservation: None,
        mount_tag: boot.mount_tag.clone(),
        cloud_init_digest: boot.cloud_init_digest.clone(),
        node_labels: Labels::new(),
    };
    DesiredNodeGroup::new(
        format!("{}-ng-cpu", cluster.name),
        false,
        shape,
        &boot.cloud_init,
    )
}

fn gpu_groups(cluster: &ClusterSpec, gpu: &NodePoolSpec, boot: &NodeBoot) -> Vec<DesiredNodeGroup> {
    let driver = cluster.driver_selection();
    let reserved = !gpu.capacity_block_group.is_empty();
    let (groups, per_group) =
        gpu_layout(gpu.count, reserved, cluster.resolved_enable_gpu_cluster());
    let mut node_labels = Labels::new();
    if cluster.mig_enabled() {
        node_labels.insert(
            "nvidia.com/mig.config".into(),
            crate::spec::mig_pins::CONFIG.into(),
        );
    }
    // gpus_per_node is validated positive for GPU pools; keep the link explicit.
    debug_assert!(gpus_per_node(&gpu.preset) > 0);
    (0..groups)
        .map(|i| {
            let shape = NodeGroupShape {
                node_count: per_group,
                autoscale_min: None,
                platform: gpu.platform.clone(),
                preset: gpu.preset.clone(),
                boot_disk_gibibytes: cluster.resolved_gpu_disk_size_gib(),
                drivers_preset: if driver.uses_managed_image() {
                    driver.managed_driver_preset.clone()
                } else {
                    String::new()
                },
                preemptible: gpu.preemptible,
                reservation: reserved
                    .then(|| ("STRICT".to_string(), vec![gpu.capacity_block_group.clone()])),
                mount_tag: boot.mount_tag.clone(),
                cloud_init_digest: boot.cloud_init_digest.clone(),
                node_labels: node_labels.clone(),
            };
            DesiredNodeGroup::new(
                format!("{}-ng-gpu-{i}", cluster.name),
                true,
                shape,
                &boot.cloud_init,
            )
        })
        .collect()
}

fn node_boot(cluster: &ClusterSpec, ssh_public_key: &str) -> NodeBoot {
    let mount = cluster.enable_filestore.then_some((
        cluster.filestore_mount_tag.as_str(),
        cluster.filestore_mount_path.as_str(),
    ));
    let cloud_init = cloud_init(mount, ssh_public_key);
    NodeBoot {
        mount_tag: mount.map(|(tag, _)| tag.to_string()).unwrap_or_default(),
        cloud_init_digest: hex::encode(Sha256::digest(cloud_init.as_bytes())),
        cloud_init,
    }
}

/// Builds the desired state of one mk8s target.
pub fn desired_target(
    fleet: &str,
    project: &ProjectSpec,
    cluster: &ClusterSpec,
    fleet_region: &str,
    ssh_public_key: &str,
) -> DesiredTarget {
    let key = TargetKey {
        project_key: project.key(),
        cluster: cluster.name.clone(),
    };
    let boot = node_boot(cluster, ssh_public_key);
    let mut node_groups = Vec::new();
    if let Some(cpu) = cluster.cpu_nodes.as_ref().filter(|p| p.count > 0) {
        node_groups.push(cpu_group(cluster, cpu, &boot));
    }
    if let Some(gpu) = cluster.gpu_nodes.as_ref().filter(|p| p.count > 0) {
        node_groups.extend(gpu_groups(cluster, gpu, &boot));
    }
    let mut target = DesiredTarget {
        backend: Backend::Mk8s,
        labels: target_labels(fleet, &key.project_key, &key.cluster),
        key,
        region: project.effective_region(fleet_region).to_string(),
        k8s_version: cluster.resolved_k8s_version(),
        subnet_id: cluster.subnet_id.clone(),
        filesystem: desired_filesystem(cluster),
        gpu_cluster: desired_gpu_cluster(cluster),
        node_groups,
        addons: crate::engine::addons::desired_addons(cluster),
        digest: String::new(),
    };
    target.digest = digest_of(&target);
    target
}

impl DesiredTarget {
    /// The control-plane spec once the subnet is known.
    pub fn cluster_spec(&self, subnet_id: &str) -> CloudClusterSpec {
        CloudClusterSpec {
            k8s_version: self.k8s_version.clone(),
            subnet_id: subnet_id.to_string(),
            public_endpoint: true,
        }
    }

    /// A node group's full spec once the filesystem, GPU cluster and subnet are known.
    pub fn node_group_spec(
        &self,
        group: &DesiredNodeGroup,
        filesystem_id: &str,
        gpu_cluster_id: &str,
        subnet_id: &str,
    ) -> NodeGroupSpec {
        let mut spec = group.spec.clone();
        if !filesystem_id.is_empty() {
            spec.filesystems = vec![AttachedFilesystem {
                filesystem_id: filesystem_id.to_string(),
                mount_tag: group.shape.mount_tag.clone(),
                read_write: true,
            }];
        }
        if group.gpu {
            spec.gpu_cluster_id = gpu_cluster_id.to_string();
        }
        spec.subnet_id = subnet_id.to_string();
        spec
    }

    /// A digest of one resource's desired shape, for idempotency keys.
    pub fn resource_digest(value: &impl Serialize) -> String {
        digest_of(value)[..16].to_string()
    }
}

/// The generated bucket name (fleet-engine §2.11): `npa-fleet-` and 32 hex characters of
/// `sha256(tenant \0 project \0 fleet)`, kept so buckets of fleets moved from `npa fleet` are
/// found again.
pub fn generated_bucket_name(tenant_id: &str, project_id: &str, fleet: &str) -> String {
    let digest = Sha256::digest(format!("{tenant_id}\0{project_id}\0{fleet}").as_bytes());
    format!("npa-fleet-{}", &hex::encode(digest)[..32])
}

/// The desired projects of the selected targets, in spec order.
pub fn desired_projects(
    spec: &FleetSpec,
    selected: &[(usize, usize)],
    prefix: &str,
) -> Vec<(usize, DesiredProject)> {
    let mut out: Vec<(usize, DesiredProject)> = Vec::new();
    for &(p, c) in selected {
        let project = &spec.projects[p];
        let cluster = &project.clusters[c];
        // Soperator targets carry no subnet of their own: identity is the envelope's.
        let needs_subnet = cluster.backend == Backend::Soperator || cluster.subnet_id.is_empty();
        if let Some((_, existing)) = out.iter_mut().find(|(i, _)| *i == p) {
            existing.needs_subnet |= needs_subnet;
            continue;
        }
        let key = project.key();
        out.push((
            p,
            DesiredProject {
                labels: project_labels(&spec.name, &key),
                key,
                display_name: if project.name.is_empty() {
                    String::new()
                } else {
                    project.display_name(prefix)
                },
                project_id: project.cloud_project_id().to_string(),
                public_id: project.project_id.clone(),
                region: project.effective_region(&spec.region).to_string(),
                bucket: project
                    .object_storage
                    .as_ref()
                    .filter(|s| s.enabled)
                    .map(|s| DesiredBucket {
                        explicit_name: s.bucket_name.clone(),
                        storage_class: s.normalized_storage_class(),
                        max_size_bytes: s.size_gibibytes.saturating_mul(1 << 30),
                    }),
                needs_subnet,
            },
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::load_str;

    fn spec(defaults: &str) -> FleetSpec {
        load_str(
            &format!("apiVersion: npa.fleet/v0.0.1\nname: f\nregion: us-central1\ndefaults:\n{defaults}projects:\n  - name: a\n"),
            "f.yaml",
        )
        .unwrap()
    }

    #[test]
    fn node_groups_follow_the_recipe_layout() {
        let s = spec(
            "  cpu_nodes: {count: 2, preset: 16vcpu-64gb}\n  gpu_nodes: {count: 3, platform: gpu-rtx6000, preset: 8gpu-192vcpu-1744gb, capacity_block_group: cbg}\n  enable_gpu_cluster: false\n",
        );
        let t = desired_target(
            "f",
            &s.projects[0],
            &s.projects[0].clusters[0],
            "us-central1",
            "",
        );
        let names: Vec<_> = t.node_groups.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "cluster-ng-cpu",
                "cluster-ng-gpu-0",
                "cluster-ng-gpu-1",
                "cluster-ng-gpu-2"
            ]
        );
        assert!(t.node_groups[1..].iter().all(|g| g.shape.node_count == 1));
        assert_eq!(t.node_groups[0].shape.boot_disk_gibibytes, 128);
        assert_eq!(t.node_groups[1].shape.boot_disk_gibibytes, 1023);
        assert_eq!(
            t.node_groups[1].shape.reservation.as_ref().unwrap().0,
            "STRICT"
        );
        // Operator mode is not forced here; auto with GPUs means the managed image.
        assert_eq!(t.node_groups[1].shape.drivers_preset, "cuda13.0");
    }

    #[test]
    fn fabric_pools_keep_one_group_and_get_a_gpu_cluster() {
        let s = spec(
            "  gpu_nodes: {count: 2, platform: gpu-h200-sxm, preset: 8gpu-128vcpu-1600gb}\n  infiniband_fabric: fabric-3\n",
        );
        let t = desired_target(
            "f",
            &s.projects[0],
            &s.projects[0].clusters[0],
            "us-central1",
            "",
        );
        assert_eq!(t.node_groups.len(), 1);
        assert_eq!(t.node_groups[0].shape.node_count, 2);
        assert_eq!(
            t.gpu_cluster,
            Some(("cluster-fabric-3".into(), "fabric-3".into()))
        );
    }

    #[test]
    fn filesystem_mount_goes_through_cloud_init_with_nofail() {
        let s = spec(
            "  cpu_nodes: {count: 1, preset: 16vcpu-64gb}\n  enable_filestore: true\n  filestore_mount_tag: npa-shared-fs\n",
        );
        let t = desired_target(
            "f",
            &s.projects[0],
            &s.projects[0].clusters[0],
            "us-central1",
            "ssh-ed25519 AAAA test",
        );
        let init = &t.node_groups[0].spec.cloud_init_user_data;
        assert!(
            init.contains("[\"npa-shared-fs\", \"/mnt/data\", virtiofs, \"defaults,nofail\""),
            "{init}"
        );
        assert!(init.contains("ssh-ed25519 AAAA test"));
        assert!(matches!(
            t.filesystem,
            Some(DesiredFilesystem::Create {
                size_gibibytes: 1024,
                ..
            })
        ));
    }

    #[test]
    fn digest_changes_exactly_with_the_desired_state() {
        let a = spec("  cpu_nodes: {count: 1, preset: 16vcpu-64gb}\n");
        let b = spec("  cpu_nodes: {count: 2, preset: 16vcpu-64gb}\n");
        let da = desired_target("f", &a.projects[0], &a.projects[0].clusters[0], "r", "");
        let da2 = desired_target("f", &a.projects[0], &a.projects[0].clusters[0], "r", "");
        let db = desired_target("f", &b.projects[0], &b.projects[0].clusters[0], "r", "");
        assert_eq!(da.digest, da2.digest);
        assert_ne!(da.digest, db.digest);
    }

    #[test]
    fn ownership_labels() {
        let l = target_labels("f", "a", "c");
        assert!(owned_by(&l, "f", "a", "c"));
        assert!(!owned_by(&l, "f", "a", "other"));
        assert!(!owned_by(&l, "g", "a", "c"));
        assert!(!owned_by(&Labels::new(), "f", "a", "c"));
        assert!(owned_by(&project_labels("f", "a"), "f", "a", ""));
    }

    #[test]
    fn generated_bucket_name_matches_reference_formula() {
        let name = generated_bucket_name("t", "p", "f");
        assert!(name.starts_with("npa-fleet-"));
        assert_eq!(name.len(), "npa-fleet-".len() + 32);
        assert_eq!(name, generated_bucket_name("t", "p", "f"));
    }
}
