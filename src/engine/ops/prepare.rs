//! What every lifecycle run reads before acting: the selection, the inventory, the desired
//! state and a live plan (with the recorded targets the spec no longer declares, when the whole
//! spec is selected), after the checks that need no cloud call. Nothing here mutates.

use super::error::{EngineError, Refusal};
use super::options::{LifecycleOptions, select};
use super::records::require_selected_backends;
use crate::cloud::domain::Cloud;
use crate::engine::desired::{self, DesiredProject, DesiredTarget};
use crate::engine::live::{self, LivePlan, Observed};
use crate::engine::soperator;
use crate::spec::{Backend, FleetSpec};
use crate::store::{InventoryStore, ProjectRecord, TargetRecord};

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

/// Every selected mk8s target's project has a region: without one there is nothing to look up
/// and nowhere to create, so the live plan refuses as deploy's preflight does (same sentence)
/// rather than showing an empty plan.
fn require_regions(spec: &FleetSpec, selected: &[(usize, usize)]) -> Result<(), EngineError> {
    for &(p, c) in selected {
        let project = &spec.projects[p];
        if project.clusters[c].backend == Backend::Soperator {
            continue;
        }
        if project.effective_region(&spec.region).is_empty() {
            return Err(EngineError::refused(
                Refusal::Demand,
                crate::quota::scope::ScopeError::RegionUnresolved {
                    project: crate::spec::names::py_repr(&project.key()),
                }
                .to_string(),
            ));
        }
    }
    Ok(())
}

/// The desired state of every selected target: mk8s targets from their cluster spec, soperator
/// targets from their envelope (fleet-engine §2.9). A soperator piece fleetbot cannot map to
/// the API refuses the whole run here, before any cloud call.
fn desired_targets(
    spec: &FleetSpec,
    selected: &[(usize, usize)],
    ssh_public_key: &str,
) -> Result<Vec<DesiredTarget>, EngineError> {
    let mut out = Vec::new();
    let mut refused = Vec::new();
    for &(p, c) in selected {
        let (project, cluster) = (&spec.projects[p], &spec.projects[p].clusters[c]);
        match (&cluster.backend, &cluster.soperator) {
            (Backend::Soperator, Some(s)) => {
                match soperator::soperator_target(
                    &spec.name,
                    project,
                    cluster,
                    s,
                    &spec.region,
                    ssh_public_key,
                ) {
                    Ok(target) => out.push(target),
                    Err(why) => refused.extend(
                        why.into_iter()
                            .map(|w| format!("{}/{}: {w}", project.key(), cluster.name)),
                    ),
                }
            }
            _ => out.push(desired::desired_target(
                &spec.name,
                project,
                cluster,
                &spec.region,
                ssh_public_key,
            )),
        }
    }
    if !refused.is_empty() {
        return Err(EngineError::refused(
            Refusal::Soperator,
            format!(
                "soperator pieces fleetbot cannot map to the Nebius API (nothing was changed): {}",
                refused.join("; ")
            ),
        ));
    }
    Ok(out)
}

/// The records of targets the spec no longer declares. Only when the whole spec is selected: a
/// selection says nothing about what lies outside it.
fn undeclared(
    spec: &FleetSpec,
    options: &LifecycleOptions,
    records: &[TargetRecord],
) -> Vec<TargetRecord> {
    if !options.only_projects.is_empty() || !options.only_clusters.is_empty() {
        return Vec::new();
    }
    records
        .iter()
        .filter(|r| {
            let declared = spec.projects.iter().any(|p| {
                p.key() == r.project_key && p.clusters.iter().any(|c| c.name == r.cluster_name)
            });
            !declared
        })
        .cloned()
        .collect()
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
    let selected = select(spec, &options.only_projects, &options.only_clusters, prefix)?;
    let target_records = store.targets(&spec.name).await?;
    let project_records = store.projects(&spec.name).await?;
    require_selected_backends(spec, &selected, &target_records)?;
    require_regions(spec, &selected)?;
    let projects = desired::desired_projects(spec, &selected, prefix);
    let targets = desired_targets(spec, &selected, &options.ssh_public_key)?;
    let project_list: Vec<DesiredProject> = projects.iter().map(|(_, p)| p.clone()).collect();
    let mut observed = live::observe(
        cloud,
        options.reads.as_deref(),
        tenant_id,
        &project_list,
        &targets,
        &target_records,
    )
    .await?;
    let orphans = undeclared(spec, options, &target_records);
    observed.pruned = live::observe_pruned(cloud, &spec.name, &orphans, &project_records).await?;
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
