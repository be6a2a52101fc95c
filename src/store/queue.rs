//! The durable job queue every store backend implements: the webhook inbox (deduplicated by
//! `X-GitHub-Delivery`) and jobs with per-pull-request and per-fleet exclusivity and leases.
//!
//! Rules every backend keeps (the conformance suite in `tests/store_conformance.rs` checks them
//! on SQLite and on a real PostgreSQL):
//!
//! - [`JobQueue::enqueue_delivery`] records the delivery and its job in one transaction, or
//!   neither; a known delivery id is [`Enqueued::Duplicate`] and changes nothing.
//! - [`JobQueue::claim`] hands each job to one worker at a time. Jobs sharing a non-empty
//!   `pr_key` (or `fleet_key`) run one at a time and in arrival order; a job whose lease ran
//!   out (its worker died) is handed out again.
//! - Only the holder of the current lease (its token) can renew or finish a job, so a worker
//!   that lost its lease cannot overwrite the work of the one that took the job over.
//!
//! Time is passed in (unix milliseconds) instead of read inside, so leases and backoff are
//! tested without sleeping. Replicas compare their clocks through lease expiry: leases are
//! minutes long, so ordinary NTP skew does not matter.

use std::future::Future;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;

use super::StoreError;

/// Unix milliseconds now.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Milliseconds in `d`, saturating.
pub fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// What a queued job is; the worker runs each kind its own way. Stored as its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobKind {
    /// A webhook delivery, handled as it arrived.
    Webhook,
    /// An apply of the fleets a pull request changed.
    Apply,
    /// A scheduled reconcile pass over a repository's fleets.
    Reconcile,
}

impl JobKind {
    pub const fn as_str(self) -> &'static str {
        match self {
            JobKind::Webhook => "webhook",
            JobKind::Apply => "apply",
            JobKind::Reconcile => "reconcile",
        }
    }

    /// The kind a stored name stands for (`None`: not one this fleetbot knows).
    pub fn parse(name: &str) -> Option<JobKind> {
        [JobKind::Webhook, JobKind::Apply, JobKind::Reconcile]
            .into_iter()
            .find(|k| k.as_str() == name)
    }
}

impl std::fmt::Display for JobKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The kind of a job made from a webhook delivery.
pub const WEBHOOK_JOB: &str = JobKind::Webhook.as_str();

/// A job to enqueue. For a webhook delivery the job id is the delivery id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewJob {
    pub id: String,
    pub kind: String,
    /// `X-GitHub-Event` for webhook jobs.
    pub event: String,
    pub payload: Bytes,
    /// `owner/repo#number`, lowercased; empty when the job touches no pull request.
    pub pr_key: String,
    /// The fleet the job changes; empty when it changes none.
    pub fleet_key: String,
    /// Work a newer job of the same key makes pointless: queuing this job ends the older
    /// queued ones of the key that never started (a preflight of an older head). Empty for
    /// work that must never be dropped (commands, applies).
    pub coalesce_key: String,
    /// A delivery that needs no work (an event fleetbot does not act on, a comment with no
    /// command): recorded, so a redelivery is known, and no job is queued.
    pub record_only: bool,
}

/// The outcome of [`JobQueue::enqueue_delivery`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Enqueued {
    /// Stored: the delivery is known and its job queued.
    New,
    /// The delivery id was seen before (within the retention); nothing changed.
    Duplicate,
}

/// A job handed to one worker, with the lease that proves it is theirs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimedJob {
    pub id: String,
    pub kind: String,
    pub event: String,
    /// `None` when the store holds no payload for it (a store edited by hand, a migration
    /// gone wrong): the worker fails it rather than run it on an empty body.
    pub payload: Option<Bytes>,
    pub pr_key: String,
    pub fleet_key: String,
    /// Which attempt this is (1 for the first).
    pub attempt: u32,
    /// Unique per claim: renewing and finishing need it.
    pub lease_token: String,
    /// When the job was queued (unix ms): for a delivery, when it arrived.
    pub created_at: i64,
}

/// How a claimed job ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobOutcome {
    /// Finished; never run again.
    Done,
    /// Failed for now; queued again to run no earlier than `at` (unix ms).
    Retry { at: i64, error: String },
    /// Failed for good; kept (with its payload) until pruned.
    Failed { error: String },
    /// Not run (a fleet lock was held elsewhere); queued again for `at` without counting the
    /// attempt.
    Deferred { at: i64 },
}

/// A job as stored (for operators and tests).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobRecord {
    pub id: String,
    pub kind: String,
    pub event: String,
    /// `queued`, `running`, `done` or `failed`.
    pub state: String,
    pub attempts: u32,
    pub pr_key: String,
    pub fleet_key: String,
    pub last_error: String,
}

/// Row counts (for `/metrics`, operators and tests).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueCounts {
    pub deliveries: u64,
    pub queued: u64,
    pub running: u64,
    pub done: u64,
    pub failed: u64,
}

impl QueueCounts {
    /// Jobs of any state.
    pub fn jobs(&self) -> u64 {
        self.queued + self.running + self.done + self.failed
    }
}

/// What [`JobQueue::prune`] removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pruned {
    pub deliveries: u64,
    pub jobs: u64,
}

/// The most deliveries stored in one [`JobQueue::enqueue_deliveries`] call (7 bound values a
/// row stays far below every engine's limit on bound parameters).
pub const MAX_ENQUEUE_BATCH: usize = 64;

/// GitHub redelivers a delivery for up to 3 days with the same id; a shorter retention would
/// let a redelivery run twice.
pub const MIN_RETENTION: Duration = Duration::from_secs(3 * 24 * 3600);

/// What [`JobQueue::claim_or_next_due`] found.
#[derive(Debug)]
pub enum Claim {
    /// A job, now leased to the worker.
    Job(ClaimedJob),
    /// Nothing runnable; the earliest time something may become so (see
    /// [`JobQueue::next_due`]).
    Idle {
        /// Unix ms, `None` when nothing is open.
        next_due: Option<i64>,
    },
}

/// The inbox and the job queue.
pub trait JobQueue: Send + Sync + 'static {
    /// Records each delivery (its job id is the delivery id) and queues its job at `now`, all
    /// in one transaction: afterwards every delivery is stored with its job, or the call failed
    /// and none is. A delivery id known before, or repeated within `jobs`, is a
    /// [`Enqueued::Duplicate`] and stores nothing. One answer per job, in order.
    ///
    /// Intake batches concurrent deliveries into one call, so under load one commit (and, on
    /// SQLite, one sync to disk) serves many deliveries; see [`MAX_ENQUEUE_BATCH`].
    fn enqueue_deliveries(
        &self,
        jobs: &[NewJob],
        now: i64,
    ) -> impl Future<Output = Result<Vec<Enqueued>, StoreError>> + Send;

    /// [`JobQueue::enqueue_deliveries`] for one delivery.
    fn enqueue_delivery(
        &self,
        job: &NewJob,
        now: i64,
    ) -> impl Future<Output = Result<Enqueued, StoreError>> + Send {
        async move {
            let answers = self
                .enqueue_deliveries(std::slice::from_ref(job), now)
                .await?;
            Ok(answers.first().copied().unwrap_or(Enqueued::Duplicate))
        }
    }

    /// Queues a job that comes from no delivery (a follow-up job a handler creates); a known
    /// job id is a [`Enqueued::Duplicate`].
    fn enqueue(
        &self,
        job: &NewJob,
        now: i64,
    ) -> impl Future<Output = Result<Enqueued, StoreError>> + Send;

    /// Hands a runnable job to `worker` with a lease until `now + lease_ms`: a job whose
    /// worker died first, else the one due longest (arrival order within a key). Only the head
    /// of each key is a candidate, so the cost does not grow with the jobs queued behind.
    fn claim(
        &self,
        worker: &str,
        now: i64,
        lease_ms: i64,
    ) -> impl Future<Output = Result<Option<ClaimedJob>, StoreError>> + Send;

    /// The earliest time (unix ms) a job may become claimable without anything new arriving:
    /// a queued head coming due or a lease running out. `None` when nothing is open.
    fn next_due(&self) -> impl Future<Output = Result<Option<i64>, StoreError>> + Send;

    /// [`JobQueue::claim`], and when nothing is runnable, [`JobQueue::next_due`]: what an idle
    /// worker asks before it sleeps. A store may answer both in one round trip (SQLite does, on
    /// its writer thread: at 1,000 deliveries a second a separate read was a hand-off to
    /// another thread and back for every job of a busy pull request).
    fn claim_or_next_due(
        &self,
        worker: &str,
        now: i64,
        lease_ms: i64,
    ) -> impl Future<Output = Result<Claim, StoreError>> + Send {
        async move {
            if let Some(job) = self.claim(worker, now, lease_ms).await? {
                return Ok(Claim::Job(job));
            }
            Ok(Claim::Idle {
                next_due: self.next_due().await?,
            })
        }
    }

    /// Extends the lease to `until`; `false` when the lease was lost (expired and taken).
    fn renew(
        &self,
        job: &ClaimedJob,
        until: i64,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Finishes a claim; `false` when the lease was lost and nothing was recorded.
    fn finish(
        &self,
        job: &ClaimedJob,
        outcome: &JobOutcome,
        now: i64,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Removes deliveries received, and finished jobs finished, before `before`.
    fn prune(&self, before: i64) -> impl Future<Output = Result<Pruned, StoreError>> + Send;

    /// Whether the delivery id is known.
    fn delivery_known(&self, id: &str) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// One job.
    fn job(&self, id: &str) -> impl Future<Output = Result<Option<JobRecord>, StoreError>> + Send;

    /// Row counts.
    fn counts(&self) -> impl Future<Output = Result<QueueCounts, StoreError>> + Send;

    /// Takes the fleet's exclusive lock, or `None` when another holder (a worker of any
    /// replica, or the CLI on the same store) has it. Release it with [`FleetLock::release`];
    /// a dropped lock is released too.
    fn try_lock_fleet(
        &self,
        fleet: &str,
    ) -> impl Future<Output = Result<Option<super::FleetLock>, StoreError>> + Send;
}

/// Splits a batch into the first occurrence of each id (to insert) and answers where a later
/// occurrence is already a duplicate. Returns `(firsts, answers)`: `answers[i]` is `None`
/// for the firsts (decided by the store) and `Some(Duplicate)` for repeats.
pub(crate) fn first_occurrences(jobs: &[NewJob]) -> (Vec<&NewJob>, Vec<Option<Enqueued>>) {
    let mut seen = std::collections::HashSet::new();
    let mut firsts = Vec::with_capacity(jobs.len());
    let mut answers = Vec::with_capacity(jobs.len());
    for job in jobs {
        if seen.insert(job.id.as_str()) {
            firsts.push(job);
            answers.push(None);
        } else {
            answers.push(Some(Enqueued::Duplicate));
        }
    }
    (firsts, answers)
}

/// Fills the undecided answers: `New` for ids the store queued, `Duplicate` for the rest.
pub(crate) fn decide(
    jobs: &[NewJob],
    mut answers: Vec<Option<Enqueued>>,
    queued: &std::collections::HashSet<String>,
) -> Vec<Enqueued> {
    jobs.iter()
        .zip(answers.iter_mut())
        .map(|(job, answer)| match answer.take() {
            Some(a) => a,
            None if queued.contains(&job.id) => Enqueued::New,
            None => Enqueued::Duplicate,
        })
        .collect()
}

/// The pull-request key of a job: `owner/repo#number`, lowercased (GitHub names are
/// case-insensitive, so two spellings must not run side by side).
/// The coalesce key of a pull request's preflight: a newer head's preflight ends the older
/// queued ones of the same pull request, whoever queued them (the webhook, the reconcile loop).
pub fn preflight_coalesce_key(pr_key: &str) -> String {
    format!("preflight:{pr_key}")
}

pub fn pr_key(repo_full_name: &str, number: u64) -> String {
    format!("{}#{number}", repo_full_name.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::JobKind;

    #[test]
    fn a_job_kind_is_stored_by_its_name_and_an_unknown_name_is_no_kind() {
        for kind in [JobKind::Webhook, JobKind::Apply, JobKind::Reconcile] {
            assert_eq!(JobKind::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(JobKind::parse("Apply"), None);
        assert_eq!(JobKind::parse(""), None);
    }
}
