//! Tenant quota allowances (§4.6): the records a source yields, and the fail-closed reading of
//! them into one limit per quota name for a region.
//!
//! An unreadable, incomplete, ambiguous or wrongly typed allowance is never taken as proof that
//! something fits; each such case has its own message, worded as the reference words it.

use std::collections::{BTreeMap, BTreeSet};

use super::fraction::Decimal;
use super::names::{STATE_ACTIVE, USAGE_STATE_NOT_USED, compatible_units};
use super::wire::Wire;
use crate::spec::names::py_repr;

/// The `status` of an allowance as it arrived.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum StatusField {
    #[default]
    Absent,
    /// Sent, but not a mapping.
    NotAMapping,
    Present(AllowanceStatus),
}

/// `QuotaAllowanceStatus`, the fields preflight reads.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AllowanceStatus {
    pub state: String,
    /// Trimmed and lower-cased by the source.
    pub unit: String,
    pub usage: Wire<u64>,
    pub usage_percentage: Wire<String>,
    pub usage_state: String,
}

/// One `QuotaAllowance` record.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AllowanceRecord {
    /// The quota name (`metadata.name`).
    pub name: String,
    /// `metadata.parent_id`; empty on legacy unscoped records.
    pub parent_id: String,
    /// `metadata.container_id`, which older payloads carry instead of `parent_id`.
    pub container_id: String,
    /// `spec.region`.
    pub region: String,
    /// `spec.limit`; absent means unlimited.
    pub limit: Wire<u64>,
    pub status: StatusField,
}

/// A quota allowance list as a source read it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AllowanceDocument {
    pub items: Vec<AllowanceRecord>,
    /// Non-empty means the list is incomplete.
    pub next_page_token: String,
}

/// Where a finite allowance's usage came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum UsageSource {
    /// `status.usage`.
    #[serde(rename = "exact")]
    Exact,
    /// `status.usage_percentage`.
    #[serde(rename = "fraction")]
    Fraction,
    /// `status.usage_state == USAGE_STATE_NOT_USED`.
    #[serde(rename = "not-used")]
    NotUsed,
}

impl UsageSource {
    pub fn as_str(self) -> &'static str {
        match self {
            UsageSource::Exact => "exact",
            UsageSource::Fraction => "fraction",
            UsageSource::NotUsed => "not-used",
        }
    }
}

/// A finite allowance with proven remaining capacity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FiniteAllowance {
    pub limit: u64,
    pub usage: u64,
    pub available: u64,
    pub unit: String,
    pub usage_source: UsageSource,
}

/// What the tenant may still use of one quota in one region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Allowance {
    Finite(FiniteAllowance),
    /// No limit at this container; the unit is empty when no record reported one.
    Unlimited {
        unit: String,
    },
}

impl Allowance {
    pub fn unit(&self) -> &str {
        match self {
            Allowance::Finite(f) => &f.unit,
            Allowance::Unlimited { unit } => unit,
        }
    }

    pub fn is_unlimited(&self) -> bool {
        matches!(self, Allowance::Unlimited { .. })
    }
}

/// Why an allowance list cannot be used; the text is the message shown.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct AllowanceError(pub String);

impl AllowanceError {
    fn unusable(name: &str) -> AllowanceError {
        AllowanceError(format!(
            "quota {} has unusable capacity evidence",
            py_repr(name)
        ))
    }

    fn incompatible_unit(name: &str, unit: &str) -> AllowanceError {
        AllowanceError(format!(
            "quota {} reported incompatible unit {}; expected one of: {}",
            py_repr(name),
            py_repr(unit),
            compatible_units(name).join(", ")
        ))
    }
}

/// Message for a list that ends with a page token.
pub const INCOMPLETE: &str = "quota allowance JSON is incomplete after paginated read";

/// Reads `document` for `region` (`_select_allowance` over `parse_allowances`).
///
/// Records are kept when their name is non-empty, their region is `region` and, when
/// `required` is non-empty, their name is required. `container_id` is the tenant: when any
/// candidate is scoped to it, only those count; unscoped legacy candidates count only when no
/// tenant-scoped one exists; candidates scoped elsewhere (projects) never count.
pub fn parse_allowances(
    document: &AllowanceDocument,
    region: &str,
    required: &BTreeSet<&str>,
    container_id: &str,
) -> Result<BTreeMap<String, Allowance>, AllowanceError> {
    if !document.next_page_token.is_empty() {
        return Err(AllowanceError(INCOMPLETE.to_string()));
    }
    let mut grouped: BTreeMap<&str, Vec<(&str, &AllowanceRecord)>> = BTreeMap::new();
    for record in &document.items {
        let name = record.name.as_str();
        if name.is_empty() || record.region != region {
            continue;
        }
        if !required.is_empty() && !required.contains(name) {
            continue;
        }
        let scope = match (record.parent_id.as_str(), record.container_id.as_str()) {
            (p, c) if !p.is_empty() && !c.is_empty() && p != c => {
                return Err(AllowanceError(format!(
                    "quota {} has conflicting container metadata",
                    py_repr(name)
                )));
            }
            ("", c) => c,
            (p, _) => p,
        };
        grouped.entry(name).or_default().push((scope, record));
    }
    let mut indexed = BTreeMap::new();
    for (name, candidates) in grouped {
        if let Some(selected) = select_allowance(name, &candidates, container_id)? {
            indexed.insert(name.to_string(), selected);
        }
    }
    Ok(indexed)
}

fn select_allowance(
    name: &str,
    candidates: &[(&str, &AllowanceRecord)],
    container_id: &str,
) -> Result<Option<Allowance>, AllowanceError> {
    let selected: Vec<&AllowanceRecord> = if container_id.is_empty() {
        candidates.iter().map(|(_, r)| *r).collect()
    } else {
        let authoritative: Vec<&AllowanceRecord> = candidates
            .iter()
            .filter(|(scope, _)| *scope == container_id)
            .map(|(_, r)| *r)
            .collect();
        if authoritative.is_empty() {
            candidates
                .iter()
                .filter(|(scope, _)| scope.is_empty())
                .map(|(_, r)| *r)
                .collect()
        } else {
            // An authoritative unlimited record beside a finite legacy one is a contradiction,
            // not proof of infinity.
            let all_unlimited = authoritative.iter().all(|r| r.limit.is_absent());
            let finite_unscoped = candidates
                .iter()
                .any(|(scope, r)| scope.is_empty() && !r.limit.is_absent());
            if all_unlimited && finite_unscoped {
                return Err(AllowanceError(format!(
                    "quota {} has ambiguous scoped/unscoped candidates",
                    py_repr(name)
                )));
            }
            authoritative
        }
    };
    if selected.is_empty() {
        return Ok(None);
    }
    let finite: Vec<&AllowanceRecord> = selected
        .iter()
        .copied()
        .filter(|r| !r.limit.is_absent())
        .collect();
    if !finite.is_empty() {
        let parsed = finite
            .iter()
            .map(|r| finite_allowance(name, r))
            .collect::<Result<Vec<_>, _>>()?;
        if parsed.iter().any(|p| *p != parsed[0]) {
            return Err(AllowanceError(format!(
                "quota {} has ambiguous finite candidates",
                py_repr(name)
            )));
        }
        return Ok(Some(Allowance::Finite(parsed[0].clone())));
    }
    let units = selected
        .iter()
        .map(|r| unlimited_unit(name, r))
        .collect::<Result<Vec<_>, _>>()?;
    let distinct: BTreeSet<&str> = units
        .iter()
        .map(String::as_str)
        .filter(|u| !u.is_empty())
        .collect();
    if distinct.len() > 1 {
        return Err(AllowanceError(format!(
            "quota {} has ambiguous unlimited candidates",
            py_repr(name)
        )));
    }
    Ok(Some(Allowance::Unlimited {
        unit: distinct.into_iter().next().unwrap_or_default().to_string(),
    }))
}

/// Interprets a record with a limit. Checked in the reference's order: limit, status, state,
/// unit, usage; every failure but a wrong unit reads "unusable capacity evidence".
fn finite_allowance(
    name: &str,
    record: &AllowanceRecord,
) -> Result<FiniteAllowance, AllowanceError> {
    let Wire::Value(limit) = record.limit else {
        return Err(AllowanceError::unusable(name));
    };
    let StatusField::Present(status) = &record.status else {
        return Err(AllowanceError::unusable(name));
    };
    if !status.state.is_empty() && status.state != STATE_ACTIVE {
        return Err(AllowanceError::unusable(name));
    }
    if !compatible_units(name).contains(&status.unit.as_str()) {
        return Err(AllowanceError::incompatible_unit(name, &status.unit));
    }
    let (usage, available, usage_source) = match (&status.usage, &status.usage_percentage) {
        (Wire::Value(usage), _) => (*usage, limit.saturating_sub(*usage), UsageSource::Exact),
        (Wire::Invalid, _) => return Err(AllowanceError::unusable(name)),
        (Wire::Absent, Wire::Value(text)) => {
            // A 0..1 fraction that may exceed 1 when consumption is over the allowance.
            let fraction = Decimal::parse(text).ok_or_else(|| AllowanceError::unusable(name))?;
            let available = fraction.remaining(limit);
            (limit - available, available, UsageSource::Fraction)
        }
        (Wire::Absent, Wire::Invalid) => return Err(AllowanceError::unusable(name)),
        (Wire::Absent, Wire::Absent) if status.usage_state == USAGE_STATE_NOT_USED => {
            (0, limit, UsageSource::NotUsed)
        }
        (Wire::Absent, Wire::Absent) => return Err(AllowanceError::unusable(name)),
    };
    Ok(FiniteAllowance {
        limit,
        usage,
        available,
        unit: status.unit.clone(),
        usage_source,
    })
}

/// Interprets a record without a limit and returns its unit (possibly empty). The status may
/// be absent; any state present must be active, any unit present must fit the quota.
fn unlimited_unit(name: &str, record: &AllowanceRecord) -> Result<String, AllowanceError> {
    let status = match &record.status {
        StatusField::Absent => return Ok(String::new()),
        StatusField::NotAMapping => {
            return Err(AllowanceError(format!(
                "quota {} has a non-mapping status",
                py_repr(name)
            )));
        }
        StatusField::Present(status) => status,
    };
    if !status.state.is_empty() && status.state != STATE_ACTIVE {
        return Err(AllowanceError(format!(
            "quota {} allowance state is not active: {}",
            py_repr(name),
            status.state
        )));
    }
    if !status.unit.is_empty() && !compatible_units(name).contains(&status.unit.as_str()) {
        return Err(AllowanceError::incompatible_unit(name, &status.unit));
    }
    Ok(status.unit.clone())
}
