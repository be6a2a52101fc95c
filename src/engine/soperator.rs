//! Soperator (Slurm on Kubernetes) targets in API terms, as the public solution recipe
//! (`nebius-solution-library/soperator/modules/{k8s,filestore}`) builds them: one mk8s cluster;
//! node groups `<name>-system` (autoscaling), `<name>-controller`, `<name>-login`, and one
//! `<name>-worker-<pool>` per worker pool; the shared root filesystem (the jail) attached to
//! every node; a GPU cluster on the GPU pools' fabric; the GPU Operator release when a pool has
//! GPUs; and the Slurm layer (the operator and its `SlurmCluster`) as pinned manifests.
//!
//! The recipe installs the Slurm layer through Flux from soperator's Helm charts, not through
//! the Nebius API; fleetbot applies its own rendering of it (see docs/addons.md). Pieces with
//! no mapping are refused before any mutation by [`unmapped`].

use serde_json::json;
use sha2::{Digest, Sha256};

use crate::cloud::domain::Labels;
use crate::engine::addons::{self, DesiredAddon, Install, Promise};
use crate::engine::desired::{
    DesiredFilesystem, DesiredNodeGroup, DesiredTarget, NodeGroupShape, TargetKey, cloud_init,
    digest_of, target_labels,
};
use crate::spec::soperator::{SoperatorSpec, WorkerPoolSpec};
use crate::spec::{ClusterSpec, NodePoolSpec, ProjectSpec};

/// Where the jail is mounted on every node, and its mount tag.
pub const JAIL_MOUNT_PATH: &str = "/mnt/jail";
pub const JAIL_MOUNT_TAG: &str = "jail";
/// Boot disk of the control-plane node groups.
const CONTROL_PLANE_DISK_GIB: i64 = 128;
/// The platform of the control-plane roles (the recipe's presets are cpu-d3's).
const CONTROL_PLANE_PLATFORM: &str = "cpu-d3";
/// The namespace of the Slurm layer.
pub const SLURM_NAMESPACE: &str = "soperator";

/// What fleetbot cannot map to the API for this target, each with why. Non-empty refuses the
/// target before any mutation.
pub fn unmapped(s: &SoperatorSpec) -> Vec<String> {
    let mut out = Vec::new();
    if s.accounting {
        out.push("accounting: the Slurm accounting database runs on the MariaDB operator, which the recipe installs through Flux; fleetbot installs no MariaDB operator".into());
    }
    if s.telemetry {
        out.push("telemetry: the recipe's telemetry stack (VictoriaMetrics, OpenTelemetry) is installed through Flux, not the Nebius API; fleetbot does not install it".into());
    }
    if s.slurm_rest_enabled == Some(true) {
        out.push(
            "slurm_rest_enabled: Slurm REST needs accounting, which fleetbot does not install"
                .into(),
        );
    }
    for w in &s.workers {
        if !w.capacity_block_group_name.is_empty() {
            out.push(format!("worker pool {}: capacity_block_group_name: a capacity block is bound by ID in the API; give capacity_block_group", w.name));
        }
    }
    let fabrics: std::collections::BTreeSet<&str> = s
        .workers
        .iter()
        .filter(|w| w.is_gpu())
        .map(|w| w.fabric.as_str())
        .collect();
    if fabrics.len() > 1 {
        out.push("worker pools on more than one InfiniBand fabric: fleetbot makes one GPU cluster per target".into());
    }
    out
}

fn group(name: String, gpu: bool, shape: NodeGroupShape, cloud_init: &str) -> DesiredNodeGroup {
    DesiredNodeGroup::new(name, gpu, shape, cloud_init)
}

fn cpu_shape(count: i64, preset: String, boot: (&str, &str)) -> NodeGroupShape {
    NodeGroupShape {
        node_count: count,
        autoscale_min: None,
        platform: CONTROL_PLANE_PLATFORM.into(),
        preset,
        boot_disk_gibibytes: CONTROL_PLANE_DISK_GIB,
        drivers_preset: String::new(),
        preemptible: false,
        reservation: None,
        mount_tag: boot.0.into(),
        cloud_init_digest: boot.1.into(),
        node_labels: Labels::new(),
    }
}

fn worker_shape(w: &WorkerPoolSpec, boot: (&str, &str)) -> NodeGroupShape {
    let mut labels = Labels::new();
    labels.insert("slurm.nebius.ai/nodeset".into(), w.name.clone());
    NodeGroupShape {
        node_count: w.size,
        autoscale_min: None,
        platform: w.platform.clone(),
        preset: w.preset.clone(),
        boot_disk_gibibytes: w.boot_disk_gib,
        drivers_preset: String::new(),
        preemptible: w.preemptible,
        reservation: (!w.capacity_block_group.is_empty())
            .then(|| ("STRICT".to_string(), vec![w.capacity_block_group.clone()])),
        mount_tag: boot.0.into(),
        cloud_init_digest: boot.1.into(),
        node_labels: labels,
    }
}

/// The `SlurmCluster` custom resource the spec describes.
fn slurm_cluster(s: &SoperatorSpec) -> serde_json::Value {
    let workers: Vec<serde_json::Value> = s
        .workers
        .iter()
        .map(|w| {
            let mut set = json!({
                "name": w.name,
                "size": w.size,
                "nodeSelector": {"slurm.nebius.ai/nodeset": w.name},
            });
            if w.docker_cache {
                // The docker cache is a per-pod volume on the disk CSI, not a node disk.
                set["dockerCache"] = json!({
                    "storageClassName": addons::DISK_STORAGE_CLASS,
                    "size": format!("{}Gi", w.docker_cache_gib),
                    "diskType": w.docker_cache_disk_type,
                });
            }
            set
        })
        .collect();
    json!({
        "apiVersion": "slurm.nebius.ai/v1",
        "kind": "SlurmCluster",
        "metadata": {"name": s.name, "namespace": SLURM_NAMESPACE,
            "labels": {"app.kubernetes.io/managed-by": "fleetbot"}},
        "spec": {
            "slurmOperatorVersion": s.slurm_operator_version,
            "jail": {"mountPath": JAIL_MOUNT_PATH, "sizeGibibytes": s.jail_size_gib},
            "useDefaultAppArmorProfile": s.use_default_apparmor_profile,
            "nodeSets": workers,
            "login": {"enabled": true},
        },
    })
}

/// The Slurm layer's manifests: the operator at the pinned version, then the cluster.
pub fn slurm_documents(s: &SoperatorSpec) -> String {
    let operator = addons::SOPERATOR_MANIFESTS.replace("__VERSION__", &s.slurm_operator_version);
    let cluster = serde_yaml::to_string(&slurm_cluster(s)).unwrap_or_default();
    format!("{operator}\n---\n{cluster}")
}

/// The desired state of one soperator target; `Err` names what cannot be mapped.
pub fn soperator_target(
    fleet: &str,
    project: &ProjectSpec,
    cluster: &ClusterSpec,
    s: &SoperatorSpec,
    fleet_region: &str,
    ssh_public_key: &str,
) -> Result<DesiredTarget, Vec<String>> {
    let refused = unmapped(s);
    if !refused.is_empty() {
        return Err(refused);
    }
    let key = TargetKey {
        project_key: project.key(),
        cluster: cluster.name.clone(),
    };
    let ssh = if s.root_login_ssh_public_key.is_empty() {
        s.ssh_public_keys
            .first()
            .map_or(ssh_public_key, String::as_str)
    } else {
        s.root_login_ssh_public_key.as_str()
    };
    let init = cloud_init(Some((JAIL_MOUNT_TAG, JAIL_MOUNT_PATH)), ssh);
    let init_digest = hex::encode(Sha256::digest(init.as_bytes()));
    let boot = (JAIL_MOUNT_TAG, init_digest.as_str());
    let name = &s.name;
    let mut system = cpu_shape(s.effective_system_max_size(), s.role_preset("system"), boot);
    system.autoscale_min = Some(s.system_min_size);
    let mut node_groups = vec![
        group(format!("{name}-system"), false, system, &init),
        group(
            format!("{name}-controller"),
            false,
            cpu_shape(1, s.role_preset("controller"), boot),
            &init,
        ),
        group(
            format!("{name}-login"),
            false,
            cpu_shape(1, s.role_preset("login"), boot),
            &init,
        ),
    ];
    for w in &s.workers {
        node_groups.push(group(
            format!("{name}-worker-{}", w.name),
            w.is_gpu(),
            worker_shape(w, boot),
            &init,
        ));
    }
    let gpu_pool = s.workers.iter().find(|w| w.is_gpu());
    let mut target_addons = Vec::new();
    if let Some(pool) = gpu_pool {
        // The GPU Operator with fleetbot's pinned values, as for an mk8s `operator` cluster.
        let as_mk8s = ClusterSpec {
            gpu_driver_mode: "operator".into(),
            gpu_nodes: Some(NodePoolSpec {
                count: s
                    .workers
                    .iter()
                    .filter(|w| w.is_gpu())
                    .map(|w| w.size)
                    .sum(),
                platform: pool.platform.clone(),
                preset: pool.preset.clone(),
                ..NodePoolSpec::default()
            }),
            ..ClusterSpec::default()
        };
        target_addons.extend(
            addons::desired_addons(&as_mk8s)
                .into_iter()
                .filter(|a| a.name == "gpu-operator"),
        );
    }
    target_addons.push(DesiredAddon::from_parts(
        "soperator",
        Install::Manifests {
            documents: slurm_documents(s),
        },
        vec![Promise::SlurmCluster {
            namespace: SLURM_NAMESPACE.into(),
            name: name.clone(),
        }],
    ));
    let mut target = DesiredTarget {
        backend: crate::spec::Backend::Soperator,
        labels: target_labels(fleet, &key.project_key, &key.cluster),
        key,
        region: project.effective_region(fleet_region).to_string(),
        k8s_version: s.k8s_version.clone(),
        subnet_id: String::new(),
        filesystem: Some(DesiredFilesystem::Create {
            name: format!("{name}-jail"),
            size_gibibytes: s.jail_size_gib,
        }),
        gpu_cluster: gpu_pool.map(|p| {
            (
                format!("{name}-{}", crate::spec::names::slug(&p.fabric)),
                p.fabric.clone(),
            )
        }),
        node_groups,
        addons: target_addons,
        digest: String::new(),
    };
    target.digest = digest_of(&target);
    Ok(target)
}
