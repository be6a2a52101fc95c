//! Observation: what exists in the cloud for the desired projects and targets, read once and
//! without mutation, with the problems a read alone can prove (identity, ambiguity).

use std::collections::BTreeMap;

use super::prune::ObservedPrune;
use super::types::{Problem, ProblemKind};
use crate::cloud::domain::*;
use crate::engine::desired::{DesiredFilesystem, DesiredProject, DesiredTarget};

/// What exists for one project, read once.
#[derive(Debug, Clone, Default)]
pub struct ObservedProject {
    pub project: Option<Project>,
    pub subnets: Vec<Subnet>,
    pub networks: Vec<Network>,
    pub clusters: Vec<Cluster>,
    pub filesystems: Vec<Filesystem>,
    pub gpu_clusters: Vec<GpuCluster>,
    pub buckets: Vec<Bucket>,
    /// Node groups by cluster ID.
    pub node_groups: BTreeMap<String, Vec<NodeGroup>>,
    /// Cluster ID → its marketplace releases.
    pub releases: BTreeMap<String, Vec<Release>>,
    /// Existing filesystems named by `existing_filestore`, by ID (`None`: not found).
    pub existing_filesystems: BTreeMap<String, Option<Filesystem>>,
    pub problems: Vec<Problem>,
}

/// Everything observed, by project key.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    pub tenant_id: String,
    pub projects: BTreeMap<String, ObservedProject>,
    /// Recorded targets the spec no longer declares, when the whole spec is selected.
    pub pruned: Vec<ObservedPrune>,
}

/// What differs in a project's immutable identity, naming the values but never its ID.
fn identity_mismatches(
    project: &Project,
    tenant_id: &str,
    region: &str,
    expected_name: &str,
) -> Vec<String> {
    let mut identity = Vec::new();
    if !expected_name.is_empty() && project.name != expected_name {
        identity.push(format!(
            "name {:?} is not {:?}",
            project.name, expected_name
        ));
    }
    if project.tenant_id != tenant_id {
        identity.push("it belongs to another tenant".to_string());
    }
    if !region.is_empty() && project.region != region {
        identity.push(format!(
            "region {:?} does not match {:?}",
            project.region, region
        ));
    }
    identity
}

fn inactive_reason(state: State) -> Option<String> {
    match state {
        State::Ready => None,
        State::Suspended => Some("it is suspended".to_string()),
        State::Deleting => Some("it is being deleted".to_string()),
        other => Some(format!("it is not active ({other:?})")),
    }
}

/// Project identity checks (fleet-engine §6.10.3): at most one problem of each kind.
fn identity_problems(
    project: &Project,
    tenant_id: &str,
    region: &str,
    expected_name: &str,
) -> Vec<Problem> {
    let identity = identity_mismatches(project, tenant_id, region, expected_name);
    let mut problems = Vec::new();
    if !identity.is_empty() {
        problems.push(Problem::new(
            ProblemKind::ProjectIdentity,
            format!(
                "the existing project failed immutable identity verification: {}",
                identity.join("; ")
            ),
        ));
    }
    if let Some(why) = inactive_reason(project.state) {
        problems.push(Problem::new(
            ProblemKind::ProjectInactive,
            format!("the existing project cannot be used: {why}"),
        ));
    }
    problems
}

/// The project a desired project names: by its pinned ID, else by its display name in the
/// tenant's listing.
async fn find_project<C: Cloud>(
    cloud: &C,
    desired: &DesiredProject,
    listing: Option<&[Project]>,
    problems: &mut Vec<Problem>,
) -> CloudResult<Option<Project>> {
    if crate::privacy::is_placeholder(&desired.project_id) && !desired.project_id.is_empty() {
        // A public spec's placeholder, never bound: no cloud has a project by that name, and
        // a real one may refuse the malformed ID as an argument error rather than not-found.
        problems.push(Problem::new(
            ProblemKind::ProjectNotFound,
            "project_id is a placeholder; give the existing project's ID in the runtime values (--runtime-values FILE or FLEETBOT_RUNTIME_VALUES)",
        ));
        return Ok(None);
    }
    if !desired.project_id.is_empty() {
        return match cloud.get_project(&desired.project_id).await {
            Ok(p) => Ok(Some(p)),
            Err(e) if e.is_not_found() => {
                // The project is already named by its key; the ID stays out of the text.
                problems.push(Problem::new(
                    ProblemKind::ProjectNotFound,
                    "the pinned project_id is not a project of the tenant (not found)",
                ));
                Ok(None)
            }
            Err(e) => Err(e),
        };
    }
    let matches: Vec<&Project> = listing
        .into_iter()
        .flatten()
        .filter(|p| p.name == desired.display_name)
        .collect();
    if matches.len() > 1 {
        problems.push(Problem::new(
            ProblemKind::ProjectAmbiguous,
            format!(
                "project name '{}' is ambiguous under the selected tenant; use an explicit project_id",
                desired.display_name
            ),
        ));
    }
    Ok(matches.first().map(|p| (*p).clone()))
}

/// Reads the resources of an existing project, and what its targets name in it.
async fn read_project<C: Cloud>(
    cloud: &C,
    project: &Project,
    desired: &DesiredProject,
    targets: &[DesiredTarget],
    op: &mut ObservedProject,
) -> CloudResult<()> {
    op.subnets = cloud.list_subnets(&project.id).await?;
    op.networks = cloud.list_networks(&project.id).await?;
    op.clusters = cloud.list_clusters(&project.id).await?;
    op.filesystems = cloud.list_filesystems(&project.id).await?;
    op.gpu_clusters = cloud.list_gpu_clusters(&project.id).await?;
    op.buckets = cloud.list_buckets(&project.id).await?;
    for target in targets.iter().filter(|t| t.key.project_key == desired.key) {
        if let Some(cluster) = op.clusters.iter().find(|c| c.name == target.key.cluster) {
            let groups = cloud.list_node_groups(&cluster.id).await?;
            op.node_groups.insert(cluster.id.clone(), groups);
            if cluster.state == State::Ready {
                let releases = cloud.list_releases(&project.id, &cluster.id).await?;
                op.releases.insert(cluster.id.clone(), releases);
            }
        }
        if let Some(DesiredFilesystem::Existing { id }) = &target.filesystem {
            let fs = match cloud.get_filesystem(id).await {
                Ok(fs) => Some(fs),
                Err(e) if e.is_not_found() => None,
                Err(e) => return Err(e),
            };
            op.existing_filesystems.insert(id.clone(), fs);
        }
    }
    Ok(())
}

/// Reads what exists for the desired projects and targets. Reads only.
pub async fn observe<C: Cloud>(
    cloud: &C,
    tenant_id: &str,
    projects: &[DesiredProject],
    targets: &[DesiredTarget],
) -> CloudResult<Observed> {
    let mut observed = Observed {
        tenant_id: tenant_id.to_string(),
        ..Default::default()
    };
    // List the tenant's projects once, and only when some project is found by name.
    let listing = if projects.iter().any(|p| p.project_id.is_empty()) {
        Some(cloud.list_projects(tenant_id).await?)
    } else {
        None
    };
    for desired in projects {
        let mut op = ObservedProject::default();
        let found = find_project(cloud, desired, listing.as_deref(), &mut op.problems).await?;
        if let Some(project) = &found {
            // An explicit project_id is not name-checked: local roles can differ from the provider name.
            let expected_name = if desired.project_id.is_empty() {
                desired.display_name.as_str()
            } else {
                ""
            };
            op.problems.extend(identity_problems(
                project,
                tenant_id,
                &desired.region,
                expected_name,
            ));
            read_project(cloud, project, desired, targets, &mut op).await?;
        }
        op.project = found;
        observed.projects.insert(desired.key.clone(), op);
    }
    Ok(observed)
}
