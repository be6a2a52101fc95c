//! The guards an apply passes before the first mutation, as a pure function of what was
//! reviewed, what the cloud needs now, and who asked: a merge applies only the plan its pull
//! request showed, and nothing that deletes, replaces or shrinks without `/approve-destroy` on
//! exactly that plan.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::live::PlannedFleet;
use crate::engine::live::{Action, Destructive, LivePlan};
use crate::spec::FleetSpec;

/// What started an apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Trigger {
    /// The pull request was merged.
    Merge,
    /// "Re-run" on the fleet/apply check.
    Rerun,
    /// `/apply` by someone with the configured permission.
    Command,
    /// The check's Apply button, pressed by someone with `/apply`'s permission.
    Button,
    /// `drift: apply`: a reconcile pass found the default branch's fleet drifted and re-applies
    /// the plan it published on `fleet/drift` (its "reviewed" plan), never a deletion.
    Drift,
}

impl Trigger {
    /// Whether a person with `/apply`'s permission asked for this apply explicitly, which
    /// accepts a plan that changed since review (never an unapproved deletion).
    pub fn overrides_review(&self) -> bool {
        matches!(self, Trigger::Command | Trigger::Button)
    }

    /// The trigger as the audit log and the check run name it.
    pub fn as_str(&self) -> &'static str {
        match self {
            Trigger::Merge => "merge",
            Trigger::Rerun => "re-run",
            Trigger::Command => "/apply",
            Trigger::Button => "Apply button",
            Trigger::Drift => "drift repair",
        }
    }
}

/// How the plan's projects are named in public: a project key can be the slug of a private
/// project ID (a project given by `project_id` alone), so projects are shown by their display
/// names as the sticky comment shows them, an ID-only project by its position, and a project
/// the spec no longer declares by its order among those.
#[derive(Debug, Clone, Default)]
pub struct PublicNames {
    labels: BTreeMap<String, String>,
}

impl PublicNames {
    /// The names `spec` declares.
    pub fn of(spec: &FleetSpec) -> Self {
        Self::with_base(spec, None)
    }

    /// Names from `spec`, and for projects only `base` (the spec before the change) still
    /// declares, the names they had there, as the sticky comment shows them.
    pub fn with_base(spec: &FleetSpec, base: Option<&FleetSpec>) -> Self {
        let named = |spec: &FleetSpec| -> Vec<(String, String)> {
            spec.projects
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    let label = if p.name.is_empty() {
                        format!("existing project #{}", i + 1)
                    } else {
                        p.display_name(&spec.project_prefix)
                    };
                    (p.key(), label)
                })
                .collect()
        };
        let mut labels: BTreeMap<String, String> =
            base.map(named).unwrap_or_default().into_iter().collect();
        // An ID-only project's position in the old spec means nothing now.
        labels.retain(|_, l| !l.starts_with("existing project #"));
        labels.extend(named(spec));
        PublicNames { labels }
    }

    #[cfg(test)]
    pub(crate) fn from_labels(pairs: &[(&str, &str)]) -> Self {
        PublicNames {
            labels: pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    /// A project by its key; a key the spec does not declare is numbered in the order asked,
    /// so one plan's wording is the same wherever it is rendered.
    pub fn project(&mut self, key: &str) -> String {
        if let Some(label) = self.labels.get(key) {
            return label.clone();
        }
        let removed = self
            .labels
            .values()
            .filter(|l| l.starts_with("removed project #"))
            .count();
        let label = format!("removed project #{}", removed + 1);
        self.labels.insert(key.to_string(), label.clone());
        label
    }

    /// A target (`project-key/cluster`) as `label/cluster`.
    pub fn target(&mut self, target: &str) -> String {
        match target.split_once('/') {
            Some((project, cluster)) => format!("{}/{cluster}", self.project(project)),
            None => self.project(target),
        }
    }

    /// The plan's problems, each prefixed with the public name of what it is about.
    pub fn problems(&mut self, plan: &LivePlan) -> Vec<String> {
        let mut out = Vec::new();
        for p in &plan.projects {
            for m in &p.problems {
                out.push(format!("project {}: {m}", self.project(&p.key)));
            }
        }
        for t in &plan.targets {
            for m in &t.problems {
                out.push(format!("{}: {m}", self.target(&t.target)));
            }
        }
        out
    }
}

/// Everything the guard of one fleet looks at.
#[derive(Debug, Clone, Copy)]
pub struct GuardInput<'a> {
    /// What asked for this apply.
    pub trigger: Trigger,
    /// The plan the pull request's last head was reviewed with: digest and its lines
    /// ([`plan_lines`]). `None` when no preflight planned this fleet live.
    pub reviewed: Option<(&'a str, &'a str)>,
    /// The plan at the commit being applied, read now.
    pub plan: &'a LivePlan,
    /// What of `plan` deletes, replaces or shrinks.
    pub destructive: &'a [Destructive],
    /// `/approve-destroy` was given on `plan`'s digest.
    pub approved: bool,
    /// This apply already passed the guard for this fleet before it was interrupted; `Some`
    /// holds whether deletions were approved then.
    pub resumed: Option<bool>,
    /// The spec's public project names (for what a refusal says).
    pub names: &'a PublicNames,
}

/// Why a fleet is not applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Refusal {
    /// The plan has problems (ownership, identity, shrinking a filesystem): nothing may run.
    Problems {
        /// Each problem, in public words.
        problems: Vec<String>,
    },
    /// No preflight planned this fleet live for the pull request's last head.
    NotReviewed,
    /// The plan now differs from the one reviewed.
    Drifted {
        /// The plan lines that differ from the reviewed plan's.
        since_review: Vec<String>,
    },
    /// The plan deletes, replaces or shrinks, and nobody approved this plan.
    NeedsApproval {
        /// What the plan would delete, replace or shrink.
        deletions: Vec<String>,
    },
}

impl Refusal {
    /// The reason as a metric label.
    pub fn kind(&self) -> &'static str {
        match self {
            Refusal::Problems { .. } => "problems",
            Refusal::NotReviewed => "not-reviewed",
            Refusal::Drifted { .. } => "drifted",
            Refusal::NeedsApproval { .. } => "needs-approval",
        }
    }

    /// Whether a person can resolve it from the pull request (`/apply`, `/approve-destroy`),
    /// as opposed to a plan that must be fixed.
    pub fn needs_action(&self) -> bool {
        !matches!(self, Refusal::Problems { .. })
    }
}

/// What the guard decided for one fleet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "decision", rename_all = "kebab-case")]
pub enum Decision {
    /// Apply; `prune` deletes the targets removed from the spec (approved).
    Apply {
        /// Whether targets removed from the spec are deleted (their deletion was approved).
        prune: bool,
    },
    /// The cloud already matches the spec.
    NothingToDo,
    /// Not applied, and why.
    Refuse(Refusal),
}

/// Decides one fleet. Order matters: problems first (nothing can override them), then
/// whether the plan is what was reviewed, then approval of what it deletes.
pub fn decide(input: &GuardInput<'_>) -> Decision {
    let plan = input.plan;
    let mut names = input.names.clone();
    if plan.has_problems() {
        return Decision::Refuse(Refusal::Problems {
            problems: names.problems(plan),
        });
    }
    if plan.is_quiet() {
        return Decision::NothingToDo;
    }
    let lines = plan_lines(plan, &mut names);
    if input.resumed.is_none() && !input.trigger.overrides_review() {
        match input.reviewed {
            None => return Decision::Refuse(Refusal::NotReviewed),
            Some((digest, _)) if digest == plan.digest => {}
            Some((_, reviewed_lines)) => {
                return Decision::Refuse(Refusal::Drifted {
                    since_review: since_review(reviewed_lines, &lines),
                });
            }
        }
    }
    let approved = input.approved || input.resumed == Some(true);
    if !input.destructive.is_empty() && !approved {
        return Decision::Refuse(Refusal::NeedsApproval {
            deletions: input
                .destructive
                .iter()
                .map(|d| deletion_line(d, &mut names))
                .collect(),
        });
    }
    Decision::Apply {
        prune: !input.destructive.is_empty(),
    }
}

/// One destructive action, by role names only.
pub fn deletion_line(d: &Destructive, names: &mut PublicNames) -> String {
    let verb = match d.action {
        Action::Delete => "delete",
        Action::Replace => "replace",
        _ => "shrink",
    };
    let whole = d.name == d.target || d.target.ends_with(&format!("/{}", d.name));
    let target = names.target(&d.target);
    if whole {
        format!("{verb} {} {target}: {}", d.resource, d.why)
    } else {
        format!("{verb} {} {} of {target}: {}", d.resource, d.name, d.why)
    }
}

/// The plan as sorted lines, one per action that changes something, with the fields it
/// changes: stored with a reviewed plan so a later plan can say what changed since. Names are
/// the spec's (the plan never holds cloud IDs).
pub fn plan_lines(plan: &LivePlan, names: &mut PublicNames) -> String {
    let mut lines = BTreeSet::new();
    let mut scopes = Vec::new();
    for p in &plan.projects {
        scopes.push((format!("project {}", names.project(&p.key)), &p.actions));
    }
    for t in &plan.targets {
        scopes.push((names.target(&t.target), &t.actions));
    }
    for (scope, actions) in scopes {
        for a in actions {
            if matches!(a.action, Action::NoChange | Action::Reuse) {
                continue;
            }
            let verb = serde_json::to_value(a.action)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            let fields: Vec<&str> = a.changes.iter().map(|c| c.field).collect();
            let mut line = format!("{verb} {} {} in {scope}", a.resource, a.name);
            if !fields.is_empty() {
                line.push_str(&format!(" ({})", fields.join(", ")));
            }
            lines.insert(line);
        }
    }
    lines.into_iter().collect::<Vec<_>>().join("\n")
}

/// What is planned now and was not reviewed (`+`), and what was reviewed and is no longer
/// planned (`−`, done meanwhile or no longer needed).
fn since_review(reviewed: &str, now: &str) -> Vec<String> {
    let before: BTreeSet<&str> = reviewed.lines().filter(|l| !l.is_empty()).collect();
    let after: BTreeSet<&str> = now.lines().filter(|l| !l.is_empty()).collect();
    let mut out: Vec<String> = after
        .difference(&before)
        .map(|l| format!("+ {l}"))
        .chain(before.difference(&after).map(|l| format!("− {l}")))
        .collect();
    if out.is_empty() {
        // Same actions, other details (a field's target value).
        out.push("the planned actions changed in their details".into());
    }
    out
}

/// The approval key of a plan: the commit it was given on and the live plan's digest, so a
/// later push (a new head) voids it even when the plan stays the same.
pub(crate) fn approval_digest(head_sha: &str, plan_digest: &str) -> String {
    format!("{head_sha}:{plan_digest}")
}

/// What a reviewed plan keeps besides its digest: its lines (for "what changed since review"),
/// its deletions (for `/approve-destroy`'s reply), role names only; and the tenant quota the
/// change would take (for the dashboard's "requested by open pull requests").
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewSummary {
    /// The plan's lines, role names only.
    pub lines: Vec<String>,
    /// What the plan deletes, replaces or shrinks.
    pub deletions: Vec<String>,
    /// The tenant quota the change would take.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requested: Vec<RequestedQuota>,
}

/// Tenant quota a reviewed change would take if merged: net of targets the live plan proves
/// unchanged. The tenant only as the dashboard's digest label.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestedQuota {
    /// The tenant's digest label (never its ID).
    pub tenant: String,
    /// The region the quota is in.
    pub region: String,
    /// The quota's name, as Nebius names it.
    pub quota: String,
    /// A decimal count in the quota's unit (bytes for byte quotas).
    pub amount: String,
}

impl ReviewSummary {
    /// The summary of `planned`, projects by their public names.
    pub fn of(planned: &PlannedFleet, names: &PublicNames) -> Self {
        let mut names = names.clone();
        ReviewSummary {
            lines: plan_lines(&planned.plan, &mut names)
                .lines()
                .map(str::to_string)
                .collect(),
            deletions: planned
                .plan
                .destructive()
                .iter()
                .map(|d| deletion_line(d, &mut names))
                .collect(),
            requested: Vec::new(),
        }
    }

    /// With the quota `spec`'s change would take from `tenant_id`'s allowances (nothing when
    /// the demand cannot be worked out: the budget reports that, not this summary).
    pub fn with_requested(
        mut self,
        spec: &FleetSpec,
        planned: &PlannedFleet,
        tenant_id: &str,
    ) -> Self {
        let options = crate::quota::scope::ScopeOptions::default();
        let Ok(demand) = crate::quota::scope::fleet_demand(spec, &options, &planned.proven) else {
            return self;
        };
        let tenant = crate::quota::tenant_label(tenant_id);
        for region in &demand.regions {
            for (quota, amount) in region.quotas.iter() {
                self.requested.push(RequestedQuota {
                    tenant: tenant.clone(),
                    region: region.region.clone(),
                    quota: quota.to_string(),
                    amount: amount.to_string(),
                });
            }
        }
        self
    }

    /// The summary as the store keeps it beside the reviewed plan's digest.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// An unreadable summary is an empty one: it only words the refusal, never decides it.
    pub fn parse(text: &str) -> Self {
        serde_json::from_str(text).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests;
