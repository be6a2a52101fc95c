//! The server over the store: a [`DeliverySink`] that persists each delivery (and its job)
//! before `202`, and [`start`], which runs the HTTP layer, the workers and the pruning of old
//! deliveries together and stops them together.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use serde::Deserialize;
use tokio::sync::{Notify, mpsc, oneshot, watch};
use tokio::task::JoinHandle;

use super::sink::{Acceptance, CountsFuture, Delivery, DeliverySink, SinkError, SinkFuture};
use super::worker::{WorkerSettings, run_queue_worker};
use super::{AppState, JobReport, Metrics, router, serve_with_limits};
use crate::bot::Bot;
use crate::bot::triage::{Triage, triage_event};
use crate::github::WebhookSecrets;
use crate::github::events::{Event, parse_event_kept};
use crate::store::queue::{MAX_ENQUEUE_BATCH, MIN_RETENTION, WEBHOOK_JOB, ms, now_ms, pr_key};
use crate::store::{Enqueued, JobQueue, NewJob};

/// After a store error, `/readyz` reports not ready for this long, so a load balancer sends
/// deliveries to a healthy replica meanwhile (and comes back without any traffic needed).
const UNREADY_AFTER_ERROR: Duration = Duration::from_secs(5);

/// Persists deliveries in the store's inbox and queue.
///
/// Deliveries arriving together are stored together: one writer task takes every delivery
/// waiting for it (up to [`MAX_ENQUEUE_BATCH`]) and stores them in one transaction, then
/// answers each. Alone, a delivery is stored at once; under load, one commit (one sync to
/// disk on SQLite, one round trip on PostgreSQL) serves many, which is what keeps intake in
/// the milliseconds at hundreds of deliveries a second. No delivery is answered before its
/// transaction has committed.
pub struct StoreSink {
    batches: mpsc::Sender<Pending>,
    last_error_ms: Arc<AtomicI64>,
    counts: Box<dyn Fn() -> CountsFuture<'static> + Send + Sync>,
}

/// A delivery waiting for the writer, and where its answer goes.
type Pending = (NewJob, oneshot::Sender<Result<Enqueued, String>>);

/// Deliveries waiting for the writer before intake pushes back (each holds its payload).
const PENDING_CAPACITY: usize = 1024;

impl StoreSink {
    /// A sink over `queue` that wakes a local worker through `wake` for each new job. Spawns
    /// the writer task, which ends when the sink is dropped.
    pub fn new<Q: JobQueue + Clone>(queue: Q, wake: Arc<Notify>) -> Self {
        let (batches, pending) = mpsc::channel(PENDING_CAPACITY);
        let last_error_ms = Arc::new(AtomicI64::new(i64::MIN / 2));
        let counter = queue.clone();
        tokio::spawn(write_batches(queue, pending, wake, last_error_ms.clone()));
        StoreSink {
            batches,
            last_error_ms,
            counts: Box::new(move || {
                let queue = counter.clone();
                Box::pin(async move { queue.counts().await.map_err(|e| e.to_string()) })
            }),
        }
    }
}

async fn write_batches<Q: JobQueue>(
    queue: Q,
    mut pending: mpsc::Receiver<Pending>,
    wake: Arc<Notify>,
    last_error_ms: Arc<AtomicI64>,
) {
    let mut batch: Vec<Pending> = Vec::with_capacity(MAX_ENQUEUE_BATCH);
    while pending.recv_many(&mut batch, MAX_ENQUEUE_BATCH).await > 0 {
        let (jobs, answers): (Vec<NewJob>, Vec<_>) = batch.drain(..).unzip();
        match queue.enqueue_deliveries(&jobs, now_ms()).await {
            Ok(outcomes) => {
                for ((outcome, answer), job) in outcomes.into_iter().zip(answers).zip(&jobs) {
                    if outcome == Enqueued::New && !job.record_only {
                        wake.notify_one();
                    }
                    let _ = answer.send(Ok(outcome));
                }
            }
            Err(e) => {
                last_error_ms.store(now_ms(), Ordering::Relaxed);
                let e = e.to_string();
                for answer in answers {
                    let _ = answer.send(Err(e.clone()));
                }
            }
        }
    }
}

/// The job a delivery becomes: recorded only when it needs no work; a new head's preflight
/// supersedes the queued preflight of an older head of the same pull request.
pub fn job_for(delivery: &Delivery) -> NewJob {
    // One parse of the payload decides what it needs, whose it is and what of it is kept.
    let (parsed, kept) = match parse_event_kept(&delivery.event, &delivery.payload) {
        Ok((event, kept)) => (Ok(event), kept),
        Err(e) => (Err(e), None),
    };
    let (record_only, preflight) = match parsed.as_ref().map(triage_event) {
        Ok(Triage::Nothing(_)) => (true, false),
        Ok(Triage::Work { preflight }) => (false, preflight),
        Err(_) => (false, false),
    };
    let pr_key = match &parsed {
        // Recorded only: no job, so no key to order it by.
        _ if record_only => String::new(),
        Ok(event) => key_of(event).unwrap_or_default(),
        // The worker reports why it could not be read; its pull request, if a lighter read
        // finds one, still keeps it in that pull request's order.
        Err(_) => pull_request_key(&delivery.event, &delivery.payload).unwrap_or_default(),
    };
    NewJob {
        id: delivery.id.clone(),
        kind: WEBHOOK_JOB.to_string(),
        event: delivery.event.clone(),
        // A payload that does not decode is kept whole: the worker reports why, and nothing
        // of a delivery fleetbot cannot read is lost.
        payload: kept.map_or_else(|| delivery.payload.clone(), bytes::Bytes::from),
        coalesce_key: if preflight && !pr_key.is_empty() {
            crate::store::queue::preflight_coalesce_key(&pr_key)
        } else {
            String::new()
        },
        pr_key,
        fleet_key: String::new(),
        record_only,
    }
}

impl DeliverySink for StoreSink {
    fn accept(&self, delivery: Delivery) -> SinkFuture<'_> {
        Box::pin(async move {
            let job = job_for(&delivery);
            let (answer, answered) = oneshot::channel();
            let stopped = || SinkError("the store writer has stopped".into());
            self.batches
                .send((job, answer))
                .await
                .map_err(|_| stopped())?;
            match answered.await.map_err(|_| stopped())? {
                Ok(Enqueued::New) => Ok(Acceptance::Accepted),
                Ok(Enqueued::Duplicate) => Ok(Acceptance::Duplicate),
                Err(e) => Err(SinkError(e)),
            }
        })
    }

    fn queue_counts(&self) -> Option<CountsFuture<'_>> {
        Some((self.counts)())
    }

    fn ready(&self) -> bool {
        !self.batches.is_closed()
            && now_ms().saturating_sub(self.last_error_ms.load(Ordering::Relaxed))
                > ms(UNREADY_AFTER_ERROR)
    }
}

#[derive(Deserialize)]
struct Numbered {
    #[serde(default)]
    number: Option<u64>,
}

#[derive(Deserialize)]
struct Repository {
    full_name: String,
}

#[derive(Deserialize)]
struct CheckRun {
    #[serde(default)]
    pull_requests: Vec<Numbered>,
}

/// Only what the key needs; serde skips the rest of the payload without building it.
#[derive(Deserialize)]
struct Probe {
    #[serde(default)]
    number: Option<u64>,
    #[serde(default)]
    pull_request: Option<Numbered>,
    #[serde(default)]
    issue: Option<Numbered>,
    #[serde(default)]
    check_run: Option<CheckRun>,
    #[serde(default)]
    repository: Option<Repository>,
}

/// The pull request a parsed delivery is about, as [`pull_request_key`] finds it.
fn key_of(event: &Event) -> Option<String> {
    match event {
        Event::PullRequest(e) => Some(pr_key(&e.repo.to_string(), e.number)),
        Event::IssueComment(e) => Some(pr_key(&e.repo.to_string(), e.issue_number)),
        Event::CheckRunRequestedAction(e) | Event::CheckRunRerequested(e) => e
            .pull_requests
            .first()
            .map(|n| pr_key(&e.repo.to_string(), *n)),
        _ => None,
    }
}

/// The pull request a delivery is about (`owner/repo#number`), so jobs of one pull request run
/// one at a time. `None` for events about no single pull request, and for payloads that do
/// not decode (the worker reports those).
pub fn pull_request_key(event: &str, payload: &[u8]) -> Option<String> {
    if !matches!(event, "pull_request" | "issue_comment" | "check_run") {
        return None;
    }
    let probe: Probe = serde_json::from_slice(payload).ok()?;
    let repo = probe.repository?.full_name;
    let number = match event {
        "pull_request" => probe
            .number
            .or_else(|| probe.pull_request.and_then(|p| p.number)),
        "issue_comment" => probe.issue.and_then(|i| i.number),
        _ => probe
            .check_run
            .and_then(|c| c.pull_requests.into_iter().next())
            .and_then(|p| p.number),
    }?;
    Some(pr_key(&repo, number))
}

/// How the durable server runs.
#[derive(Debug, Clone)]
pub struct DurableSettings {
    /// Workers in this process (0: intake only).
    pub workers: usize,
    pub worker: WorkerSettings,
    /// How long delivery ids (and finished jobs) are kept; at least [`MIN_RETENTION`].
    pub retention: Duration,
    /// How often old rows are pruned.
    pub prune_every: Duration,
    /// What the HTTP layer allows a client.
    pub limits: super::ServerLimits,
    /// Read-only routes served beside the webhook (the dashboard), if any.
    pub routes: Option<axum::Router>,
}

impl Default for DurableSettings {
    fn default() -> Self {
        DurableSettings {
            workers: 2,
            worker: WorkerSettings::default(),
            retention: Duration::from_secs(7 * 24 * 3600),
            prune_every: Duration::from_secs(3600),
            limits: super::ServerLimits::default(),
            routes: None,
        }
    }
}

/// A running server: HTTP intake, workers and pruning.
pub struct DurableServer {
    addr: SocketAddr,
    /// Notified for each stored job (job processes are woken through it).
    wake: Arc<Notify>,
    stop: watch::Sender<bool>,
    http: JoinHandle<std::io::Result<()>>,
    workers: Vec<JoinHandle<()>>,
    pruner: JoinHandle<()>,
}

/// Starts the server on `listener` over `queue`.
pub fn start<Q: JobQueue + Clone>(
    listener: tokio::net::TcpListener,
    queue: Q,
    secrets: WebhookSecrets,
    bot: Bot,
    metrics: Arc<Metrics>,
    settings: DurableSettings,
    done: Option<mpsc::UnboundedSender<JobReport>>,
) -> std::io::Result<DurableServer> {
    let addr = listener.local_addr()?;
    let (stop, stopped) = watch::channel(false);
    let wake = Arc::new(Notify::new());
    let sink = StoreSink::new(queue.clone(), wake.clone());
    let wake_out = wake.clone();
    let state = AppState::with_limits(
        secrets,
        Arc::new(sink),
        metrics.clone(),
        Some(bot.github().clone()),
        &settings.limits,
    );
    let mut http_stop = stopped.clone();
    let limits = settings.limits.clone();
    let app = match settings.routes.clone() {
        Some(routes) => router(state).merge(routes),
        None => router(state),
    };
    let http = tokio::spawn(async move {
        let stop = async move {
            let _ = http_stop.wait_for(|s| *s).await;
        };
        serve_with_limits(listener, app, stop, &limits).await
    });
    let workers = (0..settings.workers)
        .map(|i| {
            let mut worker = settings.worker.clone();
            if settings.workers > 1 {
                worker.id = format!("{}/{i}", worker.id);
            }
            tokio::spawn(run_queue_worker(
                queue.clone(),
                bot.clone(),
                metrics.clone(),
                worker,
                wake.clone(),
                stopped.clone(),
                done.clone(),
            ))
        })
        .collect();
    let retention = settings.retention.max(MIN_RETENTION);
    let pruner = tokio::spawn(prune_periodically(
        queue,
        retention,
        settings.prune_every,
        stopped,
    ));
    Ok(DurableServer {
        addr,
        wake: wake_out,
        stop,
        http,
        workers,
        pruner,
    })
}

async fn prune_periodically<Q: JobQueue>(
    queue: Q,
    retention: Duration,
    every: Duration,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        match queue.prune(now_ms() - ms(retention)).await {
            Ok(p) if p.deliveries + p.jobs > 0 => tracing::info!(
                deliveries = p.deliveries,
                jobs = p.jobs,
                "pruned old deliveries and finished jobs"
            ),
            Ok(_) => {}
            Err(e) => tracing::warn!("cannot prune: {e}"),
        }
        tokio::select! {
            () = tokio::time::sleep(every) => {}
            _ = stop.wait_for(|s| *s) => break,
        }
    }
}

impl DurableServer {
    /// Where it listens.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Notified for each job intake stores: what wakes workers elsewhere (job processes).
    pub fn wake(&self) -> Arc<Notify> {
        self.wake.clone()
    }

    /// Stops intake, lets running jobs finish for up to `grace`, then stops. A job still
    /// running after that keeps its lease until it expires and is then run again (by this
    /// server after a restart, or by another replica).
    pub async fn shutdown(self, grace: Duration) -> std::io::Result<()> {
        let _ = self.stop.send(true);
        let http = self.http.await;
        let deadline = tokio::time::Instant::now() + grace;
        for worker in self.workers {
            let abort = worker.abort_handle();
            if tokio::time::timeout_at(deadline, worker).await.is_err() {
                abort.abort();
            }
        }
        self.pruner.abort();
        match http {
            Ok(result) => result,
            Err(e) => Err(std::io::Error::other(e)),
        }
    }

    /// Stops everything at once, as a crash would: running jobs are cut off mid-way and keep
    /// their leases until they expire.
    pub fn abort(self) {
        self.http.abort();
        for worker in &self.workers {
            worker.abort();
        }
        self.pruner.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pull_request_keys() {
        let pr = br#"{"action":"opened","number":12,"pull_request":{"number":12},"repository":{"full_name":"Octo-Org/Fleet"}}"#;
        assert_eq!(
            pull_request_key("pull_request", pr).as_deref(),
            Some("octo-org/fleet#12")
        );
        let comment = br#"{"action":"created","issue":{"number":7,"pull_request":{}},"repository":{"full_name":"o/r"}}"#;
        assert_eq!(
            pull_request_key("issue_comment", comment).as_deref(),
            Some("o/r#7")
        );
        let run =
            br#"{"check_run":{"pull_requests":[{"number":3}]},"repository":{"full_name":"o/r"}}"#;
        assert_eq!(pull_request_key("check_run", run).as_deref(), Some("o/r#3"));
        let no_pr = br#"{"check_run":{"pull_requests":[]},"repository":{"full_name":"o/r"}}"#;
        assert_eq!(pull_request_key("check_run", no_pr), None);
        assert_eq!(pull_request_key("installation", pr), None);
        assert_eq!(pull_request_key("pull_request", b"not json"), None);
    }

    fn job(event: &str, payload: serde_json::Value) -> NewJob {
        job_for(&Delivery {
            id: "d".into(),
            event: event.into(),
            payload: bytes::Bytes::from(payload.to_string()),
            received_at: std::time::SystemTime::now(),
        })
    }

    #[test]
    fn one_parse_at_intake_keys_each_job_as_the_lighter_read_does() {
        use serde_json::json;
        let repo = json!({"full_name": "Octo-Org/Fleet"});
        let git = |sha: char| json!({"sha": sha.to_string().repeat(40), "ref": "main"});
        let pr = |action: &str| {
            json!({"action": action, "number": 12, "repository": repo, "sender": {"login": "a"},
                "pull_request": {"number": 12, "head": git('h'), "base": git('b')}})
        };
        let comment = |body: &str| {
            json!({"action": "created", "repository": repo,
                "issue": {"number": 7, "pull_request": {}},
                "comment": {"id": 1, "body": body, "user": {"login": "a", "type": "User"}}})
        };
        let run = json!({"action": "rerequested", "repository": repo, "sender": {"login": "a"},
            "check_run": {"id": 5, "name": "fleet/apply", "head_sha": "h".repeat(40),
                "pull_requests": [{"number": 3}]}});
        for (event, payload, key, preflight) in [
            ("pull_request", pr("synchronize"), "octo-org/fleet#12", true),
            ("issue_comment", comment("/plan"), "octo-org/fleet#7", false),
            ("check_run", run, "octo-org/fleet#3", false),
        ] {
            let bytes = payload.to_string();
            let j = job(event, payload);
            assert!(!j.record_only, "{event}");
            assert_eq!(j.pr_key, key, "{event}");
            assert_eq!(
                pull_request_key(event, bytes.as_bytes()).as_deref(),
                Some(key)
            );
            assert_eq!(!j.coalesce_key.is_empty(), preflight, "{event}");
        }
        // Recorded only: no job, no key.
        let labeled = job("pull_request", pr("labeled"));
        assert!(labeled.record_only && labeled.pr_key.is_empty());
        let chatter = job("issue_comment", comment("thanks"));
        assert!(chatter.record_only && chatter.pr_key.is_empty());
        // Unreadable as an event (no head), yet whose it is can be read: a job in its order.
        let broken = job(
            "pull_request",
            json!({"action": "synchronize", "number": 12, "repository": repo}),
        );
        assert!(!broken.record_only);
        assert_eq!(broken.pr_key, "octo-org/fleet#12");
    }
}
