//! The privacy scan of a pull request's changed lines, reduced to the report's counts, rules,
//! locations and aliases.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::RangeInclusive;

use super::ChangedFile;
use crate::bot::report::{PrivacyLocation, PrivacyReport, RuleCount, SkippedFile};
use crate::github::FileStatus;
use crate::privacy::diff::added_line_ranges;
use crate::privacy::{FileScan, Finding, PrivacyAllowlist, RuleId, Scanner, ScannerConfig};

/// The scanner for this repository; an unusable allowlist (already reported as a config
/// error) falls back to none, which can only find more.
pub(super) fn scanner(key: &[u8], allowlist: &PrivacyAllowlist) -> Scanner {
    let key = if key.is_empty() {
        b"fleetbot".to_vec()
    } else {
        key.to_vec()
    };
    Scanner::new(ScannerConfig {
        key: key.clone(),
        allowlist: allowlist.clone(),
    })
    .or_else(|_| {
        Scanner::new(ScannerConfig {
            key,
            allowlist: PrivacyAllowlist::default(),
        })
    })
    .expect("a non-empty key and an empty allowlist always build")
}

#[derive(Default)]
pub(super) struct PrivacyScan {
    scanned: usize,
    findings: Vec<Finding>,
    skipped: Vec<SkippedFile>,
}

impl PrivacyScan {
    pub(super) fn report(&self) -> PrivacyReport {
        PrivacyReport {
            scanned: self.scanned,
            total: self.findings.len(),
            by_rule: self.by_rule(),
            findings: self
                .findings
                .iter()
                .map(|f| PrivacyLocation {
                    path: f.path.clone(),
                    line: f.line,
                    column: f.column,
                    rule: f.rule,
                    alias: f.alias.clone(),
                })
                .collect(),
            skipped: self.skipped.clone(),
            unread: self.skipped.iter().filter(|s| s.unread).count(),
            listing_cut: false,
        }
    }

    /// Findings per rule, in the rules' reporting order.
    fn by_rule(&self) -> Vec<RuleCount> {
        let mut by_rule: BTreeMap<RuleId, usize> = BTreeMap::new();
        for f in &self.findings {
            *by_rule.entry(f.rule).or_default() += 1;
        }
        RuleId::ALL
            .iter()
            .filter_map(|r| {
                by_rule.get(r).map(|&count| RuleCount {
                    rule: *r,
                    explanation: r.explanation(),
                    count,
                })
            })
            .collect()
    }

    fn skip(&mut self, file: &ChangedFile, reason: String, unread: bool) {
        self.skipped.push(SkippedFile {
            path: file.path.clone(),
            reason,
            unread,
        });
    }
}

/// Scans the added lines of every changed file (the whole file when GitHub gave no patch).
pub(super) fn scan_changed_files(scanner: &Scanner, files: &[ChangedFile]) -> PrivacyScan {
    let mut scan = PrivacyScan::default();
    let mut sorted: Vec<&ChangedFile> = files.iter().collect();
    sorted.sort_by(|a, b| a.path.cmp(&b.path));
    for file in sorted {
        if file.status == FileStatus::Removed {
            continue;
        }
        let Some(content) = &file.head else {
            let reason = file
                .not_fetched
                .as_deref()
                .unwrap_or("content not available");
            scan.skip(file, reason.to_string(), true);
            continue;
        };
        let ranges: Option<Vec<RangeInclusive<u32>>> = file.patch.as_deref().map(added_line_ranges);
        match scanner.scan_text(&file.path, content, ranges.as_deref()) {
            FileScan::Findings(found) => {
                scan.scanned += 1;
                scan.findings.extend(found);
            }
            FileScan::Skipped { reason } => scan.skip(file, reason.note().to_string(), false),
        }
    }
    scan.findings.sort_by(|a, b| {
        (&a.path, a.line, a.column, a.rule).cmp(&(&b.path, b.line, b.column, b.rule))
    });
    scan
}

/// Lines of `content` that hold a private value anywhere (not only on added lines).
pub(super) fn private_lines(scanner: &Scanner, path: &str, content: &[u8]) -> BTreeSet<u32> {
    scanner
        .scan_text(path, content, None)
        .findings()
        .iter()
        .map(|f| f.line)
        .collect()
}
