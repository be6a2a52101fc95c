//! A fleet's quota budget for the report: the quota preflight run against the live or the
//! configured evidence, reduced to public rows and lines without the tenant.

use super::{QuotaInput, scrub_tenant};
use crate::bot::report::{BudgetLine, BudgetReport, BudgetStatus, plural};
use crate::fleet::live::LiveSpec;
use crate::quota::evidence::QuotaEvidence;
use crate::quota::render::{format_amount, format_signed};
use crate::quota::scope::{ProvenState, SOPERATOR_SKIP_REASON, ScopeOptions, fleet_demand};
use crate::quota::{BudgetRow, PreflightReport, Verdict as QuotaVerdict, run_preflight};
use crate::spec::FleetSpec;

/// A budget with no rows: only its status and why.
fn without_rows(status: BudgetStatus, note: Option<String>) -> BudgetReport {
    BudgetReport {
        status,
        rows: Vec::new(),
        blocked_by: Vec::new(),
        note,
    }
}

/// The budget against the configured evidence, when there is any.
pub(super) fn budget(spec: &FleetSpec, quota: Option<&QuotaInput<'_>>) -> BudgetReport {
    let Some(quota) = quota else {
        return without_rows(
            BudgetStatus::NotChecked,
            Some("no quota source is configured for this installation yet".into()),
        );
    };
    budget_against(
        spec,
        &ProvenState::default(),
        quota.tenant_id,
        quota.evidence,
    )
}

/// The budget against the live evidence, with what the live plan proved unchanged.
pub(super) fn live_budget(spec: &FleetSpec, live: &LiveSpec) -> BudgetReport {
    let proven = match &live.plan {
        Ok(Some(planned)) => planned.proven.clone(),
        _ => ProvenState::default(),
    };
    match &live.evidence {
        Ok(evidence) => budget_against(spec, &proven, &live.tenant_id, evidence.as_ref()),
        Err(e) => without_rows(
            BudgetStatus::Unproven,
            Some(scrub_tenant(
                &format!(
                    "could not read tenant quota allowances: {e}; refusing to create projects or resources without capacity evidence"
                ),
                &live.tenant_id,
            )),
        ),
    }
}

fn budget_against(
    spec: &FleetSpec,
    proven: &ProvenState,
    tenant_id: &str,
    evidence: &dyn QuotaEvidence,
) -> BudgetReport {
    let demand = match fleet_demand(spec, &ScopeOptions::default(), proven) {
        Ok(d) => d,
        Err(e) => return without_rows(BudgetStatus::Unproven, Some(e.to_string())),
    };
    // soperator targets are not charged by the mk8s quota preflight (as in the reference).
    let skipped = demand.skipped.len();
    let budgeted = demand.unchanged.len()
        + demand
            .regions
            .iter()
            .map(|r| r.targets.len())
            .sum::<usize>();
    let skip_note = (skipped > 0).then(|| {
        format!(
            "{skipped} soperator target{} not budgeted here: {SOPERATOR_SKIP_REASON}",
            plural(skipped),
        )
    });
    if budgeted == 0 && skipped > 0 {
        return without_rows(BudgetStatus::NotChecked, skip_note);
    }
    let report = run_preflight(demand, tenant_id, evidence, &mut |_| {});
    let mut budget = budget_from(&report, tenant_id);
    if let Some(skip) = skip_note {
        budget.note = Some(match budget.note.take() {
            Some(note) => format!("{note}; {skip}"),
            None => skip,
        });
    }
    budget
}

/// The public budget of a preflight report; the tenant never appears.
fn budget_from(report: &PreflightReport, tenant_id: &str) -> BudgetReport {
    let status = if report.fits() {
        BudgetStatus::Fits
    } else if report.blocked() {
        BudgetStatus::Short
    } else {
        BudgetStatus::Unproven
    };
    let note = if report.fits() || report.blocked() {
        None
    } else {
        report.public_message()
    };
    BudgetReport {
        status,
        rows: report.rows().map(budget_line).collect(),
        blocked_by: blocked_by(report)
            .into_iter()
            .map(|line| scrub_tenant(&line, tenant_id))
            .collect(),
        note: note.map(|text| scrub_tenant(&text, tenant_id)),
    }
}

/// An amount the report may not have (no usage read, no limit).
fn maybe_amount(quota: &str, value: Option<u64>) -> String {
    value.map_or_else(|| "-".into(), |v| format_amount(quota, v.into()))
}

fn budget_line(r: &BudgetRow) -> BudgetLine {
    BudgetLine {
        region: r.region.clone(),
        quota: r.quota.clone(),
        needed: format_amount(&r.quota, r.needed),
        in_use: maybe_amount(&r.quota, r.usage),
        limit: maybe_amount(&r.quota, r.limit),
        available: maybe_amount(&r.quota, r.available),
        after: r
            .headroom
            .map_or_else(|| "-".into(), |h| format_signed(&r.quota, h)),
        verdict: r.verdict,
    }
}

/// One line per short quota and per capacity block that failed.
fn blocked_by(report: &PreflightReport) -> Vec<String> {
    let short = report
        .rows()
        .filter(|r| r.verdict == QuotaVerdict::Short)
        .map(|r| {
            format!(
                "{} in {}: needs {}, {} available, short by {}",
                r.quota,
                r.region,
                format_amount(&r.quota, r.needed),
                maybe_amount(&r.quota, r.available),
                format_amount(&r.quota, r.shortfall.unwrap_or(0)),
            )
        });
    let reservations = report.failed_reservations().map(|c| {
        format!(
            "capacity block {} ({}) in {}: {}",
            c.block,
            c.platform,
            c.region,
            c.reason.as_deref().unwrap_or_default()
        )
    });
    short.chain(reservations).collect()
}
