//! The durable state merge-to-deploy needs, which every store backend implements: the plans a
//! pull request was reviewed on, `/approve-destroy` approvals, the audit log, and per-fleet
//! apply leases with fencing tokens.
//!
//! Rules every backend keeps (the conformance suite in `tests/store_conformance.rs` checks them
//! on SQLite and on a real PostgreSQL):
//!
//! - A lease is taken in one atomic step: of any number of callers racing for one fleet, on
//!   any number of replicas, at most one gets [`LeaseTake::Acquired`] while the lease is live.
//! - Every acquisition gets a fencing token greater than every token handed out before for
//!   that fleet. The lease row outlives release and `/unlock`, so the sequence never restarts
//!   and a stale holder can never present a token that is current again.
//! - Only the current token renews or releases; a released or broken lease renews nothing.
//!
//! Time is passed in (unix milliseconds) instead of read inside, as in the job queue.

use super::StoreError;

/// The live plan a pull request's sticky comment showed for one fleet at one head commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewedPlan {
    pub pr_key: String,
    pub head_sha: String,
    pub fleet_path: String,
    pub digest: String,
    /// What the plan does, by role names (the bot's JSON), for "what changed since review".
    pub summary: String,
    pub recorded_at: i64,
}

/// An apply job that passed the guard for one fleet, recorded before its first mutation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApplyRun {
    pub job_id: String,
    pub fleet_path: String,
    /// The digest of the plan the guard allowed.
    pub digest: String,
    /// Whether deletions were approved for it.
    pub destructive_approved: bool,
    pub started_at: i64,
}

/// A head a pull request moved to, and when fleetbot learned of it (unix ms).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrHead {
    pub head_sha: String,
    pub seen_at: i64,
}

/// `/approve-destroy` given on a plan digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approval {
    pub pr_key: String,
    pub fleet_path: String,
    pub digest: String,
    pub approver: String,
    pub approved_at: i64,
}

/// One audit record: every command and every apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditEntry {
    pub at: i64,
    pub actor: String,
    pub action: String,
    /// `owner/name` as given; [`DeployStore::audit`] matches it case-insensitively.
    pub repo: String,
    pub pr: u64,
    pub sha: String,
    pub fleet: String,
    pub outcome: String,
    pub digest: String,
    pub detail: String,
}

/// A fleet's apply lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    pub fleet_key: String,
    /// Who may re-take it (a job id): the same owner taking it again gets it.
    pub owner: String,
    /// Who runs it now (a replica or worker), for `/unlock` and operators.
    pub holder: String,
    /// The fencing token of this acquisition.
    pub token: i64,
    /// Unix ms; the lease is free from then on.
    pub expires_at: i64,
}

/// The outcome of [`DeployStore::take_lease`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseTake {
    /// The caller holds the lease now, with a new token.
    Acquired(Lease),
    /// Someone else holds it; this is their lease, to report who and until when.
    Held(Lease),
}

/// Merge-to-deploy's durable state. Object-safe (`Arc<dyn DeployStore>`), so the apply flow
/// holds one whichever backend the server opened, and a test can stand in its own.
#[async_trait::async_trait]
pub trait DeployStore: Send + Sync + 'static {
    /// Upsert on (pr_key, head_sha, fleet_path): the latest preflight of that head wins.
    async fn record_reviewed_plan(&self, plan: &ReviewedPlan) -> Result<(), StoreError>;

    /// The plan recorded for that head and fleet, if any.
    async fn reviewed_plan(
        &self,
        pr_key: &str,
        head_sha: &str,
        fleet_path: &str,
    ) -> Result<Option<ReviewedPlan>, StoreError>;

    /// Records that the pull request's head was `head_sha` from `seen_at` on. Recording the
    /// same head at the same instant again changes nothing.
    async fn record_pr_head(
        &self,
        pr_key: &str,
        head_sha: &str,
        seen_at: i64,
    ) -> Result<(), StoreError>;

    /// Every head recorded for the pull request, oldest first.
    async fn pr_heads(&self, pr_key: &str) -> Result<Vec<PrHead>, StoreError>;

    /// Records (or keeps the first record of) a job's guard pass for a fleet.
    async fn record_apply_run(&self, run: &ApplyRun) -> Result<(), StoreError>;

    /// The job's record for the fleet, if it passed the guard before.
    async fn apply_run(
        &self,
        job_id: &str,
        fleet_path: &str,
    ) -> Result<Option<ApplyRun>, StoreError>;

    /// Upsert on (pr_key, fleet_path, digest).
    async fn record_approval(&self, approval: &Approval) -> Result<(), StoreError>;

    /// The approval of that digest, if any.
    async fn approval(
        &self,
        pr_key: &str,
        fleet_path: &str,
        digest: &str,
    ) -> Result<Option<Approval>, StoreError>;

    /// Appends one record; records are never changed.
    async fn append_audit(&self, entry: &AuditEntry) -> Result<(), StoreError>;

    /// Newest first, at most `limit`, of one repository (`owner/name`, compared
    /// case-insensitively). Records of one millisecond come in the order they were appended
    /// (on PostgreSQL, two appended at the same instant by two replicas may come either way).
    async fn audit(&self, repo: &str, limit: usize) -> Result<Vec<AuditEntry>, StoreError>;

    /// Takes the fleet's lease until `now + ttl_ms`. Acquired when the fleet is free, when the
    /// current lease expired (`expires_at <= now`), or when `owner` already holds it (a
    /// resumed job re-takes its own lease). Every acquisition gets a fencing token greater than
    /// every token ever handed out for this fleet (kept across release and break, never
    /// reused). Otherwise [`LeaseTake::Held`] with the current lease. Atomic across replicas.
    /// An empty `owner` is refused: it is how a free lease is stored.
    async fn take_lease(
        &self,
        fleet_key: &str,
        owner: &str,
        holder: &str,
        now: i64,
        ttl_ms: i64,
    ) -> Result<LeaseTake, StoreError>;

    /// Extends to `until` only if `lease.token` is still the current token and it was not
    /// released or broken; `false` otherwise.
    async fn renew_lease(&self, lease: &Lease, until: i64) -> Result<bool, StoreError>;

    /// Frees it only if `lease.token` is current (and not already freed); `false` otherwise.
    async fn release_lease(&self, lease: &Lease) -> Result<bool, StoreError>;

    /// The current lease, `None` when free or expired at `now`.
    async fn lease(&self, fleet_key: &str, now: i64) -> Result<Option<Lease>, StoreError>;

    /// `/unlock`: frees whatever holds the fleet now (expired or not) and returns what was
    /// freed (`None` if it was free). A later renew or release with the old token is `false`.
    async fn break_lease(&self, fleet_key: &str) -> Result<Option<Lease>, StoreError>;
}

/// Why a lease may not be taken by `owner`, if it may not.
pub(crate) fn refuse_owner(owner: &str) -> Option<&'static str> {
    owner
        .is_empty()
        .then_some("a lease needs a non-empty owner (an empty one marks a free lease)")
}

/// The key [`DeployStore::audit`] matches on: GitHub names are ASCII and case-insensitive, and
/// lowering here rather than in SQL keeps both engines to the same rule.
pub(crate) fn repo_key(repo: &str) -> String {
    repo.to_ascii_lowercase()
}
