//! The PostgreSQL store: several replicas share one database. Same schema and statements as
//! SQLite; what PostgreSQL adds is row locking and advisory locks:
//!
//! - claims pick with `FOR UPDATE SKIP LOCKED`, so replicas claiming at once never wait on,
//!   nor take, the same row: each job goes to exactly one worker;
//! - per-fleet exclusivity is a session advisory lock (`pg_try_advisory_lock`), which also
//!   excludes a CLI `deploy` using the same database;
//! - migrations run under an advisory lock, so replicas starting together migrate once;
//! - an apply lease is taken by one conditional upsert, which PostgreSQL evaluates under the
//!   row's lock, so replicas racing for one fleet never both get it.

use std::collections::HashSet;
use std::str::FromStr;
use std::time::Duration;

use futures_util::TryStreamExt;
use sqlx::Row;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};

use super::StoreError;
use super::lock::{FleetLock, advisory_key};
use super::migrate::{MIGRATION_LOCK_NAME, MIGRATIONS, statements};
use super::queue::{ClaimedJob, Enqueued, JobOutcome, NewJob, decide, first_occurrences};
use super::sql;
use super::url::redact_url;

mod deploy;

/// Connections per replica: a few workers, intake, and the fleet locks held during applies.
const DEFAULT_MAX_CONNECTIONS: u32 = 10;

#[derive(Debug, Clone)]
pub struct PostgresStore {
    pub(super) pool: PgPool,
    /// The URL without its password, for messages.
    pub(super) location: String,
}

impl PostgresStore {
    /// Connects to `url` (`postgres://…`) and migrates.
    pub async fn connect(url: &str) -> Result<PostgresStore, StoreError> {
        Self::connect_with(url, DEFAULT_MAX_CONNECTIONS).await
    }

    /// [`PostgresStore::connect`] with a pool size.
    pub async fn connect_with(
        url: &str,
        max_connections: u32,
    ) -> Result<PostgresStore, StoreError> {
        let location = redact_url(url);
        let unreachable = |e: sqlx::Error| StoreError::Unreadable {
            location: location.clone(),
            reason: e.to_string(),
        };
        let options = PgConnectOptions::from_str(url)
            .map_err(|e| StoreError::Config(format!("{location}: {e}")))?
            .application_name("fleetbot");
        let pool = PgPoolOptions::new()
            .max_connections(max_connections.max(2))
            .acquire_timeout(Duration::from_secs(10))
            .connect_with(options)
            .await
            .map_err(unreachable)?;
        let store = PostgresStore { pool, location };
        store.migrate().await?;
        Ok(store)
    }

    fn unreadable(&self, e: impl std::fmt::Display) -> StoreError {
        StoreError::Unreadable {
            location: self.location.clone(),
            reason: e.to_string(),
        }
    }

    fn write_error(&self, e: impl std::fmt::Display) -> StoreError {
        StoreError::Write {
            location: self.location.clone(),
            reason: e.to_string(),
        }
    }

    fn queue_error(&self, e: impl std::fmt::Display) -> StoreError {
        StoreError::Queue {
            location: self.location.clone(),
            reason: e.to_string(),
        }
    }

    /// The migration versions applied, in order.
    pub async fn applied_migrations(&self) -> Result<Vec<i64>, StoreError> {
        sqlx::query_scalar("SELECT version FROM schema_migrations ORDER BY version")
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.unreadable(e))
    }

    /// Closes every connection (releasing any fleet lock still held).
    pub async fn close(&self) {
        self.pool.close().await;
    }

    async fn migrate(&self) -> Result<(), StoreError> {
        // One session holds the migration lock for the whole run.
        let mut conn = self.pool.acquire().await.map_err(|e| self.unreadable(e))?;
        let key = advisory_key("migrate", MIGRATION_LOCK_NAME);
        sqlx::query("SELECT pg_advisory_lock($1)")
            .bind(key)
            .execute(&mut *conn)
            .await
            .map_err(|e| self.unreadable(e))?;
        let result = async {
            sqlx::query(
                "CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY)",
            )
            .execute(&mut *conn)
            .await
            .map_err(|e| self.write_error(e))?;
            for (version, sql) in MIGRATIONS {
                let applied: Option<i64> =
                    sqlx::query_scalar("SELECT version FROM schema_migrations WHERE version = $1")
                        .bind(version)
                        .fetch_optional(&mut *conn)
                        .await
                        .map_err(|e| self.unreadable(e))?;
                if applied.is_some() {
                    continue;
                }
                let mut tx = sqlx::Connection::begin(&mut *conn)
                    .await
                    .map_err(|e| self.write_error(e))?;
                for statement in statements(sql) {
                    // Embedded migration text, never user input.
                    sqlx::query(sqlx::AssertSqlSafe(statement))
                        .execute(&mut *tx)
                        .await
                        .map_err(|e| self.write_error(format!("migration {version}: {e}")))?;
                }
                sqlx::query("INSERT INTO schema_migrations (version) VALUES ($1)")
                    .bind(version)
                    .execute(&mut *tx)
                    .await
                    .map_err(|e| self.write_error(e))?;
                tx.commit().await.map_err(|e| self.write_error(e))?;
            }
            Ok(())
        }
        .await;
        let unlocked = sqlx::query("SELECT pg_advisory_unlock($1)")
            .bind(key)
            .execute(&mut *conn)
            .await;
        if unlocked.is_err() {
            // Never hand a session that may still hold the lock back to the pool.
            conn.close_on_drop();
        }
        result
    }

    async fn write(
        &self,
        query: sqlx::query::Query<'_, sqlx::Postgres, sqlx::postgres::PgArguments>,
    ) -> Result<u64, StoreError> {
        query
            .execute(&self.pool)
            .await
            .map(|r| r.rows_affected())
            .map_err(|e| self.write_error(e))
    }
}

crate::store::backends::inventory_impl!(PostgresStore, |s: &PostgresStore| s.location.clone());

/// Serializes the upkeep of the queue's heads (enqueue, and finishes that end a job) across
/// replicas, so two concurrent changes cannot both miss the job that should become a head.
/// Claims never take it.
async fn lock_heads(tx: &mut sqlx::Transaction<'_, sqlx::Postgres>) -> Result<(), sqlx::Error> {
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(advisory_key("queue", "heads"))
        .execute(&mut **tx)
        .await
        .map(|_| ())
}

/// The payloads of jobs just inserted, in one statement.
async fn insert_payloads(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    jobs: &[&NewJob],
) -> Result<(), sqlx::Error> {
    if jobs.is_empty() {
        return Ok(());
    }
    // Generated placeholders only; every value is bound.
    let mut insert = sqlx::query(sqlx::AssertSqlSafe(sql::insert_payloads_sql(jobs.len())));
    for job in jobs {
        insert = insert.bind(&job.id).bind(job.payload.as_ref());
    }
    insert.execute(&mut **tx).await.map(|_| ())
}

/// After a job row and its payload are inserted: the older work it supersedes, then whether
/// it heads its keys.
async fn after_insert(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    job: &NewJob,
    now: i64,
) -> Result<(), sqlx::Error> {
    if !job.coalesce_key.is_empty() {
        let behind = sqlx::query(sql::SUPERSEDE)
            .bind(&job.coalesce_key)
            .bind(&job.id)
            .bind(now)
            .fetch_all(&mut **tx)
            .await?;
        for row in behind {
            let (pr_key, fleet_key): (String, String) = (row.try_get(0)?, row.try_get(1)?);
            delete_payload(tx, &row.try_get::<String, _>(2)?).await?;
            promote(tx, &pr_key, &fleet_key).await?;
        }
    }
    sqlx::query(sqlx::AssertSqlSafe(sql::MARK_HEAD.as_str()))
        .bind(&job.id)
        .execute(&mut **tx)
        .await
        .map(|_| ())
}

async fn delete_payload(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    id: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query(sql::DELETE_PAYLOAD)
        .bind(id)
        .execute(&mut **tx)
        .await
        .map(|_| ())
}

/// The next job of each key becomes a candidate when it now heads both of its keys.
async fn promote(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    pr_key: &str,
    fleet_key: &str,
) -> Result<(), sqlx::Error> {
    if pr_key.is_empty() && fleet_key.is_empty() {
        return Ok(());
    }
    sqlx::query(sqlx::AssertSqlSafe(sql::PROMOTE.as_str()))
        .bind(pr_key)
        .bind(fleet_key)
        .execute(&mut **tx)
        .await
        .map(|_| ())
}

crate::store::backends::queue_impl!(PostgresStore, {
    async fn enqueue_deliveries(
        &self,
        jobs: &[NewJob],
        now: i64,
    ) -> Result<Vec<Enqueued>, StoreError> {
        let (firsts, answers) = first_occurrences(jobs);
        if firsts.is_empty() {
            return Ok(decide(jobs, answers, &HashSet::new()));
        }
        let mut tx = self.pool.begin().await.map_err(|e| self.queue_error(e))?;
        lock_heads(&mut tx).await.map_err(|e| self.queue_error(e))?;
        // Generated placeholders only; every value is bound.
        let mut deliveries = sqlx::query_scalar::<_, String>(sqlx::AssertSqlSafe(
            sql::insert_deliveries_sql(firsts.len()),
        ));
        for job in &firsts {
            deliveries = deliveries.bind(&job.id).bind(&job.event).bind(now);
        }
        let new: HashSet<String> = deliveries
            .fetch_all(&mut *tx)
            .await
            .map_err(|e| self.queue_error(e))?
            .into_iter()
            .collect();
        let fresh: Vec<&NewJob> = firsts.into_iter().filter(|j| new.contains(&j.id)).collect();
        let mut queued: HashSet<String> = fresh
            .iter()
            .filter(|j| j.record_only)
            .map(|j| j.id.clone())
            .collect();
        let work: Vec<&NewJob> = fresh.into_iter().filter(|j| !j.record_only).collect();
        if !work.is_empty() {
            let mut insert = sqlx::query_scalar::<_, String>(sqlx::AssertSqlSafe(
                sql::insert_jobs_sql(work.len()),
            ));
            for job in &work {
                insert = insert
                    .bind(&job.id)
                    .bind(&job.kind)
                    .bind(&job.event)
                    .bind(&job.pr_key)
                    .bind(&job.fleet_key)
                    .bind(now)
                    .bind(&job.coalesce_key);
            }
            // A job row outliving its pruned delivery row means the delivery already ran.
            let inserted: HashSet<String> = insert
                .fetch_all(&mut *tx)
                .await
                .map_err(|e| self.queue_error(e))?
                .into_iter()
                .collect();
            let new: Vec<&NewJob> = work
                .iter()
                .copied()
                .filter(|j| inserted.contains(&j.id))
                .collect();
            insert_payloads(&mut tx, &new)
                .await
                .map_err(|e| self.queue_error(e))?;
            for job in new {
                after_insert(&mut tx, job, now)
                    .await
                    .map_err(|e| self.queue_error(e))?;
            }
            queued.extend(inserted);
        }
        tx.commit().await.map_err(|e| self.queue_error(e))?;
        Ok(decide(jobs, answers, &queued))
    }

    async fn enqueue(&self, job: &NewJob, now: i64) -> Result<Enqueued, StoreError> {
        let mut tx = self.pool.begin().await.map_err(|e| self.queue_error(e))?;
        lock_heads(&mut tx).await.map_err(|e| self.queue_error(e))?;
        let queued = sqlx::query(sql::INSERT_JOB)
            .bind(&job.id)
            .bind(&job.kind)
            .bind(&job.event)
            .bind(&job.pr_key)
            .bind(&job.fleet_key)
            .bind(now)
            .bind(&job.coalesce_key)
            .execute(&mut *tx)
            .await
            .map_err(|e| self.queue_error(e))?
            .rows_affected();
        if queued == 1 {
            insert_payloads(&mut tx, &[job])
                .await
                .map_err(|e| self.queue_error(e))?;
            after_insert(&mut tx, job, now)
                .await
                .map_err(|e| self.queue_error(e))?;
        }
        tx.commit().await.map_err(|e| self.queue_error(e))?;
        Ok(if queued == 1 {
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
        // The picked row is locked by this statement; a replica claiming at the same moment
        // skips it and takes the next runnable job instead of waiting or taking the same one.
        let claim = sql::claim_sql(" FOR UPDATE OF j SKIP LOCKED");
        let token = uuid::Uuid::new_v4().to_string();
        let row = sqlx::query(sqlx::AssertSqlSafe(claim))
            .bind(now)
            .bind(&token)
            .bind(worker)
            .bind(now.saturating_add(lease_ms))
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| self.queue_error(e))?;
        row.as_ref()
            .map(sql::claimed_from)
            .transpose()
            .map_err(|e| self.queue_error(e))
    }

    async fn renew(&self, job: &ClaimedJob, until: i64) -> Result<bool, StoreError> {
        let changed = self
            .write(
                sqlx::query(sql::RENEW)
                    .bind(until)
                    .bind(&job.id)
                    .bind(&job.lease_token),
            )
            .await
            .map_err(StoreError::into_queue)?;
        Ok(changed == 1)
    }

    async fn finish(
        &self,
        job: &ClaimedJob,
        outcome: &JobOutcome,
        now: i64,
    ) -> Result<bool, StoreError> {
        let (statement, at, message) = sql::finish_sql(outcome, now);
        let leaves = matches!(outcome, JobOutcome::Done | JobOutcome::Failed { .. });
        let mut tx = self.pool.begin().await.map_err(|e| self.queue_error(e))?;
        if leaves {
            lock_heads(&mut tx).await.map_err(|e| self.queue_error(e))?;
        }
        let query = sqlx::query(statement)
            .bind(at)
            .bind(&job.id)
            .bind(&job.lease_token)
            .bind(message);
        let changed = query
            .execute(&mut *tx)
            .await
            .map_err(|e| self.queue_error(e))?
            .rows_affected()
            == 1;
        if changed && matches!(outcome, JobOutcome::Done) {
            delete_payload(&mut tx, &job.id)
                .await
                .map_err(|e| self.queue_error(e))?;
        }
        if changed && leaves {
            promote(&mut tx, &job.pr_key, &job.fleet_key)
                .await
                .map_err(|e| self.queue_error(e))?;
        }
        tx.commit().await.map_err(|e| self.queue_error(e))?;
        Ok(changed)
    }

    async fn try_lock_fleet(&self, fleet: &str) -> Result<Option<FleetLock>, StoreError> {
        // A session lock lives as long as its connection, so the connection is taken out of
        // the pool and kept by the lock until release.
        let mut conn = self.pool.acquire().await.map_err(|e| self.queue_error(e))?;
        let key = advisory_key("fleet", fleet);
        let got: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
            .bind(key)
            .fetch_one(&mut *conn)
            .await
            .map_err(|e| self.queue_error(e))?;
        Ok(got.then(|| FleetLock::postgres(fleet, conn, key)))
    }
});
