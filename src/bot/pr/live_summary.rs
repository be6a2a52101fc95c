//! The live plan laid over the static summary: for what the live plan covers, the rows say
//! what the cloud actually needs, and its problems are recorded by kind.
//!
//! Names are the spec's public labels: never a project ID, a bucket name or a resource ID from
//! the cloud.

use std::collections::BTreeSet;

use super::cluster_fields::cluster_facts;
use super::scrub_tenant;
use super::static_summary::{PlanIndex, REMOVED_CLUSTER, index_plan, project_label};
use crate::bot::report::{LiveProblem, LiveProblemKind, PlanItem, PlanSummary};
use crate::fleet::guard::{PublicNames, deletion_line};
use crate::fleet::live::{Action, ProjectPlan, ResourceAction, TargetPlan, target_key_of};
use crate::fleet::live::{LiveSpec, PlannedFleet};
use crate::fleet::static_plan::ClusterPlan;
use crate::fleet::static_plan::FleetPlan;
use crate::spec::FleetSpec;

/// Replaces the static rows of what the live plan covers with what the cloud actually needs,
/// and records the live plan's problems. What a merge would delete is decided by the engine
/// alone: a cluster dropped from the spec is a destroy row only when the live plan prunes it.
pub(super) fn apply_live(
    summary: &mut PlanSummary,
    head: &FleetPlan,
    spec: &FleetSpec,
    base: Option<(&FleetSpec, &FleetPlan)>,
    live: &LiveSpec,
) {
    let planned = match &live.plan {
        Ok(Some(planned)) => planned,
        // Nothing the API engine plans (soperator only): the static plan stands.
        Ok(None) => return,
        Err(e) => {
            let text = format!("the live plan could not be made: {e}");
            push_problem(summary, e.kind.into(), &text, &live.tenant_id);
            return;
        }
    };
    summary.live_cloud = Some(live.cloud.clone());
    let view = LiveView::new(head, spec, planned);
    view.drop_covered_rows(summary);
    drop_static_removals(summary, base);
    for (project, &index) in planned.plan.projects.iter().zip(&planned.project_index) {
        view.add_project(summary, project, index, &live.tenant_id);
    }
    // Declared targets first, in selection order; then the ones the plan prunes.
    let declared = planned.plan.targets.iter().filter(|t| !t.prune);
    for (target, index) in declared.zip(&planned.target_index) {
        view.add_target(summary, target, index, &live.tenant_id);
    }
    for target in planned.plan.pruned() {
        view.add_pruned(summary, target, base, &live.tenant_id);
    }
    let mut names = PublicNames::with_base(spec, base.map(|(s, _)| s));
    summary.needs_approval = planned
        .plan
        .destructive()
        .iter()
        .map(|d| deletion_line(d, &mut names))
        .collect();
}

/// The static comparison's destroy rows that the live plan decides instead: removed mk8s
/// clusters (pruned by the engine, or never deployed) and removed buckets (never deleted).
/// Removed soperator clusters stay: the live plan does not cover them.
fn drop_static_removals(summary: &mut PlanSummary, base: Option<(&FleetSpec, &FleetPlan)>) {
    let old = base.map(|(_, plan)| index_plan(plan)).unwrap_or_default();
    summary.destroy.retain(|item| match item.kind {
        "cluster" => matches!(
            old.clusters.get(&item.name),
            Some(ClusterPlan::Soperator(_))
        ),
        "bucket" => false,
        _ => true,
    });
}

/// The public label of a project key: the head spec's, else the base spec's, else none (a key
/// can be a slug of a private project ID, so it is never shown itself).
fn label_of_key(
    key: &str,
    head: (&FleetSpec, &[String]),
    base: Option<(&FleetSpec, &FleetPlan)>,
) -> String {
    let (spec, labels) = head;
    if let Some(i) = spec.projects.iter().position(|p| p.key() == key) {
        return labels.get(i).cloned().unwrap_or_default();
    }
    base.and_then(|(spec, plan)| {
        let i = spec.projects.iter().position(|p| p.key() == key)?;
        Some(project_label(i, plan.projects.get(i)?))
    })
    .unwrap_or_else(|| "(a project no longer in the spec)".to_string())
}

/// The head plan's labels and facts, and which of its rows the live plan covers.
struct LiveView<'a> {
    labels: Vec<String>,
    facts: PlanIndex<'a>,
    spec: &'a FleetSpec,
    covered_projects: BTreeSet<String>,
    covered_targets: BTreeSet<String>,
}

impl<'a> LiveView<'a> {
    fn new(head: &'a FleetPlan, spec: &'a FleetSpec, planned: &PlannedFleet) -> Self {
        let labels: Vec<String> = head
            .projects
            .iter()
            .enumerate()
            .map(|(i, p)| project_label(i, p))
            .collect();
        let covered_projects = planned
            .project_index
            .iter()
            .filter_map(|&i| labels.get(i).cloned())
            .collect();
        let mut view = LiveView {
            labels,
            facts: index_plan(head),
            spec,
            covered_projects,
            covered_targets: BTreeSet::new(),
        };
        view.covered_targets = planned
            .target_index
            .iter()
            .map(|t| view.target_name(t))
            .collect();
        view
    }

    fn label(&self, project: usize) -> &str {
        self.labels.get(project).map_or("?", String::as_str)
    }

    /// `label/cluster` of a (project, cluster) position in the spec.
    fn target_name(&self, &(p, c): &(usize, usize)) -> String {
        format!(
            "{}/{}",
            self.label(p),
            self.spec.projects[p].clusters[c].name
        )
    }

    fn covers(&self, item: &PlanItem) -> bool {
        match item.kind {
            "cluster" => self.covered_targets.contains(&item.name),
            _ => self.covered_projects.contains(&item.name),
        }
    }

    /// Removes the static rows the live plan replaces. Covered targets the static comparison
    /// did not list were counted as unchanged there, and the live plan counts them again.
    fn drop_covered_rows(&self, summary: &mut PlanSummary) {
        let listed = summary
            .create
            .iter()
            .chain(&summary.change)
            .filter(|i| i.kind == "cluster" && self.covers(i))
            .count();
        summary.unchanged = summary
            .unchanged
            .saturating_sub(self.covered_targets.len().saturating_sub(listed));
        summary.create.retain(|i| !self.covers(i));
        summary.change.retain(|i| !self.covers(i));
    }

    fn add_project(
        &self,
        summary: &mut PlanSummary,
        project: &ProjectPlan,
        index: usize,
        tenant_id: &str,
    ) {
        let label = self.labels.get(index).cloned().unwrap_or_default();
        for a in &project.actions {
            self.add_project_action(summary, a, &label);
        }
        for problem in &project.problems {
            let text = format!("project {label}: {problem}");
            push_problem(summary, problem.kind.into(), &text, tenant_id);
        }
    }

    fn add_project_action(&self, summary: &mut PlanSummary, a: &ResourceAction, label: &str) {
        let item = |details: Vec<String>| PlanItem {
            kind: a.resource,
            name: label.to_string(),
            details,
        };
        match (a.resource, a.action) {
            ("project", Action::Create) => {
                summary.create.push(item(vec!["created on deploy".into()]))
            }
            ("bucket", Action::Create) => {
                let shape = self.facts.buckets.get(label).cloned();
                summary.create.push(item(shape.into_iter().collect()))
            }
            ("network" | "subnet", Action::Create) => summary
                .create
                .push(item(vec!["for the project's clusters".into()])),
            (_, Action::Update | Action::Replace) => summary.change.push(item(change_details(a))),
            (_, Action::Delete) => summary.destroy.push(item(change_details(a))),
            _ => {}
        }
    }

    fn add_target(
        &self,
        summary: &mut PlanSummary,
        target: &TargetPlan,
        index: &(usize, usize),
        tenant_id: &str,
    ) {
        let name = self.target_name(index);
        let creates_cluster = target
            .actions
            .iter()
            .any(|a| a.resource == "cluster" && a.action == Action::Create);
        let changes = target_changes(target);
        if creates_cluster {
            let facts = self.facts.clusters.get(&name).map(|c| cluster_facts(c));
            summary.create.push(PlanItem {
                kind: "cluster",
                name: name.clone(),
                details: facts.unwrap_or_default(),
            });
        } else if !changes.is_empty() {
            summary.change.push(PlanItem {
                kind: "cluster",
                name: name.clone(),
                details: changes,
            });
        } else if target.problems.is_empty() {
            summary.unchanged += 1;
            if !target.unchanged {
                summary.unproven += 1;
            }
        }
        for problem in &target.problems {
            let text = format!("{name}: {problem}");
            push_problem(summary, problem.kind.into(), &text, tenant_id);
        }
    }
}

impl LiveView<'_> {
    /// A target the spec no longer declares: a destroy row when anything of it is left to
    /// delete, and its problems.
    fn add_pruned(
        &self,
        summary: &mut PlanSummary,
        target: &TargetPlan,
        base: Option<(&FleetSpec, &FleetPlan)>,
        tenant_id: &str,
    ) {
        let key = target_key_of(target);
        let label = label_of_key(&key.project_key, (self.spec, &self.labels), base);
        let name = format!("{label}/{}", key.cluster);
        let deleted: Vec<String> = target
            .actions
            .iter()
            .filter(|a| a.action == Action::Delete && a.resource != "cluster")
            .map(|a| format!("{} {}", a.resource, a.name))
            .collect();
        let any_delete = target.actions.iter().any(|a| a.action == Action::Delete);
        if any_delete {
            let mut details = vec![REMOVED_CLUSTER.to_string()];
            if !deleted.is_empty() {
                details.push(format!("with {}", deleted.join(", ")));
            }
            summary.destroy.push(PlanItem {
                kind: "cluster",
                name: name.clone(),
                details,
            });
        }
        for problem in &target.problems {
            let text = format!("{name}: {problem}");
            push_problem(summary, problem.kind.into(), &text, tenant_id);
        }
    }
}

fn push_problem(summary: &mut PlanSummary, kind: LiveProblemKind, text: &str, tenant_id: &str) {
    summary.problems.push(LiveProblem {
        kind,
        text: scrub_tenant(text, tenant_id),
    });
}

/// One line per resource of the target that the apply would touch.
fn target_changes(target: &TargetPlan) -> Vec<String> {
    target
        .actions
        .iter()
        .filter(|a| !matches!(a.action, Action::NoChange | Action::Reuse))
        .map(|a| {
            let mut line = format!("{} {}: {}", a.resource, a.name, action_word(a.action));
            let details = change_details(a);
            if !details.is_empty() {
                line.push_str(&format!(" ({})", details.join(", ")));
            }
            line
        })
        .collect()
}

fn action_word(action: Action) -> &'static str {
    match action {
        Action::Create => "create",
        Action::Update => "update in place",
        Action::Replace => "replace",
        Action::Delete => "delete",
        Action::NoChange => "no change",
        Action::Reuse => "reuse",
    }
}

/// `field: from → to` for each changed field, and the reason when there is one.
fn change_details(a: &ResourceAction) -> Vec<String> {
    let mut details: Vec<String> = a
        .changes
        .iter()
        .map(|c| format!("{}: {} → {}", c.field, c.from, c.to))
        .collect();
    if !a.reason.is_empty() {
        details.push(a.reason.clone());
    }
    details
}
