//! The store as the apply flow sees it: an object-safe view of [`DeployStore`], so the bot
//! holds one `Arc<dyn DeployState>` whichever backend the server opened.

use std::future::Future;
use std::pin::Pin;

use crate::store::{
    ApplyRun, Approval, AuditEntry, DeployStore, Lease, LeaseTake, PrHead, ReviewedPlan, StoreError,
};

/// A boxed store future.
pub type StateFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// Reviewed plans, approvals, apply runs, the audit log and fleet leases.
pub trait DeployState: Send + Sync + 'static {
    fn record_reviewed_plan<'a>(&'a self, plan: &'a ReviewedPlan) -> StateFuture<'a, ()>;
    fn reviewed_plan<'a>(
        &'a self,
        pr_key: &'a str,
        head_sha: &'a str,
        fleet_path: &'a str,
    ) -> StateFuture<'a, Option<ReviewedPlan>>;
    fn record_approval<'a>(&'a self, approval: &'a Approval) -> StateFuture<'a, ()>;
    fn approval<'a>(
        &'a self,
        pr_key: &'a str,
        fleet_path: &'a str,
        digest: &'a str,
    ) -> StateFuture<'a, Option<Approval>>;
    fn record_pr_head<'a>(
        &'a self,
        pr_key: &'a str,
        head_sha: &'a str,
        seen_at: i64,
    ) -> StateFuture<'a, ()>;
    fn pr_heads<'a>(&'a self, pr_key: &'a str) -> StateFuture<'a, Vec<PrHead>>;
    fn record_apply_run<'a>(&'a self, run: &'a ApplyRun) -> StateFuture<'a, ()>;
    fn apply_run<'a>(
        &'a self,
        job_id: &'a str,
        fleet_path: &'a str,
    ) -> StateFuture<'a, Option<ApplyRun>>;
    fn append_audit<'a>(&'a self, entry: &'a AuditEntry) -> StateFuture<'a, ()>;
    fn audit<'a>(&'a self, repo: &'a str, limit: usize) -> StateFuture<'a, Vec<AuditEntry>>;
    fn take_lease<'a>(
        &'a self,
        fleet_key: &'a str,
        owner: &'a str,
        holder: &'a str,
        now: i64,
        ttl_ms: i64,
    ) -> StateFuture<'a, LeaseTake>;
    fn renew_lease<'a>(&'a self, lease: &'a Lease, until: i64) -> StateFuture<'a, bool>;
    fn release_lease<'a>(&'a self, lease: &'a Lease) -> StateFuture<'a, bool>;
    fn lease<'a>(&'a self, fleet_key: &'a str, now: i64) -> StateFuture<'a, Option<Lease>>;
    fn break_lease<'a>(&'a self, fleet_key: &'a str) -> StateFuture<'a, Option<Lease>>;
}

impl<T: DeployStore> DeployState for T {
    fn record_reviewed_plan<'a>(&'a self, plan: &'a ReviewedPlan) -> StateFuture<'a, ()> {
        Box::pin(DeployStore::record_reviewed_plan(self, plan))
    }
    fn reviewed_plan<'a>(
        &'a self,
        pr_key: &'a str,
        head_sha: &'a str,
        fleet_path: &'a str,
    ) -> StateFuture<'a, Option<ReviewedPlan>> {
        Box::pin(DeployStore::reviewed_plan(
            self, pr_key, head_sha, fleet_path,
        ))
    }
    fn record_approval<'a>(&'a self, approval: &'a Approval) -> StateFuture<'a, ()> {
        Box::pin(DeployStore::record_approval(self, approval))
    }
    fn approval<'a>(
        &'a self,
        pr_key: &'a str,
        fleet_path: &'a str,
        digest: &'a str,
    ) -> StateFuture<'a, Option<Approval>> {
        Box::pin(DeployStore::approval(self, pr_key, fleet_path, digest))
    }
    fn record_pr_head<'a>(
        &'a self,
        pr_key: &'a str,
        head_sha: &'a str,
        seen_at: i64,
    ) -> StateFuture<'a, ()> {
        Box::pin(DeployStore::record_pr_head(self, pr_key, head_sha, seen_at))
    }
    fn pr_heads<'a>(&'a self, pr_key: &'a str) -> StateFuture<'a, Vec<PrHead>> {
        Box::pin(DeployStore::pr_heads(self, pr_key))
    }
    fn record_apply_run<'a>(&'a self, run: &'a ApplyRun) -> StateFuture<'a, ()> {
        Box::pin(DeployStore::record_apply_run(self, run))
    }
    fn apply_run<'a>(
        &'a self,
        job_id: &'a str,
        fleet_path: &'a str,
    ) -> StateFuture<'a, Option<ApplyRun>> {
        Box::pin(DeployStore::apply_run(self, job_id, fleet_path))
    }
    fn append_audit<'a>(&'a self, entry: &'a AuditEntry) -> StateFuture<'a, ()> {
        Box::pin(DeployStore::append_audit(self, entry))
    }
    fn audit<'a>(&'a self, repo: &'a str, limit: usize) -> StateFuture<'a, Vec<AuditEntry>> {
        Box::pin(DeployStore::audit(self, repo, limit))
    }
    fn take_lease<'a>(
        &'a self,
        fleet_key: &'a str,
        owner: &'a str,
        holder: &'a str,
        now: i64,
        ttl_ms: i64,
    ) -> StateFuture<'a, LeaseTake> {
        Box::pin(DeployStore::take_lease(
            self, fleet_key, owner, holder, now, ttl_ms,
        ))
    }
    fn renew_lease<'a>(&'a self, lease: &'a Lease, until: i64) -> StateFuture<'a, bool> {
        Box::pin(DeployStore::renew_lease(self, lease, until))
    }
    fn release_lease<'a>(&'a self, lease: &'a Lease) -> StateFuture<'a, bool> {
        Box::pin(DeployStore::release_lease(self, lease))
    }
    fn lease<'a>(&'a self, fleet_key: &'a str, now: i64) -> StateFuture<'a, Option<Lease>> {
        Box::pin(DeployStore::lease(self, fleet_key, now))
    }
    fn break_lease<'a>(&'a self, fleet_key: &'a str) -> StateFuture<'a, Option<Lease>> {
        Box::pin(DeployStore::break_lease(self, fleet_key))
    }
}
