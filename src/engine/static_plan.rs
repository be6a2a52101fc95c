//! The static plan (`fleetbot plan`): what a spec resolves to, without touching any cloud.
//!
//! Key names and order match the reference `plan_fleet` output byte for byte, so scripts written
//! against `npa fleet plan --output json` keep working. The structs hold no capacity block ID,
//! CSI chart repository or bucket name: the plan is safe to publish by construction.

use std::fmt::Write as _;

use serde::Serialize;

use crate::spec::names::{py_bool, py_repr};
use crate::spec::soperator::SoperatorSpec;
use crate::spec::{Backend, ClusterSpec, FleetSpec, ObjectStorageSpec, ProjectSpec, ray_pins};

/// Shown where a value is only known at deploy time.
pub const RESOLVE_AT_DEPLOY: &str = "(resolve-at-deploy)";

/// Overrides a caller may apply on top of the spec (CLI flags, bot configuration).
#[derive(Debug, Clone, Default)]
pub struct PlanOptions {
    /// Tenant from the caller; otherwise the spec's, otherwise the profile's.
    pub tenant_id: Option<String>,
    pub region: Option<String>,
    /// `--project-prefix`; `None` or empty keeps the spec's prefix.
    pub project_prefix: Option<String>,
    /// `--profile`; `None` or empty keeps the spec's profile.
    pub profile: Option<String>,
    /// The tenant recorded for the effective profile in `~/.nebius/config.yaml`, when known.
    pub profile_tenant_id: Option<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FleetPlan {
    pub name: String,
    pub tenant_id: String,
    pub region: String,
    pub project_prefix: String,
    pub profile: String,
    pub project_count: usize,
    pub cluster_count: usize,
    pub backend_counts: BackendCounts,
    pub projects: Vec<ProjectPlan>,
}

#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq, Default)]
pub struct BackendCounts {
    pub mk8s: usize,
    pub soperator: usize,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ProjectPlan {
    pub project_id: Option<String>,
    pub display_name: Option<String>,
    pub will_create: bool,
    pub object_storage: ObjectStoragePlan,
    pub clusters: Vec<ClusterPlan>,
}

/// `{"enabled": false}` or the full enabled shape; never the bucket name.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(untagged)]
pub enum ObjectStoragePlan {
    Disabled {
        enabled: bool,
    },
    Enabled {
        enabled: bool,
        storage_class: String,
        size_gibibytes: i64,
        bucket_name_source: &'static str,
        retained_on_destroy: bool,
    },
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(untagged)]
pub enum ClusterPlan {
    Mk8s(Box<Mk8sClusterPlan>),
    Soperator(SoperatorClusterPlan),
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Mk8sClusterPlan {
    pub name: String,
    pub cpu_nodes: i64,
    pub cpu_preset: String,
    pub gpu_nodes: i64,
    pub gpu_platform: String,
    pub gpu_preset: String,
    /// `strict` when a capacity block backs the GPU pool; the block ID itself is never shown.
    pub gpu_reservation: &'static str,
    pub enable_gpu_cluster: bool,
    pub gpu_driver_mode: String,
    pub managed_driver_preset: Option<String>,
    pub unsafe_nvswitch_operator: bool,
    pub gpu_health_stabilization_seconds: i64,
    pub gpu_cuda_smoke: bool,
    pub gpu_workload_profile: String,
    pub gpu_graphics_smoke: bool,
    pub enable_filestore: bool,
    pub filestore_disk_size_gibibytes: i64,
    pub filestore_mount_path: String,
    pub filestore_mount_tag: String,
    /// Whether a CSI chart repository is configured; the repository itself is never shown.
    pub filesystem_csi_enabled: bool,
    pub k8s_version: String,
    pub mig: Option<MigPlan>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kuberay: Option<KubeRayPlan>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend: Option<&'static str>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct MigPlan {
    pub strategy: String,
    pub config: String,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct KubeRayPlan {
    pub enabled: bool,
    pub worker_replicas: i64,
    pub worker_cpus: i64,
    pub worker_memory_gib: i64,
    pub ray_version: &'static str,
    pub image: &'static str,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SoperatorClusterPlan {
    pub backend: &'static str,
    pub name: String,
    pub region: String,
    pub control_plane: SoperatorControlPlanePlan,
    pub workers: Vec<SoperatorWorkerPlan>,
    pub reservation_preflight: &'static str,
    pub provider_mutation: bool,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct SoperatorControlPlanePlan {
    pub system_min_size: i64,
    pub system_max_size: i64,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct SoperatorWorkerPlan {
    pub name: String,
    pub platform: String,
    pub preset: String,
    pub size: i64,
    pub capacity_mode: &'static str,
    /// `id` or `name`: which selector names the capacity block, never the selector's value.
    pub reservation_selector: Option<&'static str>,
    pub reservation_verified: Option<bool>,
}

fn non_empty(value: Option<&str>) -> Option<&str> {
    value.filter(|v| !v.is_empty())
}

/// What the plan's header resolves to, before the projects.
#[derive(Clone)]
struct Header {
    prefix: String,
    profile: String,
    tenant: String,
    /// The fleet's region as written (empty when left to deploy time): projects inherit it.
    region: String,
}

impl Header {
    fn of(spec: &FleetSpec, options: &PlanOptions) -> Header {
        let pick = |option: &Option<String>, spec: &str| {
            non_empty(option.as_deref()).unwrap_or(spec).to_string()
        };
        Header {
            prefix: pick(&options.project_prefix, &spec.project_prefix),
            profile: pick(&options.profile, &spec.profile),
            tenant: non_empty(options.tenant_id.as_deref())
                .or(non_empty(Some(&spec.tenant_id)))
                .or(non_empty(options.profile_tenant_id.as_deref()))
                .unwrap_or("")
                .to_string(),
            region: pick(&options.region, &spec.region),
        }
    }

    fn project(&self, project: &ProjectSpec) -> ProjectPlan {
        project_plan(project, &self.prefix, &self.region)
    }

    /// The plan with `projects` (each made by [`Header::project`]).
    fn plan(self, spec: &FleetSpec, projects: Vec<ProjectPlan>) -> FleetPlan {
        let mut counts = BackendCounts::default();
        for (_, cluster) in spec.cluster_targets() {
            match cluster.backend {
                Backend::Mk8s => counts.mk8s += 1,
                Backend::Soperator => counts.soperator += 1,
            }
        }
        let or = |value: String, shown: &str| {
            if value.is_empty() {
                shown.to_string()
            } else {
                value
            }
        };
        FleetPlan {
            name: spec.name.clone(),
            tenant_id: or(self.tenant, RESOLVE_AT_DEPLOY),
            region: or(self.region, RESOLVE_AT_DEPLOY),
            project_prefix: self.prefix,
            profile: or(self.profile, "(active)"),
            project_count: spec.projects.len(),
            cluster_count: spec.cluster_count(),
            backend_counts: counts,
            projects,
        }
    }
}

/// Builds the static plan of an already validated spec.
pub fn plan(spec: &FleetSpec, options: &PlanOptions) -> FleetPlan {
    let header = Header::of(spec, options);
    let projects = spec.projects.iter().map(|p| header.project(p)).collect();
    header.plan(spec, projects)
}

/// Writes the text of [`plan`] (as [`FleetPlan::render_text`] renders it) to `out`, planning
/// one project at a time: a 40,000-cluster fleet is never held planned and rendered whole.
pub fn write_text(
    spec: &FleetSpec,
    options: &PlanOptions,
    out: &mut impl std::io::Write,
) -> std::io::Result<()> {
    const CHUNK: usize = 64 * 1024;
    let header = Header::of(spec, options);
    let mut text = String::with_capacity(CHUNK + 4096);
    header
        .clone()
        .plan(spec, Vec::new())
        .write_header(&mut text);
    for project in &spec.projects {
        write_project(&mut text, &header.project(project));
        if text.len() >= CHUNK {
            out.write_all(text.as_bytes())?;
            text.clear();
        }
    }
    out.write_all(text.as_bytes())
}

fn project_plan(project: &ProjectSpec, prefix: &str, fleet_region: &str) -> ProjectPlan {
    let region = project.effective_region(fleet_region);
    let display = project.display_name(prefix);
    ProjectPlan {
        project_id: Some(project.project_id.clone()).filter(|s| !s.is_empty()),
        display_name: Some(display).filter(|s| !s.is_empty()),
        will_create: project.cloud_project_id().is_empty(),
        object_storage: object_storage_plan(project.object_storage.as_ref()),
        clusters: project
            .clusters
            .iter()
            .map(|c| match (&c.backend, &c.soperator) {
                (Backend::Soperator, Some(s)) => ClusterPlan::Soperator(soperator_plan(s, region)),
                _ => ClusterPlan::Mk8s(Box::new(mk8s_plan(c))),
            })
            .collect(),
    }
}

fn object_storage_plan(storage: Option<&ObjectStorageSpec>) -> ObjectStoragePlan {
    match storage {
        Some(s) if s.enabled => ObjectStoragePlan::Enabled {
            enabled: true,
            storage_class: s.display_storage_class(),
            size_gibibytes: s.size_gibibytes,
            bucket_name_source: if s.bucket_name.is_empty() {
                "generated"
            } else {
                "explicit"
            },
            retained_on_destroy: true,
        },
        _ => ObjectStoragePlan::Disabled { enabled: false },
    }
}

/// The mk8s part of the plan for one cluster.
pub fn mk8s_plan(c: &ClusterSpec) -> Mk8sClusterPlan {
    let driver = c.driver_selection();
    let gpu = c.gpu_nodes.as_ref();
    Mk8sClusterPlan {
        name: c.name.clone(),
        cpu_nodes: c.cpu_count(),
        cpu_preset: c.cpu_nodes.as_ref().map_or("", |p| &p.preset).to_string(),
        gpu_nodes: c.gpu_count(),
        gpu_platform: gpu.map_or("", |g| &g.platform).to_string(),
        gpu_preset: gpu.map_or("", |g| &g.preset).to_string(),
        gpu_reservation: if gpu.is_some_and(|g| !g.capacity_block_group.is_empty()) {
            "strict"
        } else {
            "on-demand"
        },
        enable_gpu_cluster: c.resolved_enable_gpu_cluster(),
        managed_driver_preset: driver
            .uses_managed_image()
            .then(|| driver.managed_driver_preset.clone()),
        unsafe_nvswitch_operator: driver.unsafe_operator_acknowledged,
        gpu_driver_mode: driver.effective_mode,
        gpu_health_stabilization_seconds: c.gpu_health_stabilization_seconds,
        gpu_cuda_smoke: c.gpu_cuda_smoke,
        gpu_workload_profile: c.gpu_workload_profile.clone(),
        gpu_graphics_smoke: c.gpu_graphics_smoke,
        enable_filestore: c.enable_filestore,
        filestore_disk_size_gibibytes: c.filestore_disk_size_gibibytes,
        filestore_mount_path: c.filestore_mount_path.clone(),
        filestore_mount_tag: c.filestore_mount_tag.clone(),
        filesystem_csi_enabled: !c.filesystem_csi_chart_repository.is_empty(),
        k8s_version: {
            let v = c.resolved_k8s_version();
            if v.is_empty() {
                "backend-default".into()
            } else {
                v
            }
        },
        mig: c.mig.as_ref().filter(|m| m.enabled).map(|m| MigPlan {
            strategy: m.strategy.clone(),
            config: m.config.clone(),
        }),
        kuberay: c.kuberay.as_ref().map(|k| KubeRayPlan {
            enabled: k.enabled,
            worker_replicas: k.worker_replicas,
            worker_cpus: k.worker_cpus,
            worker_memory_gib: k.worker_memory_gib,
            ray_version: ray_pins::RAY_VERSION,
            image: ray_pins::RAY_IMAGE,
        }),
        backend: c.backend_explicit.then_some("mk8s"),
    }
}

fn soperator_plan(s: &SoperatorSpec, region: &str) -> SoperatorClusterPlan {
    SoperatorClusterPlan {
        backend: "soperator",
        name: s.name.clone(),
        region: if region.is_empty() {
            RESOLVE_AT_DEPLOY.into()
        } else {
            region.into()
        },
        control_plane: SoperatorControlPlanePlan {
            system_min_size: s.system_min_size,
            system_max_size: s.effective_system_max_size(),
        },
        workers: s
            .workers
            .iter()
            .map(|w| SoperatorWorkerPlan {
                name: w.name.clone(),
                platform: w.platform.clone(),
                preset: w.preset.clone(),
                size: w.size,
                capacity_mode: w.capacity_mode(),
                reservation_selector: w.reservation_selector_kind(),
                reservation_verified: (w.capacity_mode() == "reserved").then_some(false),
            })
            .collect(),
        reservation_preflight: if s.reservation_preflight_required() {
            "required"
        } else {
            "not-required"
        },
        provider_mutation: false,
    }
}

impl FleetPlan {
    /// The reference's text layout.
    pub fn render_text(&self) -> String {
        let mut out = String::new();
        self.write_header(&mut out);
        for project in &self.projects {
            write_project(&mut out, project);
        }
        out
    }

    /// The fleet's lines, before its projects'.
    fn write_header(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "Fleet '{}': {} cluster(s) across {} project(s)",
            self.name, self.cluster_count, self.project_count
        );
        let _ = writeln!(
            out,
            "  tenant: {}  region: {}  prefix: {}",
            self.tenant_id,
            self.region,
            py_repr(&self.project_prefix)
        );
        let _ = writeln!(out, "  nebius profile: {}", self.profile);
    }
}

/// One project's lines of the text layout.
fn write_project(out: &mut String, project: &ProjectPlan) {
    let tag = if project.will_create {
        "create"
    } else {
        "existing"
    };
    let name = project
        .display_name
        .as_deref()
        .or(project.project_id.as_deref())
        .unwrap_or("");
    let _ = writeln!(out, "  - project [{tag}] {name}");
    for cluster in &project.clusters {
        match cluster {
            ClusterPlan::Mk8s(c) => {
                let _ = writeln!(
                    out,
                    "      cluster {}: cpu={} ({}) gpu={} ({} {}) reservation={} gpu_cluster={}",
                    c.name,
                    c.cpu_nodes,
                    c.cpu_preset,
                    c.gpu_nodes,
                    c.gpu_platform,
                    c.gpu_preset,
                    c.gpu_reservation,
                    py_bool(c.enable_gpu_cluster)
                );
            }
            ClusterPlan::Soperator(s) => {
                let workers: i64 = s.workers.iter().map(|w| w.size).sum();
                let _ = writeln!(
                    out,
                    "      cluster {}: backend=soperator workers={} ({} pool(s)) reservation_preflight={}",
                    s.name,
                    workers,
                    s.workers.len(),
                    s.reservation_preflight
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::load_str;

    const BASE: &str = r#"
apiVersion: npa.fleet/v0.0.1
name: fleet1-test
tenant_id: tenant-x
region: us-central1
project_prefix: "fleet1-test-"
defaults:
  cpu_nodes: {count: 1, platform: cpu-d3, preset: 48vcpu-192gb}
  gpu_nodes: {count: 1, platform: gpu-rtx6000, preset: 1gpu-24vcpu-218gb}
projects:
  - name: a
  - name: b
"#;

    #[test]
    fn the_streamed_text_is_the_rendered_plan_at_any_size() {
        let mut text = BASE.replace("  - name: b\n", "");
        for p in 0..400 {
            text.push_str(&format!(
                "  - name: p{p}\n    clusters:\n      - name: k\n      - name: s{p}\n        backend: soperator\n        soperator:\n          workers:\n            - {{name: cpu, platform: cpu-d3, preset: 16vcpu-64gb, size: 2}}\n"
            ));
        }
        let spec = load_str(&text, "fleet.yaml").unwrap();
        for options in [
            PlanOptions::default(),
            PlanOptions {
                region: Some("eu-north1".into()),
                project_prefix: Some("other-".into()),
                profile_tenant_id: Some("tenant-p".into()),
                ..PlanOptions::default()
            },
        ] {
            let mut streamed = Vec::new();
            write_text(&spec, &options, &mut streamed).unwrap();
            let rendered = plan(&spec, &options).render_text();
            // Larger than one written chunk, so the chunking is exercised.
            assert!(rendered.len() > 64 * 1024, "{}", rendered.len());
            assert!(rendered.contains("backend=soperator workers=2"));
            assert_eq!(String::from_utf8(streamed).unwrap(), rendered);
        }
    }

    #[test]
    fn plan_json() {
        let spec = load_str(BASE, "fleet.yaml").unwrap();
        let plan = plan(&spec, &PlanOptions::default());
        let json = serde_json::to_value(&plan).unwrap();
        assert_eq!(json["project_count"], 2);
        assert_eq!(json["cluster_count"], 2);
        assert_eq!(json["tenant_id"], "tenant-x");
        let names: Vec<_> = json["projects"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["display_name"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(names, ["fleet1-test-a", "fleet1-test-b"]);
        assert!(
            json["projects"]
                .as_array()
                .unwrap()
                .iter()
                .all(|p| p["will_create"] == true)
        );
        assert_eq!(
            json["backend_counts"],
            serde_json::json!({"mk8s": 2, "soperator": 0})
        );
    }

    #[test]
    fn plan_reports_strict_reservation_without_echoing_capacity_block_id() {
        let text = BASE.replace(
            "preset: 1gpu-24vcpu-218gb}",
            "preset: 1gpu-24vcpu-218gb, capacity_block_group: capacityblockgroup-runtime-only}\n  enable_filestore: true\n  filesystem_csi_chart_repository: oci://private.example.invalid/operator-only",
        );
        let spec = load_str(&text, "fleet.yaml").unwrap();
        let plan = plan(&spec, &PlanOptions::default());
        let json = serde_json::to_string(&plan).unwrap();
        let ClusterPlan::Mk8s(c) = &plan.projects[0].clusters[0] else {
            panic!()
        };
        assert_eq!(c.gpu_reservation, "strict");
        assert!(c.enable_filestore);
        assert_eq!(c.filestore_disk_size_gibibytes, 1024);
        assert_eq!(c.filestore_mount_path, "/mnt/data");
        assert_eq!(c.filestore_mount_tag, "data");
        assert!(c.filesystem_csi_enabled);
        assert!(!json.contains("capacityblockgroup-runtime-only"));
        assert!(!json.contains("private.example.invalid"));
        assert!(
            !plan
                .render_text()
                .contains("capacityblockgroup-runtime-only")
        );
    }

    #[test]
    fn tenant_precedence_is_caller_then_spec_then_profile() {
        let unpinned = BASE.replace("tenant_id: tenant-x", "tenant_id: \"\"\nprofile: sd");
        let spec = load_str(&unpinned, "f.yaml").unwrap();
        let options = PlanOptions {
            profile_tenant_id: Some("tenant-sd".into()),
            ..Default::default()
        };
        let p = plan(&spec, &options);
        assert_eq!(p.tenant_id, "tenant-sd");
        assert_eq!(p.profile, "sd");
        let pinned = load_str(
            &BASE.replace("tenant_id: tenant-x", "tenant_id: tenant-pinned"),
            "f.yaml",
        )
        .unwrap();
        assert_eq!(plan(&pinned, &options).tenant_id, "tenant-pinned");
        let none = plan(&spec, &PlanOptions::default());
        assert_eq!(none.tenant_id, RESOLVE_AT_DEPLOY);
    }

    #[test]
    fn object_storage_plan_never_shows_the_bucket_name() {
        let text = BASE.replace(
            "  - name: a\n",
            "  - name: a\n    object_storage: {storage_class: enhanced, size_gibibytes: 6144, bucket_name: my-private-bucket}\n",
        );
        let spec = load_str(&text, "f.yaml").unwrap();
        let json = serde_json::to_value(plan(&spec, &PlanOptions::default())).unwrap();
        assert_eq!(
            json["projects"][0]["object_storage"],
            serde_json::json!({"enabled": true, "storage_class": "enhanced", "size_gibibytes": 6144,
                "bucket_name_source": "explicit", "retained_on_destroy": true})
        );
        assert_eq!(
            json["projects"][1]["object_storage"],
            serde_json::json!({"enabled": false})
        );
        assert!(!json.to_string().contains("my-private-bucket"));
    }

    #[test]
    fn text_layout_matches_reference() {
        let spec = load_str(BASE, "fleet.yaml").unwrap();
        let text = plan(&spec, &PlanOptions::default()).render_text();
        assert_eq!(
            text,
            "Fleet 'fleet1-test': 2 cluster(s) across 2 project(s)\n  tenant: tenant-x  region: us-central1  prefix: 'fleet1-test-'\n  nebius profile: (active)\n  - project [create] fleet1-test-a\n      cluster cluster: cpu=1 (48vcpu-192gb) gpu=1 (gpu-rtx6000 1gpu-24vcpu-218gb) reservation=on-demand gpu_cluster=False\n  - project [create] fleet1-test-b\n      cluster cluster: cpu=1 (48vcpu-192gb) gpu=1 (gpu-rtx6000 1gpu-24vcpu-218gb) reservation=on-demand gpu_cluster=False\n"
        );
    }
}
