//! The GitHub App over the durable store, end to end: the real server (intake, store-backed
//! sink, workers) and the real bot against the fake GitHub, on SQLite and on a real PostgreSQL
//! (`FLEETBOT_TEST_POSTGRES_URL`, see `scripts/with-postgres.sh`).
//!
//! What only a store can give: a delivery is processed once even when it arrives again after
//! a restart; jobs queued before a restart (or held by a worker that died) run after it; two
//! servers on one PostgreSQL process every delivery exactly once; a refused delivery leaves
//! nothing in the store.

use crate::fake_github;
use crate::stores;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use fake_github::{FakeGitHub, Fault, REPO, SECRET, github_client, sha};
use fleetbot::bot::{Bot, BotSettings};
use fleetbot::github::sign;
use fleetbot::server::durable::{DurableServer, DurableSettings, start};
use fleetbot::server::{JobReport, Metrics, WorkerSettings};
use fleetbot::store::queue::now_ms;
use fleetbot::store::{JobQueue, QueueCounts};
use stores::{Backend, Postgres, Sqlite};
use tokio::sync::mpsc;

fn spec_with_gpus(n: u32) -> String {
    let s = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/specs/fleet1-test.yaml"
    ))
    .unwrap();
    let from = "  gpu_nodes:\n    count: 1\n";
    assert!(s.contains(from));
    s.replacen(from, &format!("  gpu_nodes:\n    count: {n}\n"), 1)
}

/// The fake GitHub with `main` holding one fleet spec.
async fn fake_github() -> FakeGitHub {
    fake_github::with_fleet(&spec_with_gpus(1)).await
}

/// Pull request `number`: a first push (`opened`) growing the GPU pool to 2, a second push
/// (`synchronize`) to 3. Returns the two heads.
fn open_pr(gh: &FakeGitHub, number: u64) -> (String, String) {
    let (first, second) = (sha(number * 1000 + 1), sha(number * 1000 + 2));
    let mut w = gh.world();
    w.commit(
        REPO,
        &sha(1),
        &first,
        &[("fleets/prod.yaml", Some(&spec_with_gpus(2)))],
    );
    w.commit(
        REPO,
        &first,
        &second,
        &[("fleets/prod.yaml", Some(&spec_with_gpus(3)))],
    );
    w.open_pr(REPO, number, &format!("grow-{number}"), &second);
    (first, second)
}

fn delivery(action: &str, number: u64, head: &str) -> Vec<u8> {
    fake_github::pr_delivery(action, number, head, &format!("grow-{number}"))
}

fn bot(gh: &FakeGitHub) -> Bot {
    Bot::new(github_client(&gh.url), BotSettings::default())
}

/// One running server and the reports of the jobs its workers ran.
struct Server {
    server: DurableServer,
    url: String,
    jobs: mpsc::UnboundedReceiver<JobReport>,
}

async fn serve<Q: JobQueue + Clone>(store: Q, bot: Bot, workers: usize) -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let (done, jobs) = mpsc::unbounded_channel();
    let settings = DurableSettings {
        workers,
        worker: WorkerSettings {
            lease: Duration::from_secs(10),
            idle_poll: Duration::from_millis(50),
            retry_backoff: Duration::from_millis(200),
            ..WorkerSettings::default()
        },
        ..DurableSettings::default()
    };
    let server = start(
        listener,
        store,
        fleetbot::github::WebhookSecrets::from_comma_separated(SECRET).unwrap(),
        bot,
        Arc::new(Metrics::default()),
        settings,
        Some(done),
    )
    .unwrap();
    let url = format!("http://{}", server.local_addr());
    Server { server, url, jobs }
}

impl Server {
    async fn post(&self, id: &str, body: &[u8], signature: Option<String>) -> (u16, String) {
        post(&self.url, "pull_request", id, body, signature).await
    }

    async fn next_job(&mut self) -> JobReport {
        tokio::time::timeout(Duration::from_secs(60), self.jobs.recv())
            .await
            .expect("a job finished in time")
            .expect("the workers are running")
    }

    /// Stops the server once `store` holds nothing left to run (every delivery answered is
    /// stored before its answer, so nothing can come later), then fails if any job ran that the
    /// test did not take. The workers have ended, so every job that ran has reported: a late
    /// duplicate cannot slip past, as it could past a fixed wait.
    async fn stop_with_no_more_jobs<Q: JobQueue>(mut self, store: &Q) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            let counts = store.counts().await.unwrap();
            if counts.queued == 0 && counts.running == 0 {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the queue never settled: {counts:?}"
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        self.server.shutdown(Duration::from_secs(10)).await.unwrap();
        if let Ok(extra) = self.jobs.try_recv() {
            panic!("an unexpected job ran: {extra:?}");
        }
    }

    async fn stop(self) {
        self.server.shutdown(Duration::from_secs(10)).await.unwrap();
    }
}

async fn post(
    url: &str,
    event: &str,
    id: &str,
    body: &[u8],
    signature: Option<String>,
) -> (u16, String) {
    fake_github::post_webhook(&reqwest::Client::new(), url, event, id, body, signature).await
}

fn signed(body: &[u8]) -> Option<String> {
    Some(sign(SECRET.as_bytes(), body))
}

fn bot_comments(gh: &FakeGitHub, number: u64) -> Vec<fake_github::Comment> {
    gh.world()
        .comments_on(REPO, number)
        .into_iter()
        .filter(|c| c.user_type == "Bot")
        .collect()
}

macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    super::$name(<super::Sqlite as super::Backend>::fresh().await).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    super::$name(<super::Postgres as super::Backend>::fresh().await).await;
                }
            )*
        }
    };
}

on_both_backends!(
    the_same_delivery_twice_is_processed_once_even_across_a_restart,
    queued_jobs_and_a_dead_workers_job_run_after_a_restart,
    a_job_whose_every_attempt_died_is_parked_not_run_again,
    a_bad_signature_is_refused_and_nothing_is_stored,
    a_job_that_fails_on_github_is_retried_later_and_then_done,
    a_request_github_refuses_ends_the_job_at_once,
    a_retried_preflight_reuses_the_check_runs_it_made,
);

/// Issue 22, item 4: a job that took its process down on every attempt (claimed, never
/// finished) is parked as failed when claimed once more, not run again; the queue goes on.
async fn a_job_whose_every_attempt_died_is_parked_not_run_again<B: Backend>(b: B) {
    let gh = fake_github().await;
    let store = b.open().await;
    let intake = serve(store.clone(), bot(&gh), 0).await;
    let mut ids = Vec::new();
    for number in [31, 32] {
        let (head, _) = open_pr(&gh, number);
        let body = delivery("opened", number, &head);
        let id = format!("cccccccc-0000-0000-0000-0000000000{number}");
        assert_eq!(intake.post(&id, &body, signed(&body)).await.0, 202);
        ids.push(id);
    }
    intake.stop().await;
    // Five processes each claimed the first job and died with it (their leases ran out).
    let mut now = now_ms();
    for n in 0..5 {
        let claimed = store
            .claim(&format!("crashed-{n}"), now, 1)
            .await
            .unwrap()
            .expect("the job is claimable again once its lease ran out");
        assert_eq!(claimed.id, ids[0]);
        now += 10;
    }
    tokio::time::sleep(Duration::from_millis(20)).await;
    let mut server = serve(b.open().await, bot(&gh), 1).await;
    let mut results = BTreeMap::new();
    for _ in 0..2 {
        let job = server.next_job().await;
        results.insert(job.delivery_id.clone(), job.result.map(|_| ()));
    }
    server.stop_with_no_more_jobs(&store).await;
    let parked = results[&ids[0]].as_ref().unwrap_err();
    assert!(
        parked.starts_with("abandoned: 5 attempts never finished"),
        "{parked}"
    );
    assert!(
        results[&ids[1]].is_ok(),
        "the next pull request's job still ran"
    );
    let record = store.job(&ids[0]).await.unwrap().unwrap();
    assert_eq!((record.state.as_str(), record.attempts), ("failed", 6));
    assert!(record.last_error.starts_with("abandoned"), "{record:?}");
    assert!(bot_comments(&gh, 31).is_empty(), "the parked job never ran");
    assert_eq!(bot_comments(&gh, 32).len(), 1);
    gh.assert_clean();
}

async fn the_same_delivery_twice_is_processed_once_even_across_a_restart<B: Backend>(b: B) {
    let gh = fake_github().await;
    let (head, _) = open_pr(&gh, 12);
    let body = delivery("opened", 12, &head);
    let id = "aaaaaaaa-0000-0000-0000-000000000012";
    let first_store = b.open().await;
    let mut first = serve(first_store.clone(), bot(&gh), 2).await;
    assert_eq!(
        first.post(id, &body, signed(&body)).await,
        (202, "accepted\n".into())
    );
    assert_eq!(
        first.post(id, &body, signed(&body)).await,
        (202, "duplicate\n".into())
    );
    let job = first.next_job().await;
    assert_eq!(job.delivery_id, id);
    job.result.unwrap();
    first.stop_with_no_more_jobs(&first_store).await;

    // A new process on the same store: GitHub redelivers the same id.
    let store = b.open().await;
    let second = serve(store.clone(), bot(&gh), 2).await;
    assert_eq!(
        second.post(id, &body, signed(&body)).await,
        (202, "duplicate\n".into())
    );
    second.stop_with_no_more_jobs(&store).await;
    let record = store.job(id).await.unwrap().unwrap();
    assert_eq!((record.state.as_str(), record.attempts), ("done", 1));
    assert_eq!(record.pr_key, "octo-org/fleet-config#12");
    assert_eq!(bot_comments(&gh, 12).len(), 1);
    assert_eq!(gh.world().runs_on(REPO, &head).len(), 2);
    gh.assert_clean();
}

async fn queued_jobs_and_a_dead_workers_job_run_after_a_restart<B: Backend>(b: B) {
    let gh = fake_github().await;
    let store = b.open().await;
    // Intake only: the deliveries are answered and stored, and nothing runs.
    let intake = serve(store.clone(), bot(&gh), 0).await;
    let mut heads = BTreeMap::new();
    for number in [21, 22, 23] {
        let (head, _) = open_pr(&gh, number);
        let body = delivery("opened", number, &head);
        let id = format!("bbbbbbbb-0000-0000-0000-0000000000{number}");
        assert_eq!(intake.post(&id, &body, signed(&body)).await.0, 202);
        heads.insert(id, (number, head));
    }
    // The queue depth is read from the store at scrape time.
    let metrics = reqwest::get(format!("{}/metrics", intake.url))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(metrics.contains("fleetbot_store_up 1\n"), "{metrics}");
    assert!(
        metrics.contains("fleetbot_queue_jobs{state=\"queued\"} 3\n"),
        "{metrics}"
    );
    intake.stop().await;
    assert_eq!(
        store.counts().await.unwrap(),
        QueueCounts {
            deliveries: 3,
            queued: 3,
            ..Default::default()
        }
    );
    assert!(
        gh.world().requests.is_empty(),
        "no job ran before the restart"
    );
    // A worker of some other process took one job and died holding a short lease.
    let abandoned = store
        .claim("worker-that-died", now_ms(), 1_500)
        .await
        .unwrap()
        .unwrap();

    let mut restarted = serve(b.open().await, bot(&gh), 2).await;
    let mut seen = BTreeMap::new();
    for _ in 0..3 {
        let job = restarted.next_job().await;
        job.result
            .as_ref()
            .unwrap_or_else(|e| panic!("job {} failed: {e}", job.delivery_id));
        *seen.entry(job.delivery_id).or_insert(0) += 1;
    }
    restarted.stop_with_no_more_jobs(&store).await;
    assert!(seen.values().all(|n| *n == 1), "{seen:?}");
    assert_eq!(seen.len(), 3);
    for (id, (number, head)) in &heads {
        let record = store.job(id).await.unwrap().unwrap();
        assert_eq!(record.state, "done");
        let expected_attempts = if *id == abandoned.id { 2 } else { 1 };
        assert_eq!(record.attempts, expected_attempts, "{id}");
        assert_eq!(bot_comments(&gh, *number).len(), 1);
        assert_eq!(gh.world().runs_on(REPO, head).len(), 2);
    }
    gh.assert_clean();
}

async fn a_bad_signature_is_refused_and_nothing_is_stored<B: Backend>(b: B) {
    let gh = fake_github().await;
    let (head, _) = open_pr(&gh, 31);
    let store = b.open().await;
    let mut server = serve(store.clone(), bot(&gh), 1).await;
    let body = delivery("opened", 31, &head);
    let id = "cccccccc-0000-0000-0000-000000000031";
    let wrong = Some(sign(b"not-the-secret", &body));
    assert_eq!(server.post(id, &body, wrong).await.0, 401);
    assert_eq!(server.post(id, &body, None).await.0, 401);
    let mut tampered = body.clone();
    tampered.extend_from_slice(b" ");
    assert_eq!(server.post(id, &tampered, signed(&body)).await.0, 401);
    // Signed but not for the bot: acknowledged, not stored.
    let ping = br#"{"zen":"Keep it logically awesome.","hook_id":1}"#;
    assert_eq!(
        post(&server.url, "ping", id, ping, signed(ping)).await,
        (202, "ignored\n".into())
    );
    // Nothing was stored (a stored delivery is stored before its answer), so nothing can run.
    assert_eq!(store.counts().await.unwrap(), QueueCounts::default());
    assert!(!store.delivery_known(id).await.unwrap());
    assert!(store.job(id).await.unwrap().is_none());
    assert!(gh.world().requests.is_empty());
    // The same id, signed, is then accepted: a refusal left no trace to deduplicate against.
    assert_eq!(
        server.post(id, &body, signed(&body)).await,
        (202, "accepted\n".into())
    );
    server.next_job().await.result.unwrap();
    server.stop_with_no_more_jobs(&store).await;
    gh.assert_clean();
}

async fn a_job_that_fails_on_github_is_retried_later_and_then_done<B: Backend>(b: B) {
    let gh = fake_github().await;
    let (head, _) = open_pr(&gh, 61);
    // GitHub fails listing the files more times than the client retries within one attempt.
    gh.world().faults.push(Fault {
        operation: "pulls/list-files".into(),
        status: 502,
        headers: vec![],
        body: serde_json::json!({"message": "Server Error"}),
        times: 3,
    });
    let store = b.open().await;
    let mut server = serve(store.clone(), bot(&gh), 1).await;
    let body = delivery("opened", 61, &head);
    let id = "eeeeeeee-0000-0000-0000-000000000061";
    assert_eq!(server.post(id, &body, signed(&body)).await.0, 202);
    let first = server.next_job().await;
    assert!(first.result.is_err(), "{first:?}");
    let second = server.next_job().await;
    assert_eq!(second.delivery_id, id);
    second.result.unwrap();
    server.stop_with_no_more_jobs(&store).await;
    let record = store.job(id).await.unwrap().unwrap();
    assert_eq!((record.state.as_str(), record.attempts), ("done", 2));
    assert_eq!(gh.world().calls("pulls/list-files"), 4);
    // The failed attempt created nothing, so nothing was created twice.
    assert_eq!(bot_comments(&gh, 61).len(), 1);
    assert_eq!(gh.world().runs_on(REPO, &head).len(), 2);
    gh.assert_clean();
}

/// Two servers (two replicas, each with its own connection pool and two workers) on one
/// PostgreSQL. Every delivery goes to one of them and, as a redelivery, to the other at the
/// same moment; each is processed exactly once, and the two jobs of each pull request run
/// one after the other, in order: one comment per pull request, edited once, showing the last
/// push.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_servers_on_one_postgres_process_every_delivery_exactly_once() {
    let db = Postgres::fresh().await;
    let gh = fake_github().await;
    let (done, mut jobs) = mpsc::unbounded_channel::<(usize, JobReport)>();
    let mut servers = Vec::new();
    for replica in 0..2 {
        let mut s = serve(db.open().await, bot(&gh), 2).await;
        let done = done.clone();
        let mut reports = std::mem::replace(&mut s.jobs, mpsc::unbounded_channel().1);
        tokio::spawn(async move {
            while let Some(r) = reports.recv().await {
                let _ = done.send((replica, r));
            }
        });
        servers.push(s);
    }
    let prs: Vec<u64> = (41..53).collect();
    let mut deliveries = Vec::new();
    for number in &prs {
        let (first, second) = open_pr(&gh, *number);
        deliveries.push((
            format!("dddddddd-0000-0000-0001-0000000000{number}"),
            delivery("opened", *number, &first),
        ));
        deliveries.push((
            format!("dddddddd-0000-0000-0002-0000000000{number}"),
            delivery("synchronize", *number, &second),
        ));
    }
    let urls: Vec<String> = servers.iter().map(|s| s.url.clone()).collect();
    let mut answers = Vec::new();
    for (i, (id, body)) in deliveries.iter().enumerate() {
        let (a, b) = (urls[i % 2].clone(), urls[(i + 1) % 2].clone());
        let (id, body) = (id.clone(), body.clone());
        // In order per pull request (GitHub sends a push after the opening), each delivered
        // twice at once, to both replicas.
        let (x, y) = tokio::join!(
            post(&a, "pull_request", &id, &body, signed(&body)),
            post(&b, "pull_request", &id, &body, signed(&body)),
        );
        answers.push((x.1, y.1));
    }
    for (x, y) in &answers {
        let mut pair = [x.as_str(), y.as_str()];
        pair.sort();
        assert_eq!(pair, ["accepted\n", "duplicate\n"]);
    }
    let mut runs: BTreeMap<String, usize> = BTreeMap::new();
    let mut by_replica = [0usize; 2];
    for _ in 0..deliveries.len() {
        let (replica, job) = tokio::time::timeout(Duration::from_secs(120), jobs.recv())
            .await
            .expect("every job finished in time")
            .unwrap();
        job.result
            .as_ref()
            .unwrap_or_else(|e| panic!("job {} failed: {e}", job.delivery_id));
        *runs.entry(job.delivery_id).or_default() += 1;
        by_replica[replica] += 1;
    }
    // The barrier: the store holds nothing left to run, both servers have stopped (their
    // workers ended, every job reported), and the report channel is closed and drained.
    let store = db.open().await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let counts = store.counts().await.unwrap();
        if counts.queued == 0 && counts.running == 0 {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{counts:?}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    for s in servers {
        s.stop().await;
    }
    drop(done);
    if let Some((_, extra)) = jobs.recv().await {
        panic!("a delivery ran twice: {extra:?}");
    }
    assert_eq!(runs.len(), deliveries.len());
    assert!(runs.values().all(|n| *n == 1), "{runs:?}");
    eprintln!("jobs per replica: {by_replica:?}");
    let counts = store.counts().await.unwrap();
    assert_eq!(
        (counts.deliveries, counts.done, counts.jobs()),
        (24, 24, 24),
        "{counts:?}"
    );
    gh.assert_clean();
    for number in &prs {
        let comments = bot_comments(&gh, *number);
        assert_eq!(comments.len(), 1, "PR {number}: one sticky comment");
        assert_eq!(
            comments[0].edits, 1,
            "PR {number}: edited by the second push"
        );
        assert!(
            comments[0].body.contains("gpu\\_nodes: 1 → 3"),
            "PR {number}: the comment shows the last push"
        );
        for head in [sha(number * 1000 + 1), sha(number * 1000 + 2)] {
            assert_eq!(gh.world().runs_on(REPO, &head).len(), 2, "PR {number}");
        }
    }
}

/// Issue 22, item 8: a job that failed after publishing its checks (the comment could not be
/// written) is retried, and the retry finds its check runs again instead of making more.
async fn a_retried_preflight_reuses_the_check_runs_it_made<B: Backend>(b: B) {
    let gh = fake_github().await;
    let (head, _) = open_pr(&gh, 63);
    gh.world().faults.push(Fault {
        operation: "issues/create-comment".into(),
        status: 502,
        headers: vec![],
        // The client checks after an unknown outcome and tries once more: two fail the attempt.
        body: serde_json::json!({"message": "Bad Gateway"}),
        times: 2,
    });
    let store = b.open().await;
    let mut server = serve(store.clone(), bot(&gh), 1).await;
    let body = delivery("opened", 63, &head);
    let id = "eeeeeeee-0000-0000-0000-000000000063";
    assert_eq!(server.post(id, &body, signed(&body)).await.0, 202);
    let first = server.next_job().await;
    assert!(first.result.is_err(), "the comment failed: {first:?}");
    let retried = server.next_job().await;
    assert!(retried.result.is_ok(), "{retried:?}");
    assert_eq!(
        gh.world().runs_on(REPO, &head).len(),
        2,
        "one run per check"
    );
    assert_eq!(gh.world().calls("checks/create"), 2, "created once each");
    server.stop_with_no_more_jobs(&store).await;
    gh.assert_clean();
}

/// Issue 22, item 8: a request GitHub refuses (422) fails the same way on every attempt, so
/// the job ends at once instead of re-creating its check runs for minutes.
async fn a_request_github_refuses_ends_the_job_at_once<B: Backend>(b: B) {
    let gh = fake_github().await;
    let (head, _) = open_pr(&gh, 62);
    gh.world().faults.push(Fault {
        operation: "checks/create".into(),
        status: 422,
        headers: vec![],
        body: serde_json::json!({"message": "Validation Failed"}),
        times: 100,
    });
    let store = b.open().await;
    let mut server = serve(store.clone(), bot(&gh), 1).await;
    let body = delivery("opened", 62, &head);
    let id = "eeeeeeee-0000-0000-0000-000000000062";
    assert_eq!(server.post(id, &body, signed(&body)).await.0, 202);
    let job = server.next_job().await;
    let error = job.result.unwrap_err();
    assert!(error.contains("422"), "{error}");
    server.stop_with_no_more_jobs(&store).await;
    let record = store.job(id).await.unwrap().unwrap();
    assert_eq!((record.state.as_str(), record.attempts), ("failed", 1));
    assert_eq!(
        gh.world().calls("checks/create"),
        1,
        "tried once, not once per retry"
    );
    gh.assert_clean();
}
