//! The pull-request preflight as a pure function: changed files and their contents at head and
//! base, plus the repository config, in; the public report, the two check runs and the sticky
//! comment out.
//!
//! [`evaluate_pull_request`] does no IO, so every rule here is unit-tested and the GitHub side
//! ([`super::jobs`]) only fetches inputs and publishes outputs. When the bot reaches a cloud,
//! the job reads each spec's live plan and the tenant's quota evidence first
//! ([`crate::fleet::live`]); the plan shown is then the live one and unchanged targets add no demand.
//! Without a cloud the plan is the static plan of the head spec compared with the base spec,
//! and the budget uses whatever quota evidence the caller supplies (or is not checked).

mod budget;
mod checks;
mod cluster_fields;
mod diff;
mod digest;
mod identity;
mod live_summary;
mod scan;
mod spec;
mod static_summary;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use super::config::{CONFIG_PATH, ConfigSource, LoadedConfig, SpecMatcher};
use super::render;
use super::report::{CommandHelp, ConfigReport, Outcome, PrReport};
use crate::fleet::live::LiveSpec;
use crate::github::{CheckRunPayload, FileStatus, PrFile};
use crate::quota::evidence::QuotaEvidence;

/// The privacy check's name (stable: branch protection requires it by name).
pub const PRIVACY_CHECK: &str = "fleet/privacy";
/// The preflight check's name.
pub const PREFLIGHT_CHECK: &str = "fleet/preflight";

/// One changed file with what the handler fetched for it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChangedFile {
    pub path: String,
    /// GitHub's status: added, modified, removed, renamed, …
    pub status: FileStatus,
    pub previous_path: Option<String>,
    /// The diff hunks GitHub gave; `None` for binary or oversized changes.
    pub patch: Option<String>,
    /// Content at the head commit; `None` when removed or not fetched.
    pub head: Option<Vec<u8>>,
    /// Content at the base commit (of `previous_path` for a rename); fetched for specs only.
    pub base: Option<Vec<u8>>,
    /// Why the head content was not fetched, when it was not (too large, too many files).
    pub not_fetched: Option<String>,
}

impl ChangedFile {
    /// The file as listed, before any content is fetched.
    pub fn listed(file: &PrFile) -> Self {
        ChangedFile {
            path: file.filename.clone(),
            status: file.status,
            previous_path: file.previous_filename.clone(),
            patch: file.patch.clone(),
            ..ChangedFile::default()
        }
    }

    /// Whether the file is a fleet spec, under its new path or (for a rename) its old one.
    pub fn is_spec(&self, matcher: &SpecMatcher) -> bool {
        matcher.matches(&self.path)
            || self
                .previous_path
                .as_deref()
                .is_some_and(|p| matcher.matches(p))
    }

    /// Where the file was at the base commit.
    pub fn base_path(&self) -> &str {
        self.previous_path.as_deref().unwrap_or(&self.path)
    }
}

/// A spec file of the repository at the head commit that the pull request did not change:
/// read only to hold the changed specs to one fleet, one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtherSpec {
    pub path: String,
    pub content: Vec<u8>,
}

/// Where the quota budget comes from.
pub struct QuotaInput<'a> {
    /// The tenant whose allowances apply (never shown).
    pub tenant_id: &'a str,
    pub evidence: &'a dyn QuotaEvidence,
}

/// Everything the preflight of one pull-request head needs.
pub struct PrInput<'a> {
    /// `owner/name`.
    pub repo: &'a str,
    pub number: u64,
    pub head_sha: &'a str,
    pub base_sha: &'a str,
    pub files: &'a [ChangedFile],
    /// The file listing hit GitHub's 3,000-file ceiling.
    pub files_truncated: bool,
    pub config: &'a LoadedConfig,
    /// Key for privacy aliases (per installation).
    pub alias_key: &'a [u8],
    /// `None`: no quota source; the budget is reported as not checked.
    pub quota: Option<QuotaInput<'a>>,
    /// What the cloud said about each changed spec, by path (empty without a cloud). A spec
    /// found here is planned live and budgeted against the live evidence; `quota` is then
    /// not used for it.
    pub live: &'a BTreeMap<String, LiveSpec>,
    /// The server's runtime values (`FLEETBOT_RUNTIME_VALUES`), never from the change.
    pub runtime: Option<&'a crate::runtime::RuntimeValues>,
    /// The repository's other spec files at the head commit.
    pub others: &'a [OtherSpec],
    /// Why `others` is not every other spec file, when it is not.
    pub others_unread: Option<&'a str>,
}

/// What to publish.
#[derive(Debug, Clone, PartialEq)]
pub struct PrOutcome {
    pub report: PrReport,
    pub privacy: CheckRunPayload,
    pub preflight: CheckRunPayload,
    /// `fleet/policy`, when the repository names policies (`policy:` in `.fleetbot.yml`).
    pub policy: Option<CheckRunPayload>,
    /// The sticky comment's body, marker included. When no spec changed, publish it only to
    /// update an existing comment, never to create one.
    pub comment: String,
}

impl PrOutcome {
    /// The check runs to publish: privacy, preflight, and policy when configured.
    pub fn checks(&self) -> Vec<&CheckRunPayload> {
        [&self.privacy, &self.preflight]
            .into_iter()
            .chain(self.policy.as_ref())
            .collect()
    }
}

/// Runs the whole preflight. Never fails: every problem becomes part of the report.
pub fn evaluate_pull_request(input: &PrInput<'_>) -> PrOutcome {
    let config = &input.config.config;
    let specs = changed_specs(input.files, &config.spec_matcher());
    let scanner = scan::scanner(input.alias_key, &config.privacy);
    let privacy = if specs.is_empty() {
        scan::PrivacyScan::default()
    } else {
        scan::scan_changed_files(&scanner, input.files)
    };
    let (mut fleets, diffs): (Vec<_>, Vec<_>) = specs
        .iter()
        .map(|file| {
            let live = input.live.get(&file.path);
            spec::evaluate_spec(file, &scanner, input.quota.as_ref(), live, input.runtime)
        })
        .unzip();
    identity::one_fleet_one_file(
        &mut fleets,
        &specs,
        input.others,
        input.others_unread,
        input.runtime,
    );
    let config_report = config_report(input);
    let mut privacy = privacy.report();
    // Files GitHub did not list were not scanned either (only when anything was scanned).
    privacy.listing_cut = input.files_truncated && !specs.is_empty();
    let report = PrReport {
        repo: input.repo.to_string(),
        number: input.number,
        head_sha: input.head_sha.to_string(),
        base_sha: input.base_sha.to_string(),
        outcome: Outcome::decide(&config_report, &privacy, &fleets),
        config: config_report,
        fleets,
        privacy,
        diffs,
        digest: digest::digest(input, &specs),
        commands: CommandHelp::all(|name| config.required_permission(name)),
        notes: notes(input),
    };
    PrOutcome {
        privacy: checks::privacy_check(&report, &scanner),
        preflight: checks::preflight_check(&report, &scanner),
        comment: render::render_comment(&report, &scanner),
        policy: None,
        report,
    }
}

/// The scanner that redacts what the bot renders outside a preflight (apply reports): the
/// installation's alias key and no allowlist, so it can only redact more.
pub fn output_scanner(alias_key: &[u8]) -> crate::privacy::Scanner {
    scan::scanner(alias_key, &crate::privacy::PrivacyAllowlist::default())
}

/// The changed fleet specs, in path order.
fn changed_specs<'a>(files: &'a [ChangedFile], matcher: &SpecMatcher) -> Vec<&'a ChangedFile> {
    let mut specs: Vec<&ChangedFile> = files.iter().filter(|f| f.is_spec(matcher)).collect();
    specs.sort_by(|a, b| a.path.cmp(&b.path));
    specs
}

fn config_report(input: &PrInput<'_>) -> ConfigReport {
    let loaded = input.config;
    ConfigReport {
        branch: loaded.branch().to_string(),
        present: matches!(loaded.source, ConfigSource::DefaultBranch { .. }),
        error: loaded.error.as_ref().map(|e| e.to_string()),
        changed_in_pr: input.files.iter().any(|f| f.path == CONFIG_PATH),
    }
}

/// Limits that were hit, for the reader.
fn notes(input: &PrInput<'_>) -> Vec<String> {
    let mut notes = Vec::new();
    if input.files_truncated {
        notes.push(format!(
            "GitHub lists at most {} changed files; files beyond that were not checked.",
            crate::github::client::MAX_PR_FILES
        ));
    }
    notes
}

/// The tenant never reaches the report, even inside an engine or quota message.
fn scrub_tenant(text: &str, tenant_id: &str) -> String {
    if tenant_id.is_empty() {
        text.to_string()
    } else {
        text.replace(tenant_id, "(tenant)")
    }
}
