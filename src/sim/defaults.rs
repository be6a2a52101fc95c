//! What the service fills in when a request leaves it empty: the fields the upstream protos
//! annotate NON_EMPTY_DEFAULT (a network's pools, a subnet's pools and their CIDR states, a
//! bucket's versioning, a node template's boot disk and network interface, a lifecycle
//! rule's filter), and the defaults their comments state (a filesystem's 4 KiB blocks, a
//! node interface on the control plane's subnet). Filled on create and again after an update
//! reset them, as Nebius does; the values Nebius does not publish (the boot disk's size) are
//! the simulator's choice, written down in docs/cloud.md.

use crate::cloud::nid;
use crate::cloud::proto::nebius::compute::v1 as compute;
use crate::cloud::proto::nebius::mk8s::v1 as mk8s;
use crate::cloud::proto::nebius::storage::v1 as storage;
use crate::cloud::proto::nebius::vpc::v1 as vpc;

/// What the service knows of a resource's surroundings when it fills its defaults.
#[derive(Debug, Clone, Default)]
pub struct FillContext {
    /// The resource's ID.
    pub id: String,
    pub region: String,
    /// The control-plane subnet of a node group's cluster.
    pub cluster_subnet_id: String,
}

/// A node template's boot disk when none is asked for: not published by Nebius; the size
/// fleetbot itself asks for CPU nodes.
pub const DEFAULT_BOOT_DISK_GIB: i64 = 128;
/// "The default value is 4096 bytes (4 KiB)" (filesystem.proto).
pub const DEFAULT_FILESYSTEM_BLOCK_BYTES: i64 = 4096;
/// "Defaults to /32 for IPv4" (subnet.proto, pool.proto).
const DEFAULT_MAX_MASK_LENGTH: i64 = 32;

/// A network's default private and public pools: pool IDs of the region, derived from the
/// network's own ID so they are stable.
pub fn network(spec: &mut vpc::NetworkSpec, context: &FillContext) {
    let pool = |visibility: &str| vpc::NetworkPool {
        id: nid::make(
            "vpcpool",
            &context.region,
            &format!("{}/{visibility}", context.id),
        ),
    };
    let private = spec.ipv4_private_pools.get_or_insert_with(Default::default);
    if private.pools.is_empty() {
        private.pools.push(pool("private"));
    }
    let public = spec.ipv4_public_pools.get_or_insert_with(Default::default);
    if public.pools.is_empty() {
        public.pools.push(pool("public"));
    }
}

/// A subnet inherits its network's pools unless it names its own; named CIDRs are available,
/// up to /32.
pub fn subnet(spec: &mut vpc::SubnetSpec) {
    let private = spec
        .ipv4_private_pools
        .get_or_insert_with(|| vpc::IPv4PrivateSubnetPools {
            pools: Vec::new(),
            use_network_pools: true,
        });
    subnet_cidrs(&mut private.pools);
    let public = spec
        .ipv4_public_pools
        .get_or_insert_with(|| vpc::IPv4PublicSubnetPools {
            pools: Vec::new(),
            use_network_pools: true,
        });
    subnet_cidrs(&mut public.pools);
}

fn subnet_cidrs(pools: &mut [vpc::SubnetPool]) {
    for cidr in pools.iter_mut().flat_map(|p| p.cidrs.iter_mut()) {
        if cidr.state == 0 {
            cidr.state = vpc::AddressBlockState::Available as i32;
        }
        if cidr.max_mask_length == 0 {
            cidr.max_mask_length = DEFAULT_MAX_MASK_LENGTH;
        }
    }
}

pub fn pool(spec: &mut vpc::PoolSpec) {
    for cidr in &mut spec.cidrs {
        if cidr.state == 0 {
            cidr.state = vpc::AddressBlockState::Available as i32;
        }
        if cidr.max_mask_length == 0 {
            cidr.max_mask_length = DEFAULT_MAX_MASK_LENGTH;
        }
    }
}

/// A node template's boot disk (network SSD) and its one network interface, on the cluster's
/// control-plane subnet ("By default Cluster control plane subnet_id used").
pub fn node_group(spec: &mut mk8s::NodeGroupSpec, context: &FillContext) {
    let Some(template) = spec.template.as_mut() else {
        return;
    };
    let disk = template.boot_disk.get_or_insert_with(|| mk8s::DiskSpec {
        size: Some(mk8s::disk_spec::Size::SizeGibibytes(DEFAULT_BOOT_DISK_GIB)),
        ..Default::default()
    });
    if disk.r#type == 0 {
        disk.r#type = mk8s::disk_spec::DiskType::NetworkSsd as i32;
    }
    if template.network_interfaces.is_empty() {
        template
            .network_interfaces
            .push(mk8s::NetworkInterfaceTemplate::default());
    }
    for interface in &mut template.network_interfaces {
        if interface.subnet_id.is_empty() {
            interface.subnet_id = context.cluster_subnet_id.clone();
        }
    }
}

pub fn filesystem(spec: &mut compute::FilesystemSpec) {
    if spec.block_size_bytes == 0 {
        spec.block_size_bytes = DEFAULT_FILESYSTEM_BLOCK_BYTES;
    }
}

/// Versioning is disabled unless asked for ("By default, versioning is disabled on
/// buckets."); a lifecycle rule without a filter applies to every object.
pub fn bucket(spec: &mut storage::BucketSpec) {
    if spec.versioning_policy == 0 {
        spec.versioning_policy = storage::VersioningPolicy::Disabled as i32;
    }
    if let Some(lifecycle) = spec.lifecycle_configuration.as_mut() {
        for rule in &mut lifecycle.rules {
            rule.filter.get_or_insert_with(Default::default);
        }
    }
}
