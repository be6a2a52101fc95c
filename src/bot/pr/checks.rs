//! The two check runs' payloads: conclusion and title from the report's one outcome, the
//! rendered summary and text, and an annotation for every located problem.

use super::{PREFLIGHT_CHECK, PRIVACY_CHECK};
use crate::bot::render;
use crate::bot::report::{
    FleetReport, PrReport, PrivacyLocation, PrivacyVerdict, SpecProblem, Verdict, plural,
};
use crate::github::{Annotation, AnnotationLevel, CheckConclusion, CheckOutput, CheckRunPayload};
use crate::privacy::Scanner;

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
        PrivacyVerdict::Incomplete => (
            CheckConclusion::Failure,
            format!(
                "Incomplete: {}",
                crate::bot::report::unscanned(report.privacy.unread)
            ),
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

pub(super) fn privacy_check(report: &PrReport, scanner: &Scanner) -> CheckRunPayload {
    let annotations = report.privacy.findings.iter().map(finding).collect();
    let output = render::render_privacy_check(report, scanner);
    payload(
        PRIVACY_CHECK,
        report,
        privacy_conclusion(report),
        output,
        annotations,
    )
}

fn finding(f: &PrivacyLocation) -> Annotation {
    let message = format!(
        "{}. The value is not shown; its alias is {}. Remove it from the change (and from history), and rotate it if it is a credential.",
        f.rule.explanation(),
        f.alias
    );
    let title = format!("Private value: {}", f.rule);
    Annotation {
        start_column: Some(f.column),
        end_column: Some(f.column),
        ..failure(&f.path, f.line, message, &title)
    }
}

/// `fleet/preflight`'s conclusion and title: a function of the report's outcome alone, which
/// the summary is rendered from too, so a summary listing a blocker always comes with a
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

pub(super) fn preflight_check(report: &PrReport, scanner: &Scanner) -> CheckRunPayload {
    let annotations = report.fleets.iter().flat_map(fleet_annotations).collect();
    let output = render::render_preflight_check(report, scanner);
    payload(
        PREFLIGHT_CHECK,
        report,
        preflight_conclusion(report),
        output,
        annotations,
    )
}

/// A fleet's spec errors on their lines; its live-plan problems and quota shortfalls have no
/// line in the spec to point at, so they sit on the file's first line.
fn fleet_annotations(fleet: &FleetReport) -> Vec<Annotation> {
    let problems = fleet.problems.iter().map(|p| spec_problem(&fleet.path, p));
    let live = fleet.plan.iter().flat_map(|p| &p.problems).map(|problem| {
        let title = format!("Live plan: {}", problem.kind.phrase());
        failure(&fleet.path, 1, problem.text.clone(), &title)
    });
    let quota = fleet
        .budget
        .iter()
        .flat_map(|b| &b.blocked_by)
        .map(|blocked| failure(&fleet.path, 1, blocked.clone(), "Quota shortfall"));
    problems.chain(live).chain(quota).collect()
}

fn spec_problem(path: &str, p: &SpecProblem) -> Annotation {
    let column = p.column.filter(|_| p.line.is_some());
    let message = if p.field.is_empty() {
        p.message.clone()
    } else {
        format!("{}: {}", p.field, p.message)
    };
    Annotation {
        start_column: column,
        end_column: column,
        ..failure(
            path,
            p.line.unwrap_or(1).max(1),
            message,
            "Invalid fleet spec",
        )
    }
}

/// A failure annotation on one whole line.
fn failure(path: &str, line: u32, message: String, title: &str) -> Annotation {
    Annotation {
        path: path.to_string(),
        start_line: line,
        end_line: line,
        start_column: None,
        end_column: None,
        annotation_level: AnnotationLevel::Failure,
        message,
        title: Some(title.to_string()),
    }
}

/// A completed run on the report's head, found again by the plan digest.
fn payload(
    name: &str,
    report: &PrReport,
    (conclusion, title): (CheckConclusion, String),
    (summary, text): (String, Option<String>),
    annotations: Vec<Annotation>,
) -> CheckRunPayload {
    CheckRunPayload {
        name: name.into(),
        head_sha: report.head_sha.clone(),
        external_id: Some(report.digest.clone()),
        conclusion,
        output: CheckOutput {
            title,
            summary,
            text,
            annotations,
        },
        actions: Vec::new(),
    }
}
