//! Quota names, their units and the constants of the reference arithmetic (fleet-engine §4.2–4.6).
//!
//! Names are the provider's own (`compute.instance.gpu.h200`, …), so a budget row can be matched
//! against `nebius quotas quota-allowance list` output by eye.

/// One gibibyte; byte quotas are charged in exact multiples of it.
pub const GIB: u128 = 1 << 30;
/// One tebibyte, for display only.
pub const TIB: u128 = 1 << 40;
/// Boot disk of a CPU node when the pool does not set `disk_size_gib`.
pub const DEFAULT_CPU_DISK_GIB: u128 = 128;

pub const MK8S_CLUSTER_COUNT: &str = "mk8s.cluster.count";
pub const VPC_ALLOCATION_COUNT: &str = "vpc.allocation.count";
pub const INSTANCE_COUNT: &str = "compute.instance.count";
pub const PREEMPTIBLE_INSTANCE_COUNT: &str = "compute.instance.preemptible.count";
pub const DISK_COUNT: &str = "compute.disk.count";
pub const DISK_SIZE: &str = "compute.disk.size.network-ssd";
pub const NON_GPU_VCPU: &str = "compute.instance.non-gpu.vcpu";
/// `compute.instance.gpu.<family>`, counted in GPUs, not nodes.
pub const GPU_FAMILY_PREFIX: &str = "compute.instance.gpu.";
pub const GPU_CLUSTER_COUNT: &str = "compute.gpucluster.count";
pub const FILESYSTEM_COUNT: &str = "compute.filesystem.count";
pub const FILESYSTEM_SIZE: &str = "compute.filesystem.size.network-ssd";
pub const BUCKET_COUNT: &str = "storage.bucket.count";
/// `storage.bucket.size.<class>`, in bytes.
pub const BUCKET_SIZE_PREFIX: &str = "storage.bucket.size.";
pub const VPC_NETWORK_COUNT: &str = "vpc.network.count";
pub const VPC_SUBNET_COUNT: &str = "vpc.subnet.count";
pub const VPC_POOL_COUNT: &str = "vpc.pool.count";
pub const VPC_ROUTETABLE_COUNT: &str = "vpc.routetable.count";
pub const VPC_ROUTE_COUNT: &str = "vpc.route.count";

/// The only quotas a completed regional catalog may leave out: the topology of a new project.
/// Anything else that is needed but not advertised fails closed.
pub const OPTIONAL_UNADVERTISED: [&str; 5] = [
    VPC_NETWORK_COUNT,
    VPC_SUBNET_COUNT,
    VPC_POOL_COUNT,
    VPC_ROUTETABLE_COUNT,
    VPC_ROUTE_COUNT,
];

/// The state a usable allowance or capacity block must be in.
pub const STATE_ACTIVE: &str = "STATE_ACTIVE";
/// The usage state that proves nothing is consumed when no counter is given.
pub const USAGE_STATE_NOT_USED: &str = "USAGE_STATE_NOT_USED";

/// Whether `name` may be missing from the tenant catalog without failing preflight.
pub fn is_optional(name: &str) -> bool {
    OPTIONAL_UNADVERTISED.contains(&name)
}

/// Whether `name` is measured in bytes.
pub fn is_byte_quota(name: &str) -> bool {
    name == DISK_SIZE || name == FILESYSTEM_SIZE || name.starts_with(BUCKET_SIZE_PREFIX)
}

/// Whether `name` is a GPU family quota.
pub fn is_gpu_quota(name: &str) -> bool {
    name.starts_with(GPU_FAMILY_PREFIX)
}

/// The wire units a quota's allowance may report, sorted (the order of the error message).
pub fn compatible_units(name: &str) -> &'static [&'static str] {
    if is_byte_quota(name) {
        &["byte"]
    } else if name == NON_GPU_VCPU {
        // Current tenant payloads say `count`; older catalogs say `vcpu`.
        &["count", "vcpu"]
    } else if is_gpu_quota(name) {
        &["count", "gpu"]
    } else {
        &["count"]
    }
}

/// The unit a budget row shows when the allowance did not report one.
pub fn default_unit(name: &str) -> &'static str {
    if is_byte_quota(name) { "byte" } else { "count" }
}

/// What one unit of a count quota is, singular and plural, so a reviewer reads "16 GPUs" rather
/// than "16 count".
pub fn noun(name: &str) -> (&'static str, &'static str) {
    match name {
        MK8S_CLUSTER_COUNT => ("cluster", "clusters"),
        VPC_ALLOCATION_COUNT => ("allocation", "allocations"),
        INSTANCE_COUNT => ("instance", "instances"),
        PREEMPTIBLE_INSTANCE_COUNT => ("preemptible instance", "preemptible instances"),
        DISK_COUNT => ("disk", "disks"),
        NON_GPU_VCPU => ("vCPU", "vCPUs"),
        GPU_CLUSTER_COUNT => ("GPU cluster", "GPU clusters"),
        FILESYSTEM_COUNT => ("filesystem", "filesystems"),
        BUCKET_COUNT => ("bucket", "buckets"),
        VPC_NETWORK_COUNT => ("network", "networks"),
        VPC_SUBNET_COUNT => ("subnet", "subnets"),
        VPC_POOL_COUNT => ("pool", "pools"),
        VPC_ROUTETABLE_COUNT => ("route table", "route tables"),
        VPC_ROUTE_COUNT => ("route", "routes"),
        n if is_gpu_quota(n) => ("GPU", "GPUs"),
        _ => ("unit", "units"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_per_quota_kind() {
        assert_eq!(compatible_units(DISK_SIZE), ["byte"]);
        assert_eq!(compatible_units(FILESYSTEM_SIZE), ["byte"]);
        assert_eq!(
            compatible_units("storage.bucket.size.enhanced-throughput"),
            ["byte"]
        );
        assert_eq!(compatible_units(NON_GPU_VCPU), ["count", "vcpu"]);
        assert_eq!(
            compatible_units("compute.instance.gpu.b200"),
            ["count", "gpu"]
        );
        assert_eq!(compatible_units(DISK_COUNT), ["count"]);
        assert_eq!(compatible_units(PREEMPTIBLE_INSTANCE_COUNT), ["count"]);
    }

    #[test]
    fn only_the_five_topology_quotas_are_optional() {
        for name in OPTIONAL_UNADVERTISED {
            assert!(is_optional(name));
        }
        for name in [
            MK8S_CLUSTER_COUNT,
            VPC_ALLOCATION_COUNT,
            PREEMPTIBLE_INSTANCE_COUNT,
        ] {
            assert!(!is_optional(name));
        }
    }
}
