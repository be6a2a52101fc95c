//! The compute catalogue the simulator offers: which platforms each region has, the presets
//! each platform comes in, and what a preset is (vCPUs, memory, GPUs), as Nebius publishes
//! them through `nebius.compute.v1.PlatformService`. A node group asking for a platform or
//! preset outside it is refused as Nebius refuses it, and a node's hardware is the catalogue's,
//! never read out of the preset's name.
//!
//! Sources: the platforms and presets Nebius's `PlatformService.List` returns for eu-north1,
//! eu-west1 and us-central1, as recorded by SkyPilot's Nebius catalogue (`catalogs/v8/nebius/
//! vms.csv`, skypilot-org/skypilot-catalog); Nebius's public pages for B200 in me-west1, H200
//! in eu-north2 and B300 in uk-south1; and, for the RTX PRO 6000 Blackwell platforms, the
//! regions and presets the original fleet tool's examples deploy (`fleet-engine.md` §2.5),
//! which no public catalogue we had lists.

use crate::cloud::proto::nebius::compute::v1 as compute;

/// One size of a platform.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Preset {
    pub name: &'static str,
    pub vcpus: u32,
    pub memory_gib: u32,
    pub gpus: u32,
    /// Whether hosts of this preset may join a GPU cluster (InfiniBand): the 8-GPU SXM ones.
    pub clustering: bool,
}

/// One platform: a kind of host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Platform {
    pub name: &'static str,
    pub human_readable_name: &'static str,
    /// The tenant quota each GPU counts against; empty without GPUs.
    pub gpu_quota: &'static str,
    /// The GPU as NVML names it (`nvmlDeviceGetName`); empty without GPUs.
    pub gpu_name: &'static str,
    /// `nvidia.com/gpu.product`, as GPU Feature Discovery labels the node.
    pub gpu_product: &'static str,
    pub gpu_memory_gigabytes: u32,
    /// The MIG profile names one GPU of this platform can be split into; empty: no MIG.
    pub mig_profiles: &'static [&'static str],
    pub presets: &'static [Preset],
    pub regions: &'static [&'static str],
}

impl Platform {
    pub fn preset(&self, name: &str) -> Option<&'static Preset> {
        self.presets.iter().find(|p| p.name == name)
    }

    pub fn has_gpus(&self) -> bool {
        !self.gpu_quota.is_empty()
    }

    /// The platform as `PlatformService` returns it.
    pub fn to_proto(&self, parent_id: &str, id: String) -> compute::Platform {
        compute::Platform {
            metadata: Some(crate::cloud::proto::nebius::common::v1::ResourceMetadata {
                id,
                parent_id: parent_id.to_string(),
                name: self.name.to_string(),
                ..Default::default()
            }),
            spec: Some(compute::PlatformSpec {
                presets: self
                    .presets
                    .iter()
                    .map(|p| compute::Preset {
                        name: p.name.to_string(),
                        resources: Some(compute::PresetResources {
                            vcpu_count: p.vcpus as i32,
                            memory_gibibytes: p.memory_gib as i32,
                            gpu_count: p.gpus as i32,
                            ..Default::default()
                        }),
                        allow_gpu_clustering: p.clustering,
                    })
                    .collect(),
                gpu_count_quota_type: self.gpu_quota.to_string(),
                human_readable_name: self.human_readable_name.to_string(),
                allow_preset_change: true,
                short_human_readable_name: self.human_readable_name.to_string(),
                gpu_memory_gigabytes: self.gpu_memory_gigabytes as i32,
                ..Default::default()
            }),
            status: Some(compute::PlatformStatus {
                allowed_for_preemptibles: true,
            }),
        }
    }
}

const fn cpu(name: &'static str, vcpus: u32, memory_gib: u32) -> Preset {
    Preset {
        name,
        vcpus,
        memory_gib,
        gpus: 0,
        clustering: false,
    }
}

const fn gpu(
    name: &'static str,
    gpus: u32,
    vcpus: u32,
    memory_gib: u32,
    clustering: bool,
) -> Preset {
    Preset {
        name,
        vcpus,
        memory_gib,
        gpus,
        clustering,
    }
}

const CPU_D3: &[Preset] = &[
    cpu("4vcpu-16gb", 4, 16),
    cpu("8vcpu-32gb", 8, 32),
    cpu("16vcpu-64gb", 16, 64),
    cpu("32vcpu-128gb", 32, 128),
    cpu("48vcpu-192gb", 48, 192),
    cpu("64vcpu-256gb", 64, 256),
    cpu("96vcpu-384gb", 96, 384),
    cpu("128vcpu-512gb", 128, 512),
    cpu("160vcpu-640gb", 160, 640),
    cpu("192vcpu-768gb", 192, 768),
    cpu("224vcpu-896gb", 224, 896),
    cpu("256vcpu-1024gb", 256, 1024),
];

const CPU_E2: &[Preset] = &[
    cpu("2vcpu-8gb", 2, 8),
    cpu("4vcpu-16gb", 4, 16),
    cpu("8vcpu-32gb", 8, 32),
    cpu("16vcpu-64gb", 16, 64),
    cpu("32vcpu-128gb", 32, 128),
    cpu("48vcpu-192gb", 48, 192),
    cpu("64vcpu-256gb", 64, 256),
    cpu("80vcpu-320gb", 80, 320),
];

const HOPPER: &[Preset] = &[
    gpu("1gpu-16vcpu-200gb", 1, 16, 200, false),
    gpu("8gpu-128vcpu-1600gb", 8, 128, 1600, true),
];

const B200: &[Preset] = &[
    gpu("1gpu-20vcpu-224gb", 1, 20, 224, false),
    gpu("8gpu-160vcpu-1792gb", 8, 160, 1792, true),
];

const B300: &[Preset] = &[
    gpu("1gpu-24vcpu-346gb", 1, 24, 346, false),
    gpu("8gpu-192vcpu-2768gb", 8, 192, 2768, true),
];

const L40S_A: &[Preset] = &[
    gpu("1gpu-8vcpu-32gb", 1, 8, 32, false),
    gpu("1gpu-16vcpu-64gb", 1, 16, 64, false),
    gpu("1gpu-24vcpu-96gb", 1, 24, 96, false),
    gpu("1gpu-32vcpu-128gb", 1, 32, 128, false),
    gpu("1gpu-40vcpu-160gb", 1, 40, 160, false),
];

const L40S_D: &[Preset] = &[
    gpu("1gpu-16vcpu-96gb", 1, 16, 96, false),
    gpu("1gpu-32vcpu-192gb", 1, 32, 192, false),
    gpu("1gpu-48vcpu-288gb", 1, 48, 288, false),
    gpu("2gpu-64vcpu-384gb", 2, 64, 384, false),
    gpu("2gpu-96vcpu-576gb", 2, 96, 576, false),
    gpu("4gpu-128vcpu-768gb", 4, 128, 768, false),
    gpu("4gpu-192vcpu-1152gb", 4, 192, 1152, false),
];

const RTX6000: &[Preset] = &[
    gpu("1gpu-24vcpu-218gb", 1, 24, 218, false),
    gpu("8gpu-192vcpu-1744gb", 8, 192, 1744, false),
];

/// RTX PRO 6000 Blackwell: MIG in up to four slices (NVIDIA's profiles for the 96 GB part).
const RTX6000_MIG: &[&str] = &["1g.24gb", "2g.48gb", "4g.96gb"];

/// An RTX PRO 6000 Blackwell platform (the plain one and its zonal variants differ in name
/// and region only).
const fn rtx6000(name: &'static str, regions: &'static [&'static str]) -> Platform {
    Platform {
        name,
        human_readable_name: "NVIDIA RTX PRO 6000 Blackwell Server Edition",
        gpu_quota: "compute.instance.gpu.rtx6000",
        gpu_name: "NVIDIA RTX PRO 6000 Blackwell Server Edition",
        gpu_product: "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition",
        gpu_memory_gigabytes: 96,
        mig_profiles: RTX6000_MIG,
        presets: RTX6000,
        regions,
    }
}

/// An L40S platform of eu-north1 (two host CPUs, two preset ranges).
const fn l40s(
    name: &'static str,
    human_readable_name: &'static str,
    presets: &'static [Preset],
) -> Platform {
    Platform {
        name,
        human_readable_name,
        gpu_quota: "compute.instance.gpu.l40s",
        gpu_name: "NVIDIA L40S",
        gpu_product: "NVIDIA-L40S",
        gpu_memory_gigabytes: 48,
        mig_profiles: &[],
        presets,
        regions: &["eu-north1"],
    }
}

/// Every platform the simulator knows, in the order `PlatformService.List` returns them.
pub const PLATFORMS: &[Platform] = &[
    Platform {
        name: "cpu-d3",
        human_readable_name: "Non-GPU AMD EPYC Genoa",
        gpu_quota: "",
        gpu_name: "",
        gpu_product: "",
        gpu_memory_gigabytes: 0,
        mig_profiles: &[],
        presets: CPU_D3,
        regions: &[
            "eu-north1",
            "eu-north2",
            "eu-west1",
            "me-west1",
            "uk-south1",
            "uk-south2",
            "us-central1",
        ],
    },
    Platform {
        name: "cpu-e2",
        human_readable_name: "Non-GPU Intel Ice Lake",
        gpu_quota: "",
        gpu_name: "",
        gpu_product: "",
        gpu_memory_gigabytes: 0,
        mig_profiles: &[],
        presets: CPU_E2,
        regions: &["eu-north1"],
    },
    Platform {
        name: "gpu-h100-sxm",
        human_readable_name: "NVIDIA H100 NVLink with Intel Sapphire Rapids",
        gpu_quota: "compute.instance.gpu.h100",
        gpu_name: "NVIDIA H100 80GB HBM3",
        gpu_product: "NVIDIA-H100-80GB-HBM3",
        gpu_memory_gigabytes: 80,
        mig_profiles: &["1g.10gb", "2g.20gb", "3g.40gb", "7g.80gb"],
        presets: HOPPER,
        regions: &["eu-north1"],
    },
    Platform {
        name: "gpu-h200-sxm",
        human_readable_name: "NVIDIA H200 NVLink with Intel Sapphire Rapids",
        gpu_quota: "compute.instance.gpu.h200",
        gpu_name: "NVIDIA H200",
        gpu_product: "NVIDIA-H200",
        gpu_memory_gigabytes: 141,
        mig_profiles: &["1g.18gb", "2g.35gb", "3g.71gb", "7g.141gb"],
        presets: HOPPER,
        regions: &["eu-north1", "eu-north2", "eu-west1", "us-central1"],
    },
    Platform {
        name: "gpu-b200-sxm",
        human_readable_name: "NVIDIA B200 NVLink with Intel Emerald Rapids",
        gpu_quota: "compute.instance.gpu.b200",
        gpu_name: "NVIDIA B200",
        gpu_product: "NVIDIA-B200",
        gpu_memory_gigabytes: 180,
        mig_profiles: &["1g.23gb", "2g.45gb", "3g.90gb", "7g.180gb"],
        presets: B200,
        regions: &["me-west1", "us-central1"],
    },
    Platform {
        name: "gpu-b300-sxm",
        human_readable_name: "NVIDIA B300 NVLink with Intel Granite Rapids",
        gpu_quota: "compute.instance.gpu.b300",
        gpu_name: "NVIDIA B300 SXM6 AC",
        gpu_product: "NVIDIA-B300-SXM6-AC",
        gpu_memory_gigabytes: 288,
        mig_profiles: &[],
        presets: B300,
        regions: &["uk-south1"],
    },
    l40s("gpu-l40s-a", "NVIDIA L40S PCIe with Intel Ice Lake", L40S_A),
    l40s("gpu-l40s-d", "NVIDIA L40S PCIe with AMD Genoa", L40S_D),
    rtx6000("gpu-rtx6000", &["us-central1"]),
    rtx6000("gpu-rtx6000-a", &["uk-south2"]),
];

/// A platform by name, wherever it is offered.
pub fn platform(name: &str) -> Option<&'static Platform> {
    PLATFORMS.iter().find(|p| p.name == name)
}

/// The platforms `region` offers.
pub fn in_region(region: &str) -> impl Iterator<Item = &'static Platform> + '_ {
    PLATFORMS
        .iter()
        .filter(move |p| p.regions.contains(&region))
}

/// Why a platform and preset cannot be had in `region`, as Nebius's field violation says it
/// (`None`: they can). Each message names what the region does offer.
pub fn refusal(region: &str, platform: &str, preset: &str) -> Option<(&'static str, String)> {
    let offered: Vec<&str> = in_region(region).map(|p| p.name).collect();
    let Some(found) = in_region(region).find(|p| p.name == platform) else {
        return Some((
            "platform",
            format!(
                "platform {platform:?} is not available in region {region}; available platforms: {}",
                offered.join(", ")
            ),
        ));
    };
    if found.preset(preset).is_some() {
        return None;
    }
    let presets: Vec<&str> = found.presets.iter().map(|p| p.name).collect();
    Some((
        "preset",
        format!(
            "preset {preset:?} is not available for platform {platform} in region {region}; available presets: {}",
            presets.join(", ")
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_platform_has_presets_and_regions_and_gpu_platforms_have_their_quota() {
        for p in PLATFORMS {
            assert!(!p.presets.is_empty() && !p.regions.is_empty(), "{}", p.name);
            assert_eq!(p.has_gpus(), p.name.starts_with("gpu-"), "{}", p.name);
            assert_eq!(p.has_gpus(), !p.gpu_name.is_empty(), "{}", p.name);
            for preset in p.presets {
                assert_eq!(preset.gpus > 0, p.has_gpus(), "{}/{}", p.name, preset.name);
                assert!(preset.vcpus > 0 && preset.memory_gib > 0);
            }
        }
    }

    #[test]
    fn unknown_platforms_and_presets_are_named_with_what_the_region_offers() {
        assert_eq!(
            refusal("us-central1", "gpu-h200-sxm", "8gpu-128vcpu-1600gb"),
            None
        );
        let (field, message) =
            refusal("us-central1", "gpu-h900-sxm", "8gpu-128vcpu-1600gb").unwrap();
        assert_eq!(field, "platform");
        assert!(message.contains("\"gpu-h900-sxm\" is not available in region us-central1"));
        assert!(message.contains("gpu-h200-sxm") && message.contains("gpu-b200-sxm"));
        let (field, message) = refusal("us-central1", "gpu-h200-sxm", "8gpu-128vcpu-1600").unwrap();
        assert_eq!(field, "preset");
        assert!(
            message.ends_with("1gpu-16vcpu-200gb, 8gpu-128vcpu-1600gb"),
            "{message}"
        );
        // A platform offered elsewhere is still not offered here.
        assert_eq!(
            refusal("eu-west1", "gpu-b200-sxm", "8gpu-160vcpu-1792gb")
                .unwrap()
                .0,
            "platform"
        );
    }
}
