//! The preflight itself (`preflight_region` for every region, §4.1 step 6) and the budget it
//! yields: per region and quota, what is needed, used, allowed and left, and the verdict.
//!
//! Regions are checked in sorted order. In each: reservations first (a failure stops at once,
//! before any quota is read), then tenant allowances. Evidence is read lazily and once, and
//! only when something needs it, so a fleet with nothing to add needs no evidence at all.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::allowances::{Allowance, AllowanceDocument, UsageSource, parse_allowances};
use super::error::{EvidenceError, PreflightError};
use super::evidence::QuotaEvidence;
use super::names;
use super::reservations::{
    BlockLabels, CapacityBlockDocument, ReservationShortfall, check_requirement, index_blocks,
};
use super::scope::{FleetDemand, RegionDemand};
use super::shortfall::{QuotaShortfall, find_shortfalls, shortfall_message};
use super::target::TargetKey;

/// How one quota fares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The remaining allowance covers the need.
    Fits,
    /// The remaining allowance is below the need; this blocks the change.
    Short,
    /// The tenant allowance has no limit.
    Unlimited,
    /// An optional topology quota the regional catalog does not advertise.
    NotQuotaControlled,
}

/// One row of the budget.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BudgetRow {
    pub region: String,
    pub quota: String,
    /// `byte`, `count`, `gpu` or `vcpu`.
    pub unit: String,
    pub needed: u128,
    pub usage: Option<u64>,
    pub limit: Option<u64>,
    pub available: Option<u64>,
    /// `available − needed`: what is left after the change; negative when short.
    pub headroom: Option<i128>,
    pub usage_evidence: Option<UsageSource>,
    pub verdict: Verdict,
    /// How much is missing, when short.
    pub shortfall: Option<u128>,
}

/// One capacity block requirement and how the block fares. Holds no block ID.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReservationCheck {
    pub region: String,
    /// `#<n>`, stable across the report.
    pub block: String,
    pub platform: String,
    pub fabric: String,
    pub required_gpus: u128,
    /// Free GPUs of the block, when the block was found and its usage is known.
    pub available_gpus: Option<u64>,
    /// Why the block cannot serve the requirement; `None` when it can.
    pub reason: Option<String>,
    pub targets: Vec<TargetKey>,
}

/// What preflight found for one region.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RegionOutcome {
    pub region: String,
    pub reservations: Vec<ReservationCheck>,
    pub rows: Vec<BudgetRow>,
    /// Whether the region's quotas were compared with allowances (false after an error).
    pub checked: bool,
}

/// The whole result.
#[derive(Debug, Clone)]
pub struct PreflightReport {
    pub tenant_id: String,
    pub demand: FleetDemand,
    pub labels: BlockLabels,
    pub regions: Vec<RegionOutcome>,
    /// In region order, then quota name order.
    pub shortfalls: Vec<QuotaShortfall>,
    /// Set when preflight stopped before proving anything further.
    pub error: Option<PreflightError>,
}

impl PreflightReport {
    /// Everything fits and every piece of evidence needed was read.
    pub fn fits(&self) -> bool {
        self.error.is_none() && self.shortfalls.is_empty()
    }

    /// Evidence was complete and something does not fit: a quota or a capacity block.
    pub fn blocked(&self) -> bool {
        match &self.error {
            None => !self.shortfalls.is_empty(),
            Some(error) => matches!(error, PreflightError::ReservationShortfalls(_)),
        }
    }

    /// Capacity blocks that cannot serve the fleet.
    pub fn failed_reservations(&self) -> impl Iterator<Item = &ReservationCheck> {
        self.reservation_checks().filter(|c| c.reason.is_some())
    }

    /// 0 when everything fits, 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        if self.fits() { 0 } else { 1 }
    }

    /// The operator message of a failed preflight (it may name the tenant and block IDs).
    pub fn message(&self) -> Option<String> {
        if let Some(error) = &self.error {
            return Some(error.message());
        }
        (!self.shortfalls.is_empty()).then(|| shortfall_message(&self.shortfalls, &self.tenant_id))
    }

    /// The same message with every capacity block ID replaced by its public label.
    pub fn public_message(&self) -> Option<String> {
        self.message().map(|m| self.labels.redact(&m))
    }

    /// Every row, region by region.
    pub fn rows(&self) -> impl Iterator<Item = &BudgetRow> {
        self.regions.iter().flat_map(|r| r.rows.iter())
    }

    /// Every reservation check, region by region.
    pub fn reservation_checks(&self) -> impl Iterator<Item = &ReservationCheck> {
        self.regions.iter().flat_map(|r| r.reservations.iter())
    }
}

/// Public labels for every block the demand names, numbered in region order.
pub fn block_labels(demand: &FleetDemand) -> BlockLabels {
    let mut labels = BlockLabels::default();
    for region in &demand.regions {
        for requirement in &region.reservations {
            labels.register(&requirement.block_id);
        }
        if let Some(block_id) = &region.reservation_conflict {
            labels.register(block_id);
        }
    }
    labels
}

/// Evidence read at most once per run.
struct Cached<'a> {
    source: &'a dyn QuotaEvidence,
    tenant_id: &'a str,
    allowances: Option<Result<AllowanceDocument, EvidenceError>>,
    blocks: Option<Result<CapacityBlockDocument, EvidenceError>>,
}

impl Cached<'_> {
    fn allowances(&mut self) -> &Result<AllowanceDocument, EvidenceError> {
        self.allowances
            .get_or_insert_with(|| self.source.allowances(self.tenant_id))
    }

    fn blocks(&mut self) -> &Result<CapacityBlockDocument, EvidenceError> {
        self.blocks
            .get_or_insert_with(|| self.source.capacity_block_groups(self.tenant_id))
    }
}

/// Runs preflight for every region of `demand` against the tenant's evidence. Progress lines
/// (the reference's `on_status` texts) go to `progress`.
pub fn run_preflight(
    demand: FleetDemand,
    tenant_id: &str,
    evidence: &dyn QuotaEvidence,
    progress: &mut dyn FnMut(&str),
) -> PreflightReport {
    let mut report = PreflightReport {
        tenant_id: tenant_id.to_string(),
        labels: block_labels(&demand),
        regions: Vec::new(),
        shortfalls: Vec::new(),
        error: None,
        demand: FleetDemand::default(),
    };
    for target in &demand.unchanged {
        progress(&format!(
            "capacity/quota preflight: {target} is provider-verified and unchanged; incremental demand is zero"
        ));
    }
    for skipped in &demand.skipped {
        progress(&format!(
            "capacity/quota preflight: {} is a {} target; not counted here",
            skipped.target, skipped.backend
        ));
    }
    let mut cached = Cached {
        source: evidence,
        tenant_id,
        allowances: None,
        blocks: None,
    };
    for region in &demand.regions {
        progress(&format!(
            "capacity/quota preflight: {} cluster(s) in {}",
            region.targets.len(),
            region.region
        ));
        let mut outcome = RegionOutcome {
            region: region.region.clone(),
            ..RegionOutcome::default()
        };
        let result = check_region(region, &mut cached, &report.labels, &mut outcome, progress);
        report.regions.push(outcome);
        match result {
            Ok(shortfalls) => report.shortfalls.extend(shortfalls),
            Err(error) => {
                report.error = Some(error);
                break;
            }
        }
    }
    report.demand = demand;
    report
}

fn check_region(
    region: &RegionDemand,
    cached: &mut Cached<'_>,
    labels: &BlockLabels,
    outcome: &mut RegionOutcome,
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<QuotaShortfall>, PreflightError> {
    if let Some(block_id) = &region.reservation_conflict {
        return Err(PreflightError::IncompatiblePools {
            block_id: block_id.clone(),
        });
    }
    if !region.reservations.is_empty() {
        check_reservations(region, cached, labels, outcome, progress)?;
    }
    if region.quotas.is_empty() {
        outcome.checked = true;
        return Ok(Vec::new());
    }
    let tenant_id = cached.tenant_id;
    let document = match cached.allowances() {
        Ok(document) => document,
        Err(EvidenceError::Unreadable(cause)) => {
            return Err(PreflightError::AllowancesUnreadable {
                region: region.region.clone(),
                cause: cause.clone(),
            });
        }
        Err(EvidenceError::Malformed(message)) => {
            return Err(PreflightError::AllowancesMalformed(message.clone()));
        }
    };
    let needed: BTreeSet<&str> = region.quotas.names().collect();
    let allowances = parse_allowances(document, &region.region, &needed, tenant_id)
        .map_err(|e| PreflightError::AllowancesMalformed(e.0))?;
    let missing: Vec<&str> = needed
        .iter()
        .copied()
        .filter(|name| !allowances.contains_key(*name))
        .collect();
    let required_missing: Vec<String> = missing
        .iter()
        .filter(|name| !names::is_optional(name))
        .map(|name| name.to_string())
        .collect();
    if !required_missing.is_empty() {
        let hints = missing_hints(document, &region.region, &required_missing);
        return Err(PreflightError::MissingAllowances {
            region: region.region.clone(),
            names: required_missing,
            hints,
        });
    }
    for name in &missing {
        progress(&format!(
            "quota {name} [{}]: unadvertised optional quota in completed tenant catalog; treating it as not quota-controlled in this region",
            region.region
        ));
    }
    for (name, needed) in region.quotas.iter() {
        let Some(allowance) = allowances.get(name) else {
            continue;
        };
        let unit = match allowance.unit() {
            "" => String::new(),
            u => format!(" {u}"),
        };
        // The reference's text first, exactly; byte quotas then say it in binary units too,
        // as the budget table does, so nobody counts digits.
        let human = |available: Option<u64>| {
            if !super::names::is_byte_quota(name) {
                return String::new();
            }
            let needs = super::shortfall::format_amount(name, needed);
            match available {
                Some(a) => format!(
                    "; in binary units: needs {needs}, {} available",
                    super::shortfall::format_amount(name, u128::from(a))
                ),
                None => format!("; in binary units: needs {needs}"),
            }
        };
        progress(&match allowance {
            Allowance::Unlimited { .. } => format!(
                "quota {name} [{}]: needs {needed}{unit}; tenant allowance is unlimited{}",
                region.region,
                human(None)
            ),
            Allowance::Finite(f) => format!(
                "quota {name} [{}]: needs {needed}{unit}; {} available from limit {} (usage evidence: {}){}",
                region.region,
                f.available,
                f.limit,
                f.usage_source.as_str(),
                human(Some(f.available))
            ),
        });
    }
    outcome.rows = budget_rows(&region.region, region, &allowances);
    outcome.checked = true;
    Ok(find_shortfalls(&region.quotas, &allowances, &region.region))
}

fn check_reservations(
    region: &RegionDemand,
    cached: &mut Cached<'_>,
    labels: &BlockLabels,
    outcome: &mut RegionOutcome,
    progress: &mut dyn FnMut(&str),
) -> Result<(), PreflightError> {
    let tenant_id = cached.tenant_id;
    let blocks = match cached.blocks() {
        Ok(blocks) => blocks,
        Err(e) => {
            return Err(PreflightError::CapacityUnreadable {
                cause: e.to_string(),
            });
        }
    };
    let indexed = index_blocks(blocks);
    let mut shortfalls = Vec::new();
    for requirement in &region.reservations {
        let block = indexed.get(requirement.block_id.as_str()).copied();
        let reason = check_requirement(requirement, block, tenant_id);
        if let Some(reason) = &reason {
            shortfalls.push(ReservationShortfall {
                block_id: requirement.block_id.clone(),
                reason: reason.clone(),
            });
        }
        outcome.reservations.push(ReservationCheck {
            region: region.region.clone(),
            block: labels.label(&requirement.block_id),
            platform: requirement.platform.clone(),
            fabric: requirement.fabric.clone(),
            required_gpus: requirement.required_gpus,
            available_gpus: block
                .filter(|b| b.parent_id == tenant_id)
                .and_then(|b| b.available_gpus()),
            reason,
            targets: requirement.targets.clone(),
        });
    }
    if !shortfalls.is_empty() {
        return Err(PreflightError::ReservationShortfalls(shortfalls));
    }
    let reserved: u128 = region.reservations.iter().map(|r| r.required_gpus).sum();
    progress(&format!(
        "validated {reserved} GPU(s) against {} active capacity block group(s); ordinary GPU quota excluded",
        region.reservations.len()
    ));
    Ok(())
}

fn budget_rows(
    region_name: &str,
    region: &RegionDemand,
    allowances: &BTreeMap<String, Allowance>,
) -> Vec<BudgetRow> {
    region
        .quotas
        .iter()
        .map(|(name, needed)| {
            let mut row = BudgetRow {
                region: region_name.to_string(),
                quota: name.to_string(),
                unit: names::default_unit(name).to_string(),
                needed,
                usage: None,
                limit: None,
                available: None,
                headroom: None,
                usage_evidence: None,
                verdict: Verdict::NotQuotaControlled,
                shortfall: None,
            };
            match allowances.get(name) {
                Some(Allowance::Finite(f)) => {
                    if !f.unit.is_empty() {
                        row.unit = f.unit.clone();
                    }
                    let needed_signed = i128::try_from(needed).unwrap_or(i128::MAX);
                    let short = needed > u128::from(f.available);
                    row.usage = Some(f.usage);
                    row.limit = Some(f.limit);
                    row.available = Some(f.available);
                    row.headroom = Some(i128::from(f.available) - needed_signed);
                    row.usage_evidence = Some(f.usage_source);
                    row.verdict = if short { Verdict::Short } else { Verdict::Fits };
                    row.shortfall = short.then(|| needed - u128::from(f.available));
                }
                Some(Allowance::Unlimited { unit }) => {
                    if !unit.is_empty() {
                        row.unit = unit.clone();
                    }
                    row.verdict = Verdict::Unlimited;
                }
                None => {}
            }
            row
        })
        .collect()
}

/// What the tenant's own allowances say about quotas it lacks: none at all in the region reads
/// as the wrong tenant (or region), and a GPU quota it lacks as a platform it does not have
/// there, with the GPU platforms it does have.
fn missing_hints(
    document: &crate::quota::allowances::AllowanceDocument,
    region: &str,
    missing: &[String],
) -> Vec<String> {
    const GPU: &str = "compute.instance.gpu.";
    let here: BTreeSet<&str> = document
        .items
        .iter()
        .filter(|r| r.region == region && !r.name.is_empty())
        .map(|r| r.name.as_str())
        .collect();
    if here.is_empty() {
        return vec![format!(
            "the tenant has no quota allowance at all in {region}: check the tenant ID (--tenant-id, FLEETBOT_TENANT_ID or the spec's tenant_id) and the region"
        )];
    }
    let known: Vec<&str> = here.iter().filter_map(|n| n.strip_prefix(GPU)).collect();
    let known = if known.is_empty() {
        "none".to_string()
    } else {
        known.join(", ")
    };
    missing
        .iter()
        .filter_map(|name| name.strip_prefix(GPU))
        .map(|gpu| {
            format!(
                "GPU type {gpu:?}: the tenant has no allowance for it in {region} (GPU types with allowances there: {known}); check the pool's platform"
            )
        })
        .collect()
}
