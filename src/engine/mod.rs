//! The fleet engine: from a validated spec to plans (static and live), and to applied cloud
//! state through deploy, destroy and status.

pub mod addons;
pub mod desired;
pub mod live;
pub mod ops;
pub mod preflight;
pub mod soperator;
pub mod static_plan;
pub mod target_status;

pub use static_plan::{FleetPlan, PlanOptions, plan};
