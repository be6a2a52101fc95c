//! Which targets preflight charges, and where: selectors (§2.11, §8.1), proven-unchanged targets
//! (§4.8), new projects and new buckets, grouped by region (§4.1 Phase 0).
//!
//! Nothing here reads the cloud. What is already deployed comes in as [`ProvenState`], which the
//! engine fills from inventory plus live cloud state; anything it does not prove is charged in
//! full, so missing or stale knowledge can only overstate demand.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::demand::{Demand, required_quotas};
use super::reservations::{ReservationRequirement, required_reservations};
use super::target::TargetKey;
use crate::spec::{Backend, ClusterSpec, FleetSpec, ObjectStorageSpec, ProjectSpec};

/// `--only-projects` / `--only-clusters`: empty means "no filter".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// Project keys or display names.
    pub projects: Vec<String>,
    /// Cluster names, matched in every selected project.
    pub clusters: Vec<String>,
}

impl Selection {
    /// A project matches by its key or its display name.
    pub fn project_in_scope(&self, project: &ProjectSpec, prefix: &str) -> bool {
        self.projects.is_empty()
            || self.projects.contains(&project.key())
            || self.projects.contains(&project.display_name(prefix))
    }

    pub fn cluster_in_scope(&self, cluster: &ClusterSpec) -> bool {
        self.clusters.is_empty() || self.clusters.contains(&cluster.name)
    }
}

/// The checks that together prove a target adds no capacity (fleet-engine §4.8, restated for an
/// engine that calls the API instead of Terraform). Each field is set only by the engine, from
/// the evidence named; a target counts zero only when every field is true.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UnchangedEvidence {
    /// Inventory says fleetbot deployed it, with IDs, tenant, region and name equal to now.
    pub inventory_deployed: bool,
    /// The saved desired state equals a fresh expansion of the current spec.
    pub desired_state_matches: bool,
    /// The project exists with that ID, under this tenant, in this region, with this name.
    pub project_verified: bool,
    /// The cluster exists with that ID under that project, with this name, and is running.
    pub cluster_running: bool,
    /// Exactly one running node group per pool, with count, platform, preset, preemptibility and
    /// reservation binding equal to the spec.
    pub node_groups_match: bool,
}

impl UnchangedEvidence {
    /// Every check passed.
    pub const PROVEN: UnchangedEvidence = UnchangedEvidence {
        inventory_deployed: true,
        desired_state_matches: true,
        project_verified: true,
        cluster_running: true,
        node_groups_match: true,
    };

    pub fn is_full_proof(&self) -> bool {
        *self == UnchangedEvidence::PROVEN
    }
}

/// What the caller has proven about existing cloud state. The default proves nothing, so every
/// selected target, every named project and every bucket is charged in full.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProvenState {
    /// Evidence per target; partial evidence is kept only to be reported, never to discount.
    pub unchanged: BTreeMap<TargetKey, UnchangedEvidence>,
    /// Keys of named projects proven to exist (identity checked). Projects given by
    /// `project_id` are never created, so they need no entry.
    pub existing_projects: BTreeSet<String>,
    /// Keys of projects whose declared bucket was read back with exactly the declared shape.
    pub existing_buckets: BTreeSet<String>,
}

impl ProvenState {
    /// Whether `target` is fully proven unchanged.
    pub fn is_unchanged(&self, target: &TargetKey) -> bool {
        self.unchanged
            .get(target)
            .is_some_and(UnchangedEvidence::is_full_proof)
    }
}

/// A target preflight does not charge, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkippedTarget {
    pub target: TargetKey,
    pub backend: &'static str,
    pub reason: &'static str,
}

/// Why soperator targets are not charged here.
pub const SOPERATOR_SKIP_REASON: &str = "soperator targets run their own reservation preflight in the soperator flow; the mk8s quota preflight does not count them";

/// The demand of one region.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RegionDemand {
    pub region: String,
    /// The charged (not proven unchanged) mk8s targets, in spec order.
    pub targets: Vec<TargetKey>,
    pub new_projects: u128,
    /// Keys of projects whose bucket declaration is charged.
    pub new_buckets: Vec<String>,
    /// What the region needs from tenant quota.
    pub quotas: Demand,
    /// What it needs from capacity blocks; empty when [`RegionDemand::reservation_conflict`] is set.
    pub reservations: Vec<ReservationRequirement>,
    /// A block ID that backs GPU pools of different platform or fabric.
    pub reservation_conflict: Option<String>,
}

/// The demand of a whole selection, region by region (sorted).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FleetDemand {
    pub name: String,
    pub regions: Vec<RegionDemand>,
    /// Targets that add nothing because they are proven unchanged.
    pub unchanged: Vec<TargetKey>,
    pub skipped: Vec<SkippedTarget>,
}

/// Why a demand could not be worked out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScopeError {
    #[error(
        "region could not be resolved for project {project}: set 'region' in the fleet spec or on the project"
    )]
    RegionUnresolved { project: String },
    #[error(transparent)]
    Select(#[from] crate::spec::select::SelectError),
}

/// Options that change what is charged.
#[derive(Debug, Clone, Default)]
pub struct ScopeOptions {
    pub selection: Selection,
    /// `--project-prefix`; `None` or empty keeps the spec's prefix (display names for selectors).
    pub project_prefix: Option<String>,
}

/// Works out what the selected part of `spec` needs, region by region, following Phase 0 of the
/// reference deploy: a project counts only when it has a selected mk8s target; a proven
/// unchanged target adds nothing; a named project not proven to exist is new; a bucket not
/// proven to exist is new.
pub fn fleet_demand(
    spec: &FleetSpec,
    options: &ScopeOptions,
    proven: &ProvenState,
) -> Result<FleetDemand, ScopeError> {
    let prefix = options
        .project_prefix
        .as_deref()
        .filter(|p| !p.is_empty())
        .unwrap_or(&spec.project_prefix);
    crate::spec::select::select(
        spec,
        &options.selection.projects,
        &options.selection.clusters,
        prefix,
    )?;
    let mut out = FleetDemand {
        name: spec.name.clone(),
        ..FleetDemand::default()
    };
    let mut clusters: BTreeMap<String, Vec<(TargetKey, &ClusterSpec)>> = BTreeMap::new();
    let mut new_projects: BTreeMap<String, u128> = BTreeMap::new();
    let mut buckets: BTreeMap<String, Vec<&ProjectSpec>> = BTreeMap::new();

    for project in &spec.projects {
        if !options.selection.project_in_scope(project, prefix) {
            continue;
        }
        let key = project.key();
        let mut has_target = false;
        // Full proof of an unchanged target includes the project's identity check.
        let mut project_proven = proven.existing_projects.contains(&key);
        for cluster in &project.clusters {
            if !options.selection.cluster_in_scope(cluster) {
                continue;
            }
            let target = TargetKey::new(&key, &cluster.name);
            if cluster.backend == Backend::Soperator {
                out.skipped.push(SkippedTarget {
                    target,
                    backend: Backend::Soperator.as_str(),
                    reason: SOPERATOR_SKIP_REASON,
                });
                continue;
            }
            has_target = true;
            if proven.is_unchanged(&target) {
                project_proven = true;
                out.unchanged.push(target);
                continue;
            }
            let region = region_of(project, spec)?;
            clusters
                .entry(region.to_string())
                .or_default()
                .push((target, cluster));
        }
        if !has_target {
            continue;
        }
        let region = region_of(project, spec)?;
        if project.cloud_project_id().is_empty() && !project_proven {
            *new_projects.entry(region.to_string()).or_default() += 1;
        }
        let declared = project.object_storage.as_ref().is_some_and(|s| s.enabled);
        if declared && !proven.existing_buckets.contains(&key) {
            buckets.entry(region.to_string()).or_default().push(project);
        }
    }

    // Only regions with a charged cluster or a charged bucket are checked, as in the reference;
    // a new project always has a charged cluster, so its topology is never dropped.
    let regions: BTreeSet<&String> = clusters.keys().chain(buckets.keys()).collect();
    for region in regions {
        let targets = clusters.get(region).map(Vec::as_slice).unwrap_or_default();
        let projects = buckets.get(region).map(Vec::as_slice).unwrap_or_default();
        out.regions.push(RegionDemand::new(
            region,
            targets.iter().map(|(t, c)| (t.clone(), *c)),
            new_projects.get(region).copied().unwrap_or(0),
            projects
                .iter()
                .filter_map(|p| p.object_storage.as_ref().map(|s| (p.key(), s))),
        ));
    }
    Ok(out)
}

fn region_of<'a>(project: &'a ProjectSpec, spec: &'a FleetSpec) -> Result<&'a str, ScopeError> {
    let region = project.effective_region(&spec.region);
    if region.is_empty() {
        return Err(ScopeError::RegionUnresolved {
            project: crate::spec::names::py_repr(&project.key()),
        });
    }
    Ok(region)
}

impl RegionDemand {
    /// The demand of one region: charged clusters, the number of projects that will be created
    /// and the bucket declarations (by project key) that will be created.
    pub fn new<'a>(
        region: &str,
        clusters: impl IntoIterator<Item = (TargetKey, &'a ClusterSpec)>,
        new_projects: u128,
        buckets: impl IntoIterator<Item = (String, &'a ObjectStorageSpec)>,
    ) -> RegionDemand {
        let clusters: Vec<(TargetKey, &ClusterSpec)> = clusters.into_iter().collect();
        // A disabled declaration creates nothing.
        let buckets: Vec<(String, &ObjectStorageSpec)> =
            buckets.into_iter().filter(|(_, s)| s.enabled).collect();
        let quotas = required_quotas(
            clusters.iter().map(|(_, c)| *c),
            new_projects,
            buckets.iter().map(|(_, s)| *s),
        );
        let (reservations, reservation_conflict) =
            match required_reservations(clusters.iter().map(|(t, c)| (t, *c)), region) {
                Ok(requirements) => (requirements, None),
                Err(conflict) => (Vec::new(), Some(conflict.block_id)),
            };
        RegionDemand {
            region: region.to_string(),
            targets: clusters.into_iter().map(|(t, _)| t).collect(),
            new_projects,
            new_buckets: buckets.into_iter().map(|(key, _)| key).collect(),
            quotas,
            reservations,
            reservation_conflict,
        }
    }
}

impl FleetDemand {
    /// The demand of every region added together.
    pub fn total(&self) -> Demand {
        let mut total = Demand::new();
        for region in &self.regions {
            total.merge(&region.quotas);
        }
        total
    }

    /// Charged targets across regions.
    pub fn target_count(&self) -> usize {
        self.regions.iter().map(|r| r.targets.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_evidence_is_not_proof() {
        let mut proven = ProvenState::default();
        let target = TargetKey::new("a", "c");
        let partial = UnchangedEvidence {
            node_groups_match: false,
            ..UnchangedEvidence::PROVEN
        };
        proven.unchanged.insert(target.clone(), partial);
        assert!(!proven.is_unchanged(&target));
        proven
            .unchanged
            .insert(target.clone(), UnchangedEvidence::PROVEN);
        assert!(proven.is_unchanged(&target));
        assert!(!proven.is_unchanged(&TargetKey::new("a", "other")));
    }
}
