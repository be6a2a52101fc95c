//! An mk8s cluster from its merged mapping: every field strictly typed with the reference's
//! default, node pools, the feature blocks, and the GPU workload profile applied last.

use super::blocks::{kuberay_from, mig_from};
use super::reader::{Reader, join, slug_or_cluster};
use crate::spec::error::SpecError;
use crate::spec::model::*;
use crate::spec::yaml::{Entry, Node, Pos, Value};

/// Keys allowed inside an explicit `mk8s:` envelope.
pub const MK8S_ENVELOPE_FIELDS: &[&str] = &[
    "name",
    "k8s_version",
    "cpu_nodes",
    "gpu_nodes",
    "enable_gpu_cluster",
    "infiniband_fabric",
    "enable_filestore",
    "existing_filestore",
    "filestore_disk_size_gibibytes",
    "gpu_disk_size_gib",
    "subnet_id",
    "filestore_mount_path",
    "filestore_mount_tag",
    "filesystem_csi_chart_repository",
    "gpu_driver_mode",
    "managed_driver_preset",
    "allow_unsafe_nvswitch_operator",
    "gpu_health_stabilization_seconds",
    "gpu_health_timeout_minutes",
    "gpu_cuda_smoke",
    "gpu_cuda_smoke_image",
    "gpu_workload_profile",
    "gpu_driver_package_repositories",
    "mig",
    "kuberay",
];

/// Keys allowed in a node pool inside an explicit `mk8s:` envelope.
pub const POOL_FIELDS: &[&str] = &[
    "count",
    "platform",
    "preset",
    "disk_size_gib",
    "capacity_block_group",
    "preemptible",
];

/// Records the unknown keys of the `cpu_nodes` and `gpu_nodes` mappings in `entries` (a
/// flat cluster's or the defaults'), which nothing refuses outside an explicit envelope.
pub(super) fn warn_unknown_pools(r: &Reader<'_>, entries: &[Entry], path: &str) {
    for e in entries {
        if matches!(e.key.as_str(), "cpu_nodes" | "gpu_nodes")
            && let Some(pool) = e.value.as_map()
        {
            r.warn_unknown(pool, &join(path, &e.key), &[POOL_FIELDS]);
        }
    }
}

/// An explicit envelope is checked strictly, pools included; flat fields are not (the
/// reference ignores what it does not read there).
pub(super) fn check_envelope(
    r: &Reader<'_>,
    pos: Pos,
    entries: &[Entry],
    epath: &str,
) -> Result<(), SpecError> {
    r.refuse_unknown(entries, MK8S_ENVELOPE_FIELDS, pos, epath, |unknown| {
        format!("cluster.mk8s has unsupported field(s): {unknown}")
    })?;
    let f = r.fields(entries, epath);
    for pool_name in ["cpu_nodes", "gpu_nodes"] {
        let Some(pool) = f.get(pool_name).filter(|n| !n.is_null()) else {
            continue;
        };
        let ppath = f.path(pool_name);
        let Some(pool_entries) = pool.as_map() else {
            return Err(r.error(
                pool.pos,
                &ppath,
                format!("cluster.mk8s.{pool_name} must be a mapping"),
            ));
        };
        r.refuse_unknown(pool_entries, POOL_FIELDS, pool.pos, &ppath, |unknown| {
            format!("cluster.mk8s.{pool_name} has unsupported field(s): {unknown}")
        })?;
    }
    Ok(())
}

/// `_cluster_from` plus the RTX workload profile that the reference applies at construction.
pub(super) fn mk8s_cluster_from(
    r: &Reader<'_>,
    merged: &[Entry],
    pos: Pos,
    cpath: &str,
    backend_explicit: bool,
) -> Result<ClusterSpec, SpecError> {
    let f = r.fields(merged, cpath);
    let name = slug_or_cluster(&f.string("name", "cluster", "None")?);
    let mig = mig_from(r, f.get("mig"), &f.path("mig"))?;
    let kuberay = kuberay_from(r, f.get("kuberay"), &f.path("kuberay"))?;
    let enable_gpu_cluster = match f.get("enable_gpu_cluster") {
        Some(n) if !n.is_null() => Some(f.boolean("enable_gpu_cluster", false)?),
        _ => None,
    };
    let (repos, repos_invalid) = driver_repositories(f.get("gpu_driver_package_repositories"));
    let pool = |key: &str, platform: &str| pool_from(r, f.get(key), &f.path(key), platform);
    let mut cluster = ClusterSpec {
        name,
        k8s_version: f.string("k8s_version", "", "")?,
        cpu_nodes: pool("cpu_nodes", DEFAULT_CPU_PLATFORM)?,
        gpu_nodes: pool("gpu_nodes", DEFAULT_GPU_PLATFORM)?,
        enable_gpu_cluster,
        infiniband_fabric: f.string("infiniband_fabric", "", "")?,
        enable_filestore: f.boolean("enable_filestore", false)?,
        existing_filestore: f.string("existing_filestore", "", "")?,
        filestore_disk_size_gibibytes: f.integer("filestore_disk_size_gibibytes", 1024, None)?,
        gpu_disk_size_gib: f.integer("gpu_disk_size_gib", 1023, None)?,
        subnet_id: f.string("subnet_id", "", "")?,
        filestore_mount_path: f.string("filestore_mount_path", "/mnt/data", "")?,
        filestore_mount_tag: f.string("filestore_mount_tag", "data", "")?,
        filesystem_csi_chart_repository: f.trimmed("filesystem_csi_chart_repository")?,
        gpu_driver_mode: f.non_empty("gpu_driver_mode", "auto")?,
        managed_driver_preset: f
            .non_empty("managed_driver_preset", DEFAULT_MANAGED_DRIVER_PRESET)?,
        allow_unsafe_nvswitch_operator: f.boolean("allow_unsafe_nvswitch_operator", false)?,
        gpu_health_stabilization_seconds: f.integer(
            "gpu_health_stabilization_seconds",
            DEFAULT_STABILIZATION_SECONDS,
            None,
        )?,
        gpu_health_timeout_minutes: f.integer(
            "gpu_health_timeout_minutes",
            DEFAULT_GPU_HEALTH_TIMEOUT_MINUTES,
            None,
        )?,
        gpu_cuda_smoke: f.boolean("gpu_cuda_smoke", true)?,
        gpu_cuda_smoke_image: f.non_empty("gpu_cuda_smoke_image", DEFAULT_CUDA_SMOKE_IMAGE)?,
        gpu_workload_profile: f.string("gpu_workload_profile", "", "")?,
        gpu_driver_package_repositories: repos,
        gpu_driver_package_repositories_invalid: repos_invalid,
        carries_soperator: f
            .get("soperator")
            .is_some_and(|n| matches!(n.value, Value::Map(_)) && n.is_truthy()),
        mig,
        kuberay,
        backend: Backend::Mk8s,
        backend_explicit,
        positions: r.positions_of(merged, pos, cpath, 1),
        // Named rather than `..ClusterSpec::default()`: that would allocate each default
        // string above only to drop it, for every cluster of the fleet.
        soperator: None,
        allow_control_plane_only: false,
        gpu_graphics_smoke: false,
        gpu_graphics_smoke_image: DEFAULT_GRAPHICS_SMOKE_IMAGE.to_string(),
    };
    crate::spec::profile::apply_workload_profile(&mut cluster).map_err(|msg| {
        r.error(
            cluster.positions.of("gpu_workload_profile"),
            &f.path("gpu_workload_profile"),
            msg,
        )
    })?;
    Ok(cluster)
}

/// `gpu_driver_package_repositories`: name to URL; a value that is not a string reads as
/// empty, and a whole that is not a mapping is flagged for validation to report.
fn driver_repositories(node: Option<&Node>) -> (Vec<(String, String)>, bool) {
    match node.map(|n| &n.value) {
        None => (Vec::new(), false),
        Some(Value::Map(entries)) => (
            entries
                .iter()
                .map(|e| match &e.value.value {
                    Value::Str(s) => (e.key.clone(), s.clone()),
                    _ => (e.key.clone(), String::new()),
                })
                .collect(),
            false,
        ),
        Some(_) => (Vec::new(), true),
    }
}

fn pool_from(
    r: &Reader<'_>,
    node: Option<&Node>,
    path: &str,
    default_platform: &str,
) -> Result<Option<NodePoolSpec>, SpecError> {
    let Some(node) = node.filter(|n| n.is_truthy()) else {
        return Ok(None);
    };
    let Some(e) = node.as_map() else {
        return Err(r.type_error(node, path, "a mapping"));
    };
    let f = r.fields(e, path);
    Ok(Some(NodePoolSpec {
        count: f.integer("count", 0, None)?,
        platform: f.string("platform", default_platform, "")?,
        preset: f.string("preset", "", "")?,
        disk_size_gib: f.integer("disk_size_gib", 0, Some(0))?,
        capacity_block_group: f.trimmed("capacity_block_group")?,
        preemptible: f.boolean("preemptible", false)?,
    }))
}
