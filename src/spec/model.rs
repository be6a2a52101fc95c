//! The fleet spec model (`npa.fleet/v0.0.1`): fleets, projects, clusters, pools and policy blocks.

use std::sync::Arc;

use super::names::slug;
use super::soperator::SoperatorSpec;
use super::yaml::Pos;

pub const API_VERSION: &str = "npa.fleet/v0.0.1";
pub const DEFAULT_MANAGED_DRIVER_PRESET: &str = "cuda13.0";
pub const DEFAULT_CUDA_SMOKE_IMAGE: &str =
    "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0-ubuntu22.04";
pub const DEFAULT_GRAPHICS_SMOKE_IMAGE: &str = "ghcr.io/nebius/nebius-physical-ai/npa-sonic@sha256:c9ba0996b28f54b013e36da689638b386a7ef9c0c8c4413fc4b3c72ff1a808bb";
pub const DEFAULT_STABILIZATION_SECONDS: i64 = 120;
pub const DEFAULT_GPU_HEALTH_TIMEOUT_MINUTES: i64 = 60;
pub const DEFAULT_CPU_PLATFORM: &str = "cpu-d3";
pub const DEFAULT_GPU_PLATFORM: &str = "gpu-rtx6000";

/// Pinned MIG tuple (RTX PRO 6000 Blackwell Server Edition), from the reference `mig.py`.
pub mod mig_pins {
    pub const PLATFORM: &str = "gpu-rtx6000";
    pub const PRESET: &str = "1gpu-24vcpu-218gb";
    pub const BOOT_DISK_GIB: i64 = 128;
    pub const KUBERNETES_VERSION: &str = "1.34";
    pub const STRATEGY: &str = "mixed";
    pub const CONFIG: &str = "all-balanced";
    pub const GPU_OPERATOR_VERSION: &str = "v26.3.3";
    pub const GPU_DRIVER_VERSION: &str = "580.173.02";
    pub const GPU_DEVICE_PLUGIN_VERSION: &str = "v0.19.3";
    pub const GPU_GFD_VERSION: &str = "v0.19.3";
    pub const GPU_MIG_MANAGER_VERSION: &str = "v0.14.2";
    pub const GPU_CONTAINER_TOOLKIT_VERSION: &str = "v1.19.1";
    pub const GPU_CUDA_VERSION: &str = "13.0";
}

/// Pinned KubeRay runtime.
pub mod ray_pins {
    pub const RAY_VERSION: &str = "2.58.0";
    pub const RAY_IMAGE: &str = "docker.io/rayproject/ray@sha256:507464fe56b3d24cec2e812a25850db91b97d52752d63119fecf6914f7b0a37a";
    /// What the KubeRay head pod requests.
    pub const HEAD_CPUS: i64 = 1;
    pub const HEAD_MEMORY_GIB: i64 = 4;
}

/// Positions of the values a spec object was built from, keyed by field path relative to the
/// object (`gpu_nodes.count`), so a validation error can point at the exact value.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Positions {
    /// Where the object itself starts.
    pub at: Pos,
    /// The object's path in the document, e.g. `projects[1].clusters[0]`.
    pub path: String,
    pub fields: FieldPositions,
}

/// Field paths and where each was written, sorted. Every cluster of a fleet records the same
/// dozen paths, so the paths are shared (one allocation per spec, not per cluster): with a
/// map of owned strings per cluster this was a third of the memory a large spec took.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldPositions(Vec<(Arc<str>, Pos)>);

impl FieldPositions {
    fn find(&self, key: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(k, _)| (**k).cmp(key))
    }

    pub fn get(&self, key: &str) -> Option<&Pos> {
        self.find(key).ok().map(|i| &self.0[i].1)
    }

    /// Records `key` at `pos` (a later record of the same key wins).
    pub fn insert(&mut self, key: Arc<str>, pos: Pos) {
        match self.find(&key) {
            Ok(i) => self.0[i].1 = pos,
            Err(i) => self.0.insert(i, (key, pos)),
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &Pos)> {
        self.0.iter().map(|(k, p)| (&**k, p))
    }

    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(k, _)| &**k)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Extend<(Arc<str>, Pos)> for FieldPositions {
    fn extend<I: IntoIterator<Item = (Arc<str>, Pos)>>(&mut self, iter: I) {
        for (k, p) in iter {
            self.insert(k, p);
        }
    }
}

impl Positions {
    /// The position of `field`, or of the object when the field was not written.
    pub fn of(&self, field: &str) -> Pos {
        self.fields.get(field).copied().unwrap_or(self.at)
    }

    /// The position of `field`, else of the nearest written field that contains it
    /// (`cpu_nodes` for an unwritten `cpu_nodes.preset`), else of the object.
    pub fn nearest(&self, field: &str) -> Pos {
        let mut path = field;
        loop {
            if let Some(pos) = self.fields.get(path) {
                return *pos;
            }
            match path.rsplit_once('.') {
                Some((parent, _)) => path = parent,
                None => return self.at,
            }
        }
    }

    /// The full path of `field`.
    pub fn path_of(&self, field: &str) -> String {
        match (self.path.is_empty(), field.is_empty()) {
            (_, true) => self.path.clone(),
            (true, false) => field.to_string(),
            (false, false) => format!("{}.{}", self.path, field),
        }
    }
}

/// A whole fleet: many clusters across many projects in one tenant.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FleetSpec {
    pub name: String,
    pub tenant_id: String,
    pub region: String,
    pub project_prefix: String,
    pub ssh_public_key: String,
    pub projects: Vec<ProjectSpec>,
    pub profile: String,
    /// The file the spec was read from, for error messages.
    pub source: String,
    pub positions: Positions,
    /// Keys the reference ignores (typos, mostly), for the caller to show or refuse.
    pub warnings: super::warning::SpecWarnings,
    /// Runtime values that had nothing to fill in this spec (see [`crate::runtime`]).
    pub runtime_notes: Vec<super::SpecError>,
}

/// A deployment target: an existing `project_id` or a name created on demand.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ProjectSpec {
    pub name: String,
    pub project_id: String,
    pub region: String,
    pub clusters: Vec<ClusterSpec>,
    pub object_storage: Option<ObjectStorageSpec>,
    pub positions: Positions,
    /// The existing project this one is bound to by the operator's runtime values
    /// ([`crate::runtime`]); empty otherwise. Used for every cloud call, never shown: the
    /// key and display name stay those of the public spec.
    pub bound_project_id: String,
}

/// The project-scoped bucket, separate from any cluster filesystem.
#[derive(Clone, PartialEq, Default)]
pub struct ObjectStorageSpec {
    pub enabled: bool,
    pub storage_class: String,
    pub size_gibibytes: i64,
    /// Kept out of `Debug` output: public specs leave it empty, and a real name is private.
    pub bucket_name: String,
}

impl std::fmt::Debug for ObjectStorageSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectStorageSpec")
            .field("enabled", &self.enabled)
            .field("storage_class", &self.storage_class)
            .field("size_gibibytes", &self.size_gibibytes)
            .field("bucket_name_set", &!self.bucket_name.is_empty())
            .finish()
    }
}

impl ObjectStorageSpec {
    /// `standard`, `enhanced_throughput` or `intelligent` (or the unrecognised input, lowered).
    pub fn normalized_storage_class(&self) -> String {
        let normalized = self.storage_class.trim().to_lowercase().replace('-', "_");
        match normalized.as_str() {
            "enhanced" | "enhanced_throughput" => "enhanced_throughput".to_string(),
            _ => normalized,
        }
    }

    /// The class as plan output shows it (`enhanced` for Enhanced Throughput).
    pub fn display_storage_class(&self) -> String {
        let normalized = self.normalized_storage_class();
        if normalized == "enhanced_throughput" {
            "enhanced".to_string()
        } else {
            normalized
        }
    }
}

/// One node group of a cluster.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NodePoolSpec {
    pub count: i64,
    pub platform: String,
    pub preset: String,
    pub disk_size_gib: i64,
    pub capacity_block_group: String,
    pub preemptible: bool,
}

impl NodePoolSpec {
    pub fn is_gpu(&self) -> bool {
        self.platform.starts_with("gpu-")
    }
}

/// Hardware MIG policy for the GPU pool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigSpec {
    pub enabled: bool,
    pub strategy: String,
    pub config: String,
}

/// Opt-in CPU RayCluster policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubeRaySpec {
    pub enabled: bool,
    pub worker_replicas: i64,
    pub worker_cpus: i64,
    pub worker_memory_gib: i64,
}

impl Default for KubeRaySpec {
    fn default() -> Self {
        KubeRaySpec {
            enabled: false,
            worker_replicas: 1,
            worker_cpus: 2,
            worker_memory_gib: 4,
        }
    }
}

/// Which adapter owns a target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash, PartialOrd, Ord)]
pub enum Backend {
    #[default]
    Mk8s,
    Soperator,
}

impl Backend {
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Mk8s => "mk8s",
            Backend::Soperator => "soperator",
        }
    }
}

/// One managed Kubernetes cluster target.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterSpec {
    pub name: String,
    pub k8s_version: String,
    pub cpu_nodes: Option<NodePoolSpec>,
    pub gpu_nodes: Option<NodePoolSpec>,
    pub enable_gpu_cluster: Option<bool>,
    pub infiniband_fabric: String,
    pub enable_filestore: bool,
    pub existing_filestore: String,
    pub filestore_disk_size_gibibytes: i64,
    pub gpu_disk_size_gib: i64,
    pub subnet_id: String,
    pub filestore_mount_path: String,
    pub filestore_mount_tag: String,
    pub filesystem_csi_chart_repository: String,
    pub gpu_driver_mode: String,
    pub managed_driver_preset: String,
    pub allow_unsafe_nvswitch_operator: bool,
    pub gpu_health_stabilization_seconds: i64,
    pub gpu_health_timeout_minutes: i64,
    pub gpu_cuda_smoke: bool,
    pub gpu_cuda_smoke_image: String,
    pub mig: Option<MigSpec>,
    pub backend: Backend,
    pub soperator: Option<Box<SoperatorSpec>>,
    /// Whether the spec named the backend (`backend:` or an `mk8s:` envelope); legacy flat
    /// clusters keep plan output without a `backend` key.
    pub backend_explicit: bool,
    /// Only standalone single-cluster use may have no workers; fleet targets never do.
    pub allow_control_plane_only: bool,
    pub gpu_workload_profile: String,
    pub gpu_graphics_smoke: bool,
    pub gpu_graphics_smoke_image: String,
    /// File name to file content, in the order written.
    pub gpu_driver_package_repositories: Vec<(String, String)>,
    /// Set when the value was not a mapping, so validation can report it in order.
    pub gpu_driver_package_repositories_invalid: bool,
    /// An mk8s cluster carrying a `soperator` mapping; validation refuses it in order.
    pub carries_soperator: bool,
    pub kuberay: Option<KubeRaySpec>,
    pub positions: Positions,
}

impl Default for ClusterSpec {
    fn default() -> Self {
        ClusterSpec {
            name: "cluster".to_string(),
            k8s_version: String::new(),
            cpu_nodes: None,
            gpu_nodes: None,
            enable_gpu_cluster: None,
            infiniband_fabric: String::new(),
            enable_filestore: false,
            existing_filestore: String::new(),
            filestore_disk_size_gibibytes: 1024,
            gpu_disk_size_gib: 1023,
            subnet_id: String::new(),
            filestore_mount_path: "/mnt/data".to_string(),
            filestore_mount_tag: "data".to_string(),
            filesystem_csi_chart_repository: String::new(),
            gpu_driver_mode: "auto".to_string(),
            managed_driver_preset: DEFAULT_MANAGED_DRIVER_PRESET.to_string(),
            allow_unsafe_nvswitch_operator: false,
            gpu_health_stabilization_seconds: DEFAULT_STABILIZATION_SECONDS,
            gpu_health_timeout_minutes: DEFAULT_GPU_HEALTH_TIMEOUT_MINUTES,
            gpu_cuda_smoke: true,
            gpu_cuda_smoke_image: DEFAULT_CUDA_SMOKE_IMAGE.to_string(),
            mig: None,
            backend: Backend::Mk8s,
            soperator: None,
            backend_explicit: false,
            allow_control_plane_only: false,
            gpu_workload_profile: String::new(),
            gpu_graphics_smoke: false,
            gpu_graphics_smoke_image: DEFAULT_GRAPHICS_SMOKE_IMAGE.to_string(),
            gpu_driver_package_repositories: Vec::new(),
            gpu_driver_package_repositories_invalid: false,
            carries_soperator: false,
            kuberay: None,
            positions: Positions::default(),
        }
    }
}

/// GPUs per node encoded by a preset (`8gpu-…` → 8), 0 when there is none.
pub fn gpus_per_node(preset: &str) -> i64 {
    let lowered = preset.trim().to_lowercase();
    let digits: String = lowered.chars().take_while(char::is_ascii_digit).collect();
    if digits.is_empty() || !lowered[digits.len()..].starts_with("gpu-") {
        return 0;
    }
    digits.parse().unwrap_or(0)
}

/// An 8-GPU SXM/NVL node: the only shape that can join an InfiniBand GPU cluster.
///
/// The reference's newest body of this helper was not published; its error text and examples
/// say "fabric-capable 8-GPU SXM/NVL", which is what this checks.
pub fn is_fabric_capable_topology(platform: &str, preset: &str) -> bool {
    let platform = platform.trim().to_lowercase();
    gpus_per_node(preset) == 8 && (platform.contains("-sxm") || platform.contains("-nvl"))
}

/// NVSwitch-class topology: a GPU cluster, or a multi-GPU SXM/NVL node.
pub fn is_nvswitch_topology(platform: &str, preset: &str, enable_gpu_cluster: bool) -> bool {
    let platform = platform.trim().to_lowercase();
    enable_gpu_cluster
        || (gpus_per_node(preset) > 1 && (platform.contains("-sxm") || platform.contains("-nvl")))
}

impl ClusterSpec {
    pub fn backend_name(&self) -> &'static str {
        self.backend.as_str()
    }

    pub fn mig_enabled(&self) -> bool {
        self.mig.as_ref().is_some_and(|m| m.enabled)
    }

    pub fn resolved_k8s_version(&self) -> String {
        if self.mig_enabled() && self.k8s_version.is_empty() {
            return mig_pins::KUBERNETES_VERSION.to_string();
        }
        self.k8s_version.clone()
    }

    pub fn resolved_gpu_disk_size_gib(&self) -> i64 {
        match &self.gpu_nodes {
            Some(gpu) if gpu.disk_size_gib > 0 => gpu.disk_size_gib,
            _ if self.mig_enabled() => mig_pins::BOOT_DISK_GIB,
            _ => self.gpu_disk_size_gib,
        }
    }

    /// The requested driver mode, forced to `operator` by MIG.
    pub fn resolved_gpu_driver_mode(&self) -> String {
        if self.mig_enabled() {
            "operator".to_string()
        } else {
            self.gpu_driver_mode.clone()
        }
    }

    /// `enable_gpu_cluster` as set, else true exactly for a populated `8gpu-` pool on a
    /// fabric-capable SXM/NVL platform: the seed's rule ("GPU clustering (InfiniBand fabric) is
    /// only valid on fabric-capable 8-GPU SXM presets"; "the 8-GPU RTX shape remains
    /// non-fabric"), fleet-engine §2.14, in the spec and its backend model alike. An 8-GPU RTX
    /// PCIe pool therefore resolves false and deploys without a fabric; only an explicit `true`
    /// on it is refused (rule 12).
    pub fn resolved_enable_gpu_cluster(&self) -> bool {
        if let Some(explicit) = self.enable_gpu_cluster {
            return explicit;
        }
        self.gpu_nodes.as_ref().is_some_and(|g| {
            g.count > 0
                && g.preset.starts_with("8gpu-")
                && is_fabric_capable_topology(&g.platform, &g.preset)
        })
    }

    pub fn gpu_count(&self) -> i64 {
        self.gpu_nodes.as_ref().map_or(0, |p| p.count)
    }

    pub fn cpu_count(&self) -> i64 {
        self.cpu_nodes.as_ref().map_or(0, |p| p.count)
    }

    /// The driver selection as deploy will use it (mode lowered; `auto` becomes `managed-image`
    /// when there are GPUs). Validation has already rejected unknown modes.
    pub fn driver_selection(&self) -> DriverSelection {
        self.driver_selection_with(self.resolved_enable_gpu_cluster())
    }

    /// The driver selection with a given GPU-cluster resolution (the spec's or the backend
    /// model's).
    pub fn driver_selection_with(&self, enable_gpu_cluster: bool) -> DriverSelection {
        let requested = {
            let mode = self.resolved_gpu_driver_mode();
            let mode = mode.trim().to_lowercase();
            if mode.is_empty() {
                "auto".to_string()
            } else {
                mode
            }
        };
        let gpu_enabled = self.gpu_count() > 0;
        let (platform, preset) = self
            .gpu_nodes
            .as_ref()
            .map_or(("", ""), |g| (g.platform.as_str(), g.preset.as_str()));
        let nvswitch = gpu_enabled && is_nvswitch_topology(platform, preset, enable_gpu_cluster);
        let effective = if gpu_enabled && requested == "auto" {
            "managed-image".to_string()
        } else {
            requested.clone()
        };
        let preset_value = self.managed_driver_preset.trim();
        DriverSelection {
            requested_mode: requested,
            managed_driver_preset: if preset_value.is_empty() {
                DEFAULT_MANAGED_DRIVER_PRESET.to_string()
            } else {
                preset_value.to_string()
            },
            unsafe_operator_acknowledged: gpu_enabled
                && effective == "operator"
                && nvswitch
                && self.allow_unsafe_nvswitch_operator,
            effective_mode: effective,
            gpu_enabled,
            nvswitch,
        }
    }
}

/// Resolved GPU driver behaviour for one cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriverSelection {
    pub requested_mode: String,
    pub effective_mode: String,
    pub managed_driver_preset: String,
    pub gpu_enabled: bool,
    pub nvswitch: bool,
    pub unsafe_operator_acknowledged: bool,
}

impl DriverSelection {
    pub fn uses_managed_image(&self) -> bool {
        self.gpu_enabled && self.effective_mode == "managed-image"
    }
}

impl ProjectSpec {
    /// The local key (install and state directories); never a cloud name.
    pub fn key(&self) -> String {
        let base = if !self.name.is_empty() {
            &self.name
        } else if !self.project_id.is_empty() {
            &self.project_id
        } else {
            "project"
        };
        slug(base)
    }

    /// The provider display name: `prefix + name` unless the name already has the prefix;
    /// the `project_id` when there is no name.
    pub fn display_name(&self, prefix: &str) -> String {
        if !self.name.is_empty() {
            if !prefix.is_empty() && !self.name.starts_with(prefix) {
                return format!("{prefix}{}", self.name);
            }
            return self.name.clone();
        }
        self.project_id.clone()
    }

    /// The ID of the existing project to use: the runtime binding, else the spec's own
    /// `project_id` (empty: found or created by name).
    pub fn cloud_project_id(&self) -> &str {
        if self.bound_project_id.is_empty() {
            &self.project_id
        } else {
            &self.bound_project_id
        }
    }

    /// What messages call the project: its name, else its ID.
    pub fn label(&self) -> &str {
        if self.name.is_empty() {
            &self.project_id
        } else {
            &self.name
        }
    }

    /// The region that applies to this project.
    pub fn effective_region<'a>(&'a self, fleet_region: &'a str) -> &'a str {
        if self.region.is_empty() {
            fleet_region
        } else {
            &self.region
        }
    }
}

impl FleetSpec {
    /// `(project, cluster)` targets in declaration order.
    pub fn cluster_targets(&self) -> impl Iterator<Item = (&ProjectSpec, &ClusterSpec)> {
        self.projects
            .iter()
            .flat_map(|p| p.clusters.iter().map(move |c| (p, c)))
    }

    pub fn cluster_count(&self) -> usize {
        self.projects.iter().map(|p| p.clusters.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_not_double_applied() {
        let p = ProjectSpec {
            name: "team-a".into(),
            ..Default::default()
        };
        assert_eq!(p.display_name("team-"), "team-a");
        assert_eq!(p.display_name("acme-"), "acme-team-a");
        assert_eq!(p.display_name(""), "team-a");
        let by_id = ProjectSpec {
            project_id: "project-REPLACE_AT_RUNTIME".into(),
            ..Default::default()
        };
        assert_eq!(by_id.display_name("acme-"), "project-REPLACE_AT_RUNTIME");
        assert_eq!(by_id.key(), "project-replace-at-runtime");
    }

    #[test]
    fn gpus_per_node_reads_the_preset_prefix() {
        assert_eq!(gpus_per_node("8gpu-128vcpu-1600gb"), 8);
        assert_eq!(gpus_per_node("1gpu-24vcpu-218gb"), 1);
        assert_eq!(gpus_per_node("16vcpu-64gb"), 0);
        assert_eq!(gpus_per_node(""), 0);
    }

    #[test]
    fn fabric_capable_needs_eight_gpus_on_sxm_or_nvl() {
        assert!(is_fabric_capable_topology(
            "gpu-h200-sxm",
            "8gpu-128vcpu-1600gb"
        ));
        assert!(is_fabric_capable_topology("gpu-gb200-nvl", "8gpu-x"));
        assert!(!is_fabric_capable_topology(
            "gpu-rtx6000",
            "8gpu-192vcpu-1744gb"
        ));
        assert!(!is_fabric_capable_topology(
            "gpu-h200-sxm",
            "1gpu-16vcpu-200gb"
        ));
    }

    #[test]
    fn an_unset_gpu_cluster_flag_is_true_only_for_a_fabric_capable_eight_gpu_pool() {
        let cluster = |platform: &str, preset: &str, count: i64, flag: Option<bool>| ClusterSpec {
            gpu_nodes: Some(NodePoolSpec {
                count,
                platform: platform.into(),
                preset: preset.into(),
                ..Default::default()
            }),
            enable_gpu_cluster: flag,
            ..Default::default()
        };
        // The seed's rule: an 8-GPU SXM/NVL pool with nodes…
        assert!(
            cluster("gpu-h200-sxm", "8gpu-128vcpu-1600gb", 2, None).resolved_enable_gpu_cluster()
        );
        assert!(cluster("gpu-gb200-nvl", "8gpu-x", 1, None).resolved_enable_gpu_cluster());
        // …and nothing else: the 8-GPU RTX PCIe shape stays non-fabric, as does an empty pool
        // or a single-GPU preset.
        assert!(
            !cluster("gpu-rtx6000", "8gpu-192vcpu-1744gb", 2, None).resolved_enable_gpu_cluster()
        );
        assert!(
            !cluster("gpu-h200-sxm", "8gpu-128vcpu-1600gb", 0, None).resolved_enable_gpu_cluster()
        );
        assert!(
            !cluster("gpu-h200-sxm", "1gpu-16vcpu-200gb", 2, None).resolved_enable_gpu_cluster()
        );
        // An explicit value is used as it is (rule 12 judges an explicit true).
        assert!(
            cluster("gpu-rtx6000", "8gpu-192vcpu-1744gb", 2, Some(true))
                .resolved_enable_gpu_cluster()
        );
        assert!(
            !cluster("gpu-h200-sxm", "8gpu-128vcpu-1600gb", 2, Some(false))
                .resolved_enable_gpu_cluster()
        );
    }

    #[test]
    fn storage_class_aliases() {
        let mut s = ObjectStorageSpec {
            storage_class: "Enhanced-Throughput".into(),
            ..Default::default()
        };
        assert_eq!(s.normalized_storage_class(), "enhanced_throughput");
        assert_eq!(s.display_storage_class(), "enhanced");
        s.storage_class = "enhanced".into();
        assert_eq!(s.normalized_storage_class(), "enhanced_throughput");
        s.storage_class = "intelligent".into();
        assert_eq!(s.display_storage_class(), "intelligent");
    }
}
