//! The live plan: read what exists, diff it field by field against the desired state, and list
//! the actions (create, update, replace, delete, no change) with their reasons.
//!
//! The plan names resources, never cloud IDs, so it can be shown on a pull request; the IDs the
//! apply step needs travel beside it in [`Observed`]. When the whole spec is selected, targets
//! the inventory records that the spec no longer declares are planned as deletions (`prune`),
//! which only a deploy with prune applies.

mod addon_diff;
mod destructive;
mod observe;
mod plan;
mod project_diff;
mod prune;
mod reads;
mod render;
mod target_diff;
mod types;

pub use destructive::Destructive;
pub use observe::{Observed, ObservedProject, observe};
pub use plan::plan;
pub use project_diff::{SCHEDULED_BUCKET_ADVICE, bucket_name, choose_subnet};
pub use prune::{ObservedPrune, REMOVED_FROM_SPEC, observe_pruned};
pub use reads::ReadCache;
pub use target_diff::DETACHES_FILESYSTEM;
pub use types::{
    Action, Change, LivePlan, Problem, ProblemKind, ProjectPlan, ResourceAction, Summary,
    TargetPlan, target_key_of,
};
