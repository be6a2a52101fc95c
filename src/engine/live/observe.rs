//! Observation: what exists in the cloud for the desired projects and targets, read once and
//! without mutation, with the problems a read alone can prove (identity, ambiguity).

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use std::collections::{BTreeMap, HashMap};

use super::prune::ObservedPrune;
use super::reads::{ReadCache, Reader};
use super::types::{Problem, ProblemKind};
use crate::cloud::domain::*;
use crate::engine::desired::{DesiredFilesystem, DesiredProject, DesiredTarget};
use crate::store::TargetRecord;

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
    cloud: Reader<'_, C>,
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

/// Reads at once per project and per endpoint: enough to hide the round trips of a fleet of
/// many clusters (tens of milliseconds each against a real cloud), few enough not to crowd
/// the API's rate limits.
const READS_AT_ONCE: usize = 8;

/// Whether a target's live plan needs its cluster's marketplace releases: when it wants a
/// release, or the inventory records one (to be removed). A target of manifests or of no
/// add-on at all costs no release read.
fn needs_releases(target: &DesiredTarget, record: Option<&TargetRecord>) -> bool {
    target
        .addons
        .iter()
        .any(|a| matches!(a.install, crate::engine::addons::Install::Release { .. }))
        || record.is_some_and(|r| r.addons.iter().any(|a| !a.release_id.is_empty()))
}

/// Reads the resources of an existing project, and what its targets name in it: one listing
/// per project and resource kind; node groups (whose parent is the cluster in the Nebius API)
/// and releases (listed by cluster) per cluster that has them, several at once.
async fn read_project<C: Cloud>(
    cloud: Reader<'_, C>,
    project: &Project,
    ours: &[&DesiredTarget],
    recorded: &[&TargetRecord],
    op: &mut ObservedProject,
) -> CloudResult<()> {
    let id = project.id.as_str();
    // Filesystems and GPU clusters are per target: a project none of whose targets wants one,
    // or ever recorded one, has none of fleetbot's to find (one call fewer each, per project).
    let filesystems_wanted = ours
        .iter()
        .any(|t| matches!(t.filesystem, Some(DesiredFilesystem::Create { .. })))
        || recorded.iter().any(|r| !r.filesystem_id.is_empty());
    let gpu_clusters_wanted = ours.iter().any(|t| t.gpu_cluster.is_some())
        || recorded.iter().any(|r| !r.gpu_cluster_id.is_empty());
    let (subnets, networks, clusters, filesystems, gpu_clusters, buckets) = futures_util::try_join!(
        cloud.list_subnets(id),
        cloud.list_networks(id),
        cloud.list_clusters(id),
        async {
            if filesystems_wanted {
                cloud.list_filesystems(id).await
            } else {
                Ok(Vec::new())
            }
        },
        async {
            if gpu_clusters_wanted {
                cloud.list_gpu_clusters(id).await
            } else {
                Ok(Vec::new())
            }
        },
        cloud.list_buckets(id),
    )?;
    (op.subnets, op.networks, op.clusters) = (subnets, networks, clusters);
    (op.filesystems, op.gpu_clusters, op.buckets) = (filesystems, gpu_clusters, buckets);
    let mut wanted = Vec::new();
    for target in ours {
        let Some(cluster) = op.clusters.iter().find(|c| c.name == target.key.cluster) else {
            continue;
        };
        let record = recorded
            .iter()
            .find(|r| r.cluster_name == target.key.cluster)
            .copied();
        let releases = cluster.state == State::Ready && needs_releases(target, record);
        wanted.push((cluster.id.clone(), releases));
    }
    // Each read is made when it starts (see `observe`).
    let mut wanted = wanted.into_iter();
    let mut running = FuturesUnordered::new();
    for (cluster_id, releases) in wanted.by_ref().take(READS_AT_ONCE) {
        running.push(read_cluster(cloud, id, cluster_id, releases));
    }
    while let Some(result) = running.next().await {
        if let Some((cluster_id, releases)) = wanted.next() {
            running.push(read_cluster(cloud, id, cluster_id, releases));
        }
        let (cluster_id, groups, releases) = result?;
        if let Some(releases) = releases {
            op.releases.insert(cluster_id.clone(), releases);
        }
        op.node_groups.insert(cluster_id, groups);
    }
    for target in ours {
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

/// One cluster's node groups, and its releases when `releases`.
async fn read_cluster<C: Cloud>(
    cloud: Reader<'_, C>,
    project_id: &str,
    cluster_id: String,
    releases: bool,
) -> CloudResult<(String, Vec<NodeGroup>, Option<Vec<Release>>)> {
    let groups = cloud.list_node_groups(&cluster_id).await?;
    let releases = if releases {
        Some(cloud.list_releases(project_id, &cluster_id).await?)
    } else {
        None
    };
    Ok((cluster_id, groups, releases))
}

/// The desired targets and the inventory's records of each project, by project key: found
/// once for the fleet rather than by scanning every target and record for every project (up
/// to a million comparisons at 1,000 clusters).
#[derive(Default)]
struct ByProject<'a> {
    targets: HashMap<&'a str, Vec<&'a DesiredTarget>>,
    records: HashMap<&'a str, Vec<&'a TargetRecord>>,
}

impl<'a> ByProject<'a> {
    fn new(targets: &'a [DesiredTarget], records: &'a [TargetRecord]) -> Self {
        let mut by = ByProject::default();
        for t in targets {
            by.targets.entry(&t.key.project_key).or_default().push(t);
        }
        for r in records {
            by.records.entry(&r.project_key).or_default().push(r);
        }
        by
    }

    fn targets(&self, project_key: &str) -> &[&'a DesiredTarget] {
        self.targets.get(project_key).map_or(&[], Vec::as_slice)
    }

    fn records(&self, project_key: &str) -> &[&'a TargetRecord] {
        self.records.get(project_key).map_or(&[], Vec::as_slice)
    }
}

/// One desired project: found, checked and read.
async fn observe_project<C: Cloud>(
    cloud: Reader<'_, C>,
    tenant_id: &str,
    desired: &DesiredProject,
    listing: Option<&[Project]>,
    by_project: &ByProject<'_>,
) -> CloudResult<(String, ObservedProject)> {
    let mut op = ObservedProject::default();
    let found = find_project(cloud, desired, listing, &mut op.problems).await?;
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
        let (ours, recorded) = (
            by_project.targets(&desired.key),
            by_project.records(&desired.key),
        );
        read_project(cloud, project, ours, recorded, &mut op).await?;
    }
    op.project = found;
    Ok((desired.key.clone(), op))
}

/// Reads what exists for the desired projects and targets (`records`: the inventory's
/// targets of the fleet, which say where an add-on release may be). Reads only; a listing
/// `reads` already holds is not read again (`None`: nothing else shares these reads, so none
/// is kept).
pub async fn observe<C: Cloud>(
    cloud: &C,
    reads: Option<&ReadCache>,
    tenant_id: &str,
    projects: &[DesiredProject],
    targets: &[DesiredTarget],
    records: &[TargetRecord],
) -> CloudResult<Observed> {
    let cloud = Reader {
        cloud,
        cache: reads,
    };
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
    let listing = listing.as_deref();
    let by_project = ByProject::new(targets, records);
    // Each project's read is made when it starts, not all up front: an unstarted future is
    // as large as its largest state (every listing it awaits, inline), and all of them made
    // first were megabytes written before the first call (5 MB of a 1,000-cluster live plan's
    // 85 MB peak). No closure makes them: a stream over one would tie the futures to one borrow
    // of it, which a boxed `Send` future of the App cannot hold.
    let mut pending = projects.iter();
    let mut running = FuturesUnordered::new();
    for desired in pending.by_ref().take(PROJECTS_AT_ONCE) {
        running.push(observe_project(
            cloud,
            tenant_id,
            desired,
            listing,
            &by_project,
        ));
    }
    while let Some(result) = running.next().await {
        if let Some(desired) = pending.next() {
            running.push(observe_project(
                cloud,
                tenant_id,
                desired,
                listing,
                &by_project,
            ));
        }
        let (key, op) = result?;
        observed.projects.insert(key, op);
    }
    Ok(observed)
}

/// Projects read at once; each reads up to [`READS_AT_ONCE`] of its clusters at once.
const PROJECTS_AT_ONCE: usize = 4;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_project_gets_its_own_targets_in_order_and_its_records_of_same_named_clusters() {
        let spec = crate::spec::spec_from_str(
            "apiVersion: npa.fleet/v0.0.1\nname: f\nregion: us-central1\ndefaults:\n  cpu_nodes: {count: 1, platform: cpu-d3, preset: 16vcpu-64gb}\nprojects:\n  - name: a\n    clusters: [{name: c1}, {name: c0}]\n  - name: b\n    clusters: [{name: c0}]\n",
            "fleet.yaml",
        )
        .unwrap();
        let targets: Vec<DesiredTarget> = spec
            .projects
            .iter()
            .flat_map(|p| {
                p.clusters
                    .iter()
                    .map(|c| crate::engine::desired::desired_target("f", p, c, &spec.region, ""))
            })
            .collect();
        let record = |project: &str, cluster: &str, id: &str| TargetRecord {
            project_key: project.into(),
            cluster_name: cluster.into(),
            cluster_id: id.into(),
            ..TargetRecord::default()
        };
        // b's record first, and a record of a cluster the spec no longer declares.
        let records = vec![
            record("b", "c0", "b-c0"),
            record("a", "gone", "a-gone"),
            record("a", "c0", "a-c0"),
        ];
        let by = ByProject::new(&targets, &records);

        let names = |key: &str| -> Vec<String> {
            by.targets(key)
                .iter()
                .map(|t| format!("{}/{}", t.key.project_key, t.key.cluster))
                .collect()
        };
        assert_eq!(names("a"), ["a/c1", "a/c0"]);
        assert_eq!(names("b"), ["b/c0"]);
        assert!(names("c").is_empty());
        let ids = |key: &str| -> Vec<&str> {
            by.records(key)
                .iter()
                .map(|r| r.cluster_id.as_str())
                .collect()
        };
        assert_eq!(ids("a"), ["a-gone", "a-c0"]);
        assert_eq!(ids("b"), ["b-c0"]);
        assert!(ids("c").is_empty());
    }
}
