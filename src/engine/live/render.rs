//! The live plan as terminal text: one line per resource action, problems under their owner,
//! and a summary line.

use std::fmt::Write;

use super::types::{Action, LivePlan, Problem, ResourceAction};

fn sigil(action: Action) -> &'static str {
    match action {
        Action::Create => "+",
        Action::Update => "~",
        Action::Replace => "-/+",
        Action::Delete => "-",
        Action::NoChange | Action::Reuse => "=",
    }
}

fn render_action(out: &mut String, a: &ResourceAction) {
    let _ = write!(out, "      {} {} {}", sigil(a.action), a.resource, a.name);
    if !a.changes.is_empty() {
        let changes: Vec<String> = a
            .changes
            .iter()
            .map(|c| format!("{}: {} -> {}", c.field, c.from, c.to))
            .collect();
        let _ = write!(out, " ({})", changes.join(", "));
    }
    if !a.reason.is_empty() {
        let _ = write!(out, " [{}]", a.reason);
    }
    out.push('\n');
}

fn render_problems(out: &mut String, problems: &[Problem]) {
    for problem in problems {
        let _ = writeln!(out, "      ! {problem}");
    }
}

impl LivePlan {
    /// Text layout for terminals.
    pub fn render_text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "Fleet '{}' live plan against {}:",
            self.fleet, self.cloud
        );
        for p in &self.projects {
            let _ = writeln!(out, "  project {}", p.key);
            for a in &p.actions {
                render_action(&mut out, a);
            }
            render_problems(&mut out, &p.problems);
        }
        for t in &self.targets {
            let note = match (t.prune, t.unchanged) {
                (true, _) => " (removed from the spec; deleted only by deploy --prune)",
                (false, true) => " (unchanged)",
                (false, false) => "",
            };
            let _ = writeln!(out, "  target {}{note}", t.target);
            // A target lists what would change; its unchanged resources go without saying,
            // except in a pruned target, where "already gone" is news.
            for a in t
                .actions
                .iter()
                .filter(|a| t.prune || a.action != Action::NoChange)
            {
                render_action(&mut out, a);
            }
            render_problems(&mut out, &t.problems);
        }
        let s = self.summary;
        let _ = writeln!(
            out,
            "Plan: {} to create, {} to update, {} to replace, {} to delete, {} unchanged target(s).",
            s.create, s.update, s.replace, s.delete, s.unchanged
        );
        out
    }
}
