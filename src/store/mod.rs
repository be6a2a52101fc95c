//! Durable state behind one set of traits, with two backends: the fleet inventory (what
//! fleetbot created, per target and per project), the webhook inbox with its job queue, and
//! merge-to-deploy's reviewed plans, approvals, audit log and apply leases ([`deploy`]), and
//! read-only listings across all of them for the dashboard ([`overview`]).
//!
//! SQLite ([`SqliteStore`]) is the embedded default and serves one replica; PostgreSQL
//! ([`PostgresStore`]) serves several replicas sharing one queue. Both run the same numbered
//! migrations ([`migrate`]) and the same statements ([`sql`]), and both pass the same
//! conformance suite (`tests/store_conformance.rs`). `FLEETBOT_STORE` picks one ([`StoreUrl`]).

mod backends;
pub mod deploy;
pub mod inventory;
pub mod lock;
pub mod migrate;
pub mod overview;
pub mod postgres;
pub mod private;
pub mod queue;
pub mod reach;
mod sql;
pub mod sqlite;
mod sqlite_writer;
pub mod url;

pub use deploy::{
    ApplyRun, Approval, AuditEntry, DeployStore, Lease, LeaseTake, PrHead, ReviewedPlan,
};
pub use inventory::{AddonRecord, InventoryStore, ProjectRecord, TargetRecord};
pub use lock::FleetLock;
pub use overview::{JobSummary, OverviewStore};
pub use postgres::PostgresStore;
pub use queue::{
    ClaimedJob, Enqueued, JobOutcome, JobQueue, JobRecord, NewJob, Pruned, QueueCounts,
};
pub use sqlite::SqliteStore;
pub use url::{StoreUrl, redact_url};

/// A store that cannot be read or written. Callers fail closed on it.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(
        "persisted fleet inventory at {location} is unreadable; refusing lifecycle action ({reason})"
    )]
    Unreadable { location: String, reason: String },
    #[error("cannot write the fleet inventory at {location}: {reason}")]
    Write { location: String, reason: String },
    /// The inbox or job queue cannot be read or written (intake answers 503, so GitHub marks
    /// the delivery failed and it can be redelivered).
    #[error("the job queue at {location} is unavailable: {reason}")]
    Queue { location: String, reason: String },
    /// The store's location is not usable (a malformed `FLEETBOT_STORE`).
    #[error("{0}")]
    Config(String),
    /// The store could not be reached at start within the time allowed ([`reach`]).
    #[error(
        "cannot reach the store at {location}: gave up after {attempts} attempts in {secs} s; last error: {reason}"
    )]
    Unreachable {
        location: String,
        attempts: u32,
        secs: u64,
        reason: String,
    },
}

impl StoreError {
    /// The same failure, described as the job queue's.
    pub fn into_queue(self) -> StoreError {
        match self {
            StoreError::Unreadable { location, reason }
            | StoreError::Write { location, reason } => StoreError::Queue { location, reason },
            other => other,
        }
    }
}
