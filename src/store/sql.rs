//! SQL text and row decoding shared by the SQLite and PostgreSQL stores.
//!
//! Both engines take `$N` placeholders and `ON CONFLICT … DO UPDATE/NOTHING`, so one text
//! serves both; where they differ (PostgreSQL's `FOR UPDATE SKIP LOCKED`), the backend appends
//! its part. Queries are checked at run time (no `query!` macros), so a build needs no
//! database; the conformance suite runs every statement against both engines.

use bytes::Bytes;
use sqlx::{ColumnIndex, Decode, Encode, Row, Type};

use super::inventory::{ProjectRecord, TargetRecord};
use super::queue::{ClaimedJob, JobRecord};

/// Columns named, not `*`: a prepared `*` keeps the column count it was prepared with, and a
/// connection that prepared it before a migration added a column would misread the rows.
pub(crate) const SELECT_TARGETS: &str = "SELECT fleet, project_key, cluster_name, backend, status, tenant_id, region, profile, \
     project_id, cluster_id, node_group_ids, filesystem_id, filesystem_created, gpu_cluster_id, subnet_id, \
     applied_digest, error, updated_at, addons FROM inventory_targets WHERE fleet = $1 ORDER BY project_key, cluster_name";

pub(crate) const SELECT_TARGET: &str = "SELECT fleet, project_key, cluster_name, backend, status, tenant_id, region, profile, \
     project_id, cluster_id, node_group_ids, filesystem_id, filesystem_created, gpu_cluster_id, subnet_id, \
     applied_digest, error, updated_at, addons FROM inventory_targets WHERE fleet = $1 AND project_key = $2 AND cluster_name = $3";

pub(crate) const UPSERT_TARGET: &str = "INSERT INTO inventory_targets (fleet, project_key, cluster_name, backend, status, tenant_id, region, profile, \
     project_id, cluster_id, node_group_ids, filesystem_id, filesystem_created, gpu_cluster_id, subnet_id, \
     applied_digest, error, updated_at, addons) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19) \
     ON CONFLICT (fleet, project_key, cluster_name) DO UPDATE SET backend = excluded.backend, \
     status = excluded.status, tenant_id = excluded.tenant_id, region = excluded.region, \
     profile = excluded.profile, project_id = excluded.project_id, cluster_id = excluded.cluster_id, \
     node_group_ids = excluded.node_group_ids, filesystem_id = excluded.filesystem_id, \
     filesystem_created = excluded.filesystem_created, gpu_cluster_id = excluded.gpu_cluster_id, \
     subnet_id = excluded.subnet_id, applied_digest = excluded.applied_digest, error = excluded.error, \
     updated_at = excluded.updated_at, addons = excluded.addons";

pub(crate) const SELECT_GENERATION: &str = "SELECT generation FROM inventory_lifecycles \
     WHERE fleet = $1 AND project_key = $2 AND cluster_name = $3";

pub(crate) const BUMP_GENERATION: &str = "INSERT INTO inventory_lifecycles (fleet, project_key, cluster_name, generation) \
     VALUES ($1, $2, $3, 1) ON CONFLICT (fleet, project_key, cluster_name) \
     DO UPDATE SET generation = inventory_lifecycles.generation + 1";

/// A query whose arguments are bound by value (both backends' `query()`).
pub(crate) type BoundQuery<'q, DB> = sqlx::query::Query<'q, DB, <DB as sqlx::Database>::Arguments>;

/// `sql` with a target's key `(fleet, project_key, cluster_name)` bound as `$1..$3`, for
/// either backend.
pub(crate) fn for_target<'q, DB: sqlx::Database>(
    sql: &'static str,
    fleet: &'q str,
    project_key: &'q str,
    cluster_name: &'q str,
) -> BoundQuery<'q, DB>
where
    &'q str: Encode<'q, DB> + Type<DB>,
{
    sqlx::query(sql)
        .bind(fleet)
        .bind(project_key)
        .bind(cluster_name)
}

/// The generation a [`SELECT_GENERATION`] row holds; 0 without a row.
pub(crate) fn generation_from<R: Row>(row: Option<R>) -> Result<i64, sqlx::Error>
where
    usize: ColumnIndex<R>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
{
    row.map_or(Ok(0), |r| r.try_get(0))
}

/// [`UPSERT_TARGET`] with `r` bound, for either backend. `json` is the JSON of
/// `r.node_group_ids` and of `r.addons` (made by the caller, which owns the error).
pub(crate) fn upsert_target<'q, DB: sqlx::Database>(
    r: &'q TargetRecord,
    json: (String, String),
) -> BoundQuery<'q, DB>
where
    String: Encode<'q, DB> + Type<DB>,
    i64: Encode<'q, DB> + Type<DB>,
{
    sqlx::query::<DB>(UPSERT_TARGET)
        .bind(&r.fleet)
        .bind(&r.project_key)
        .bind(&r.cluster_name)
        .bind(&r.backend)
        .bind(&r.status)
        .bind(&r.tenant_id)
        .bind(&r.region)
        .bind(&r.profile)
        .bind(&r.project_id)
        .bind(&r.cluster_id)
        .bind(json.0)
        .bind(&r.filesystem_id)
        .bind(i64::from(r.filesystem_created))
        .bind(&r.gpu_cluster_id)
        .bind(&r.subnet_id)
        .bind(&r.applied_digest)
        .bind(&r.error)
        .bind(r.updated_at)
        .bind(json.1)
}

/// The JSON columns of a target record.
pub(crate) fn target_json(r: &TargetRecord) -> Result<(String, String), serde_json::Error> {
    Ok((
        serde_json::to_string(&r.node_group_ids)?,
        serde_json::to_string(&r.addons)?,
    ))
}

/// [`UPSERT_PROJECT`] with `r` bound, for either backend.
pub(crate) fn upsert_project<'q, DB: sqlx::Database>(r: &'q ProjectRecord) -> BoundQuery<'q, DB>
where
    String: Encode<'q, DB> + Type<DB>,
    i64: Encode<'q, DB> + Type<DB>,
{
    sqlx::query::<DB>(UPSERT_PROJECT)
        .bind(&r.fleet)
        .bind(&r.project_key)
        .bind(&r.project_id)
        .bind(i64::from(r.project_created))
        .bind(&r.created_network_id)
        .bind(&r.created_subnet_id)
        .bind(&r.subnet_id)
        .bind(&r.bucket_id)
        .bind(&r.bucket_name)
        .bind(r.updated_at)
}

pub(crate) const DELETE_TARGET: &str =
    "DELETE FROM inventory_targets WHERE fleet = $1 AND project_key = $2 AND cluster_name = $3";

pub(crate) const SELECT_PROJECTS: &str =
    "SELECT * FROM inventory_projects WHERE fleet = $1 ORDER BY project_key";

pub(crate) const UPSERT_PROJECT: &str = "INSERT INTO inventory_projects (fleet, project_key, project_id, project_created, created_network_id, \
     created_subnet_id, subnet_id, bucket_id, bucket_name, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) \
     ON CONFLICT (fleet, project_key) DO UPDATE SET project_id = excluded.project_id, \
     project_created = excluded.project_created, created_network_id = excluded.created_network_id, \
     created_subnet_id = excluded.created_subnet_id, subnet_id = excluded.subnet_id, \
     bucket_id = excluded.bucket_id, bucket_name = excluded.bucket_name, updated_at = excluded.updated_at";

pub(crate) const DELETE_PROJECT: &str =
    "DELETE FROM inventory_projects WHERE fleet = $1 AND project_key = $2";

/// Records one delivery (`$1` id, `$2` event, `$3` time); changes no row when it is known.
pub(crate) const INSERT_DELIVERY: &str = "INSERT INTO webhook_deliveries (delivery_id, event, received_at) \
     VALUES ($1, $2, $3) ON CONFLICT (delivery_id) DO NOTHING";

/// Records `rows` deliveries (`$3k+1` id, `$3k+2` event, `$3k+3` time) and returns the ids
/// that were new.
pub(crate) fn insert_deliveries_sql(rows: usize) -> String {
    let values: Vec<String> = (0..rows)
        .map(|k| format!("(${}, ${}, ${})", 3 * k + 1, 3 * k + 2, 3 * k + 3))
        .collect();
    format!(
        "INSERT INTO webhook_deliveries (delivery_id, event, received_at) VALUES {} \
         ON CONFLICT (delivery_id) DO NOTHING RETURNING delivery_id",
        values.join(", ")
    )
}

/// Queues `rows` jobs (`$7k+1` id, kind, event, pr_key, fleet_key, time, `$7k+7`
/// coalesce_key) and returns the ids that were new; their payloads follow
/// ([`insert_payloads_sql`]). Row `k` gets `seq` = the largest so far + `k` + 1, so a batch
/// keeps its order (whether or not the engine's subquery sees the batch's earlier rows, the
/// values only grow).
pub(crate) fn insert_jobs_sql(rows: usize) -> String {
    let values: Vec<String> = (0..rows)
        .map(|k| {
            let b = 7 * k;
            format!(
                "(${}, ${}, ${}, ${}, ${}, 'queued', 0, (SELECT COALESCE(MAX(seq), 0) FROM jobs) + {}, ${}, ${}, ${})",
                b + 1,
                b + 2,
                b + 3,
                b + 4,
                b + 5,
                k + 1,
                b + 6,
                b + 6,
                b + 7
            )
        })
        .collect();
    format!(
        "INSERT INTO jobs (id, kind, event, pr_key, fleet_key, state, attempts, seq, created_at, run_after, coalesce_key) \
         VALUES {} ON CONFLICT (id) DO NOTHING RETURNING id",
        values.join(", ")
    )
}

/// `seq` is one more than the largest so far: strictly increasing on SQLite (writes are
/// serialized); on PostgreSQL two concurrent arrivals may share a value, and ties are broken
/// by id, which is as good an order as two simultaneous deliveries have. `$1`–`$7`: id, kind,
/// event, pr_key, fleet_key, time, coalescing key.
pub(crate) const INSERT_JOB: &str = "INSERT INTO jobs (id, kind, event, pr_key, fleet_key, state, attempts, seq, created_at, run_after, coalesce_key) \
     VALUES ($1, $2, $3, $4, $5, 'queued', 0, (SELECT COALESCE(MAX(seq), 0) + 1 FROM jobs), $6, $6, $7) \
     ON CONFLICT (id) DO NOTHING";

/// New jobs' payloads (`$2k+1` id, `$2k+2` bytes), written once beside their rows, `rows`
/// at once (one round trip for a batch of deliveries on PostgreSQL). A payload left by a job
/// row since pruned is replaced, never read for the new job.
pub(crate) fn insert_payloads_sql(rows: usize) -> String {
    let values: Vec<String> = (0..rows)
        .map(|k| format!("(${}, ${})", 2 * k + 1, 2 * k + 2))
        .collect();
    format!(
        "INSERT INTO job_payloads (id, payload) VALUES {} \
         ON CONFLICT (id) DO UPDATE SET payload = excluded.payload",
        values.join(", ")
    )
}

/// A payload no longer needed: its job is done (failed jobs keep theirs until pruned).
pub(crate) const DELETE_PAYLOAD: &str = "DELETE FROM job_payloads WHERE id = $1";

/// What keeps a job behind another of its pull request or fleet: an older unfinished job of the
/// same key, or a running one on a live lease. `$1` is now. Checked at claim time even for
/// heads, because on PostgreSQL two concurrent arrivals can both look like heads.
const HELD_BACK: &str = "(j.pr_key = '' OR ( \
            NOT EXISTS (SELECT 1 FROM jobs k WHERE k.pr_key = j.pr_key AND k.pr_key <> '' AND k.state IN ('queued', 'running') \
                AND k.seq <= j.seq AND (k.seq < j.seq OR k.id < j.id)) \
            AND NOT EXISTS (SELECT 1 FROM jobs k WHERE k.pr_key = j.pr_key AND k.state = 'running' \
                AND k.lease_until >= $1 AND k.id <> j.id))) \
       AND (j.fleet_key = '' OR ( \
            NOT EXISTS (SELECT 1 FROM jobs k WHERE k.fleet_key = j.fleet_key AND k.fleet_key <> '' AND k.state IN ('queued', 'running') \
                AND k.seq <= j.seq AND (k.seq < j.seq OR k.id < j.id)) \
            AND NOT EXISTS (SELECT 1 FROM jobs k WHERE k.fleet_key = j.fleet_key AND k.state = 'running' \
                AND k.lease_until >= $1 AND k.id <> j.id)))";

/// The queued head due longest (`$1` now): a range scan of `jobs_ready_due` that stops at the
/// first row, whatever the depth of the queue behind the heads.
fn pick_due(suffix: &str) -> String {
    format!(
        "SELECT j.id FROM jobs j WHERE j.ready = 1 AND j.state = 'queued' AND j.run_after <= $1 \
         AND {HELD_BACK} ORDER BY j.run_after, j.seq, j.id LIMIT 1{suffix}"
    )
}

/// A running job whose lease ran out (its worker died), taken again first.
fn pick_expired(suffix: &str) -> String {
    format!(
        "SELECT j.id FROM jobs j WHERE j.state = 'running' AND j.lease_until < $1 \
         AND {HELD_BACK} ORDER BY j.lease_until, j.seq, j.id LIMIT 1{suffix}"
    )
}

/// Takes the picked job: `$1` now, `$2` lease token, `$3` worker, `$4` lease end; each pick
/// carries the backend's suffix (PostgreSQL's `FOR UPDATE SKIP LOCKED`).
pub(crate) fn claim_sql(pick_suffix: &str) -> String {
    format!(
        "UPDATE jobs SET state = 'running', attempts = attempts + 1, lease_token = $2, lease_owner = $3, lease_until = $4 \
         WHERE id = COALESCE(({}), ({})) \
         RETURNING id, kind, event, (SELECT p.payload FROM job_payloads p WHERE p.id = jobs.id) AS payload, \
           pr_key, fleet_key, attempts, lease_token, created_at",
        pick_expired(pick_suffix),
        pick_due(pick_suffix)
    )
}

/// Whether a job is the head of both its keys (no older unfinished job of either), as SQL on
/// the row `jobs`.
const IS_HEAD: &str = "state IN ('queued', 'running') \
     AND (pr_key = '' OR NOT EXISTS (SELECT 1 FROM jobs k WHERE k.pr_key = jobs.pr_key AND k.pr_key <> '' \
         AND k.state IN ('queued', 'running') AND k.id <> jobs.id \
         AND (k.seq < jobs.seq OR (k.seq = jobs.seq AND k.id < jobs.id)))) \
     AND (fleet_key = '' OR NOT EXISTS (SELECT 1 FROM jobs k WHERE k.fleet_key = jobs.fleet_key AND k.fleet_key <> '' \
         AND k.state IN ('queued', 'running') AND k.id <> jobs.id \
         AND (k.seq < jobs.seq OR (k.seq = jobs.seq AND k.id < jobs.id))))";

/// Marks a new job (`$1`) a claim candidate when it heads both its keys.
pub(crate) static MARK_HEAD: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!("UPDATE jobs SET ready = 1 WHERE id = $1 AND ready = 0 AND {IS_HEAD}")
});

/// After a job of pull-request key `$1` and fleet key `$2` finished (or was superseded): the
/// next unfinished job of each key becomes a candidate if it now heads both of its keys.
pub(crate) static PROMOTE: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "UPDATE jobs SET ready = 1 WHERE ready = 0 AND id IN ( \
           SELECT id FROM (SELECT id FROM jobs WHERE $1 <> '' AND pr_key = $1 AND pr_key <> '' AND state IN ('queued', 'running') \
               ORDER BY seq, id LIMIT 1) AS next_pr \
           UNION SELECT id FROM (SELECT id FROM jobs WHERE $2 <> '' AND fleet_key = $2 AND fleet_key <> '' AND state IN ('queued', 'running') \
               ORDER BY seq, id LIMIT 1) AS next_fleet) \
         AND {IS_HEAD}"
    )
});

/// A newer job (`$2`, coalescing key `$1`) supersedes the older queued jobs of its key that
/// never started: they end `done` at `$3`. Returns the keys to promote behind each, and its id
/// (its payload is deleted).
pub(crate) const SUPERSEDE: &str = "UPDATE jobs SET state = 'done', ready = 0, finished_at = $3, \
     last_error = 'superseded by a newer delivery for the same pull request' \
     WHERE coalesce_key = $1 AND coalesce_key <> '' AND state = 'queued' AND attempts = 0 AND id <> $2 \
       AND seq < (SELECT seq FROM jobs WHERE id = $2) \
     RETURNING pr_key, fleet_key, id";

/// The earliest moment a job may become claimable: a queued head coming due, or a running
/// job's lease running out. `NULL` when nothing is open.
pub(crate) const NEXT_DUE: &str = "SELECT MIN(t) FROM ( \
     SELECT MIN(run_after) AS t FROM jobs WHERE ready = 1 AND state = 'queued' \
     UNION ALL SELECT MIN(lease_until) AS t FROM jobs WHERE state = 'running') AS due";

pub(crate) const RENEW: &str =
    "UPDATE jobs SET lease_until = $1 WHERE id = $2 AND lease_token = $3 AND state = 'running'";

/// Its payload is deleted with it (`DELETE_PAYLOAD`): no longer needed, and the bulk of a job.
pub(crate) const FINISH_DONE: &str = "UPDATE jobs SET state = 'done', finished_at = $1, lease_token = '', lease_until = 0, last_error = $4 \
     WHERE id = $2 AND lease_token = $3 AND state = 'running'";

pub(crate) const FINISH_RETRY: &str = "UPDATE jobs SET state = 'queued', run_after = $1, last_error = $4, lease_token = '', lease_until = 0 \
     WHERE id = $2 AND lease_token = $3 AND state = 'running'";

pub(crate) const FINISH_FAILED: &str = "UPDATE jobs SET state = 'failed', finished_at = $1, last_error = $4, lease_token = '', lease_until = 0 \
     WHERE id = $2 AND lease_token = $3 AND state = 'running'";

pub(crate) const FINISH_DEFERRED: &str = "UPDATE jobs SET state = 'queued', run_after = $1, attempts = attempts - 1, last_error = $4, lease_token = '', lease_until = 0 \
     WHERE id = $2 AND lease_token = $3 AND state = 'running'";

pub(crate) const PRUNE_DELIVERIES: &str = "DELETE FROM webhook_deliveries WHERE received_at < $1";

/// Before `PRUNE_JOBS`, the payloads of the jobs it prunes (failed ones; done ones have none).
pub(crate) const PRUNE_PAYLOADS: &str = "DELETE FROM job_payloads WHERE id IN \
     (SELECT id FROM jobs WHERE state IN ('done', 'failed') AND finished_at < $1)";

pub(crate) const PRUNE_JOBS: &str =
    "DELETE FROM jobs WHERE state IN ('done', 'failed') AND finished_at < $1";

pub(crate) const DELIVERY_KNOWN: &str =
    "SELECT COUNT(*) FROM webhook_deliveries WHERE delivery_id = $1";

pub(crate) const SELECT_JOB: &str = "SELECT id, kind, event, state, attempts, pr_key, fleet_key, last_error FROM jobs WHERE id = $1";

pub(crate) const COUNT_JOBS: &str = "SELECT state, COUNT(*) AS n FROM jobs GROUP BY state";

pub(crate) const COUNT_DELIVERIES: &str = "SELECT COUNT(*) FROM webhook_deliveries";

/// The statement that records `outcome`, with its binds: `$1` a time, `$2` the id, `$3` the
/// lease token, `$4` a message. `Done` also deletes the payload (`DELETE_PAYLOAD`).
pub(crate) fn finish_sql(outcome: &super::JobOutcome, now: i64) -> (&'static str, i64, String) {
    use super::JobOutcome::*;
    match outcome {
        Done => (FINISH_DONE, now, String::new()),
        Retry { at, error } => (FINISH_RETRY, *at, error.clone()),
        Failed { error } => (FINISH_FAILED, now, error.clone()),
        Deferred { at } => (
            FINISH_DEFERRED,
            *at,
            "deferred: the fleet is locked elsewhere".to_string(),
        ),
    }
}

pub(crate) fn target_from<R: Row>(row: &R) -> Result<TargetRecord, sqlx::Error>
where
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
    for<'a> &'a str: ColumnIndex<R>,
{
    let ids: String = row.try_get("node_group_ids")?;
    let node_group_ids =
        serde_json::from_str(&ids).map_err(|e| sqlx::Error::Decode(Box::new(e)))?;
    let addons: String = row.try_get("addons")?;
    let addons = serde_json::from_str(&addons).map_err(|e| sqlx::Error::Decode(Box::new(e)))?;
    Ok(TargetRecord {
        fleet: row.try_get("fleet")?,
        project_key: row.try_get("project_key")?,
        cluster_name: row.try_get("cluster_name")?,
        backend: row.try_get("backend")?,
        status: row.try_get("status")?,
        tenant_id: row.try_get("tenant_id")?,
        region: row.try_get("region")?,
        profile: row.try_get("profile")?,
        project_id: row.try_get("project_id")?,
        cluster_id: row.try_get("cluster_id")?,
        node_group_ids,
        filesystem_id: row.try_get("filesystem_id")?,
        filesystem_created: row.try_get::<i64, _>("filesystem_created")? != 0,
        gpu_cluster_id: row.try_get("gpu_cluster_id")?,
        subnet_id: row.try_get("subnet_id")?,
        addons,
        applied_digest: row.try_get("applied_digest")?,
        error: row.try_get("error")?,
        updated_at: row.try_get("updated_at")?,
    })
}

pub(crate) fn project_from<R: Row>(row: &R) -> Result<ProjectRecord, sqlx::Error>
where
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
    for<'a> &'a str: ColumnIndex<R>,
{
    Ok(ProjectRecord {
        fleet: row.try_get("fleet")?,
        project_key: row.try_get("project_key")?,
        project_id: row.try_get("project_id")?,
        project_created: row.try_get::<i64, _>("project_created")? != 0,
        created_network_id: row.try_get("created_network_id")?,
        created_subnet_id: row.try_get("created_subnet_id")?,
        subnet_id: row.try_get("subnet_id")?,
        bucket_id: row.try_get("bucket_id")?,
        bucket_name: row.try_get("bucket_name")?,
        updated_at: row.try_get("updated_at")?,
    })
}

fn attempts(n: i64) -> u32 {
    u32::try_from(n.max(0)).unwrap_or(u32::MAX)
}

pub(crate) fn claimed_from<R: Row>(row: &R) -> Result<ClaimedJob, sqlx::Error>
where
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> Vec<u8>: Decode<'r, R::Database> + Type<R::Database>,
    for<'a> &'a str: ColumnIndex<R>,
{
    Ok(ClaimedJob {
        id: row.try_get("id")?,
        kind: row.try_get("kind")?,
        event: row.try_get("event")?,
        payload: row
            .try_get::<Option<Vec<u8>>, _>("payload")?
            .map(Bytes::from),
        pr_key: row.try_get("pr_key")?,
        fleet_key: row.try_get("fleet_key")?,
        attempt: attempts(row.try_get("attempts")?),
        lease_token: row.try_get("lease_token")?,
        created_at: row.try_get("created_at")?,
    })
}

pub(crate) fn job_from<R: Row>(row: &R) -> Result<JobRecord, sqlx::Error>
where
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
    for<'a> &'a str: ColumnIndex<R>,
{
    Ok(JobRecord {
        id: row.try_get("id")?,
        kind: row.try_get("kind")?,
        event: row.try_get("event")?,
        state: row.try_get("state")?,
        attempts: attempts(row.try_get("attempts")?),
        pr_key: row.try_get("pr_key")?,
        fleet_key: row.try_get("fleet_key")?,
        last_error: row.try_get("last_error")?,
    })
}

/// Folds `(state, count)` rows into counts.
pub(crate) fn fold_counts(
    rows: impl IntoIterator<Item = (String, i64)>,
    deliveries: i64,
) -> super::QueueCounts {
    let mut c = super::QueueCounts {
        deliveries: deliveries.max(0) as u64,
        ..Default::default()
    };
    for (state, n) in rows {
        let n = n.max(0) as u64;
        match state.as_str() {
            "queued" => c.queued += n,
            "running" => c.running += n,
            "done" => c.done += n,
            "failed" => c.failed += n,
            _ => {}
        }
    }
    c
}

/// `$1..$6`: pr_key, head_sha, fleet_path, digest, recorded_at, summary.
pub(crate) const UPSERT_REVIEWED_PLAN: &str = "INSERT INTO deploy_reviewed_plans (pr_key, head_sha, fleet_path, digest, recorded_at, summary) \
     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (pr_key, head_sha, fleet_path) \
     DO UPDATE SET digest = excluded.digest, recorded_at = excluded.recorded_at, summary = excluded.summary";

/// `$1..$3`: pr_key, head_sha, seen_at.
pub(crate) const INSERT_PR_HEAD: &str = "INSERT INTO deploy_pr_heads (pr_key, head_sha, seen_at) \
     VALUES ($1, $2, $3) ON CONFLICT (pr_key, seen_at, head_sha) DO NOTHING";

pub(crate) const SELECT_PR_HEADS: &str = "SELECT head_sha, seen_at FROM deploy_pr_heads \
     WHERE pr_key = $1 ORDER BY seen_at, head_sha";

/// `$1..$5`: job_id, fleet_path, digest, destructive_approved (0/1), started_at. The first
/// record stays: a resumed job keeps what it was allowed when it started.
pub(crate) const INSERT_APPLY_RUN: &str = "INSERT INTO deploy_apply_runs (job_id, fleet_path, digest, destructive_approved, started_at) \
     VALUES ($1, $2, $3, $4, $5) ON CONFLICT (job_id, fleet_path) DO NOTHING";

pub(crate) const SELECT_APPLY_RUN: &str = "SELECT job_id, fleet_path, digest, destructive_approved, started_at FROM deploy_apply_runs \
     WHERE job_id = $1 AND fleet_path = $2";

pub(crate) const SELECT_REVIEWED_PLAN: &str = "SELECT pr_key, head_sha, fleet_path, digest, summary, recorded_at FROM deploy_reviewed_plans \
     WHERE pr_key = $1 AND head_sha = $2 AND fleet_path = $3";

/// `$1..$5`: pr_key, fleet_path, digest, approver, approved_at.
pub(crate) const UPSERT_APPROVAL: &str = "INSERT INTO deploy_approvals (pr_key, fleet_path, digest, approver, approved_at) \
     VALUES ($1, $2, $3, $4, $5) ON CONFLICT (pr_key, fleet_path, digest) \
     DO UPDATE SET approver = excluded.approver, approved_at = excluded.approved_at";

pub(crate) const SELECT_APPROVAL: &str = "SELECT pr_key, fleet_path, digest, approver, approved_at FROM deploy_approvals \
     WHERE pr_key = $1 AND fleet_path = $2 AND digest = $3";

/// `$1` id, `$2` at, actor, action, repo, `$6` repo_key, pr, sha, fleet, outcome, digest,
/// `$12` detail. `seq` as in [`INSERT_JOB`].
pub(crate) const INSERT_AUDIT: &str = "INSERT INTO deploy_audit (id, seq, at, actor, action, repo, repo_key, pr, sha, fleet, outcome, digest, detail) \
     VALUES ($1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM deploy_audit), $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)";

/// `$1` repo_key, `$2` limit.
pub(crate) const SELECT_AUDIT: &str = "SELECT at, actor, action, repo, pr, sha, fleet, outcome, digest, detail FROM deploy_audit \
     WHERE repo_key = $1 ORDER BY at DESC, seq DESC, id DESC LIMIT $2";

/// Takes a lease: `$1` fleet, `$2` owner, `$3` holder, `$4` now, `$5` expiry. Returns the
/// lease when taken, no row when it is held. The condition is evaluated on the row as it is
/// when the insert conflicts, under that row's lock, so of callers racing on one fleet only
/// one sees it free.
pub(crate) const TAKE_LEASE: &str = "INSERT INTO deploy_leases (fleet_key, owner, holder, token, expires_at) \
     VALUES ($1, $2, $3, 1, $5) ON CONFLICT (fleet_key) DO UPDATE SET owner = excluded.owner, \
     holder = excluded.holder, token = deploy_leases.token + 1, expires_at = excluded.expires_at \
     WHERE deploy_leases.owner = '' OR deploy_leases.expires_at <= $4 OR deploy_leases.owner = excluded.owner \
     RETURNING fleet_key, owner, holder, token, expires_at";

/// The lease row of `$1`, free or not (PostgreSQL appends `FOR UPDATE` where it must not
/// change before the transaction ends).
pub(crate) const SELECT_LEASE_ROW: &str =
    "SELECT fleet_key, owner, holder, token, expires_at FROM deploy_leases WHERE fleet_key = $1";

/// The live lease of `$1` at `$2`.
pub(crate) const SELECT_LIVE_LEASE: &str = "SELECT fleet_key, owner, holder, token, expires_at FROM deploy_leases \
     WHERE fleet_key = $1 AND owner <> '' AND expires_at > $2";

/// `$1` until, `$2` fleet, `$3` token.
pub(crate) const RENEW_LEASE: &str = "UPDATE deploy_leases SET expires_at = $1 \
     WHERE fleet_key = $2 AND token = $3 AND owner <> ''";

/// Frees `$1` if `$2` is its token; the row (and its token) stays.
pub(crate) const FREE_LEASE: &str = "UPDATE deploy_leases SET owner = '', holder = '', expires_at = 0 \
     WHERE fleet_key = $1 AND token = $2 AND owner <> ''";

pub(crate) fn reviewed_plan_from<R: Row>(row: &R) -> Result<super::ReviewedPlan, sqlx::Error>
where
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
    for<'a> &'a str: ColumnIndex<R>,
{
    Ok(super::ReviewedPlan {
        pr_key: row.try_get("pr_key")?,
        head_sha: row.try_get("head_sha")?,
        fleet_path: row.try_get("fleet_path")?,
        digest: row.try_get("digest")?,
        summary: row.try_get("summary")?,
        recorded_at: row.try_get("recorded_at")?,
    })
}

pub(crate) fn pr_head_from<R: Row>(row: &R) -> Result<super::PrHead, sqlx::Error>
where
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
    for<'a> &'a str: ColumnIndex<R>,
{
    Ok(super::PrHead {
        head_sha: row.try_get("head_sha")?,
        seen_at: row.try_get("seen_at")?,
    })
}

pub(crate) fn apply_run_from<R: Row>(row: &R) -> Result<super::ApplyRun, sqlx::Error>
where
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
    for<'a> &'a str: ColumnIndex<R>,
{
    let approved: i64 = row.try_get("destructive_approved")?;
    Ok(super::ApplyRun {
        job_id: row.try_get("job_id")?,
        fleet_path: row.try_get("fleet_path")?,
        digest: row.try_get("digest")?,
        destructive_approved: approved != 0,
        started_at: row.try_get("started_at")?,
    })
}

pub(crate) fn approval_from<R: Row>(row: &R) -> Result<super::Approval, sqlx::Error>
where
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
    for<'a> &'a str: ColumnIndex<R>,
{
    Ok(super::Approval {
        pr_key: row.try_get("pr_key")?,
        fleet_path: row.try_get("fleet_path")?,
        digest: row.try_get("digest")?,
        approver: row.try_get("approver")?,
        approved_at: row.try_get("approved_at")?,
    })
}

pub(crate) fn audit_from<R: Row>(row: &R) -> Result<super::AuditEntry, sqlx::Error>
where
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
    for<'a> &'a str: ColumnIndex<R>,
{
    let pr: i64 = row.try_get("pr")?;
    Ok(super::AuditEntry {
        at: row.try_get("at")?,
        actor: row.try_get("actor")?,
        action: row.try_get("action")?,
        repo: row.try_get("repo")?,
        // A negative number is a damaged row, not pull request 0.
        pr: u64::try_from(pr).map_err(|e| sqlx::Error::Decode(Box::new(e)))?,
        sha: row.try_get("sha")?,
        fleet: row.try_get("fleet")?,
        outcome: row.try_get("outcome")?,
        digest: row.try_get("digest")?,
        detail: row.try_get("detail")?,
    })
}

pub(crate) fn lease_from<R: Row>(row: &R) -> Result<super::Lease, sqlx::Error>
where
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
    for<'a> &'a str: ColumnIndex<R>,
{
    Ok(super::Lease {
        fleet_key: row.try_get("fleet_key")?,
        owner: row.try_get("owner")?,
        holder: row.try_get("holder")?,
        token: row.try_get("token")?,
        expires_at: row.try_get("expires_at")?,
    })
}
