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

pub mod apply;
mod budget;
pub mod drift;
mod outcome;
mod plan;
mod privacy;
pub mod verify;
pub mod verify_mig;

use serde::Serialize;

use crate::github::{FileStatus, Permission};

pub use budget::{BudgetLine, BudgetReport, BudgetStatus};
pub use outcome::{Blocker, Caution, Outcome, PrivacyVerdict, Verdict, unscanned};
pub use plan::{LiveProblem, LiveProblemKind, PlanItem, PlanSummary};
pub use privacy::{PrivacyLocation, PrivacyReport, RuleCount, SkippedFile};

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

pub(crate) fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
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
        } else if self.privacy.total > 0 {
            PrivacyVerdict::Found
        } else if self.privacy.incomplete() {
            PrivacyVerdict::Incomplete
        } else {
            PrivacyVerdict::Clean
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
    /// The spec was deleted. Nothing is deleted with it: tearing the fleet down is
    /// `fleetbot destroy`'s, asked for explicitly.
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

/// The spec diff of one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SpecDiff {
    pub path: String,
    pub change: FileChange,
    /// Unified diff text; `None` when withheld.
    pub unified: Option<String>,
    /// Why the diff is not shown.
    pub withheld: Option<DiffWithheld>,
}

/// Why a spec diff is not shown; the templates word each reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DiffWithheld {
    /// The file holds a private value (the privacy check says which line).
    HoldsPrivate,
    /// The file is not UTF-8 text, or its head content was not fetched.
    NotText,
    /// A side is past the diff's size cap, or the diff ran out of time: two large unlike specs
    /// cost lines × differences to diff, and a worker must not be pinned by one.
    TooLarge,
}

/// One note of a command reply: a line, and the lines listed under it (a cluster each, a
/// deletion each). Kept apart rather than joined by line breaks, so a line break inside a
/// name cannot add an item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReplyNote {
    pub line: String,
    pub items: Vec<String>,
}

impl From<String> for ReplyNote {
    fn from(line: String) -> Self {
        ReplyNote {
            line,
            items: Vec::new(),
        }
    }
}

impl From<&str> for ReplyNote {
    fn from(line: &str) -> Self {
        line.to_string().into()
    }
}

/// One command for the "commands" section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommandHelp {
    pub name: &'static str,
    pub summary: &'static str,
    /// Least permission, per the repository config.
    pub permission: Permission,
}

impl CommandHelp {
    /// The help rows for a permission table.
    pub fn all(permission: impl Fn(&str) -> Permission) -> Vec<CommandHelp> {
        crate::bot::commands::CommandKind::ALL
            .iter()
            .map(|k| CommandHelp {
                name: k.name(),
                summary: k.summary(),
                permission: permission(k.name()),
            })
            .collect()
    }
}
