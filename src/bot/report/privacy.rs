//! What the report shows of the privacy scan: counts, rules, locations and aliases, never a
//! value.

use serde::Serialize;

use crate::privacy::RuleId;

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
    /// Changed files whose content could not be read (too many, too large, missing), and
    /// whether GitHub's file listing was cut short: either leaves the scan incomplete, which
    /// is never a pass.
    pub unread: usize,
    pub listing_cut: bool,
}

impl PrivacyReport {
    /// Whether some changed line may not have been read.
    pub fn incomplete(&self) -> bool {
        self.unread > 0 || self.listing_cut
    }
}

/// How many findings one rule produced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuleCount {
    pub rule: RuleId,
    pub explanation: &'static str,
    pub count: usize,
}

/// Where a private value is. Deliberately has no field for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PrivacyLocation {
    pub path: String,
    pub line: u32,
    pub column: u32,
    pub rule: RuleId,
    pub alias: String,
}

/// A file the privacy guard did not read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkippedFile {
    pub path: String,
    pub reason: String,
    /// The content was not read at all (as opposed to a binary or allowlisted file, which is
    /// skipped by design).
    pub unread: bool,
}
