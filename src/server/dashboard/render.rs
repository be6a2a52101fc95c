//! The dashboard page: one server-rendered HTML document from a [`DashboardView`] (minijinja,
//! with HTML auto-escaping, inline CSS and no script), checked once more by the privacy
//! scanner after rendering.

use std::sync::OnceLock;

use minijinja::value::Serde;
use minijinja::{Environment, context};

use super::view::DashboardView;

/// The template's name: the `.html` suffix turns minijinja's HTML auto-escaping on.
const TEMPLATE: &str = "dashboard.html";

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
        env.add_template(
            TEMPLATE,
            include_str!("../../../templates/dashboard/dashboard.html.j2"),
        )
        .expect("the dashboard template parses");
        env.add_filter("utc", |ms: i64| utc(ms));
        env.add_filter("iso", |ms: i64| iso(ms));
        env.add_filter("ago", |ms: i64, now: i64| ago(ms, now));
        env.add_filter("tone", |word: String| tone(&word));
        env
    })
}

/// The page. Every string of the view is already sanitized; the finished page goes through
/// the scanner once more, so a value that slipped into a field is `[redacted]` all the same.
pub fn render_dashboard(view: &DashboardView) -> String {
    let html = env()
        .get_template(TEMPLATE)
        .and_then(|t| t.render(context! { view => Serde(view) }))
        .unwrap_or_else(|e| {
            // A template error is a bug of this build, not of the data: say so plainly.
            tracing::error!("dashboard template failed: {e}");
            "<!doctype html><title>fleetbot</title><p>The dashboard could not be rendered; see the server log.</p>".to_string()
        });
    crate::bot::render::redact_private(super::gather::scanner(), &html)
}

/// A badge's colour class for a state or conclusion word.
fn tone(word: &str) -> &'static str {
    match word {
        "deployed" | "success" | "done" | "applied" | "destroyed" => "good",
        "error" | "failure" | "failed" | "destroy-incomplete" | "timed_out" | "cancelled" => "bad",
        "queued" | "running" | "pending" | "action_required" | "creating" | "updating"
        | "deploying" => "busy",
        _ => "neutral",
    }
}

/// `(year, month, day)` of a day count since 1970-01-01 (Howard Hinnant's `civil_from_days`).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

fn parts(ms: i64) -> (i64, u32, u32, i64, i64, i64) {
    let secs = ms.div_euclid(1000);
    let (y, m, d) = civil(secs.div_euclid(86_400));
    let s = secs.rem_euclid(86_400);
    (y, m, d, s / 3600, s % 3600 / 60, s % 60)
}

/// `2025-03-01 14:05:09 UTC`.
pub fn utc(ms: i64) -> String {
    let (y, mo, d, h, mi, s) = parts(ms);
    format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02} UTC")
}

/// `2025-03-01T14:05:09Z`, for `<time datetime>`.
pub fn iso(ms: i64) -> String {
    let (y, mo, d, h, mi, s) = parts(ms);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
}

/// How long before (or after) `now` a moment is, in the largest whole unit.
pub fn ago(ms: i64, now: i64) -> String {
    if ms <= 0 {
        return "never".to_string();
    }
    let delta = (now - ms) / 1000;
    let (n, future) = if delta < 0 {
        (-delta, true)
    } else {
        (delta, false)
    };
    let text = match n {
        0..=59 => format!("{n} s"),
        60..=3599 => format!("{} min", n / 60),
        3600..=86_399 => format!("{} h", n / 3600),
        _ => format!("{} d", n / 86_400),
    };
    if future {
        format!("in {text}")
    } else {
        format!("{text} ago")
    }
}

#[cfg(test)]
mod tests;
