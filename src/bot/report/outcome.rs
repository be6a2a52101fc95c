//! The verdict of a pull request and every reason for it, derived from the rest of the report
//! so the comment, both summaries and both check conclusions cannot disagree.

use std::collections::BTreeSet;

use serde::Serialize;
use serde::ser::SerializeStruct;

use super::{
    BudgetStatus, ConfigReport, FleetReport, FleetStatus, LiveProblemKind, PrivacyReport, plural,
};
use crate::bot::config::CONFIG_PATH;

/// The overall answer, shown first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Every changed spec is valid, nothing private was committed, the budget fits.
    Ready,
    /// As [`Verdict::Ready`], but the quota budget could not be checked.
    ReadyUnchecked,
    /// Something blocks the change.
    Blocked,
    /// No fleet spec changed: nothing to check.
    NoSpecChanges,
}

/// Why a pull request is blocked; one entry per kind of reason, in the order shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Blocker {
    /// `.fleetbot.yml` on the default branch is invalid.
    ConfigInvalid,
    /// Changed specs that do not load.
    InvalidSpecs { count: usize },
    /// Live plans that found problems: in how many fleets, and every kind found.
    LivePlan {
        fleets: usize,
        kinds: BTreeSet<LiveProblemKind>,
    },
    /// Fleets (by name) whose quota budget is short.
    QuotaShort { fleets: Vec<String> },
    /// Fleets whose capacity could not be proven (evidence missing or unreadable).
    CapacityUnproven { fleets: usize },
    /// Private values in the changed lines (`fleet/privacy` has the details).
    PrivateValues { count: usize },
    /// Changed lines the privacy guard could not read: unproven is not clean.
    PrivacyIncomplete { unread: usize },
}

impl Blocker {
    /// One line for the comment's and the summary's list of reasons.
    pub fn reason(&self) -> String {
        match self {
            Blocker::ConfigInvalid => format!("the repository config `{CONFIG_PATH}` is invalid"),
            Blocker::InvalidSpecs { count } => {
                format!("{count} invalid fleet spec{}", plural(*count))
            }
            Blocker::LivePlan { fleets, kinds } => format!(
                "the live plan found problems in {fleets} fleet{} ({})",
                plural(*fleets),
                phrases(kinds)
            ),
            Blocker::QuotaShort { fleets } => {
                format!("quota shortfall for {}", fleets.join(", "))
            }
            Blocker::CapacityUnproven { fleets } => format!(
                "capacity could not be proven for {fleets} fleet{}",
                plural(*fleets)
            ),
            Blocker::PrivateValues { count } => {
                format!("{count} private value{} committed", plural(*count))
            }
            Blocker::PrivacyIncomplete { unread } => unscanned(*unread),
        }
    }

    /// The words after `Blocked: ` in a check run's title.
    pub fn title(&self) -> String {
        match self {
            Blocker::ConfigInvalid => format!("`{CONFIG_PATH}` on the default branch is invalid"),
            Blocker::InvalidSpecs { count } => {
                format!("{count} invalid fleet spec{}", plural(*count))
            }
            Blocker::LivePlan { kinds, .. } => {
                format!("the live plan found problems ({})", phrases(kinds))
            }
            Blocker::QuotaShort { .. } => "quota shortfall".into(),
            Blocker::CapacityUnproven { .. } => "capacity could not be proven".into(),
            Blocker::PrivacyIncomplete { unread } => {
                format!("{} (see fleet/privacy)", unscanned(*unread))
            }
            Blocker::PrivateValues { count } => format!(
                "{count} private value{} committed (see fleet/privacy)",
                plural(*count)
            ),
        }
    }
}

/// Why the privacy scan is incomplete, in a few words.
pub fn unscanned(unread: usize) -> String {
    if unread == 0 {
        "not every changed file was listed, so not all were scanned".to_string()
    } else {
        format!(
            "{unread} changed file{} could not be scanned",
            plural(unread)
        )
    }
}

fn phrases(kinds: &BTreeSet<LiveProblemKind>) -> String {
    kinds
        .iter()
        .map(|k| k.phrase())
        .collect::<Vec<_>>()
        .join(", ")
}

/// What a reader should know that does not block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caution {
    /// Removed specs: reported, never destroyed implicitly (nothing is deleted on merge).
    SpecsRemoved { count: usize },
    /// No quota source: the budget was not checked.
    QuotaNotChecked,
    /// Private values in the changed lines: `fleet/privacy` fails on them, `fleet/preflight`
    /// only says so (one leak fails one check).
    PrivateValuesElsewhere { count: usize },
    /// The live plan deletes, replaces or shrinks: merging applies it only after
    /// `/approve-destroy`.
    NeedsApproval { count: usize },
}

impl Caution {
    pub fn reason(&self) -> String {
        match self {
            Caution::SpecsRemoved { count } => format!(
                "{count} fleet spec{} removed: nothing is deleted on merge; run `fleetbot destroy` to tear the fleet down",
                plural(*count)
            ),
            Caution::QuotaNotChecked => "the quota budget was not checked".into(),
            Caution::NeedsApproval { count } => format!(
                "{count} deletion{}, replacement{} or shrink{} planned: the merge applies {} only after /approve-destroy on this plan",
                plural(*count),
                plural(*count),
                plural(*count),
                if *count == 1 { "it" } else { "them" }
            ),
            Caution::PrivateValuesElsewhere { count } => format!(
                "{count} private value{} committed: fleet/privacy fails on {}",
                plural(*count),
                if *count == 1 { "it" } else { "them" }
            ),
        }
    }
}

/// The verdict with every reason for it, decided once from the rest of the report
/// ([`Outcome::decide`]). The comment, both check runs' conclusions and titles and their
/// summaries all derive from it, so none of them can disagree with another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Whether any fleet spec changed (a report with no fleet has nothing to check).
    pub spec_changed: bool,
    pub blockers: Vec<Blocker>,
    /// Shown only when nothing blocks: a blocked change has to be changed anyway.
    pub cautions: Vec<Caution>,
}

impl Outcome {
    /// Every blocking reason found in the config, the privacy scan and the fleets.
    pub fn decide(config: &ConfigReport, privacy: &PrivacyReport, fleets: &[FleetReport]) -> Self {
        let mut blockers = Vec::new();
        if config.error.is_some() {
            blockers.push(Blocker::ConfigInvalid);
        }
        blockers.extend(fleet_blockers(fleets));
        if privacy.total > 0 {
            blockers.push(Blocker::PrivateValues {
                count: privacy.total,
            });
        } else if privacy.incomplete() {
            blockers.push(Blocker::PrivacyIncomplete {
                unread: privacy.unread,
            });
        }
        Outcome {
            spec_changed: !fleets.is_empty(),
            blockers,
            cautions: cautions(fleets),
        }
    }

    /// `fleet/preflight`'s share: the plan, the specs and the budget. Private values are
    /// `fleet/privacy`'s to fail (design.md's check table), so here they are only a caution,
    /// and the summary never lists as blocking what the check does not fail on.
    pub fn for_preflight(&self) -> Outcome {
        let mut out = self.clone();
        let mut private = 0;
        out.blockers.retain(|b| match b {
            Blocker::PrivateValues { count } => {
                private = *count;
                false
            }
            Blocker::PrivacyIncomplete { .. } => false,
            _ => true,
        });
        if private > 0 {
            out.cautions
                .push(Caution::PrivateValuesElsewhere { count: private });
        }
        out
    }

    pub fn verdict(&self) -> Verdict {
        if !self.blockers.is_empty() {
            Verdict::Blocked
        } else if !self.spec_changed {
            Verdict::NoSpecChanges
        } else if self.cautions.contains(&Caution::QuotaNotChecked) {
            Verdict::ReadyUnchecked
        } else {
            Verdict::Ready
        }
    }

    /// Why the verdict is what it is, one short line each (public text only).
    pub fn reasons(&self) -> Vec<String> {
        if !self.blockers.is_empty() {
            return self.blockers.iter().map(Blocker::reason).collect();
        }
        if !self.spec_changed {
            return Vec::new();
        }
        self.cautions.iter().map(Caution::reason).collect()
    }
}

fn count(fleets: &[FleetReport], f: impl Fn(&FleetReport) -> bool) -> usize {
    fleets.iter().filter(|x| f(x)).count()
}

fn budget_is(status: BudgetStatus) -> impl Fn(&FleetReport) -> bool {
    move |f| f.budget.as_ref().is_some_and(|b| b.status == status)
}

/// What blocks in the fleets themselves, in the order shown.
fn fleet_blockers(fleets: &[FleetReport]) -> Vec<Blocker> {
    let mut blockers = Vec::new();
    let invalid = count(fleets, |f| f.status == FleetStatus::Invalid);
    if invalid > 0 {
        blockers.push(Blocker::InvalidSpecs { count: invalid });
    }
    let kinds: BTreeSet<LiveProblemKind> = fleets
        .iter()
        .filter_map(|f| f.plan.as_ref())
        .flat_map(|p| p.problems.iter().map(|p| p.kind))
        .collect();
    if !kinds.is_empty() {
        blockers.push(Blocker::LivePlan {
            fleets: count(fleets, |f| {
                f.plan.as_ref().is_some_and(|p| !p.problems.is_empty())
            }),
            kinds,
        });
    }
    let short: Vec<String> = fleets
        .iter()
        .filter(|f| budget_is(BudgetStatus::Short)(f))
        .map(|f| f.name.clone().unwrap_or_else(|| f.path.clone()))
        .collect();
    if !short.is_empty() {
        blockers.push(Blocker::QuotaShort { fleets: short });
    }
    let unproven = count(fleets, budget_is(BudgetStatus::Unproven));
    if unproven > 0 {
        blockers.push(Blocker::CapacityUnproven { fleets: unproven });
    }
    blockers
}

fn cautions(fleets: &[FleetReport]) -> Vec<Caution> {
    let mut cautions = Vec::new();
    let removed = count(fleets, |f| f.status == FleetStatus::Removed);
    if removed > 0 {
        cautions.push(Caution::SpecsRemoved { count: removed });
    }
    if fleets.iter().any(budget_is(BudgetStatus::NotChecked)) {
        cautions.push(Caution::QuotaNotChecked);
    }
    let destructive: usize = fleets
        .iter()
        .filter_map(|f| f.plan.as_ref())
        .map(|p| p.needs_approval.len())
        .sum();
    if destructive > 0 {
        cautions.push(Caution::NeedsApproval { count: destructive });
    }
    cautions
}

// The templates read `verdict` and `reasons`, which are derived, never stored.
impl Serialize for Outcome {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut out = s.serialize_struct("Outcome", 2)?;
        out.serialize_field("verdict", &self.verdict())?;
        out.serialize_field("reasons", &self.reasons())?;
        out.end()
    }
}

/// `fleet/privacy`'s answer, derived from the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PrivacyVerdict {
    /// No fleet spec changed, so nothing was scanned.
    Skipped,
    /// Nothing private in the changed lines.
    Clean,
    /// Private values were committed.
    Found,
    /// Nothing found, but not every changed line could be read: a failure, never a pass.
    Incomplete,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bot::report::{BudgetReport, FileChange, LiveProblem, PlanSummary};

    fn config() -> ConfigReport {
        ConfigReport {
            branch: "main".into(),
            present: true,
            error: None,
            changed_in_pr: false,
        }
    }

    fn fleet(budget: BudgetStatus) -> FleetReport {
        FleetReport {
            path: "fleets/a.yaml".into(),
            change: FileChange::Modified,
            name: Some("a".into()),
            status: FleetStatus::Valid,
            problems: Vec::new(),
            plan: Some(PlanSummary {
                region: "us-central1".into(),
                projects: 1,
                clusters: 1,
                mk8s: 1,
                soperator: 0,
                create: Vec::new(),
                change: Vec::new(),
                destroy: Vec::new(),
                unchanged: 1,
                live_cloud: Some("the fleetbot simulator".into()),
                unproven: 0,
                needs_approval: Vec::new(),
                problems: Vec::new(),
            }),
            budget: Some(BudgetReport {
                status: budget,
                rows: Vec::new(),
                blocked_by: Vec::new(),
                note: None,
            }),
        }
    }

    fn decide(config: &ConfigReport, private: usize, fleets: &[FleetReport]) -> Outcome {
        let privacy = PrivacyReport {
            total: private,
            ..PrivacyReport::default()
        };
        Outcome::decide(config, &privacy, fleets)
    }

    #[test]
    fn every_live_plan_problem_kind_blocks_on_its_own() {
        for kind in LiveProblemKind::ALL {
            let mut f = fleet(BudgetStatus::Fits);
            f.plan.as_mut().unwrap().problems.push(LiveProblem {
                kind,
                text: "x".into(),
            });
            let outcome = decide(&config(), 0, &[f, fleet(BudgetStatus::Fits)]);
            assert_eq!(outcome.verdict(), Verdict::Blocked, "{kind:?}");
            assert_eq!(
                outcome.blockers,
                vec![Blocker::LivePlan {
                    fleets: 1,
                    kinds: [kind].into()
                }]
            );
            let reason = &outcome.reasons()[0];
            assert!(reason.contains(kind.phrase()), "{reason}");
        }
    }

    #[test]
    fn every_blocker_is_listed_in_order_and_cautions_only_when_nothing_blocks() {
        let mut invalid = fleet(BudgetStatus::Fits);
        invalid.status = FleetStatus::Invalid;
        invalid.plan = None;
        invalid.budget = None;
        let mut troubled = fleet(BudgetStatus::Fits);
        for kind in [LiveProblemKind::NotOwned, LiveProblemKind::ProjectNotFound] {
            troubled.plan.as_mut().unwrap().problems.push(LiveProblem {
                kind,
                text: "x".into(),
            });
        }
        let mut short = fleet(BudgetStatus::Short);
        short.name = Some("big".into());
        let mut removed = fleet(BudgetStatus::Fits);
        removed.status = FleetStatus::Removed;
        removed.budget = None;
        let broken = ConfigReport {
            error: Some("unknown field".into()),
            ..config()
        };
        let fleets = [
            invalid,
            troubled,
            short,
            fleet(BudgetStatus::Unproven),
            fleet(BudgetStatus::NotChecked),
            removed,
        ];
        let outcome = decide(&broken, 2, &fleets);
        assert_eq!(outcome.verdict(), Verdict::Blocked);
        assert_eq!(
            outcome.blockers,
            vec![
                Blocker::ConfigInvalid,
                Blocker::InvalidSpecs { count: 1 },
                Blocker::LivePlan {
                    fleets: 1,
                    kinds: [LiveProblemKind::ProjectNotFound, LiveProblemKind::NotOwned].into()
                },
                Blocker::QuotaShort {
                    fleets: vec!["big".into()]
                },
                Blocker::CapacityUnproven { fleets: 1 },
                Blocker::PrivateValues { count: 2 },
            ]
        );
        assert_eq!(
            outcome.reasons(),
            vec![
                "the repository config `.fleetbot.yml` is invalid",
                "1 invalid fleet spec",
                "the live plan found problems in 1 fleet (pinned project not in the tenant, resource not owned by the fleet)",
                "quota shortfall for big",
                "capacity could not be proven for 1 fleet",
                "2 private values committed",
            ]
        );
        // The same fleets without blockers: the cautions are the reasons.
        let calm = decide(&config(), 0, &fleets[4..]);
        assert_eq!(calm.verdict(), Verdict::ReadyUnchecked);
        assert_eq!(
            calm.reasons(),
            vec![
                "1 fleet spec removed: nothing is deleted on merge; run `fleetbot destroy` to tear the fleet down",
                "the quota budget was not checked",
            ]
        );
        assert_eq!(decide(&config(), 0, &fleets[5..]).verdict(), Verdict::Ready);
    }

    #[test]
    fn without_a_changed_spec_only_the_config_can_block() {
        let none = decide(&config(), 0, &[]);
        assert_eq!(none.verdict(), Verdict::NoSpecChanges);
        assert!(none.reasons().is_empty());
        let broken = ConfigReport {
            error: Some("bad".into()),
            ..config()
        };
        assert_eq!(decide(&broken, 0, &[]).verdict(), Verdict::Blocked);
    }
}
