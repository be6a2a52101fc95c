//! The GPUs of simulated nodes, played: the simulator cannot run GPU code, so a container
//! that runs fleetbot's graphics probe (`probe graphics`) prints, instead, the evidence that
//! probe would print on that node: a node advertising its GPUs passes CUDA vectorAdd on every
//! one and loads GLX, EGL and Vulkan; a node advertising none has no driver to load; a node a
//! test broke ([`HostFault::VulkanBroken`]) fails Vulkan. The probe program itself has no
//! simulation mode; this is the simulated hardware's answer.

use serde_json::{Value, json};

use super::hosts::HostFault;
use crate::probe::{GRAPHICS_SCHEMA, GraphicsEvidence, Library, VectorAdd, VulkanDevice};

/// The driver the simulated GPU Operator installs.
const DRIVER_VERSION: &str = "580.173.02";

/// Whether a container runs the graphics probe.
fn runs_graphics_probe(container: &Value) -> bool {
    let words: Vec<String> = ["command", "args"]
        .iter()
        .flat_map(|f| container[*f].as_array().cloned().unwrap_or_default())
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect();
    words.len() >= 3 && words[1] == "probe" && words[2] == "graphics"
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
        node_name: node
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
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

/// The container to run instead, when it is the graphics probe: one that prints the evidence.
pub fn played(
    container: &Value,
    node: &Value,
    boot_id: &str,
    fault: Option<HostFault>,
) -> Option<Value> {
    if !runs_graphics_probe(container) {
        return None;
    }
    let document = serde_json::to_string(&evidence(node, boot_id, fault)).ok()?;
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
}
