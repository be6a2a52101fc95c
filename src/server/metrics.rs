//! Prometheus text exposition for `GET /metrics`: deliveries by event and outcome, refusals
//! by reason and what unverified bodies hold, intake and job latency, GitHub API calls and
//! rate-limit headroom.
//!
//! A handful of counters and two histograms do not justify a metrics crate; the text format
//! (version 0.0.4) is simple and stable. Label values are fixed strings chosen by fleetbot, never
//! raw header values, so an unauthenticated caller cannot grow the label set.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::Duration;

use crate::github::client::ApiMetricsSnapshot;

/// Intake latency buckets (seconds): the target is p99 under 10 ms.
const INTAKE_BUCKETS: [f64; 10] = [
    0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0,
];
/// Job latency buckets (seconds): a preflight makes a few dozen API calls.
const JOB_BUCKETS: [f64; 11] = [0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0];

/// Apply latency buckets (seconds): a cluster takes minutes to create.
const APPLY_BUCKETS: [f64; 10] = [
    1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0, 3600.0,
];

/// The events the server accepts for work; anything else is labelled `other`.
pub const KNOWN_EVENTS: [&str; 7] = [
    "apply",
    "push",
    "pull_request",
    "issue_comment",
    "check_run",
    "installation",
    "ping",
];

/// The label for an event name taken from a request header.
pub fn event_label(event: Option<&str>) -> &'static str {
    match event {
        None => "none",
        Some(e) => KNOWN_EVENTS
            .iter()
            .find(|k| **k == e)
            .copied()
            .unwrap_or("other"),
    }
}

#[derive(Debug, Clone)]
struct Histogram {
    bounds: &'static [f64],
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

impl Histogram {
    fn new(bounds: &'static [f64]) -> Self {
        Histogram {
            bounds,
            counts: vec![0; bounds.len()],
            sum: 0.0,
            count: 0,
        }
    }

    fn observe(&mut self, seconds: f64) {
        for (i, b) in self.bounds.iter().enumerate() {
            if seconds <= *b {
                self.counts[i] += 1;
            }
        }
        self.sum += seconds;
        self.count += 1;
    }

    fn render(&self, out: &mut String, name: &str, labels: &str) {
        let sep = if labels.is_empty() { "" } else { "," };
        for (b, c) in self.bounds.iter().zip(&self.counts) {
            let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"{b}\"}} {c}");
        }
        let _ = writeln!(
            out,
            "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {}",
            self.count
        );
        let braces = if labels.is_empty() {
            String::new()
        } else {
            format!("{{{labels}}}")
        };
        let _ = writeln!(out, "{name}_sum{braces} {}", self.sum);
        let _ = writeln!(out, "{name}_count{braces} {}", self.count);
    }
}

/// A label fleetbot chose: a fixed string here, or one a job process reported.
type Label = Cow<'static, str>;

#[derive(Debug)]
struct Inner {
    deliveries: BTreeMap<(&'static str, &'static str), u64>,
    intake: Histogram,
    jobs: BTreeMap<(Label, Label), Histogram>,
    /// Apply durations by conclusion (their counts are the applies by outcome).
    applies: BTreeMap<Label, Histogram>,
    /// Applies that waited for a fleet lease held by another apply.
    lock_waits: u64,
    /// Fleets the guard refused, by reason.
    refusals: BTreeMap<Label, u64>,
    /// Webhooks refused before their body was used, by reason.
    intake_refusals: BTreeMap<&'static str, u64>,
}

/// What a job recorded, as a job process reports it to the server that serves `/metrics`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobMetric {
    Job {
        event: String,
        outcome: String,
        took_ms: u64,
    },
    Apply {
        conclusion: String,
        took_ms: u64,
        refusals: Vec<String>,
    },
    LockWait,
}

/// Where a job process sends what its jobs record instead of keeping it.
type Forward = Box<dyn Fn(JobMetric) + Send + Sync>;

/// The server's own metrics.
pub struct Metrics {
    inner: Mutex<Inner>,
    forward: Option<Forward>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics")
            .field("inner", &self.inner)
            .field("forwarding", &self.forward.is_some())
            .finish()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            forward: None,
            inner: Mutex::new(Inner {
                deliveries: BTreeMap::new(),
                intake: Histogram::new(&INTAKE_BUCKETS),
                jobs: BTreeMap::new(),
                applies: BTreeMap::new(),
                lock_waits: 0,
                refusals: BTreeMap::new(),
                intake_refusals: BTreeMap::new(),
            }),
        }
    }
}

impl Metrics {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts one delivery and its intake time.
    pub fn delivery(&self, event: &'static str, outcome: &'static str, intake: Duration) {
        let mut m = self.lock();
        *m.deliveries.entry((event, outcome)).or_default() += 1;
        m.intake.observe(intake.as_secs_f64());
    }

    /// Counts a webhook refused before its body was used (`reason`: [`super::intake::Refusal::reason`]).
    pub fn refusal(&self, reason: &'static str) {
        *self.lock().intake_refusals.entry(reason).or_default() += 1;
    }

    /// Metrics whose job figures go to `forward` (a job process's report to its server)
    /// instead of being kept.
    pub fn forwarding(forward: impl Fn(JobMetric) + Send + Sync + 'static) -> Self {
        Metrics {
            forward: Some(Box::new(forward)),
            ..Metrics::default()
        }
    }

    /// Records one job.
    pub fn job(&self, event: &'static str, outcome: &'static str, took: Duration) {
        if let Some(forward) = &self.forward {
            return forward(JobMetric::Job {
                event: event.into(),
                outcome: outcome.into(),
                took_ms: millis(took),
            });
        }
        self.record_job(Cow::Borrowed(event), Cow::Borrowed(outcome), took);
    }

    fn record_job(&self, event: Label, outcome: Label, took: Duration) {
        let mut m = self.lock();
        m.jobs
            .entry((event, outcome))
            .or_insert_with(|| Histogram::new(&JOB_BUCKETS))
            .observe(took.as_secs_f64());
    }

    /// Records one finished apply: its conclusion, how long it took, and each fleet the guard
    /// refused (by reason).
    pub fn apply(&self, conclusion: &'static str, took: Duration, refusals: &[&'static str]) {
        if let Some(forward) = &self.forward {
            return forward(JobMetric::Apply {
                conclusion: conclusion.into(),
                took_ms: millis(took),
                refusals: refusals.iter().map(|r| r.to_string()).collect(),
            });
        }
        let refusals: Vec<Label> = refusals.iter().map(|r| Cow::Borrowed(*r)).collect();
        self.record_apply(Cow::Borrowed(conclusion), took, refusals);
    }

    fn record_apply(&self, conclusion: Label, took: Duration, refusals: Vec<Label>) {
        let mut m = self.lock();
        m.applies
            .entry(conclusion)
            .or_insert_with(|| Histogram::new(&APPLY_BUCKETS))
            .observe(took.as_secs_f64());
        for r in refusals {
            *m.refusals.entry(r).or_default() += 1;
        }
    }

    /// Counts an apply that had to wait for a fleet lease.
    pub fn lock_wait(&self) {
        if let Some(forward) = &self.forward {
            return forward(JobMetric::LockWait);
        }
        self.lock().lock_waits += 1;
    }

    /// Records what a job process reported. Its labels are fleetbot's own, from the same
    /// binary; they are still kept to the label alphabet.
    pub fn absorb(&self, metric: JobMetric) {
        let label = |v: &str| Cow::Owned(label_value(v));
        match metric {
            JobMetric::Job {
                event,
                outcome,
                took_ms,
            } => self.record_job(
                label(&event),
                label(&outcome),
                Duration::from_millis(took_ms),
            ),
            JobMetric::Apply {
                conclusion,
                took_ms,
                refusals,
            } => self.record_apply(
                label(&conclusion),
                Duration::from_millis(took_ms),
                refusals.iter().map(|r| label(r)).collect(),
            ),
            JobMetric::LockWait => self.lock().lock_waits += 1,
        }
    }

    /// How many deliveries had this event and outcome.
    pub fn deliveries(&self, event: &str, outcome: &str) -> u64 {
        self.lock()
            .deliveries
            .iter()
            .filter(|((e, o), _)| *e == event && *o == outcome)
            .map(|(_, n)| *n)
            .sum()
    }

    /// The exposition text.
    pub fn render(&self, github: Option<&ApiMetricsSnapshot>) -> String {
        let m = self.lock();
        let mut out = String::new();
        out.push_str(
            "# HELP fleetbot_webhook_deliveries_total Webhook deliveries by event and outcome.\n",
        );
        out.push_str("# TYPE fleetbot_webhook_deliveries_total counter\n");
        for ((event, outcome), n) in &m.deliveries {
            let _ = writeln!(
                out,
                "fleetbot_webhook_deliveries_total{{event=\"{event}\",outcome=\"{outcome}\"}} {n}"
            );
        }
        out.push_str("# HELP fleetbot_webhook_refusals_total Webhooks refused before their body was used, by reason.\n");
        out.push_str("# TYPE fleetbot_webhook_refusals_total counter\n");
        for (reason, n) in &m.intake_refusals {
            let _ = writeln!(
                out,
                "fleetbot_webhook_refusals_total{{reason=\"{reason}\"}} {n}"
            );
        }
        out.push_str("# HELP fleetbot_webhook_intake_seconds Time from request to answer.\n");
        out.push_str("# TYPE fleetbot_webhook_intake_seconds histogram\n");
        m.intake
            .render(&mut out, "fleetbot_webhook_intake_seconds", "");
        out.push_str(
            "# HELP fleetbot_job_duration_seconds Time to handle one accepted delivery.\n",
        );
        out.push_str("# TYPE fleetbot_job_duration_seconds histogram\n");
        for ((event, outcome), h) in &m.jobs {
            h.render(
                &mut out,
                "fleetbot_job_duration_seconds",
                &format!("event=\"{event}\",outcome=\"{outcome}\""),
            );
        }
        out.push_str("# HELP fleetbot_apply_duration_seconds Applies by conclusion, and how long each took.\n");
        out.push_str("# TYPE fleetbot_apply_duration_seconds histogram\n");
        for (conclusion, h) in &m.applies {
            h.render(
                &mut out,
                "fleetbot_apply_duration_seconds",
                &format!("conclusion=\"{conclusion}\""),
            );
        }
        out.push_str("# HELP fleetbot_apply_lock_waits_total Applies that waited for a fleet lease held by another apply.\n");
        out.push_str("# TYPE fleetbot_apply_lock_waits_total counter\n");
        let _ = writeln!(out, "fleetbot_apply_lock_waits_total {}", m.lock_waits);
        out.push_str("# HELP fleetbot_apply_guard_refusals_total Fleets an apply's guard refused, by reason.\n");
        out.push_str("# TYPE fleetbot_apply_guard_refusals_total counter\n");
        for (reason, n) in &m.refusals {
            let _ = writeln!(
                out,
                "fleetbot_apply_guard_refusals_total{{reason=\"{reason}\"}} {n}"
            );
        }
        if let Some(gh) = github {
            out.push_str("# HELP fleetbot_github_api_calls_total GitHub REST calls by operation and HTTP status.\n");
            out.push_str("# TYPE fleetbot_github_api_calls_total counter\n");
            for ((op, status), n) in &gh.calls {
                let _ = writeln!(
                    out,
                    "fleetbot_github_api_calls_total{{operation=\"{op}\",status=\"{status}\"}} {n}"
                );
            }
            out.push_str("# HELP fleetbot_github_rate_limit_remaining Requests left in the current window, per resource.\n");
            out.push_str("# TYPE fleetbot_github_rate_limit_remaining gauge\n");
            for (resource, rl) in &gh.rate_limits {
                let resource = label_value(resource);
                let _ = writeln!(
                    out,
                    "fleetbot_github_rate_limit_remaining{{resource=\"{resource}\"}} {}",
                    rl.remaining
                );
            }
            out.push_str("# HELP fleetbot_github_rate_limit_limit Requests allowed per window, per resource.\n");
            out.push_str("# TYPE fleetbot_github_rate_limit_limit gauge\n");
            for (resource, rl) in &gh.rate_limits {
                let resource = label_value(resource);
                let _ = writeln!(
                    out,
                    "fleetbot_github_rate_limit_limit{{resource=\"{resource}\"}} {}",
                    rl.limit
                );
            }
            out.push_str("# HELP fleetbot_github_rate_limit_reset_seconds Unix time the window resets, per resource.\n");
            out.push_str("# TYPE fleetbot_github_rate_limit_reset_seconds gauge\n");
            for (resource, rl) in &gh.rate_limits {
                let resource = label_value(resource);
                let _ = writeln!(
                    out,
                    "fleetbot_github_rate_limit_reset_seconds{{resource=\"{resource}\"}} {}",
                    rl.reset
                );
            }
        }
        out
    }
}

/// Appends the store's job counts (read at scrape time, so every replica reports the shared
/// queue) and whether the store answered.
pub fn render_queue(out: &mut String, counts: &Result<crate::store::QueueCounts, String>) {
    use std::fmt::Write;
    out.push_str("# HELP fleetbot_store_up Whether the store answered this scrape's job count.\n");
    out.push_str("# TYPE fleetbot_store_up gauge\n");
    let _ = writeln!(out, "fleetbot_store_up {}", u8::from(counts.is_ok()));
    let Ok(c) = counts else {
        return;
    };
    out.push_str(
        "# HELP fleetbot_queue_jobs Jobs in the store by state (the queue depth is `queued`).\n",
    );
    out.push_str("# TYPE fleetbot_queue_jobs gauge\n");
    for (state, n) in [
        ("queued", c.queued),
        ("running", c.running),
        ("done", c.done),
        ("failed", c.failed),
    ] {
        let _ = writeln!(out, "fleetbot_queue_jobs{{state=\"{state}\"}} {n}");
    }
    out.push_str(
        "# HELP fleetbot_webhook_deliveries_stored Delivery ids remembered for deduplication.\n",
    );
    out.push_str("# TYPE fleetbot_webhook_deliveries_stored gauge\n");
    let _ = writeln!(out, "fleetbot_webhook_deliveries_stored {}", c.deliveries);
}

/// Appends what webhook bodies not yet verified hold now.
pub fn render_intake(out: &mut String, in_flight: super::intake::InFlight) {
    out.push_str(
        "# HELP fleetbot_webhook_unverified_bodies Webhook bodies being read, not yet verified.\n",
    );
    out.push_str("# TYPE fleetbot_webhook_unverified_bodies gauge\n");
    let _ = writeln!(
        out,
        "fleetbot_webhook_unverified_bodies {}",
        in_flight.bodies
    );
    out.push_str("# HELP fleetbot_webhook_unverified_bytes Bytes those bodies hold beyond each one's first block (the byte budget in use).\n");
    out.push_str("# TYPE fleetbot_webhook_unverified_bytes gauge\n");
    let _ = writeln!(out, "fleetbot_webhook_unverified_bytes {}", in_flight.bytes);
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// A label value from GitHub's headers, kept to a safe alphabet.
fn label_value(v: &str) -> String {
    v.chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
        .take(40)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::github::client::RateLimitState;
    use std::sync::Arc;

    #[test]
    fn queue_gauges_and_an_unreadable_store() {
        let mut out = String::new();
        let counts = crate::store::QueueCounts {
            deliveries: 9,
            queued: 3,
            running: 1,
            done: 5,
            failed: 0,
        };
        render_queue(&mut out, &Ok(counts));
        assert!(out.contains("fleetbot_store_up 1\n"), "{out}");
        assert!(
            out.contains("fleetbot_queue_jobs{state=\"queued\"} 3\n"),
            "{out}"
        );
        assert!(
            out.contains("fleetbot_webhook_deliveries_stored 9\n"),
            "{out}"
        );
        let mut down = String::new();
        render_queue(&mut down, &Err("database is locked".into()));
        assert!(down.contains("fleetbot_store_up 0\n"), "{down}");
        assert!(!down.contains("fleetbot_queue_jobs"), "{down}");
    }

    #[test]
    fn exposition() {
        let m = Metrics::default();
        m.delivery("pull_request", "accepted", Duration::from_micros(700));
        m.delivery("other", "ignored", Duration::from_millis(3));
        m.job("pull_request", "ok", Duration::from_millis(120));
        m.refusal("peer_busy");
        m.refusal("peer_busy");
        let mut gh = ApiMetricsSnapshot::default();
        gh.calls.insert(("checks/create".into(), "201".into()), 2);
        gh.rate_limits.insert(
            "core".into(),
            RateLimitState {
                limit: 5000,
                remaining: 4990,
                reset: 1_700_000_000,
            },
        );
        let text = m.render(Some(&gh));
        assert!(text.contains(
            "fleetbot_webhook_deliveries_total{event=\"pull_request\",outcome=\"accepted\"} 1"
        ));
        assert!(text.contains("fleetbot_webhook_intake_seconds_bucket{le=\"0.001\"} 1"));
        assert!(text.contains("fleetbot_webhook_intake_seconds_count 2"));
        assert!(text.contains("fleetbot_webhook_refusals_total{reason=\"peer_busy\"} 2"));
        let mut gauges = String::new();
        render_intake(
            &mut gauges,
            crate::server::intake::InFlight {
                bodies: 3,
                bytes: 65536,
            },
        );
        assert!(gauges.contains("fleetbot_webhook_unverified_bodies 3\n"));
        assert!(gauges.contains("fleetbot_webhook_unverified_bytes 65536\n"));
        assert!(text.contains(
            "fleetbot_job_duration_seconds_bucket{event=\"pull_request\",outcome=\"ok\",le=\"0.25\"} 1"
        ));
        assert!(text.contains(
            "fleetbot_github_api_calls_total{operation=\"checks/create\",status=\"201\"} 2"
        ));
        assert!(text.contains("fleetbot_github_rate_limit_remaining{resource=\"core\"} 4990"));
        assert_eq!(m.deliveries("pull_request", "accepted"), 1);
        assert_eq!(event_label(Some("pull_request")), "pull_request");
        assert_eq!(event_label(Some("x\"}evil")), "other");
        assert_eq!(event_label(None), "none");
    }

    #[test]
    fn a_job_process_s_figures_are_forwarded_and_rendered_where_they_arrive() {
        let sent = Arc::new(Mutex::new(Vec::new()));
        let sink = sent.clone();
        let child = Metrics::forwarding(move |m| sink.lock().unwrap().push(m));
        child.job("pull_request", "ok", Duration::from_millis(120));
        child.apply("success", Duration::from_secs(90), &["stale_plan"]);
        child.lock_wait();
        // Nothing is kept where it was recorded…
        let kept = child.render(None);
        assert!(
            !kept.contains("fleetbot_job_duration_seconds_count"),
            "{kept}"
        );
        // …and the server renders it as if its own worker had recorded it.
        let server = Metrics::default();
        for m in sent.lock().unwrap().drain(..) {
            let wire = serde_json::to_string(&m).unwrap();
            server.absorb(serde_json::from_str(&wire).unwrap());
        }
        let local = Metrics::default();
        local.job("pull_request", "ok", Duration::from_millis(120));
        local.apply("success", Duration::from_secs(90), &["stale_plan"]);
        local.lock_wait();
        assert_eq!(server.render(None), local.render(None));
    }
}
