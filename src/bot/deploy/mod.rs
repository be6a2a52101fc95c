//! Merge to deploy: the apply job ([`job`]) and the names the App's apply surface keeps
//! stable. What may be applied is decided by [`crate::fleet::guard`]; what applying needs is
//! [`crate::fleet::backend`].

pub mod job;
mod progress;
mod specs;

/// The name of the apply check run (stable: branch protection and people look for it).
pub const APPLY_CHECK: &str = "fleet/apply";
/// The job kind of an apply.
pub const APPLY_JOB: &str = crate::store::queue::JobKind::Apply.as_str();
/// The check run button that applies (its `requested_action` identifier).
pub const APPLY_ACTION: &str = "apply";
