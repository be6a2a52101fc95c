//! What the report shows of a fleet's quota budget.

use serde::Serialize;

use crate::quota::Verdict as QuotaVerdict;

/// The quota budget of one fleet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BudgetReport {
    pub status: BudgetStatus,
    pub rows: Vec<BudgetLine>,
    /// `quota in region: short by N` lines (and failed capacity blocks).
    pub blocked_by: Vec<String>,
    /// Why the budget stopped or was not checked (public text).
    pub note: Option<String>,
}

/// The budget's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BudgetStatus {
    Fits,
    Short,
    /// Evidence was missing, unreadable or incomplete.
    Unproven,
    /// No quota source is configured for this installation.
    NotChecked,
}

/// One row of the budget table; amounts already formatted with their unit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BudgetLine {
    pub region: String,
    pub quota: String,
    pub needed: String,
    pub in_use: String,
    pub limit: String,
    pub available: String,
    pub after: String,
    pub verdict: QuotaVerdict,
}
