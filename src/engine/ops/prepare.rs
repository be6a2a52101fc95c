//! What every lifecycle run reads before acting: the selection, the inventory, the desired
//! state and a live plan (with the recorded targets the spec no longer declares, when the whole
//! spec is selected), after the checks that need no cloud call. Nothing here mutates.

use super::error::EngineError;
use super::options::{LifecycleOptions, select};
use super::records::require_selected_backends;
use crate::cloud::domain::Cloud;
use crate::engine::desired::{self, DesiredProject, DesiredTarget};
use crate::engine::live::{self, LivePlan, Observed};
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

/// The API engine applies mk8s only: a selected soperator target refuses the whole run.
fn refuse_soperator(spec: &FleetSpec, selected: &[(usize, usize)]) -> Result<(), EngineError> {
    let soperator: Vec<String> = selected
        .iter()
        .map(|&(p, c)| (&spec.projects[p], &spec.projects[p].clusters[c]))
        .filter(|(_, c)| c.backend == Backend::Soperator)
        .map(|(p, c)| format!("{}/{}", p.key(), c.name))
        .collect();
    if soperator.is_empty() {
        return Ok(());
    }
    Err(EngineError::new(format!(
        "soperator targets are not supported by fleetbot's API engine yet: {}; select mk8s targets with --only-projects/--only-clusters",
        soperator.join(", ")
    )))
}

fn desired_targets(
    spec: &FleetSpec,
    selected: &[(usize, usize)],
    ssh_public_key: &str,
) -> Vec<DesiredTarget> {
    selected
        .iter()
        .map(|&(p, c)| {
            desired::desired_target(
                &spec.name,
                &spec.projects[p],
                &spec.projects[p].clusters[c],
                &spec.region,
                ssh_public_key,
            )
        })
        .collect()
}

/// The records of targets the spec no longer declares. Only when the whole spec is selected: a
/// selection says nothing about what lies outside it. Only mk8s records: this engine tears
/// down nothing else.
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
            let mk8s = r.backend.is_empty() || r.backend == Backend::Mk8s.as_str();
            !declared && mk8s
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
    let selected = select(spec, &options.only_projects, &options.only_clusters, prefix);
    let target_records = store.targets(&spec.name).await?;
    let project_records = store.projects(&spec.name).await?;
    refuse_soperator(spec, &selected)?;
    require_selected_backends(spec, &selected, &target_records)?;
    let projects = desired::desired_projects(spec, &selected, prefix);
    let targets = desired_targets(spec, &selected, &options.ssh_public_key);
    let project_list: Vec<DesiredProject> = projects.iter().map(|(_, p)| p.clone()).collect();
    let mut observed = live::observe(cloud, tenant_id, &project_list, &targets).await?;
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
