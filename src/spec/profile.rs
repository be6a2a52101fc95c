//! The `rtx-rendering` GPU workload profile, applied while a cluster is built, as the reference
//! applies it at construction.

use std::sync::LazyLock;

use regex::Regex;

use super::model::{ClusterSpec, NodePoolSpec};
use super::names::py_repr;

pub const RTX_RENDERING_PROFILE: &str = "rtx-rendering";
pub const RTX_RENDERING_PLATFORM: &str = "gpu-rtx6000";
pub const RTX_RENDERING_PRESET: &str = "1gpu-24vcpu-218gb";
pub const RTX_RENDERING_8GPU_PRESET: &str = "8gpu-192vcpu-1744gb";

static RTX_PLATFORM: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^gpu-rtx6000(?:-[a-z])?$").expect("static regex"));
static SAFE_FILE_NAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[A-Za-z0-9._-]+$").expect("static regex"));

/// Resolves the profile and rewrites the GPU pool, driver mode and graphics smoke it implies.
/// An absent GPU pool gets one node of the default RTX shape.
pub fn apply_workload_profile(cluster: &mut ClusterSpec) -> Result<(), String> {
    let raw = cluster.gpu_workload_profile.clone();
    let normalized = raw.trim().to_lowercase();
    if normalized.is_empty() {
        return Ok(());
    }
    if normalized != RTX_RENDERING_PROFILE {
        return Err(format!(
            "unsupported GPU workload profile {}; expected one of: {RTX_RENDERING_PROFILE}",
            py_repr(&raw)
        ));
    }
    let (count, platform, preset) = match &cluster.gpu_nodes {
        Some(g) => (g.count, g.platform.clone(), g.preset.clone()),
        None => (-1, String::new(), String::new()),
    };
    if count == 0 {
        return Err("GPU workload profile 'rtx-rendering' requires at least one GPU node".into());
    }
    if !platform.is_empty() && !RTX_PLATFORM.is_match(&platform) {
        return Err(format!(
            "GPU workload profile 'rtx-rendering' requires platform {} or its zonal variant, got {}",
            py_repr(RTX_RENDERING_PLATFORM),
            py_repr(&platform)
        ));
    }
    if !preset.is_empty() && preset != RTX_RENDERING_PRESET && preset != RTX_RENDERING_8GPU_PRESET {
        return Err(format!(
            "GPU workload profile 'rtx-rendering' requires an RTX PRO 6000 preset ({RTX_RENDERING_PRESET}, {RTX_RENDERING_8GPU_PRESET}), got {}",
            py_repr(&preset)
        ));
    }
    let mode = &cluster.gpu_driver_mode;
    if !mode.is_empty() && mode != "auto" && mode != "operator" {
        return Err(
            "GPU workload profile 'rtx-rendering' requires gpu_driver_mode='operator'".into(),
        );
    }
    let platform = if platform.is_empty() {
        RTX_RENDERING_PLATFORM.to_string()
    } else {
        platform
    };
    let preset = if preset.is_empty() {
        RTX_RENDERING_PRESET.to_string()
    } else {
        preset
    };
    match cluster.gpu_nodes.as_mut() {
        Some(g) => {
            g.platform = platform;
            g.preset = preset;
        }
        None => {
            cluster.gpu_nodes = Some(NodePoolSpec {
                count: 1,
                platform,
                preset,
                ..NodePoolSpec::default()
            });
        }
    }
    cluster.gpu_workload_profile = RTX_RENDERING_PROFILE.to_string();
    cluster.gpu_driver_mode = "operator".to_string();
    cluster.gpu_graphics_smoke = true;
    Ok(())
}

/// `validate_driver_package_repositories`.
pub fn validate_driver_package_repositories(cluster: &ClusterSpec) -> Result<(), String> {
    if cluster.gpu_driver_package_repositories_invalid {
        return Err("gpu_driver_package_repositories must be a filename/content mapping".into());
    }
    let files = &cluster.gpu_driver_package_repositories;
    if !files.is_empty()
        && cluster.gpu_workload_profile.trim().to_lowercase() != RTX_RENDERING_PROFILE
    {
        return Err("GPU driver package repositories require the RTX rendering profile".into());
    }
    for (name, content) in files {
        if name == "."
            || name == ".."
            || !SAFE_FILE_NAME.is_match(name)
            || content.trim().is_empty()
        {
            return Err(
                "GPU driver package repositories require safe filenames and nonempty text".into(),
            );
        }
    }
    Ok(())
}
