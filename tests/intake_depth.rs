//! The webhook path with a deep queue (issue 18): 10,000 jobs waiting behind one pull
//! request whose job is in backoff must not slow intake down, and an idle server over such a
//! queue must not burn CPU looking at it. Through the real `fleetbot serve` binary.

#[path = "support/app.rs"]
mod app;
#[path = "support/fake_github/mod.rs"]
mod fake_github;

use std::time::{Duration, Instant};

use app::{App, AppOptions};
use fake_github::fixtures::{PrRef, pr_comment, pull_request};
use fake_github::sha;
use fleetbot::store::queue::{WEBHOOK_JOB, now_ms, pr_key};
use fleetbot::store::{JobOutcome, JobQueue, NewJob, SqliteStore};

/// A GitHub that is down: nothing listens on the discard port, so every job that calls
/// GitHub fails at once and backs off.
const GITHUB_DOWN: &str = "http://127.0.0.1:9";

fn pr(number: u64) -> PrRef {
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
async fn prefill(dir: &std::path::Path, depth: usize) {
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

/// Intake latencies of `n` deliveries, sent one after another: half comments with a command
/// (each a job whose GitHub call fails), half that need no work.
async fn intake(app: &App, n: usize, tag: &str) -> Vec<Duration> {
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

fn p99(sorted: &[Duration]) -> Duration {
    sorted[(sorted.len() * 99 / 100).min(sorted.len() - 1)]
}

/// CPU seconds the process has used (user + system), from /proc.
fn cpu_seconds(pid: u32) -> f64 {
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

async fn start(dir: &std::path::Path) -> App {
    App::start(AppOptions {
        github_url: GITHUB_DOWN.into(),
        dir: dir.to_path_buf(),
        workers: 2,
        cloud: None,
        store_url: None,
        webhook_secrets: None,
        job_lease_secs: None,
        env: Vec::new(),
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deep_queue_in_backoff_slows_neither_intake_nor_an_idle_server() {
    let fresh_dir = tempfile::tempdir().unwrap();
    let fresh = start(fresh_dir.path()).await;
    let baseline = intake(&fresh, 120, "fresh").await;
    // Its jobs are still retrying against the GitHub that is down; a clean stop would wait.
    let mut fresh = fresh;
    fresh.kill();

    let deep_dir = tempfile::tempdir().unwrap();
    prefill(deep_dir.path(), 10_000).await;
    let deep = start(deep_dir.path()).await;
    let loaded = intake(&deep, 120, "deep").await;
    let (fresh_p99, deep_p99) = (p99(&baseline), p99(&loaded));
    assert!(
        deep_p99 <= fresh_p99 * 3 + Duration::from_millis(25),
        "intake p99 with 10,000 queued in backoff: {deep_p99:?}, on a fresh store: {fresh_p99:?}"
    );

    // Every job it was given has run once and backs off; then the server has nothing to do.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let pid = deep.pid();
    let before = cpu_seconds(pid);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let used = cpu_seconds(pid) - before;
    assert!(
        used < 0.15,
        "an idle server over a deep queue used {used:.2} s of CPU in 3 s"
    );
    let mut deep = deep;
    deep.kill();
}
