//! The public report of an apply: per fleet what was created, changed, left unchanged and
//! deleted, by role names and counts, and why a fleet was not applied. The `fleet/apply`
//! conclusion, the check's text and the reply on the pull request are all functions of it.

use serde::Serialize;

use crate::fleet::guard::{Refusal, Trigger};
use crate::github::CheckConclusion;

/// Targets by what happened to them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ApplyCounts {
    pub created: usize,
    pub changed: usize,
    pub unchanged: usize,
    pub deleted: usize,
    pub failed: usize,
}

/// What became of one fleet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum FleetOutcome {
    /// Applied; every target converged.
    Applied,
    /// The cloud already matched the spec: nothing was changed.
    Unchanged,
    /// Applied, and some targets failed (named in `failed_targets`).
    Failed,
    /// Applied where the cloud was still as the reviewed plan read it; the targets named in
    /// `changed_targets` had changed since (by hand, or another apply) and were not touched.
    ChangedSinceReview,
    /// Not applied: the guard refused (drift, approval, problems).
    Refused { refusal: Refusal },
    /// Not applied: the spec could not be read, validated or planned (the reason is public).
    NotApplied { reason: String },
    /// The merge deleted the spec file: reported, never destroyed implicitly.
    SpecRemoved,
    /// Only soperator targets, which the API engine does not apply.
    NothingForTheEngine,
}

/// One fleet of the apply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FleetApply {
    /// The spec's path in the repository.
    pub path: String,
    /// The fleet's name (from the spec), when it was read.
    pub name: Option<String>,
    pub outcome: FleetOutcome,
    pub counts: ApplyCounts,
    /// `project/cluster` of each target that failed, with its status (never the cloud's text).
    pub failed_targets: Vec<String>,
    /// `project/cluster` of each target that was deleted (approved prune).
    pub deleted_targets: Vec<String>,
    /// `project/cluster` of each target not touched because the cloud changed since review.
    pub changed_targets: Vec<String>,
    /// One line per wave of a staged rollout (`rollout:`), in order; empty when the fleet was
    /// applied whole.
    pub waves: Vec<String>,
}

impl FleetApply {
    pub fn new(path: &str, name: Option<String>, outcome: FleetOutcome) -> Self {
        FleetApply {
            path: path.to_string(),
            name,
            outcome,
            counts: ApplyCounts::default(),
            failed_targets: Vec::new(),
            deleted_targets: Vec::new(),
            changed_targets: Vec::new(),
            waves: Vec::new(),
        }
    }

    /// The conclusion this fleet alone would give.
    pub fn conclusion(&self) -> CheckConclusion {
        match &self.outcome {
            FleetOutcome::Applied | FleetOutcome::Unchanged => CheckConclusion::Success,
            FleetOutcome::SpecRemoved | FleetOutcome::NothingForTheEngine => {
                CheckConclusion::Neutral
            }
            FleetOutcome::Refused { refusal } if refusal.needs_action() => {
                CheckConclusion::ActionRequired
            }
            FleetOutcome::ChangedSinceReview => CheckConclusion::ActionRequired,
            FleetOutcome::Refused { .. }
            | FleetOutcome::Failed
            | FleetOutcome::NotApplied { .. } => CheckConclusion::Failure,
        }
    }
}

/// Why the whole apply did not run (before any fleet was looked at).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ApplyBlocked {
    /// `.fleetbot.yml` is invalid: nothing is applied under rules that cannot be read.
    Config { error: String },
    /// `apply: manual`: a merge applies nothing by itself.
    Manual,
    /// The server has no cloud to apply to.
    NoCloud,
    /// The pull request is open and the config does not allow applying before merge.
    NotMerged,
}

/// The whole apply of one commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ApplyReport {
    pub repo: String,
    pub number: u64,
    /// The commit applied (the merge commit, or the head before merge).
    pub sha: String,
    pub trigger: Trigger,
    /// Who asked (the merger, the commenter, who pressed the button).
    pub actor: String,
    pub blocked: Option<ApplyBlocked>,
    pub fleets: Vec<FleetApply>,
}

impl ApplyReport {
    /// The check's conclusion: failure wins, then a person's action, then success; a report
    /// with no fleet applied and nothing wrong is neutral.
    pub fn conclusion(&self) -> CheckConclusion {
        match &self.blocked {
            Some(ApplyBlocked::Config { .. } | ApplyBlocked::NoCloud) => {
                return CheckConclusion::Failure;
            }
            Some(ApplyBlocked::Manual | ApplyBlocked::NotMerged) => {
                return CheckConclusion::ActionRequired;
            }
            None => {}
        }
        let conclusions: Vec<CheckConclusion> =
            self.fleets.iter().map(FleetApply::conclusion).collect();
        for wins in [
            CheckConclusion::Failure,
            CheckConclusion::ActionRequired,
            CheckConclusion::Success,
        ] {
            if conclusions.contains(&wins) {
                return wins;
            }
        }
        CheckConclusion::Neutral
    }

    /// Whether a fleet was left untouched because the cloud changed since review.
    pub fn changed_since_review(&self) -> bool {
        self.fleets
            .iter()
            .any(|f| f.outcome == FleetOutcome::ChangedSinceReview)
    }

    /// The reason of each fleet the guard refused.
    pub fn refusals(&self) -> Vec<&'static str> {
        self.fleets
            .iter()
            .filter_map(|f| match &f.outcome {
                FleetOutcome::Refused { refusal } => Some(refusal.kind()),
                _ => None,
            })
            .collect()
    }

    /// Whether the Apply button (and `/apply`) could resolve it.
    pub fn offers_apply(&self) -> bool {
        // A drift repair has no pull request to `/apply` on: the next pass repairs again.
        self.trigger != Trigger::Drift && self.conclusion() == CheckConclusion::ActionRequired
    }

    /// The check's title, one line.
    pub fn title(&self) -> String {
        let total = |f: fn(&ApplyCounts) -> usize| -> usize {
            self.fleets.iter().map(|x| f(&x.counts)).sum()
        };
        match (&self.blocked, self.conclusion()) {
            (Some(ApplyBlocked::Config { .. }), _) => {
                "Not applied: .fleetbot.yml is invalid".into()
            }
            (Some(ApplyBlocked::Manual), _) => "Not applied: apply is manual (/apply)".into(),
            (Some(ApplyBlocked::NoCloud), _) => "Not applied: fleetbot has no cloud".into(),
            (Some(ApplyBlocked::NotMerged), _) => "Not applied: not merged".into(),
            (None, CheckConclusion::ActionRequired) => "Not applied: action required".into(),
            (None, CheckConclusion::Failure) => {
                let failed = self
                    .fleets
                    .iter()
                    .filter(|f| f.conclusion() == CheckConclusion::Failure)
                    .count();
                format!("{failed} of {} fleet(s) failed", self.fleets.len())
            }
            (None, CheckConclusion::Success) => format!(
                "Applied: {} created, {} changed, {} deleted, {} unchanged",
                total(|c| c.created),
                total(|c| c.changed),
                total(|c| c.deleted),
                total(|c| c.unchanged)
            ),
            (None, _) => "Nothing to apply".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(fleets: Vec<FleetApply>) -> ApplyReport {
        ApplyReport {
            repo: "o/r".into(),
            number: 1,
            sha: "a".repeat(40),
            trigger: Trigger::Merge,
            actor: "alice".into(),
            blocked: None,
            fleets,
        }
    }

    #[test]
    fn failure_wins_then_action_then_success() {
        let ok = FleetApply::new("a.yaml", None, FleetOutcome::Applied);
        let drift = FleetApply::new(
            "b.yaml",
            None,
            FleetOutcome::Refused {
                refusal: Refusal::NotReviewed,
            },
        );
        let bad = FleetApply::new("c.yaml", None, FleetOutcome::Failed);
        let removed = FleetApply::new("d.yaml", None, FleetOutcome::SpecRemoved);
        assert_eq!(
            report(vec![ok.clone(), drift.clone(), bad]).conclusion(),
            CheckConclusion::Failure
        );
        assert_eq!(
            report(vec![ok.clone(), drift]).conclusion(),
            CheckConclusion::ActionRequired
        );
        assert_eq!(
            report(vec![ok, removed.clone()]).conclusion(),
            CheckConclusion::Success
        );
        assert_eq!(report(vec![removed]).conclusion(), CheckConclusion::Neutral);
        assert_eq!(report(vec![]).conclusion(), CheckConclusion::Neutral);
    }

    #[test]
    fn plan_problems_fail_and_cannot_be_overridden() {
        let problems = FleetApply::new(
            "a.yaml",
            None,
            FleetOutcome::Refused {
                refusal: Refusal::Problems {
                    problems: vec!["x".into()],
                },
            },
        );
        let r = report(vec![problems]);
        assert_eq!(r.conclusion(), CheckConclusion::Failure);
        assert!(!r.offers_apply());
    }

    #[test]
    fn a_blocked_apply_is_never_a_success() {
        let mut r = report(vec![FleetApply::new("a.yaml", None, FleetOutcome::Applied)]);
        r.blocked = Some(ApplyBlocked::Config {
            error: "bad".into(),
        });
        assert_eq!(r.conclusion(), CheckConclusion::Failure);
        r.blocked = Some(ApplyBlocked::Manual);
        assert_eq!(r.conclusion(), CheckConclusion::ActionRequired);
        assert!(r.offers_apply());
    }
}
