//! The one implementation of each store trait over SQLite and PostgreSQL: what is the same
//! statement on either pool is written once here, and each store passes in only what it runs
//! its own way (SQLite's single writer, PostgreSQL's transactions and row locks). The
//! conformance suite runs every statement against both.

/// The row `$sql` selects with `$binds` bound in order, decoded by `$decode`, on `$store`'s
/// pool (`None` when there is none); any failure is the store being unreadable.
macro_rules! read_one {
    ($store:expr, $sql:expr, [$($bind:expr),*], $decode:path) => {{
        let row = sqlx::query($sql)
            $(.bind($bind))*
            .fetch_optional(&$store.pool)
            .await
            .map_err(|e| $store.unreadable(e))?;
        row.as_ref()
            .map($decode)
            .transpose()
            .map_err(|e| $store.unreadable(e))
    }};
}

/// Every row `$sql` selects with `$binds`, decoded by `$decode`, as [`read_one!`] reads one.
macro_rules! read_all {
    ($store:expr, $sql:expr, [$($bind:expr),*], $decode:path) => {{
        let rows = sqlx::query($sql)
            $(.bind($bind))*
            .fetch_all(&$store.pool)
            .await
            .map_err(|e| $store.unreadable(e))?;
        rows.iter()
            .map($decode)
            .collect::<Result<_, _>>()
            .map_err(|e| $store.unreadable(e))
    }};
}

/// The one implementation of [`InventoryStore`](super::InventoryStore) over both backends: their
/// reads and writes are the same statements (`store::sql`), and the stores differ only in their
/// pool, their writer (SQLite's is gated to one at a time) and where they are (`$location`). Each
/// store has `pool`, `write(query)`, `unreadable(e)` and `write_error(e)`.
macro_rules! inventory_impl {
    ($store:ty, $location:expr) => {
        #[async_trait::async_trait]
        impl crate::store::InventoryStore for $store {
            fn location(&self) -> String {
                ($location)(self)
            }

            async fn targets(
                &self,
                fleet: &str,
            ) -> Result<Vec<crate::store::TargetRecord>, crate::store::StoreError> {
                // Each row is made a record as it arrives, rather than every row of the fleet held
                // at once, each value copied out of the database, before the first became a record.
                sqlx::query(crate::store::sql::SELECT_TARGETS)
                    .bind(fleet)
                    .fetch(&self.pool)
                    .map_err(|e| self.unreadable(e))
                    .and_then(|row| {
                        std::future::ready(
                            crate::store::sql::target_from(&row).map_err(|e| self.unreadable(e)),
                        )
                    })
                    .try_collect()
                    .await
            }

            async fn target(
                &self,
                fleet: &str,
                project_key: &str,
                cluster_name: &str,
            ) -> Result<Option<crate::store::TargetRecord>, crate::store::StoreError> {
                crate::store::backends::read_one!(
                    self,
                    crate::store::sql::SELECT_TARGET,
                    [fleet, project_key, cluster_name],
                    crate::store::sql::target_from
                )
            }

            async fn upsert_target(
                &self,
                r: &crate::store::TargetRecord,
            ) -> Result<(), crate::store::StoreError> {
                let json = crate::store::sql::target_json(r).map_err(|e| self.write_error(e))?;
                self.write(crate::store::sql::upsert_target(r, json))
                    .await?;
                Ok(())
            }

            async fn remove_target(
                &self,
                fleet: &str,
                project_key: &str,
                cluster_name: &str,
            ) -> Result<(), crate::store::StoreError> {
                self.write(crate::store::sql::for_target(
                    crate::store::sql::DELETE_TARGET,
                    fleet,
                    project_key,
                    cluster_name,
                ))
                .await?;
                Ok(())
            }

            async fn projects(
                &self,
                fleet: &str,
            ) -> Result<Vec<crate::store::ProjectRecord>, crate::store::StoreError> {
                crate::store::backends::read_all!(
                    self,
                    crate::store::sql::SELECT_PROJECTS,
                    [fleet],
                    crate::store::sql::project_from
                )
            }

            async fn upsert_project(
                &self,
                r: &crate::store::ProjectRecord,
            ) -> Result<(), crate::store::StoreError> {
                self.write(crate::store::sql::upsert_project(r)).await?;
                Ok(())
            }

            async fn remove_project(
                &self,
                fleet: &str,
                project_key: &str,
            ) -> Result<(), crate::store::StoreError> {
                self.write(
                    sqlx::query(crate::store::sql::DELETE_PROJECT)
                        .bind(fleet)
                        .bind(project_key),
                )
                .await?;
                Ok(())
            }

            async fn generation(
                &self,
                fleet: &str,
                project_key: &str,
                cluster_name: &str,
            ) -> Result<i64, crate::store::StoreError> {
                let row = crate::store::sql::for_target(
                    crate::store::sql::SELECT_GENERATION,
                    fleet,
                    project_key,
                    cluster_name,
                )
                .fetch_optional(&self.pool)
                .await
                .map_err(|e| self.unreadable(e))?;
                crate::store::sql::generation_from(row).map_err(|e| self.unreadable(e))
            }

            async fn bump_generation(
                &self,
                fleet: &str,
                project_key: &str,
                cluster_name: &str,
            ) -> Result<(), crate::store::StoreError> {
                self.write(crate::store::sql::for_target(
                    crate::store::sql::BUMP_GENERATION,
                    fleet,
                    project_key,
                    cluster_name,
                ))
                .await?;
                Ok(())
            }
        }
    };
}
pub(crate) use inventory_impl;

/// The one implementation of [`DeployStore`](super::DeployStore) over both backends: its reads are
/// the same statements (`store::sql`) on each store's `pool`; its writes, which SQLite runs on its
/// one writer and PostgreSQL in transactions, are each store's own (`$writes`). Each store has
/// `pool` and `unreadable(e)`.
macro_rules! deploy_impl {
    ($store:ty, { $($writes:tt)* }) => {
        #[async_trait::async_trait]
        impl crate::store::deploy::DeployStore for $store {
            async fn reviewed_plan(
                &self,
                pr_key: &str,
                head_sha: &str,
                fleet_path: &str,
            ) -> Result<Option<crate::store::deploy::ReviewedPlan>, crate::store::StoreError> {
                crate::store::backends::read_one!(
                    self,
                    crate::store::sql::SELECT_REVIEWED_PLAN,
                    [pr_key, head_sha, fleet_path],
                    crate::store::sql::reviewed_plan_from
                )
            }

            async fn pr_heads(
                &self,
                pr_key: &str,
            ) -> Result<Vec<crate::store::deploy::PrHead>, crate::store::StoreError> {
                crate::store::backends::read_all!(
                    self,
                    crate::store::sql::SELECT_PR_HEADS,
                    [pr_key],
                    crate::store::sql::pr_head_from
                )
            }

            async fn apply_run(
                &self,
                job_id: &str,
                fleet_path: &str,
            ) -> Result<Option<crate::store::deploy::ApplyRun>, crate::store::StoreError> {
                crate::store::backends::read_one!(
                    self,
                    crate::store::sql::SELECT_APPLY_RUN,
                    [job_id, fleet_path],
                    crate::store::sql::apply_run_from
                )
            }

            async fn approval(
                &self,
                pr_key: &str,
                fleet_path: &str,
                digest: &str,
            ) -> Result<Option<crate::store::deploy::Approval>, crate::store::StoreError> {
                crate::store::backends::read_one!(
                    self,
                    crate::store::sql::SELECT_APPROVAL,
                    [pr_key, fleet_path, digest],
                    crate::store::sql::approval_from
                )
            }

            async fn audit(
                &self,
                repo: &str,
                limit: usize,
            ) -> Result<Vec<crate::store::deploy::AuditEntry>, crate::store::StoreError> {
                crate::store::backends::read_all!(
                    self,
                    crate::store::sql::SELECT_AUDIT,
                    [
                        crate::store::deploy::repo_key(repo),
                        i64::try_from(limit).unwrap_or(i64::MAX)
                    ],
                    crate::store::sql::audit_from
                )
            }

            $($writes)*
        }
    };
}
pub(crate) use deploy_impl;

/// The one implementation of [`JobQueue`](super::JobQueue) over both backends: what is the same
/// statement on each store's `pool` is written here; enqueueing, claiming, renewing, finishing and
/// the fleet lock, which SQLite runs on its one writer and PostgreSQL in transactions with row
/// locks, are each store's own (`$own`). Each store has `pool`, `write(query)` and
/// `queue_error(e)`.
macro_rules! queue_impl {
    ($store:ty, { $($own:tt)* }) => {
        impl crate::store::queue::JobQueue for $store {
            async fn next_due(&self) -> Result<Option<i64>, crate::store::StoreError> {
                sqlx::query_scalar::<_, Option<i64>>(crate::store::sql::NEXT_DUE)
                    .fetch_one(&self.pool)
                    .await
                    .map_err(|e| self.queue_error(e))
            }

            async fn prune(
                &self,
                before: i64,
            ) -> Result<crate::store::queue::Pruned, crate::store::StoreError> {
                let deliveries = self
                    .write(sqlx::query(crate::store::sql::PRUNE_DELIVERIES).bind(before))
                    .await
                    .map_err(crate::store::StoreError::into_queue)?;
                self.write(sqlx::query(crate::store::sql::PRUNE_PAYLOADS).bind(before))
                    .await
                    .map_err(crate::store::StoreError::into_queue)?;
                let jobs = self
                    .write(sqlx::query(crate::store::sql::PRUNE_JOBS).bind(before))
                    .await
                    .map_err(crate::store::StoreError::into_queue)?;
                Ok(crate::store::queue::Pruned { deliveries, jobs })
            }

            async fn delivery_known(&self, id: &str) -> Result<bool, crate::store::StoreError> {
                let n: i64 = sqlx::query_scalar(crate::store::sql::DELIVERY_KNOWN)
                    .bind(id)
                    .fetch_one(&self.pool)
                    .await
                    .map_err(|e| self.queue_error(e))?;
                Ok(n > 0)
            }

            async fn job(
                &self,
                id: &str,
            ) -> Result<Option<crate::store::queue::JobRecord>, crate::store::StoreError> {
                let row = sqlx::query(crate::store::sql::SELECT_JOB)
                    .bind(id)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(|e| self.queue_error(e))?;
                row.as_ref()
                    .map(crate::store::sql::job_from)
                    .transpose()
                    .map_err(|e| self.queue_error(e))
            }

            async fn counts(
                &self,
            ) -> Result<crate::store::queue::QueueCounts, crate::store::StoreError> {
                let rows = sqlx::query(crate::store::sql::COUNT_JOBS)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(|e| self.queue_error(e))?;
                let states = rows
                    .iter()
                    .map(|r| Ok((r.try_get::<String, _>("state")?, r.try_get::<i64, _>("n")?)))
                    .collect::<Result<Vec<_>, sqlx::Error>>()
                    .map_err(|e| self.queue_error(e))?;
                let deliveries: i64 = sqlx::query_scalar(crate::store::sql::COUNT_DELIVERIES)
                    .fetch_one(&self.pool)
                    .await
                    .map_err(|e| self.queue_error(e))?;
                Ok(crate::store::sql::fold_counts(states, deliveries))
            }

            $($own)*
        }
    };
}
pub(crate) use queue_impl;
pub(crate) use {read_all, read_one};
