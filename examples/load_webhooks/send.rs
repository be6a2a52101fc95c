//! Sending signed deliveries: the scenarios' deliveries, made and signed before the clock
//! starts, then sent open-loop at a fixed rate (each latency measured from when its request
//! was due) or, to fill a queue, closed-loop as fast as the server answers.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::payloads;

/// What is sent: an event and how its deliveries differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Scenario {
    /// `pull_request` for one pull request (one repository and number), a new head each time:
    /// a busy pull request being pushed to.
    #[value(name = "pull_request-busy")]
    PullRequestBusy,
    /// `pull_request` with a different pull request number for each delivery.
    #[value(name = "pull_request-many", alias = "pull_request")]
    PullRequestMany,
    /// `issue_comment` `created` on a pull request, plain text with no command in it.
    #[value(name = "issue_comment")]
    IssueComment,
    /// `issue_comment` `created` saying `/plan`.
    #[value(name = "issue_comment-plan")]
    IssueCommentPlan,
    /// `check_run` `rerequested` ("Re-run") on fleetbot's `fleet/apply` run.
    #[value(name = "check_run")]
    CheckRun,
    /// `ping`: verified and answered without touching the store, the HTTP path's own share.
    Ping,
}

impl Scenario {
    pub fn event(self) -> &'static str {
        match self {
            Scenario::PullRequestBusy | Scenario::PullRequestMany => "pull_request",
            Scenario::IssueComment | Scenario::IssueCommentPlan => "issue_comment",
            Scenario::CheckRun => "check_run",
            Scenario::Ping => "ping",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Scenario::PullRequestBusy => "pull_request-busy",
            Scenario::PullRequestMany => "pull_request-many",
            Scenario::IssueComment => "issue_comment",
            Scenario::IssueCommentPlan => "issue_comment-plan",
            Scenario::CheckRun => "check_run",
            Scenario::Ping => "ping",
        }
    }
}

/// The pull request every busy delivery (and the prefill) is about.
pub const BUSY_PR: u64 = 1;

/// How the deliveries of a run are made.
#[derive(Debug, Clone)]
pub struct Shape {
    pub scenario: Scenario,
    /// `pull_request`'s action (`synchronize`: a push, which asks for a preflight).
    pub pr_action: String,
    /// Payload size in bytes.
    pub size: usize,
    /// Pull requests the comments and re-runs are spread over.
    pub spread: u64,
    /// Added to every head and number, so two batches of one run never share a head.
    pub offset: u64,
}

/// The `i`th delivery of `shape`: its event and body.
pub fn delivery(shape: &Shape, i: u64) -> (&'static str, Vec<u8>) {
    let n = shape.offset + i;
    let spread = 1 + i % shape.spread.max(1);
    let body = match shape.scenario {
        Scenario::PullRequestBusy => {
            payloads::pull_request_event(&shape.pr_action, BUSY_PR, 1 + n, shape.size)
        }
        // Numbers above the busy one and the spread ones, so no key is shared.
        Scenario::PullRequestMany => {
            payloads::pull_request_event(&shape.pr_action, 100_000 + n, 1 + n, shape.size)
        }
        Scenario::IssueComment => payloads::issue_comment_event(
            spread,
            3_000_000_000 + n,
            "Thanks, the node group sizes look right to me. Merging after the quota bump.",
            shape.size,
        ),
        Scenario::IssueCommentPlan => {
            payloads::issue_comment_event(spread, 3_000_000_000 + n, "/plan", shape.size)
        }
        Scenario::CheckRun => payloads::check_run_event(spread, 40_000_000_000 + n, shape.size),
        Scenario::Ping => serde_json::to_vec(&serde_json::json!({
            "zen": "Keep it logically awesome.",
            "hook_id": 1,
            "hook": {"type": "App", "id": 1, "active": true, "events": ["pull_request"]},
        }))
        .expect("JSON"),
    };
    (shape.scenario.event(), body)
}

/// One delivery, ready to send.
pub struct Prepared {
    event: &'static str,
    id: String,
    body: Bytes,
    signature: String,
}

/// `count` deliveries of `shape`, made and signed; the first is `first` (for a prefill whose
/// first delivery opens the pull request).
pub fn prepare(shape: &Shape, count: u64, secret: &str, first: Option<&Shape>) -> Vec<Prepared> {
    (0..count)
        .map(|i| {
            let (event, body) = match first {
                Some(f) if i == 0 => delivery(f, 0),
                _ => delivery(shape, i),
            };
            Prepared {
                event,
                // GitHub's delivery ids are GUIDs.
                id: uuid::Uuid::new_v4().to_string(),
                signature: fleetbot::github::sign(secret.as_bytes(), &body),
                body: Bytes::from(body),
            }
        })
        .collect()
}

/// How one request ended.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    /// The HTTP status; 0 when there was none (refused, reset, or the client's timeout).
    pub status: u16,
    /// From when the request was due to its answer (or its failure).
    pub latency: Duration,
}

impl Sample {
    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

async fn post(http: &reqwest::Client, endpoint: &str, d: &Prepared) -> u16 {
    let result = http
        .post(endpoint)
        .header("x-github-event", d.event)
        .header("x-github-delivery", &d.id)
        .header("x-hub-signature-256", &d.signature)
        .header("x-github-hook-id", "1")
        .header("x-github-hook-installation-target-type", "integration")
        .header("x-github-hook-installation-target-id", "1")
        .header("user-agent", "GitHub-Hookshot/load-test")
        .header("content-type", "application/json")
        .body(d.body.clone())
        .send()
        .await;
    match result {
        // The body is read so the connection goes back to the pool.
        Ok(r) => {
            let status = r.status().as_u16();
            let _ = r.bytes().await;
            status
        }
        Err(_) => 0,
    }
}

/// Sends `deliveries` at `rate` a second, at most `max_in_flight` at once (beyond it the
/// sender waits, and the wait counts as latency). Returns every request's sample and the time
/// from the first request's due time to the last answer.
pub async fn open_loop(
    http: &reqwest::Client,
    endpoint: &str,
    deliveries: Vec<Prepared>,
    rate: u32,
    max_in_flight: usize,
) -> (Vec<Sample>, Duration) {
    let permits = Arc::new(tokio::sync::Semaphore::new(max_in_flight));
    let interval = Duration::from_secs_f64(1.0 / f64::from(rate));
    let endpoint: Arc<str> = endpoint.into();
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(deliveries.len());
    for (i, d) in deliveries.into_iter().enumerate() {
        let due = started + interval.mul_f64(i as f64);
        tokio::time::sleep_until(due.into()).await;
        let permit = permits
            .clone()
            .acquire_owned()
            .await
            .expect("open semaphore");
        let (http, endpoint) = (http.clone(), endpoint.clone());
        tasks.push(tokio::spawn(async move {
            let status = post(&http, &endpoint, &d).await;
            let latency = due.elapsed();
            drop(permit);
            Sample { status, latency }
        }));
    }
    let mut samples = Vec::with_capacity(tasks.len());
    for t in tasks {
        samples.push(t.await.expect("a sender task"));
    }
    (samples, started.elapsed())
}

/// Sends `deliveries` `concurrency` at a time, each as soon as one is answered, until all
/// are sent or `budget` has passed. Returns the deliveries answered 2xx and those sent.
pub async fn closed_loop(
    http: &reqwest::Client,
    endpoint: &str,
    deliveries: Vec<Prepared>,
    concurrency: usize,
    budget: Duration,
) -> (u64, u64) {
    let permits = Arc::new(tokio::sync::Semaphore::new(concurrency));
    let endpoint: Arc<str> = endpoint.into();
    let deadline = Instant::now() + budget;
    let mut tasks = Vec::with_capacity(deliveries.len());
    for d in deliveries {
        let permit = permits
            .clone()
            .acquire_owned()
            .await
            .expect("open semaphore");
        if Instant::now() >= deadline {
            break;
        }
        let (http, endpoint) = (http.clone(), endpoint.clone());
        tasks.push(tokio::spawn(async move {
            let status = post(&http, &endpoint, &d).await;
            drop(permit);
            (200..300).contains(&status)
        }));
    }
    let sent = tasks.len() as u64;
    let mut ok = 0;
    for t in tasks {
        ok += u64::from(t.await.expect("a sender task"));
    }
    (ok, sent)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleetbot::github::Event;

    /// Every scenario's payload decodes as fleetbot reads GitHub's, into the event it stands
    /// for: a payload fleetbot refused would measure the error path instead.
    #[test]
    fn every_scenario_decodes_as_its_event() {
        let shape = |scenario| Shape {
            scenario,
            pr_action: "synchronize".into(),
            size: 2_000,
            spread: 50,
            offset: 0,
        };
        let decode = |scenario, i| {
            let (event, body) = delivery(&shape(scenario), i);
            fleetbot::github::parse_event(event, &body).expect("decodes")
        };
        let Event::PullRequest(a) = decode(Scenario::PullRequestBusy, 0) else {
            panic!("busy: not a pull_request")
        };
        let Event::PullRequest(b) = decode(Scenario::PullRequestBusy, 1) else {
            panic!("busy: not a pull_request")
        };
        assert_eq!((a.number, a.installation_id), (BUSY_PR, Some(77)));
        assert_eq!(b.number, BUSY_PR);
        assert_ne!(a.head_sha, b.head_sha, "each push is a new head");
        assert_eq!(
            (a.base_ref.as_str(), a.repo.to_string()),
            ("main", "octo-org/fleet-config".to_string())
        );
        let Event::PullRequest(c) = decode(Scenario::PullRequestMany, 1) else {
            panic!("many: not a pull_request")
        };
        assert_ne!(c.number, a.number);
        let Event::IssueComment(plain) = decode(Scenario::IssueComment, 3) else {
            panic!("issue_comment")
        };
        assert!(plain.is_pull_request && !plain.body.contains('/'));
        let Event::IssueComment(plan) = decode(Scenario::IssueCommentPlan, 3) else {
            panic!("issue_comment-plan")
        };
        assert_eq!(plan.body, "/plan");
        let Event::CheckRunRerequested(run) = decode(Scenario::CheckRun, 3) else {
            panic!("check_run: not a re-run")
        };
        assert_eq!(run.name, "fleet/apply");
        assert_eq!(run.pull_requests, vec![4]);
        assert!(matches!(decode(Scenario::Ping, 0), Event::Ping { .. }));
    }
}
