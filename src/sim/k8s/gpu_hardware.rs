//! The GPUs of simulated nodes. The simulator cannot run GPU code, so where NVIDIA's container
//! toolkit would inject the driver's libraries into a container granted a node's GPUs
//! (`nvidia.com/gpu`, or a MIG slice), the simulated kubelet injects stand-ins of them:
//! libcuda, NVML, EGL, GLX and the Vulkan loader (`fixtures/probe/*.c`, built by build.rs),
//! answering for the node's GPUs as the catalogue names them, its MIG layout as the device
//! plugin advertises it, and what a test broke ([`HostFault::VulkanBroken`],
//! [`HostFault::MigSliceBroken`]). The program that runs is fleetbot's own probe, unchanged:
//! its library loading, driver calls, kernel launch and evidence are all on the tested path.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::hosts::HostFault;
use crate::sim::catalogue;

/// The driver the simulated GPU Operator installs.
pub const DRIVER_VERSION: &str = "580.173.02";

macro_rules! library {
    ($name:literal) => {
        (
            $name,
            include_bytes!(concat!(env!("OUT_DIR"), "/simgpu/", $name)).as_slice(),
        )
    };
}

/// The stand-in libraries, under the names the probe opens.
const LIBRARIES: [(&str, &[u8]); 5] = [
    library!("libcuda.so.1"),
    library!("libnvidia-ml.so.1"),
    library!("libEGL.so.1"),
    library!("libGLX_nvidia.so.0"),
    library!("libvulkan.so.1"),
];

/// Writes the stand-in driver under `root` (once per simulator) and says where it is.
pub fn install(root: &Path) -> std::io::Result<PathBuf> {
    let dir = root.join("nvidia-driver");
    std::fs::create_dir_all(&dir)?;
    for (name, bytes) in LIBRARIES {
        let path = dir.join(name);
        if std::fs::read(&path).is_ok_and(|b| b == bytes) {
            continue;
        }
        // A fresh file, renamed into place: a container may be loading the old one.
        let part = dir.join(format!(".{name}.part"));
        std::fs::write(&part, bytes)?;
        std::fs::rename(&part, &path)?;
    }
    Ok(dir)
}

/// What the node's kernel says of its NVIDIA module (`/proc/driver/nvidia/version`).
pub fn proc_version() -> String {
    format!(
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {DRIVER_VERSION}  Release Build  (simulated)\nGCC version:  gcc version 12.3.0\n"
    )
}

/// Whether a container is granted GPUs: it asks for `nvidia.com/gpu` or a MIG slice.
fn granted_gpus(container: &Value) -> bool {
    ["limits", "requests"].iter().any(|kind| {
        container
            .pointer(&format!("/resources/{kind}"))
            .and_then(Value::as_object)
            .is_some_and(|r| {
                r.iter().any(|(name, count)| {
                    (name == "nvidia.com/gpu" || name.starts_with("nvidia.com/mig-"))
                        && count.as_str().is_some_and(|c| c != "0")
                })
            })
    })
}

/// The node's GPUs (`nvidia.com/gpu.count`, as GPU Feature Discovery labels it).
fn gpu_count(node: &Value) -> u32 {
    node.pointer("/metadata/labels/nvidia.com~1gpu.count")
        .and_then(Value::as_str)
        .and_then(|g| g.parse().ok())
        .unwrap_or(0)
}

/// Each GPU's MIG instances: an equal share of the slices the node advertises.
fn mig_layout(node: &Value, gpus: u32) -> Vec<String> {
    let allocatable = node
        .pointer("/status/allocatable")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut per_gpu = Vec::new();
    for (resource, count) in &allocatable {
        let Some(profile) = resource.strip_prefix("nvidia.com/mig-") else {
            continue;
        };
        let count: u32 = count.as_str().and_then(|c| c.parse().ok()).unwrap_or(0);
        if let Some(share) = count.checked_div(gpus) {
            per_gpu.extend(std::iter::repeat_n(profile.to_string(), share as usize));
        }
    }
    per_gpu
}

/// The environment the stand-in driver reads, for a container on `node` (nothing for a
/// container not granted GPUs, or on a node without any: there, as on a real node, the
/// probe finds no driver).
pub fn container_env(
    container: &Value,
    node: &Value,
    fault: Option<HostFault>,
    driver: &Path,
) -> Vec<(String, String)> {
    let gpus = gpu_count(node);
    if gpus == 0 || !granted_gpus(container) {
        return Vec::new();
    }
    let platform = node
        .pointer("/metadata/labels/node.kubernetes.io~1instance-type")
        .and_then(Value::as_str)
        .and_then(catalogue::platform);
    let mig = mig_layout(node, gpus);
    let mut env = vec![
        ("LD_LIBRARY_PATH".to_string(), driver.display().to_string()),
        ("SIMGPU_COUNT".to_string(), gpus.to_string()),
        ("SIMGPU_DRIVER".to_string(), DRIVER_VERSION.to_string()),
        ("SIMGPU_MIG".to_string(), mig.join(",")),
    ];
    if let Some(platform) = platform {
        env.push(("SIMGPU_NAME".into(), platform.gpu_name.into()));
    }
    match fault {
        Some(HostFault::VulkanBroken) => env.push(("SIMGPU_FAULT".into(), "vulkan".into())),
        // The last slice of the last GPU, by the UUID the stand-in NVML gives it.
        Some(HostFault::MigSliceBroken) if !mig.is_empty() => env.push((
            "SIMGPU_BROKEN_SLICE".into(),
            format!(
                "MIG-00000000-0000-0000-{:04x}-{:012x}",
                gpus - 1,
                mig.len() - 1
            ),
        )),
        _ => {}
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn gpu_node(gpus: u32, allocatable: Value) -> Value {
        json!({"metadata": {"name": "n1", "labels": {
            "nvidia.com/gpu.count": gpus.to_string(),
            "node.kubernetes.io/instance-type": "gpu-h200-sxm"}},
            "status": {"allocatable": allocatable}})
    }

    fn value<'a>(env: &'a [(String, String)], key: &str) -> Option<&'a str> {
        env.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    #[test]
    fn only_a_container_granted_gpus_on_a_gpu_node_gets_the_driver() {
        let node = gpu_node(8, json!({"nvidia.com/gpu": "8"}));
        let granted = json!({"resources": {"limits": {"nvidia.com/gpu": "8"}}});
        let env = container_env(&granted, &node, None, Path::new("/d"));
        assert_eq!(value(&env, "LD_LIBRARY_PATH"), Some("/d"));
        assert_eq!(value(&env, "SIMGPU_COUNT"), Some("8"));
        assert_eq!(value(&env, "SIMGPU_NAME"), Some("NVIDIA H200"));
        assert_eq!(value(&env, "SIMGPU_MIG"), Some(""));
        let plain = json!({"resources": {"limits": {"cpu": "1"}}});
        assert!(container_env(&plain, &node, None, Path::new("/d")).is_empty());
        let cpu_node = json!({"metadata": {"name": "c"}, "status": {"allocatable": {}}});
        assert!(container_env(&granted, &cpu_node, None, Path::new("/d")).is_empty());
    }

    #[test]
    fn a_mig_node_shares_its_slices_per_gpu_and_a_broken_slice_is_the_last() {
        let node = gpu_node(
            2,
            json!({"nvidia.com/gpu": "0", "nvidia.com/mig-1g.24gb": "4",
                "nvidia.com/mig-2g.48gb": "2"}),
        );
        let granted = json!({"resources": {"limits": {"nvidia.com/mig-1g.24gb": "4"}}});
        let env = container_env(
            &granted,
            &node,
            Some(HostFault::MigSliceBroken),
            Path::new("/d"),
        );
        assert_eq!(value(&env, "SIMGPU_MIG"), Some("1g.24gb,1g.24gb,2g.48gb"));
        assert_eq!(
            value(&env, "SIMGPU_BROKEN_SLICE"),
            Some("MIG-00000000-0000-0000-0001-000000000002")
        );
    }

    #[test]
    fn the_driver_is_installed_once_and_is_what_build_rs_built() {
        let dir = tempfile::tempdir().unwrap();
        let at = install(dir.path()).unwrap();
        for (name, bytes) in LIBRARIES {
            assert_eq!(std::fs::read(at.join(name)).unwrap(), bytes);
            assert!(bytes.starts_with(b"\x7fELF"), "{name} is a shared object");
        }
        assert_eq!(install(dir.path()).unwrap(), at);
    }
}
