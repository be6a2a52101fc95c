//! Why a preflight could not prove the fleet fits, with the reference's message texts, and
//! why evidence could not be had (shared by the evidence sources and the document readers).
//!
//! Every [`PreflightError`] fails closed (exit 1). [`PreflightError::message`] is the operator
//! text and may name a capacity block ID, as the reference does; publication goes through
//! [`super::reservations::BlockLabels::redact`].

use super::reservations::{ReservationShortfall, reservation_shortfall_message};

/// Reference text when capacity block groups cannot be read.
pub const CAPACITY_UNREADABLE: &str =
    "could not read capacity block groups; refusing to bypass STRICT reservation preflight";

/// Why evidence could not be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvidenceError {
    /// Nothing usable came back (missing file, failed call, empty output); the text says why.
    #[error("{0}")]
    Unreadable(String),
    /// A document came back but breaks the fail-closed rules; the text is the reference message.
    #[error("{0}")]
    Malformed(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PreflightError {
    /// Something preflight needs before it can look at evidence (tenant, region) is unknown.
    Unresolved(String),
    /// One block backs pools of different platform or fabric.
    IncompatiblePools { block_id: String },
    /// Capacity block groups were needed and could not be read or were malformed.
    CapacityUnreadable { cause: String },
    /// At least one STRICT reservation cannot be served.
    ReservationShortfalls(Vec<ReservationShortfall>),
    /// The allowance list was needed and could not be read.
    AllowancesUnreadable { region: String, cause: String },
    /// The allowance list breaks a fail-closed rule; the text is the reference message.
    AllowancesMalformed(String),
    /// A needed, non-optional quota is not in the tenant catalog for the region.
    MissingAllowances {
        region: String,
        names: Vec<String>,
        /// What the tenant's allowances suggest is wrong, one line each after the sentence.
        hints: Vec<String>,
    },
}

impl PreflightError {
    /// The operator message.
    pub fn message(&self) -> String {
        match self {
            PreflightError::Unresolved(message) => message.clone(),
            PreflightError::IncompatiblePools { block_id } => {
                format!("one capacity_block_group cannot back incompatible GPU pools: {block_id}")
            }
            PreflightError::CapacityUnreadable { cause } => {
                with_cause(CAPACITY_UNREADABLE.to_string(), cause)
            }
            PreflightError::ReservationShortfalls(shortfalls) => {
                reservation_shortfall_message(shortfalls)
            }
            PreflightError::AllowancesUnreadable { region, cause } => with_cause(
                format!(
                    "could not read tenant quota allowances for {region}; refusing to create projects or resources without capacity evidence"
                ),
                cause,
            ),
            PreflightError::AllowancesMalformed(message) => message.clone(),
            PreflightError::MissingAllowances {
                region,
                names,
                hints,
            } => {
                let mut out = format!(
                    "tenant quota response for {region} omitted required allowances: {}",
                    names.join(", ")
                );
                for hint in hints {
                    out.push('\n');
                    out.push_str(hint);
                }
                out
            }
        }
    }
}

impl std::fmt::Display for PreflightError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message())
    }
}

impl std::error::Error for PreflightError {}

/// The reference sentence first, then why, on its own line.
fn with_cause(message: String, cause: &str) -> String {
    if cause.is_empty() {
        message
    } else {
        format!("{message}\n  {cause}")
    }
}
