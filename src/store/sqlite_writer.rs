//! The SQLite queue's hot writes (intake, claim, renewal, outcome), and merge-to-deploy's
//! writes, on one thread that owns its connections, so a whole transaction costs one hand-off
//! between threads.
//!
//! Through sqlx every statement, every row and the commit is a round trip to the connection's
//! own thread; a batch of deliveries took five or more, and at hundreds of deliveries a second
//! two thirds of the server's CPU went to switching threads. Here the async side sends one
//! closure and awaits one answer. The thread holds one connection and sets its `synchronous`
//! level before each transaction: `FULL` for what must survive a power cut (accepted
//! deliveries), `NORMAL` for a job's state changes (see [`super::sqlite`]). One connection, not
//! one per level: a commit by another connection empties a connection's page cache, so two
//! writers taking turns read every page they touch back from the file (at 1,000 deliveries a
//! second that was 55 `pread`s a delivery).

use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::{Arc, LazyLock, Mutex, mpsc};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior, named_params};
use tokio::sync::oneshot;

use super::deploy::{ApplyRun, Approval, AuditEntry, Lease, LeaseTake, ReviewedPlan};
use super::queue::{ClaimedJob, JobOutcome, NewJob};
use super::sql;

/// The writer thread's connection, at the `synchronous` level its last transaction asked for.
pub(crate) struct Conns {
    conn: Connection,
    full: bool,
}

impl Conns {
    /// The connection, committing with `synchronous=FULL`.
    pub fn full(&mut self) -> rusqlite::Result<&mut Connection> {
        self.level(true)
    }

    /// The connection, committing with `synchronous=NORMAL`.
    pub fn relaxed(&mut self) -> rusqlite::Result<&mut Connection> {
        self.level(false)
    }

    fn level(&mut self, full: bool) -> rusqlite::Result<&mut Connection> {
        if self.full != full {
            let level = if full { "FULL" } else { "NORMAL" };
            self.conn.pragma_update(None, "synchronous", level)?;
            self.full = full;
        }
        Ok(&mut self.conn)
    }
}

type Task = Box<dyn FnOnce(&mut Conns) + Send>;

/// A handle on the writer thread; the thread ends when every handle is dropped or on
/// [`Writer::close`].
#[derive(Debug, Clone)]
pub(crate) struct Writer {
    tasks: mpsc::Sender<Option<Task>>,
    thread: Arc<Mutex<Option<std::thread::JoinHandle<()>>>>,
}

fn open(path: &Path, synchronous: &str) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    // Writes from sqlx's connections are kept apart by the store's gate; the timeout covers
    // anything else holding the file (a backup, an operator's sqlite3 shell).
    conn.busy_timeout(Duration::from_secs(10))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.pragma_update(None, "synchronous", synchronous)?;
    Ok(conn)
}

/// Why a write did not happen; the store words it as its own error (`StoreError`).
#[derive(Debug, thiserror::Error)]
pub enum WriterError {
    /// SQLite refused the statement or the transaction.
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    /// The writer thread could not be started.
    #[error("cannot start the writer thread: {0}")]
    Thread(std::io::Error),
    /// The store was closed before this write was sent.
    #[error("the store is closed")]
    Closed,
    /// The writer dropped this write without an answer (its task panicked).
    #[error("the store's writer failed on this write")]
    Failed,
}

impl Writer {
    /// Opens the connections (the file exists; statements are prepared when first used, so
    /// the tables may be created after) and starts the thread.
    pub fn start(path: &Path) -> Result<Writer, WriterError> {
        let conns = Conns {
            conn: open(path, "FULL")?,
            full: true,
        };
        let (tasks, inbox) = mpsc::channel::<Option<Task>>();
        let thread = std::thread::Builder::new()
            .name("fleetbot-sqlite-writer".into())
            .spawn(move || {
                let mut conns = conns;
                while let Ok(Some(task)) = inbox.recv() {
                    // A panicking task must not take the queue down with it: its open
                    // transaction rolls back as it unwinds, and its caller sees the answer
                    // channel closed (an error).
                    let _ = std::panic::catch_unwind(AssertUnwindSafe(|| task(&mut conns)));
                }
            })
            .map_err(WriterError::Thread)?;
        Ok(Writer {
            tasks,
            thread: Arc::new(Mutex::new(Some(thread))),
        })
    }

    /// Runs `f` on the writer thread and returns what it returned. `gate` is released when
    /// `f` has finished on the thread, not when the caller stops waiting: a caller that is
    /// cancelled mid-write must not let the next writer in while this one still holds SQLite's
    /// write lock.
    pub async fn run<T: Send + 'static, G: Send + 'static>(
        &self,
        gate: G,
        f: impl FnOnce(&mut Conns) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, WriterError> {
        let (answer, answered) = oneshot::channel();
        let task: Task = Box::new(move |conns| {
            let result = f(conns).map_err(WriterError::from);
            drop(gate);
            let _ = answer.send(result);
        });
        self.tasks
            .send(Some(task))
            .map_err(|_| WriterError::Closed)?;
        answered.await.map_err(|_| WriterError::Failed)?
    }

    /// Stops the thread once the tasks already sent have run, and waits for it (its
    /// connections are closed when this returns); later calls fail.
    pub async fn close(&self) {
        let _ = self.tasks.send(None);
        let thread = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(thread) = thread {
            let _ = tokio::task::spawn_blocking(move || thread.join()).await;
        }
    }
}

/// Queues one job inside `tx`: its row, then the older queued work it supersedes, then whether
/// it heads its keys. Whether it was new.
pub(crate) fn queue_job(
    tx: &rusqlite::Transaction<'_>,
    j: &NewJob,
    now: i64,
) -> rusqlite::Result<bool> {
    let mut insert = tx.prepare_cached(sql::INSERT_JOB)?;
    let inserted = insert.execute(named_params! {
        "$1": j.id, "$2": j.kind, "$3": j.event, "$4": j.pr_key, "$5": j.fleet_key,
        "$6": now, "$7": j.coalesce_key,
    })? == 1;
    if !inserted {
        return Ok(false);
    }
    static INSERT_PAYLOAD: LazyLock<String> = LazyLock::new(|| sql::insert_payloads_sql(1));
    let mut payload = tx.prepare_cached(&INSERT_PAYLOAD)?;
    payload.execute(named_params! {"$1": j.id, "$2": j.payload.as_ref()})?;
    if !j.coalesce_key.is_empty() {
        let behind: Vec<(String, String, String)> = {
            let mut supersede = tx.prepare_cached(sql::SUPERSEDE)?;
            let rows = supersede.query_map(
                named_params! {"$1": j.coalesce_key, "$2": j.id, "$3": now},
                |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
            )?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        for (pr_key, fleet_key, id) in behind {
            delete_payload(tx, &id)?;
            promote(tx, &pr_key, &fleet_key)?;
        }
    }
    let mut head = tx.prepare_cached(&sql::MARK_HEAD)?;
    head.execute(named_params! {"$1": j.id})?;
    Ok(true)
}

fn delete_payload(conn: &Connection, id: &str) -> rusqlite::Result<()> {
    let mut delete = conn.prepare_cached(sql::DELETE_PAYLOAD)?;
    delete.execute(named_params! {"$1": id})?;
    Ok(())
}

/// Makes the next job of each key a claim candidate when it now heads both of its keys.
fn promote(conn: &Connection, pr_key: &str, fleet_key: &str) -> rusqlite::Result<()> {
    if pr_key.is_empty() && fleet_key.is_empty() {
        return Ok(());
    }
    let mut promote = conn.prepare_cached(&sql::PROMOTE)?;
    promote.execute(named_params! {"$1": pr_key, "$2": fleet_key})?;
    Ok(())
}

/// Records the deliveries and queues their jobs in one `synchronous=FULL` transaction; returns
/// the ids answered as new (new deliveries whose job did not exist yet, and new deliveries that
/// need no job).
pub(crate) fn enqueue_deliveries(
    conn: &mut Connection,
    jobs: &[NewJob],
    now: i64,
) -> rusqlite::Result<Vec<String>> {
    let tx = conn.transaction()?;
    let mut queued = Vec::with_capacity(jobs.len());
    for j in jobs {
        let new = {
            let mut delivery = tx.prepare_cached(sql::INSERT_DELIVERY)?;
            delivery.execute(named_params! {"$1": j.id, "$2": j.event, "$3": now})? == 1
        };
        // A job row outliving its pruned delivery row means the delivery already ran.
        if new && (j.record_only || queue_job(&tx, j, now)?) {
            queued.push(j.id.clone());
        }
    }
    tx.commit()?;
    Ok(queued)
}

/// Queues a job no delivery brought (a follow-up), durably.
pub(crate) fn enqueue(conn: &mut Connection, job: &NewJob, now: i64) -> rusqlite::Result<bool> {
    let tx = conn.transaction()?;
    let new = queue_job(&tx, job, now)?;
    tx.commit()?;
    Ok(new)
}

/// Claims the next runnable job (one statement: SQLite takes its write lock before reading).
pub(crate) fn claim(
    conn: &mut Connection,
    now: i64,
    token: &str,
    worker: &str,
    lease_until: i64,
) -> rusqlite::Result<Option<ClaimedJob>> {
    static CLAIM: LazyLock<String> = LazyLock::new(|| sql::claim_sql(""));
    let mut claim = conn.prepare_cached(&CLAIM)?;
    claim
        .query_row(
            named_params! {"$1": now, "$2": token, "$3": worker, "$4": lease_until},
            |row| {
                Ok(ClaimedJob {
                    id: row.get("id")?,
                    kind: row.get("kind")?,
                    event: row.get("event")?,
                    payload: row
                        .get::<_, Option<Vec<u8>>>("payload")?
                        .map(bytes::Bytes::from),
                    pr_key: row.get("pr_key")?,
                    fleet_key: row.get("fleet_key")?,
                    attempt: u32::try_from(row.get::<_, i64>("attempts")?.max(0))
                        .unwrap_or(u32::MAX),
                    lease_token: row.get("lease_token")?,
                    created_at: row.get("created_at")?,
                })
            },
        )
        .optional()
}

/// Extends the lease; whether this lease still held the job.
pub(crate) fn renew(
    conn: &mut Connection,
    id: &str,
    token: &str,
    until: i64,
) -> rusqlite::Result<bool> {
    let mut renew = conn.prepare_cached(sql::RENEW)?;
    Ok(renew.execute(named_params! {"$1": until, "$2": id, "$3": token})? == 1)
}

/// Records how the job ended; whether this lease still held the job. A job that left the
/// queue hands the head of its keys to the next job of each.
pub(crate) fn finish(
    conn: &mut Connection,
    job: &ClaimedJob,
    outcome: &JobOutcome,
    now: i64,
) -> rusqlite::Result<bool> {
    let (statement, at, message) = sql::finish_sql(outcome, now);
    let tx = conn.transaction()?;
    let changed = {
        let mut finish = tx.prepare_cached(statement)?;
        let (id, token) = (&job.id, &job.lease_token);
        finish.execute(named_params! {"$1": at, "$2": id, "$3": token, "$4": message})?
    } == 1;
    if changed && matches!(outcome, JobOutcome::Done) {
        delete_payload(&tx, &job.id)?;
    }
    if changed && matches!(outcome, JobOutcome::Done | JobOutcome::Failed { .. }) {
        promote(&tx, &job.pr_key, &job.fleet_key)?;
    }
    tx.commit()?;
    Ok(changed)
}

// Merge-to-deploy's writes commit on the `synchronous=FULL` connection: an approval or an
// audit record must survive a power cut, and so must a lease, or its token could be handed out
// twice.

pub(crate) fn record_reviewed_plan(
    conn: &mut Connection,
    p: &ReviewedPlan,
) -> rusqlite::Result<()> {
    let mut upsert = conn.prepare_cached(sql::UPSERT_REVIEWED_PLAN)?;
    upsert.execute(named_params! {
        "$1": p.pr_key, "$2": p.head_sha, "$3": p.fleet_path, "$4": p.digest, "$5": p.recorded_at,
        "$6": p.summary,
    })?;
    Ok(())
}

pub(crate) fn record_pr_head(
    conn: &mut Connection,
    pr_key: &str,
    head_sha: &str,
    seen_at: i64,
) -> rusqlite::Result<()> {
    let mut insert = conn.prepare_cached(sql::INSERT_PR_HEAD)?;
    insert.execute(named_params! {"$1": pr_key, "$2": head_sha, "$3": seen_at})?;
    Ok(())
}

pub(crate) fn record_apply_run(conn: &mut Connection, r: &ApplyRun) -> rusqlite::Result<()> {
    let mut insert = conn.prepare_cached(sql::INSERT_APPLY_RUN)?;
    insert.execute(named_params! {
        "$1": r.job_id, "$2": r.fleet_path, "$3": r.digest,
        "$4": i64::from(r.destructive_approved), "$5": r.started_at,
    })?;
    Ok(())
}

pub(crate) fn record_approval(conn: &mut Connection, a: &Approval) -> rusqlite::Result<()> {
    let mut upsert = conn.prepare_cached(sql::UPSERT_APPROVAL)?;
    upsert.execute(named_params! {
        "$1": a.pr_key, "$2": a.fleet_path, "$3": a.digest, "$4": a.approver, "$5": a.approved_at,
    })?;
    Ok(())
}

/// Appends `e` under `id`; `repo_key` and `pr` are the caller's conversions of `e`'s fields.
pub(crate) fn append_audit(
    conn: &mut Connection,
    e: &AuditEntry,
    id: &str,
    repo_key: &str,
    pr: i64,
) -> rusqlite::Result<()> {
    let mut insert = conn.prepare_cached(sql::INSERT_AUDIT)?;
    insert.execute(named_params! {
        "$1": id, "$2": e.at, "$3": e.actor, "$4": e.action, "$5": e.repo, "$6": repo_key,
        "$7": pr, "$8": e.sha, "$9": e.fleet, "$10": e.outcome, "$11": e.digest, "$12": e.detail,
    })?;
    Ok(())
}

fn lease_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Lease> {
    Ok(Lease {
        fleet_key: row.get("fleet_key")?,
        owner: row.get("owner")?,
        holder: row.get("holder")?,
        token: row.get("token")?,
        expires_at: row.get("expires_at")?,
    })
}

/// Takes the lease, or reads who holds it, in one transaction: the holder read is the one
/// that refused the take.
pub(crate) fn take_lease(
    conn: &mut Connection,
    fleet: &str,
    owner: &str,
    holder: &str,
    now: i64,
    until: i64,
) -> rusqlite::Result<LeaseTake> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let taken = {
        let mut take = tx.prepare_cached(sql::TAKE_LEASE)?;
        take.query_row(
            named_params! {"$1": fleet, "$2": owner, "$3": holder, "$4": now, "$5": until},
            lease_row,
        )
        .optional()?
    };
    let answer = match taken {
        Some(lease) => LeaseTake::Acquired(lease),
        None => {
            let mut read = tx.prepare_cached(sql::SELECT_LEASE_ROW)?;
            LeaseTake::Held(read.query_row(named_params! {"$1": fleet}, lease_row)?)
        }
    };
    tx.commit()?;
    Ok(answer)
}

/// Extends the lease; whether `token` was current.
pub(crate) fn renew_lease(
    conn: &mut Connection,
    fleet: &str,
    token: i64,
    until: i64,
) -> rusqlite::Result<bool> {
    let mut renew = conn.prepare_cached(sql::RENEW_LEASE)?;
    Ok(renew.execute(named_params! {"$1": until, "$2": fleet, "$3": token})? == 1)
}

/// Frees the lease; whether `token` was current.
pub(crate) fn release_lease(
    conn: &mut Connection,
    fleet: &str,
    token: i64,
) -> rusqlite::Result<bool> {
    let mut free = conn.prepare_cached(sql::FREE_LEASE)?;
    Ok(free.execute(named_params! {"$1": fleet, "$2": token})? == 1)
}

/// Frees whatever holds the lease and returns it; read and freed in one transaction, because
/// the freeing statement's `RETURNING` would show the freed row, not its holder.
pub(crate) fn break_lease(conn: &mut Connection, fleet: &str) -> rusqlite::Result<Option<Lease>> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let held = {
        let mut read = tx.prepare_cached(sql::SELECT_LEASE_ROW)?;
        read.query_row(named_params! {"$1": fleet}, lease_row)
            .optional()?
            .filter(|l| !l.owner.is_empty())
    };
    if let Some(lease) = &held {
        let mut free = tx.prepare_cached(sql::FREE_LEASE)?;
        free.execute(named_params! {"$1": fleet, "$2": lease.token})?;
    }
    tx.commit()?;
    Ok(held)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panicking_write_fails_alone_and_close_waits_for_the_thread() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.sqlite");
        Connection::open(&path).unwrap();
        let writer = Writer::start(&path).unwrap();
        let failed = writer
            .run((), |_| -> rusqlite::Result<()> {
                panic!("a bug in one write")
            })
            .await;
        assert!(failed.is_err());
        let answer = writer
            .run((), |c| {
                c.full()?
                    .query_row("SELECT 40 + 2", [], |r| r.get::<_, i64>(0))
            })
            .await;
        assert_eq!(answer.unwrap(), 42);
        writer.close().await;
        let closed = writer.run((), |_| Ok(())).await;
        assert!(matches!(closed, Err(WriterError::Closed)), "{closed:?}");
        assert_eq!(closed.unwrap_err().to_string(), "the store is closed");
    }

    #[tokio::test]
    async fn the_gate_is_released_by_the_thread_after_the_write() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.sqlite");
        Connection::open(&path).unwrap();
        let writer = Writer::start(&path).unwrap();
        let gate = Arc::new(tokio::sync::Mutex::new(()));
        let held = gate.clone().lock_owned().await;
        let (started, wait) = std::sync::mpsc::channel::<()>();
        let (release, go) = std::sync::mpsc::channel::<()>();
        let w = writer.clone();
        // The caller gives up while the write is still running on the thread.
        let call = tokio::spawn(async move {
            w.run(held, move |_| {
                started.send(()).unwrap();
                go.recv().unwrap();
                Ok(())
            })
            .await
        });
        tokio::task::spawn_blocking(move || wait.recv().unwrap())
            .await
            .unwrap();
        call.abort();
        assert!(gate.try_lock().is_err(), "the write still holds the gate");
        release.send(()).unwrap();
        let _relocked = tokio::time::timeout(Duration::from_secs(5), gate.lock())
            .await
            .expect("released when the write finished");
    }
}
