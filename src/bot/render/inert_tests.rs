//! Whatever a pull request puts into a report renders literally: every text the bot posts is
//! parsed as GitHub does (comrak in GFM mode) and checked for live markup from the report's
//! strings, against a twin report whose strings are plain words.

use std::sync::OnceLock;

use comrak::nodes::{AstNode, NodeValue};
use comrak::{Arena, Options, parse_document};
use proptest::prelude::*;
use regex::Regex;

use super::*;
use crate::bot::report::apply::{ApplyCounts, FleetApply};
use crate::bot::report::{
    BudgetLine, BudgetReport, BudgetStatus, ConfigReport, FileChange, FleetReport, FleetStatus,
    LiveProblem, LiveProblemKind, Outcome, PlanItem, PlanSummary, PrivacyLocation, PrivacyReport,
    RuleCount, SkippedFile, SpecDiff, SpecProblem,
};
use crate::fleet::guard::Trigger;
use crate::github::Permission;
use crate::privacy::ScannerConfig;
use crate::quota::Verdict as QuotaVerdict;

/// The run's own link in the apply reply; the only link any text may hold.
const RUN_URL: &str = "https://github.com/o/r/runs/9";
/// The pull request's number: `#7` is fleetbot's own reference to it.
const NUMBER: u64 = 7;

fn scanner() -> Scanner {
    Scanner::new(ScannerConfig {
        key: b"k".to_vec(),
        allowlist: Default::default(),
    })
    .unwrap()
}

/// GitHub's dialect: GFM (tables, autolinks, strikethrough) and what github.com adds.
fn options() -> Options<'static> {
    let mut o = Options::default();
    o.extension.table = true;
    o.extension.autolink = true;
    o.extension.strikethrough = true;
    o.extension.alerts = true;
    o.extension.footnotes = true;
    o.extension.tasklist = true;
    o.extension.math_dollars = true;
    // GitHub's tagfilter only changes how raw HTML is written out; here every raw HTML node
    // but fleetbot's own is refused, which is stricter.
    o
}

fn each<'a>(root: &'a AstNode<'a>, f: &mut impl FnMut(&'a AstNode<'a>, usize)) {
    fn walk<'a>(n: &'a AstNode<'a>, depth: usize, f: &mut impl FnMut(&'a AstNode<'a>, usize)) {
        f(n, depth);
        for c in n.children() {
            walk(c, depth + 1, f);
        }
    }
    walk(root, 0, f);
}

/// The structure of a text: every block and every inline that is not plain text, by depth.
/// Paragraphs are left out (an empty list item has none), and so are code spans, which hold
/// text literally whatever it is.
fn skeleton(text: &str) -> Vec<String> {
    let arena = Arena::new();
    let root = parse_document(&arena, text, &options());
    let mut out = Vec::new();
    each(root, &mut |n, depth| {
        let kind = match &n.data().value {
            NodeValue::Text(_)
            | NodeValue::Code(_)
            | NodeValue::SoftBreak
            | NodeValue::Paragraph
            | NodeValue::HtmlInline(_) => return,
            NodeValue::Heading(h) => format!("heading{}", h.level),
            NodeValue::Table(t) => format!("table{}", t.alignments.len()),
            other => format!("{other:?}")
                .split(['(', ' ', '{'])
                .next()
                .unwrap_or_default()
                .to_string(),
        };
        out.push(format!("{depth}:{kind}"));
    });
    out
}

/// Cells in one table row as GFM splits it: at every `|` not taken by a backslash escape,
/// code spans included.
fn cells(line: &str) -> usize {
    let line = line.trim();
    let line = line.strip_prefix('|').unwrap_or(line);
    let bytes = line.as_bytes();
    let (mut n, mut i, mut last_was_pipe) = (1, 0, false);
    while i < bytes.len() {
        last_was_pipe = false;
        match bytes[i] {
            b'\\' => i += 1,
            b'|' => {
                n += 1;
                last_was_pipe = true;
            }
            _ => {}
        }
        i += 1;
    }
    if last_was_pipe { n - 1 } else { n }
}

fn regex(cell: &'static OnceLock<Regex>, pattern: &str) -> &'static Regex {
    cell.get_or_init(|| Regex::new(pattern).unwrap())
}

fn html_block_is_ours(block: &str) -> bool {
    static MARKER: OnceLock<Regex> = OnceLock::new();
    static SUMMARY: OnceLock<Regex> = OnceLock::new();
    let block = block.trim_end();
    let marker = regex(&MARKER, r"^<!-- fleetbot:[a-z0-9 :-]+ -->$");
    let summary = regex(
        &SUMMARY,
        r#"^<details><summary><code>(?:[^<>"'@#&\r\n]|&(?:amp|lt|gt|quot|#39|#64|#35);)*</code></summary>$"#,
    );
    marker.is_match(block)
        || summary.is_match(block)
        || block == "</details>"
        || block == "<details><summary>Commands</summary>"
}

/// What in `text` GitHub would render live: links and images (but `links`), HTML other than
/// fleetbot's markers and `<details>`, text that GitHub turns into a mention, a reference
/// (but `refs`) or a link, and table rows with more or fewer cells than their header.
fn live_markup(text: &str, links: &[&str], refs: &[&str]) -> Vec<String> {
    let arena = Arena::new();
    let root = parse_document(&arena, text, &options());
    // Lines as CommonMark counts them: a lone `\r` ends one too.
    let lines: Vec<&str> = text
        .split("\r\n")
        .flat_map(|l| l.split(['\n', '\r']))
        .collect();
    static LINKISH: OnceLock<Regex> = OnceLock::new();
    let linkish = regex(&LINKISH, r"(?i)@[a-z0-9_]|#[0-9]|\bgh-[0-9]|://|www\.");
    let mut found = Vec::new();
    let check_text = |run: &str, found: &mut Vec<String>| {
        let mut run = run.to_string();
        for r in refs {
            run = run.replace(r, " ");
        }
        if let Some(m) = linkish.find(&run) {
            found.push(format!("live text {:?} in {run:?}", m.as_str()));
        }
    };
    each(root, &mut |n, _| {
        let data = n.data();
        match &data.value {
            NodeValue::Link(l) if links.contains(&l.url.as_str()) => {}
            NodeValue::Link(l) | NodeValue::Image(l) => found.push(format!("link to {}", l.url)),
            NodeValue::HtmlInline(h) if ["<!-- -->", "<sub>", "</sub>"].contains(&h.as_str()) => {}
            NodeValue::HtmlInline(h) => found.push(format!("inline HTML {h:?}")),
            NodeValue::HtmlBlock(b) if html_block_is_ours(&b.literal) => {}
            NodeValue::HtmlBlock(b) => found.push(format!("HTML block {:?}", b.literal)),
            NodeValue::TableRow(_) => {
                let header = n.parent().and_then(|t| t.first_child());
                let width = |row: &AstNode<'_>| {
                    let pos = row.data().sourcepos;
                    let line = lines.get(pos.start.line - 1).copied().unwrap_or("");
                    cells(line.get(pos.start.column - 1..).unwrap_or(line))
                };
                if let Some(header) = header {
                    let (want, got) = (width(header), width(n));
                    if want != got {
                        let line = lines.get(data.sourcepos.start.line - 1);
                        found.push(format!("row of {got} cells under {want}: {line:?}"));
                    }
                }
            }
            _ => {}
        }
        // Text as GitHub's HTML holds it: adjacent text nodes (and soft breaks) are one.
        let in_link = n.ancestors().any(
            |a| matches!(&a.data().value, NodeValue::Link(l) if links.contains(&l.url.as_str())),
        );
        if !in_link {
            let mut run = String::new();
            for c in n.children() {
                match &c.data().value {
                    NodeValue::Text(t) => run.push_str(t),
                    NodeValue::SoftBreak => run.push('\n'),
                    _ => {
                        check_text(&run, &mut found);
                        run.clear();
                    }
                }
            }
            check_text(&run, &mut found);
        }
    });
    found
}

/// Hands out the report's strings in order, round and round.
struct Strings<'a> {
    all: &'a [String],
    next: usize,
}

impl Strings<'_> {
    fn s(&mut self) -> String {
        let s = self.all[self.next % self.all.len()].clone();
        self.next += 1;
        s
    }
}

/// A report with a pull request's string in every field that can hold one; `variant`'s bits
/// choose among the shapes the templates tell apart.
fn pr_report(all: &[String], variant: u8) -> PrReport {
    let mut g = Strings { all, next: 0 };
    let bit = |i: u8| variant & (1 << i) != 0;
    let item = |g: &mut Strings<'_>| PlanItem {
        kind: "cluster",
        name: g.s(),
        details: vec![g.s(), g.s()],
    };
    let path = g.s();
    let plan = PlanSummary {
        region: g.s(),
        projects: 1,
        clusters: 2,
        mk8s: 1,
        soperator: 1,
        create: vec![item(&mut g)],
        change: vec![item(&mut g)],
        destroy: vec![item(&mut g)],
        unchanged: 1,
        live_cloud: Some(g.s()),
        unproven: 1,
        needs_approval: vec![g.s()],
        problems: vec![LiveProblem {
            kind: LiveProblemKind::NotOwned,
            text: g.s(),
        }],
    };
    let budget = BudgetReport {
        status: if bit(5) {
            BudgetStatus::Short
        } else {
            BudgetStatus::Unproven
        },
        rows: vec![BudgetLine {
            region: g.s(),
            quota: g.s(),
            needed: g.s(),
            in_use: g.s(),
            limit: g.s(),
            available: g.s(),
            after: g.s(),
            verdict: QuotaVerdict::Short,
        }],
        blocked_by: vec![g.s()],
        note: Some(g.s()),
    };
    let fleet = FleetReport {
        path: path.clone(),
        change: if bit(3) {
            FileChange::Renamed { from: g.s() }
        } else {
            FileChange::Modified
        },
        name: Some(g.s()),
        status: if bit(1) {
            FleetStatus::Invalid
        } else {
            FleetStatus::Valid
        },
        problems: vec![SpecProblem {
            line: Some(3),
            column: Some(5),
            field: g.s(),
            message: g.s(),
        }],
        plan: Some(plan),
        budget: Some(budget),
    };
    let privacy = PrivacyReport {
        scanned: 1,
        total: if bit(4) { 1 } else { 0 },
        by_rule: vec![RuleCount {
            rule: crate::privacy::RuleId::NebiusId,
            explanation: "a Nebius ID",
            count: 1,
        }],
        findings: vec![PrivacyLocation {
            path: g.s(),
            line: 1,
            column: 2,
            rule: crate::privacy::RuleId::NebiusId,
            alias: "0123456789abcdef".into(),
        }],
        skipped: vec![SkippedFile {
            path: g.s(),
            reason: g.s(),
            unread: false,
        }],
        unread: 0,
        listing_cut: false,
    };
    let config = ConfigReport {
        branch: g.s(),
        present: true,
        error: bit(2).then(|| g.s()),
        changed_in_pr: true,
    };
    let fleets = vec![fleet];
    PrReport {
        repo: "o/r".into(),
        number: NUMBER,
        head_sha: "a".repeat(40),
        base_sha: "b".repeat(40),
        outcome: Outcome::decide(&config, &privacy, &fleets),
        config,
        fleets,
        privacy,
        diffs: vec![SpecDiff {
            path,
            change: FileChange::Modified,
            unified: (!bit(0)).then(|| g.s()),
            withheld: bit(0).then_some(crate::bot::report::DiffWithheld::TooLarge),
        }],
        digest: "c".repeat(64),
        commands: CommandHelp::all(|_| Permission::Write),
        notes: vec![g.s()],
    }
}

fn apply_report(all: &[String], variant: u8) -> ApplyReport {
    let mut g = Strings { all, next: 0 };
    let fleet = |outcome: FleetOutcome, g: &mut Strings<'_>| FleetApply {
        path: g.s(),
        name: Some(g.s()),
        outcome,
        counts: ApplyCounts {
            created: 1,
            ..Default::default()
        },
        failed_targets: vec![g.s()],
        deleted_targets: vec![g.s()],
        changed_targets: vec![g.s()],
        waves: vec![g.s()],
    };
    let reason = g.s();
    let refusals = [
        Refusal::Problems {
            problems: vec![g.s()],
        },
        Refusal::Drifted {
            since_review: vec![g.s()],
        },
        Refusal::NeedsApproval {
            deletions: vec![g.s()],
        },
    ];
    let mut fleets = vec![
        fleet(FleetOutcome::Applied, &mut g),
        fleet(FleetOutcome::Failed, &mut g),
        fleet(FleetOutcome::ChangedSinceReview, &mut g),
        fleet(FleetOutcome::NotApplied { reason }, &mut g),
    ];
    for refusal in refusals {
        fleets.push(fleet(FleetOutcome::Refused { refusal }, &mut g));
    }
    ApplyReport {
        repo: "o/r".into(),
        number: NUMBER,
        sha: "d".repeat(40),
        trigger: Trigger::Command,
        actor: g.s(),
        blocked: (variant & 1 != 0).then(|| ApplyBlocked::Config { error: g.s() }),
        fleets,
    }
}

/// A reply to commands: errors that echo arguments, notes shaped as `/status` writes them.
fn reply(all: &[String]) -> String {
    let mut g = Strings { all, next: 0 };
    let errors = vec![
        format!("line 1: unknown argument {} of /plan", g.s()),
        format!("/status of {}: {}", g.s(), g.s()),
    ];
    let notes = vec![
        ReplyNote {
            line: format!(
                "/status of {} (fleet {}): 1 deployed, 0 failed",
                g.s(),
                g.s()
            ),
            items: vec![format!(
                "{}/{}: deployed (1 of 1 nodes ready)",
                g.s(),
                g.s()
            )],
        },
        format!("/unlock: freed the lock of {} held by {}", g.s(), g.s()).into(),
    ];
    let commands = CommandHelp::all(|_| Permission::Write);
    render_command_reply(5, None, &errors, &notes, true, &commands)
}

/// Every text rendered from strings `all`, by name.
fn texts(all: &[String], variant: u8) -> Vec<(&'static str, String)> {
    let scanner = scanner();
    let report = pr_report(all, variant);
    let mut out = vec![("comment", render_comment(&report, &scanner))];
    let (summary, text) = render_privacy_check(&report, &scanner);
    out.push(("privacy summary", summary));
    out.extend(text.map(|t| ("privacy text", t)));
    let (summary, text) = render_preflight_check(&report, &scanner);
    out.push(("preflight summary", summary));
    out.extend(text.map(|t| ("preflight text", t)));
    let applied = render_apply(&apply_report(all, variant), RUN_URL, &scanner);
    out.push(("apply summary", applied.summary));
    out.push(("apply reply", applied.reply));
    out.push(("command reply", reply(all)));
    out
}

/// The strings as plain words, empty where the original is empty (the templates tell empty
/// apart).
fn twin(all: &[String]) -> Vec<String> {
    all.iter()
        .enumerate()
        .map(|(i, s)| {
            if s.is_empty() {
                String::new()
            } else {
                format!("word{i}")
            }
        })
        .collect()
}

/// Asserts that strings `all` render literally in every text.
fn assert_inert(all: &[String], variant: u8) {
    let plain = texts(&twin(all), variant);
    for ((name, text), (_, plain)) in texts(all, variant).into_iter().zip(plain) {
        let live = live_markup(&text, &[RUN_URL], &[&format!("#{NUMBER}")]);
        assert!(live.is_empty(), "{name}: {live:#?}\n---\n{text}");
        assert_eq!(
            skeleton(&text),
            skeleton(&plain),
            "{name}: the strings changed the structure\n---\n{text}\n---\n{plain}"
        );
    }
}

fn one(s: &str) -> Vec<String> {
    vec![s.to_string()]
}

#[test]
fn the_twin_is_clean() {
    // The checker's baseline: fleetbot's own markup passes it.
    for variant in 0..64 {
        assert_inert(&twin(&one("x")), variant);
    }
}

#[test]
fn autolinks_stay_text() {
    for s in [
        "see https://evil.example/x",
        "www.evil.example",
        "mail a@b.co",
        "mailto:a@b.co",
    ] {
        assert_inert(&one(s), 0b101);
    }
}

#[test]
fn entity_and_plain_mentions_stay_text() {
    for s in [
        "&commat;octo-org/team",
        "&#64;octo",
        "@octo-org/team",
        "x@y",
    ] {
        assert_inert(&one(s), 0b101);
    }
}

#[test]
fn issue_references_stay_text() {
    for s in ["#1", "octo/other#2", "GH-3", "&#35;4"] {
        assert_inert(&one(s), 0b101);
    }
}

#[test]
fn pipes_do_not_split_cells() {
    for s in ["a|b", "a\\|b", "a\\\\|b", "`a|b`"] {
        assert_inert(&one(s), 0b10000);
    }
}

#[test]
fn the_diff_summary_holds_no_html() {
    for s in [
        "fleets/@org/team<b>x</b><img src=x>.yaml",
        "fleets/a\"onmouseover=x.yaml",
        "fleets/</summary></details># x.yaml",
        "fleets/a\n\n<b>b</b>.yaml",
    ] {
        assert_inert(&one(s), 0);
    }
}

#[test]
fn line_starts_stay_text() {
    for s in [
        "- x", "+ x", "1. x", "2) x", "# x", "> x", "---", "=== ", "  - x",
    ] {
        assert_inert(&one(s), 0b101);
    }
}

/// Fragments that mean something to GitHub, and some that do not.
const FRAGMENTS: &[&str] = &[
    "@",
    "@octo-org/team",
    "&commat;",
    "&#64;",
    "&#x40;",
    "#",
    "#1",
    "octo/other#2",
    "GH-1",
    "gh-2",
    "https://x.io",
    "http:",
    "//",
    "www.",
    "WWW.e.com",
    "a@b.c",
    "mailto:",
    "<b>",
    "</summary>",
    "</details>",
    "<img src=x>",
    "<!--",
    "-->",
    "<",
    ">",
    "&",
    "&amp;",
    "&lt;",
    ";",
    "|",
    "\\",
    "\\|",
    "`",
    "```",
    "~~~",
    "~",
    "*",
    "_",
    "**",
    "[",
    "]",
    "(",
    ")",
    "![x](y)",
    "[x](https://e.com)",
    "[x]: https://e.com",
    "# ",
    "## h",
    "- ",
    "+ ",
    "1. ",
    "2) ",
    "> ",
    "---",
    "===",
    "\n",
    "\r",
    "\t",
    " ",
    "  ",
    "\n\n",
    "$x$",
    ":",
    "/",
    "\"",
    "'",
    "=",
    "x",
    "fleet",
    "é",
    "\u{0}",
    "[!NOTE]",
    ":+1:",
    "^",
    "{",
    "}",
];

fn hostile() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::collection::vec(prop::sample::select(FRAGMENTS), 0..8).prop_map(|v| v.concat()),
        1 => any::<String>(),
    ]
}

// 256 cases by default; `PROPTEST_CASES` runs more.
proptest! {
    #[test]
    fn pull_request_strings_render_literally(
        all in prop::collection::vec(hostile(), 1..16),
        variant in any::<u8>(),
    ) {
        assert_inert(&all, variant);
    }
}
