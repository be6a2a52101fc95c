//! How each simulated resource kind is stored, moves through its lifecycle, and what quota and
//! reserved capacity it consumes.

use prost::{Message, Name};
use sha2::Digest;

use super::catalogue;
use super::defaults::{self, FillContext};
use super::rules::validate::Violation;
use crate::cloud::proto::fleetbot::sim::v1::SimState;
use crate::cloud::proto::nebius::applications::v1alpha1 as apps;
use crate::cloud::proto::nebius::common::v1::ResourceMetadata;
use crate::cloud::proto::nebius::compute::v1 as compute;
use crate::cloud::proto::nebius::iam::v1 as iam;
use crate::cloud::proto::nebius::iam::v2 as iam2;
use crate::cloud::proto::nebius::mk8s::v1 as mk8s;
use crate::cloud::proto::nebius::storage::v1 as storage;
use crate::cloud::proto::nebius::vpc::v1 as vpc;

pub const GIB: u64 = 1024 * 1024 * 1024;

/// Where a resource is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Creating,
    Ready,
    Updating,
    Deleting,
}

/// What a resource consumes while it exists.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Charges {
    /// Tenant quota name → amount, in the resource's region.
    pub quotas: Vec<(String, u64)>,
    /// GPUs that must come from capacity block groups (STRICT reservation): platform, block IDs
    /// in order of preference, GPUs.
    pub reserved: Option<Reservation>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reservation {
    pub platform: String,
    pub block_ids: Vec<String>,
    pub gpus: u64,
}

/// One kind of simulated resource.
pub trait Resource: Message + Name + Clone + Default + Send + 'static {
    type Spec: Message + Name + Clone + Default + Send + 'static;
    /// The NID type prefix.
    const KIND: &'static str;
    /// The service name errors and operation IDs carry.
    const SERVICE: &'static str;

    fn metadata(&self) -> Option<&ResourceMetadata>;
    fn metadata_mut(&mut self) -> &mut ResourceMetadata;
    fn build(metadata: ResourceMetadata, spec: Self::Spec) -> Self;
    fn spec(&self) -> Option<Self::Spec>;
    fn set_spec(&mut self, spec: Self::Spec);
    fn items(state: &SimState) -> &Vec<Self>;
    fn items_mut(state: &mut SimState) -> &mut Vec<Self>;
    /// Fills the status for a phase. `region` is the resource's region.
    fn set_phase(&mut self, phase: Phase, region: &str);
    fn charges(&self) -> Charges {
        Charges::default()
    }
    /// Fills what the service fills when a request leaves it empty (the fields annotated
    /// NON_EMPTY_DEFAULT, [`defaults`]), on create and again after an update emptied them.
    fn fill_defaults(&mut self, _context: &FillContext) {}
    /// What the resource asks for that `region` does not offer (a node group's platform and
    /// preset, [`catalogue`]), as field violations.
    fn unavailable(&self, _region: &str) -> Vec<Violation> {
        Vec::new()
    }
    /// The region a resource declares itself (projects do); others inherit their parent's.
    fn own_region(&self) -> Option<String> {
        None
    }

    fn id(&self) -> &str {
        self.metadata().map_or("", |m| m.id.as_str())
    }
    fn parent_id(&self) -> &str {
        self.metadata().map_or("", |m| m.parent_id.as_str())
    }
    fn name(&self) -> &str {
        self.metadata().map_or("", |m| m.name.as_str())
    }
}

macro_rules! resource_basics {
    ($ty:ty, $spec:ty, $kind:literal, $service:literal, $field:ident) => {
        type Spec = $spec;
        const KIND: &'static str = $kind;
        const SERVICE: &'static str = $service;
        fn metadata(&self) -> Option<&ResourceMetadata> {
            self.metadata.as_ref()
        }
        fn metadata_mut(&mut self) -> &mut ResourceMetadata {
            self.metadata.get_or_insert_with(Default::default)
        }
        fn build(metadata: ResourceMetadata, spec: Self::Spec) -> Self {
            Self {
                metadata: Some(metadata),
                spec: Some(spec),
                status: None,
            }
        }
        fn spec(&self) -> Option<Self::Spec> {
            self.spec.clone()
        }
        fn set_spec(&mut self, spec: Self::Spec) {
            self.spec = Some(spec);
        }
        fn items(state: &SimState) -> &Vec<Self> {
            &state.$field
        }
        fn items_mut(state: &mut SimState) -> &mut Vec<Self> {
            &mut state.$field
        }
    };
}

impl Resource for iam::Container {
    resource_basics!(
        iam::Container,
        iam::ContainerSpec,
        "project",
        "iam",
        projects
    );

    fn own_region(&self) -> Option<String> {
        self.spec.as_ref().map(|s| s.region.clone())
    }

    fn set_phase(&mut self, phase: Phase, region: &str) {
        let status = self.status.get_or_insert_with(Default::default);
        status.region = region.to_string();
        status.suspension_state = iam::SuspensionState::None as i32;
        status.container_state = match phase {
            Phase::Creating => iam::State::Creating,
            Phase::Ready | Phase::Updating => iam::State::Active,
            Phase::Deleting => iam::State::SchedulingForDeletion,
        } as i32;
    }
}

impl Resource for vpc::Network {
    resource_basics!(
        vpc::Network,
        vpc::NetworkSpec,
        "vpcnetwork",
        "vpc",
        networks
    );

    fn fill_defaults(&mut self, context: &FillContext) {
        defaults::network(self.spec.get_or_insert_with(Default::default), context);
    }

    fn set_phase(&mut self, phase: Phase, _region: &str) {
        let status = self.status.get_or_insert_with(Default::default);
        status.state = match phase {
            Phase::Creating => vpc::network_status::State::Creating,
            Phase::Ready | Phase::Updating => vpc::network_status::State::Ready,
            Phase::Deleting => vpc::network_status::State::Deleting,
        } as i32;
    }

    fn charges(&self) -> Charges {
        // A network comes with its private and public pools and a default route table.
        Charges {
            quotas: vec![
                ("vpc.network.count".into(), 1),
                ("vpc.pool.count".into(), 2),
                ("vpc.routetable.count".into(), 1),
                ("vpc.route.count".into(), 1),
            ],
            reserved: None,
        }
    }
}

impl Resource for vpc::Subnet {
    resource_basics!(vpc::Subnet, vpc::SubnetSpec, "vpcsubnet", "vpc", subnets);

    fn fill_defaults(&mut self, _context: &FillContext) {
        defaults::subnet(self.spec.get_or_insert_with(Default::default));
    }

    fn set_phase(&mut self, phase: Phase, _region: &str) {
        let id = self.id().to_string();
        let status = self.status.get_or_insert_with(Default::default);
        status.state = match phase {
            Phase::Creating => vpc::subnet_status::State::Creating,
            Phase::Ready | Phase::Updating => vpc::subnet_status::State::Ready,
            Phase::Deleting => vpc::subnet_status::State::Deleting,
        } as i32;
        if status.ipv4_private_pools.is_empty() {
            // A stable /24 per subnet, from its ID.
            let octet = id
                .bytes()
                .fold(0u8, |acc, b| acc.wrapping_mul(31).wrapping_add(b));
            status.ipv4_private_pools.push(vpc::SubnetStatusPool {
                pool_id: String::new(),
                cidrs: vec![format!("10.{octet}.0.0/24")],
            });
        }
    }

    fn charges(&self) -> Charges {
        Charges {
            quotas: vec![("vpc.subnet.count".into(), 1)],
            reserved: None,
        }
    }
}

impl Resource for vpc::Pool {
    resource_basics!(vpc::Pool, vpc::PoolSpec, "vpcpool", "vpc", pools);

    fn fill_defaults(&mut self, _context: &FillContext) {
        defaults::pool(self.spec.get_or_insert_with(Default::default));
    }

    fn set_phase(&mut self, phase: Phase, _region: &str) {
        let status = self.status.get_or_insert_with(Default::default);
        status.state = match phase {
            Phase::Creating => vpc::pool_status::State::Creating,
            Phase::Ready | Phase::Updating => vpc::pool_status::State::Ready,
            Phase::Deleting => vpc::pool_status::State::Deleting,
        } as i32;
    }

    fn charges(&self) -> Charges {
        Charges {
            quotas: vec![("vpc.pool.count".into(), 1)],
            reserved: None,
        }
    }
}

impl Resource for mk8s::Cluster {
    resource_basics!(
        mk8s::Cluster,
        mk8s::ClusterSpec,
        "mk8scluster",
        "mk8s",
        clusters
    );

    fn set_phase(&mut self, phase: Phase, _region: &str) {
        let id = self.id().to_string();
        let version = self
            .spec
            .as_ref()
            .and_then(|s| s.control_plane.as_ref())
            .map(|c| c.version.clone())
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| "1.31".to_string());
        let status = self.status.get_or_insert_with(Default::default);
        status.state = match phase {
            Phase::Creating | Phase::Updating => mk8s::cluster_status::State::Provisioning,
            Phase::Ready => mk8s::cluster_status::State::Running,
            Phase::Deleting => mk8s::cluster_status::State::Deleting,
        } as i32;
        status.reconciling = phase != Phase::Ready;
        if phase == Phase::Ready {
            status.control_plane = Some(mk8s::ControlPlaneStatus {
                version: format!("{version}.0-nebius-cp.1"),
                endpoints: Some(mk8s::ControlPlaneStatusEndpoints {
                    public_endpoint: format!("https://{id}.mk8s.sim.fleetbot.invalid"),
                    private_endpoint: String::new(),
                }),
                etcd_cluster_size: 3,
                auth: Some(mk8s::ControlPlaneStatusAuth {
                    cluster_ca_certificate:
                        "-----BEGIN CERTIFICATE-----\nc2ltdWxhdGVk\n-----END CERTIFICATE-----\n"
                            .into(),
                }),
            });
        }
    }

    fn charges(&self) -> Charges {
        Charges {
            quotas: vec![("mk8s.cluster.count".into(), 1)],
            reserved: None,
        }
    }
}

/// What a node group's hosts are, from the catalogue: `None` for a platform or preset the
/// catalogue does not have (refused on create; absent only from state written before).
pub fn node_group_hardware(
    spec: &mk8s::NodeGroupSpec,
) -> Option<(&'static catalogue::Platform, &'static catalogue::Preset)> {
    let resources = spec.template.as_ref()?.resources.as_ref()?;
    let mk8s::resources_spec::Size::Preset(preset) = resources.size.as_ref()?;
    let platform = catalogue::platform(&resources.platform)?;
    Some((platform, platform.preset(preset)?))
}

impl Resource for mk8s::NodeGroup {
    resource_basics!(
        mk8s::NodeGroup,
        mk8s::NodeGroupSpec,
        "mk8snodegroup",
        "mk8s",
        node_groups
    );

    fn fill_defaults(&mut self, context: &FillContext) {
        defaults::node_group(self.spec.get_or_insert_with(Default::default), context);
    }

    fn unavailable(&self, region: &str) -> Vec<Violation> {
        let Some(resources) = self
            .spec
            .as_ref()
            .and_then(|s| s.template.as_ref())
            .and_then(|t| t.resources.as_ref())
        else {
            return Vec::new();
        };
        let preset = match &resources.size {
            Some(mk8s::resources_spec::Size::Preset(p)) => p.as_str(),
            None => "",
        };
        catalogue::refusal(region, &resources.platform, preset)
            .map(|(field, message)| Violation {
                field: format!("spec.template.resources.{field}"),
                message,
            })
            .into_iter()
            .collect()
    }

    fn set_phase(&mut self, phase: Phase, _region: &str) {
        let target = match self.spec.as_ref().and_then(|s| s.size.as_ref()) {
            Some(mk8s::node_group_spec::Size::FixedNodeCount(n)) => *n,
            Some(mk8s::node_group_spec::Size::Autoscaling(a)) => a.min_node_count,
            None => 0,
        };
        let status = self.status.get_or_insert_with(Default::default);
        status.state = match phase {
            Phase::Creating | Phase::Updating => mk8s::node_group_status::State::Provisioning,
            Phase::Ready => mk8s::node_group_status::State::Running,
            Phase::Deleting => mk8s::node_group_status::State::Deleting,
        } as i32;
        status.reconciling = phase != Phase::Ready;
        status.target_node_count = target;
        if phase == Phase::Ready {
            status.node_count = target;
            status.ready_node_count = target;
            status.version = "1.31.0-nebius-node.1".into();
        }
    }

    fn charges(&self) -> Charges {
        let Some(spec) = &self.spec else {
            return Charges::default();
        };
        let nodes = match spec.size {
            Some(mk8s::node_group_spec::Size::FixedNodeCount(n)) => n.max(0) as u64,
            Some(mk8s::node_group_spec::Size::Autoscaling(ref a)) => a.max_node_count.max(0) as u64,
            None => 0,
        };
        let template = spec.template.clone().unwrap_or_default();
        let hardware = node_group_hardware(spec);
        let (vcpus, gpus) =
            hardware.map_or((0, 0), |(_, p)| (u64::from(p.vcpus), u64::from(p.gpus)));
        let preemptible = template.preemptible.is_some();
        let boot_bytes = template.boot_disk.as_ref().map_or(0, disk_bytes);
        let mut quotas = vec![
            ("compute.disk.count".to_string(), nodes),
            (
                "compute.disk.size.network-ssd".to_string(),
                nodes * boot_bytes,
            ),
            ("vpc.allocation.count".to_string(), 2 * nodes),
        ];
        if preemptible {
            quotas.push(("compute.instance.preemptible.count".into(), nodes));
        } else {
            quotas.push(("compute.instance.count".into(), nodes));
        }
        let mut reserved = None;
        if gpus == 0 {
            quotas.push(("compute.instance.non-gpu.vcpu".into(), nodes * vcpus));
        } else {
            let policy = template.reservation_policy.clone().unwrap_or_default();
            let strict = policy.policy == mk8s::reservation_policy::Policy::Strict as i32;
            if strict && !policy.reservation_ids.is_empty() {
                reserved = Some(Reservation {
                    platform: hardware.map_or_else(String::new, |(p, _)| p.name.to_string()),
                    block_ids: policy.reservation_ids.clone(),
                    gpus: nodes * gpus,
                });
            } else if !preemptible && let Some((platform, _)) = hardware {
                quotas.push((platform.gpu_quota.to_string(), nodes * gpus));
            }
        }
        Charges { quotas, reserved }
    }
}

fn disk_bytes(disk: &mk8s::DiskSpec) -> u64 {
    use mk8s::disk_spec::Size;
    match disk.size {
        Some(Size::SizeBytes(b)) => b.max(0) as u64,
        Some(Size::SizeKibibytes(k)) => k.max(0) as u64 * 1024,
        Some(Size::SizeMebibytes(m)) => m.max(0) as u64 * 1024 * 1024,
        Some(Size::SizeGibibytes(g)) => g.max(0) as u64 * GIB,
        None => 0,
    }
}

impl Resource for compute::Filesystem {
    resource_basics!(
        compute::Filesystem,
        compute::FilesystemSpec,
        "computefilesystem",
        "compute",
        filesystems
    );

    fn fill_defaults(&mut self, _context: &FillContext) {
        defaults::filesystem(self.spec.get_or_insert_with(Default::default));
    }

    fn set_phase(&mut self, phase: Phase, _region: &str) {
        let size = self.spec.as_ref().map_or(0, filesystem_bytes);
        let status = self.status.get_or_insert_with(Default::default);
        status.state = match phase {
            Phase::Creating => compute::filesystem_status::State::Creating,
            Phase::Ready => compute::filesystem_status::State::Ready,
            Phase::Updating => compute::filesystem_status::State::Updating,
            Phase::Deleting => compute::filesystem_status::State::Deleting,
        } as i32;
        status.reconciling = phase != Phase::Ready;
        status.size_bytes = size as i64;
    }

    fn charges(&self) -> Charges {
        let size = self.spec.as_ref().map_or(0, filesystem_bytes);
        Charges {
            quotas: vec![
                ("compute.filesystem.count".into(), 1),
                ("compute.filesystem.size.network-ssd".into(), size),
            ],
            reserved: None,
        }
    }
}

fn filesystem_bytes(spec: &compute::FilesystemSpec) -> u64 {
    use compute::filesystem_spec::Size;
    match spec.size {
        Some(Size::SizeBytes(b)) => b.max(0) as u64,
        Some(Size::SizeKibibytes(k)) => k.max(0) as u64 * 1024,
        Some(Size::SizeMebibytes(m)) => m.max(0) as u64 * 1024 * 1024,
        Some(Size::SizeGibibytes(g)) => g.max(0) as u64 * GIB,
        None => 0,
    }
}

impl Resource for compute::GpuCluster {
    resource_basics!(
        compute::GpuCluster,
        compute::GpuClusterSpec,
        "computegpucluster",
        "compute",
        gpu_clusters
    );

    fn set_phase(&mut self, phase: Phase, _region: &str) {
        let status = self.status.get_or_insert_with(Default::default);
        status.reconciling = phase != Phase::Ready;
    }

    fn charges(&self) -> Charges {
        Charges {
            quotas: vec![("compute.gpucluster.count".into(), 1)],
            reserved: None,
        }
    }
}

/// The quota suffix of a storage class (`storage.bucket.size.<suffix>`).
pub fn storage_class_quota(class: i32) -> &'static str {
    match storage::StorageClass::try_from(class) {
        Ok(storage::StorageClass::EnhancedThroughput) => "enhanced-throughput",
        Ok(storage::StorageClass::Intelligent) => "intelligent",
        _ => "standard",
    }
}

impl Resource for apps::K8sRelease {
    resource_basics!(
        apps::K8sRelease,
        apps::K8sReleaseSpec,
        "applicationrelease",
        "applications",
        releases
    );

    /// Installing until the operation completes, then deployed; a world may script another
    /// ending per product ([`crate::sim::core::Core::settle_release`]).
    fn set_phase(&mut self, phase: Phase, _region: &str) {
        use apps::k8s_release_status::State as S;
        let status = self.status.get_or_insert_with(Default::default);
        status.state = match phase {
            Phase::Creating | Phase::Updating => S::Installing,
            Phase::Ready => S::Deployed,
            Phase::Deleting => return,
        } as i32;
        status.error_message.clear();
    }
}

impl Resource for storage::Bucket {
    resource_basics!(
        storage::Bucket,
        storage::BucketSpec,
        "storagebucket",
        "storage",
        buckets
    );

    fn fill_defaults(&mut self, _context: &FillContext) {
        defaults::bucket(self.spec.get_or_insert_with(Default::default));
    }

    fn set_phase(&mut self, phase: Phase, region: &str) {
        let status = self.status.get_or_insert_with(Default::default);
        status.state = match phase {
            Phase::Creating => storage::bucket_status::State::Creating,
            Phase::Ready => storage::bucket_status::State::Active,
            Phase::Updating => storage::bucket_status::State::Updating,
            Phase::Deleting => storage::bucket_status::State::ScheduledForDeletion,
        } as i32;
        status.suspension_state = storage::bucket_status::SuspensionState::NotSuspended as i32;
        status.region = region.to_string();
        // Until the S3 endpoint listens (Core::present_s3_api), a name that resolves nowhere.
        if status.domain_name.is_empty() {
            status.domain_name = format!("storage.{region}.sim.fleetbot.invalid");
        }
    }

    fn charges(&self) -> Charges {
        let spec = self.spec.clone().unwrap_or_default();
        Charges {
            quotas: vec![
                ("storage.bucket.count".into(), 1),
                (
                    format!(
                        "storage.bucket.size.{}",
                        storage_class_quota(spec.default_storage_class)
                    ),
                    spec.max_size_bytes.max(0) as u64,
                ),
            ],
            reserved: None,
        }
    }
}

impl Resource for iam::ServiceAccount {
    resource_basics!(
        iam::ServiceAccount,
        iam::ServiceAccountSpec,
        "serviceaccount",
        "iam",
        service_accounts
    );

    fn set_phase(&mut self, phase: Phase, _region: &str) {
        let status = self.status.get_or_insert_with(Default::default);
        status.active = phase != Phase::Deleting;
    }
}

impl Resource for iam2::AccessKey {
    resource_basics!(
        iam2::AccessKey,
        iam2::AccessKeySpec,
        "accesskey",
        "iam",
        access_keys
    );

    /// The key pair is made once, at creation; S3 accepts it only while the key is ACTIVE.
    fn set_phase(&mut self, phase: Phase, _region: &str) {
        let status = self.status.get_or_insert_with(Default::default);
        if status.aws_access_key_id.is_empty() {
            let id = uuid::Uuid::new_v4().simple().to_string().to_uppercase();
            status.aws_access_key_id = format!("NAKI{}", &id[..16]);
            // 40 characters, as AWS secrets are; two v4 UUIDs are 244 random bits.
            let secret = format!(
                "{}{}",
                uuid::Uuid::new_v4().simple(),
                uuid::Uuid::new_v4().simple()
            );
            status.secret = secret[..40].to_string();
            status.algorithm = "HMAC-SHA256".into();
            status.key_size = 40;
            status.fingerprint = hex::encode(&sha2::Sha256::digest(status.secret.as_bytes())[..8]);
        }
        status.state = match phase {
            Phase::Creating | Phase::Ready | Phase::Updating => {
                iam2::access_key_status::State::Active
            }
            Phase::Deleting => iam2::access_key_status::State::Deleting,
        } as i32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node_group(
        count: i64,
        platform: &str,
        preset: &str,
        preemptible: bool,
        strict: &[&str],
    ) -> mk8s::NodeGroup {
        mk8s::NodeGroup {
            metadata: None,
            spec: Some(mk8s::NodeGroupSpec {
                size: Some(mk8s::node_group_spec::Size::FixedNodeCount(count)),
                template: Some(mk8s::NodeTemplate {
                    resources: Some(mk8s::ResourcesSpec {
                        platform: platform.into(),
                        size: Some(mk8s::resources_spec::Size::Preset(preset.into())),
                    }),
                    boot_disk: Some(mk8s::DiskSpec {
                        size: Some(mk8s::disk_spec::Size::SizeGibibytes(128)),
                        ..Default::default()
                    }),
                    preemptible: preemptible.then(Default::default),
                    reservation_policy: (!strict.is_empty()).then(|| mk8s::ReservationPolicy {
                        policy: mk8s::reservation_policy::Policy::Strict as i32,
                        reservation_ids: strict.iter().map(|s| s.to_string()).collect(),
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            status: None,
        }
    }

    fn quota(c: &Charges, name: &str) -> Option<u64> {
        c.quotas.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
    }

    #[test]
    fn gpu_node_group_charges_family_quota() {
        let c = node_group(2, "gpu-h200-sxm", "8gpu-128vcpu-1600gb", false, &[]).charges();
        assert_eq!(quota(&c, "compute.instance.gpu.h200"), Some(16));
        assert_eq!(quota(&c, "compute.instance.count"), Some(2));
        assert_eq!(quota(&c, "vpc.allocation.count"), Some(4));
        assert_eq!(quota(&c, "compute.disk.size.network-ssd"), Some(256 * GIB));
        assert_eq!(quota(&c, "compute.instance.non-gpu.vcpu"), None);
    }

    #[test]
    fn reserved_and_preemptible_pools_skip_gpu_quota() {
        let c = node_group(2, "gpu-rtx6000", "8gpu-192vcpu-1744gb", false, &["cbg"]).charges();
        assert_eq!(quota(&c, "compute.instance.gpu.rtx6000"), None);
        assert_eq!(c.reserved.unwrap().gpus, 16);
        let c = node_group(3, "gpu-rtx6000", "1gpu-24vcpu-218gb", true, &[]).charges();
        assert_eq!(quota(&c, "compute.instance.preemptible.count"), Some(3));
        assert_eq!(quota(&c, "compute.instance.count"), None);
        assert_eq!(quota(&c, "compute.instance.gpu.rtx6000"), None);
    }

    #[test]
    fn cpu_node_group_charges_vcpus() {
        let c = node_group(3, "cpu-d3", "16vcpu-64gb", false, &[]).charges();
        assert_eq!(quota(&c, "compute.instance.non-gpu.vcpu"), Some(48));
    }

    /// The hardware is the catalogue's: a preset whose name reads like numbers the catalogue
    /// does not have charges nothing (and is refused before it could be created).
    #[test]
    fn charges_come_from_the_catalogue_not_the_preset_name() {
        let c = node_group(1, "gpu-b200-sxm", "8gpu-160vcpu-1792gb", false, &[]).charges();
        assert_eq!(quota(&c, "compute.instance.gpu.b200"), Some(8));
        let c = node_group(1, "cpu-d3", "12vcpu-48gb", false, &[]).charges();
        assert_eq!(quota(&c, "compute.instance.non-gpu.vcpu"), Some(0));
    }
}
