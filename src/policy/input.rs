//! The input policies judge, `fleetbot.policy/v1` (docs/policy.md, and its JSON Schema in
//! docs/policy-input.schema.json): the resolved fleet — defaults merged, every target with its
//! backend, region, pools, platforms, presets, GPU counts, reservations, fabric, filesystem,
//! add-ons and buckets — each item with its spec `file` and `line`. Names only: no cloud ID
//! (project, subnet, filesystem, tenant) ever enters it.

use serde_json::{Value, json};

use crate::spec::{ClusterSpec, FleetSpec, NodePoolSpec, ProjectSpec};

/// The version of the input's shape; a policy may check it.
pub const API_VERSION: &str = "fleetbot.policy/v1";

/// The policy input of `spec` alone (no plan, budget or pull request: `fleetbot policy check`
/// of a file; the App adds those it knows as `plan`, `budget` and `pull_request`).
pub fn of_spec(spec: &FleetSpec) -> Value {
    let file = spec.source.as_str();
    let projects: Vec<Value> = spec
        .projects
        .iter()
        .enumerate()
        .map(|(i, p)| project(spec, p, i))
        .collect();
    let gpus: i64 = spec
        .cluster_targets()
        .map(|(_, c)| c.gpu_nodes.as_ref().map_or(0, pool_gpus))
        .fold(0, i64::saturating_add);
    json!({
        "apiVersion": API_VERSION,
        "fleet": {
            "name": spec.name,
            "file": file,
            "region": spec.region,
            "project_prefix": spec.project_prefix,
            "projects": projects,
            "clusters": spec.cluster_count(),
            "gpus": gpus,
        },
        "plan": Value::Null,
        "budget": Value::Null,
        "pull_request": Value::Null,
    })
}

/// A project's key for policies: its name's, never one made from its ID.
fn project_key(p: &ProjectSpec, index: usize) -> String {
    if p.name.is_empty() {
        format!("projects[{index}]")
    } else {
        p.key()
    }
}

fn project(spec: &FleetSpec, p: &ProjectSpec, index: usize) -> Value {
    let key = project_key(p, index);
    let region = p.effective_region(&spec.region);
    let clusters: Vec<Value> = p
        .clusters
        .iter()
        .map(|c| cluster(spec, &key, region, c))
        .collect();
    let bucket = p.object_storage.as_ref().filter(|o| o.enabled).map(|o| {
        json!({
            "storage_class": o.normalized_storage_class(),
            "size_gibibytes": o.size_gibibytes,
        })
    });
    json!({
        "key": key,
        "name": p.name,
        "display_name": if p.name.is_empty() { String::new() } else { p.display_name(&spec.project_prefix) },
        "existing": !p.project_id.is_empty(),
        "region": region,
        "file": spec.source,
        "line": p.positions.at.line,
        "bucket": bucket,
        "clusters": clusters,
        "gpus": p.clusters.iter().map(|c| c.gpu_nodes.as_ref().map_or(0, pool_gpus)).fold(0, i64::saturating_add),
    })
}

fn pool_gpus(pool: &NodePoolSpec) -> i64 {
    if pool.is_gpu() {
        // Saturating: a spec bounds neither factor, and a wrapped product would slip past a cap.
        pool.count
            .saturating_mul(crate::spec::model::gpus_per_node(&pool.preset))
    } else {
        0
    }
}

fn pool(pool: &NodePoolSpec, line: Option<u32>) -> Value {
    json!({
        "count": pool.count,
        "platform": pool.platform,
        "preset": pool.preset,
        "disk_size_gib": pool.disk_size_gib,
        "gpus_per_node": if pool.is_gpu() { crate::spec::model::gpus_per_node(&pool.preset) } else { 0 },
        "gpus": pool_gpus(pool),
        // Whether, never which: a capacity block group is named by its ID.
        "reserved": !pool.capacity_block_group.is_empty(),
        "preemptible": pool.preemptible,
        "line": line,
    })
}

fn cluster(spec: &FleetSpec, project: &str, region: &str, c: &ClusterSpec) -> Value {
    let line_of = |field: &str| {
        c.positions
            .fields
            .get(field)
            .map(|p| p.line)
            .or(Some(c.positions.at.line))
    };
    let addons: Vec<String> = crate::engine::addons::desired_addons(c)
        .into_iter()
        .map(|a| a.name)
        .collect();
    json!({
        "name": c.name,
        "target": format!("{project}/{}", c.name),
        "project": project,
        "backend": c.backend_name(),
        "region": region,
        "k8s_version": c.k8s_version,
        "file": spec.source,
        "line": c.positions.at.line,
        "cpu_pool": c.cpu_nodes.as_ref().map(|p| pool(p, line_of("cpu_nodes"))),
        "gpu_pool": c.gpu_nodes.as_ref().map(|p| pool(p, line_of("gpu_nodes"))),
        "gpus": c.gpu_nodes.as_ref().map_or(0, pool_gpus),
        "gpu_cluster": c.resolved_enable_gpu_cluster(),
        "infiniband_fabric": c.infiniband_fabric,
        "filesystem": {
            "enabled": c.enable_filestore,
            "existing": !c.existing_filestore.is_empty(),
            "size_gibibytes": c.filestore_disk_size_gibibytes,
            "mount_path": c.filestore_mount_path,
        },
        "own_subnet": !c.subnet_id.is_empty(),
        "gpu_driver_mode": c.driver_selection().effective_mode,
        "mig": c.mig.as_ref().filter(|m| m.enabled).map(|m| json!({"strategy": m.strategy, "config": m.config})),
        "kuberay": c.kuberay.as_ref().filter(|k| k.enabled).map(|k| json!({"worker_replicas": k.worker_replicas})),
        "addons": addons,
    })
}

/// Adds the live plan of the spec's targets (`plan`): its digest, whether it changes anything,
/// each target's actions (resource kind, action, the fields that change), and what it deletes,
/// replaces or shrinks. Targets are named as the spec names them; no cloud ID is added.
pub fn with_plan(input: &mut Value, spec: &FleetSpec, plan: &crate::engine::live::LivePlan) {
    // The engine keys a project named only by ID by that ID's slug: such a key is the
    // input's `projects[i]` here too, so nothing private enters and the two name one target.
    let private: Vec<(String, String)> = spec
        .projects
        .iter()
        .enumerate()
        .filter(|(_, p)| p.name.is_empty())
        .map(|(i, p)| (p.key(), format!("projects[{i}]")))
        .collect();
    let public = |target: &str| -> String {
        let (project, rest) = target
            .split_once('/')
            .map_or((target, None), |(p, r)| (p, Some(r)));
        let project = private
            .iter()
            .find(|(key, _)| key == project)
            .map_or(project, |(_, shown)| shown.as_str());
        match rest {
            Some(rest) => format!("{project}/{rest}"),
            None => project.to_string(),
        }
    };
    let targets: Vec<Value> = plan
        .targets
        .iter()
        .map(|t| {
            let actions: Vec<Value> = t
                .actions
                .iter()
                .map(|a| {
                    json!({
                        "resource": a.resource,
                        "action": a.action,
                        "changes": a.changes,
                    })
                })
                .collect();
            json!({
                "target": public(&t.target),
                "unchanged": t.unchanged,
                "prune": t.prune,
                "actions": actions,
            })
        })
        .collect();
    let destructive: Vec<Value> = plan
        .destructive()
        .iter()
        .map(|d| {
            json!({
                "target": public(&d.target),
                "resource": d.resource,
                "name": d.name,
                "action": d.action,
                "why": d.why,
            })
        })
        .collect();
    input["plan"] = json!({
        "digest": plan.digest,
        "changes": plan.changes_anything(),
        "summary": plan.summary,
        "targets": targets,
        "destructive": destructive,
    });
}

/// What a policy is told of the pull request (`pull_request`): public facts only.
#[derive(Debug, Clone, Default)]
pub struct PullRequest {
    /// `owner/name`.
    pub repo: String,
    pub number: u64,
    pub base_sha: String,
    pub head_sha: String,
    /// The paths the pull request changes.
    pub changed_files: Vec<String>,
}

/// Adds the pull request (`pull_request`).
pub fn with_pull_request(input: &mut Value, pr: &PullRequest) {
    input["pull_request"] = json!({
        "repo": pr.repo,
        "number": pr.number,
        "base_sha": pr.base_sha,
        "head_sha": pr.head_sha,
        "changed_files": pr.changed_files,
    });
}
