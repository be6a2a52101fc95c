//! The SQLite store: the embedded default for one replica. One file, WAL journal, every write
//! a transaction, and writes taken one at a time inside the process.
//!
//! SQLite allows one writer at a time. Left to SQLite, concurrent writers on several
//! connections wait in its busy handler, which sleeps in steps of up to 100 ms; queueing
//! writers on an in-process gate instead keeps webhook intake in the low milliseconds under
//! load. Reads do not take the gate (WAL lets them run beside the writer).
//!
//! The queue's hot writes (intake, claim, renewal, outcome) and merge-to-deploy's writes run
//! on one dedicated thread that owns its connections ([`super::sqlite_writer`]): a whole
//! transaction is one hand-off between threads instead of one per statement and row. They
//! take the gate too.
//!
//! Durability: whatever must survive a power loss (inventory writes, accepted deliveries,
//! merge-to-deploy's plans, approvals, audit and leases) commits with `synchronous=FULL`, a
//! sync to disk per commit. A job's claim, lease renewal and outcome commit with
//! `synchronous=NORMAL` (the writer's one connection switches level between transactions),
//! without their own sync: the write-ahead log is
//! sequential, so the next full commit makes them durable too, and losing the last few to a
//! power cut only means a job runs again after its lease (jobs run at least once anyway). That
//! keeps syncs to about one per batch of deliveries instead of three per job.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use futures_util::TryStreamExt;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{Row, Sqlite, Transaction};

use super::StoreError;
use super::deploy::{
    ApplyRun, Approval, AuditEntry, Lease, LeaseTake, ReviewedPlan, refuse_owner, repo_key,
};
use super::lock::FleetLock;
use super::migrate::{MIGRATIONS, statements};
use super::queue::{Claim, ClaimedJob, Enqueued, JobOutcome, NewJob, decide, first_occurrences};
use super::sql;
use super::sqlite_writer::{self, Writer};

#[derive(Debug, Clone)]
pub struct SqliteStore {
    pub(super) pool: SqlitePool,
    /// The queue's hot writes (see the module docs).
    writer: Writer,
    pub(super) path: PathBuf,
    /// Held for every write (see the module docs).
    write_gate: Arc<tokio::sync::Mutex<()>>,
}

fn unreadable(path: &Path, e: impl std::fmt::Display) -> StoreError {
    StoreError::Unreadable {
        location: path.display().to_string(),
        reason: e.to_string(),
    }
}

fn write_error(path: &Path, e: impl std::fmt::Display) -> StoreError {
    StoreError::Write {
        location: path.display().to_string(),
        reason: e.to_string(),
    }
}

fn queue_error(path: &Path, e: impl std::fmt::Display) -> StoreError {
    StoreError::Queue {
        location: path.display().to_string(),
        reason: e.to_string(),
    }
}

impl SqliteStore {
    /// Opens (creating if needed) and migrates the store at `path`.
    pub async fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        if let Some(dir) = path.parent() {
            super::private::dir(dir).map_err(|e| write_error(path, e))?;
        }
        // The store holds deliveries, reviewed plans and the inventory: its user's alone.
        // SQLite gives its journal files the database file's mode.
        if !path.exists() {
            super::private::create(path, false).map_err(|e| write_error(path, e))?;
        }
        let options = SqliteConnectOptions::from_str(&format!("sqlite://{}", path.display()))
            .map_err(|e| unreadable(path, e))?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .busy_timeout(Duration::from_secs(10))
            .foreign_keys(true)
            .synchronous(SqliteSynchronous::Full);
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(options.clone())
            .await
            .map_err(|e| unreadable(path, e))?;
        let writer = Writer::start(path).map_err(|e| unreadable(path, e))?;
        let store = SqliteStore {
            pool,
            writer,
            path: path.to_path_buf(),
            write_gate: Arc::new(tokio::sync::Mutex::new(())),
        };
        store.migrate().await?;
        Ok(store)
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The migration versions applied, in order.
    pub async fn applied_migrations(&self) -> Result<Vec<i64>, StoreError> {
        sqlx::query_scalar("SELECT version FROM schema_migrations ORDER BY version")
            .fetch_all(&self.pool)
            .await
            .map_err(|e| unreadable(&self.path, e))
    }

    /// Closes every connection (a clean shutdown; tests use it to simulate a restart).
    pub async fn close(&self) {
        self.writer.close().await;
        self.pool.close().await;
    }

    async fn migrate(&self) -> Result<(), StoreError> {
        let _gate = self.write_gate.lock().await;
        sqlx::query("CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY)")
            .execute(&self.pool)
            .await
            .map_err(|e| unreadable(&self.path, e))?;
        for (version, sql) in MIGRATIONS {
            let applied: Option<i64> =
                sqlx::query_scalar("SELECT version FROM schema_migrations WHERE version = $1")
                    .bind(version)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(|e| unreadable(&self.path, e))?;
            if applied.is_some() {
                continue;
            }
            let mut tx = self.begin().await?;
            for statement in statements(sql) {
                // Embedded migration text, never user input.
                sqlx::query(sqlx::AssertSqlSafe(statement))
                    .execute(&mut *tx)
                    .await
                    .map_err(|e| write_error(&self.path, e))?;
            }
            sqlx::query("INSERT INTO schema_migrations (version) VALUES ($1)")
                .bind(version)
                .execute(&mut *tx)
                .await
                .map_err(|e| write_error(&self.path, e))?;
            tx.commit().await.map_err(|e| write_error(&self.path, e))?;
        }
        Ok(())
    }

    async fn begin(&self) -> Result<Transaction<'_, Sqlite>, StoreError> {
        self.pool
            .begin()
            .await
            .map_err(|e| write_error(&self.path, e))
    }

    /// Runs `f` on the writer thread under the gate; a failure is a [`StoreError::Write`].
    async fn on_writer<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut sqlite_writer::Conns) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, StoreError> {
        let gate = self.write_gate.clone().lock_owned().await;
        self.writer
            .run(gate, f)
            .await
            .map_err(|e| write_error(&self.path, e))
    }

    /// Claims a job on the writer thread; `then` makes the answer from the claim on the same
    /// connection, in the same hand-off.
    async fn claim_then<T: Send + 'static>(
        &self,
        worker: &str,
        now: i64,
        lease_ms: i64,
        then: impl FnOnce(&rusqlite::Connection, Option<ClaimedJob>) -> rusqlite::Result<T>
        + Send
        + 'static,
    ) -> Result<T, StoreError> {
        let token = uuid::Uuid::new_v4().to_string();
        let worker = worker.to_string();
        let until = now.saturating_add(lease_ms);
        let gate = self.write_gate.clone().lock_owned().await;
        self.writer
            .run(gate, move |c| {
                let conn = c.relaxed()?;
                let job = sqlite_writer::claim(conn, now, &token, &worker, until)?;
                then(conn, job)
            })
            .await
            .map_err(|e| queue_error(&self.path, e))
    }

    /// Runs one write statement under the gate; returns the rows it changed.
    async fn write<'q>(
        &self,
        query: sqlx::query::Query<'q, Sqlite, sqlx::sqlite::SqliteArguments>,
    ) -> Result<u64, StoreError> {
        let _gate = self.write_gate.lock().await;
        query
            .execute(&self.pool)
            .await
            .map(|r| r.rows_affected())
            .map_err(|e| write_error(&self.path, e))
    }
}

crate::store::backends::inventory_impl!(SqliteStore, |s: &SqliteStore| s
    .path
    .display()
    .to_string());

impl SqliteStore {
    fn queue_error(&self, e: impl std::fmt::Display) -> StoreError {
        queue_error(&self.path, e)
    }

    fn unreadable(&self, e: impl std::fmt::Display) -> StoreError {
        unreadable(&self.path, e)
    }

    fn write_error(&self, e: impl std::fmt::Display) -> StoreError {
        write_error(&self.path, e)
    }
}

crate::store::backends::queue_impl!(SqliteStore, {
    async fn enqueue_deliveries(
        &self,
        jobs: &[NewJob],
        now: i64,
    ) -> Result<Vec<Enqueued>, StoreError> {
        let (firsts, answers) = first_occurrences(jobs);
        if firsts.is_empty() {
            return Ok(decide(jobs, answers, &HashSet::new()));
        }
        let firsts: Vec<NewJob> = firsts.into_iter().cloned().collect();
        let gate = self.write_gate.clone().lock_owned().await;
        let queued = self
            .writer
            .run(gate, move |c| {
                sqlite_writer::enqueue_deliveries(c.full()?, &firsts, now)
            })
            .await
            .map_err(|e| queue_error(&self.path, e))?;
        Ok(decide(jobs, answers, &queued.into_iter().collect()))
    }

    async fn enqueue(&self, job: &NewJob, now: i64) -> Result<Enqueued, StoreError> {
        let job = job.clone();
        let gate = self.write_gate.clone().lock_owned().await;
        let new = self
            .writer
            .run(gate, move |c| sqlite_writer::enqueue(c.full()?, &job, now))
            .await
            .map_err(|e| queue_error(&self.path, e))?;
        Ok(if new {
            Enqueued::New
        } else {
            Enqueued::Duplicate
        })
    }

    async fn claim(
        &self,
        worker: &str,
        now: i64,
        lease_ms: i64,
    ) -> Result<Option<ClaimedJob>, StoreError> {
        self.claim_then(worker, now, lease_ms, |_, job| Ok(job))
            .await
    }

    async fn claim_or_next_due(
        &self,
        worker: &str,
        now: i64,
        lease_ms: i64,
    ) -> Result<Claim, StoreError> {
        self.claim_then(worker, now, lease_ms, |conn, job| match job {
            Some(job) => Ok(Claim::Job(job)),
            None => Ok(Claim::Idle {
                next_due: conn.query_row(sql::NEXT_DUE, [], |row| row.get(0))?,
            }),
        })
        .await
    }

    async fn renew(&self, job: &ClaimedJob, until: i64) -> Result<bool, StoreError> {
        let (id, token) = (job.id.clone(), job.lease_token.clone());
        let gate = self.write_gate.clone().lock_owned().await;
        self.writer
            .run(gate, move |c| {
                sqlite_writer::renew(c.relaxed()?, &id, &token, until)
            })
            .await
            .map_err(|e| queue_error(&self.path, e))
    }

    async fn finish(
        &self,
        job: &ClaimedJob,
        outcome: &JobOutcome,
        now: i64,
    ) -> Result<bool, StoreError> {
        let (job, outcome) = (job.clone(), outcome.clone());
        let gate = self.write_gate.clone().lock_owned().await;
        self.writer
            .run(gate, move |c| {
                sqlite_writer::finish(c.relaxed()?, &job, &outcome, now)
            })
            .await
            .map_err(|e| queue_error(&self.path, e))
    }

    async fn try_lock_fleet(&self, fleet: &str) -> Result<Option<FleetLock>, StoreError> {
        // The canonical path, so two handles on one file share their locks.
        let key = std::fs::canonicalize(&self.path).unwrap_or_else(|_| self.path.clone());
        Ok(FleetLock::try_local(key, fleet))
    }
});

crate::store::backends::deploy_impl!(SqliteStore, {
    async fn record_reviewed_plan(&self, plan: &ReviewedPlan) -> Result<(), StoreError> {
        let plan = plan.clone();
        self.on_writer(move |c| sqlite_writer::record_reviewed_plan(c.full()?, &plan))
            .await
    }

    async fn record_pr_head(
        &self,
        pr_key: &str,
        head_sha: &str,
        seen_at: i64,
    ) -> Result<(), StoreError> {
        let (pr_key, head_sha) = (pr_key.to_string(), head_sha.to_string());
        self.on_writer(move |c| {
            sqlite_writer::record_pr_head(c.full()?, &pr_key, &head_sha, seen_at)
        })
        .await
    }

    async fn record_apply_run(&self, run: &ApplyRun) -> Result<(), StoreError> {
        let run = run.clone();
        self.on_writer(move |c| sqlite_writer::record_apply_run(c.full()?, &run))
            .await
    }

    async fn record_approval(&self, approval: &Approval) -> Result<(), StoreError> {
        let approval = approval.clone();
        self.on_writer(move |c| sqlite_writer::record_approval(c.full()?, &approval))
            .await
    }

    async fn append_audit(&self, entry: &AuditEntry) -> Result<(), StoreError> {
        let pr = i64::try_from(entry.pr).map_err(|e| write_error(&self.path, e))?;
        let (entry, key) = (entry.clone(), repo_key(&entry.repo));
        let id = uuid::Uuid::new_v4().to_string();
        self.on_writer(move |c| sqlite_writer::append_audit(c.full()?, &entry, &id, &key, pr))
            .await
    }

    async fn take_lease(
        &self,
        fleet_key: &str,
        owner: &str,
        holder: &str,
        now: i64,
        ttl_ms: i64,
    ) -> Result<LeaseTake, StoreError> {
        if let Some(why) = refuse_owner(owner) {
            return Err(write_error(&self.path, why));
        }
        let (fleet, owner, holder) = (fleet_key.to_string(), owner.to_string(), holder.to_string());
        let until = now.saturating_add(ttl_ms);
        self.on_writer(move |c| {
            sqlite_writer::take_lease(c.full()?, &fleet, &owner, &holder, now, until)
        })
        .await
    }

    async fn renew_lease(&self, lease: &Lease, until: i64) -> Result<bool, StoreError> {
        let (fleet, token) = (lease.fleet_key.clone(), lease.token);
        self.on_writer(move |c| sqlite_writer::renew_lease(c.full()?, &fleet, token, until))
            .await
    }

    async fn release_lease(&self, lease: &Lease) -> Result<bool, StoreError> {
        let (fleet, token) = (lease.fleet_key.clone(), lease.token);
        self.on_writer(move |c| sqlite_writer::release_lease(c.full()?, &fleet, token))
            .await
    }

    async fn lease(&self, fleet_key: &str, now: i64) -> Result<Option<Lease>, StoreError> {
        let row = sqlx::query(sql::SELECT_LIVE_LEASE)
            .bind(fleet_key)
            .bind(now)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| unreadable(&self.path, e))?;
        row.as_ref()
            .map(sql::lease_from)
            .transpose()
            .map_err(|e| unreadable(&self.path, e))
    }

    async fn break_lease(&self, fleet_key: &str) -> Result<Option<Lease>, StoreError> {
        let fleet = fleet_key.to_string();
        self.on_writer(move |c| sqlite_writer::break_lease(c.full()?, &fleet))
            .await
    }
});

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{DeployStore, InventoryStore, ProjectRecord, TargetRecord};

    fn target(cluster: &str) -> TargetRecord {
        TargetRecord {
            fleet: "f".into(),
            project_key: "a".into(),
            cluster_name: cluster.into(),
            backend: "mk8s".into(),
            status: "deployed".into(),
            node_group_ids: vec!["g1".into(), "g2".into()],
            filesystem_created: true,
            updated_at: 7,
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn upsert_read_remove_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("inv.sqlite"))
            .await
            .unwrap();
        store.upsert_target(&target("c1")).await.unwrap();
        store.upsert_target(&target("c2")).await.unwrap();
        let mut changed = target("c1");
        changed.status = "destroy-incomplete".into();
        store.upsert_target(&changed).await.unwrap();
        let all = store.targets("f").await.unwrap();
        assert_eq!(all, vec![changed, target("c2")]);
        assert!(store.targets("other").await.unwrap().is_empty());
        store.remove_target("f", "a", "c1").await.unwrap();
        assert_eq!(store.targets("f").await.unwrap().len(), 1);

        let project = ProjectRecord {
            fleet: "f".into(),
            project_key: "a".into(),
            project_id: "p".into(),
            project_created: true,
            ..Default::default()
        };
        store.upsert_project(&project).await.unwrap();
        assert_eq!(store.projects("f").await.unwrap(), vec![project]);
        store.remove_project("f", "a").await.unwrap();
        assert!(store.projects("f").await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_damaged_audit_row_fails_closed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.sqlite");
        let store = SqliteStore::open(&path).await.unwrap();
        let entry = AuditEntry {
            at: 1,
            actor: "a".into(),
            action: "apply".into(),
            repo: "o/r".into(),
            pr: 3,
            sha: "s".into(),
            fleet: "f".into(),
            outcome: "ok".into(),
            digest: "d".into(),
            detail: String::new(),
        };
        store.append_audit(&entry).await.unwrap();
        assert_eq!(store.audit("O/R", 5).await.unwrap(), vec![entry]);
        // No API writes a negative pull request number; a row holding one was damaged, and
        // reading it as some other number would put a wrong record in the audit.
        rusqlite::Connection::open(&path)
            .unwrap()
            .execute("UPDATE deploy_audit SET pr = -1", [])
            .unwrap();
        let err = store.audit("o/r", 5).await.unwrap_err();
        assert!(matches!(err, StoreError::Unreadable { .. }), "{err:?}");
    }

    #[tokio::test]
    async fn reopening_keeps_data_and_a_corrupt_file_fails_closed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("inv.sqlite");
        {
            let store = SqliteStore::open(&path).await.unwrap();
            store.upsert_target(&target("c1")).await.unwrap();
        }
        let store = SqliteStore::open(&path).await.unwrap();
        assert_eq!(store.targets("f").await.unwrap().len(), 1);
        drop(store);

        let corrupt = dir.path().join("corrupt.sqlite");
        std::fs::write(
            &corrupt,
            b"this is not a database, and never was one at all....",
        )
        .unwrap();
        let err = SqliteStore::open(&corrupt).await.err().unwrap();
        assert!(
            err.to_string()
                .contains("unreadable; refusing lifecycle action"),
            "{err}"
        );
    }

    /// The partial indexes are only worth their writes if the statements they were made for
    /// can use them: their `WHERE` must be implied by each statement's own.
    #[tokio::test]
    async fn the_queue_statements_use_their_partial_indexes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plans.sqlite");
        SqliteStore::open(&path).await.unwrap().close().await;
        let conn = rusqlite::Connection::open(&path).unwrap();
        let plan = |statement: &str| -> String {
            let mut explain = conn
                .prepare(&format!("EXPLAIN QUERY PLAN {statement}"))
                .unwrap();
            let unbound = std::iter::repeat_n(rusqlite::types::Null, explain.parameter_count());
            let rows = explain
                .query_map(rusqlite::params_from_iter(unbound), |row| {
                    row.get::<_, String>(3)
                })
                .unwrap();
            rows.map(Result::unwrap).collect::<Vec<_>>().join("; ")
        };
        for (statement, index) in [
            (sql::PRUNE_JOBS, "jobs_finished_at"),
            (sql::PRUNE_PAYLOADS, "jobs_finished_at"),
            (sql::SUPERSEDE, "jobs_coalesce"),
        ] {
            let plan = plan(statement);
            assert!(plan.contains(index), "{statement}\n{plan}");
        }
    }
}
