//! Spec validation in the reference order, with its message texts, located at the offending value.

use std::collections::HashSet;
use std::sync::LazyLock;

use regex::Regex;

use super::error::SpecError;
use super::model::*;
use super::names::{is_dns_name, py_isspace, py_repr, slug};
use super::profile::validate_driver_package_repositories;

static CPU_PLATFORM: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^cpu-[a-z0-9-]+$").expect("static regex"));
static CPU_NODE_PRESET: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?P<cpus>[1-9][0-9]*)vcpu-(?P<memory>[1-9][0-9]*)gb$").expect("static regex")
});
/// `mk8s_model.py` `_DNS_LABEL`.
static MODEL_DNS_LABEL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$").expect("static regex"));
static DRIVER_PRESET: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[A-Za-z0-9][A-Za-z0-9._-]*$").expect("static regex"));

/// A validation failure before it is located in the document.
struct Issue {
    field: &'static str,
    message: String,
}

fn issue(field: &'static str, message: impl Into<String>) -> Issue {
    Issue {
        field,
        message: message.into(),
    }
}

/// `FleetSpec.validate`: fleet name, at least one project, each project, unique project keys,
/// fleet-wide unique soperator names.
pub fn validate_fleet(spec: &FleetSpec) -> Result<(), SpecError> {
    let file = spec.source.as_str();
    let top = |field: &str, message: String| {
        SpecError::new(
            file,
            Some(spec.positions.of(field)),
            spec.positions.path_of(field).as_str(),
            message,
        )
    };
    if !is_dns_name(&spec.name) {
        return Err(top(
            "name",
            format!(
                "fleet name must be a lowercase DNS-1123 label: {}",
                py_repr(&spec.name)
            ),
        ));
    }
    if spec.projects.is_empty() {
        return Err(top("projects", "at least one project is required".into()));
    }
    let mut keys = HashSet::new();
    let mut soperator_names = HashSet::new();
    for project in &spec.projects {
        validate_project(file, project)?;
        let key = project.key();
        if !keys.insert(key.clone()) {
            return Err(SpecError::new(
                file,
                Some(project.positions.of("name")),
                &project.positions.path,
                format!("duplicate project key: {}", py_repr(&key)),
            ));
        }
        for cluster in &project.clusters {
            if cluster.backend != Backend::Soperator {
                continue;
            }
            if !soperator_names.insert(cluster.name.clone()) {
                return Err(SpecError::new(
                    file,
                    Some(cluster.positions.of("name")),
                    &cluster.positions.path,
                    format!(
                        "duplicate soperator cluster name {} across fleet; soperator physical/context identity must be fleet-wide unique",
                        py_repr(&cluster.name)
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// `ProjectSpec.validate`.
pub fn validate_project(file: &str, project: &ProjectSpec) -> Result<(), SpecError> {
    let at = |field: &str, message: String| {
        SpecError::new(
            file,
            Some(project.positions.of(field)),
            &project.positions.path_of(field),
            message,
        )
    };
    if project.name.is_empty() && project.project_id.is_empty() {
        return Err(at("", "each project needs a 'name' or 'project_id'".into()));
    }
    if !project.name.is_empty() && !is_dns_name(&slug(&project.name)) {
        return Err(at(
            "name",
            format!(
                "project name is not a valid label: {}",
                py_repr(&project.name)
            ),
        ));
    }
    if project.clusters.is_empty() {
        return Err(at(
            "clusters",
            format!("project {}: no clusters resolved", py_repr(project.label())),
        ));
    }
    if let Some(storage) = &project.object_storage
        && let Err(Issue { field, message }) = validate_object_storage(storage)
    {
        let field = format!("object_storage.{field}");
        let field = field.trim_end_matches('.');
        return Err(at(field, message));
    }
    let mut seen = HashSet::new();
    for cluster in &project.clusters {
        validate_cluster(file, cluster)?;
        if !seen.insert(cluster.name.as_str()) {
            return Err(SpecError::new(
                file,
                Some(cluster.positions.of("name")),
                &cluster.positions.path,
                format!(
                    "project {}: duplicate cluster name {}",
                    py_repr(project.label()),
                    py_repr(&cluster.name)
                ),
            ));
        }
    }
    Ok(())
}

fn validate_object_storage(s: &ObjectStorageSpec) -> Result<(), Issue> {
    if !s.enabled {
        if s.size_gibibytes != 0 || !s.bucket_name.is_empty() {
            return Err(issue(
                "enabled",
                "object_storage must be enabled when size_gibibytes or bucket_name is set",
            ));
        }
        return Ok(());
    }
    let class = s.normalized_storage_class();
    if !matches!(
        class.as_str(),
        "standard" | "enhanced_throughput" | "intelligent"
    ) {
        return Err(issue(
            "storage_class",
            "object_storage.storage_class must be standard, enhanced, or intelligent",
        ));
    }
    if s.size_gibibytes <= 0 {
        return Err(issue(
            "size_gibibytes",
            "object_storage.size_gibibytes must be positive when enabled",
        ));
    }
    if !s.bucket_name.is_empty() && !is_dns_name(&s.bucket_name) {
        return Err(issue(
            "bucket_name",
            "object_storage.bucket_name must be a lowercase DNS-style bucket name",
        ));
    }
    Ok(())
}

/// `ClusterSpec.validate`, located at the field each rule is about.
pub fn validate_cluster(file: &str, cluster: &ClusterSpec) -> Result<(), SpecError> {
    cluster_issues(cluster).map_err(|Issue { field, message }| {
        SpecError::new(
            file,
            Some(cluster.positions.nearest(field)),
            &cluster.positions.path_of(field),
            message,
        )
    })
}

fn cluster_issues(c: &ClusterSpec) -> Result<(), Issue> {
    let name = py_repr(&c.name);
    let pre = |field: &'static str, msg: String| issue(field, format!("cluster {name}: {msg}"));

    // 1. KubeRay policy (its messages carry no cluster prefix in the reference).
    validate_kuberay(c)?;

    // 2-3. Backend.
    if c.backend == Backend::Soperator {
        let Some(soperator) = &c.soperator else {
            return Err(pre(
                "backend",
                "backend 'soperator' requires a 'soperator' configuration mapping".into(),
            ));
        };
        if soperator.name != c.name {
            return Err(pre(
                "soperator",
                "soperator.name must match the fleet target name".into(),
            ));
        }
        return soperator.validate().map_err(|m| pre("soperator", m));
    }
    if c.soperator.is_some() || c.carries_soperator {
        return Err(pre(
            "soperator",
            "'soperator' configuration is unsupported for backend 'mk8s'".into(),
        ));
    }

    // 4. Name.
    if !is_dns_name(&c.name) {
        return Err(issue(
            "name",
            format!("cluster name must be a lowercase DNS-1123 label: {name}"),
        ));
    }
    let mig_enabled = c.mig_enabled();

    // 5. Driver package repositories.
    validate_driver_package_repositories(c)
        .map_err(|m| issue("gpu_driver_package_repositories", m))?;

    // 6. At least one node.
    if c.cpu_count() <= 0 && c.gpu_count() <= 0 && !mig_enabled && !c.allow_control_plane_only {
        return Err(pre("", "needs at least one CPU or GPU node".into()));
    }

    // 7. Non-negative counts and disks.
    for (kind, pool) in [("cpu_nodes", &c.cpu_nodes), ("gpu_nodes", &c.gpu_nodes)] {
        let Some(pool) = pool else { continue };
        if pool.count < 0 {
            let field = if kind == "cpu_nodes" {
                "cpu_nodes.count"
            } else {
                "gpu_nodes.count"
            };
            return Err(pre(field, format!("{kind}.count cannot be negative")));
        }
        if pool.disk_size_gib < 0 {
            let field = if kind == "cpu_nodes" {
                "cpu_nodes.disk_size_gib"
            } else {
                "gpu_nodes.disk_size_gib"
            };
            return Err(pre(
                field,
                format!("{kind}.disk_size_gib cannot be negative"),
            ));
        }
    }

    // 8. Capacity blocks only on GPU pools.
    if c.cpu_nodes
        .as_ref()
        .is_some_and(|p| !p.capacity_block_group.is_empty())
    {
        return Err(pre(
            "cpu_nodes.capacity_block_group",
            "capacity_block_group is only valid for gpu_nodes".into(),
        ));
    }

    // 9. GPU pool shape.
    let gpu = c.gpu_nodes.as_ref();
    if let Some(g) = gpu.filter(|g| g.count > 0) {
        if !g.is_gpu() {
            return Err(pre(
                "gpu_nodes.platform",
                "gpu_nodes.platform must start with 'gpu-'".into(),
            ));
        }
        if !preset_has_positive_gpu_count(&g.preset) {
            return Err(pre(
                "gpu_nodes.preset",
                "gpu_nodes.preset must include a positive GPU count".into(),
            ));
        }
    }

    // 10-11. Capacity block requirements.
    if let Some(g) = gpu.filter(|g| !g.capacity_block_group.is_empty()) {
        if !mig_enabled {
            if g.count <= 0 || !g.is_gpu() {
                return Err(pre(
                    "gpu_nodes.capacity_block_group",
                    "capacity_block_group requires a GPU node pool".into(),
                ));
            }
            if !preset_prefix_is_digits(&g.preset) {
                return Err(pre(
                    "gpu_nodes.capacity_block_group",
                    "capacity_block_group requires a GPU-count preset".into(),
                ));
            }
        }
        if g.preemptible {
            return Err(pre(
                "gpu_nodes.preemptible",
                "strict reserved gpu_nodes cannot also be preemptible".into(),
            ));
        }
    }

    // 12. GPU cluster.
    if c.resolved_enable_gpu_cluster() {
        let fabric_capable =
            gpu.is_some_and(|g| is_fabric_capable_topology(&g.platform, &g.preset));
        if !fabric_capable {
            let preset = gpu.map_or("", |g| g.preset.as_str());
            return Err(pre(
                "enable_gpu_cluster",
                format!(
                    "enable_gpu_cluster requires a fabric-capable 8-GPU SXM/NVL preset (got {} if any)",
                    py_repr(preset)
                ),
            ));
        }
        if c.infiniband_fabric.is_empty() {
            return Err(pre(
                "enable_gpu_cluster",
                "enable_gpu_cluster requires 'infiniband_fabric'".into(),
            ));
        }
    }

    // 13. Filestore contract.
    if c.enable_filestore {
        if c.filestore_disk_size_gibibytes <= 0 {
            return Err(pre(
                "filestore_disk_size_gibibytes",
                "filestore_disk_size_gibibytes must be positive".into(),
            ));
        }
        if !c.filestore_mount_path.starts_with('/') {
            return Err(pre(
                "filestore_mount_path",
                "filestore_mount_path must be absolute".into(),
            ));
        }
        if c.filestore_mount_tag.is_empty()
            || c.filestore_mount_tag
                .chars()
                .any(|ch| py_isspace(ch) || ch == ',')
        {
            return Err(pre(
                "filestore_mount_tag",
                "filestore_mount_tag must be a non-empty value without whitespace or commas".into(),
            ));
        }
        if c.filesystem_csi_chart_repository.chars().any(py_isspace) {
            return Err(pre(
                "filesystem_csi_chart_repository",
                "filesystem_csi_chart_repository must not contain whitespace".into(),
            ));
        }
    }

    // 14. GPU boot disk fallback.
    if let Some(g) = gpu
        && g.count > 0
        && g.disk_size_gib == 0
        && c.gpu_disk_size_gib <= 0
    {
        return Err(pre(
            "gpu_disk_size_gib",
            "gpu_disk_size_gib must be positive".into(),
        ));
    }

    // 15. MIG tuple.
    if let Some(mig) = &c.mig {
        validate_mig(mig, gpu, &c.k8s_version).map_err(|m| pre("mig", m))?;
        if mig.enabled && c.gpu_driver_mode == "managed-image" {
            return Err(pre(
                "gpu_driver_mode",
                "RTX PRO 6000 MIG requires the pinned GPU Operator driver path; gpu_driver_mode='managed-image' is incompatible".into(),
            ));
        }
        if mig.enabled && !c.gpu_cuda_smoke {
            return Err(pre(
                "gpu_cuda_smoke",
                "RTX PRO 6000 MIG requires gpu_cuda_smoke=true so deploy verifies a real MIG allocation".into(),
            ));
        }
    }

    // 16. GPU driver strategy.
    validate_driver_strategy(c, c.resolved_enable_gpu_cluster())
        .map_err(|(field, m)| pre(field, m))?;

    // 17. GPU health settings.
    if c.gpu_health_stabilization_seconds < 0 {
        return Err(pre(
            "gpu_health_stabilization_seconds",
            "gpu_health_stabilization_seconds cannot be negative".into(),
        ));
    }
    if c.gpu_health_timeout_minutes <= 0 {
        return Err(pre(
            "gpu_health_timeout_minutes",
            "gpu_health_timeout_minutes must be positive".into(),
        ));
    }
    if c.gpu_cuda_smoke && c.gpu_cuda_smoke_image.trim().is_empty() {
        return Err(pre(
            "gpu_cuda_smoke_image",
            "gpu_cuda_smoke_image cannot be empty when enabled".into(),
        ));
    }

    // 18. RTX rendering readiness.
    if !c.gpu_workload_profile.is_empty() && !c.gpu_graphics_smoke {
        return Err(pre(
            "gpu_workload_profile",
            "RTX rendering profile requires graphics readiness".into(),
        ));
    }
    if c.gpu_graphics_smoke && c.gpu_graphics_smoke_image.trim().is_empty() {
        return Err(pre(
            "gpu_workload_profile",
            "graphics smoke image cannot be empty when enabled".into(),
        ));
    }

    // 19. The backend model's own checks.
    backend_model_issues(c)
}

/// The reference builds each mk8s target's backend model during `plan`, and the model validates
/// again with stricter rules of its own (fleet-engine §2.12b). Only the rules that can still
/// fail after rules 1–18 are here; the model's other re-checks are implied by those.
fn backend_model_issues(c: &ClusterSpec) -> Result<(), Issue> {
    let name = py_repr(&c.name);
    let pre = |field: &'static str, msg: &str| issue(field, format!("cluster {name}: {msg}"));

    // The model's label grammar is ASCII; rule 4 accepts any lowercase alphanumerics, as
    // Python's `str.isalnum` does.
    if !MODEL_DNS_LABEL.is_match(&c.name) {
        return Err(issue(
            "name",
            format!("mk8s cluster name must be a lowercase DNS-1123 label: {name}"),
        ));
    }

    // Per pool with nodes. For `gpu_nodes` rule 9 already demands a `gpu-` platform and a
    // GPU-count preset, so only the CPU pool can still fail here.
    if let Some(cpu) = c.cpu_nodes.as_ref().filter(|p| p.count > 0) {
        if cpu.platform.is_empty() || cpu.preset.is_empty() {
            let field = if cpu.platform.is_empty() {
                "cpu_nodes.platform"
            } else {
                "cpu_nodes.preset"
            };
            return Err(pre(
                field,
                "mk8s cpu_nodes requires platform and preset when count is positive",
            ));
        }
        if cpu.is_gpu() {
            return Err(pre(
                "cpu_nodes.platform",
                "mk8s cpu_nodes cannot select a GPU platform",
            ));
        }
    }

    // The model's own checks of a GPU cluster: an `8gpu-` preset (rule 12 counts GPUs, so
    // `08gpu-` passes it) and a fabric. (Its driver-strategy check repeats rule 16 with the
    // same resolution, so it cannot fail here.)
    if c.resolved_enable_gpu_cluster() {
        let eight = c
            .gpu_nodes
            .as_ref()
            .is_some_and(|g| g.preset.starts_with("8gpu-"));
        if !eight {
            return Err(pre(
                "enable_gpu_cluster",
                "mk8s enable_gpu_cluster requires an 8-GPU preset",
            ));
        }
        if c.infiniband_fabric.is_empty() {
            return Err(pre(
                "enable_gpu_cluster",
                "mk8s enable_gpu_cluster requires infiniband_fabric",
            ));
        }
    }

    Ok(())
}

/// The text before the first `gpu-` is a positive integer.
fn preset_has_positive_gpu_count(preset: &str) -> bool {
    if preset.is_empty() {
        return false;
    }
    let prefix = preset.split_once("gpu-").map_or(preset, |(p, _)| p);
    !prefix.is_empty()
        && prefix.bytes().all(|b| b.is_ascii_digit())
        && prefix.parse::<u64>().is_ok_and(|n| n > 0)
}

fn preset_prefix_is_digits(preset: &str) -> bool {
    if preset.is_empty() {
        return false;
    }
    let prefix = preset.split_once("gpu-").map_or(preset, |(p, _)| p);
    !prefix.is_empty() && prefix.bytes().all(|b| b.is_ascii_digit())
}

fn validate_kuberay(c: &ClusterSpec) -> Result<(), Issue> {
    let Some(k) = &c.kuberay else { return Ok(()) };
    if c.backend != Backend::Mk8s {
        return Err(issue(
            "kuberay",
            "kuberay is supported only by the mk8s backend",
        ));
    }
    for (field, value) in [
        ("worker_replicas", k.worker_replicas),
        ("worker_cpus", k.worker_cpus),
        ("worker_memory_gib", k.worker_memory_gib),
    ] {
        if value <= 0 {
            return Err(issue(
                "kuberay",
                format!("kuberay.{field} must be a positive integer"),
            ));
        }
    }
    if !k.enabled {
        if *k != KubeRaySpec::default() {
            return Err(issue(
                "kuberay",
                "kuberay worker settings require enabled: true",
            ));
        }
        return Ok(());
    }
    let Some(cpu) = c.cpu_nodes.as_ref().filter(|p| p.count > 0 && !p.is_gpu()) else {
        return Err(issue(
            "kuberay",
            "kuberay requires a nonempty CPU node pool",
        ));
    };
    let caps = CPU_NODE_PRESET.captures(&cpu.preset);
    let (Some(caps), true) = (caps, CPU_PLATFORM.is_match(&cpu.platform)) else {
        return Err(issue(
            "kuberay",
            "kuberay requires an explicit CPU platform and preset",
        ));
    };
    let node_cpus: i64 = caps["cpus"].parse().unwrap_or(i64::MAX);
    let node_memory: i64 = caps["memory"].parse().unwrap_or(i64::MAX);
    let (head_cpus, head_memory) = (ray_pins::HEAD_CPUS, ray_pins::HEAD_MEMORY_GIB);
    if head_cpus > node_cpus || head_memory > node_memory {
        return Err(issue(
            "kuberay",
            format!(
                "kuberay head pod requests {head_cpus} vCPU/{head_memory} GiB, which exceeds one declared {node_cpus} vCPU/{node_memory} GiB CPU node"
            ),
        ));
    }
    if k.worker_cpus > node_cpus || k.worker_memory_gib > node_memory {
        return Err(issue(
            "kuberay",
            format!(
                "kuberay worker pod requests {} vCPU/{} GiB, which exceeds one declared {node_cpus} vCPU/{node_memory} GiB CPU node",
                k.worker_cpus, k.worker_memory_gib
            ),
        ));
    }
    let pool_cpus = cpu.count.saturating_mul(node_cpus);
    let pool_memory = cpu.count.saturating_mul(node_memory);
    let requested_cpus = head_cpus.saturating_add(k.worker_replicas.saturating_mul(k.worker_cpus));
    let requested_memory =
        head_memory.saturating_add(k.worker_replicas.saturating_mul(k.worker_memory_gib));
    if requested_cpus > pool_cpus || requested_memory > pool_memory {
        return Err(issue(
            "kuberay",
            format!(
                "kuberay fixed pod requests {requested_cpus} vCPU/{requested_memory} GiB, which exceeds the declared CPU pool's nominal {pool_cpus} vCPU/{pool_memory} GiB capacity"
            ),
        ));
    }
    Ok(())
}

fn validate_mig(
    mig: &MigSpec,
    gpu: Option<&NodePoolSpec>,
    k8s_version: &str,
) -> Result<(), String> {
    if !mig.enabled {
        if mig.strategy != "none" || !mig.config.is_empty() {
            return Err("disabled MIG requires strategy 'none' and an empty config".into());
        }
        return Ok(());
    }
    let (platform, preset, count, block, disk) = gpu.map_or(("", "", 0, "", 0), |g| {
        (
            g.platform.as_str(),
            g.preset.as_str(),
            g.count,
            g.capacity_block_group.as_str(),
            g.disk_size_gib,
        )
    });
    if platform != mig_pins::PLATFORM {
        return Err(format!(
            "hardware MIG is currently supported only for RTX PRO 6000 Blackwell Server Edition ({}); got {}",
            mig_pins::PLATFORM,
            py_repr(platform)
        ));
    }
    if preset != mig_pins::PRESET {
        return Err(format!(
            "RTX PRO 6000 MIG requires the tested one-GPU preset {}; got {}",
            py_repr(mig_pins::PRESET),
            py_repr(preset)
        ));
    }
    if count <= 0 {
        return Err(format!(
            "RTX PRO 6000 MIG requires a positive GPU worker count; got {count}"
        ));
    }
    if count != 2 {
        return Err(format!(
            "RTX PRO 6000 MIG requires exactly two GPU workers; got {count}"
        ));
    }
    if block.is_empty() {
        return Err("RTX PRO 6000 MIG requires gpu_nodes.capacity_block_group so reserved-capacity placement is STRICT and cannot fall back to PAYG".into());
    }
    if disk != 0 && disk != mig_pins::BOOT_DISK_GIB {
        return Err(format!(
            "RTX PRO 6000 MIG requires the quota-safe 128 GiB GPU boot disk; got {disk} GiB"
        ));
    }
    if mig.strategy != mig_pins::STRATEGY {
        return Err(format!(
            "RTX PRO 6000 MIG strategy must be {}; got {}",
            py_repr(mig_pins::STRATEGY),
            py_repr(&mig.strategy)
        ));
    }
    if mig.config != mig_pins::CONFIG {
        return Err(format!(
            "RTX PRO 6000 MIG config must be {}; got {}",
            py_repr(mig_pins::CONFIG),
            py_repr(&mig.config)
        ));
    }
    if !k8s_version.is_empty() && k8s_version != mig_pins::KUBERNETES_VERSION {
        return Err(format!(
            "RTX PRO 6000 MIG requires Kubernetes {}; got {}",
            mig_pins::KUBERNETES_VERSION,
            py_repr(k8s_version)
        ));
    }
    Ok(())
}

/// `resolve_gpu_driver_strategy`'s checks: a known mode, a well-formed managed preset, and no
/// unacknowledged operator mode on NVSwitch.
fn validate_driver_strategy(
    c: &ClusterSpec,
    enable_gpu_cluster: bool,
) -> Result<(), (&'static str, String)> {
    let raw_mode = c.resolved_gpu_driver_mode();
    let mode = {
        let m = raw_mode.trim().to_lowercase();
        if m.is_empty() { "auto".to_string() } else { m }
    };
    if !matches!(mode.as_str(), "auto" | "managed-image" | "operator") {
        return Err((
            "gpu_driver_mode",
            format!(
                "unsupported GPU driver mode {}; expected one of auto, managed-image, operator",
                py_repr(&raw_mode)
            ),
        ));
    }
    let preset = c.managed_driver_preset.trim();
    if preset.is_empty() || !DRIVER_PRESET.is_match(preset) {
        return Err((
            "managed_driver_preset",
            "managed GPU driver preset must start with an alphanumeric character and contain only letters, digits, '.', '_' or '-'".into(),
        ));
    }
    let selection = c.driver_selection_with(enable_gpu_cluster);
    if selection.gpu_enabled
        && selection.effective_mode == "operator"
        && selection.nvswitch
        && !c.allow_unsafe_nvswitch_operator
    {
        return Err((
            "gpu_driver_mode",
            "GPU driver mode 'operator' is unsafe for this NVSwitch topology: the in-cluster driver/Fabric Manager can race host InfiniBand device creation and enter recurring managed recovery. Use 'auto' or 'managed-image'. For a controlled diagnostic only, explicitly set allow_unsafe_nvswitch_operator=true and recreate the GPU node group.".into(),
        ));
    }
    Ok(())
}
