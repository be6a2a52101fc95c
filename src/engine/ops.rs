//! Deploy, destroy and status: the engine's mutations, ordered so that every validation,
//! identity check and the preflight happen before the first mutation, and recorded in the
//! inventory as they happen so a restart at any point converges.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use super::desired::{self, DesiredFilesystem, DesiredProject, DesiredTarget, TargetKey};
use super::live::{self, LivePlan, Observed};
use crate::cloud::client::idempotency_key;
use crate::cloud::domain::{Cloud, Labels};
use crate::quota::scope::Selection;
use crate::spec::{Backend, FleetSpec};
use crate::store::{InventoryStore, ProjectRecord, TargetRecord};

/// Statuses that do not count as failures (fleet-engine §6.3 `_recount`).
pub const NOT_FAILED: &[&str] = &["deployed", "destroyed", "absent"];

/// Progress sink: one human-readable line per step. JSON mode sends these to stderr.
pub type Progress = Arc<dyn Fn(&str) + Send + Sync>;

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// The selected targets as `(project index, cluster index)`, in spec order.
pub fn select(
    spec: &FleetSpec,
    only_projects: &[String],
    only_clusters: &[String],
    prefix: &str,
) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for (pi, project) in spec.projects.iter().enumerate() {
        let in_scope = only_projects.is_empty()
            || only_projects.contains(&project.key())
            || only_projects.contains(&project.display_name(prefix));
        if !in_scope {
            continue;
        }
        for (ci, cluster) in project.clusters.iter().enumerate() {
            if only_clusters.is_empty() || only_clusters.contains(&cluster.name) {
                out.push((pi, ci));
            }
        }
    }
    out
}

/// Splits a CSV selector: trimmed, empty parts dropped; empty means no filter.
pub fn csv(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Options shared by the lifecycle commands.
#[derive(Debug, Clone)]
pub struct LifecycleOptions {
    pub only_projects: Vec<String>,
    pub only_clusters: Vec<String>,
    pub project_prefix: String,
    pub profile: String,
    pub concurrency: usize,
    pub continue_on_error: bool,
    pub create_projects: bool,
    pub preflight: bool,
    /// Per-target limit on applying (or destroying).
    pub timeout: Duration,
    pub ssh_public_key: String,
    /// The spec's path, for retry commands.
    pub spec_path: String,
}

impl Default for LifecycleOptions {
    fn default() -> Self {
        LifecycleOptions {
            only_projects: Vec::new(),
            only_clusters: Vec::new(),
            project_prefix: String::new(),
            profile: String::new(),
            concurrency: 1,
            continue_on_error: true,
            create_projects: true,
            preflight: true,
            timeout: Duration::from_secs(120 * 60),
            ssh_public_key: String::new(),
            spec_path: "fleet.yaml".into(),
        }
    }
}

impl LifecycleOptions {
    /// The project prefix: `--project-prefix` when given, else the spec's.
    pub fn prefix<'a>(&'a self, spec: &'a FleetSpec) -> &'a str {
        if self.project_prefix.is_empty() {
            &spec.project_prefix
        } else {
            &self.project_prefix
        }
    }
}

/// Why a lifecycle command stopped before (or instead of) acting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineError {
    /// For the operator: may name resources, IDs and the store's location.
    pub message: String,
    pub source: ErrorSource,
}

/// Where an [`EngineError`] came from, for output that must not carry its text (a pull-request
/// comment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorSource {
    /// The engine's own rules (the message names spec keys only).
    Engine,
    /// The inventory store.
    Store,
    /// The cloud, with its status code.
    Cloud(tonic::Code),
}

impl EngineError {
    /// An error of the engine's own rules.
    pub fn new(message: impl Into<String>) -> Self {
        EngineError {
            message: message.into(),
            source: ErrorSource::Engine,
        }
    }
}

impl std::fmt::Display for EngineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for EngineError {}

impl From<crate::store::StoreError> for EngineError {
    fn from(e: crate::store::StoreError) -> Self {
        EngineError {
            message: e.to_string(),
            source: ErrorSource::Store,
        }
    }
}

impl From<crate::cloud::CloudError> for EngineError {
    fn from(e: crate::cloud::CloudError) -> Self {
        EngineError {
            message: format!("cloud: {e}"),
            source: ErrorSource::Cloud(e.code),
        }
    }
}

/// One target's outcome (fleet-engine §8.4; operator output, not sanitized).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TargetResult {
    pub backend: &'static str,
    pub project_key: String,
    pub cluster_name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub project_id: String,
    pub project_created: bool,
    pub region: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub cluster_id: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub endpoint: String,
    pub node_group_ids: Vec<String>,
    pub status: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub error: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct BackendCounts {
    pub mk8s: usize,
    pub soperator: usize,
}

/// The result of a deploy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeployResult {
    pub name: String,
    pub tenant_id: String,
    pub region: String,
    pub project_prefix: String,
    pub profile: String,
    pub cloud: String,
    pub plan_digest: String,
    pub clusters: Vec<TargetResult>,
    pub deployed: usize,
    pub failed: usize,
    pub backend_counts: BackendCounts,
}

impl DeployResult {
    pub fn recount(&mut self) {
        self.deployed = self
            .clusters
            .iter()
            .filter(|c| c.status == "deployed")
            .count();
        self.failed = self
            .clusters
            .iter()
            .filter(|c| !NOT_FAILED.contains(&c.status.as_str()))
            .count();
        self.backend_counts = BackendCounts {
            mk8s: self.clusters.iter().filter(|c| c.backend == "mk8s").count(),
            soperator: self
                .clusters
                .iter()
                .filter(|c| c.backend == "soperator")
                .count(),
        };
    }

    /// `Fleet '<name>' in <region> (tenant <tenant>): <d> deployed, <f> failed.` and one line
    /// per cluster.
    pub fn render_text(&self) -> String {
        use std::fmt::Write;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "Fleet '{}' in {} (tenant {}): {} deployed, {} failed.",
            self.name, self.region, self.tenant_id, self.deployed, self.failed
        );
        for c in &self.clusters {
            if c.status == "deployed" {
                let id = if c.cluster_id.is_empty() {
                    "(no id)"
                } else {
                    &c.cluster_id
                };
                let _ = writeln!(
                    out,
                    "  [ok]   {}/{} -> {} (context fleet-{}-{}-{})",
                    c.project_key, c.cluster_name, id, self.name, c.project_key, c.cluster_name
                );
            } else {
                let why = if c.error.is_empty() {
                    &c.status
                } else {
                    &c.error
                };
                let _ = writeln!(
                    out,
                    "  [FAIL] {}/{}: {}",
                    c.project_key, c.cluster_name, why
                );
            }
        }
        out
    }
}

/// Backend ownership (fleet-engine §6.8): a record without a backend reads as `mk8s`, and a
/// record of another backend than the spec's refuses the action.
fn require_backend(
    record: &TargetRecord,
    cluster: &crate::spec::ClusterSpec,
    refusal: &str,
) -> Result<(), EngineError> {
    let backend = if record.backend.is_empty() {
        "mk8s"
    } else {
        record.backend.as_str()
    };
    if backend == cluster.backend_name() {
        return Ok(());
    }
    Err(EngineError::new(format!(
        "persisted cluster state belongs to backend '{backend}', but the spec selects '{}'; {refusal}",
        cluster.backend_name()
    )))
}

const WRONG_BACKEND: &str = "refusing to plan, reconcile, or destroy with the wrong backend";

/// Everything a lifecycle run reads before acting.
pub struct Prepared {
    pub selected: Vec<(usize, usize)>,
    pub projects: Vec<(usize, DesiredProject)>,
    pub targets: Vec<DesiredTarget>,
    pub observed: Observed,
    pub plan: LivePlan,
    pub project_records: Vec<ProjectRecord>,
    pub target_records: Vec<TargetRecord>,
}

/// Reads inventory and cloud, checks ownership, builds the live plan. No mutation.
pub async fn prepare<C: Cloud, S: InventoryStore>(
    cloud: &C,
    store: &S,
    spec: &FleetSpec,
    tenant_id: &str,
    options: &LifecycleOptions,
) -> Result<Prepared, EngineError> {
    let prefix = options.prefix(spec);
    let selected = select(spec, &options.only_projects, &options.only_clusters, prefix);
    let target_records = store.targets(&spec.name).await?;
    let project_records = store.projects(&spec.name).await?;
    let soperator: Vec<String> = selected
        .iter()
        .map(|&(p, c)| (&spec.projects[p], &spec.projects[p].clusters[c]))
        .filter(|(_, c)| c.backend == Backend::Soperator)
        .map(|(p, c)| format!("{}/{}", p.key(), c.name))
        .collect();
    if !soperator.is_empty() {
        return Err(EngineError::new(format!(
            "soperator targets are not supported by fleetbot's API engine yet: {}; select mk8s targets with --only-projects/--only-clusters",
            soperator.join(", ")
        )));
    }
    for &(p, c) in &selected {
        let (project, cluster) = (&spec.projects[p], &spec.projects[p].clusters[c]);
        if let Some(record) = target_records
            .iter()
            .find(|r| r.project_key == project.key() && r.cluster_name == cluster.name)
        {
            require_backend(record, cluster, WRONG_BACKEND)?;
        }
    }
    let projects = desired::desired_projects(spec, &selected, prefix);
    let targets: Vec<DesiredTarget> = selected
        .iter()
        .map(|&(p, c)| {
            desired::desired_target(
                &spec.name,
                &spec.projects[p],
                &spec.projects[p].clusters[c],
                &spec.region,
                &options.ssh_public_key,
            )
        })
        .collect();
    let project_list: Vec<DesiredProject> = projects.iter().map(|(_, p)| p.clone()).collect();
    let observed = live::observe(cloud, tenant_id, &project_list, &targets).await?;
    let plan = live::plan(
        &spec.name,
        &cloud.describe(),
        &project_list,
        &targets,
        &observed,
        &project_records,
        &target_records,
    );
    Ok(Prepared {
        selected,
        projects,
        targets,
        observed,
        plan,
        project_records,
        target_records,
    })
}

/// Deploys the selected targets. Returns the result even when targets failed; an `Err` means
/// nothing was mutated (validation, identity, ownership or preflight refused) or the inventory
/// failed.
pub async fn deploy<C: Cloud + Clone + 'static, S: InventoryStore + Clone + 'static>(
    cloud: &C,
    store: &S,
    spec: &FleetSpec,
    tenant_id: &str,
    options: &LifecycleOptions,
    progress: Progress,
) -> Result<DeployResult, EngineError> {
    let prefix = options.prefix(spec).to_string();
    let prepared = prepare(cloud, store, spec, tenant_id, options).await?;
    if prepared.plan.has_problems() {
        return Err(EngineError::new(format!(
            "the live plan found problems; nothing was changed:\n  - {}",
            prepared.plan.problems().join("\n  - ")
        )));
    }
    for (_, project) in &prepared.projects {
        let missing = prepared
            .observed
            .projects
            .get(&project.key)
            .and_then(|o| o.project.as_ref())
            .is_none();
        if missing && !project.project_id.is_empty() {
            return Err(EngineError::new(format!(
                "project {} does not exist",
                project.project_id
            )));
        }
        if missing && !options.create_projects {
            return Err(EngineError::new(format!(
                "project '{}' not found under tenant and project creation is disabled",
                project.display_name
            )));
        }
    }
    if options.preflight && !prepared.selected.is_empty() {
        let selection = Selection {
            projects: options.only_projects.clone(),
            clusters: options.only_clusters.clone(),
        };
        let sink = progress.clone();
        let mut on_status = move |line: &str| sink(line);
        let report = super::preflight::live_preflight(
            cloud,
            spec,
            tenant_id,
            selection,
            &prefix,
            &prepared.plan,
            &mut on_status,
        )
        .await
        .map_err(EngineError::new)?;
        if let Some(message) = report.message() {
            return Err(EngineError::new(message));
        }
    }

    let mut result = DeployResult {
        name: spec.name.clone(),
        tenant_id: tenant_id.to_string(),
        region: spec.region.clone(),
        project_prefix: prefix.clone(),
        profile: options.profile.clone(),
        cloud: cloud.describe(),
        plan_digest: prepared.plan.digest.clone(),
        clusters: Vec::new(),
        deployed: 0,
        failed: 0,
        backend_counts: BackendCounts::default(),
    };

    // Phase 1, sequential: projects, their storage and their shared subnet.
    let mut project_state: BTreeMap<String, Result<ProjectRecord, String>> = BTreeMap::new();
    for (_, desired) in &prepared.projects {
        let record = prepared
            .project_records
            .iter()
            .find(|r| r.project_key == desired.key)
            .cloned();
        let outcome = apply_project(
            cloud,
            store,
            spec,
            tenant_id,
            desired,
            &prepared.observed,
            record,
            &progress,
        )
        .await;
        if let Err(e) = &outcome {
            progress(&format!("project {}: {e}", desired.key));
            if !options.continue_on_error {
                project_state.insert(desired.key.clone(), outcome);
                break;
            }
        }
        project_state.insert(desired.key.clone(), outcome);
    }

    // Phase 2: targets, up to `concurrency` at a time.
    let semaphore = Arc::new(tokio::sync::Semaphore::new(options.concurrency.max(1)));
    let mut tasks = tokio::task::JoinSet::new();
    let mut stop = false;
    for target in prepared.targets.iter().cloned() {
        let project = project_state.get(&target.key.project_key).cloned();
        let Some(Ok(project)) = project else {
            let error = match project {
                Some(Err(e)) => format!("project failed: {e}"),
                _ => "project was not reached (fail-fast)".to_string(),
            };
            result.clusters.push(failed_result(&target, &error));
            continue;
        };
        if stop {
            result
                .clusters
                .push(failed_result(&target, "not attempted (fail-fast)"));
            continue;
        }
        let (cloud, store, progress) = (cloud.clone(), store.clone(), progress.clone());
        let observed = prepared
            .observed
            .projects
            .get(&target.key.project_key)
            .cloned()
            .unwrap_or_default();
        let fleet = spec.name.clone();
        let tenant = tenant_id.to_string();
        let profile = options.profile.clone();
        let timeout = options.timeout;
        let permit = semaphore
            .clone()
            .acquire_owned()
            .await
            .expect("semaphore is never closed");
        tasks.spawn(async move {
            let _permit = permit;
            let key = target.key.clone();
            let run = apply_target(
                &cloud, &store, &fleet, &tenant, &profile, &target, &project, &observed, &progress,
            );
            match tokio::time::timeout(timeout, run).await {
                Ok(result) => result,
                Err(_) => {
                    let error = format!("timed out after {} minute(s)", timeout.as_secs() / 60);
                    progress(&format!("{key}: failed: {error}"));
                    let _ = record_failure(
                        &store, &fleet, &tenant, &profile, &target, &project, &error,
                    )
                    .await;
                    failed_result_for(&key, &target.region, &project, &error)
                }
            }
        });
        if !options.continue_on_error && options.concurrency <= 1 {
            // Sequential fail-fast: wait for this target before starting the next.
            if let Some(done) = tasks.join_next().await {
                let r = done.map_err(|e| EngineError::new(format!("target task failed: {e}")))?;
                stop = r.status != "deployed";
                result.clusters.push(r);
            }
        }
    }
    while let Some(done) = tasks.join_next().await {
        result
            .clusters
            .push(done.map_err(|e| EngineError::new(format!("target task failed: {e}")))?);
    }
    result.recount();
    Ok(result)
}

fn failed_result(target: &DesiredTarget, error: &str) -> TargetResult {
    TargetResult {
        backend: "mk8s",
        project_key: target.key.project_key.clone(),
        cluster_name: target.key.cluster.clone(),
        project_id: String::new(),
        project_created: false,
        region: target.region.clone(),
        cluster_id: String::new(),
        endpoint: String::new(),
        node_group_ids: Vec::new(),
        status: "error".into(),
        error: error.to_string(),
    }
}

fn failed_result_for(
    key: &TargetKey,
    region: &str,
    project: &ProjectRecord,
    error: &str,
) -> TargetResult {
    TargetResult {
        backend: "mk8s",
        project_key: key.project_key.clone(),
        cluster_name: key.cluster.clone(),
        project_id: project.project_id.clone(),
        project_created: project.project_created,
        region: region.to_string(),
        cluster_id: String::new(),
        endpoint: String::new(),
        node_group_ids: Vec::new(),
        status: "error".into(),
        error: error.to_string(),
    }
}

/// Creates (or verifies) the project, then its bucket and shared subnet. Ownership of anything
/// created is recorded before the next step, so a crash never orphans it.
#[allow(clippy::too_many_arguments)]
async fn apply_project<C: Cloud, S: InventoryStore>(
    cloud: &C,
    store: &S,
    spec: &FleetSpec,
    tenant_id: &str,
    desired: &DesiredProject,
    observed: &Observed,
    record: Option<ProjectRecord>,
    progress: &Progress,
) -> Result<ProjectRecord, String> {
    let fleet = &spec.name;
    let obs = observed
        .projects
        .get(&desired.key)
        .cloned()
        .unwrap_or_default();
    let mut record = record.unwrap_or_else(|| ProjectRecord {
        fleet: fleet.clone(),
        project_key: desired.key.clone(),
        ..Default::default()
    });
    let project = match &obs.project {
        Some(p) => {
            progress(&format!(
                "project '{}' exists",
                desired.display_name_or_id()
            ));
            p.clone()
        }
        None => {
            progress(&format!(
                "creating project '{}' under tenant (region {})",
                desired.display_name,
                if desired.region.is_empty() {
                    "default"
                } else {
                    &desired.region
                }
            ));
            let key = idempotency_key(&[
                fleet,
                &desired.key,
                "project",
                "create",
                &desired.display_name,
                &desired.region,
            ]);
            let p = cloud
                .create_project(
                    tenant_id,
                    &desired.display_name,
                    &desired.region,
                    &desired.labels,
                    &key,
                )
                .await
                .map_err(|e| e.to_string())?;
            record.project_created = true;
            progress(&format!("created project '{}'", desired.display_name));
            p
        }
    };
    record.project_id = project.id.clone();
    record.updated_at = now_ms();
    store
        .upsert_project(&record)
        .await
        .map_err(|e| e.to_string())?;

    if let Some(bucket) = &desired.bucket {
        let name = live::bucket_name(bucket, Some(&record), tenant_id, &project.id, fleet);
        let existing = cloud
            .list_buckets(&project.id)
            .await
            .map_err(|e| e.to_string())?;
        let found = existing.into_iter().find(|b| b.name == name);
        // A resize names the version it starts from, so the same resize made again after
        // another change is a new request.
        let size = bucket.max_size_bytes.to_string();
        let from = found
            .as_ref()
            .map(|b| format!("from-v{}", b.resource_version));
        let mut parts = vec![
            fleet.as_str(),
            &desired.key,
            "bucket",
            &name,
            &bucket.storage_class,
            &size,
        ];
        parts.extend(from.as_deref());
        let key = idempotency_key(&parts);
        let b = match found {
            Some(b) if b.max_size_bytes == bucket.max_size_bytes => b,
            Some(b) => {
                progress(&format!("resizing the bucket of project {}", desired.key));
                cloud
                    .update_bucket(
                        &b.id,
                        &bucket.storage_class,
                        bucket.max_size_bytes,
                        &b.labels,
                        &key,
                    )
                    .await
                    .map_err(|e| e.to_string())?
            }
            None => {
                progress(&format!("creating the bucket of project {}", desired.key));
                cloud
                    .create_bucket(
                        &project.id,
                        &name,
                        &bucket.storage_class,
                        bucket.max_size_bytes,
                        &desired.labels,
                        &key,
                    )
                    .await
                    .map_err(|e| e.to_string())?
            }
        };
        record.bucket_id = b.id;
        record.bucket_name = name;
        store
            .upsert_project(&record)
            .await
            .map_err(|e| e.to_string())?;
    }

    if desired.needs_subnet {
        // The network's own lifecycle: destroy may reclaim it, and a later deploy that makes
        // a new one must not replay the old create.
        let generation = store
            .generation(fleet, &desired.key, "")
            .await
            .map_err(|e| e.to_string())?;
        let lifecycle = lifecycle_part(generation);
        let network_key = |parts: &[&str]| {
            let mut all = parts.to_vec();
            all.extend(lifecycle.as_deref());
            idempotency_key(&all)
        };
        let subnets = cloud
            .list_subnets(&project.id)
            .await
            .map_err(|e| e.to_string())?;
        let chosen = live::choose_subnet(&subnets, Some(&record)).cloned();
        let subnet_id = match chosen {
            Some(s) => s.id,
            None => {
                let labels = &desired.labels;
                let network_id = if record.created_network_id.is_empty() {
                    progress(&format!("creating network {}-net", desired.key));
                    let key = network_key(&[fleet, &desired.key, "network", "create"]);
                    let n = cloud
                        .create_network(&project.id, &format!("{}-net", desired.key), labels, &key)
                        .await
                        .map_err(|e| e.to_string())?;
                    // Ownership is recorded before the subnet is created.
                    record.created_network_id = n.id.clone();
                    store
                        .upsert_project(&record)
                        .await
                        .map_err(|e| e.to_string())?;
                    n.id
                } else {
                    record.created_network_id.clone()
                };
                progress(&format!("creating subnet {}-subnet", desired.key));
                let key = network_key(&[fleet, &desired.key, "subnet", "create"]);
                let s = cloud
                    .create_subnet(
                        &project.id,
                        &format!("{}-subnet", desired.key),
                        &network_id,
                        labels,
                        &key,
                    )
                    .await
                    .map_err(|e| e.to_string())?;
                record.created_subnet_id = s.id.clone();
                s.id
            }
        };
        record.subnet_id = subnet_id;
        record.updated_at = now_ms();
        store
            .upsert_project(&record)
            .await
            .map_err(|e| e.to_string())?;
    }
    Ok(record)
}

async fn record_failure<S: InventoryStore>(
    store: &S,
    fleet: &str,
    tenant: &str,
    profile: &str,
    target: &DesiredTarget,
    project: &ProjectRecord,
    error: &str,
) -> Result<(), crate::store::StoreError> {
    let existing =
        store.targets(fleet).await?.into_iter().find(|r| {
            r.project_key == target.key.project_key && r.cluster_name == target.key.cluster
        });
    let mut record = existing.unwrap_or_else(|| TargetRecord {
        fleet: fleet.to_string(),
        project_key: target.key.project_key.clone(),
        cluster_name: target.key.cluster.clone(),
        backend: "mk8s".into(),
        ..Default::default()
    });
    record.status = "error".into();
    record.error = error.to_string();
    record.tenant_id = tenant.to_string();
    record.profile = profile.to_string();
    record.project_id = project.project_id.clone();
    record.region = target.region.clone();
    record.updated_at = now_ms();
    store.upsert_target(&record).await
}

/// Applies one target: filesystem, GPU cluster, cluster, node groups, in that order, recording
/// each ID as soon as it is known.
#[allow(clippy::too_many_arguments)]
async fn apply_target<C: Cloud, S: InventoryStore>(
    cloud: &C,
    store: &S,
    fleet: &str,
    tenant: &str,
    profile: &str,
    target: &DesiredTarget,
    project: &ProjectRecord,
    observed: &live::ObservedProject,
    progress: &Progress,
) -> TargetResult {
    let key = &target.key;
    let mut record = store
        .targets(fleet)
        .await
        .ok()
        .and_then(|all| {
            all.into_iter()
                .find(|r| r.project_key == key.project_key && r.cluster_name == key.cluster)
        })
        .unwrap_or_else(|| TargetRecord {
            fleet: fleet.to_string(),
            project_key: key.project_key.clone(),
            cluster_name: key.cluster.clone(),
            backend: "mk8s".into(),
            ..Default::default()
        });
    record.tenant_id = tenant.to_string();
    record.profile = profile.to_string();
    record.region = target.region.clone();
    record.project_id = project.project_id.clone();
    if record.status != "deployed" || record.applied_digest != target.digest {
        record.status = "provisioning".into();
    }
    record.error.clear();
    record.updated_at = now_ms();
    let outcome = apply_target_steps(
        cloud,
        store,
        fleet,
        target,
        project,
        observed,
        &mut record,
        progress,
    )
    .await;
    let mut result = TargetResult {
        backend: "mk8s",
        project_key: key.project_key.clone(),
        cluster_name: key.cluster.clone(),
        project_id: project.project_id.clone(),
        project_created: project.project_created,
        region: target.region.clone(),
        cluster_id: record.cluster_id.clone(),
        endpoint: String::new(),
        node_group_ids: record.node_group_ids.clone(),
        status: String::new(),
        error: String::new(),
    };
    match outcome {
        Ok(endpoint) => {
            record.status = "deployed".into();
            record.applied_digest = target.digest.clone();
            result.endpoint = endpoint;
            result.status = "deployed".into();
            progress(&format!("{key}: deployed"));
        }
        Err(e) => {
            record.status = "error".into();
            record.error = e.clone();
            result.status = "error".into();
            result.error = e.clone();
            progress(&format!("{key}: failed: {e}"));
        }
    }
    record.updated_at = now_ms();
    result.cluster_id = record.cluster_id.clone();
    result.node_group_ids = record.node_group_ids.clone();
    if let Err(e) = store.upsert_target(&record).await {
        result.status = "error".into();
        result.error = e.to_string();
    }
    result
}

/// The idempotency-key part naming a lifecycle: none for the first, so keys of deployments
/// made before generations existed are unchanged.
fn lifecycle_part(generation: i64) -> Option<String> {
    (generation > 0).then(|| format!("lifecycle-{generation}"))
}

#[allow(clippy::too_many_arguments)]
async fn apply_target_steps<C: Cloud, S: InventoryStore>(
    cloud: &C,
    store: &S,
    fleet: &str,
    target: &DesiredTarget,
    project: &ProjectRecord,
    observed: &live::ObservedProject,
    record: &mut TargetRecord,
    progress: &Progress,
) -> Result<String, String> {
    let key = &target.key;
    let labels: &Labels = &target.labels;
    let generation = store
        .generation(fleet, &key.project_key, &key.cluster)
        .await
        .map_err(|e| e.to_string())?;
    let lifecycle = lifecycle_part(generation);
    let ikey = |parts: &[&str]| {
        let mut all = vec![fleet, key.project_key.as_str(), key.cluster.as_str()];
        all.extend(lifecycle.as_deref());
        all.extend_from_slice(parts);
        idempotency_key(&all)
    };
    let save = |record: &TargetRecord| {
        let record = record.clone();
        async move {
            store
                .upsert_target(&record)
                .await
                .map_err(|e| e.to_string())
        }
    };
    save(record).await?;
    let project_id = project.project_id.as_str();
    let subnet_id = if target.subnet_id.is_empty() {
        project.subnet_id.clone()
    } else {
        target.subnet_id.clone()
    };
    record.subnet_id = subnet_id.clone();

    // Filesystem.
    let mut filesystem_id = String::new();
    match &target.filesystem {
        Some(DesiredFilesystem::Create {
            name,
            size_gibibytes,
        }) => {
            let fs = match observed.filesystems.iter().find(|f| &f.name == name) {
                Some(fs) if fs.size_gibibytes < *size_gibibytes => {
                    progress(&format!(
                        "{key}: resizing filesystem {name} to {size_gibibytes} GiB"
                    ));
                    let k = ikey(&[
                        "filesystem",
                        name,
                        "resize",
                        &size_gibibytes.to_string(),
                        &format!("from-v{}", fs.resource_version),
                    ]);
                    cloud
                        .resize_filesystem(&fs.id, *size_gibibytes, labels, &k)
                        .await
                        .map_err(|e| e.to_string())?
                }
                Some(fs) => fs.clone(),
                None => {
                    progress(&format!(
                        "{key}: creating filesystem {name} ({size_gibibytes} GiB)"
                    ));
                    let k = ikey(&["filesystem", name, "create", &size_gibibytes.to_string()]);
                    cloud
                        .create_filesystem(project_id, name, *size_gibibytes, labels, &k)
                        .await
                        .map_err(|e| e.to_string())?
                }
            };
            record.filesystem_id = fs.id.clone();
            record.filesystem_created = true;
            filesystem_id = fs.id;
            save(record).await?;
        }
        Some(DesiredFilesystem::Existing { id }) => {
            record.filesystem_id = id.clone();
            record.filesystem_created = false;
            filesystem_id = id.clone();
        }
        None => {}
    }

    // GPU cluster.
    let mut gpu_cluster_id = String::new();
    if let Some((name, fabric)) = &target.gpu_cluster {
        let g = match observed.gpu_clusters.iter().find(|g| &g.name == name) {
            Some(g) => g.clone(),
            None => {
                progress(&format!("{key}: creating GPU cluster {name}"));
                let k = ikey(&["gpu-cluster", name, "create", fabric]);
                cloud
                    .create_gpu_cluster(project_id, name, fabric, labels, &k)
                    .await
                    .map_err(|e| e.to_string())?
            }
        };
        record.gpu_cluster_id = g.id.clone();
        gpu_cluster_id = g.id;
        save(record).await?;
    }

    // Cluster.
    let spec = target.cluster_spec(&subnet_id);
    let cluster = match observed.clusters.iter().find(|c| c.name == key.cluster) {
        Some(c) => {
            let version_differs = !spec.k8s_version.is_empty()
                && !c.spec.k8s_version.is_empty()
                && c.spec.k8s_version != spec.k8s_version;
            if version_differs || &c.labels != labels {
                progress(&format!("{key}: updating cluster"));
                let mut wanted = spec.clone();
                wanted.subnet_id = c.spec.subnet_id.clone();
                let k = ikey(&[
                    "cluster",
                    "update",
                    &super::desired::DesiredTarget::resource_digest(&(&wanted.k8s_version, labels)),
                    &format!("from-v{}", c.resource_version),
                ]);
                cloud
                    .update_cluster(&c.id, &wanted, labels, &k)
                    .await
                    .map_err(|e| e.to_string())?
            } else {
                c.clone()
            }
        }
        None => {
            progress(&format!("{key}: creating cluster"));
            let k = ikey(&["cluster", "create"]);
            cloud
                .create_cluster(project_id, &key.cluster, &spec, labels, &k)
                .await
                .map_err(|e| e.to_string())?
        }
    };
    record.cluster_id = cluster.id.clone();
    save(record).await?;

    // Node groups.
    let existing = cloud
        .list_node_groups(&cluster.id)
        .await
        .map_err(|e| e.to_string())?;
    let mut ids = Vec::new();
    for group in &target.node_groups {
        let found = existing.iter().find(|g| g.name == group.name);
        let want = target.node_group_spec(
            group,
            &filesystem_id,
            &gpu_cluster_id,
            found.map_or(subnet_id.as_str(), |g| g.spec.subnet_id.as_str()),
        );
        let digest =
            DesiredTarget::resource_digest(&(&group.shape, &filesystem_id, &gpu_cluster_id));
        let ng = match found {
            None => {
                progress(&format!(
                    "{key}: creating node group {} ({} node(s))",
                    group.name, want.node_count
                ));
                let k = ikey(&["node-group", &group.name, "create", &digest]);
                cloud
                    .create_node_group(&cluster.id, &group.name, &want, labels, &k)
                    .await
                    .map_err(|e| e.to_string())?
            }
            Some(g) => {
                let replace = g.spec.platform != want.platform
                    || g.spec.preset != want.preset
                    || g.spec.preemptible != want.preemptible
                    || g.spec.reservation != want.reservation
                    || g.spec.gpu_cluster_id != want.gpu_cluster_id;
                if replace {
                    progress(&format!("{key}: replacing node group {}", group.name));
                    let k = ikey(&["node-group", &group.name, "delete", &g.id]);
                    cloud
                        .delete_node_group(&g.id, &k)
                        .await
                        .map_err(|e| e.to_string())?;
                    let k = ikey(&["node-group", &group.name, "create", &digest]);
                    cloud
                        .create_node_group(&cluster.id, &group.name, &want, labels, &k)
                        .await
                        .map_err(|e| e.to_string())?
                } else if g.spec != want || &g.labels != labels {
                    progress(&format!("{key}: updating node group {}", group.name));
                    let k = ikey(&[
                        "node-group",
                        &group.name,
                        "update",
                        &digest,
                        &format!("from-v{}", g.resource_version),
                    ]);
                    cloud
                        .update_node_group(&g.id, &want, labels, &k)
                        .await
                        .map_err(|e| e.to_string())?
                } else {
                    g.clone()
                }
            }
        };
        ids.push(ng.id);
        record.node_group_ids = ids.clone();
        save(record).await?;
    }
    for stale in existing
        .iter()
        .filter(|g| !target.node_groups.iter().any(|d| d.name == g.name))
    {
        if desired::owned_by(&stale.labels, fleet, &key.project_key, &key.cluster) {
            progress(&format!(
                "{key}: deleting node group {} (no longer in the spec)",
                stale.name
            ));
            let k = ikey(&["node-group", &stale.name, "delete", &stale.id]);
            cloud
                .delete_node_group(&stale.id, &k)
                .await
                .map_err(|e| e.to_string())?;
        }
    }
    Ok(cluster.public_endpoint)
}

/// One destroyed (or not) target or network.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DestroyEntry {
    pub project_key: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub cluster_name: String,
    pub status: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub retry_command: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DestroyResult {
    pub name: String,
    pub cloud: String,
    pub clusters: Vec<DestroyEntry>,
    pub networks: Vec<DestroyEntry>,
    pub failed: usize,
}

impl DestroyResult {
    pub fn render_text(&self) -> String {
        use std::fmt::Write;
        let mut out = String::new();
        for c in &self.clusters {
            let _ = writeln!(out, "  {}/{}: {}", c.project_key, c.cluster_name, c.status);
            for e in &c.errors {
                let _ = writeln!(out, "      {e}");
            }
            if !c.retry_command.is_empty() {
                let _ = writeln!(out, "      retry: {}", c.retry_command);
            }
        }
        for n in &self.networks {
            let _ = writeln!(out, "  {}/network: {}", n.project_key, n.status);
        }
        if self.failed > 0 {
            let _ = writeln!(
                out,
                "Fleet '{}' teardown is incomplete; recovery state retained.",
                self.name
            );
        } else {
            let _ = writeln!(out, "Destroyed fleet '{}'.", self.name);
        }
        out
    }
}

/// Destroys the selected targets that the inventory records: node groups, cluster, GPU cluster
/// and filesystem, each by exact ID after its identity and ownership are proven; then the
/// networks fleetbot created for projects with no target left. Projects and buckets are kept.
pub async fn destroy<C: Cloud, S: InventoryStore>(
    cloud: &C,
    store: &S,
    spec: &FleetSpec,
    options: &LifecycleOptions,
    progress: Progress,
) -> Result<DestroyResult, EngineError> {
    let selected = select(
        spec,
        &options.only_projects,
        &options.only_clusters,
        &spec.project_prefix,
    );
    let records = store.targets(&spec.name).await?;
    for &(p, c) in &selected {
        let cluster = &spec.projects[p].clusters[c];
        if let Some(r) = records
            .iter()
            .find(|r| r.project_key == spec.projects[p].key() && r.cluster_name == cluster.name)
        {
            require_backend(r, cluster, WRONG_BACKEND)?;
        }
    }
    let mut result = DestroyResult {
        name: spec.name.clone(),
        cloud: cloud.describe(),
        clusters: Vec::new(),
        networks: Vec::new(),
        failed: 0,
    };
    let mut touched_projects = Vec::new();
    for &(p, c) in &selected {
        let project = &spec.projects[p];
        let cluster = &project.clusters[c];
        let key = project.key();
        if !touched_projects.contains(&key) {
            touched_projects.push(key.clone());
        }
        let retry = format!(
            "fleetbot destroy --spec {} --only-projects {} --only-clusters {} --yes",
            options.spec_path, key, cluster.name
        );
        let Some(record) = records
            .iter()
            .find(|r| r.project_key == key && r.cluster_name == cluster.name)
        else {
            result.clusters.push(DestroyEntry {
                project_key: key,
                cluster_name: cluster.name.clone(),
                status: "absent".into(),
                errors: Vec::new(),
                retry_command: String::new(),
            });
            continue;
        };
        progress(&format!("{key}/{}: destroying", cluster.name));
        match destroy_target(cloud, &spec.name, record, &progress).await {
            Ok(()) => {
                // A new lifecycle first: if the removal below is lost, the next destroy proves
                // the resources gone and bumps again, which is harmless.
                store
                    .bump_generation(&spec.name, &key, &cluster.name)
                    .await?;
                store.remove_target(&spec.name, &key, &cluster.name).await?;
                result.clusters.push(DestroyEntry {
                    project_key: key,
                    cluster_name: cluster.name.clone(),
                    status: "destroyed".into(),
                    errors: Vec::new(),
                    retry_command: String::new(),
                });
            }
            Err(errors) => {
                let mut kept = record.clone();
                kept.status = "destroy-incomplete".into();
                kept.error = errors.join("; ");
                kept.updated_at = now_ms();
                store.upsert_target(&kept).await?;
                result.clusters.push(DestroyEntry {
                    project_key: key,
                    cluster_name: cluster.name.clone(),
                    status: "destroy-incomplete".into(),
                    errors,
                    retry_command: retry,
                });
            }
        }
    }

    // Network reclaim: only what fleetbot created, only when no target of the project remains.
    let remaining = store.targets(&spec.name).await?;
    let project_records = store.projects(&spec.name).await?;
    for key in touched_projects {
        if remaining.iter().any(|r| r.project_key == key) {
            continue;
        }
        let Some(mut record) = project_records
            .iter()
            .find(|r| r.project_key == key)
            .cloned()
        else {
            continue;
        };
        if record.created_network_id.is_empty() && record.created_subnet_id.is_empty() {
            continue;
        }
        let mut errors = Vec::new();
        if !record.created_subnet_id.is_empty() {
            let k = idempotency_key(&[
                &spec.name,
                &key,
                "subnet",
                "delete",
                &record.created_subnet_id,
            ]);
            match cloud.delete_subnet(&record.created_subnet_id, &k).await {
                Ok(()) => record.created_subnet_id.clear(),
                Err(e) if e.is_not_found() => record.created_subnet_id.clear(),
                Err(e) => errors.push(format!("subnet: {e}")),
            }
        }
        if !record.created_network_id.is_empty() {
            let k = idempotency_key(&[
                &spec.name,
                &key,
                "network",
                "delete",
                &record.created_network_id,
            ]);
            match cloud.delete_network(&record.created_network_id, &k).await {
                Ok(()) => record.created_network_id.clear(),
                Err(e) if e.is_not_found() => record.created_network_id.clear(),
                Err(e) => errors.push(format!("network: {e}")),
            }
        }
        if errors.is_empty() {
            record.subnet_id.clear();
            store.bump_generation(&spec.name, &key, "").await?;
        }
        record.updated_at = now_ms();
        store.upsert_project(&record).await?;
        result.networks.push(DestroyEntry {
            project_key: key,
            cluster_name: String::new(),
            status: if errors.is_empty() {
                "destroyed".into()
            } else {
                "destroy-incomplete".into()
            },
            errors,
            retry_command: String::new(),
        });
    }
    result.failed = result
        .clusters
        .iter()
        .filter(|c| c.status == "destroy-incomplete")
        .count()
        + result
            .networks
            .iter()
            .filter(|n| n.status == "destroy-incomplete")
            .count();
    Ok(result)
}

/// Deletes one recorded target by exact IDs, after checking that each is what the inventory
/// says and carries this target's labels. Never deletes by name.
async fn destroy_target<C: Cloud>(
    cloud: &C,
    fleet: &str,
    record: &TargetRecord,
    progress: &Progress,
) -> Result<(), Vec<String>> {
    let (pk, cn) = (record.project_key.as_str(), record.cluster_name.as_str());
    let owned = |labels: &Labels| desired::owned_by(labels, fleet, pk, cn);
    let k = |parts: &[&str]| {
        let mut all = vec![fleet, pk, cn, "destroy"];
        all.extend_from_slice(parts);
        idempotency_key(&all)
    };
    let mut errors = Vec::new();
    if record.project_id.is_empty() {
        return Err(vec![
            "the inventory records no project ID; refusing destructive name inference".into(),
        ]);
    }
    let mut cluster_id = record.cluster_id.clone();
    if cluster_id.is_empty() {
        // Crash between creating the cluster and recording it: find it by name, but only accept it
        // with this target's labels.
        match cloud.list_clusters(&record.project_id).await {
            Ok(clusters) => {
                if let Some(c) = clusters.iter().find(|c| c.name == cn && owned(&c.labels)) {
                    cluster_id = c.id.clone();
                }
            }
            Err(e) => return Err(vec![format!("cannot list clusters: {e}")]),
        }
    }
    if !cluster_id.is_empty() {
        match cloud.get_cluster(&cluster_id).await {
            Ok(c) => {
                if c.project_id != record.project_id || c.name != cn || !owned(&c.labels) {
                    return Err(vec![format!(
                        "cluster {} does not match the inventory (project, name or ownership labels differ); refusing to delete it",
                        cluster_id
                    )]);
                }
                let groups = cloud
                    .list_node_groups(&c.id)
                    .await
                    .map_err(|e| vec![e.to_string()])?;
                if let Some(foreign) = groups.iter().find(|g| !owned(&g.labels)) {
                    return Err(vec![format!(
                        "node group {:?} in the cluster is not managed by fleetbot; refusing to delete the cluster",
                        foreign.name
                    )]);
                }
                for g in &groups {
                    progress(&format!("{pk}/{cn}: deleting node group {}", g.name));
                    if let Err(e) = cloud
                        .delete_node_group(&g.id, &k(&["node-group", &g.id]))
                        .await
                        && !e.is_not_found()
                    {
                        errors.push(format!("node group {}: {e}", g.name));
                    }
                }
                if errors.is_empty() {
                    progress(&format!("{pk}/{cn}: deleting cluster"));
                    if let Err(e) = cloud.delete_cluster(&c.id, &k(&["cluster", &c.id])).await
                        && !e.is_not_found()
                    {
                        errors.push(format!("cluster: {e}"));
                    }
                }
            }
            Err(e) if e.is_not_found() => {}
            Err(e) => errors.push(format!("cannot read cluster: {e}")),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    if !record.gpu_cluster_id.is_empty() {
        match cloud.list_gpu_clusters(&record.project_id).await {
            Ok(all) => {
                if let Some(g) = all.iter().find(|g| g.id == record.gpu_cluster_id) {
                    if owned(&g.labels) {
                        if let Err(e) = cloud
                            .delete_gpu_cluster(&g.id, &k(&["gpu-cluster", &g.id]))
                            .await
                            && !e.is_not_found()
                        {
                            errors.push(format!("GPU cluster: {e}"));
                        }
                    } else {
                        errors.push(
                            "the recorded GPU cluster is not labelled as this target's; kept"
                                .into(),
                        );
                    }
                }
            }
            Err(e) => errors.push(format!("cannot list GPU clusters: {e}")),
        }
    }
    if record.filesystem_created && !record.filesystem_id.is_empty() {
        match cloud.get_filesystem(&record.filesystem_id).await {
            Ok(fs) if owned(&fs.labels) => {
                if let Err(e) = cloud
                    .delete_filesystem(&fs.id, &k(&["filesystem", &fs.id]))
                    .await
                    && !e.is_not_found()
                {
                    errors.push(format!("filesystem: {e}"));
                }
            }
            Ok(_) => {
                errors.push("the recorded filesystem is not labelled as this target's; kept".into())
            }
            Err(e) if e.is_not_found() => {}
            Err(e) => errors.push(format!("cannot read filesystem: {e}")),
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// One target's status: the inventory merged with a live read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StatusEntry {
    pub backend: String,
    pub project_key: String,
    pub cluster_name: String,
    pub status: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub project_id: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub cluster_id: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub live_state: String,
    pub node_groups: usize,
    pub nodes_ready: i64,
    pub nodes_wanted: i64,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub error: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StatusResult {
    pub name: String,
    pub cloud: String,
    pub clusters: Vec<StatusEntry>,
    pub deployed: usize,
    pub failed: usize,
    pub backend_counts: BackendCounts,
}

impl StatusResult {
    pub fn render_text(&self) -> String {
        use std::fmt::Write;
        let mut out = format!("Fleet '{}':\n", self.name);
        for c in &self.clusters {
            let _ = writeln!(
                out,
                "  {}/{}: {} {}",
                c.project_key, c.cluster_name, c.status, c.cluster_id
            );
        }
        out
    }
}

/// Every spec target: its inventory record merged with a live read of its cluster.
pub async fn status<C: Cloud, S: InventoryStore>(
    cloud: &C,
    store: &S,
    spec: &FleetSpec,
) -> Result<StatusResult, EngineError> {
    let records = store.targets(&spec.name).await?;
    let mut clusters = Vec::new();
    for (project, cluster) in spec.cluster_targets() {
        let key = project.key();
        let record = records
            .iter()
            .find(|r| r.project_key == key && r.cluster_name == cluster.name);
        let mut entry = StatusEntry {
            backend: cluster.backend_name().to_string(),
            project_key: key.clone(),
            cluster_name: cluster.name.clone(),
            status: "unknown".into(),
            project_id: String::new(),
            cluster_id: String::new(),
            live_state: String::new(),
            node_groups: 0,
            nodes_ready: 0,
            nodes_wanted: 0,
            error: String::new(),
        };
        if let Some(r) = record {
            require_backend(
                r,
                cluster,
                "refusing status without backend ownership proof",
            )?;
            entry.status = if r.status.is_empty() {
                "unknown".into()
            } else {
                r.status.clone()
            };
            entry.project_id = r.project_id.clone();
            entry.cluster_id = r.cluster_id.clone();
            entry.error = r.error.clone();
            if !r.cluster_id.is_empty() {
                match cloud.get_cluster(&r.cluster_id).await {
                    Ok(c) => {
                        entry.live_state = format!("{:?}", c.state).to_lowercase();
                        match cloud.list_node_groups(&c.id).await {
                            Ok(groups) => {
                                entry.node_groups = groups.len();
                                entry.nodes_ready = groups.iter().map(|g| g.ready_node_count).sum();
                                entry.nodes_wanted = groups.iter().map(|g| g.spec.node_count).sum();
                            }
                            Err(e) => {
                                entry.status = "status-error".into();
                                entry.error = e.to_string();
                            }
                        }
                    }
                    Err(e) if e.is_not_found() => {
                        entry.live_state = "absent".into();
                        if entry.status == "deployed" {
                            entry.status = "status-error".into();
                            entry.error = "the recorded cluster no longer exists".into();
                        }
                    }
                    Err(e) => {
                        entry.status = "status-error".into();
                        entry.error = e.to_string();
                    }
                }
            }
        }
        clusters.push(entry);
    }
    let mut result = StatusResult {
        name: spec.name.clone(),
        cloud: cloud.describe(),
        deployed: clusters.iter().filter(|c| c.status == "deployed").count(),
        failed: clusters
            .iter()
            .filter(|c| !NOT_FAILED.contains(&c.status.as_str()) && c.status != "unknown")
            .count(),
        backend_counts: BackendCounts::default(),
        clusters,
    };
    result.backend_counts = BackendCounts {
        mk8s: result
            .clusters
            .iter()
            .filter(|c| c.backend == "mk8s")
            .count(),
        soperator: result
            .clusters
            .iter()
            .filter(|c| c.backend == "soperator")
            .count(),
    };
    Ok(result)
}

/// Whether every action of a plan is a no-op (for "deploy again → no mutation").
pub fn plan_is_quiet(plan: &LivePlan) -> bool {
    plan.is_quiet()
}
