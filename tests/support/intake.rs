//! A deep queue for the intake path (issue 18): 10,000 jobs waiting behind one pull request
//! whose job is in backoff, the deliveries sent at it, and the readings taken of the server.
//! Shared by `tests/intake_depth.rs` (what must hold) and `benches/server_timing.rs` (how
//! fast), so the two measure the same thing.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use crate::app_harness::{App, AppOptions};
use crate::fake_github::fixtures::{PrRef, pr_comment, pull_request};
use crate::fake_github::sha;
use fleetbot::store::queue::{WEBHOOK_JOB, now_ms, pr_key};
use fleetbot::store::{JobOutcome, JobQueue, NewJob, SqliteStore};

/// A GitHub that is down: nothing listens on the discard port, so every job that calls
/// GitHub fails and backs off.
pub const GITHUB_DOWN: &str = "http://127.0.0.1:9";

pub fn pr(number: u64) -> PrRef {
    PrRef {
        owner: "octo-org".into(),
        repo: "fleet".into(),
        number,
        head_sha: sha(number),
        base_sha: sha(200),
        head_ref: format!("change-{number}"),
        base_ref: "main".into(),
        installation_id: 4242,
    }
}

/// Queues `depth` jobs behind pull request 1, whose own job is in backoff for an hour.
pub async fn prefill(dir: &std::path::Path, depth: usize) {
    let store = SqliteStore::open(&dir.join("fleetbot.sqlite"))
        .await
        .unwrap();
    let job = |id: String| NewJob {
        id,
        kind: WEBHOOK_JOB.into(),
        event: "issue_comment".into(),
        payload: bytes::Bytes::from_static(b"{}"),
        pr_key: pr_key("octo-org/fleet", 1),
        fleet_key: String::new(),
        coalesce_key: String::new(),
        record_only: false,
    };
    let now = now_ms();
    store
        .enqueue_delivery(&job("head".into()), now)
        .await
        .unwrap();
    let head = store.claim("prefill", now, 60_000).await.unwrap().unwrap();
    let later = JobOutcome::Retry {
        at: now + 3_600_000,
        error: "GitHub is down".into(),
    };
    assert!(store.finish(&head, &later, now).await.unwrap());
    let behind: Vec<NewJob> = (0..depth).map(|i| job(format!("behind-{i}"))).collect();
    for chunk in behind.chunks(64) {
        store.enqueue_deliveries(chunk, now).await.unwrap();
    }
    assert_eq!(store.counts().await.unwrap().queued, depth as u64 + 1);
}

/// Sends `n` deliveries one after another, half comments with a command (each a job whose
/// GitHub call fails), half that need no work; their intake latencies, sorted.
pub async fn intake(app: &App, n: usize, tag: &str) -> Vec<Duration> {
    let mut latencies = Vec::with_capacity(n);
    for i in 0..n {
        let number = 2 + i as u64;
        let (event, body) = if i % 2 == 0 {
            (
                "issue_comment",
                pr_comment(&pr(number), 9_000 + i as u64, "dev", "User", "/plan\n"),
            )
        } else {
            ("pull_request", pull_request("labeled", &pr(number)))
        };
        let started = Instant::now();
        app.deliver(event, &format!("{tag}-{i}"), &body).await;
        latencies.push(started.elapsed());
    }
    latencies.sort();
    latencies
}

pub fn p99(sorted: &[Duration]) -> Duration {
    sorted[(sorted.len() * 99 / 100).min(sorted.len() - 1)]
}

/// CPU seconds the process has used (user + system), from /proc.
pub fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    ticks / 100.0
}

/// `fleetbot serve` with two workers over the store in `dir`, against `github`.
pub async fn start(dir: &std::path::Path, github: &str, env: Vec<(&'static str, String)>) -> App {
    App::start(AppOptions {
        github_url: github.into(),
        dir: dir.to_path_buf(),
        workers: 2,
        cloud: None,
        store_url: None,
        webhook_secrets: None,
        job_lease_secs: None,
        env,
    })
    .await
}
