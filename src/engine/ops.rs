//! Deploy, destroy and status: the engine's mutations, ordered so that every validation,
//! identity check and the preflight happen before the first mutation, and recorded in the
//! inventory as they happen so a restart at any point converges.
//!
//! This module is the facade; each command and each shared piece lives in its own file below.

mod apply;
mod apply_addons;
mod apply_project;
mod apply_target;
mod catalogue;
mod deploy;
mod deploy_result;
mod destroy;
mod destroy_target;
mod error;
mod keys;
mod object_storage;
mod options;
mod prepare;
mod progress;
mod prune;
mod reach;
mod records;
mod since_plan;
mod status;

// The mutating calls are the crate's own: `fleet::apply` is the one door to them.
pub(crate) use deploy::deploy_prepared;
pub use deploy_result::{BackendCounts, DeployResult, TargetResult};
pub(crate) use destroy::destroy;
pub use destroy::{DestroyEntry, DestroyResult};
pub use error::{EngineError, ErrorSource, Refusal};
pub use object_storage::{
    KEY_DESCRIPTION, ObjectStorageResult, PROBE_PREFIX, SERVICE_ACCOUNT, read_back_mismatch,
};
pub use options::{Destruction, LifecycleOptions, SelectError, parse_selector, select};
pub use prepare::{Prepared, prepare};
pub use progress::{Event, Outcome, Progress, What, quiet};
pub use reach::{DeployedCluster, deployed_clusters};
pub use status::{StatusEntry, StatusResult, status};

pub use crate::engine::target_status::{NOT_FAILED, TargetStatus};

use crate::engine::live::LivePlan;

/// Whether every action of a plan is a no-op (for "deploy again → no mutation").
pub fn plan_is_quiet(plan: &LivePlan) -> bool {
    plan.is_quiet()
}
