//! Preflight: what a fleet needs from the tenant's quotas and capacity blocks, what the tenant
//! has left, and whether the change fits (fleet-engine §4).
//!
//! The pieces, in the order a run uses them:
//!
//! * [`scope`] picks the charged targets (selectors, proven-unchanged targets, new projects and
//!   buckets), each named by a [`target::TargetKey`], and groups them by region;
//! * [`demand`] turns each into quota amounts, [`reservations`] into capacity block needs;
//! * [`evidence`] supplies allowances and block groups ([`json`] reads the CLI's documents,
//!   [`allowances`] reads allowance records fail-closed) or an [`error::EvidenceError`];
//! * [`budget`] compares, region by region, and [`shortfall`] words the blocking message;
//! * [`render`] shows the budget as text, Markdown and JSON.
//!
//! Everything but [`evidence`]'s file reading is pure. The command that drives a run
//! (`fleetbot preflight`) is the CLI's, in `cli::preflight_run`.

pub mod allowances;
pub mod budget;
pub mod demand;
pub mod error;
pub mod evidence;
pub mod fraction;
pub mod json;
pub mod names;
pub mod render;
pub mod reservations;
pub mod scope;
pub mod shortfall;
pub mod target;
pub mod wire;

pub use allowances::{Allowance, AllowanceDocument, AllowanceRecord, parse_allowances};
pub use budget::{BudgetRow, PreflightReport, ReservationCheck, Verdict, run_preflight};
pub use demand::{Demand, cluster_demand, gpu_family, required_quotas};
pub use error::{EvidenceError, PreflightError};
pub use evidence::{InMemoryEvidence, OfflineEvidence, QuotaEvidence};
pub use reservations::{
    CapacityBlockDocument, CapacityBlockGroup, ReservationRequirement, required_reservations,
};
pub use scope::{
    FleetDemand, ProvenState, RegionDemand, ScopeOptions, Selection, UnchangedEvidence,
    fleet_demand,
};
pub use shortfall::{QuotaShortfall, find_shortfalls, shortfall_message};
pub use target::TargetKey;

/// A tenant as public surfaces may name it: `t` and the first 12 hex digits of its SHA-256,
/// the same for the same tenant everywhere (the dashboard, reviewed plans), never the ID.
pub fn tenant_label(tenant_id: &str) -> String {
    use sha2::{Digest, Sha256};
    if tenant_id.is_empty() {
        return String::new();
    }
    let digest = Sha256::digest(tenant_id.as_bytes());
    format!("t{}", &hex::encode(digest)[..12])
}
