//! The fleet engine: from a validated spec to plans (and, later, to applied cloud state).

pub mod static_plan;

pub use static_plan::{FleetPlan, PlanOptions, plan};
