//! The webhook path with a deep queue (issue 18): 10,000 jobs waiting behind one pull request
//! whose job is in backoff. Every delivery sent at such a server is stored and answered, and
//! no job behind the one in backoff runs. Through the real `fleetbot serve` binary.
//!
//! How fast intake stays, and how little CPU an idle server burns over such a queue, are
//! timing figures, not pass marks on a shared machine: `benches/server_timing.rs` measures
//! them against their targets (docs/status.md).

use crate::intake;

use intake::{GITHUB_DOWN, intake, prefill, start};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deep_queue_in_backoff_takes_every_delivery_and_runs_nothing_behind_its_head() {
    let dir = tempfile::tempdir().unwrap();
    prefill(dir.path(), 10_000).await;
    let deep = start(dir.path(), GITHUB_DOWN, Vec::new()).await;
    // Each delivery is stored before it is answered (`deliver` asserts the 202): 60 comments
    // with a command queue a job each; 60 `labeled` need no work and queue nothing.
    let latencies = intake(&deep, 120, "deep").await;
    assert_eq!(latencies.len(), 120);
    let queued = deep.jobs("queued").await;
    let running = deep.jobs("running").await;
    assert_eq!(
        queued + running,
        10_001 + 60,
        "queued {queued}, running {running}"
    );
    // The head is in backoff for an hour: nothing behind it has run, nor has anything ended.
    assert_eq!(deep.jobs("done").await, 0);
    assert_eq!(deep.jobs("failed").await, 0);
    let mut deep = deep;
    // Its jobs keep retrying against a GitHub that is down; a clean stop would wait for them.
    deep.kill();
}
