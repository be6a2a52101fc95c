//! Merge-to-deploy's durable state on PostgreSQL: reviewed plans, pull request heads, apply
//! runs, approvals, the audit log and the fenced per-fleet leases.

use super::PostgresStore;
use crate::store::StoreError;
use crate::store::deploy::{
    ApplyRun, Approval, AuditEntry, Lease, LeaseTake, ReviewedPlan, refuse_owner, repo_key,
};
use crate::store::sql;

crate::store::backends::deploy_impl!(PostgresStore, {
    async fn record_reviewed_plan(&self, p: &ReviewedPlan) -> Result<(), StoreError> {
        self.write(
            sqlx::query(sql::UPSERT_REVIEWED_PLAN)
                .bind(&p.pr_key)
                .bind(&p.head_sha)
                .bind(&p.fleet_path)
                .bind(&p.digest)
                .bind(p.recorded_at)
                .bind(&p.summary),
        )
        .await?;
        Ok(())
    }

    async fn record_pr_head(
        &self,
        pr_key: &str,
        head_sha: &str,
        seen_at: i64,
    ) -> Result<(), StoreError> {
        self.write(
            sqlx::query(sql::INSERT_PR_HEAD)
                .bind(pr_key)
                .bind(head_sha)
                .bind(seen_at),
        )
        .await?;
        Ok(())
    }

    async fn record_apply_run(&self, r: &ApplyRun) -> Result<(), StoreError> {
        self.write(
            sqlx::query(sql::INSERT_APPLY_RUN)
                .bind(&r.job_id)
                .bind(&r.fleet_path)
                .bind(&r.digest)
                .bind(i64::from(r.destructive_approved))
                .bind(r.started_at),
        )
        .await?;
        Ok(())
    }

    async fn record_approval(&self, a: &Approval) -> Result<(), StoreError> {
        self.write(
            sqlx::query(sql::UPSERT_APPROVAL)
                .bind(&a.pr_key)
                .bind(&a.fleet_path)
                .bind(&a.digest)
                .bind(&a.approver)
                .bind(a.approved_at),
        )
        .await?;
        Ok(())
    }

    async fn append_audit(&self, e: &AuditEntry) -> Result<(), StoreError> {
        let pr = i64::try_from(e.pr).map_err(|err| self.write_error(err))?;
        self.write(
            sqlx::query(sql::INSERT_AUDIT)
                .bind(uuid::Uuid::new_v4().to_string())
                .bind(e.at)
                .bind(&e.actor)
                .bind(&e.action)
                .bind(&e.repo)
                .bind(repo_key(&e.repo))
                .bind(pr)
                .bind(&e.sha)
                .bind(&e.fleet)
                .bind(&e.outcome)
                .bind(&e.digest)
                .bind(&e.detail),
        )
        .await?;
        Ok(())
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
            return Err(self.write_error(why));
        }
        // A refused upsert still locks the row it conflicted with, until the transaction ends:
        // the holder read next (a fresh snapshot under READ COMMITTED) is the one that refused
        // it, not one a concurrent release or take has changed since.
        let mut tx = self.pool.begin().await.map_err(|e| self.write_error(e))?;
        let taken = sqlx::query(sql::TAKE_LEASE)
            .bind(fleet_key)
            .bind(owner)
            .bind(holder)
            .bind(now)
            .bind(now.saturating_add(ttl_ms))
            .fetch_optional(&mut *tx)
            .await
            .map_err(|e| self.write_error(e))?;
        let answer = match taken {
            Some(row) => {
                LeaseTake::Acquired(sql::lease_from(&row).map_err(|e| self.write_error(e))?)
            }
            None => {
                let row = sqlx::query(sql::SELECT_LEASE_ROW)
                    .bind(fleet_key)
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(|e| self.write_error(e))?;
                LeaseTake::Held(sql::lease_from(&row).map_err(|e| self.write_error(e))?)
            }
        };
        tx.commit().await.map_err(|e| self.write_error(e))?;
        Ok(answer)
    }

    async fn renew_lease(&self, lease: &Lease, until: i64) -> Result<bool, StoreError> {
        let changed = self
            .write(
                sqlx::query(sql::RENEW_LEASE)
                    .bind(until)
                    .bind(&lease.fleet_key)
                    .bind(lease.token),
            )
            .await?;
        Ok(changed == 1)
    }

    async fn release_lease(&self, lease: &Lease) -> Result<bool, StoreError> {
        let changed = self
            .write(
                sqlx::query(sql::FREE_LEASE)
                    .bind(&lease.fleet_key)
                    .bind(lease.token),
            )
            .await?;
        Ok(changed == 1)
    }

    async fn lease(&self, fleet_key: &str, now: i64) -> Result<Option<Lease>, StoreError> {
        let row = sqlx::query(sql::SELECT_LIVE_LEASE)
            .bind(fleet_key)
            .bind(now)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| self.unreadable(e))?;
        row.as_ref()
            .map(sql::lease_from)
            .transpose()
            .map_err(|e| self.unreadable(e))
    }

    async fn break_lease(&self, fleet_key: &str) -> Result<Option<Lease>, StoreError> {
        // Read and freed in one transaction with the row locked: the freeing statement's
        // RETURNING would show the freed row, not who held it.
        let mut tx = self.pool.begin().await.map_err(|e| self.write_error(e))?;
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "{} FOR UPDATE",
            sql::SELECT_LEASE_ROW
        )))
        .bind(fleet_key)
        .fetch_optional(&mut *tx)
        .await
        .map_err(|e| self.write_error(e))?;
        let held = row
            .as_ref()
            .map(sql::lease_from)
            .transpose()
            .map_err(|e| self.write_error(e))?
            .filter(|l| !l.owner.is_empty());
        if let Some(lease) = &held {
            sqlx::query(sql::FREE_LEASE)
                .bind(fleet_key)
                .bind(lease.token)
                .execute(&mut *tx)
                .await
                .map_err(|e| self.write_error(e))?;
        }
        tx.commit().await.map_err(|e| self.write_error(e))?;
        Ok(held)
    }
});
