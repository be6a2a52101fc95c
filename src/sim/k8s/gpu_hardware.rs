//! The GPUs of simulated nodes, played: the simulator cannot run GPU code, so a container
//! that runs fleetbot's graphics probe (`probe graphics`) prints, instead, the evidence that
//! probe would print on that node: a node advertising its GPUs passes CUDA vectorAdd on every
//! one and loads GLX, EGL and Vulkan; a node advertising none has no driver to load; a node a
//! test broke ([`HostFault::VulkanBroken`]) fails Vulkan. The MIG probe (`probe mig`) is
//! answered from the slices the node advertises: each GPU in MIG mode with the instances its
//! share of them makes, vectorAdd passing on each ([`HostFault::MigSliceBroken`] fails the
//! last). The probe program itself has no simulation mode; this is the simulated hardware's
//! answer.

use serde_json::{Value, json};

use super::hosts::HostFault;
use crate::probe::{
    GRAPHICS_SCHEMA, GraphicsEvidence, Library, MIG_SCHEMA, MigEvidence, MigGpu, MigMode,
    SliceSmoke, VectorAdd, VulkanDevice,
};

/// The driver the simulated GPU Operator installs.
const DRIVER_VERSION: &str = "580.173.02";

/// Which GPU probe a container runs (`graphics`, `mig`), if any.
fn gpu_probe(container: &Value) -> Option<String> {
    let words: Vec<String> = ["command", "args"]
        .iter()
        .flat_map(|f| container[*f].as_array().cloned().unwrap_or_default())
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect();
    (words.len() >= 3 && words[1] == "probe" && matches!(words[2].as_str(), "graphics" | "mig"))
        .then(|| words[2].clone())
}

fn node_name(node: &Value) -> String {
    node.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// The evidence the MIG probe prints on `node`: its GPUs (`nvidia.com/gpu.count`), each in
/// MIG mode with an equal share of the slices the node advertises when it advertises any.
pub fn mig_evidence(node: &Value, boot_id: &str, fault: Option<HostFault>) -> MigEvidence {
    let gpus: u32 = node
        .pointer("/metadata/labels/nvidia.com~1gpu.count")
        .and_then(Value::as_str)
        .and_then(|g| g.parse().ok())
        .unwrap_or(0);
    let allocatable = node
        .pointer("/status/allocatable")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut per_gpu: Vec<String> = Vec::new();
    for (resource, count) in &allocatable {
        let Some(profile) = resource.strip_prefix("nvidia.com/mig-") else {
            continue;
        };
        let count: u32 = count.as_str().and_then(|c| c.parse().ok()).unwrap_or(0);
        if let Some(share) = count.checked_div(gpus) {
            per_gpu.extend(std::iter::repeat_n(profile.to_string(), share as usize));
        }
    }
    let mig = !per_gpu.is_empty();
    let mut evidence = MigEvidence {
        schema: MIG_SCHEMA.into(),
        node_name: node_name(node),
        boot_id: boot_id.to_string(),
        driver_version: if gpus > 0 {
            DRIVER_VERSION.into()
        } else {
            String::new()
        },
        gpus: (0..gpus)
            .map(|index| MigGpu {
                index,
                mig_mode: if mig {
                    MigMode::Enabled
                } else {
                    MigMode::Disabled
                },
                instances: if mig { per_gpu.clone() } else { Vec::new() },
            })
            .collect(),
        slices: Vec::new(),
        errors: Vec::new(),
    };
    if gpus == 0 {
        evidence
            .errors
            .push("libnvidia-ml.so.1: cannot open shared object file".into());
    }
    for gpu in &evidence.gpus {
        for (i, profile) in gpu.instances.iter().enumerate() {
            evidence.slices.push(SliceSmoke {
                gpu_index: gpu.index,
                instance: i as u32,
                profile: profile.clone(),
                vectoradd: VectorAdd::Passed,
            });
        }
    }
    if fault == Some(HostFault::MigSliceBroken)
        && let Some(last) = evidence.slices.last_mut()
    {
        last.vectoradd = VectorAdd::Failed;
        evidence.errors.push(format!(
            "GPU {} slice {}: cuLaunchKernel: CUDA_ERROR_ECC_UNCORRECTABLE",
            last.gpu_index, last.instance
        ));
    }
    evidence
}

/// The evidence the graphics probe prints on `node`.
pub fn evidence(node: &Value, boot_id: &str, fault: Option<HostFault>) -> GraphicsEvidence {
    let gpus: u32 = node
        .pointer("/status/allocatable/nvidia.com~1gpu")
        .and_then(Value::as_str)
        .and_then(|g| g.parse().ok())
        .unwrap_or(0);
    let driver = gpus > 0;
    let vulkan_broken = fault == Some(HostFault::VulkanBroken);
    let mut errors = Vec::new();
    if !driver {
        errors.push("libcuda.so.1: cannot open shared object file".to_string());
    }
    if vulkan_broken {
        errors.push("vkCreateInstance: VK_ERROR_INCOMPATIBLE_DRIVER".to_string());
    }
    let library = if driver {
        Library::Loaded
    } else {
        Library::Missing
    };
    GraphicsEvidence {
        schema: GRAPHICS_SCHEMA.into(),
        node_name: node_name(node),
        boot_id: boot_id.to_string(),
        driver_version: if driver {
            DRIVER_VERSION.into()
        } else {
            String::new()
        },
        cuda_devices: gpus,
        cuda_passed_devices: gpus,
        vectoradd: if driver {
            VectorAdd::Passed
        } else {
            VectorAdd::Unavailable
        },
        glx: library,
        egl: library,
        egl_devices: gpus,
        nvidia_device: match (driver, vulkan_broken) {
            (true, false) => VulkanDevice::Enumerated,
            _ => VulkanDevice::Missing,
        },
        vulkan_devices: if driver && !vulkan_broken { gpus } else { 0 },
        errors,
    }
}

/// The container to run instead, when it is a GPU probe: one that prints the evidence.
pub fn played(
    container: &Value,
    node: &Value,
    boot_id: &str,
    fault: Option<HostFault>,
) -> Option<Value> {
    let document = match gpu_probe(container)?.as_str() {
        "mig" => serde_json::to_string(&mig_evidence(node, boot_id, fault)).ok()?,
        _ => serde_json::to_string(&evidence(node, boot_id, fault)).ok()?,
    };
    let mut c = container.clone();
    c["image"] = json!("");
    c["command"] = json!(["printf", "%s\n", document]);
    c["args"] = json!([]);
    Some(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gpu_node_passes_a_node_without_gpus_has_no_driver_and_a_broken_one_fails_vulkan() {
        let node =
            json!({"metadata": {"name": "n1"}, "status": {"allocatable": {"nvidia.com/gpu": "8"}}});
        let text = serde_json::to_string(&evidence(&node, "b", None)).unwrap();
        let e = crate::probe::parse_graphics(&text).unwrap();
        assert_eq!(
            (e.vectoradd, e.nvidia_device, e.cuda_devices),
            (VectorAdd::Passed, VulkanDevice::Enumerated, 8)
        );
        let broken =
            serde_json::to_string(&evidence(&node, "b", Some(HostFault::VulkanBroken))).unwrap();
        assert_eq!(
            crate::probe::parse_graphics(&broken).unwrap().nvidia_device,
            VulkanDevice::Missing
        );
        let cpu = json!({"metadata": {"name": "n2"}, "status": {"allocatable": {}}});
        let none = serde_json::to_string(&evidence(&cpu, "b", None)).unwrap();
        assert_eq!(
            crate::probe::parse_graphics(&none).unwrap().vectoradd,
            VectorAdd::Unavailable
        );
        let probe =
            json!({"command": ["/fleetbot", "probe", "graphics"], "args": ["--boot-id=/x"]});
        assert!(played(&probe, &node, "b", None).is_some());
        let storage = json!({"command": ["/fleetbot", "probe", "storage"]});
        assert!(played(&storage, &node, "b", None).is_none());
    }

    #[test]
    fn a_mig_node_shows_its_layout_per_gpu_and_a_broken_slice_fails() {
        let node = json!({
            "metadata": {"name": "m1", "labels": {"nvidia.com/gpu.count": "1"}},
            "status": {"allocatable": {"nvidia.com/gpu": "0",
                "nvidia.com/mig-1g.24gb": "2", "nvidia.com/mig-2g.48gb": "1"}},
        });
        let text = serde_json::to_string(&mig_evidence(&node, "b", None)).unwrap();
        let e = crate::probe::parse_mig(&text).unwrap();
        assert_eq!(e.gpus[0].mig_mode, MigMode::Enabled);
        assert_eq!(e.gpus[0].instances, ["1g.24gb", "1g.24gb", "2g.48gb"]);
        assert!(e.slices.iter().all(|s| s.vectoradd == VectorAdd::Passed));
        let broken = mig_evidence(&node, "b", Some(HostFault::MigSliceBroken));
        let e = crate::probe::parse_mig(&serde_json::to_string(&broken).unwrap()).unwrap();
        assert_eq!(e.slices[2].vectoradd, VectorAdd::Failed);
        assert_eq!(e.errors.len(), 1);
        let probe = json!({"command": ["/fleetbot", "probe", "mig"], "args": []});
        let c = played(&probe, &node, "b", None).unwrap();
        assert!(c["command"][2].as_str().unwrap().contains(MIG_SCHEMA));
    }
}
