//! What a target needs from the tenant's quotas: per cluster (§4.2), per new project (§4.3) and
//! per new bucket (§4.4), as exact integers.
//!
//! Amounts are `u128` and add saturating: a spec that multiplies out past the range can only
//! overstate demand, which fails preflight instead of passing it.

use std::collections::BTreeMap;

use serde::Serialize;

use super::names::{self, DEFAULT_CPU_DISK_GIB, GIB};
use crate::spec::{ClusterSpec, ObjectStorageSpec};

/// Quota name to amount. Zero amounts are never stored, so "absent" and "nothing needed" agree.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Demand(BTreeMap<String, u128>);

impl Demand {
    pub fn new() -> Demand {
        Demand::default()
    }

    /// Adds `amount` of `name`; zero adds nothing (the reference skips non-positive amounts).
    pub fn add(&mut self, name: &str, amount: u128) {
        if amount == 0 {
            return;
        }
        match self.0.get_mut(name) {
            Some(total) => *total = total.saturating_add(amount),
            None => {
                self.0.insert(name.to_string(), amount);
            }
        }
    }

    /// Adds every amount of `other`.
    pub fn merge(&mut self, other: &Demand) {
        for (name, amount) in &other.0 {
            self.add(name, *amount);
        }
    }

    /// The amount of `name`, zero when it is not needed.
    pub fn get(&self, name: &str) -> u128 {
        self.0.get(name).copied().unwrap_or(0)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }

    /// `(name, amount)` sorted by quota name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, u128)> {
        self.0.iter().map(|(name, amount)| (name.as_str(), *amount))
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }
}

impl<'a> FromIterator<(&'a str, u128)> for Demand {
    fn from_iter<I: IntoIterator<Item = (&'a str, u128)>>(iter: I) -> Demand {
        let mut demand = Demand::new();
        for (name, amount) in iter {
            demand.add(name, amount);
        }
        demand
    }
}

/// The quota family of a GPU platform (`gpu-h200-sxm` → `h200`): the first `^gpu-([a-z0-9]+)`
/// match of the trimmed, lower-cased platform; empty for a CPU platform.
pub fn gpu_family(platform: &str) -> String {
    let lowered = platform.trim().to_lowercase();
    let Some(rest) = lowered.strip_prefix("gpu-") else {
        return String::new();
    };
    rest.chars()
        .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        .collect()
}

/// GPUs per node: the first `(\d+)gpu` match anywhere in the lower-cased preset, else 0.
pub fn preset_gpus(preset: &str) -> u128 {
    count_before(&preset.to_lowercase(), "gpu")
}

/// vCPUs per node: the first `(\d+)vcpu` match anywhere in the lower-cased preset, else 0.
pub fn preset_vcpus(preset: &str) -> u128 {
    count_before(&preset.to_lowercase(), "vcpu")
}

/// The digits of the leftmost `(\d+)<suffix>` match. Digit runs are disjoint, so the first
/// occurrence of `suffix` that follows a digit starts the leftmost match. A run too long for
/// `u128` saturates: overstating a count cannot pass a quota it should fail.
fn count_before(text: &str, suffix: &str) -> u128 {
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(offset) = text[from..].find(suffix) {
        let end = from + offset;
        let start = bytes[..end]
            .iter()
            .rposition(|b| !b.is_ascii_digit())
            .map_or(0, |i| i + 1);
        if start < end {
            return text[start..end].parse().unwrap_or(u128::MAX);
        }
        from = end + suffix.len();
    }
    0
}

/// A validated spec never holds negative counts or sizes; were one to slip through it adds
/// nothing, as the reference's "positive amounts only" rule does.
fn amount(value: i64) -> u128 {
    u128::try_from(value).unwrap_or(0)
}

/// Everything one mk8s cluster needs (§4.2). Workers only: the managed control plane and etcd
/// are service-owned and consume no tenant compute or disk quota.
pub fn cluster_demand(cluster: &ClusterSpec) -> Demand {
    let mut needed = Demand::new();
    add_cluster_demand(&mut needed, cluster);
    needed
}

/// Adds what `cluster` needs to `needed` in place (no per-cluster map, which matters for
/// fleets of thousands of clusters).
pub fn add_cluster_demand(needed: &mut Demand, cluster: &ClusterSpec) {
    let cpu = cluster.cpu_nodes.as_ref();
    let gpu = cluster.gpu_nodes.as_ref();
    let cpu_count = amount(cluster.cpu_count());
    let gpu_count = amount(cluster.gpu_count());
    let nodes = cpu_count.saturating_add(gpu_count);

    needed.add(names::MK8S_CLUSTER_COUNT, 1);
    // Each private worker holds its /32 address plus a delegated pod alias range.
    needed.add(names::VPC_ALLOCATION_COUNT, nodes.saturating_mul(2));

    needed.add(names::INSTANCE_COUNT, cpu_count);
    if let Some(gpu) = gpu.filter(|_| gpu_count > 0) {
        if gpu.preemptible {
            // Preemptible VMs replace both the regular instance count and the GPU family quota.
            needed.add(names::PREEMPTIBLE_INSTANCE_COUNT, gpu_count);
        } else {
            needed.add(names::INSTANCE_COUNT, gpu_count);
            let family = gpu_family(&gpu.platform);
            // GPUs behind a STRICT capacity block are checked against the block instead.
            if !family.is_empty() && gpu.capacity_block_group.is_empty() {
                needed.add(
                    &format!("{}{family}", names::GPU_FAMILY_PREFIX),
                    gpu_count.saturating_mul(preset_gpus(&gpu.preset)),
                );
            }
        }
    }

    // One boot disk per node, preemptible or reserved alike.
    needed.add(names::DISK_COUNT, nodes);
    if let Some(cpu) = cpu.filter(|p| p.count > 0) {
        let disk_gib = if cpu.disk_size_gib > 0 {
            amount(cpu.disk_size_gib)
        } else {
            DEFAULT_CPU_DISK_GIB
        };
        needed.add(names::DISK_SIZE, bytes(cpu_count, disk_gib));
    }
    if gpu.is_some_and(|p| p.count > 0) {
        let disk_gib = amount(cluster.resolved_gpu_disk_size_gib());
        needed.add(names::DISK_SIZE, bytes(gpu_count, disk_gib));
    }
    // GPU-node vCPUs are excluded: regular GPU VMs use the family quota, preemptible ones the
    // preemptible VM count.
    if let Some(cpu) = cpu.filter(|p| p.count > 0) {
        needed.add(
            names::NON_GPU_VCPU,
            cpu_count.saturating_mul(preset_vcpus(&cpu.preset)),
        );
    }
    if cluster.resolved_enable_gpu_cluster() {
        needed.add(names::GPU_CLUSTER_COUNT, 1);
    }
    if cluster.enable_filestore && cluster.existing_filestore.is_empty() {
        needed.add(names::FILESYSTEM_COUNT, 1);
        needed.add(
            names::FILESYSTEM_SIZE,
            bytes(1, amount(cluster.filestore_disk_size_gibibytes)),
        );
    }
}

/// The default topology a create-on-demand project needs before anything can run in it.
pub fn new_projects_demand(count: u128) -> Demand {
    let mut needed = Demand::new();
    needed.add(names::VPC_NETWORK_COUNT, count);
    needed.add(names::VPC_SUBNET_COUNT, count);
    // A private and a public project pool.
    needed.add(names::VPC_POOL_COUNT, count.saturating_mul(2));
    needed.add(names::VPC_ROUTETABLE_COUNT, count);
    needed.add(names::VPC_ROUTE_COUNT, count);
    needed
}

/// The quota one new bucket declaration needs. A bucket cap is a maximum, not reserved space,
/// but the whole cap is budgeted against the class quota; a disabled declaration needs nothing.
pub fn bucket_demand(storage: &ObjectStorageSpec) -> Demand {
    let mut needed = Demand::new();
    if storage.enabled {
        let class = storage.normalized_storage_class().replace('_', "-");
        needed.add(names::BUCKET_COUNT, 1);
        needed.add(
            &format!("{}{class}", names::BUCKET_SIZE_PREFIX),
            bytes(1, amount(storage.size_gibibytes)),
        );
    }
    needed
}

/// The reference's `required_quotas`: clusters, new projects and new buckets of one region.
pub fn required_quotas<'a>(
    clusters: impl IntoIterator<Item = &'a ClusterSpec>,
    new_projects: u128,
    buckets: impl IntoIterator<Item = &'a ObjectStorageSpec>,
) -> Demand {
    let mut needed = Demand::new();
    for cluster in clusters {
        add_cluster_demand(&mut needed, cluster);
    }
    for storage in buckets {
        needed.merge(&bucket_demand(storage));
    }
    needed.merge(&new_projects_demand(new_projects));
    needed
}

fn bytes(count: u128, gib: u128) -> u128 {
    count.saturating_mul(gib).saturating_mul(GIB)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{MigSpec, NodePoolSpec};

    fn pool(count: i64, platform: &str, preset: &str) -> Option<NodePoolSpec> {
        Some(NodePoolSpec {
            count,
            platform: platform.into(),
            preset: preset.into(),
            ..NodePoolSpec::default()
        })
    }

    #[test]
    fn gpu_family_maps_platform_to_quota_family() {
        for (platform, family) in [
            ("gpu-h200-sxm", "h200"),
            ("gpu-h100-sxm", "h100"),
            ("gpu-b200-sxm", "b200"),
            ("gpu-b200-sxm-a", "b200"),
            ("gpu-b300-sxm", "b300"),
            ("gpu-rtx6000", "rtx6000"),
            ("gpu-rtx6000-a", "rtx6000"),
            ("gpu-l40s-a", "l40s"),
            ("gpu-l40s-d", "l40s"),
            (" GPU-H200-SXM ", "h200"),
            ("cpu-d3", ""),
            ("gpu-", ""),
        ] {
            assert_eq!(gpu_family(platform), family, "{platform}");
        }
    }

    #[test]
    fn preset_counts_use_the_first_match_anywhere() {
        assert_eq!(preset_gpus("8gpu-128vcpu-1600gb"), 8);
        assert_eq!(preset_vcpus("8gpu-128vcpu-1600gb"), 128);
        assert_eq!(preset_vcpus("48vcpu-192gb"), 48);
        assert_eq!(preset_gpus("48vcpu-192gb"), 0);
        assert_eq!(preset_vcpus(""), 0);
        assert_eq!(preset_gpus("x-2GPU-y"), 2);
        assert_eq!(preset_gpus("gpu-12gpu-3gpu"), 12);
        assert_eq!(preset_vcpus("vcpu-16vcpu"), 16);
        assert_eq!(
            preset_gpus("99999999999999999999999999999999999999999gpu"),
            u128::MAX
        );
    }

    #[test]
    fn mig_cluster_uses_the_pinned_boot_disk() {
        let cluster = ClusterSpec {
            gpu_nodes: pool(2, "gpu-rtx6000", "1gpu-24vcpu-218gb"),
            mig: Some(MigSpec {
                enabled: true,
                strategy: "mixed".into(),
                config: "all-balanced".into(),
            }),
            ..ClusterSpec::default()
        };
        let needed = cluster_demand(&cluster);
        assert_eq!(needed.get(names::DISK_SIZE), 2 * 128 * GIB);
        assert_eq!(needed.get("compute.instance.gpu.rtx6000"), 2);
    }

    #[test]
    fn explicit_disk_sizes_win() {
        let mut cluster = ClusterSpec {
            cpu_nodes: pool(1, "cpu-d3", "4vcpu-16gb"),
            gpu_nodes: pool(1, "gpu-h200-sxm", "8gpu-128vcpu-1600gb"),
            enable_gpu_cluster: Some(false),
            ..ClusterSpec::default()
        };
        cluster.cpu_nodes.as_mut().unwrap().disk_size_gib = 200;
        cluster.gpu_nodes.as_mut().unwrap().disk_size_gib = 2048;
        assert_eq!(
            cluster_demand(&cluster).get(names::DISK_SIZE),
            (200 + 2048) * GIB
        );
    }

    #[test]
    fn disabled_bucket_needs_nothing_and_classes_use_dashes() {
        let mut storage = ObjectStorageSpec {
            enabled: false,
            storage_class: "enhanced".into(),
            size_gibibytes: 1024,
            bucket_name: String::new(),
        };
        assert!(bucket_demand(&storage).is_empty());
        storage.enabled = true;
        let needed = bucket_demand(&storage);
        assert_eq!(needed.get(names::BUCKET_COUNT), 1);
        assert_eq!(
            needed.get("storage.bucket.size.enhanced-throughput"),
            1024 * GIB
        );
    }

    #[test]
    fn zero_amounts_are_never_stored() {
        let mut d = Demand::new();
        d.add("x", 0);
        assert!(d.is_empty());
        d.add("x", u128::MAX);
        d.add("x", 5);
        assert_eq!(d.get("x"), u128::MAX);
    }
}
