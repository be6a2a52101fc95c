//! Deploy: every refusal and the preflight before the first mutation, then the projects one at
//! a time, then the targets up to `concurrency` at a time, each under its time limit, then
//! (with prune) the recorded targets the spec no longer declares.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use super::apply::Apply;
use super::deploy_result::{BackendCounts, DeployResult, TargetResult};
use super::error::{ApplyError, EngineError, Refusal};
use super::object_storage::ObjectStorageResult;
use super::options::{Destruction, LifecycleOptions};
use super::prepare::Prepared;
use super::progress::{Event, Outcome, Progress};
use super::prune::prune;
use crate::cloud::domain::Cloud;
use crate::clusters::Connections;
use crate::engine::desired::DesiredTarget;
use crate::engine::live::{LivePlan, ObservedProject};
use crate::engine::preflight::live_preflight;
use crate::engine::target_status::TargetStatus;
use crate::quota::scope::Selection;
use crate::spec::FleetSpec;
use crate::store::{InventoryStore, ProjectRecord, TargetRecord};

/// The refusals a prepared deploy can still meet without a cloud call: plan problems and
/// projects that are missing when they must not be created.
fn refuse_before_mutation(
    prepared: &Prepared,
    options: &LifecycleOptions,
) -> Result<(), EngineError> {
    if prepared.plan.has_problems() {
        return Err(EngineError::refused(
            Refusal::PlanProblems,
            format!(
                "the live plan found problems; nothing was changed:\n  - {}",
                prepared.plan.problems().join("\n  - ")
            ),
        ));
    }
    for (_, project) in &prepared.projects {
        let missing = prepared
            .observed
            .projects
            .get(&project.key)
            .and_then(|o| o.project.as_ref())
            .is_none();
        if missing && !project.project_id.is_empty() {
            return Err(EngineError::refused(
                Refusal::ProjectMissing,
                format!("project {} does not exist", project.project_id),
            ));
        }
        if missing && !options.create_projects {
            return Err(EngineError::refused(
                Refusal::ProjectCreationDisabled,
                format!(
                    "project '{}' not found under tenant and project creation is disabled",
                    project.display_name
                ),
            ));
        }
    }
    Ok(())
}

/// A plan that deletes, replaces or shrinks inside the targets it applies is refused unless
/// the caller allowed it: one typo (`cuont:` for `count:`) must not quietly delete a GPU pool.
/// Allowed means listed in the approved plan: a destructive line of a target that the approved
/// plan did not list leaves that target untouched ([`unlisted_targets`]); one of a project,
/// which is applied before any target, refuses the whole run.
fn refuse_unallowed_destruction(
    prepared: &Prepared,
    options: &LifecycleOptions,
) -> Result<(), EngineError> {
    let unallowed: Vec<String> = prepared
        .plan
        .destructive_within()
        .iter()
        .filter(|d| !options.allow_destructive.allows(d))
        .filter(|d| options.allow_destructive == Destruction::Refused || !d.target.contains('/'))
        .map(|d| d.line())
        .collect();
    if unallowed.is_empty() {
        return Ok(());
    }
    let why = match options.allow_destructive {
        Destruction::Refused => {
            "and that was not allowed (fleetbot deploy --allow-destroy)".to_string()
        }
        Destruction::Listed(_) => format!(
            "that the approved plan did not list: {}",
            super::since_plan::CHANGED_SINCE_PLAN
        ),
    };
    Err(EngineError::refused(
        Refusal::Destructive,
        format!(
            "the plan deletes, replaces or shrinks {} resource(s) {why}; nothing was changed:\n  - {}",
            unallowed.len(),
            unallowed.join("\n  - ")
        ),
    ))
}

/// `project/cluster` of each target whose plan deletes, replaces or shrinks something the
/// approved plan did not list, with the first such line: the cloud changed since the approval,
/// so the target is not touched.
fn unlisted_targets(prepared: &Prepared, options: &LifecycleOptions) -> HashMap<String, String> {
    let mut out = HashMap::new();
    if let Destruction::Listed(_) = options.allow_destructive {
        for d in prepared.plan.destructive_within() {
            if d.target.contains('/') && !options.allow_destructive.allows(&d) {
                out.entry(d.target.clone()).or_insert_with(|| d.line());
            }
        }
    }
    out
}

/// Quota preflight against the live tenant; a shortfall refuses the deploy.
async fn preflight<C: Cloud>(
    cloud: &C,
    spec: &FleetSpec,
    tenant_id: &str,
    options: &LifecycleOptions,
    plan: &LivePlan,
    progress: &Progress,
) -> Result<(), EngineError> {
    let selection = Selection {
        projects: options.only_projects.clone(),
        clusters: options.only_clusters.clone(),
    };
    let sink = progress.clone();
    let mut on_status = move |line: &str| sink(&Event::note(line));
    let prefix = options.prefix(spec);
    let report = live_preflight(
        cloud,
        spec,
        tenant_id,
        selection,
        prefix,
        plan,
        &mut on_status,
    )
    .await?;
    match report.message() {
        Some(message) => Err(EngineError::refused(Refusal::Quota, message)),
        None => Ok(()),
    }
}

/// What phase 1 leaves: each reached project's record (or why it failed), and the object
/// storage each ready project has, for its clusters' results.
type ProjectsApplied = (
    BTreeMap<String, Result<ProjectRecord, ApplyError>>,
    BTreeMap<String, ObjectStorageResult>,
);

/// Phase 1, sequential: projects, their storage and their shared subnet. A project missing
/// from the map was not reached (fail-fast).
async fn apply_projects<C: Cloud, S: InventoryStore>(
    apply: &Apply<'_, C, S>,
    prepared: &Prepared,
    continue_on_error: bool,
) -> ProjectsApplied {
    let mut state = BTreeMap::new();
    let mut storage = BTreeMap::new();
    for (_, desired) in &prepared.projects {
        let record = prepared
            .project_records
            .iter()
            .find(|r| r.project_key == desired.key)
            .cloned();
        let observed = prepared.observed.projects.get(&desired.key);
        let outcome = match apply.project(desired, observed, record).await {
            Ok((record, ready)) => {
                if let Some(ready) = ready {
                    storage.insert(desired.key.clone(), ready);
                }
                Ok(record)
            }
            Err(e) => Err(e),
        };
        let stop = outcome.is_err() && !continue_on_error;
        if let Err(e) = &outcome {
            (apply.progress)(&Event::step(
                format_args!("project {}", desired.key),
                e.to_string(),
            ));
        }
        state.insert(desired.key.clone(), outcome);
        if stop {
            break;
        }
    }
    (state, storage)
}

/// A target that was not applied, and why.
fn not_applied(target: &DesiredTarget, error: &str) -> TargetResult {
    TargetResult::new(&target.key, &target.region, &ProjectRecord::default()).with_error(error)
}

/// What one target's task owns, so that it can run on its own.
#[derive(Clone)]
struct TargetRunner<C, S> {
    cloud: C,
    store: S,
    fleet: String,
    tenant: String,
    profile: String,
    progress: Progress,
    timeout: Duration,
    kube: Connections,
}

impl<C: Cloud, S: InventoryStore> TargetRunner<C, S> {
    async fn run(
        self,
        target: DesiredTarget,
        project: ProjectRecord,
        observed: ObservedProject,
        approved: ObservedProject,
        unchanged: Option<TargetRecord>,
    ) -> TargetResult {
        let apply = Apply {
            cloud: &self.cloud,
            store: &self.store,
            fleet: &self.fleet,
            tenant: &self.tenant,
            profile: &self.profile,
            progress: &self.progress,
            kube: &self.kube,
        };
        let run = apply.target(&target, &project, &observed, &approved, unchanged);
        match tokio::time::timeout(self.timeout, run).await {
            Ok(result) => result,
            Err(_) => {
                let minutes = self.timeout.as_secs() / 60;
                let error = format!("timed out after {minutes} minute(s)");
                (self.progress)(&Event::done(&target.key, Outcome::Failed(error.clone())));
                let _ = apply.record_failure(&target, &project, &error).await;
                TargetResult::new(&target.key, &target.region, &project).with_error(&error)
            }
        }
    }
}

fn joined(done: Result<TargetResult, tokio::task::JoinError>) -> Result<TargetResult, EngineError> {
    done.map_err(|e| EngineError::refused(Refusal::TaskFailed, format!("target task failed: {e}")))
}

/// Phase 2: targets, up to `concurrency` at a time; a target whose project failed is not
/// attempted.
async fn apply_targets<C, S>(
    runner: TargetRunner<C, S>,
    prepared: &Prepared,
    projects: &BTreeMap<String, Result<ProjectRecord, ApplyError>>,
    options: &LifecycleOptions,
) -> Result<Vec<TargetResult>, EngineError>
where
    C: Cloud + Clone + 'static,
    S: InventoryStore + Clone + 'static,
{
    let semaphore = Arc::new(tokio::sync::Semaphore::new(options.concurrency.max(1)));
    let mut tasks = tokio::task::JoinSet::new();
    let mut stop = false;
    let mut out = Vec::new();
    // What the live plan proved unchanged: those targets prove their readiness once and write
    // nothing, so a deploy's cost follows what it changes.
    let unchanged: HashSet<&str> = prepared
        .plan
        .targets
        .iter()
        .filter(|t| t.unchanged && t.problems.is_empty())
        .map(|t| t.target.as_str())
        .collect();
    let unlisted = unlisted_targets(prepared, options);
    let recorded: HashMap<(&str, &str), &TargetRecord> = prepared
        .target_records
        .iter()
        .map(|r| ((r.project_key.as_str(), r.cluster_name.as_str()), r))
        .collect();
    for target in prepared.targets.iter().cloned() {
        let proven = unchanged
            .contains(target.key.to_string().as_str())
            .then(|| recorded.get(&(target.key.project_key.as_str(), target.key.cluster.as_str())))
            .flatten()
            .map(|r| (*r).clone());
        let project = match projects.get(&target.key.project_key) {
            Some(Ok(project)) => project.clone(),
            Some(Err(e)) => {
                out.push(not_applied(&target, &format!("project failed: {e}")));
                continue;
            }
            None => {
                out.push(not_applied(&target, "project was not reached (fail-fast)"));
                continue;
            }
        };
        if stop {
            out.push(not_applied(&target, "not attempted (fail-fast)"));
            continue;
        }
        if let Some(line) = unlisted.get(&target.key.to_string()) {
            let message = format!(
                "{}: the plan now would {line}, which the approved plan did not list; nothing was changed on this target: plan again",
                super::since_plan::CHANGED_SINCE_PLAN
            );
            (runner.progress)(&Event::done(&target.key, Outcome::Failed(message.clone())));
            let mut result =
                TargetResult::new(&target.key, &target.region, &project).with_error(&message);
            result.changed_since_plan = true;
            out.push(result);
            continue;
        }
        let observed = prepared
            .observed
            .projects
            .get(&target.key.project_key)
            .cloned()
            .unwrap_or_default();
        // What the target is held to before it is changed: the approved plan's reading.
        let approved = match &options.approved_reading {
            Some(reading) => reading
                .projects
                .get(&target.key.project_key)
                .cloned()
                .unwrap_or_default(),
            None => observed.clone(),
        };
        let permit = semaphore
            .clone()
            .acquire_owned()
            .await
            .expect("semaphore is never closed");
        let runner = runner.clone();
        tasks.spawn(async move {
            let _permit = permit;
            runner
                .run(target, project, observed, approved, proven)
                .await
        });
        if !options.continue_on_error && options.concurrency <= 1 {
            // Sequential fail-fast: wait for this target before starting the next.
            if let Some(done) = tasks.join_next().await {
                let r = joined(done)?;
                stop = r.status != TargetStatus::Deployed;
                out.push(r);
            }
        }
    }
    while let Some(done) = tasks.join_next().await {
        out.push(joined(done)?);
    }
    Ok(out)
}

/// Deploys the selected targets of a plan already read with [`super::prepare`] (and the same
/// options): exactly that plan, as it was shown or judged. Returns the result even when targets
/// failed; an `Err` means nothing was mutated (validation, identity, ownership or preflight
/// refused) or the inventory failed. With `options.prune` (and the whole spec selected) the
/// recorded targets the spec no longer declares are torn down last, as destroy would; without
/// it they are only reported.
pub(crate) async fn deploy_prepared<
    C: Cloud + Clone + 'static,
    S: InventoryStore + Clone + 'static,
>(
    cloud: &C,
    store: &S,
    spec: &FleetSpec,
    tenant_id: &str,
    options: &LifecycleOptions,
    prepared: Prepared,
    progress: Progress,
) -> Result<DeployResult, EngineError> {
    refuse_before_mutation(&prepared, options)?;
    let (clusters, stopped) = if options.prune_only {
        (Vec::new(), false)
    } else {
        apply_all(cloud, store, spec, tenant_id, options, &prepared, &progress).await?
    };
    let pruned = prune(
        cloud, store, &spec.name, &prepared, options, stopped, &progress,
    )
    .await?;
    let mut result = DeployResult {
        name: spec.name.clone(),
        tenant_id: tenant_id.to_string(),
        region: spec.region.clone(),
        project_prefix: options.prefix(spec).to_string(),
        profile: options.profile.clone(),
        cloud: cloud.describe(),
        plan_digest: prepared.plan.digest.clone(),
        changed: (!options.prune_only && prepared.plan.changes_anything())
            || !pruned.pruned.is_empty(),
        clusters,
        deployed: 0,
        failed: 0,
        backend_counts: BackendCounts::default(),
        pruned: pruned.pruned,
        not_pruned: pruned.kept,
    };
    result.recount();
    Ok(result)
}

/// Phases 1 and 2 of a deploy: the refusal of what was not allowed, the preflight, then the
/// projects and the targets. Returns the targets' results and whether a fail-fast deploy
/// stopped (so nothing more is changed).
async fn apply_all<C: Cloud + Clone + 'static, S: InventoryStore + Clone + 'static>(
    cloud: &C,
    store: &S,
    spec: &FleetSpec,
    tenant_id: &str,
    options: &LifecycleOptions,
    prepared: &Prepared,
    progress: &Progress,
) -> Result<(Vec<TargetResult>, bool), EngineError> {
    refuse_unallowed_destruction(prepared, options)?;
    if options.preflight && !prepared.selected.is_empty() {
        super::catalogue::check_catalogue(cloud, tenant_id, prepared, progress).await?;
        preflight(cloud, spec, tenant_id, options, &prepared.plan, progress).await?;
    }
    let kube = Connections::default();
    let apply = Apply {
        cloud,
        store,
        fleet: &spec.name,
        tenant: tenant_id,
        profile: &options.profile,
        progress,
        kube: &kube,
    };
    let (projects, storage) = apply_projects(&apply, prepared, options.continue_on_error).await;
    let runner = TargetRunner {
        cloud: cloud.clone(),
        store: store.clone(),
        fleet: spec.name.clone(),
        tenant: tenant_id.to_string(),
        profile: options.profile.clone(),
        progress: progress.clone(),
        timeout: options.timeout,
        kube,
    };
    let mut clusters = apply_targets(runner, prepared, &projects, options).await?;
    for cluster in &mut clusters {
        cluster.object_storage = storage.get(&cluster.project_key).cloned();
    }
    let stopped = !options.continue_on_error
        && (clusters.iter().any(|c| c.status.is_failure())
            || projects.values().any(Result::is_err));
    Ok((clusters, stopped))
}
