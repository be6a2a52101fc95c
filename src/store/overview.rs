//! Read-only listings across fleets, repositories and jobs, for the dashboard
//! (`server::dashboard`): every target, the newest jobs, the live leases, and the newest
//! reviewed plans, apply runs and audit records of every repository.
//!
//! The per-fleet and per-pull-request reads of the other traits answer a worker's questions;
//! an operator's page asks "what is there at all", which those cannot answer without knowing
//! every key first. Both backends run the same statements below (the conformance suite checks
//! them on SQLite and on a real PostgreSQL). Every listing is capped by its caller's `limit`,
//! so a page load costs the same however long the store has run.

use std::future::Future;

use sqlx::Row;

use super::deploy::{ApplyRun, AuditEntry, Lease, ReviewedPlan};
use super::inventory::TargetRecord;
use super::queue::JobRecord;
use super::{PostgresStore, SqliteStore, StoreError, sql};

/// A job with its times, as the dashboard lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobSummary {
    pub job: JobRecord,
    /// Unix ms it was queued.
    pub created_at: i64,
    /// Unix ms it ended (`done` or `failed`); 0 while it has not.
    pub finished_at: i64,
}

/// The listings; each is ordered so that the first rows are the ones a person looks for.
pub trait OverviewStore: Send + Sync {
    /// Every target of every fleet, by fleet, project and cluster, at most `limit`.
    fn all_targets(
        &self,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<TargetRecord>, StoreError>> + Send;

    /// The newest jobs first (arrival order), at most `limit`, whatever their state.
    fn recent_jobs(
        &self,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<JobSummary>, StoreError>> + Send;

    /// The leases live at `now` (held and not expired), by fleet key.
    fn live_leases(&self, now: i64) -> impl Future<Output = Result<Vec<Lease>, StoreError>> + Send;

    /// The newest reviewed plans of every pull request first, at most `limit`.
    fn recent_reviewed_plans(
        &self,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<ReviewedPlan>, StoreError>> + Send;

    /// The newest apply runs first, at most `limit`.
    fn recent_apply_runs(
        &self,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<ApplyRun>, StoreError>> + Send;

    /// The newest audit records of every repository first, at most `limit` (records of one
    /// millisecond in the order they were appended, as [`super::DeployStore::audit`]).
    fn recent_audit(
        &self,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<AuditEntry>, StoreError>> + Send;
}

/// `$1` limit.
const ALL_TARGETS: &str = "SELECT fleet, project_key, cluster_name, backend, status, tenant_id, region, profile, \
     project_id, cluster_id, node_group_ids, filesystem_id, filesystem_created, gpu_cluster_id, subnet_id, \
     applied_digest, error, updated_at, addons FROM inventory_targets ORDER BY fleet, project_key, cluster_name LIMIT $1";

/// `$1` limit. `seq` is the arrival order (`jobs_seq` serves it).
const RECENT_JOBS: &str = "SELECT id, kind, event, state, attempts, pr_key, fleet_key, last_error, created_at, finished_at \
     FROM jobs ORDER BY seq DESC, id DESC LIMIT $1";

/// `$1` now.
const LIVE_LEASES: &str = "SELECT fleet_key, owner, holder, token, expires_at FROM deploy_leases \
     WHERE owner <> '' AND expires_at > $1 ORDER BY fleet_key";

const RECENT_REVIEWED_PLANS: &str = "SELECT pr_key, head_sha, fleet_path, digest, summary, recorded_at \
     FROM deploy_reviewed_plans ORDER BY recorded_at DESC, pr_key, fleet_path LIMIT $1";

const RECENT_APPLY_RUNS: &str = "SELECT job_id, fleet_path, digest, destructive_approved, started_at \
     FROM deploy_apply_runs ORDER BY started_at DESC, job_id, fleet_path LIMIT $1";

const RECENT_AUDIT: &str = "SELECT at, actor, action, repo, pr, sha, fleet, outcome, digest, detail FROM deploy_audit \
     ORDER BY at DESC, seq DESC, id DESC LIMIT $1";

/// A limit as SQL binds it.
fn bound(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

fn summary_from<R: Row>(row: &R) -> Result<JobSummary, sqlx::Error>
where
    for<'r> String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'a> &'a str: sqlx::ColumnIndex<R>,
{
    Ok(JobSummary {
        job: sql::job_from(row)?,
        created_at: row.try_get("created_at")?,
        finished_at: row.try_get("finished_at")?,
    })
}

/// One listing for one backend: the statement, its bound value and the row decoder, with
/// failures reported as the store being unreadable (the page says so and shows the rest).
macro_rules! listing {
    ($pool:expr, $location:expr, $sql:expr, $bind:expr, $decode:path) => {{
        let location: String = $location;
        let unreadable = |e: sqlx::Error| StoreError::Unreadable {
            location: location.clone(),
            reason: e.to_string(),
        };
        let rows = sqlx::query($sql)
            .bind($bind)
            .fetch_all($pool)
            .await
            .map_err(unreadable)?;
        rows.iter()
            .map($decode)
            .collect::<Result<Vec<_>, _>>()
            .map_err(unreadable)
    }};
}

/// The same six listings for both backends, which differ only in their pool and location.
macro_rules! overview_impl {
    ($store:ty, $location:expr) => {
        impl OverviewStore for $store {
            async fn all_targets(&self, limit: usize) -> Result<Vec<TargetRecord>, StoreError> {
                let location = $location(self);
                listing!(
                    &self.pool,
                    location,
                    ALL_TARGETS,
                    bound(limit),
                    sql::target_from
                )
            }

            async fn recent_jobs(&self, limit: usize) -> Result<Vec<JobSummary>, StoreError> {
                let location = $location(self);
                listing!(
                    &self.pool,
                    location,
                    RECENT_JOBS,
                    bound(limit),
                    summary_from
                )
            }

            async fn live_leases(&self, now: i64) -> Result<Vec<Lease>, StoreError> {
                let location = $location(self);
                listing!(&self.pool, location, LIVE_LEASES, now, sql::lease_from)
            }

            async fn recent_reviewed_plans(
                &self,
                limit: usize,
            ) -> Result<Vec<ReviewedPlan>, StoreError> {
                let location = $location(self);
                listing!(
                    &self.pool,
                    location,
                    RECENT_REVIEWED_PLANS,
                    bound(limit),
                    sql::reviewed_plan_from
                )
            }

            async fn recent_apply_runs(&self, limit: usize) -> Result<Vec<ApplyRun>, StoreError> {
                let location = $location(self);
                listing!(
                    &self.pool,
                    location,
                    RECENT_APPLY_RUNS,
                    bound(limit),
                    sql::apply_run_from
                )
            }

            async fn recent_audit(&self, limit: usize) -> Result<Vec<AuditEntry>, StoreError> {
                let location = $location(self);
                listing!(
                    &self.pool,
                    location,
                    RECENT_AUDIT,
                    bound(limit),
                    sql::audit_from
                )
            }
        }
    };
}

overview_impl!(SqliteStore, |s: &SqliteStore| s.path.display().to_string());
overview_impl!(PostgresStore, |s: &PostgresStore| s.location.clone());
