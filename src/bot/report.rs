//! The public report of a pull request: everything the comment and the check runs may show.
//!
//! These structs are the only input of the templates. They hold counts, rule ids, locations,
//! keyed aliases, display names and public plan fields, and never a private value: the static
//! plan is publishable by construction, project IDs and tenants are left out, spec errors on a
//! line that holds a private value lose their quoted text, and diffs of files holding one are
//! withheld. A redaction pass over the rendered text ([`super::render`]) is a second layer only.
//!
//! The verdict is not a field someone sets: [`Outcome::decide`] derives every reason to block
//! from the rest of the report, and the comment, both summaries and both check conclusions are
//! functions of that one [`Outcome`].

use std::collections::BTreeSet;

use serde::Serialize;
use serde::ser::SerializeStruct;

use super::config::CONFIG_PATH;
use super::live::LiveErrorKind;
use crate::engine::live::ProblemKind;
use crate::github::{FileStatus, Permission};

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
            Blocker::PrivateValues { count } => format!(
                "{count} private value{} committed (see fleet/privacy)",
                plural(*count)
            ),
        }
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
    /// Removed specs: their clusters would be destroyed on merge.
    SpecsRemoved { count: usize },
    /// No quota source: the budget was not checked.
    QuotaNotChecked,
    /// Private values in the changed lines: `fleet/privacy` fails on them, `fleet/preflight`
    /// only says so (one leak fails one check).
    PrivateValuesElsewhere { count: usize },
}

impl Caution {
    pub fn reason(&self) -> String {
        match self {
            Caution::SpecsRemoved { count } => format!(
                "{count} fleet spec{} removed: its clusters would be destroyed on merge",
                plural(*count)
            ),
            Caution::QuotaNotChecked => "the quota budget was not checked".into(),
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
        let count = |f: &dyn Fn(&FleetReport) -> bool| fleets.iter().filter(|x| f(x)).count();
        let budget_is = |s: BudgetStatus| {
            move |f: &FleetReport| f.budget.as_ref().is_some_and(|b| b.status == s)
        };
        let invalid = count(&|f| f.status == FleetStatus::Invalid);
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
                fleets: count(&|f| f.plan.as_ref().is_some_and(|p| !p.problems.is_empty())),
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
        let unproven = count(&budget_is(BudgetStatus::Unproven));
        if unproven > 0 {
            blockers.push(Blocker::CapacityUnproven { fleets: unproven });
        }
        if privacy.total > 0 {
            blockers.push(Blocker::PrivateValues {
                count: privacy.total,
            });
        }
        let mut cautions = Vec::new();
        let removed = count(&|f| f.status == FleetStatus::Removed);
        if removed > 0 {
            cautions.push(Caution::SpecsRemoved { count: removed });
        }
        if fleets.iter().any(budget_is(BudgetStatus::NotChecked)) {
            cautions.push(Caution::QuotaNotChecked);
        }
        Outcome {
            spec_changed: !fleets.is_empty(),
            blockers,
            cautions,
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
}

pub(crate) fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// How a file changed in the pull request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FileChange {
    Added,
    Modified,
    Removed,
    /// Renamed (maybe also modified); `from` is the old path.
    Renamed {
        from: String,
    },
}

impl FileChange {
    /// From GitHub's file status.
    pub fn from_github(status: FileStatus, previous: Option<&str>) -> Self {
        match (status, previous) {
            (FileStatus::Added | FileStatus::Copied, _) => FileChange::Added,
            (FileStatus::Removed, _) => FileChange::Removed,
            (FileStatus::Renamed, Some(from)) => FileChange::Renamed {
                from: from.to_string(),
            },
            _ => FileChange::Modified,
        }
    }
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PrReport {
    /// `owner/name`.
    pub repo: String,
    pub number: u64,
    pub head_sha: String,
    pub base_sha: String,
    /// Serialized as `verdict` and `reasons`.
    #[serde(flatten)]
    pub outcome: Outcome,
    pub config: ConfigReport,
    /// One per changed spec file, in path order.
    pub fleets: Vec<FleetReport>,
    pub privacy: PrivacyReport,
    /// One per changed spec file, in path order.
    pub diffs: Vec<SpecDiff>,
    /// Hex SHA-256 over head, base, spec bytes, live plans, engine version and repo config.
    pub digest: String,
    pub commands: Vec<CommandHelp>,
    /// Limits that were hit (file listing cut at 3,000, files not scanned, …).
    pub notes: Vec<String>,
}

impl PrReport {
    /// The first 12 hex digits of the digest, as shown.
    pub fn short_digest(&self) -> &str {
        &self.digest[..self.digest.len().min(12)]
    }

    pub fn verdict(&self) -> Verdict {
        self.outcome.verdict()
    }

    pub fn privacy_verdict(&self) -> PrivacyVerdict {
        if !self.outcome.spec_changed {
            PrivacyVerdict::Skipped
        } else if self.privacy.total == 0 {
            PrivacyVerdict::Clean
        } else {
            PrivacyVerdict::Found
        }
    }
}

/// Which repository config applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConfigReport {
    /// The branch it was read from.
    pub branch: String,
    /// False when the default branch has no `.fleetbot.yml`.
    pub present: bool,
    /// The config's error, when it is invalid (located, public text).
    pub error: Option<String>,
    /// The pull request edits `.fleetbot.yml`: shown in the diff, effective after merge.
    pub changed_in_pr: bool,
}

/// What happened to one fleet spec file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FleetReport {
    pub path: String,
    pub change: FileChange,
    /// The fleet's `name`, when the spec could be read far enough.
    pub name: Option<String>,
    pub status: FleetStatus,
    pub problems: Vec<SpecProblem>,
    pub plan: Option<PlanSummary>,
    pub budget: Option<BudgetReport>,
}

/// Whether the spec is usable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FleetStatus {
    Valid,
    Invalid,
    /// The spec was deleted: the fleet's clusters would be destroyed.
    Removed,
}

/// A spec error at a location.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SpecProblem {
    /// 1-based line; `None` when the error concerns the whole file.
    pub line: Option<u32>,
    pub column: Option<u32>,
    /// The field path (`projects[1].clusters[0].gpu_nodes.count`), empty at the top.
    pub field: String,
    pub message: String,
}

/// What the head spec creates, changes and destroys: from the live plan when the bot reached a
/// cloud (`live_cloud`), else from the static plan compared with the base branch's spec.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlanSummary {
    pub region: String,
    pub projects: usize,
    pub clusters: usize,
    pub mk8s: usize,
    pub soperator: usize,
    pub create: Vec<PlanItem>,
    pub change: Vec<PlanItem>,
    pub destroy: Vec<PlanItem>,
    /// Clusters with nothing to do.
    pub unchanged: usize,
    /// The public name of the cloud the plan was read from; `None` for a static plan.
    pub live_cloud: Option<String>,
    /// Of `unchanged`, clusters that match the spec but are not proven unchanged (no deployed
    /// record in fleetbot's store, or not ready), so the budget still counts them in full.
    pub unproven: usize,
    /// What stops the live plan (ownership, identity, an unreadable cloud); each blocks.
    pub problems: Vec<LiveProblem>,
}

/// One problem of a live plan: its kind, and a public line naming it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LiveProblem {
    pub kind: LiveProblemKind,
    /// Spec names and public fields only: never a tenant, project or resource ID.
    pub text: String,
}

/// Every kind of live-plan problem; each one blocks the pull request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LiveProblemKind {
    /// No tenant is configured, or the spec names another one.
    TenantRefused,
    CloudUnreadable,
    StoreUnreadable,
    /// The engine refused the spec before reading the cloud.
    EngineRefused,
    ProjectNotFound,
    ProjectAmbiguous,
    ProjectIdentity,
    ProjectInactive,
    BucketUnusable,
    NotOwned,
    FilesystemShrink,
    ExistingFilestore,
    SubnetChanged,
}

impl LiveProblemKind {
    pub const ALL: [LiveProblemKind; 13] = [
        LiveProblemKind::TenantRefused,
        LiveProblemKind::CloudUnreadable,
        LiveProblemKind::StoreUnreadable,
        LiveProblemKind::EngineRefused,
        LiveProblemKind::ProjectNotFound,
        LiveProblemKind::ProjectAmbiguous,
        LiveProblemKind::ProjectIdentity,
        LiveProblemKind::ProjectInactive,
        LiveProblemKind::BucketUnusable,
        LiveProblemKind::NotOwned,
        LiveProblemKind::FilesystemShrink,
        LiveProblemKind::ExistingFilestore,
        LiveProblemKind::SubnetChanged,
    ];

    /// A few words for a check run's title and the list of reasons.
    pub fn phrase(self) -> &'static str {
        match self {
            LiveProblemKind::TenantRefused => "tenant not the configured one",
            LiveProblemKind::CloudUnreadable => "cloud unreadable",
            LiveProblemKind::StoreUnreadable => "store unreadable",
            LiveProblemKind::EngineRefused => "spec refused by the engine",
            LiveProblemKind::ProjectNotFound => "pinned project not in the tenant",
            LiveProblemKind::ProjectAmbiguous => "ambiguous project name",
            LiveProblemKind::ProjectIdentity => "project identity mismatch",
            LiveProblemKind::ProjectInactive => "project not active",
            LiveProblemKind::BucketUnusable => "bucket unusable",
            LiveProblemKind::NotOwned => "resource not owned by the fleet",
            LiveProblemKind::FilesystemShrink => "filesystem would shrink",
            LiveProblemKind::ExistingFilestore => "existing_filestore unusable",
            LiveProblemKind::SubnetChanged => "cluster subnet changed",
        }
    }
}

// Exhaustive on purpose: a new kind in the engine does not compile until it is named here.
impl From<ProblemKind> for LiveProblemKind {
    fn from(kind: ProblemKind) -> Self {
        match kind {
            ProblemKind::ProjectNotFound => LiveProblemKind::ProjectNotFound,
            ProblemKind::ProjectAmbiguous => LiveProblemKind::ProjectAmbiguous,
            ProblemKind::ProjectIdentity => LiveProblemKind::ProjectIdentity,
            ProblemKind::ProjectInactive => LiveProblemKind::ProjectInactive,
            ProblemKind::BucketUnusable => LiveProblemKind::BucketUnusable,
            ProblemKind::NotOwned => LiveProblemKind::NotOwned,
            ProblemKind::FilesystemShrink => LiveProblemKind::FilesystemShrink,
            ProblemKind::ExistingFilestore => LiveProblemKind::ExistingFilestore,
            ProblemKind::SubnetChanged => LiveProblemKind::SubnetChanged,
        }
    }
}

impl From<LiveErrorKind> for LiveProblemKind {
    fn from(kind: LiveErrorKind) -> Self {
        match kind {
            LiveErrorKind::Tenant => LiveProblemKind::TenantRefused,
            LiveErrorKind::Cloud => LiveProblemKind::CloudUnreadable,
            LiveErrorKind::Store => LiveProblemKind::StoreUnreadable,
            LiveErrorKind::Engine => LiveProblemKind::EngineRefused,
        }
    }
}

impl PlanSummary {
    /// Whether the plan changes anything.
    pub fn is_noop(&self) -> bool {
        self.create.is_empty() && self.change.is_empty() && self.destroy.is_empty()
    }
}

/// One created, changed or destroyed object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlanItem {
    /// `project`, `cluster`, `bucket`, `network` or `subnet`.
    pub kind: &'static str,
    /// `project/cluster` for clusters, the project's display name otherwise.
    pub name: String,
    /// Public facts (`gpu_nodes: 1 → 2`, `backend: mk8s`).
    pub details: Vec<String>,
}

/// The quota budget of one fleet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BudgetReport {
    pub status: BudgetStatus,
    pub rows: Vec<BudgetLine>,
    /// `quota in region: short by N` lines (and failed capacity blocks).
    pub blocked_by: Vec<String>,
    /// Why the budget stopped or was not checked (public text).
    pub note: Option<String>,
}

/// The budget's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BudgetStatus {
    Fits,
    Short,
    /// Evidence was missing, unreadable or incomplete.
    Unproven,
    /// No quota source is configured for this installation.
    NotChecked,
}

/// One row of the budget table; amounts already formatted with their unit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BudgetLine {
    pub region: String,
    pub quota: String,
    pub needed: String,
    pub in_use: String,
    pub limit: String,
    pub available: String,
    pub after: String,
    /// `fits`, `short`, `unlimited`, `not_quota_controlled`, `not_checked`.
    pub verdict: String,
}

/// Privacy findings as counts, rules, locations and aliases: never values.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PrivacyReport {
    /// Files scanned.
    pub scanned: usize,
    pub total: usize,
    pub by_rule: Vec<RuleCount>,
    pub findings: Vec<PrivacyLocation>,
    /// Files not scanned, with the reason.
    pub skipped: Vec<SkippedFile>,
}

/// How many findings one rule produced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuleCount {
    pub rule: &'static str,
    pub explanation: &'static str,
    pub count: usize,
}

/// Where a private value is. Deliberately has no field for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PrivacyLocation {
    pub path: String,
    pub line: u32,
    pub column: u32,
    pub rule: &'static str,
    pub alias: String,
}

/// A file the privacy guard did not read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkippedFile {
    pub path: String,
    pub reason: String,
}

/// The spec diff of one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SpecDiff {
    pub path: String,
    pub change: FileChange,
    /// Unified diff text; `None` when withheld.
    pub unified: Option<String>,
    /// Why the diff is not shown.
    pub withheld: Option<String>,
}

/// One command for the "commands" section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommandHelp {
    pub name: &'static str,
    pub summary: &'static str,
    /// Least permission, per the repository config.
    pub permission: &'static str,
}

impl CommandHelp {
    /// The help rows for a permission table.
    pub fn all(permission: impl Fn(&str) -> Permission) -> Vec<CommandHelp> {
        crate::bot::commands::CommandKind::ALL
            .iter()
            .map(|k| CommandHelp {
                name: k.name(),
                summary: k.summary(),
                permission: permission(k.name()).as_str(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
                "1 fleet spec removed: its clusters would be destroyed on merge",
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

    #[test]
    fn every_engine_and_live_error_kind_has_a_report_kind() {
        let mapped: BTreeSet<LiveProblemKind> = ProblemKind::ALL
            .into_iter()
            .map(LiveProblemKind::from)
            .chain(
                [
                    LiveErrorKind::Tenant,
                    LiveErrorKind::Cloud,
                    LiveErrorKind::Store,
                    LiveErrorKind::Engine,
                ]
                .map(LiveProblemKind::from),
            )
            .collect();
        assert_eq!(mapped, LiveProblemKind::ALL.into());
    }
}
