//! One changed fleet spec: whether it loads, what its plan does and whether its budget fits,
//! with errors located but never quoting a private value.

use std::collections::BTreeSet;

use super::scan::private_lines;
use super::{ChangedFile, QuotaInput, budget, diff, live_summary, static_summary};
use crate::bot::report::{FileChange, FleetReport, FleetStatus, SpecDiff, SpecProblem};
use crate::fleet::live::LiveSpec;
use crate::fleet::static_plan::{FleetPlan, PlanOptions, plan};
use crate::github::FileStatus;
use crate::privacy::Scanner;
use crate::runtime::{RuntimeValues, load_str_with};
use crate::spec::{FleetSpec, SpecError};

/// The fleet's report and the diff to show for one changed spec.
pub(super) fn evaluate_spec(
    file: &ChangedFile,
    scanner: &Scanner,
    quota: Option<&QuotaInput<'_>>,
    live: Option<&LiveSpec>,
    runtime: Option<&RuntimeValues>,
) -> (FleetReport, SpecDiff) {
    let change = FileChange::from_github(file.status, file.previous_path.as_deref());
    let head_private = private_lines_in(scanner, &file.path, file.head.as_deref());
    let base_private = private_lines_in(scanner, file.base_path(), file.base.as_deref());
    let holds_private = !head_private.is_empty() || !base_private.is_empty();
    let diff = diff::spec_diff(file, &change, holds_private);
    let base_spec = base_spec(file, runtime);
    let base_plan = base_spec.as_ref().map(|s| plan(s, &PlanOptions::default()));
    let base = base_spec.as_ref().zip(base_plan.as_ref());
    let mut report = FleetReport {
        path: file.path.clone(),
        change,
        name: None,
        status: FleetStatus::Valid,
        problems: Vec::new(),
        plan: None,
        budget: None,
    };
    if file.status == FileStatus::Removed {
        // Deleting a spec deletes nothing: the fleet is reported, never planned as a teardown
        // (that is `fleetbot destroy`'s, asked for explicitly).
        report.status = FleetStatus::Removed;
        report.name = base_spec.as_ref().map(|s| s.name.clone());
        return (report, diff);
    }
    match head_text(file) {
        Ok(text) => {
            let head = Head {
                text,
                private: &head_private,
                base,
                runtime,
            };
            evaluate_head(&mut report, &head, quota, live);
        }
        Err(message) => {
            report.status = FleetStatus::Invalid;
            report.problems.push(SpecProblem {
                line: None,
                column: None,
                field: String::new(),
                message,
            });
        }
    }
    (report, diff)
}

/// The spec at the base commit, when it loads: what the head is compared with.
fn base_spec(file: &ChangedFile, runtime: Option<&RuntimeValues>) -> Option<FleetSpec> {
    let text = std::str::from_utf8(file.base.as_deref()?).ok()?;
    load_str_with(text, file.base_path(), runtime).ok()
}

fn private_lines_in(scanner: &Scanner, path: &str, content: Option<&[u8]>) -> BTreeSet<u32> {
    content
        .map(|c| private_lines(scanner, path, c))
        .unwrap_or_default()
}

/// The head content as text, or why it cannot be evaluated (a whole-file problem).
fn head_text(file: &ChangedFile) -> Result<&str, String> {
    let Some(content) = &file.head else {
        let why = file
            .not_fetched
            .as_deref()
            .unwrap_or("content not available");
        return Err(format!("the spec could not be read: {why}"));
    };
    std::str::from_utf8(content).map_err(|_| "the file is not valid UTF-8".to_string())
}

/// What the head side of a spec brings to its evaluation.
struct Head<'a> {
    text: &'a str,
    /// Lines holding a private value, whose error messages lose their quoted text.
    private: &'a BTreeSet<u32>,
    /// The spec at the base commit and its static plan, when it loads.
    base: Option<(&'a FleetSpec, &'a FleetPlan)>,
    /// The server's runtime values, filled in before validation.
    runtime: Option<&'a RuntimeValues>,
}

fn evaluate_head(
    report: &mut FleetReport,
    head: &Head<'_>,
    quota: Option<&QuotaInput<'_>>,
    live: Option<&LiveSpec>,
) {
    let spec = match load_str_with(head.text, &report.path, head.runtime) {
        Ok(spec) => spec,
        Err(e) if e.file != report.path => {
            // The server's runtime values contradict this spec: not a line of the change.
            report.status = FleetStatus::Invalid;
            report.name = spec_name(head.text);
            report.problems.push(SpecProblem {
                line: None,
                column: None,
                field: String::new(),
                message: e.to_string(),
            });
            return;
        }
        Err(e) => {
            report.status = FleetStatus::Invalid;
            report.name = spec_name(head.text);
            report.problems.push(located_problem(&e, head.private));
            return;
        }
    };
    report.name = Some(spec.name.clone());
    if !spec.warnings.is_empty() {
        // The reference ignores unknown keys, but in review a typo (`regoin:`) that silently
        // changes nothing is what the check exists to catch: the App holds the spec to
        // `--strict`, each key located like any spec error.
        report.status = FleetStatus::Invalid;
        report
            .problems
            .extend(unknown_key_problems(&spec, head.private));
        return;
    }
    let head_plan = plan(&spec, &PlanOptions::default());
    let mut summary = static_summary::summarize(Some(&head_plan), head.base.map(|(_, p)| p));
    report.budget = Some(match live {
        Some(live) => {
            live_summary::apply_live(&mut summary, &head_plan, &spec, head.base, live);
            budget::live_budget(&spec, live)
        }
        None => budget::budget(&spec, quota),
    });
    report.plan = Some(summary);
}

/// The spec's unknown keys as problems. On a line holding a private value the key itself is
/// left out (it may be the value), and so is the suggestion, which would hint at it.
fn unknown_key_problems(spec: &FleetSpec, private: &BTreeSet<u32>) -> Vec<SpecProblem> {
    let mut problems: Vec<SpecProblem> = spec
        .warnings
        .items
        .iter()
        .map(|w| {
            let mut problem = located_problem(&w.to_error(), private);
            if private.contains(&w.pos.line) {
                problem.field = w.parent.clone();
                problem.message = "unknown key".to_string();
            }
            problem
        })
        .collect();
    if spec.warnings.omitted > 0 {
        problems.push(SpecProblem {
            line: None,
            column: None,
            field: String::new(),
            message: format!("{} more unknown keys not shown", spec.warnings.omitted),
        });
    }
    problems
}

fn located_problem(e: &SpecError, private: &BTreeSet<u32>) -> SpecProblem {
    let line = e.pos.map(|p| p.line);
    let private_here = line.is_some_and(|l| private.contains(&l));
    SpecProblem {
        line,
        column: e.pos.map(|p| p.col),
        field: e.path.clone(),
        message: if private_here {
            without_quoted_text(&e.message)
        } else {
            e.message.clone()
        },
    }
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
pub(super) fn without_quoted_text(message: &str) -> String {
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
