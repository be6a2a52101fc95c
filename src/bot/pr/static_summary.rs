//! The static plan of a spec compared with its base: which projects, buckets and clusters the
//! change creates, changes or destroys, named by public labels only.

use std::collections::BTreeMap;

use super::cluster_fields::{changed_fields, cluster_facts};
use crate::bot::report::{PlanItem, PlanSummary};
use crate::fleet::static_plan::FleetPlan;
use crate::fleet::static_plan::{ClusterPlan, ObjectStoragePlan, ProjectPlan};

/// How a destroy row says a cluster dropped from a spec goes: a merge deletes nothing, a deploy
/// deletes it only with `--prune`, which the bot runs only on approval.
pub(super) const REMOVED_CLUSTER: &str =
    "removed from the spec; deleted only with /approve-destroy";

/// A static plan keyed for comparison: projects and buckets by display label, clusters by
/// `label/cluster`.
#[derive(Default)]
pub(super) struct PlanIndex<'a> {
    /// Whether deploying creates the project.
    projects: BTreeMap<String, bool>,
    /// The bucket's shape (`class, N GiB`).
    pub(super) buckets: BTreeMap<String, String>,
    pub(super) clusters: BTreeMap<String, &'a ClusterPlan>,
}

pub(super) fn project_label(index: usize, project: &ProjectPlan) -> String {
    // Project IDs are private by rule: a project given by ID alone (whose display name is
    // then its ID) shows by position only.
    match &project.display_name {
        Some(name) if project.project_id.as_ref() != Some(name) => name.clone(),
        _ => format!("existing project #{}", index + 1),
    }
}

pub(super) fn index_plan(p: &FleetPlan) -> PlanIndex<'_> {
    let mut idx = PlanIndex::default();
    for (i, project) in p.projects.iter().enumerate() {
        let label = project_label(i, project);
        idx.projects.insert(label.clone(), project.will_create);
        if let ObjectStoragePlan::Enabled {
            storage_class,
            size_gibibytes,
            ..
        } = &project.object_storage
        {
            idx.buckets.insert(
                label.clone(),
                format!("{storage_class}, {size_gibibytes} GiB"),
            );
        }
        for cluster in &project.clusters {
            let name = match cluster {
                ClusterPlan::Mk8s(c) => &c.name,
                ClusterPlan::Soperator(c) => &c.name,
            };
            idx.clusters.insert(format!("{label}/{name}"), cluster);
        }
    }
    idx
}

/// The head plan against the base plan; either may be missing (an added or removed spec).
pub(super) fn summarize(head: Option<&FleetPlan>, base: Option<&FleetPlan>) -> PlanSummary {
    let new = head.map(index_plan).unwrap_or_default();
    let old = base.map(index_plan).unwrap_or_default();
    let mut summary = counts(head.or(base));
    // Rows go in this order: created projects, buckets, clusters; destroyed clusters, buckets.
    created_projects(&mut summary, &new, &old);
    kept_buckets(&mut summary, &new, &old);
    clusters(&mut summary, &new, &old);
    removed_buckets(&mut summary, &new, &old);
    summary
}

/// A summary with the shown plan's counts and no rows yet.
fn counts(shown: Option<&FleetPlan>) -> PlanSummary {
    PlanSummary {
        region: shown.map(|p| p.region.clone()).unwrap_or_default(),
        projects: shown.map_or(0, |p| p.project_count),
        clusters: shown.map_or(0, |p| p.cluster_count),
        mk8s: shown.map_or(0, |p| p.backend_counts.mk8s),
        soperator: shown.map_or(0, |p| p.backend_counts.soperator),
        create: Vec::new(),
        change: Vec::new(),
        destroy: Vec::new(),
        unchanged: 0,
        live_cloud: None,
        unproven: 0,
        needs_approval: Vec::new(),
        problems: Vec::new(),
    }
}

fn item(kind: &'static str, name: &str, details: Vec<String>) -> PlanItem {
    PlanItem {
        kind,
        name: name.to_string(),
        details,
    }
}

fn created_projects(summary: &mut PlanSummary, new: &PlanIndex<'_>, old: &PlanIndex<'_>) {
    for (label, will_create) in &new.projects {
        if !old.projects.contains_key(label) && *will_create {
            let details = vec!["created on deploy if missing".into()];
            summary.create.push(item("project", label, details));
        }
    }
}

/// Buckets of the head plan: new, or of another shape.
fn kept_buckets(summary: &mut PlanSummary, new: &PlanIndex<'_>, old: &PlanIndex<'_>) {
    for (label, shape) in &new.buckets {
        match old.buckets.get(label) {
            None => summary
                .create
                .push(item("bucket", label, vec![shape.clone()])),
            Some(before) if before != shape => {
                let details = vec![format!("{before} → {shape}")];
                summary.change.push(item("bucket", label, details));
            }
            Some(_) => {}
        }
    }
}

fn clusters(summary: &mut PlanSummary, new: &PlanIndex<'_>, old: &PlanIndex<'_>) {
    for (key, &plan) in &new.clusters {
        match old.clusters.get(key) {
            None => summary
                .create
                .push(item("cluster", key, cluster_facts(plan))),
            Some(&before) if before != plan => {
                summary
                    .change
                    .push(item("cluster", key, changed_fields(before, plan)))
            }
            Some(_) => summary.unchanged += 1,
        }
    }
    for (key, &plan) in &old.clusters {
        if !new.clusters.contains_key(key) {
            let mut details = vec![REMOVED_CLUSTER.to_string()];
            details.extend(cluster_facts(plan));
            summary.destroy.push(item("cluster", key, details));
        }
    }
}

fn removed_buckets(summary: &mut PlanSummary, new: &PlanIndex<'_>, old: &PlanIndex<'_>) {
    for (label, shape) in &old.buckets {
        if !new.buckets.contains_key(label) {
            let details = vec![format!("{shape} (retained on destroy per spec)")];
            summary.destroy.push(item("bucket", label, details));
        }
    }
}
