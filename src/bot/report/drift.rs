//! The public report of one reconcile of a repository's default branch: for each fleet spec
//! there, whether the cloud still matches it, and what differs, in the spec's public names.
//!
//! The `fleet/drift` check run's conclusion and title are functions of this report, as its
//! text is, so they can never disagree: every fleet in sync is success; anything that differs,
//! or could not be compared, is failure (a fleet that cannot be read is not in sync).

use serde::Serialize;

use crate::fleet::guard::PublicNames;
use crate::fleet::live::{Action, LivePlan, ProblemKind};
use crate::github::CheckConclusion;

/// The check run the reconcile loop keeps on the default branch's head.
pub const DRIFT_CHECK: &str = "fleet/drift";

/// One reconcile of a repository.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DriftReport {
    /// `owner/name`.
    pub repo: String,
    /// The default branch and the commit whose specs were compared.
    pub branch: String,
    pub head_sha: String,
    /// What the specs were compared with, in public words (`Nebius`, `the fleetbot simulator`).
    pub cloud: String,
    pub fleets: Vec<FleetDrift>,
    /// Why the specs could not be listed at all (the tree was cut, the config is invalid).
    pub unlisted: Option<String>,
    /// This pass queues a drift repair (`drift.apply`) for the fleets with a [`Repair`]; the
    /// others that drifted are left for a person.
    pub repairs: bool,
}

/// One spec of the default branch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FleetDrift {
    pub path: String,
    /// The spec's `name`, when it loads.
    pub name: Option<String>,
    pub state: DriftState,
    /// What differs, one line each, in public names.
    pub differences: Vec<Difference>,
    /// Why it could not be compared (`Unreadable`, `Invalid`) or was not (`NotPlanned`).
    pub note: String,
    /// What `drift: apply` may re-apply: set when drifted in a way an apply restores without
    /// deleting, replacing or shrinking anything, and without a problem.
    #[serde(skip)]
    pub repair: Option<Repair>,
}

/// The plan a drift repair is held to: the apply re-plans and applies only if its plan is
/// still this one, as a merge applies only the plan its pull request was reviewed with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repair {
    pub digest: String,
    /// [`crate::fleet::guard::ReviewSummary`] as JSON, recorded as the reviewed plan.
    pub summary: String,
}

/// Whether a fleet matches the cloud.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DriftState {
    InSync,
    Drifted,
    /// No target the API engine plans (soperator only): nothing to compare.
    NotPlanned,
    /// The cloud, the store or the spec could not be read: not known to be in sync.
    Unreadable,
    /// The spec does not load on the default branch.
    Invalid,
}

/// One thing that differs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Difference {
    pub kind: DifferenceKind,
    pub line: String,
}

/// How the cloud differs from the spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DifferenceKind {
    /// The spec declares it and the cloud does not have it (deleted outside fleetbot, or
    /// never applied).
    Missing,
    /// It exists and differs from the spec (changed outside fleetbot, or not applied yet).
    Changed,
    /// fleetbot deployed it for this fleet and the spec no longer declares it.
    NotDeclared,
    /// A resource of the spec's name exists that fleetbot did not create.
    CreatedOutside,
    /// Anything else the plan cannot accept (identity, a pinned project gone, …).
    Problem,
}

impl DifferenceKind {
    /// How the report words the kind.
    pub fn label(self) -> &'static str {
        match self {
            DifferenceKind::Missing => "missing",
            DifferenceKind::Changed => "changed",
            DifferenceKind::NotDeclared => "no longer declared",
            DifferenceKind::CreatedOutside => "created outside fleetbot",
            DifferenceKind::Problem => "problem",
        }
    }
}

impl FleetDrift {
    /// What `plan` says of the fleet: in sync when it would change nothing and has no
    /// problem; otherwise every action and problem, classified, in public names.
    pub fn from_plan(path: &str, name: &str, plan: &LivePlan, names: &PublicNames) -> FleetDrift {
        let mut names = names.clone();
        let mut differences = Vec::new();
        let scopes = plan
            .projects
            .iter()
            .map(|p| {
                (
                    format!("project {}", names.project(&p.key)),
                    &p.actions,
                    false,
                )
            })
            .collect::<Vec<_>>();
        let targets = plan
            .targets
            .iter()
            .map(|t| (names.target(&t.target), &t.actions, t.prune))
            .collect::<Vec<_>>();
        for (scope, actions, prune) in scopes.into_iter().chain(targets) {
            for a in actions {
                let kind = match a.action {
                    Action::NoChange | Action::Reuse => continue,
                    Action::Create => DifferenceKind::Missing,
                    Action::Delete if prune => DifferenceKind::NotDeclared,
                    Action::Update | Action::Replace | Action::Delete => DifferenceKind::Changed,
                };
                let fields: Vec<&str> = a.changes.iter().map(|c| c.field).collect();
                let mut line = format!("{} {} in {scope}", a.resource, a.name);
                if !fields.is_empty() {
                    line.push_str(&format!(" ({})", fields.join(", ")));
                }
                differences.push(Difference { kind, line });
            }
        }
        for p in &plan.projects {
            for problem in &p.problems {
                differences.push(Difference {
                    kind: problem_kind(problem.kind),
                    line: format!("project {}: {}", names.project(&p.key), problem.message),
                });
            }
        }
        for t in &plan.targets {
            for problem in &t.problems {
                differences.push(Difference {
                    kind: problem_kind(problem.kind),
                    line: format!("{}: {}", names.target(&t.target), problem.message),
                });
            }
        }
        differences.sort_by(|a, b| (a.kind, &a.line).cmp(&(b.kind, &b.line)));
        differences.dedup();
        FleetDrift {
            path: path.to_string(),
            name: Some(name.to_string()),
            state: if differences.is_empty() {
                DriftState::InSync
            } else {
                DriftState::Drifted
            },
            differences,
            note: String::new(),
            repair: None,
        }
    }

    /// A fleet that could not be compared, and why (public words).
    pub fn not_compared(
        path: &str,
        name: Option<&str>,
        state: DriftState,
        note: &str,
    ) -> FleetDrift {
        FleetDrift {
            path: path.to_string(),
            name: name.map(str::to_string),
            state,
            differences: Vec::new(),
            note: note.to_string(),
            repair: None,
        }
    }
}

fn problem_kind(kind: ProblemKind) -> DifferenceKind {
    match kind {
        ProblemKind::NotOwned => DifferenceKind::CreatedOutside,
        _ => DifferenceKind::Problem,
    }
}

impl DriftReport {
    /// Success only when every fleet is in sync (or has nothing the engine plans) and the specs
    /// could all be listed; anything else is failure: drift, or not knowing.
    pub fn conclusion(&self) -> CheckConclusion {
        let known_in_sync = self.unlisted.is_none()
            && self
                .fleets
                .iter()
                .all(|f| matches!(f.state, DriftState::InSync | DriftState::NotPlanned));
        if known_in_sync {
            CheckConclusion::Success
        } else {
            CheckConclusion::Failure
        }
    }

    /// Fleets in each state: (in sync, drifted, not compared).
    pub fn counts(&self) -> (usize, usize, usize) {
        let count = |s: &[DriftState]| self.fleets.iter().filter(|f| s.contains(&f.state)).count();
        (
            count(&[DriftState::InSync, DriftState::NotPlanned]),
            count(&[DriftState::Drifted]),
            count(&[DriftState::Unreadable, DriftState::Invalid]),
        )
    }

    /// The check run's title.
    pub fn title(&self) -> String {
        let (in_sync, drifted, unknown) = self.counts();
        let total = self.fleets.len();
        if let Some(why) = &self.unlisted {
            return format!("Not compared: {why}");
        }
        if total == 0 {
            return "In sync: no fleet spec on the default branch".to_string();
        }
        match (drifted, unknown) {
            (0, 0) => format!(
                "In sync: {in_sync} fleet{} match{} the cloud",
                plural(in_sync),
                if in_sync == 1 { "es" } else { "" }
            ),
            (0, _) => format!(
                "Not known to be in sync: {unknown} of {total} fleets could not be compared"
            ),
            (_, 0) => format!(
                "Drifted: {drifted} of {total} fleet{} differ{} from the cloud",
                plural(total),
                if drifted == 1 { "s" } else { "" }
            ),
            (_, _) => format!(
                "Drifted: {drifted} of {total} fleets differ{} from the cloud; {unknown} could not be compared",
                if drifted == 1 { "s" } else { "" }
            ),
        }
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fleet(state: DriftState) -> FleetDrift {
        FleetDrift::not_compared("fleets/a.yaml", Some("a"), state, "")
    }

    fn report(fleets: Vec<FleetDrift>) -> DriftReport {
        DriftReport {
            repo: "o/r".into(),
            branch: "main".into(),
            head_sha: "a".repeat(40),
            cloud: "Nebius".into(),
            fleets,
            unlisted: None,
            repairs: false,
        }
    }

    #[test]
    fn only_a_known_match_is_success() {
        let ok = report(vec![
            fleet(DriftState::InSync),
            fleet(DriftState::NotPlanned),
        ]);
        assert_eq!(ok.conclusion(), CheckConclusion::Success);
        assert_eq!(ok.title(), "In sync: 2 fleets match the cloud");
        for state in [
            DriftState::Drifted,
            DriftState::Unreadable,
            DriftState::Invalid,
        ] {
            let r = report(vec![fleet(DriftState::InSync), fleet(state)]);
            assert_eq!(r.conclusion(), CheckConclusion::Failure, "{state:?}");
        }
        let r = report(vec![
            fleet(DriftState::Drifted),
            fleet(DriftState::Unreadable),
        ]);
        assert_eq!(
            r.title(),
            "Drifted: 1 of 2 fleets differs from the cloud; 1 could not be compared"
        );
        let mut cut = report(vec![fleet(DriftState::InSync)]);
        cut.unlisted = Some("the tree listing was cut short".into());
        assert_eq!(cut.conclusion(), CheckConclusion::Failure);
        assert_eq!(report(vec![]).conclusion(), CheckConclusion::Success);
    }
}
