//! The SQLite queue's hot writes (intake, claim, renewal, outcome) on one thread that owns its
//! connections, so a whole transaction costs one hand-off between threads.
//!
//! Through sqlx every statement, every row and the commit is a round trip to the connection's
//! own thread; a batch of deliveries took five or more, and at hundreds of deliveries a second
//! two thirds of the server's CPU went to switching threads. Here the async side sends one
//! closure and awaits one answer. The thread holds two connections to the same file: one
//! committing with `synchronous=FULL` (what must survive a power cut: accepted deliveries) and
//! one with `synchronous=NORMAL` (a job's state changes; see [`super::sqlite`]). The thread
//! runs one closure at a time, so the two never contend for SQLite's write lock.

use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, named_params};
use tokio::sync::oneshot;

use super::queue::{ClaimedJob, JobOutcome, NewJob};
use super::sql;

/// The writer thread's connections.
pub(crate) struct Conns {
    /// `synchronous=FULL`.
    pub full: Connection,
    /// `synchronous=NORMAL`.
    pub relaxed: Connection,
}

type Task = Box<dyn FnOnce(&mut Conns) + Send>;

/// A handle on the writer thread; the thread ends when every handle is dropped or on
/// [`Writer::close`].
#[derive(Debug, Clone)]
pub(crate) struct Writer {
    tasks: mpsc::Sender<Option<Task>>,
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

impl Writer {
    /// Opens the connections (the file exists and is migrated) and starts the thread.
    pub fn start(path: &Path) -> Result<Writer, String> {
        let conns = Conns {
            full: open(path, "FULL").map_err(|e| e.to_string())?,
            relaxed: open(path, "NORMAL").map_err(|e| e.to_string())?,
        };
        let (tasks, inbox) = mpsc::channel::<Option<Task>>();
        std::thread::Builder::new()
            .name("fleetbot-sqlite-writer".into())
            .spawn(move || {
                let mut conns = conns;
                while let Ok(Some(task)) = inbox.recv() {
                    task(&mut conns);
                }
            })
            .map_err(|e| e.to_string())?;
        Ok(Writer { tasks })
    }

    /// Runs `f` on the writer thread and returns what it returned.
    pub async fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Conns) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, String> {
        let (answer, answered) = oneshot::channel();
        let task: Task = Box::new(move |conns| {
            let _ = answer.send(f(conns).map_err(|e| e.to_string()));
        });
        self.tasks
            .send(Some(task))
            .map_err(|_| "the store is closed".to_string())?;
        answered
            .await
            .map_err(|_| "the store's writer stopped".to_string())?
    }

    /// Stops the thread once the tasks already sent have run; later calls fail.
    pub fn close(&self) {
        let _ = self.tasks.send(None);
    }
}

/// Records the deliveries and queues their jobs in one `synchronous=FULL` transaction; returns
/// the ids whose jobs were queued (new deliveries whose job did not exist yet).
pub(crate) fn enqueue_deliveries(
    conn: &mut Connection,
    jobs: &[NewJob],
    now: i64,
) -> rusqlite::Result<Vec<String>> {
    let tx = conn.transaction()?;
    let mut queued = Vec::with_capacity(jobs.len());
    {
        let mut delivery = tx.prepare_cached(sql::INSERT_DELIVERY)?;
        let mut job = tx.prepare_cached(sql::INSERT_JOB)?;
        for j in jobs {
            let new = delivery.execute(named_params! {"$1": j.id, "$2": j.event, "$3": now})? == 1;
            // A job row outliving its pruned delivery row means the delivery already ran.
            if new
                && job.execute(named_params! {
                    "$1": j.id, "$2": j.kind, "$3": j.event, "$4": j.payload.as_ref(),
                    "$5": j.pr_key, "$6": j.fleet_key, "$7": now,
                })? == 1
            {
                queued.push(j.id.clone());
            }
        }
    }
    tx.commit()?;
    Ok(queued)
}

/// Claims the next runnable job (one statement: SQLite takes its write lock before reading).
pub(crate) fn claim(
    conn: &mut Connection,
    now: i64,
    token: &str,
    worker: &str,
    lease_until: i64,
) -> rusqlite::Result<Option<ClaimedJob>> {
    let mut claim = conn.prepare_cached(&sql::claim_sql(""))?;
    claim
        .query_row(
            named_params! {"$1": now, "$2": token, "$3": worker, "$4": lease_until},
            |row| {
                Ok(ClaimedJob {
                    id: row.get("id")?,
                    kind: row.get("kind")?,
                    event: row.get("event")?,
                    payload: bytes::Bytes::from(row.get::<_, Vec<u8>>("payload")?),
                    pr_key: row.get("pr_key")?,
                    fleet_key: row.get("fleet_key")?,
                    attempt: u32::try_from(row.get::<_, i64>("attempts")?.max(0))
                        .unwrap_or(u32::MAX),
                    lease_token: row.get("lease_token")?,
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

/// Records how the job ended; whether this lease still held the job.
pub(crate) fn finish(
    conn: &mut Connection,
    id: &str,
    token: &str,
    outcome: &JobOutcome,
    now: i64,
) -> rusqlite::Result<bool> {
    let (statement, at, message) = sql::finish_sql(outcome, now);
    let mut finish = conn.prepare_cached(statement)?;
    let changed = if matches!(outcome, JobOutcome::Done) {
        finish.execute(named_params! {
            "$1": at, "$2": id, "$3": token, "$4": message, "$5": Vec::<u8>::new(),
        })?
    } else {
        finish.execute(named_params! {"$1": at, "$2": id, "$3": token, "$4": message})?
    };
    Ok(changed == 1)
}
