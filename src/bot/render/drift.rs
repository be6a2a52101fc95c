//! The `fleet/drift` check run's text: one table of fleets, then what differs in each, every
//! name from a spec made inert (a spec's names are a pull request's text once merged).

use super::escape::{cell, cell_code, code, md};
use crate::bot::report::drift::{DriftReport, DriftState};
use crate::privacy::Scanner;

/// At most this many differences are listed per fleet; the rest are counted.
const MAX_LINES: usize = 50;

/// The summary of the check run, redacted as every public text is.
pub fn render_drift(report: &DriftReport, scanner: &Scanner) -> String {
    let mut out = format!(
        "The specs of {} at {} compared with the live state in {}.\n\n",
        code(&report.branch),
        code(report.head_sha.get(..7).unwrap_or(&report.head_sha)),
        md(&report.cloud)
    );
    if let Some(why) = &report.unlisted {
        out.push_str(&format!(
            "**Not compared:** {}. Nothing counts as in sync until the specs can be read.\n",
            md(why)
        ));
        return super::redact_private(scanner, &out);
    }
    if report.fleets.is_empty() {
        out.push_str("No file on the default branch matches `.fleetbot.yml`'s `specs` globs.\n");
        return super::redact_private(scanner, &out);
    }
    out.push_str("| Spec | Fleet | State |\n|---|---|---|\n");
    for f in &report.fleets {
        let state = match f.state {
            DriftState::InSync => "✅ in sync".to_string(),
            DriftState::Drifted => format!("❌ drifted ({})", f.differences.len()),
            DriftState::NotPlanned => "➖ nothing the engine plans (soperator only)".to_string(),
            DriftState::Unreadable => format!("⚠️ not compared: {}", cell(&f.note)),
            DriftState::Invalid => format!("⚠️ invalid on the default branch: {}", cell(&f.note)),
        };
        out.push_str(&format!(
            "| {} | {} | {state} |\n",
            cell_code(&f.path),
            f.name
                .as_deref()
                .map(cell_code)
                .unwrap_or_else(|| "—".into()),
        ));
    }
    for f in report.fleets.iter().filter(|f| !f.differences.is_empty()) {
        out.push_str(&format!("\n#### {}\n\n", code(&f.path)));
        for d in f.differences.iter().take(MAX_LINES) {
            out.push_str(&format!("- **{}**: {}\n", d.kind.label(), md(&d.line)));
        }
        if f.differences.len() > MAX_LINES {
            out.push_str(&format!(
                "- … and {} more\n",
                f.differences.len() - MAX_LINES
            ));
        }
        if report.repairs {
            out.push_str(if f.repair.is_some() {
                "\nQueued for a drift repair (`drift.apply`): its result is `fleet/apply` on this commit.\n"
            } else {
                "\nNot repaired automatically: re-applying would delete, replace or shrink something, or the plan has a problem. Change the spec, or restore the cloud by hand.\n"
            });
        }
    }
    out.push_str(
        "\nThe live state is read again every reconcile interval (`drift.interval_minutes` in `.fleetbot.yml`) and by `/reconcile`; this check run is updated in place while the default branch's head stays.\n",
    );
    super::redact_private(scanner, &out)
}

/// The first line of the drift tracking issue, by which the App finds it again.
pub const DRIFT_ISSUE_MARKER: &str = "<!-- fleetbot:drift -->";

/// The drift tracking issue: its title, its body, and whether it should be open. Open exactly
/// when `fleet/drift` is not a success, since both are decided by the same report.
pub fn render_drift_issue(report: &DriftReport, scanner: &Scanner) -> (String, String, bool) {
    let open = report.conclusion() != crate::github::CheckConclusion::Success;
    let title = if open {
        format!("Fleet drift on {}: {}", report.branch, report.title())
    } else {
        format!("Fleet drift on {}: back in sync", report.branch)
    };
    let lead = if open {
        "fleetbot found the default branch's fleets out of step with the cloud. This issue is updated by every reconcile pass and closed once they are back in sync."
    } else {
        "Back in sync: fleetbot closed this issue. It reopens it if the fleets drift again."
    };
    let body = format!(
        "{DRIFT_ISSUE_MARKER}\n{lead}\n\n{}",
        render_drift(report, scanner)
    );
    (super::redact_private(scanner, &title), body, open)
}
