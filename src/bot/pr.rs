//! The pull-request preflight as a pure function: changed files and their contents at head and
//! base, plus the repository config, in; the public report, the two check runs and the sticky
//! comment out.
//!
//! [`evaluate_pull_request`] does no IO, so every rule here is unit-tested and the GitHub side
//! ([`super::handler`]) only fetches inputs and publishes outputs. When the bot reaches a
//! cloud, the handler reads each spec's live plan and the tenant's quota evidence first
//! ([`super::live`]); the plan shown is then the live one and unchanged targets add no demand.
//! Without a cloud the plan is the static plan of the head spec compared with the base spec,
//! and the budget uses whatever quota evidence the caller supplies (or is not checked).

use std::collections::{BTreeMap, BTreeSet};
use std::ops::RangeInclusive;

use sha2::{Digest, Sha256};
use similar::TextDiff;

use super::config::{CONFIG_PATH, LoadedConfig};
use super::live::LiveSpec;
use super::render;
use super::report::*;
use crate::engine::live::Action;
use crate::engine::static_plan::{ClusterPlan, ObjectStoragePlan};
use crate::engine::{FleetPlan, PlanOptions, plan};
use crate::github::{
    Annotation, AnnotationLevel, CheckConclusion, CheckOutput, CheckRunPayload, FileStatus,
};
use crate::privacy::diff::added_line_ranges;
use crate::privacy::{FileScan, Finding, PrivacyAllowlist, RuleId, Scanner, ScannerConfig};
use crate::quota::evidence::QuotaEvidence;
use crate::quota::render::format_amount;
use crate::quota::scope::{ProvenState, ScopeOptions, fleet_demand};
use crate::quota::{PreflightReport, Verdict as QuotaVerdict, run_preflight};
use crate::spec::{FleetSpec, load_str};

/// The privacy check's name (stable: branch protection requires it by name).
pub const PRIVACY_CHECK: &str = "fleet/privacy";
/// The preflight check's name.
pub const PREFLIGHT_CHECK: &str = "fleet/preflight";
/// Unified diffs longer than this are cut (the comment has a size budget).
const MAX_DIFF_CHARS: usize = 20_000;

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
}

/// What to publish.
#[derive(Debug, Clone, PartialEq)]
pub struct PrOutcome {
    pub report: PrReport,
    pub privacy: CheckRunPayload,
    pub preflight: CheckRunPayload,
    /// The sticky comment's body, marker included. When no spec changed, publish it only to
    /// update an existing comment, never to create one.
    pub comment: String,
}

/// Runs the whole preflight. Never fails: every problem becomes part of the report.
pub fn evaluate_pull_request(input: &PrInput<'_>) -> PrOutcome {
    let loaded = input.config;
    let config = &loaded.config;
    let matcher = config.spec_matcher();
    let mut specs: Vec<&ChangedFile> = input
        .files
        .iter()
        .filter(|f| {
            matcher.matches(&f.path)
                || f.previous_path
                    .as_deref()
                    .is_some_and(|p| matcher.matches(p))
        })
        .collect();
    specs.sort_by(|a, b| a.path.cmp(&b.path));
    let config_report = ConfigReport {
        branch: match &loaded.source {
            super::config::ConfigSource::Defaults { branch }
            | super::config::ConfigSource::DefaultBranch { branch } => branch.clone(),
        },
        present: matches!(
            loaded.source,
            super::config::ConfigSource::DefaultBranch { .. }
        ),
        error: loaded.error.as_ref().map(|e| e.to_string()),
        changed_in_pr: input.files.iter().any(|f| f.path == CONFIG_PATH),
    };
    let scanner = scanner(input.alias_key, &config.privacy);
    let commands = CommandHelp::all(|name| config.required_permission(name));
    let mut notes = Vec::new();
    if input.files_truncated {
        notes.push(format!(
            "GitHub lists at most {} changed files; files beyond that were not checked.",
            crate::github::client::MAX_PR_FILES
        ));
    }

    let spec_changed = !specs.is_empty();
    let privacy = if spec_changed {
        scan_changed_files(&scanner, input.files)
    } else {
        PrivacyScan::default()
    };
    let mut fleets = Vec::new();
    let mut diffs = Vec::new();
    for file in &specs {
        let live = input.live.get(&file.path);
        let (fleet, diff) = evaluate_spec(file, &scanner, input.quota.as_ref(), live);
        fleets.push(fleet);
        diffs.push(diff);
    }

    let privacy_report = privacy.report();
    let outcome = Outcome::decide(&config_report, &privacy_report, &fleets);
    let digest = digest(input, &specs);
    let report = PrReport {
        repo: input.repo.to_string(),
        number: input.number,
        head_sha: input.head_sha.to_string(),
        base_sha: input.base_sha.to_string(),
        outcome,
        config: config_report,
        fleets,
        privacy: privacy_report,
        diffs,
        digest,
        commands,
        notes,
    };
    let privacy_check = privacy_check(&report, &scanner);
    let preflight_check = preflight_check(&report, &scanner);
    let comment = render::render_comment(&report, &scanner);
    PrOutcome {
        report,
        privacy: privacy_check,
        preflight: preflight_check,
        comment,
    }
}

/// The scanner for this repository; an unusable allowlist (already reported as a config
/// error) falls back to none, which can only find more.
fn scanner(key: &[u8], allowlist: &PrivacyAllowlist) -> Scanner {
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
struct PrivacyScan {
    scanned: usize,
    findings: Vec<Finding>,
    skipped: Vec<SkippedFile>,
}

impl PrivacyScan {
    fn report(&self) -> PrivacyReport {
        let mut by_rule: BTreeMap<RuleId, usize> = BTreeMap::new();
        for f in &self.findings {
            *by_rule.entry(f.rule).or_default() += 1;
        }
        PrivacyReport {
            scanned: self.scanned,
            total: self.findings.len(),
            by_rule: RuleId::ALL
                .iter()
                .filter_map(|r| {
                    by_rule.get(r).map(|&count| RuleCount {
                        rule: r.as_str(),
                        explanation: r.explanation(),
                        count,
                    })
                })
                .collect(),
            findings: self
                .findings
                .iter()
                .map(|f| PrivacyLocation {
                    path: f.path.clone(),
                    line: f.line,
                    column: f.column,
                    rule: f.rule.as_str(),
                    alias: f.alias.clone(),
                })
                .collect(),
            skipped: self.skipped.clone(),
        }
    }
}

/// Scans the added lines of every changed file (the whole file when GitHub gave no patch).
fn scan_changed_files(scanner: &Scanner, files: &[ChangedFile]) -> PrivacyScan {
    let mut scan = PrivacyScan::default();
    let mut sorted: Vec<&ChangedFile> = files.iter().collect();
    sorted.sort_by(|a, b| a.path.cmp(&b.path));
    for file in sorted {
        if file.status == FileStatus::Removed {
            continue;
        }
        let Some(content) = &file.head else {
            scan.skipped.push(SkippedFile {
                path: file.path.clone(),
                reason: file
                    .not_fetched
                    .clone()
                    .unwrap_or_else(|| "content not available".to_string()),
            });
            continue;
        };
        let ranges: Option<Vec<RangeInclusive<u32>>> = file.patch.as_deref().map(added_line_ranges);
        match scanner.scan_text(&file.path, content, ranges.as_deref()) {
            FileScan::Findings(found) => {
                scan.scanned += 1;
                scan.findings.extend(found);
            }
            FileScan::Skipped { reason } => scan.skipped.push(SkippedFile {
                path: file.path.clone(),
                reason: reason.note().to_string(),
            }),
        }
    }
    scan.findings.sort_by(|a, b| {
        (&a.path, a.line, a.column, a.rule).cmp(&(&b.path, b.line, b.column, b.rule))
    });
    scan
}

/// Lines of `content` that hold a private value anywhere (not only on added lines).
fn private_lines(scanner: &Scanner, path: &str, content: &[u8]) -> BTreeSet<u32> {
    scanner
        .scan_text(path, content, None)
        .findings()
        .iter()
        .map(|f| f.line)
        .collect()
}

fn evaluate_spec(
    file: &ChangedFile,
    scanner: &Scanner,
    quota: Option<&QuotaInput<'_>>,
    live: Option<&LiveSpec>,
) -> (FleetReport, SpecDiff) {
    let change = FileChange::from_github(file.status, file.previous_path.as_deref());
    let base_path = file.previous_path.as_deref().unwrap_or(&file.path);
    let head_private = file
        .head
        .as_deref()
        .map(|c| private_lines(scanner, &file.path, c))
        .unwrap_or_default();
    let base_private = file
        .base
        .as_deref()
        .map(|c| private_lines(scanner, base_path, c))
        .unwrap_or_default();
    let base_spec = file
        .base
        .as_deref()
        .and_then(|b| std::str::from_utf8(b).ok())
        .and_then(|text| load_str(text, base_path).ok());
    let base_plan = base_spec.as_ref().map(|s| plan(s, &PlanOptions::default()));

    let diff = spec_diff(
        file,
        &change,
        !head_private.is_empty() || !base_private.is_empty(),
    );

    let mut report = FleetReport {
        path: file.path.clone(),
        change: change.clone(),
        name: None,
        status: FleetStatus::Valid,
        problems: Vec::new(),
        plan: None,
        budget: None,
    };
    if file.status == FileStatus::Removed {
        report.status = FleetStatus::Removed;
        report.name = base_spec.as_ref().map(|s| s.name.clone());
        report.plan = base_plan.as_ref().map(|b| summarize(None, Some(b)));
        return (report, diff);
    }
    let Some(content) = &file.head else {
        report.status = FleetStatus::Invalid;
        report.problems.push(SpecProblem {
            line: None,
            column: None,
            field: String::new(),
            message: format!(
                "the spec could not be read: {}",
                file.not_fetched
                    .as_deref()
                    .unwrap_or("content not available")
            ),
        });
        return (report, diff);
    };
    let Ok(text) = std::str::from_utf8(content) else {
        report.status = FleetStatus::Invalid;
        report.problems.push(SpecProblem {
            line: None,
            column: None,
            field: String::new(),
            message: "the file is not valid UTF-8".into(),
        });
        return (report, diff);
    };
    match load_str(text, &file.path) {
        Ok(spec) => {
            report.name = Some(spec.name.clone());
            let head_plan = plan(&spec, &PlanOptions::default());
            let mut summary = summarize(Some(&head_plan), base_plan.as_ref());
            match live {
                Some(live) => {
                    apply_live(&mut summary, &head_plan, &spec, live);
                    report.budget = Some(live_budget(&spec, live));
                }
                None => report.budget = Some(budget(&spec, quota)),
            }
            report.plan = Some(summary);
        }
        Err(e) => {
            report.status = FleetStatus::Invalid;
            report.name = spec_name(text);
            let line = e.pos.map(|p| p.line);
            let private_here = line.is_some_and(|l| head_private.contains(&l));
            report.problems.push(SpecProblem {
                line,
                column: e.pos.map(|p| p.col),
                field: e.path.clone(),
                message: if private_here {
                    without_quoted_text(&e.message)
                } else {
                    e.message.clone()
                },
            });
        }
    }
    (report, diff)
}

/// The `name:` of a spec that does not load, when a plain read can find it.
fn spec_name(text: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let v = l.strip_prefix("name:")?.trim().trim_matches(['"', '\'']);
        let ok = !v.is_empty()
            && v.len() <= 64
            && v.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        ok.then(|| v.to_string())
    })
}

/// A spec error message with quoted values replaced, for lines that hold a private value.
fn without_quoted_text(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut chars = message.chars();
    while let Some(c) = chars.next() {
        if c == '"' || c == '\'' {
            for d in chars.by_ref() {
                if d == c {
                    break;
                }
            }
            out.push_str("(value withheld)");
        } else {
            out.push(c);
        }
    }
    out
}

fn spec_diff(file: &ChangedFile, change: &FileChange, holds_private: bool) -> SpecDiff {
    let mut diff = SpecDiff {
        path: file.path.clone(),
        change: change.clone(),
        unified: None,
        withheld: None,
    };
    if holds_private {
        diff.withheld = Some(
            "this file holds a private value (see fleet/privacy), so its diff is not shown".into(),
        );
        return diff;
    }
    let text = |b: &Option<Vec<u8>>| match b {
        None => Some(String::new()),
        Some(bytes) => String::from_utf8(bytes.clone()).ok(),
    };
    let head = if file.status == FileStatus::Removed {
        Some(String::new())
    } else if file.head.is_none() {
        None
    } else {
        text(&file.head)
    };
    let (Some(old), Some(new)) = (text(&file.base), head) else {
        diff.withheld = Some("the file is not text, or could not be read".into());
        return diff;
    };
    let base_path = file.previous_path.as_deref().unwrap_or(&file.path);
    let mut unified = TextDiff::from_lines(&old, &new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{base_path}"), &format!("b/{}", file.path))
        .to_string();
    if unified.chars().count() > MAX_DIFF_CHARS {
        let cut: String = unified.chars().take(MAX_DIFF_CHARS).collect();
        let cut = cut
            .rsplit_once('\n')
            .map_or(cut.clone(), |(a, _)| a.to_string());
        unified = format!("{cut}\n… (diff cut at {MAX_DIFF_CHARS} characters)\n");
    }
    diff.unified = Some(unified);
    diff
}

/// Static plans keyed for comparison: projects by display label, clusters by project/cluster.
struct PlanIndex {
    projects: BTreeMap<String, bool>,
    buckets: BTreeMap<String, String>,
    clusters: BTreeMap<String, serde_json::Value>,
}

fn project_label(index: usize, project: &crate::engine::static_plan::ProjectPlan) -> String {
    // Project IDs are private by rule: a project given by ID alone (whose display name is
    // then its ID) shows by position only.
    match &project.display_name {
        Some(name) if project.project_id.as_ref() != Some(name) => name.clone(),
        _ => format!("existing project #{}", index + 1),
    }
}

fn index_plan(p: &FleetPlan) -> PlanIndex {
    let mut idx = PlanIndex {
        projects: BTreeMap::new(),
        buckets: BTreeMap::new(),
        clusters: BTreeMap::new(),
    };
    for (i, project) in p.projects.iter().enumerate() {
        let label = project_label(i, project);
        idx.projects.insert(label.clone(), project.will_create);
        if let ObjectStoragePlan::Enabled {
            storage_class,
            size_gibibytes,
            ..
        } = &project.object_storage
        {
            idx.buckets.insert(
                label.clone(),
                format!("{storage_class}, {size_gibibytes} GiB"),
            );
        }
        for cluster in &project.clusters {
            let (name, value) = match cluster {
                ClusterPlan::Mk8s(c) => (c.name.clone(), serde_json::to_value(c)),
                ClusterPlan::Soperator(c) => (c.name.clone(), serde_json::to_value(c)),
            };
            idx.clusters
                .insert(format!("{label}/{name}"), value.unwrap_or_default());
        }
    }
    idx
}

fn cluster_facts(value: &serde_json::Value) -> Vec<String> {
    let get = |k: &str| value.get(k).map(short_value).unwrap_or_default();
    if value.get("backend").and_then(|b| b.as_str()) == Some("soperator") {
        let workers: i64 = value["workers"]
            .as_array()
            .map(|w| w.iter().filter_map(|x| x["size"].as_i64()).sum())
            .unwrap_or(0);
        return vec!["backend: soperator".into(), format!("workers: {workers}")];
    }
    vec![
        format!("cpu: {} × {}", get("cpu_nodes"), get("cpu_preset")),
        format!(
            "gpu: {} × {} {}",
            get("gpu_nodes"),
            get("gpu_platform"),
            get("gpu_preset")
        ),
    ]
}

fn short_value(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => "none".into(),
        other => {
            let s = other.to_string();
            if s.chars().count() > 60 {
                format!("{}…", s.chars().take(60).collect::<String>())
            } else {
                s
            }
        }
    }
}

/// Field-level differences between two cluster plans.
fn changed_fields(old: &serde_json::Value, new: &serde_json::Value) -> Vec<String> {
    let empty = serde_json::Map::new();
    let (o, n) = (
        old.as_object().unwrap_or(&empty),
        new.as_object().unwrap_or(&empty),
    );
    let keys: BTreeSet<&String> = o.keys().chain(n.keys()).collect();
    let null = serde_json::Value::Null;
    keys.into_iter()
        .filter_map(|k| {
            let (a, b) = (o.get(k).unwrap_or(&null), n.get(k).unwrap_or(&null));
            (a != b).then(|| format!("{k}: {} → {}", short_value(a), short_value(b)))
        })
        .collect()
}

fn summarize(head: Option<&FleetPlan>, base: Option<&FleetPlan>) -> PlanSummary {
    let empty = PlanIndex {
        projects: BTreeMap::new(),
        buckets: BTreeMap::new(),
        clusters: BTreeMap::new(),
    };
    let new = head.map(index_plan).unwrap_or_else(|| PlanIndex {
        projects: BTreeMap::new(),
        buckets: BTreeMap::new(),
        clusters: BTreeMap::new(),
    });
    let old = base.map(index_plan).unwrap_or(empty);
    let shown = head.or(base);
    let mut summary = PlanSummary {
        region: shown.map(|p| p.region.clone()).unwrap_or_default(),
        projects: shown.map_or(0, |p| p.project_count),
        clusters: shown.map_or(0, |p| p.cluster_count),
        mk8s: shown.map_or(0, |p| p.backend_counts.mk8s),
        soperator: shown.map_or(0, |p| p.backend_counts.soperator),
        create: Vec::new(),
        change: Vec::new(),
        destroy: Vec::new(),
        unchanged: 0,
        live_cloud: None,
        unproven: 0,
        problems: Vec::new(),
    };
    for (label, will_create) in &new.projects {
        if !old.projects.contains_key(label) && *will_create {
            summary.create.push(PlanItem {
                kind: "project",
                name: label.clone(),
                details: vec!["created on deploy if missing".into()],
            });
        }
    }
    for (label, shape) in &new.buckets {
        match old.buckets.get(label) {
            None => summary.create.push(PlanItem {
                kind: "bucket",
                name: label.clone(),
                details: vec![shape.clone()],
            }),
            Some(before) if before != shape => summary.change.push(PlanItem {
                kind: "bucket",
                name: label.clone(),
                details: vec![format!("{before} → {shape}")],
            }),
            Some(_) => {}
        }
    }
    for (key, value) in &new.clusters {
        match old.clusters.get(key) {
            None => summary.create.push(PlanItem {
                kind: "cluster",
                name: key.clone(),
                details: cluster_facts(value),
            }),
            Some(before) if before != value => summary.change.push(PlanItem {
                kind: "cluster",
                name: key.clone(),
                details: changed_fields(before, value),
            }),
            Some(_) => summary.unchanged += 1,
        }
    }
    for (key, value) in &old.clusters {
        if !new.clusters.contains_key(key) {
            summary.destroy.push(PlanItem {
                kind: "cluster",
                name: key.clone(),
                details: cluster_facts(value),
            });
        }
    }
    for (label, shape) in &old.buckets {
        if !new.buckets.contains_key(label) {
            summary.destroy.push(PlanItem {
                kind: "bucket",
                name: label.clone(),
                details: vec![format!("{shape} (retained on destroy per spec)")],
            });
        }
    }
    summary
}

/// Replaces the static create/change rows of what the live plan covers with what the cloud
/// actually needs, and records the live plan's problems. Names are the spec's public labels:
/// never a project ID, a bucket name or a resource ID from the cloud.
fn apply_live(summary: &mut PlanSummary, head: &FleetPlan, spec: &FleetSpec, live: &LiveSpec) {
    let planned = match &live.plan {
        Ok(Some(planned)) => planned,
        // Nothing the API engine plans (soperator only): the static plan stands.
        Ok(None) => return,
        Err(e) => {
            summary.problems.push(LiveProblem {
                kind: e.kind.into(),
                text: scrub_tenant(
                    &format!("the live plan could not be made: {e}"),
                    &live.tenant_id,
                ),
            });
            return;
        }
    };
    summary.live_cloud = Some(live.cloud.clone());
    let labels: Vec<String> = head
        .projects
        .iter()
        .enumerate()
        .map(|(i, p)| project_label(i, p))
        .collect();
    let facts = index_plan(head);
    let covered_projects: BTreeSet<&str> = planned
        .project_index
        .iter()
        .filter_map(|&i| labels.get(i).map(String::as_str))
        .collect();
    let target_name = |&(p, c): &(usize, usize)| {
        format!(
            "{}/{}",
            labels.get(p).map_or("?", String::as_str),
            spec.projects[p].clusters[c].name
        )
    };
    let covered_targets: BTreeSet<String> = planned.target_index.iter().map(target_name).collect();
    let covered = |item: &PlanItem| match item.kind {
        "cluster" => covered_targets.contains(&item.name),
        _ => covered_projects.contains(item.name.as_str()),
    };
    // Covered targets the static comparison did not list were counted as unchanged there.
    let listed = summary
        .create
        .iter()
        .chain(&summary.change)
        .filter(|i| i.kind == "cluster" && covered(i))
        .count();
    summary.unchanged = summary
        .unchanged
        .saturating_sub(covered_targets.len().saturating_sub(listed));
    summary.create.retain(|i| !covered(i));
    summary.change.retain(|i| !covered(i));

    for (project, &index) in planned.plan.projects.iter().zip(&planned.project_index) {
        let label = labels.get(index).cloned().unwrap_or_default();
        for a in &project.actions {
            let item = |details: Vec<String>| PlanItem {
                kind: a.resource,
                name: label.clone(),
                details,
            };
            match (a.resource, a.action) {
                ("project", Action::Create) => {
                    summary.create.push(item(vec!["created on deploy".into()]))
                }
                ("bucket", Action::Create) => summary.create.push(item(
                    facts.buckets.get(&label).cloned().into_iter().collect(),
                )),
                ("network" | "subnet", Action::Create) => summary
                    .create
                    .push(item(vec!["for the project's clusters".into()])),
                (_, Action::Update | Action::Replace) => {
                    summary.change.push(item(change_details(a)))
                }
                (_, Action::Delete) => summary.destroy.push(item(change_details(a))),
                _ => {}
            }
        }
        for problem in &project.problems {
            summary.problems.push(LiveProblem {
                kind: problem.kind.into(),
                text: scrub_tenant(&format!("project {label}: {problem}"), &live.tenant_id),
            });
        }
    }
    for (target, index) in planned.plan.targets.iter().zip(&planned.target_index) {
        let name = target_name(index);
        let creates_cluster = target
            .actions
            .iter()
            .any(|a| a.resource == "cluster" && a.action == Action::Create);
        let changes: Vec<String> = target
            .actions
            .iter()
            .filter(|a| !matches!(a.action, Action::NoChange | Action::Reuse))
            .map(|a| {
                let mut line = format!("{} {}: {}", a.resource, a.name, action_word(a.action));
                let details = change_details(a);
                if !details.is_empty() {
                    line.push_str(&format!(" ({})", details.join(", ")));
                }
                line
            })
            .collect();
        if creates_cluster {
            summary.create.push(PlanItem {
                kind: "cluster",
                name: name.clone(),
                details: facts
                    .clusters
                    .get(&name)
                    .map(cluster_facts)
                    .unwrap_or_default(),
            });
        } else if !changes.is_empty() {
            summary.change.push(PlanItem {
                kind: "cluster",
                name: name.clone(),
                details: changes,
            });
        } else if target.problems.is_empty() {
            summary.unchanged += 1;
            if !target.unchanged {
                summary.unproven += 1;
            }
        }
        for problem in &target.problems {
            summary.problems.push(LiveProblem {
                kind: problem.kind.into(),
                text: scrub_tenant(&format!("{name}: {problem}"), &live.tenant_id),
            });
        }
    }
}

fn action_word(action: Action) -> &'static str {
    match action {
        Action::Create => "create",
        Action::Update => "update in place",
        Action::Replace => "replace",
        Action::Delete => "delete",
        Action::NoChange => "no change",
        Action::Reuse => "reuse",
    }
}

/// `field: from → to` for each changed field, and the reason when there is one.
fn change_details(a: &crate::engine::live::ResourceAction) -> Vec<String> {
    let mut details: Vec<String> = a
        .changes
        .iter()
        .map(|c| format!("{}: {} → {}", c.field, c.from, c.to))
        .collect();
    if !a.reason.is_empty() {
        details.push(a.reason.clone());
    }
    details
}

fn budget(spec: &FleetSpec, quota: Option<&QuotaInput<'_>>) -> BudgetReport {
    let Some(quota) = quota else {
        return BudgetReport {
            status: BudgetStatus::NotChecked,
            rows: Vec::new(),
            blocked_by: Vec::new(),
            note: Some("no quota source is configured for this installation yet".into()),
        };
    };
    budget_against(
        spec,
        &ProvenState::default(),
        quota.tenant_id,
        quota.evidence,
    )
}

/// The budget against the live evidence, with what the live plan proved unchanged.
fn live_budget(spec: &FleetSpec, live: &LiveSpec) -> BudgetReport {
    let proven = match &live.plan {
        Ok(Some(planned)) => planned.proven.clone(),
        _ => ProvenState::default(),
    };
    match &live.evidence {
        Ok(evidence) => budget_against(spec, &proven, &live.tenant_id, evidence.as_ref()),
        Err(e) => BudgetReport {
            status: BudgetStatus::Unproven,
            rows: Vec::new(),
            blocked_by: Vec::new(),
            note: Some(scrub_tenant(
                &format!(
                    "could not read tenant quota allowances: {e}; refusing to create projects or resources without capacity evidence"
                ),
                &live.tenant_id,
            )),
        },
    }
}

fn budget_against(
    spec: &FleetSpec,
    proven: &ProvenState,
    tenant_id: &str,
    evidence: &dyn QuotaEvidence,
) -> BudgetReport {
    let demand = match fleet_demand(spec, &ScopeOptions::default(), proven) {
        Ok(d) => d,
        Err(e) => {
            return BudgetReport {
                status: BudgetStatus::Unproven,
                rows: Vec::new(),
                blocked_by: Vec::new(),
                note: Some(e.to_string()),
            };
        }
    };
    // soperator targets are not charged by the mk8s quota preflight (as in the reference).
    let skipped = demand.skipped.len();
    let budgeted = demand.unchanged.len()
        + demand
            .regions
            .iter()
            .map(|r| r.targets.len())
            .sum::<usize>();
    let skip_note = (skipped > 0).then(|| {
        format!(
            "{skipped} soperator target{} not budgeted here: {}",
            plural(skipped),
            crate::quota::scope::SOPERATOR_SKIP_REASON
        )
    });
    if budgeted == 0 && skipped > 0 {
        return BudgetReport {
            status: BudgetStatus::NotChecked,
            rows: Vec::new(),
            blocked_by: Vec::new(),
            note: skip_note,
        };
    }
    let report = run_preflight(demand, tenant_id, evidence, &mut |_| {});
    let mut budget = budget_from(&report, tenant_id);
    if let Some(skip) = skip_note {
        budget.note = Some(match budget.note.take() {
            Some(note) => format!("{note}; {skip}"),
            None => skip,
        });
    }
    budget
}

fn scrub_tenant(text: &str, tenant_id: &str) -> String {
    if tenant_id.is_empty() {
        text.to_string()
    } else {
        text.replace(tenant_id, "(tenant)")
    }
}

/// The public budget of a preflight report; the tenant never appears.
fn budget_from(report: &PreflightReport, tenant_id: &str) -> BudgetReport {
    let scrub = |text: String| scrub_tenant(&text, tenant_id);
    let amount =
        |q: &str, v: Option<u64>| v.map_or_else(|| "-".into(), |v| format_amount(q, v.into()));
    let rows = report
        .rows()
        .map(|r| BudgetLine {
            region: r.region.clone(),
            quota: r.quota.clone(),
            needed: format_amount(&r.quota, r.needed),
            in_use: amount(&r.quota, r.usage),
            limit: amount(&r.quota, r.limit),
            available: amount(&r.quota, r.available),
            after: r.headroom.map_or_else(
                || "-".into(),
                |h| crate::quota::render::format_signed(&r.quota, h),
            ),
            verdict: match r.verdict {
                QuotaVerdict::Fits => "fits",
                QuotaVerdict::Short => "short",
                QuotaVerdict::Unlimited => "unlimited",
                QuotaVerdict::NotQuotaControlled => "not_quota_controlled",
            }
            .into(),
        })
        .collect();
    let mut blocked_by: Vec<String> = report
        .rows()
        .filter(|r| r.verdict == QuotaVerdict::Short)
        .map(|r| {
            format!(
                "{} in {}: needs {}, {} available, short by {}",
                r.quota,
                r.region,
                format_amount(&r.quota, r.needed),
                amount(&r.quota, r.available),
                format_amount(&r.quota, r.shortfall.unwrap_or(0)),
            )
        })
        .collect();
    blocked_by.extend(report.failed_reservations().map(|c| {
        format!(
            "capacity block {} ({}) in {}: {}",
            c.block,
            c.platform,
            c.region,
            c.reason.as_deref().unwrap_or_default()
        )
    }));
    let status = if report.fits() {
        BudgetStatus::Fits
    } else if report.blocked() {
        BudgetStatus::Short
    } else {
        BudgetStatus::Unproven
    };
    let note = if report.fits() || report.blocked() {
        None
    } else {
        report.public_message().map(scrub)
    };
    BudgetReport {
        status,
        rows,
        blocked_by: blocked_by.into_iter().map(scrub).collect(),
        note,
    }
}

/// SHA-256 over what the plan depends on: head and base commits, engine version, the repo
/// config bytes, every changed spec's bytes and its live plan's digest (which changes exactly
/// when the actions change), length-prefixed, in path order. Quota usage is deliberately left
/// out: it moves with everything else in the tenant, and an apply approved on this digest must
/// not be held back by it (the budget is checked again before any apply).
fn digest(input: &PrInput<'_>, specs: &[&ChangedFile]) -> String {
    let mut h = Sha256::new();
    let mut field = |bytes: &[u8]| {
        h.update((bytes.len() as u64).to_be_bytes());
        h.update(bytes);
    };
    field(b"fleetbot-plan-digest/v1");
    field(input.head_sha.as_bytes());
    field(input.base_sha.as_bytes());
    field(env!("CARGO_PKG_VERSION").as_bytes());
    field(&input.config.raw);
    for spec in specs {
        field(spec.path.as_bytes());
        match &spec.head {
            Some(bytes) => field(bytes),
            None => field(b"\0removed-or-unread"),
        }
        // A live plan is part of what was shown: the same spec against a changed cloud is a
        // different plan.
        match input.live.get(&spec.path).map(|l| &l.plan) {
            Some(Ok(Some(planned))) => field(planned.plan.digest.as_bytes()),
            Some(Ok(None)) => field(b"\0nothing-planned-live"),
            Some(Err(_)) => field(b"\0live-plan-unavailable"),
            None => field(b"\0static"),
        }
    }

    hex::encode(h.finalize())
}

/// `fleet/privacy`'s conclusion and title, from the same verdict its summary is rendered from.
fn privacy_conclusion(report: &PrReport) -> (CheckConclusion, String) {
    match report.privacy_verdict() {
        PrivacyVerdict::Skipped => (
            CheckConclusion::Skipped,
            "Skipped: no fleet spec changed".to_string(),
        ),
        PrivacyVerdict::Clean => (
            CheckConclusion::Success,
            "No private values in the changed lines".to_string(),
        ),
        PrivacyVerdict::Found => (
            CheckConclusion::Failure,
            format!(
                "{} private value{} committed",
                report.privacy.total,
                plural(report.privacy.total)
            ),
        ),
    }
}

fn privacy_check(report: &PrReport, scanner: &Scanner) -> CheckRunPayload {
    let (conclusion, title) = privacy_conclusion(report);
    let annotations = report
        .privacy
        .findings
        .iter()
        .map(|f| Annotation {
            path: f.path.clone(),
            start_line: f.line,
            end_line: f.line,
            start_column: Some(f.column),
            end_column: Some(f.column),
            annotation_level: AnnotationLevel::Failure,
            message: format!(
                "{}. The value is not shown; its alias is {}. Remove it from the change (and from history), and rotate it if it is a credential.",
                RuleId::ALL
                    .iter()
                    .find(|r| r.as_str() == f.rule)
                    .map_or("A private value", |r| r.explanation()),
                f.alias
            ),
            title: Some(format!("Private value: {}", f.rule)),
        })
        .collect();
    let (summary, text) = render::render_privacy_check(report, scanner);
    CheckRunPayload {
        name: PRIVACY_CHECK.into(),
        head_sha: report.head_sha.clone(),
        external_id: Some(report.digest.clone()),
        conclusion,
        output: CheckOutput {
            title,
            summary,
            text,
            annotations,
        },
    }
}

/// `fleet/preflight`'s conclusion and title: a function of the report's [`Outcome`] alone,
/// which the summary is rendered from too, so a summary listing a blocker always comes with a
/// failure.
fn preflight_conclusion(report: &PrReport) -> (CheckConclusion, String) {
    let fleets = report.fleets.len();
    let outcome = &report.outcome.for_preflight();
    match outcome.verdict() {
        Verdict::Blocked => {
            let first = outcome.blockers[0].title();
            let title = match outcome.blockers.len() - 1 {
                0 => format!("Blocked: {first}"),
                more => format!("Blocked: {first} (and {more} more)"),
            };
            (CheckConclusion::Failure, title)
        }
        Verdict::NoSpecChanges => (
            CheckConclusion::Skipped,
            "Skipped: no fleet spec changed".to_string(),
        ),
        Verdict::ReadyUnchecked => (
            CheckConclusion::Neutral,
            format!(
                "{fleets} fleet spec{} valid; quota not checked",
                plural(fleets)
            ),
        ),
        Verdict::Ready => (
            CheckConclusion::Success,
            format!("{fleets} fleet spec{} valid; quota fits", plural(fleets)),
        ),
    }
}

fn preflight_check(report: &PrReport, scanner: &Scanner) -> CheckRunPayload {
    let (conclusion, title) = preflight_conclusion(report);
    let mut annotations = Vec::new();
    for fleet in &report.fleets {
        for p in &fleet.problems {
            let line = p.line.unwrap_or(1).max(1);
            annotations.push(Annotation {
                path: fleet.path.clone(),
                start_line: line,
                end_line: line,
                start_column: p.column.filter(|_| p.line.is_some()),
                end_column: p.column.filter(|_| p.line.is_some()),
                annotation_level: AnnotationLevel::Failure,
                message: if p.field.is_empty() {
                    p.message.clone()
                } else {
                    format!("{}: {}", p.field, p.message)
                },
                title: Some("Invalid fleet spec".into()),
            });
        }
        // The live plan has no line in the spec to point at; the file is what to look at.
        for problem in fleet.plan.iter().flat_map(|p| &p.problems) {
            annotations.push(Annotation {
                path: fleet.path.clone(),
                start_line: 1,
                end_line: 1,
                start_column: None,
                end_column: None,
                annotation_level: AnnotationLevel::Failure,
                message: problem.text.clone(),
                title: Some(format!("Live plan: {}", problem.kind.phrase())),
            });
        }
        if let Some(budget) = &fleet.budget {
            for blocked in &budget.blocked_by {
                annotations.push(Annotation {
                    path: fleet.path.clone(),
                    start_line: 1,
                    end_line: 1,
                    start_column: None,
                    end_column: None,
                    annotation_level: AnnotationLevel::Failure,
                    message: blocked.clone(),
                    title: Some("Quota shortfall".into()),
                });
            }
        }
    }
    let (summary, text) = render::render_preflight_check(report, scanner);
    CheckRunPayload {
        name: PREFLIGHT_CHECK.into(),
        head_sha: report.head_sha.clone(),
        external_id: Some(report.digest.clone()),
        conclusion,
        output: CheckOutput {
            title,
            summary,
            text,
            annotations,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::super::live::LiveError;
    use super::*;
    use crate::bot::config::LoadedConfig;

    const SPEC: &str = include_str!("../../fixtures/specs/fleet1-test.yaml");

    fn file(path: &str, status: FileStatus, head: Option<&str>, base: Option<&str>) -> ChangedFile {
        ChangedFile {
            path: path.into(),
            status,
            head: head.map(|h| h.as_bytes().to_vec()),
            base: base.map(|b| b.as_bytes().to_vec()),
            ..ChangedFile::default()
        }
    }

    fn run(files: &[ChangedFile], config: &LoadedConfig) -> PrOutcome {
        evaluate_pull_request(&PrInput {
            repo: "o/r",
            number: 1,
            head_sha: &"a".repeat(40),
            base_sha: &"b".repeat(40),
            files,
            files_truncated: false,
            config,
            alias_key: b"k",
            quota: None,
            live: &BTreeMap::new(),
        })
    }

    #[test]
    fn a_removed_spec_destroys_its_clusters_without_blocking() {
        let config = LoadedConfig::from_default_branch("main", None);
        let out = run(
            &[file("fleets/a.yaml", FileStatus::Removed, None, Some(SPEC))],
            &config,
        );
        let fleet = &out.report.fleets[0];
        assert_eq!(fleet.status, FleetStatus::Removed);
        assert_eq!(fleet.plan.as_ref().unwrap().destroy.len(), 3, "{fleet:?}");
        assert_eq!(out.report.verdict(), Verdict::Ready);
        assert!(out.report.outcome.reasons()[0].contains("destroyed on merge"));
        assert_eq!(out.preflight.conclusion, CheckConclusion::Success);
        assert!(out.comment.contains("🗑️ **destroy**"));
    }

    #[test]
    fn an_invalid_config_fails_preflight_even_without_spec_changes() {
        let config = LoadedConfig::from_default_branch("main", Some(b"specz: []\n"));
        let out = run(
            &[file("README.md", FileStatus::Modified, Some("x\n"), None)],
            &config,
        );
        assert_eq!(out.report.verdict(), Verdict::Blocked);
        assert_eq!(out.preflight.conclusion, CheckConclusion::Failure);
        assert_eq!(out.privacy.conclusion, CheckConclusion::Skipped);
        assert!(out.preflight.output.summary.contains("unknown field"));
    }

    #[test]
    fn spec_errors_on_a_line_with_a_private_value_lose_their_quoted_text() {
        assert_eq!(
            without_quoted_text("expected an integer, found \"tenant-e00x\" at 'y'"),
            "expected an integer, found (value withheld) at (value withheld)"
        );
        let id = crate::privacy::testdata::nid("tenant", "e00", 15);
        let spec = SPEC.replace("region: us-central1", &format!("region: [\"{id}\"]"));
        let config = LoadedConfig::from_default_branch("main", None);
        let out = run(
            &[file("fleets/a.yaml", FileStatus::Added, Some(&spec), None)],
            &config,
        );
        let text = format!(
            "{}{:?}{:?}",
            out.comment, out.preflight.output, out.privacy.output
        );
        assert!(!text.contains(&id));
        assert_eq!(out.report.fleets[0].status, FleetStatus::Invalid);
        assert_eq!(out.privacy.conclusion, CheckConclusion::Failure);
    }

    #[test]
    fn the_digest_covers_spec_bytes_and_config() {
        let config = LoadedConfig::from_default_branch("main", None);
        let a = run(
            &[file("fleets/a.yaml", FileStatus::Added, Some(SPEC), None)],
            &config,
        );
        let b = run(
            &[file(
                "fleets/a.yaml",
                FileStatus::Added,
                Some(&format!("{SPEC}\n")),
                None,
            )],
            &config,
        );
        let other = LoadedConfig::from_default_branch("main", Some(b"specs: ['fleets/**']\n"));
        let c = run(
            &[file("fleets/a.yaml", FileStatus::Added, Some(SPEC), None)],
            &other,
        );
        assert_eq!(a.report.digest.len(), 64);
        assert_ne!(a.report.digest, b.report.digest);
        assert_ne!(a.report.digest, c.report.digest);
        assert_eq!(
            a.privacy.external_id.as_deref(),
            Some(a.report.digest.as_str())
        );
    }

    /// A live reading of `fleets/a.yaml` (the SPEC fleet) whose plan is `plan`, with quota
    /// evidence that has room, so only the plan can block.
    fn live_reading(plan: Result<Option<super::super::live::PlannedFleet>, LiveError>) -> LiveSpec {
        let room = include_str!("../../fixtures/quotas/allowances-room.json");
        LiveSpec {
            cloud: "the fleetbot simulator".into(),
            plan,
            tenant_id: "tenant-example".into(),
            evidence: Ok(std::sync::Arc::new(crate::quota::InMemoryEvidence {
                allowances: crate::quota::json::allowance_document(room),
                capacity: Ok(Default::default()),
            })),
        }
    }

    fn planned_with(problem: crate::engine::live::Problem) -> super::super::live::PlannedFleet {
        use crate::engine::live::{LivePlan, ProjectPlan, Summary};
        super::super::live::PlannedFleet {
            plan: LivePlan {
                fleet: "fleet1-test".into(),
                cloud: "sim".into(),
                projects: vec![ProjectPlan {
                    key: "a".into(),
                    actions: Vec::new(),
                    problems: vec![problem],
                }],
                targets: Vec::new(),
                summary: Summary::default(),
                digest: "d".into(),
            },
            project_index: vec![0],
            target_index: Vec::new(),
            proven: Default::default(),
        }
    }

    fn run_live(live: LiveSpec) -> PrOutcome {
        let config = LoadedConfig::from_default_branch("main", None);
        let files = [file(
            "fleets/a.yaml",
            FileStatus::Modified,
            Some(SPEC),
            Some(SPEC),
        )];
        let live = BTreeMap::from([("fleets/a.yaml".to_string(), live)]);
        evaluate_pull_request(&PrInput {
            repo: "o/r",
            number: 1,
            head_sha: &"a".repeat(40),
            base_sha: &"b".repeat(40),
            files: &files,
            files_truncated: false,
            config: &config,
            alias_key: b"k",
            quota: None,
            live: &live,
        })
    }

    #[test]
    fn a_live_plan_without_problems_and_room_in_the_quota_succeeds() {
        use crate::engine::live::{LivePlan, Summary};
        let mut planned = planned_with(crate::engine::live::Problem::new(
            crate::engine::live::ProblemKind::NotOwned,
            "x",
        ));
        planned.plan = LivePlan {
            projects: Vec::new(),
            summary: Summary::default(),
            ..planned.plan
        };
        planned.project_index.clear();
        let out = run_live(live_reading(Ok(Some(planned))));
        assert_eq!(
            out.report.verdict(),
            Verdict::Ready,
            "{:?}",
            out.report.outcome
        );
        assert_eq!(out.preflight.conclusion, CheckConclusion::Success);
    }

    /// Issue 13: the conclusion once ignored the live plan while the summary listed it.
    #[test]
    fn every_live_plan_problem_fails_preflight_with_its_kind_in_the_title_and_summary() {
        use super::super::live::LiveErrorKind;
        use crate::engine::live::{Problem, ProblemKind};
        let mut readings: Vec<(LiveProblemKind, LiveSpec)> = ProblemKind::ALL
            .into_iter()
            .map(|kind| {
                let problem = Problem::new(kind, format!("problem of kind {kind:?}"));
                (kind.into(), live_reading(Ok(Some(planned_with(problem)))))
            })
            .collect();
        for kind in [
            LiveErrorKind::Tenant,
            LiveErrorKind::Cloud,
            LiveErrorKind::Store,
            LiveErrorKind::Engine,
        ] {
            let error = LiveError::new(kind, format!("error of kind {kind:?}"));
            readings.push((kind.into(), live_reading(Err(error))));
        }
        let covered: BTreeSet<LiveProblemKind> = readings.iter().map(|(k, _)| *k).collect();
        assert_eq!(covered, LiveProblemKind::ALL.into());
        for (kind, live) in readings {
            let out = run_live(live);
            let check = &out.preflight;
            assert_eq!(out.report.verdict(), Verdict::Blocked, "{kind:?}");
            assert_eq!(
                check.conclusion,
                CheckConclusion::Failure,
                "{kind:?}: {}",
                check.output.title
            );
            assert_eq!(
                check.output.title,
                format!("Blocked: the live plan found problems ({})", kind.phrase())
            );
            assert!(
                check.output.summary.contains("**❌ blocked**"),
                "{}",
                check.output.summary
            );
            assert!(
                check.output.summary.contains("of kind"),
                "{}",
                check.output.summary
            );
            assert!(
                check
                    .output
                    .annotations
                    .iter()
                    .any(|a| a.title.as_deref() == Some(&*format!("Live plan: {}", kind.phrase()))),
                "{kind:?}"
            );
            assert!(out.comment.contains("## ❌ fleetbot preflight: blocked"));
            assert!(!format!("{out:?}").contains("tenant-example"));
            // The privacy guard found nothing: its check is independent of the live plan.
            assert_eq!(out.privacy.conclusion, CheckConclusion::Success);
        }
    }

    #[test]
    fn a_private_value_fails_privacy_and_preflight_only_says_so() {
        let id = crate::privacy::testdata::nid("tenant", "e00", 15);
        let spec = SPEC.replace("tenant_id: \"\"", &format!("tenant_id: \"{id}\""));
        assert_ne!(spec, SPEC);
        let config = LoadedConfig::from_default_branch("main", None);
        let out = run(
            &[file(
                "fleets/a.yaml",
                FileStatus::Modified,
                Some(&spec),
                Some(SPEC),
            )],
            &config,
        );
        assert_eq!(out.privacy.conclusion, CheckConclusion::Failure);
        assert_eq!(out.privacy.output.title, "1 private value committed");
        // One leak fails one check; the preflight summary agrees with its own conclusion.
        assert_eq!(out.preflight.conclusion, CheckConclusion::Neutral);
        let summary = &out.preflight.output.summary;
        assert!(!summary.contains("blocked"), "{summary}");
        assert!(
            summary.contains("1 private value committed: fleet/privacy fails on it"),
            "{summary}"
        );
        // The comment is the pull request's overall verdict, and a leak blocks it.
        assert!(
            out.comment.contains("1 private value committed"),
            "{}",
            out.comment
        );
    }

    #[test]
    fn the_conclusions_and_the_summaries_come_from_one_verdict() {
        let config = LoadedConfig::from_default_branch("main", None);
        let cases = [
            (
                vec![file("README.md", FileStatus::Modified, Some("x\n"), None)],
                CheckConclusion::Skipped,
                CheckConclusion::Skipped,
            ),
            (
                vec![file("fleets/a.yaml", FileStatus::Added, Some(SPEC), None)],
                CheckConclusion::Neutral,
                CheckConclusion::Success,
            ),
            (
                vec![file("fleets/a.yaml", FileStatus::Removed, None, Some(SPEC))],
                CheckConclusion::Success,
                CheckConclusion::Success,
            ),
            (
                vec![file(
                    "fleets/a.yaml",
                    FileStatus::Added,
                    Some("name: [\n"),
                    None,
                )],
                CheckConclusion::Failure,
                CheckConclusion::Success,
            ),
        ];
        for (files, preflight, privacy) in cases {
            let out = run(&files, &config);
            assert_eq!(
                out.preflight.conclusion, preflight,
                "{:?}",
                out.report.outcome
            );
            assert_eq!(out.privacy.conclusion, privacy, "{:?}", out.report.outcome);
            let blocked = out.preflight.output.summary.contains("❌ blocked");
            assert_eq!(blocked, preflight == CheckConclusion::Failure);
            assert_eq!(
                out.privacy.output.summary.contains("did not run"),
                privacy == CheckConclusion::Skipped
            );
        }
    }
}
