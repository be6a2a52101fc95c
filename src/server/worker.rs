//! The durable worker: claims jobs from the store's queue, runs them through [`Bot::handle`],
//! and records the outcome.
//!
//! Several workers (in one process or in several replicas on one PostgreSQL) share one queue;
//! the store hands each job to one of them and keeps jobs of one pull request (or fleet) one at
//! a time. A worker keeps its lease alive while a job runs; if the worker dies, the lease runs
//! out and another worker takes the job again. A worker that finds its lease taken stops the
//! job rather than run it twice.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{Notify, mpsc, watch};
use tracing::Instrument;

use super::JobReport;
use super::metrics::{Metrics, event_label};
use crate::bot::{Bot, BotError, Handled, JobError};
use crate::store::queue::Claim;
use crate::store::queue::{JobKind, ms, now_ms};
use crate::store::{ClaimedJob, JobOutcome, JobQueue};

/// How a worker claims and retries.
#[derive(Debug, Clone)]
pub struct WorkerSettings {
    /// Names this worker in the store (`lease_owner`), for operators.
    pub id: String,
    /// How long a claim lasts without renewal. A job whose worker died waits this long before
    /// it is taken again; the running worker renews every third of it.
    pub lease: Duration,
    /// How often an idle worker looks for work it was not woken for (jobs queued by another
    /// replica, retries coming due, expired leases).
    pub idle_poll: Duration,
    /// Attempts before a job that keeps failing on GitHub errors is marked failed.
    pub max_attempts: u32,
    /// The first retry's delay; each further retry doubles it.
    pub retry_backoff: Duration,
    /// How long a job waits when its fleet is locked elsewhere.
    pub fleet_busy_delay: Duration,
    /// At shutdown, how long a running job may go on; then it is stopped and released at
    /// once (not left for its lease to run out), so another replica takes it over without
    /// waiting. Jobs are restart-safe, so a released job loses nothing.
    pub shutdown_grace: Duration,
    /// How long a webhook job or a reconcile pass may run; past it, it is ended and marked
    /// failed, not run again.
    pub job_timeout: Duration,
    /// The same for an apply (creating clusters takes hours on a large fleet).
    pub apply_timeout: Duration,
    /// Told of each claimed job before it runs, and when its outcome is recorded: a job
    /// process tells its supervisor, so a job that takes the process down is known.
    pub hook: Option<JobHook>,
}

/// What a [`JobHook`] is told.
#[derive(Debug, Clone, Copy)]
pub enum JobSignal<'a> {
    /// Claimed, about to run.
    Claimed(&'a ClaimedJob),
    /// Its outcome is recorded (or it was stopped without one).
    Ended(&'a ClaimedJob),
}

/// A callback for [`JobSignal`]s; called on the worker's task, so it must not block long.
#[derive(Clone)]
pub struct JobHook(pub Arc<dyn Fn(JobSignal<'_>) + Send + Sync>);

impl std::fmt::Debug for JobHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JobHook")
    }
}

impl WorkerSettings {
    /// The time budget of a job of `kind` (an unknown kind is not run at all).
    pub fn budget_for(&self, kind: &str) -> Duration {
        match JobKind::parse(kind) {
            Some(JobKind::Apply) => self.apply_timeout,
            _ => self.job_timeout,
        }
    }
}

/// The error a job ended for its time budget is recorded with.
pub fn over_time(budget: Duration) -> String {
    format!(
        "exceeded its time budget of {} s; ended and not run again",
        budget.as_secs()
    )
}

impl Default for WorkerSettings {
    fn default() -> Self {
        WorkerSettings {
            id: worker_id(),
            lease: Duration::from_secs(300),
            idle_poll: Duration::from_secs(1),
            max_attempts: 5,
            retry_backoff: Duration::from_secs(30),
            fleet_busy_delay: Duration::from_secs(10),
            shutdown_grace: Duration::from_secs(25),
            job_timeout: Duration::from_secs(3600),
            apply_timeout: Duration::from_secs(6 * 3600),
            hook: None,
        }
    }
}

/// `host-pid-random`: unique per process, readable in the store.
pub fn worker_id() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "fleetbot".into());
    let random = uuid::Uuid::new_v4().simple().to_string();
    format!("{host}-{}-{}", std::process::id(), &random[..8])
}

/// Claims and runs jobs until `stop` turns true (or its sender is dropped); a job already
/// running is finished first.
pub async fn run_queue_worker<Q: JobQueue + Clone>(
    queue: Q,
    bot: Bot,
    metrics: Arc<Metrics>,
    settings: WorkerSettings,
    wake: Arc<Notify>,
    mut stop: watch::Receiver<bool>,
    done: Option<mpsc::UnboundedSender<JobReport>>,
) {
    loop {
        if *stop.borrow() {
            break;
        }
        let next_due = match queue
            .claim_or_next_due(&settings.id, now_ms(), ms(settings.lease))
            .await
        {
            Ok(Claim::Job(job)) => {
                run_job(
                    &queue,
                    &bot,
                    &metrics,
                    &settings,
                    job,
                    done.as_ref(),
                    stop.clone(),
                )
                .await;
                continue;
            }
            Ok(Claim::Idle { next_due }) => next_due,
            Err(e) => {
                tracing::warn!(worker = %settings.id, "cannot claim a job: {e}");
                None
            }
        };
        // Nothing runnable: sleep until the next job comes due (a retry, an expiring lease),
        // a wake-up from intake, or the poll for other replicas' work, whichever is first.
        let pause = idle_pause(next_due, now_ms(), settings.idle_poll);
        tokio::select! {
            () = wake.notified() => {}
            () = tokio::time::sleep(pause) => {}
            changed = stop.changed() => {
                if changed.is_err() {
                    break;
                }
            }
        }
    }
}

/// How long an idle worker sleeps: until `next_due` when that is sooner than the poll. A due
/// time already past means the job is held back behind another; the poll (or a wake-up) will
/// find it, and sleeping zero would spin.
fn idle_pause(next_due: Option<i64>, now: i64, poll: Duration) -> Duration {
    match next_due {
        Some(at) if at > now => Duration::from_millis((at - now) as u64).min(poll),
        _ => poll,
    }
}

/// Why a job ended without an outcome of its own.
enum Interrupted {
    LeaseLost,
    /// The server is shutting down and the job ran past the grace period.
    Shutdown,
    /// It ran past its time budget.
    OverTime(Duration),
}

/// Resolves `grace` after `stop` turns true (never, while it does not).
async fn grace_after_stop(mut stop: watch::Receiver<bool>, grace: Duration) {
    while !*stop.borrow() {
        if stop.changed().await.is_err() {
            return std::future::pending().await;
        }
    }
    tokio::time::sleep(grace).await;
}

async fn run_job<Q: JobQueue + Clone>(
    queue: &Q,
    bot: &Bot,
    metrics: &Metrics,
    settings: &WorkerSettings,
    job: ClaimedJob,
    done: Option<&mpsc::UnboundedSender<JobReport>>,
    stop: watch::Receiver<bool>,
) {
    if let Some(hook) = &settings.hook {
        (hook.0)(JobSignal::Claimed(&job));
    }
    run_claimed(queue, bot, metrics, settings, &job, done, stop).await;
    if let Some(hook) = &settings.hook {
        (hook.0)(JobSignal::Ended(&job));
    }
}

async fn run_claimed<Q: JobQueue + Clone>(
    queue: &Q,
    bot: &Bot,
    metrics: &Metrics,
    settings: &WorkerSettings,
    job: &ClaimedJob,
    done: Option<&mpsc::UnboundedSender<JobReport>>,
    stop: watch::Receiver<bool>,
) {
    let started = Instant::now();
    let label = event_label(Some(&job.event));
    let span = tracing::info_span!("job", id = %job.id, event = label, attempt = job.attempt);
    // Attempts are counted when a job is claimed. One claimed more often than it may run never
    // came back to record an outcome: each time it ended with its process (a crash, an abort, a
    // kill). Running it again would take down this server too and hold its pull request's
    // later jobs behind it, so it is parked as failed, with the reason, without running.
    if job.attempt > settings.max_attempts {
        let error = format!(
            "abandoned: {} attempts never finished (each ended with its process); not run again",
            job.attempt - 1
        );
        tracing::error!(parent: &span, "{error}");
        finish(
            queue,
            job,
            &JobOutcome::Failed {
                error: error.clone(),
            },
            &span,
        )
        .await;
        metrics.job(label, "abandoned", started.elapsed());
        if let Some(done) = done {
            let _ = done.send(JobReport {
                delivery_id: job.id.clone(),
                event: job.event.clone(),
                result: Err(error),
                took: started.elapsed(),
            });
        }
        return;
    }
    let fleet_lock = if job.fleet_key.is_empty() {
        None
    } else {
        match queue.try_lock_fleet(&job.fleet_key).await {
            Ok(Some(lock)) => Some(lock),
            other => {
                if let Err(e) = other {
                    tracing::warn!(parent: &span, "cannot take the fleet lock: {e}");
                }
                let at = now_ms() + ms(settings.fleet_busy_delay);
                finish(queue, job, &JobOutcome::Deferred { at }, &span).await;
                metrics.job(label, "deferred", started.elapsed());
                return;
            }
        }
    };

    let work = async {
        match runnable(job) {
            Ok((kind, payload)) => {
                bot.run_job(kind, &job.id, job.created_at, &job.event, payload)
                    .await
            }
            Err(why) => Err(BotError::Job(why)),
        }
    }
    .instrument(span.clone());
    // The lease is kept alive by a task of its own: whatever the job does on its task (a long
    // CPU burst included), the heartbeat is never starved, so no other worker takes a job that
    // is still running.
    let mut lost = keep_alive(queue.clone(), job.clone(), settings.lease, span.clone());
    let budget = settings.budget_for(&job.kind);
    let result = tokio::select! {
        result = work => Ok(result),
        // Another worker holds the job now; running on would run it twice.
        _ = lost.changed() => Err(Interrupted::LeaseLost),
        () = grace_after_stop(stop, settings.shutdown_grace) => Err(Interrupted::Shutdown),
        // Dropping the job's future ends it where it waits; a job that never waits is ended
        // by its process's supervisor instead (`server::job_process`).
        () = tokio::time::sleep(budget) => Err(Interrupted::OverTime(budget)),
    };
    drop(lost);
    let took = started.elapsed();
    // Follow-up jobs (an apply a merge or a command asked for) are queued before this job is
    // finished: a crash in between re-runs this job, which queues the same ids again
    // (duplicates change nothing), so a follow-up is never lost.
    let queued = match &result {
        Ok(Ok(handled)) => enqueue_follow_ups(queue, handled, &span).await,
        _ => Ok(()),
    };
    let (outcome, metric) = match &result {
        Err(Interrupted::LeaseLost) => (None, "lease_lost"),
        // Released for another replica to take now: the job's work is restart-safe (an apply
        // finds its guard record and the engine's idempotency keys), so nothing is lost and
        // nothing waits for a lease to run out.
        Err(Interrupted::Shutdown) => (Some(JobOutcome::Deferred { at: now_ms() }), "released"),
        Err(Interrupted::OverTime(budget)) => (
            Some(JobOutcome::Failed {
                error: over_time(*budget),
            }),
            "timeout",
        ),
        Ok(Ok(_)) if queued.is_err() => (
            Some(JobOutcome::Retry {
                at: now_ms() + ms(settings.retry_backoff),
                error: queued.clone().err().unwrap_or_default(),
            }),
            "retry",
        ),
        Ok(Ok(Handled::Deferred { until, .. })) => {
            // Back when the holder's lease runs out, if that is sooner than the usual wait.
            let now = now_ms();
            let later = now + ms(settings.fleet_busy_delay);
            let at = until.map_or(later, |u| u.clamp(now + 100, later));
            (Some(JobOutcome::Deferred { at }), "deferred")
        }
        Ok(Ok(Handled::Ignored(_))) => (Some(JobOutcome::Done), "ignored"),
        Ok(Ok(_)) => (Some(JobOutcome::Done), "ok"),
        // The delivery itself is bad, or GitHub refuses the request: another attempt would
        // fail the same way (and repeat whatever the job made before failing).
        Ok(Err(e)) if e.is_permanent() => (
            Some(JobOutcome::Failed {
                error: e.to_string(),
            }),
            "error",
        ),
        Ok(Err(e)) if job.attempt >= settings.max_attempts => (
            Some(JobOutcome::Failed {
                error: e.to_string(),
            }),
            "error",
        ),
        Ok(Err(e)) => {
            let at = now_ms() + ms(retry_delay(settings.retry_backoff, job.attempt));
            (
                Some(JobOutcome::Retry {
                    at,
                    error: e.to_string(),
                }),
                "retry",
            )
        }
    };
    match &result {
        Ok(Ok(Handled::Applied {
            conclusion,
            refusals,
        })) => metrics.apply(conclusion.as_str(), took, refusals),
        Ok(Ok(Handled::Deferred { .. })) => metrics.lock_wait(),
        _ => {}
    }
    if let Some(outcome) = &outcome {
        if let JobOutcome::Failed { error } = outcome
            && matches!(result, Err(Interrupted::OverTime(_)))
        {
            tracing::error!(parent: &span, "job ended: {error}");
        }
        finish(queue, job, outcome, &span).await;
    } else {
        tracing::warn!(parent: &span, "the lease was taken over; stopped without recording");
    }
    if let Some(lock) = fleet_lock
        && let Err(e) = lock.release().await
    {
        tracing::warn!(parent: &span, "cannot release the fleet lock: {e}");
    }
    metrics.job(label, metric, took);
    if let Ok(Err(e)) = &result {
        tracing::error!(parent: &span, "job failed: {e}");
    }
    if let Some(done) = done {
        let _ = done.send(JobReport {
            delivery_id: job.id.clone(),
            event: job.event.clone(),
            result: match result {
                Ok(r) => r.map_err(|e| e.to_string()),
                Err(Interrupted::LeaseLost) => Err("lease lost".into()),
                Err(Interrupted::Shutdown) => Err("released at shutdown".into()),
                Err(Interrupted::OverTime(budget)) => Err(over_time(budget)),
            },
            took,
        });
    }
}

/// The longest a failed job waits before its next attempt.
const MAX_RETRY_DELAY: Duration = Duration::from_secs(30 * 60);

/// The wait before attempt `attempt + 1`: doubling from `first`, at most [`MAX_RETRY_DELAY`],
/// and spread by ±20 % so jobs that failed together (GitHub was down) do not return together.
fn retry_delay(first: Duration, attempt: u32) -> Duration {
    let factor = 1u32 << attempt.saturating_sub(1).min(16);
    let base = first.saturating_mul(factor).min(MAX_RETRY_DELAY);
    let random = u16::from_le_bytes({
        let b = uuid::Uuid::new_v4().into_bytes();
        [b[0], b[1]]
    });
    // 0.8 ..= 1.2
    let spread = 0.8 + 0.4 * f64::from(random) / f64::from(u16::MAX);
    base.mul_f64(spread)
}

/// Renews `job`'s lease every third of `lease` on its own task until the returned receiver
/// is dropped; the receiver changes (to `true`) when the lease was lost.
pub fn keep_alive<Q: JobQueue + Clone>(
    queue: Q,
    job: ClaimedJob,
    lease: Duration,
    span: tracing::Span,
) -> watch::Receiver<bool> {
    let (tx, rx) = watch::channel(false);
    tokio::spawn(async move {
        let mut beat = tokio::time::interval((lease / 3).max(Duration::from_millis(10)));
        beat.tick().await;
        loop {
            tokio::select! {
                _ = beat.tick() => {}
                // The job ended: nothing left to keep alive.
                () = tx.closed() => break,
            }
            match queue.renew(&job, now_ms() + ms(lease)).await {
                Ok(true) => {}
                Ok(false) => {
                    let _ = tx.send(true);
                    break;
                }
                Err(e) => tracing::warn!(parent: &span, "cannot renew the lease: {e}"),
            }
        }
    });
    rx
}

async fn enqueue_follow_ups<Q: JobQueue>(
    queue: &Q,
    handled: &Handled,
    span: &tracing::Span,
) -> Result<(), String> {
    for job in handled.follow_ups() {
        if let Err(e) = queue.enqueue(job, now_ms()).await {
            tracing::warn!(parent: span, "cannot queue a follow-up job: {e}");
            return Err(format!("cannot queue a follow-up job: {e}"));
        }
    }
    Ok(())
}

async fn finish<Q: JobQueue>(
    queue: &Q,
    job: &ClaimedJob,
    outcome: &JobOutcome,
    span: &tracing::Span,
) {
    match queue.finish(job, outcome, now_ms()).await {
        Ok(true) => {}
        Ok(false) => {
            tracing::warn!(parent: span, "the lease was taken over before the job finished")
        }
        // The lease runs out and the job is taken again: at worst it runs twice, never zero
        // times.
        Err(e) => tracing::error!(parent: span, "cannot record the job's outcome: {e}"),
    }
}

/// What a claimed job runs as, or why it cannot run at all: a kind this fleetbot does not
/// know (written by a newer one sharing the store) is not taken for a webhook delivery, and a
/// job whose payload the store lost is not run on an empty body.
fn runnable(job: &ClaimedJob) -> Result<(JobKind, &bytes::Bytes), JobError> {
    let kind = JobKind::parse(&job.kind).ok_or_else(|| JobError::UnknownKind(job.kind.clone()))?;
    let payload = job.payload.as_ref().ok_or(JobError::NoPayload)?;
    Ok((kind, payload))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_of_an_unknown_kind_or_without_its_payload_is_not_run() {
        let job = ClaimedJob {
            id: "d-1".into(),
            kind: crate::store::queue::WEBHOOK_JOB.into(),
            event: "pull_request".into(),
            payload: Some(bytes::Bytes::from_static(b"{}")),
            pr_key: String::new(),
            fleet_key: String::new(),
            attempt: 1,
            lease_token: "t".into(),
            created_at: 0,
        };
        assert!(runnable(&job).is_ok());
        let newer = ClaimedJob {
            kind: "from-the-future".into(),
            ..job.clone()
        };
        assert_eq!(
            runnable(&newer).unwrap_err().to_string(),
            "unknown job kind \"from-the-future\"; not run"
        );
        let bare = ClaimedJob {
            payload: None,
            ..job
        };
        assert!(matches!(runnable(&bare), Err(JobError::NoPayload)));
    }

    #[test]
    fn idle_workers_sleep_until_the_next_due_job_but_never_spin() {
        let poll = Duration::from_secs(1);
        assert_eq!(
            idle_pause(Some(1_250), 1_000, poll),
            Duration::from_millis(250)
        );
        assert_eq!(idle_pause(Some(9_000), 1_000, poll), poll);
        assert_eq!(idle_pause(Some(900), 1_000, poll), poll);
        assert_eq!(idle_pause(None, 1_000, poll), poll);
    }

    #[test]
    fn retries_back_off_with_a_spread_and_a_ceiling() {
        let first = Duration::from_secs(30);
        for attempt in 1..=5 {
            let base = first * (1 << (attempt - 1));
            let d = retry_delay(first, attempt);
            assert!(
                d >= base.mul_f64(0.8) && d <= base.mul_f64(1.2),
                "{attempt}: {d:?}"
            );
        }
        assert!(retry_delay(first, 30) <= MAX_RETRY_DELAY.mul_f64(1.2));
        let spread: std::collections::BTreeSet<u128> =
            (0..20).map(|_| retry_delay(first, 3).as_millis()).collect();
        assert!(spread.len() > 1, "no jitter");
    }
    use crate::store::{NewJob, SqliteStore};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_lease_is_kept_while_the_job_blocks_its_own_thread() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("q.sqlite"))
            .await
            .unwrap();
        let job = NewJob {
            id: "d-1".into(),
            kind: crate::store::queue::WEBHOOK_JOB.into(),
            event: "pull_request".into(),
            payload: bytes::Bytes::from_static(b"{}"),
            pr_key: "o/r#1".into(),
            fleet_key: String::new(),
            coalesce_key: String::new(),
            record_only: false,
        };
        store.enqueue(&job, now_ms()).await.unwrap();
        let lease = Duration::from_millis(300);
        let claimed = store
            .claim("worker-a", now_ms(), ms(lease))
            .await
            .unwrap()
            .unwrap();
        let lost = keep_alive(store.clone(), claimed, lease, tracing::Span::none());
        // A CPU burst on the job's own thread, four leases long.
        tokio::task::block_in_place(|| std::thread::sleep(lease * 4));
        assert!(!*lost.borrow(), "the lease was lost while the job ran");
        let taken = store.claim("worker-b", now_ms(), ms(lease)).await.unwrap();
        assert_eq!(
            taken, None,
            "another worker took a job that is still running"
        );
        drop(lost);
    }
}
