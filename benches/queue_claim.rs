//! What a claim costs as the queue deepens (issue 18): one runnable job of another pull request
//! while 10 or 100,000 jobs wait behind one pull request's head in backoff, and the same with
//! 100,000 keyless jobs in backoff. Each iteration claims the runnable job and hands it back
//! due at once (a claim and a finish, both on the SQLite writer). The figures are in
//! docs/status.md. Under `cargo test` (no `--bench`) the deep cases use 2,000 jobs, so the
//! smoke run stays quick.

use std::time::Duration;

use bytes::Bytes;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use fleetbot::store::queue::{WEBHOOK_JOB, pr_key};
use fleetbot::store::{JobOutcome, JobQueue, NewJob, SqliteStore};

const T0: i64 = 1_700_000_000_000;
const HOUR: i64 = 3_600_000;

fn job(id: String, pr: Option<u64>) -> NewJob {
    NewJob {
        id,
        kind: WEBHOOK_JOB.into(),
        event: "pull_request".into(),
        payload: Bytes::from_static(b"{}"),
        pr_key: pr.map(|n| pr_key("o/r", n)).unwrap_or_default(),
        fleet_key: String::new(),
        coalesce_key: String::new(),
        record_only: false,
    }
}

/// A store with `depth` jobs waiting (behind one pull request's head in backoff when `keyed`,
/// else each keyless and in backoff itself) and one runnable job of another pull request.
async fn store(dir: &tempfile::TempDir, depth: usize, keyed: bool) -> SqliteStore {
    let store = SqliteStore::open(&dir.path().join("queue.sqlite"))
        .await
        .unwrap();
    let later = JobOutcome::Retry {
        at: T0 + HOUR,
        error: "GitHub is down".into(),
    };
    if keyed {
        store
            .enqueue_delivery(&job("head".into(), Some(1)), T0)
            .await
            .unwrap();
        let head = store.claim("w", T0, 60_000).await.unwrap().unwrap();
        store.finish(&head, &later, T0).await.unwrap();
    }
    let jobs: Vec<NewJob> = (0..depth)
        .map(|i| job(format!("waiting-{i}"), keyed.then_some(1)))
        .collect();
    for chunk in jobs.chunks(64) {
        store.enqueue_deliveries(chunk, T0).await.unwrap();
    }
    if !keyed {
        while let Some(j) = store.claim("w", T0, 60_000).await.unwrap() {
            store.finish(&j, &later, T0).await.unwrap();
        }
    }
    store
        .enqueue_delivery(&job("runnable".into(), Some(2)), T0)
        .await
        .unwrap();
    store
}

fn claims(c: &mut Criterion) {
    let benchmarking = std::env::args().any(|a| a == "--bench");
    let deep = if benchmarking { 100_000 } else { 2_000 };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mut group = c.benchmark_group("claim");
    group.measurement_time(Duration::from_secs(5));
    group.sample_size(20);
    for (label, depth, keyed) in [
        ("behind-one-pr", 10, true),
        ("behind-one-pr", deep, true),
        ("keyless-in-backoff", deep, false),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let queue = runtime.block_on(store(&dir, depth, keyed));
        group.bench_with_input(BenchmarkId::new(label, depth), &queue, |b, queue| {
            b.to_async(&runtime).iter(|| async {
                let now = T0 + 1;
                let j = queue
                    .claim("w", now, 60_000)
                    .await
                    .unwrap()
                    .expect("the runnable job");
                assert_eq!(j.id, "runnable");
                let again = JobOutcome::Retry {
                    at: now,
                    error: String::new(),
                };
                assert!(queue.finish(&j, &again, now).await.unwrap());
            })
        });
    }
    group.finish();
}

criterion_group!(benches, claims);
criterion_main!(benches);
