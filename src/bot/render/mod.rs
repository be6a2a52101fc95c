//! Rendering the public report with the templates in `templates/github/` (minijinja).
//!
//! Every text the bot posts is built here from [`super::report`] structs, within GitHub's
//! limits: the sticky comment stays under [`MAX_COMMENT_BYTES`] (GitHub refuses bodies over
//! 65,536 characters; a byte budget is safe for multi-byte text), check-run summaries and texts
//! under [`MAX_CHECK_CHARS`]. Too long a text is re-rendered compact (short lists, no diffs,
//! pointing at the check run) and, if it still does not fit, cut at a line with a note.
//!
//! As a second layer after the typed report, the finished text goes through the privacy
//! scanner once more and anything it flags is replaced by `[redacted]`.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use minijinja::value::{Serde, Value};
use minijinja::{Environment, context};

use escape::code;

use super::report::apply::{ApplyBlocked, ApplyReport, FleetApply, FleetOutcome};
use super::report::{CommandHelp, PrReport, ReplyNote, Verdict};
use crate::fleet::guard::Refusal;
use crate::github::CheckConclusion;
use crate::privacy::{RuleId, Scanner};

mod drift;
pub(crate) mod escape;

pub use drift::{DRIFT_ISSUE_MARKER, render_drift, render_drift_issue};

/// Finds the sticky comment again; never changes once shipped.
pub const COMMENT_MARKER: &str = "<!-- fleetbot:pr-comment v1 -->";
/// The sticky comment's size budget in bytes (GitHub's limit is 65,536 characters).
pub const MAX_COMMENT_BYTES: usize = 60_000;
/// GitHub's limit for a check run's `output.summary` and `output.text`, in characters.
pub const MAX_CHECK_CHARS: usize = 65_535;
/// List lengths in the full and the compact rendering.
const FULL_LIMIT: usize = 50;
const COMPACT_LIMIT: usize = 10;

fn env() -> &'static Environment<'static> {
    static ENV: OnceLock<Environment<'static>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Environment::new();
        env.set_syntax(
            minijinja::syntax::SyntaxConfig::builder()
                .trim_blocks(true)
                .lstrip_blocks(true)
                .build()
                .expect("the default delimiters are valid"),
        );
        for (name, source) in [
            (
                "comment.md",
                include_str!("../../../templates/github/comment.md.j2"),
            ),
            (
                "privacy_summary.md",
                include_str!("../../../templates/github/privacy_summary.md.j2"),
            ),
            (
                "privacy_text.md",
                include_str!("../../../templates/github/privacy_text.md.j2"),
            ),
            (
                "preflight_summary.md",
                include_str!("../../../templates/github/preflight_summary.md.j2"),
            ),
            (
                "preflight_text.md",
                include_str!("../../../templates/github/preflight_text.md.j2"),
            ),
            (
                "command_reply.md",
                include_str!("../../../templates/github/command_reply.md.j2"),
            ),
            (
                "apply_summary.md",
                include_str!("../../../templates/github/apply_summary.md.j2"),
            ),
            (
                "apply_reply.md",
                include_str!("../../../templates/github/apply_reply.md.j2"),
            ),
        ] {
            env.add_template(name, source)
                .expect("templates are checked by the tests");
        }
        // Every string from a pull request reaches the text through one of these.
        env.add_filter("md", |s: String| escape::md(&s));
        env.add_filter("cell", |s: String| escape::cell(&s));
        env.add_filter("code", |s: String| escape::code(&s));
        env.add_filter("cell_code", |s: String| escape::cell_code(&s));
        env.add_filter("summary", |s: String| escape::summary(&s));
        env.add_filter("fence", |s: String, lang: String| escape::fence(&s, &lang));
        env
    })
}

/// Presentation words shared by the templates.
fn common(report: &PrReport, limit: usize, show_diffs: bool) -> Value {
    let (icon, text) = match report.verdict() {
        Verdict::Ready => ("✅", "ready"),
        Verdict::ReadyUnchecked => ("☑️", "valid, quota not checked"),
        Verdict::Blocked => ("❌", "blocked"),
        Verdict::NoSpecChanges => ("➖", "no fleet spec changed"),
    };
    let fleet_status: BTreeMap<&str, &str> = [
        ("valid", "✅ valid"),
        ("invalid", "❌ invalid"),
        ("removed", "🗑️ removed"),
    ]
    .into();
    let budget_status: BTreeMap<&str, &str> = [
        ("fits", "✅ fits"),
        ("short", "❌ short"),
        ("unproven", "⚠️ could not be proven"),
        ("not_checked", "➖ not checked"),
    ]
    .into();
    let row_verdict: BTreeMap<&str, &str> = [
        ("fits", "✅ fits"),
        ("short", "❌ **short**"),
        ("unlimited", "✅ unlimited"),
        ("not_quota_controlled", "➖ not quota-controlled"),
    ]
    .into();
    let diff_withheld: BTreeMap<&str, &str> = [
        (
            "holds_private",
            "this file holds a private value (see fleet/privacy), so its diff is not shown",
        ),
        ("not_text", "the file is not text, or could not be read"),
        (
            "too_large",
            "the change is too large to diff here; it is in the pull request's Files tab",
        ),
    ]
    .into();
    let config_line = if report.config.present {
        format!("`.fleetbot.yml` from {}", code(&report.config.branch))
    } else {
        format!(
            "defaults (no `.fleetbot.yml` on {})",
            code(&report.config.branch)
        )
    };
    context! {
        report => Serde(report),
        marker => COMMENT_MARKER,
        verdict_icon => icon,
        verdict_text => text,
        privacy_verdict => Serde(report.privacy_verdict()),
        short_digest => report.short_digest(),
        config_line => config_line,
        fleet_status => Serde(fleet_status),
        budget_status => Serde(budget_status),
        row_verdict => Serde(row_verdict),
        diff_withheld => Serde(diff_withheld),
        limit => limit,
        show_diffs => show_diffs,
        version => env!("CARGO_PKG_VERSION"),
    }
}

fn render(name: &str, ctx: Value) -> String {
    env()
        .get_template(name)
        .and_then(|t| t.render(ctx))
        .unwrap_or_else(|e| {
            // A template error is a bug; show a plain line rather than fail the whole job.
            tracing::error!(template = name, "template failed: {e}");
            format!("(fleetbot could not render {name}; this is a bug)\n")
        })
}

/// Renders full, then compact, then cut, until `max` (in units of `measure`) is met.
fn fit(
    max: usize,
    measure: fn(&str) -> usize,
    pointer: &str,
    render_at: impl Fn(usize, bool) -> String,
) -> String {
    let full = render_at(FULL_LIMIT, true);
    if measure(&full) <= max {
        return full;
    }
    let compact = render_at(COMPACT_LIMIT, false);
    if measure(&compact) <= max {
        return compact;
    }
    cut(&compact, max, measure, pointer)
}

fn bytes(s: &str) -> usize {
    s.len()
}

fn chars(s: &str) -> usize {
    s.chars().count()
}

/// Cuts at the last line that fits, and says where the rest is.
fn cut(text: &str, max: usize, measure: fn(&str) -> usize, pointer: &str) -> String {
    let note = format!("\n\n… cut to fit GitHub's size limit; {pointer}\n");
    let mut lines: Vec<&str> = Vec::new();
    let mut used = measure(&note);
    for line in text.split_inclusive('\n') {
        if used + measure(line) > max {
            break;
        }
        used += measure(line);
        lines.push(line);
    }
    // Never leave a code fence open: the note would render inside it. The fence is closed
    // with its own length (a diff's fence is longer than any backtick run in it).
    loop {
        let closing = open_fence(&lines).map(|ticks| "`".repeat(ticks) + "\n");
        let closing = closing.unwrap_or_default();
        if used + measure(&closing) <= max || lines.is_empty() {
            let mut out = lines.concat();
            if !out.is_empty() && !out.ends_with('\n') && !closing.is_empty() {
                out.push('\n');
            }
            out.push_str(&closing);
            out.push_str(&note);
            return out;
        }
        used -= measure(lines.pop().unwrap_or_default());
    }
}

/// The length of the fence still open after `lines`, if one is.
fn open_fence(lines: &[&str]) -> Option<usize> {
    let mut open = None;
    for line in lines {
        let line = line.trim_end();
        let ticks = line.chars().take_while(|&c| c == '`').count();
        match open {
            None if ticks >= 3 => open = Some(ticks),
            Some(n) if ticks >= n && ticks == line.len() => open = None,
            _ => {}
        }
    }
    open
}

/// One string through every escape filter the templates use, in the order `md`, `cell`,
/// `code`, `cell_code`, `summary`, `fence` (with `diff`). Only the fuzz targets and the
/// corpus replay (`tests/fuzz_corpus.rs`) call it: they hold each form to GitHub's dialect
/// without the filters themselves becoming public API.
#[doc(hidden)]
pub fn escape_forms(text: &str) -> [String; 6] {
    [
        escape::md(text),
        escape::cell(text),
        escape::code(text),
        escape::cell_code(text),
        escape::summary(text),
        escape::fence(text, "diff"),
    ]
}

/// The sticky comment: marker first, verdict first after it.
pub fn render_comment(report: &PrReport, scanner: &Scanner) -> String {
    let body = fit(
        MAX_COMMENT_BYTES,
        bytes,
        "see the `fleet/preflight` and `fleet/privacy` check runs for everything.",
        |limit, diffs| render("comment.md", common(report, limit, diffs)),
    );
    redact_private(scanner, &body)
}

/// Summary and text of `fleet/privacy`.
pub fn render_privacy_check(report: &PrReport, scanner: &Scanner) -> (String, Option<String>) {
    let summary = fit(
        MAX_CHECK_CHARS,
        chars,
        "every finding is also an annotation.",
        |limit, diffs| render("privacy_summary.md", common(report, limit, diffs)),
    );
    let text = (report.privacy.total > 0).then(|| {
        fit(
            MAX_CHECK_CHARS,
            chars,
            "every finding is also an annotation.",
            |_, diffs| {
                render(
                    "privacy_text.md",
                    common(report, if diffs { 1000 } else { 200 }, diffs),
                )
            },
        )
    });
    (
        redact_private(scanner, &summary),
        text.map(|t| redact_private(scanner, &t)),
    )
}

/// Summary and text of `fleet/preflight`.
pub fn render_preflight_check(report: &PrReport, scanner: &Scanner) -> (String, Option<String>) {
    // The check's own share of the outcome, the same one its conclusion is computed from.
    let report = &PrReport {
        outcome: report.outcome.for_preflight(),
        ..report.clone()
    };
    let summary = fit(
        MAX_CHECK_CHARS,
        chars,
        "the details are in the text below.",
        |limit, diffs| render("preflight_summary.md", common(report, limit, diffs)),
    );
    let text = (!report.fleets.is_empty()).then(|| {
        fit(
            MAX_CHECK_CHARS,
            chars,
            "the spec diffs are in the pull request's Files tab.",
            |limit, diffs| render("preflight_text.md", common(report, limit, diffs)),
        )
    });
    (
        redact_private(scanner, &summary),
        text.filter(|t| !t.trim().is_empty())
            .map(|t| redact_private(scanner, &t)),
    )
}

/// The `fleet/apply` summary and the short reply on the pull request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedApply {
    pub summary: String,
    pub reply: String,
}

/// Renders an apply report: both texts come from the same report the conclusion does.
pub fn render_apply(report: &ApplyReport, run_url: &str, scanner: &Scanner) -> RenderedApply {
    let conclusion = report.conclusion();
    let (icon, word) = match conclusion {
        CheckConclusion::Success => ("✅", "applied"),
        CheckConclusion::ActionRequired => ("✋", "waiting for a person"),
        CheckConclusion::Failure => ("❌", "failed"),
        _ => ("➖", "nothing applied"),
    };
    let fleets: Vec<Value> = report
        .fleets
        .iter()
        .map(|f| {
            let (outcome, mut intro, mut items) = fleet_words(f);
            if !f.waves.is_empty() {
                // The waves first: where a staged rollout got to is what a reader looks for.
                let mut lines = f.waves.clone();
                lines.append(&mut items);
                items = lines;
                intro = Some(match intro {
                    Some(_) if f.failed_targets.is_empty() => {
                        "The rollout stopped at a wave that did not become healthy:".to_string()
                    }
                    Some(said) => format!("Rolled out in waves. {said}"),
                    None => "Rolled out in waves:".to_string(),
                });
            }
            context! {
                path => &f.path,
                name => &f.name,
                outcome => outcome,
                intro => intro,
                items => items,
                counts => Serde(&f.counts),
            }
        })
        .collect();
    let blocked = report.blocked.as_ref().map(|b| match b {
        ApplyBlocked::Config { error } => format!(
            ".fleetbot.yml on the default branch is invalid, so nothing is applied: {error}"
        ),
        ApplyBlocked::Manual => "This repository applies manually (apply: manual in .fleetbot.yml): a maintainer runs /apply on the pull request, or presses Apply.".into(),
        ApplyBlocked::NoCloud => "fleetbot has no cloud configured to apply to.".into(),
        ApplyBlocked::NotMerged => "The pull request is not merged.".into(),
    });
    let ctx = context! {
        icon => icon,
        word => word,
        title => report.title(),
        number => report.number,
        sha => report.sha.get(..7).unwrap_or(&report.sha),
        trigger => report.trigger.as_str(),
        actor => &report.actor,
        blocked => blocked,
        fleets => fleets,
        offers_apply => report.offers_apply(),
        marker => apply_reply_marker(&report.sha),
        // Only GitHub's own page for the run, and only a URL that cannot end the link early.
        run_url => linkable(run_url).then_some(run_url),
    };
    let summary = cut_if_needed(&render("apply_summary.md", ctx.clone()), MAX_CHECK_CHARS);
    let reply = cut_if_needed(&render("apply_reply.md", ctx), MAX_COMMENT_BYTES);
    RenderedApply {
        summary: redact_private(scanner, &summary),
        reply: redact_private(scanner, &reply),
    }
}

/// An `https://` URL of characters that stay inside a Markdown link's destination.
fn linkable(url: &str) -> bool {
    url.starts_with("https://")
        && url
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/:.-_~%?=&".contains(c))
}

/// A fleet's outcome in words, a sentence that explains it, and the lines it names.
fn fleet_words(f: &FleetApply) -> (&'static str, Option<String>, Vec<String>) {
    let say = |text: &str| Some(text.to_string());
    match &f.outcome {
        FleetOutcome::Applied => (
            "applied",
            None,
            f.deleted_targets
                .iter()
                .map(|t| format!("deleted {t} (approved)"))
                .collect(),
        ),
        FleetOutcome::Unchanged => ("unchanged", None, Vec::new()),
        FleetOutcome::ChangedSinceReview => (
            "waiting: the cloud changed since review",
            say(
                "The cloud changed since the plan was reviewed (by hand, or another apply), so these targets were not touched: nothing was applied that nobody was shown. A new fleet/preflight on this commit shows the plan now; /apply applies it once reviewed (/approve-destroy first if it deletes):",
            ),
            f.changed_targets.clone(),
        ),
        FleetOutcome::Failed => (
            "failed",
            say("Targets that failed (the cloud's answers are in fleetbot's log, not here):"),
            f.failed_targets.clone(),
        ),
        FleetOutcome::SpecRemoved => (
            "spec removed",
            say(
                "The spec was deleted: nothing is destroyed on merge. Run fleetbot destroy to tear the fleet down.",
            ),
            Vec::new(),
        ),
        FleetOutcome::NothingForTheEngine => (
            "not applied",
            say("Only soperator targets, which fleetbot's API engine does not apply."),
            Vec::new(),
        ),
        FleetOutcome::NotApplied { reason } => ("not applied", Some(reason.clone()), Vec::new()),
        FleetOutcome::Refused { refusal } => match refusal {
            Refusal::Problems { problems } => (
                "refused: plan problems",
                say(
                    "The plan has problems, so nothing was applied; fix them in the spec or the cloud:",
                ),
                problems.clone(),
            ),
            Refusal::NotReviewed => (
                "waiting: not reviewed",
                say(
                    "No preflight planned this fleet live for the pull request's last head, so there is no reviewed plan to hold the merge to. Someone with the permission can /apply.",
                ),
                Vec::new(),
            ),
            Refusal::Drifted { since_review } => (
                "waiting: plan changed",
                say(
                    "The plan changed since review (the cloud drifted, or another merge landed first). Planned now (+) and no longer planned (−):",
                ),
                since_review.clone(),
            ),
            Refusal::NeedsApproval { deletions } => (
                "waiting: needs /approve-destroy",
                say(
                    "The plan deletes, replaces or shrinks, and nobody approved it. Someone with the permission runs /approve-destroy, then /apply:",
                ),
                deletions.clone(),
            ),
        },
    }
}

/// Finds the reply about one applied commit again.
pub fn apply_reply_marker(sha: &str) -> String {
    format!("<!-- fleetbot:apply {} -->", sha.get(..7).unwrap_or(sha))
}

/// The hidden marker of the reply to one comment, so a retried job edits instead of reposting.
pub fn reply_marker(comment_id: u64) -> String {
    format!("<!-- fleetbot:reply-to {comment_id} -->")
}

/// One short reply to a comment's commands: errors, notes and, for `/help`, the command table.
pub fn render_command_reply(
    comment_id: u64,
    mention: Option<&str>,
    errors: &[String],
    notes: &[ReplyNote],
    help: bool,
    commands: &[CommandHelp],
) -> String {
    let text = render(
        "command_reply.md",
        context! {
            marker => reply_marker(comment_id),
            mention => mention.filter(|m| m.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')),
            errors => Serde(errors),
            notes => Serde(notes),
            help => help,
            commands => Serde(commands),
        },
    );
    cut_if_needed(&text, MAX_COMMENT_BYTES)
}

fn cut_if_needed(text: &str, max: usize) -> String {
    if text.len() <= max {
        text.to_string()
    } else {
        cut(text, max, bytes, "the rest was left out.")
    }
}

/// Replaces anything the privacy scanner flags in `text` by `[redacted]`. A multi-line block
/// (a key, a credentials document) is replaced up to its end.
pub fn redact_private(scanner: &Scanner, text: &str) -> String {
    let scan = scanner.scan_text("fleetbot-output.md", text.as_bytes(), None);
    let findings = scan.findings();
    if findings.is_empty() {
        return text.to_string();
    }
    tracing::warn!(
        findings = findings.len(),
        "redacted private values from rendered output"
    );
    let mut lines: Vec<String> = text.split('\n').map(str::to_string).collect();
    let mut blanked_until = 0usize;
    for f in findings.iter().rev() {
        let index = (f.line as usize).saturating_sub(1);
        if index >= lines.len() {
            continue;
        }
        if matches!(
            f.rule,
            RuleId::PrivateKey | RuleId::ServiceAccountCredentials
        ) {
            let end = (index..lines.len())
                .find(|&i| lines[i].contains("-----END") || lines[i].trim_start().starts_with('}'))
                .unwrap_or(lines.len() - 1)
                .max(blanked_until);
            for line in &mut lines[index..=end] {
                *line = "[redacted]".to_string();
            }
            blanked_until = index;
            continue;
        }
        let line = &lines[index];
        let start: usize = line
            .char_indices()
            .nth((f.column as usize).saturating_sub(1))
            .map_or(line.len(), |(i, _)| i);
        let end = line[start..]
            .find(|c: char| c.is_whitespace() || "`|'\"<>(),;".contains(c))
            .map_or(line.len(), |e| start + e.max(1));
        let replaced = format!("{}[redacted]{}", &line[..start], &line[end..]);
        lines[index] = replaced;
    }
    lines.join("\n")
}

#[cfg(test)]
mod inert_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::{ScannerConfig, testdata};

    fn scanner() -> Scanner {
        Scanner::new(ScannerConfig {
            key: b"k".to_vec(),
            allowlist: Default::default(),
        })
        .unwrap()
    }

    #[test]
    fn cut_keeps_fences_closed_and_fits() {
        let text = format!("intro\n```diff\n{}```\n", "+line\n".repeat(1000));
        let out = cut(&text, 500, bytes, "see elsewhere.");
        assert!(out.len() <= 500, "{}", out.len());
        assert_eq!(out.matches("```").count() % 2, 0);
        assert!(out.ends_with("see elsewhere.\n"));
        // A longer fence with a backtick line inside is closed with its own length.
        let text = format!("````diff\n ```\n{}````\n", "+line\n".repeat(1000));
        let out = cut(&text, 300, bytes, "see elsewhere.");
        assert!(out.len() <= 300, "{}", out.len());
        assert_eq!(
            open_fence(&out.split_inclusive('\n').collect::<Vec<_>>()),
            None
        );
        assert!(out.contains("+line\n````\n\n\n… cut"), "{out}");
    }

    #[test]
    fn redaction_second_layer() {
        let id = testdata::nid("tenant", "e00", 15);
        let text = format!("| `{id}` | x |\nclean line\n");
        let out = redact_private(&scanner(), &text);
        assert!(!out.contains(&id));
        assert!(out.contains("[redacted]") && out.contains("clean line"));
        let key = testdata::pem_key("RSA ", 5);
        let out = redact_private(&scanner(), &format!("before\n{key}after\n"));
        assert!(!out.contains("PRIVATE KEY"), "{out}");
        assert!(out.starts_with("before\n") && out.contains("after"));
        // Fleetbot's own words pass untouched.
        let plain = "✅ No private values; alias `0123456789abcdef` · digest `abcdef012345`";
        assert_eq!(redact_private(&scanner(), plain), plain);
    }

    #[test]
    fn command_reply() {
        let reply = render_command_reply(
            5,
            Some("alice"),
            &["line 1: unknown command /pln (did you mean /plan?)".into()],
            &[ReplyNote {
                line: "/status of fleets/prod.yaml (fleet prod): 1 deployed, 0 failed".into(),
                items: vec!["platform/train: deployed (2 of 2 nodes ready)".into()],
            }],
            true,
            &CommandHelp::all(|_| crate::github::Permission::Write),
        );
        insta::assert_snapshot!(reply, @r"
        <!-- fleetbot:reply-to 5 -->
        @alice some commands in your comment were not run:

        - ❌ line 1: unknown command /pln (did you mean /plan?)
        - /status of fleets/prod.yaml (fleet prod): 1 deployed, 0 failed
          - platform/train: deployed (2 of 2 nodes ready)

        | Command | What it does | Least permission |
        |---|---|---|
        | `/plan` | recompute the preflight for the head commit (`fleet=NAME` to limit it) | write |
        | `/apply` | apply the merged fleets now, under the guards (`fleet=PATH` to limit it) | write |
        | `/approve-destroy` | approve the deletions and shrinks the current plan lists (`fleet=PATH`) | write |
        | `/unlock` | free a fleet's apply lock held by another apply (`fleet=PATH`) | write |
        | `/verify-storage` | verify storage on every worker of the fleet's clusters (`fleet=NAME`, `clusters=render-*`) | write |
        | `/verify-graphics` | verify graphics on every GPU worker of the fleet's clusters (`fleet=NAME`, `clusters=render-*`) | write |
        | `/verify-mig` | verify the MIG layout, Operator and every slice of the fleet's MIG clusters (`fleet=NAME`, `clusters=mig-*`) | write |
        | `/status` | show the fleet's current state (`fleet=NAME`) | write |
        | `/reconcile` | compare the default branch's fleets with the cloud now (updates `fleet/drift`) | write |
        | `/help` | list these commands | write |

        Commands go one per line, outside code, quotes and HTML comments; arguments are `key=value`.
        ");
    }
}
