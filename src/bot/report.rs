//! The public report of a pull request: everything the comment and the check runs may show.
//!
//! These structs are the only input of the templates. They hold counts, rule ids, locations,
//! keyed aliases, display names and public plan fields, and never a private value: the static
//! plan is publishable by construction, project IDs and tenants are left out, spec errors on a
//! line that holds a private value lose their quoted text, and diffs of files holding one are
//! withheld. A redaction pass over the rendered text ([`super::render`]) is a second layer only.

use serde::Serialize;

use crate::github::Permission;

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
    /// From GitHub's file `status`.
    pub fn from_github(status: &str, previous: Option<&str>) -> Self {
        match (status, previous) {
            ("added", _) | ("copied", _) => FileChange::Added,
            ("removed", _) => FileChange::Removed,
            ("renamed", Some(from)) => FileChange::Renamed {
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
    pub verdict: Verdict,
    /// Why the verdict is what it is, one short line each (public text only).
    pub reasons: Vec<String>,
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
    pub problems: Vec<String>,
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
