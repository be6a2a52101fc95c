//! The plan of a spec alone, without a cloud (`fleetbot plan`, the pull request's plan when no
//! cloud is configured): the engine makes it, and callers read it here.

pub use crate::engine::static_plan::{
    ClusterPlan, Mk8sClusterPlan, ObjectStoragePlan, ProjectPlan, SoperatorClusterPlan, write_text,
};
pub use crate::engine::{FleetPlan, PlanOptions, plan};
