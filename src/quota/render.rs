//! The budget as people and programs read it: a text table for terminals, Markdown for pull
//! request comments, and a JSON document.
//!
//! Markdown is meant for publication: it names no tenant, no project key and no capacity block
//! ID (blocks appear as `#<n>`), and counts rather than lists targets. Text and JSON are operator
//! output; they name the tenant and targets, but still never a block ID.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::budget::{BudgetRow, PreflightReport, ReservationCheck, Verdict};
use super::demand::Demand;

use super::scope::{RegionDemand, SkippedTarget};
use super::shortfall::thousands;

pub use super::shortfall::format_amount;

/// A signed amount (headroom): `+3 GPUs`, `-1 GPU`, `0 GPUs`.
pub fn format_signed(quota: &str, amount: i128) -> String {
    let magnitude = format_amount(quota, amount.unsigned_abs());
    match amount.signum() {
        1 => format!("+{magnitude}"),
        -1 => format!("-{magnitude}"),
        _ => magnitude,
    }
}

/// How a displayed row ends.
enum RowVerdict {
    Fits,
    /// Short by this much (formatted).
    Short(String),
    Unlimited,
    NotQuotaControlled,
    NotChecked,
}

impl RowVerdict {
    fn of(row: &BudgetRow) -> RowVerdict {
        match row.verdict {
            Verdict::Fits => RowVerdict::Fits,
            Verdict::Short => {
                RowVerdict::Short(format_amount(&row.quota, row.shortfall.unwrap_or(0)))
            }
            Verdict::Unlimited => RowVerdict::Unlimited,
            Verdict::NotQuotaControlled => RowVerdict::NotQuotaControlled,
        }
    }

    fn text(&self) -> String {
        match self {
            RowVerdict::Fits => "fits".into(),
            RowVerdict::Short(by) => format!("SHORT by {by}"),
            RowVerdict::Unlimited => "unlimited".into(),
            RowVerdict::NotQuotaControlled => "not quota-controlled".into(),
            RowVerdict::NotChecked => "not checked".into(),
        }
    }

    fn markdown(&self) -> String {
        match self {
            RowVerdict::Fits => "✅ fits".into(),
            RowVerdict::Short(by) => format!("❌ **short by {by}**"),
            other => other.text(),
        }
    }
}

/// A row as shown: quota, needed, in use, limit, available, after change; then the verdict.
struct DisplayRow {
    cells: [String; 6],
    verdict: RowVerdict,
}

fn opt_amount(quota: &str, value: Option<u64>) -> String {
    value.map_or_else(|| "-".to_string(), |v| format_amount(quota, u128::from(v)))
}

/// One line of the headline: fits, blocked (and by what), or could not prove.
fn headline(report: &PreflightReport) -> String {
    if report.fits() {
        return "fits".to_string();
    }
    if !report.blocked() {
        return "FAILED: capacity could not be proven".to_string();
    }
    let mut parts = Vec::new();
    if !report.shortfalls.is_empty() {
        parts.push(format!("{} quota(s) short", report.shortfalls.len()));
    }
    let blocks = report.failed_reservations().count();
    if blocks > 0 {
        parts.push(format!("{blocks} capacity block(s) cannot serve the fleet"));
    }
    format!("BLOCKED: {}", parts.join("; "))
}

fn summary(report: &PreflightReport) -> String {
    let demand = &report.demand;
    let new_projects: u128 = demand.regions.iter().map(|r| r.new_projects).sum();
    let new_buckets: usize = demand.regions.iter().map(|r| r.new_buckets.len()).sum();
    let mut text = format!(
        "{} target(s) charged in {} region(s); {} proven unchanged (no demand); {new_projects} new project(s); {new_buckets} new bucket(s)",
        demand.target_count(),
        demand.regions.len(),
        demand.unchanged.len(),
    );
    if !demand.skipped.is_empty() {
        let _ = write!(
            text,
            "; {} soperator target(s) not counted",
            demand.skipped.len()
        );
    }
    text
}

/// The rows shown for a region: the checked budget, or the bare demand when the region was
/// not (or not fully) checked.
fn display_rows(region: &RegionDemand, report: &PreflightReport) -> Vec<DisplayRow> {
    let outcome = report.regions.iter().find(|o| o.region == region.region);
    match outcome.filter(|o| o.checked) {
        Some(outcome) => outcome
            .rows
            .iter()
            .map(|row| DisplayRow {
                cells: [
                    row.quota.clone(),
                    format_amount(&row.quota, row.needed),
                    opt_amount(&row.quota, row.usage),
                    opt_amount(&row.quota, row.limit),
                    opt_amount(&row.quota, row.available),
                    row.headroom
                        .map_or_else(|| "-".to_string(), |h| format_signed(&row.quota, h)),
                ],
                verdict: RowVerdict::of(row),
            })
            .collect(),
        None => region
            .quotas
            .iter()
            .map(|(quota, needed)| DisplayRow {
                cells: [
                    quota.to_string(),
                    format_amount(quota, needed),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                ],
                verdict: RowVerdict::NotChecked,
            })
            .collect(),
    }
}

fn reservation_text(check: &ReservationCheck) -> String {
    let free = check
        .available_gpus
        .map_or_else(|| "unknown".to_string(), |f| thousands(u128::from(f)));
    let fabric = if check.fabric.is_empty() {
        String::new()
    } else {
        format!(", fabric {}", check.fabric)
    };
    let verdict = match &check.reason {
        None => "ok".to_string(),
        Some(reason) => format!("BLOCKED: {reason}"),
    };
    let targets: Vec<String> = check.targets.iter().map(ToString::to_string).collect();
    format!(
        "capacity block {} ({}{fabric}) for {}: needs {} GPUs, {free} free -> {verdict}",
        check.block,
        check.platform,
        targets.join(", "),
        thousands(check.required_gpus),
    )
}

/// The terminal rendering.
pub fn render_text(report: &PreflightReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Quota preflight for fleet '{}' (tenant {}): {}",
        report.demand.name,
        report.tenant_id,
        headline(report)
    );
    let _ = writeln!(out, "  {}", summary(report));
    for region in &report.demand.regions {
        let _ = writeln!(out, "\n{}", region.region);
        let checks: Vec<&ReservationCheck> = report
            .reservation_checks()
            .filter(|c| c.region == region.region)
            .collect();
        if !checks.is_empty() {
            for check in checks {
                let _ = writeln!(out, "  {}", reservation_text(check));
            }
        }
        let header = [
            "QUOTA",
            "NEEDED",
            "IN USE",
            "LIMIT",
            "AVAILABLE",
            "AFTER CHANGE",
            "VERDICT",
        ]
        .map(str::to_string);
        let mut lines: Vec<[String; 7]> = vec![header];
        for row in display_rows(region, report) {
            let [a, b, c, d, e, f] = row.cells;
            lines.push([a, b, c, d, e, f, row.verdict.text()]);
        }
        let mut widths = [0usize; 7];
        for line in &lines {
            for (w, cell) in widths.iter_mut().zip(line) {
                *w = (*w).max(cell.chars().count());
            }
        }
        for line in &lines {
            let mut text = String::new();
            for (i, (cell, w)) in line.iter().zip(widths).enumerate() {
                let pad = " ".repeat(w - cell.chars().count());
                // Names and verdicts read left to right; amounts line up on the right.
                if i == 0 || i == 6 {
                    let _ = write!(text, "  {cell}{pad}");
                } else {
                    let _ = write!(text, "  {pad}{cell}");
                }
            }
            let _ = writeln!(out, "{}", text.trim_end());
        }
    }
    if report.demand.regions.is_empty() {
        let _ = writeln!(out, "\nNothing to add: no quota or capacity is needed.");
    }
    out
}

fn md_cell(text: &str) -> String {
    text.replace('|', "\\|")
}

/// The pull request rendering.
pub fn render_markdown(report: &PreflightReport) -> String {
    let mut out = String::new();
    let name = md_cell(&report.demand.name);
    let title = if report.fits() {
        format!("### ✅ Quota preflight: fleet `{name}` fits")
    } else if report.blocked() {
        format!("### ❌ Quota preflight: fleet `{name}` does not fit")
    } else {
        format!("### ⚠️ Quota preflight could not prove capacity for fleet `{name}`")
    };
    let _ = writeln!(out, "{title}\n");
    let short_rows: Vec<&BudgetRow> = report
        .rows()
        .filter(|r| r.verdict == Verdict::Short)
        .collect();
    let short_blocks: Vec<&ReservationCheck> = report.failed_reservations().collect();
    if !short_rows.is_empty() || !short_blocks.is_empty() {
        let _ = writeln!(out, "**Blocked by:**\n");
        for row in short_rows {
            let _ = writeln!(
                out,
                "- `{}` in `{}`: needs {}, {} available, **short by {}**",
                row.quota,
                row.region,
                format_amount(&row.quota, row.needed),
                opt_amount(&row.quota, row.available),
                format_amount(&row.quota, row.shortfall.unwrap_or(0)),
            );
        }
        for check in short_blocks {
            let _ = writeln!(
                out,
                "- capacity block {} (`{}`) in `{}`: **{}**",
                check.block,
                md_cell(&check.platform),
                check.region,
                md_cell(check.reason.as_deref().unwrap_or_default()),
            );
        }
        let _ = writeln!(out);
    }
    if !report.blocked()
        && let Some(message) = report.public_message()
    {
        let _ = writeln!(out, "```text\n{message}\n```\n");
    }
    if report.demand.regions.is_empty() {
        let _ = writeln!(out, "Nothing to add: no quota or capacity is needed.\n");
    } else {
        let _ = writeln!(
            out,
            "| Region | Quota | Needed | In use | Limit | Available | After change | Verdict |"
        );
        let _ = writeln!(out, "|---|---|---:|---:|---:|---:|---:|---|");
        for region in &report.demand.regions {
            for row in display_rows(region, report) {
                let [quota, needed, usage, limit, available, after] = &row.cells;
                let _ = writeln!(
                    out,
                    "| {} | `{quota}` | {needed} | {usage} | {limit} | {available} | {after} | {} |",
                    md_cell(&region.region),
                    row.verdict.markdown(),
                );
            }
        }
        let _ = writeln!(out);
    }
    let unchecked = report.demand.regions.iter().any(|r| {
        !report
            .regions
            .iter()
            .any(|o| o.region == r.region && o.checked)
    });
    if unchecked {
        let _ = writeln!(
            out,
            "_Rows marked \"not checked\" were not compared: preflight stops at the first failure, as deploy does._\n"
        );
    }
    let checks: Vec<&ReservationCheck> = report.reservation_checks().collect();
    if !checks.is_empty() {
        let _ = writeln!(
            out,
            "**Capacity blocks (STRICT, no on-demand fallback):**\n"
        );
        let _ = writeln!(
            out,
            "| Region | Block | Platform | Fabric | Needed | Free | Clusters | Verdict |"
        );
        let _ = writeln!(out, "|---|---|---|---|---:|---:|---:|---|");
        for check in checks {
            let verdict = check
                .reason
                .as_deref()
                .map_or_else(|| "✅ ok".to_string(), |r| format!("❌ {}", md_cell(r)));
            let _ = writeln!(
                out,
                "| {} | {} | `{}` | {} | {} GPUs | {} | {} | {verdict} |",
                md_cell(&check.region),
                check.block,
                md_cell(&check.platform),
                if check.fabric.is_empty() {
                    "-".to_string()
                } else {
                    format!("`{}`", md_cell(&check.fabric))
                },
                thousands(check.required_gpus),
                check.available_gpus.map_or_else(
                    || "unknown".to_string(),
                    |f| format!("{} GPUs", thousands(u128::from(f)))
                ),
                check.targets.len(),
            );
        }
        let _ = writeln!(out);
    }
    let _ = writeln!(out, "<sub>{}</sub>", summary(report));
    out
}

/// One reservation requirement in the JSON document; no block ID.
#[derive(Debug, Serialize)]
pub struct JsonReservation {
    pub block: String,
    pub platform: String,
    pub fabric: String,
    pub required_gpus: u128,
    pub available_gpus: Option<u64>,
    /// `ok`, `short` or `not_checked`.
    pub status: &'static str,
    pub reason: Option<String>,
    pub targets: Vec<String>,
}

/// One shortfall in the JSON document.
#[derive(Debug, Serialize)]
pub struct JsonShortfall {
    pub region: String,
    pub quota: String,
    pub needed: u128,
    pub available: u64,
    pub limit: u64,
    pub unit: String,
    pub shortfall: u128,
    /// The reference's line for this quota.
    pub line: String,
}

/// The `--output json` document.
#[derive(Debug, Serialize)]
pub struct JsonReport<'a> {
    pub name: &'a str,
    pub tenant_id: &'a str,
    pub fits: bool,
    pub regions: Vec<&'a str>,
    /// Per region, quota name to amount.
    pub demand: BTreeMap<&'a str, &'a Demand>,
    pub new_projects: BTreeMap<&'a str, u128>,
    pub new_buckets: BTreeMap<&'a str, usize>,
    pub reservations: BTreeMap<&'a str, Vec<JsonReservation>>,
    pub budget: Vec<&'a BudgetRow>,
    pub shortfalls: Vec<JsonShortfall>,
    pub unchanged_targets: Vec<String>,
    pub skipped_targets: &'a [SkippedTarget],
    /// The failure message with block IDs replaced; `null` when everything fits.
    pub error: Option<String>,
}

/// Builds the JSON document.
pub fn json_report(report: &PreflightReport) -> JsonReport<'_> {
    let demand = &report.demand;
    let reservations = demand
        .regions
        .iter()
        .filter(|r| !r.reservations.is_empty())
        .map(|region| {
            let entries = region
                .reservations
                .iter()
                .map(|requirement| {
                    let label = report.labels.label(&requirement.block_id);
                    let check = report
                        .reservation_checks()
                        .find(|c| c.region == region.region && c.block == label);
                    JsonReservation {
                        block: label,
                        platform: requirement.platform.clone(),
                        fabric: requirement.fabric.clone(),
                        required_gpus: requirement.required_gpus,
                        available_gpus: check.and_then(|c| c.available_gpus),
                        status: match check {
                            None => "not_checked",
                            Some(c) if c.reason.is_some() => "short",
                            Some(_) => "ok",
                        },
                        reason: check.and_then(|c| c.reason.clone()),
                        targets: requirement
                            .targets
                            .iter()
                            .map(ToString::to_string)
                            .collect(),
                    }
                })
                .collect();
            (region.region.as_str(), entries)
        })
        .collect();
    JsonReport {
        name: &demand.name,
        tenant_id: &report.tenant_id,
        fits: report.fits(),
        regions: demand.regions.iter().map(|r| r.region.as_str()).collect(),
        demand: demand
            .regions
            .iter()
            .map(|r| (r.region.as_str(), &r.quotas))
            .collect(),
        new_projects: demand
            .regions
            .iter()
            .map(|r| (r.region.as_str(), r.new_projects))
            .collect(),
        new_buckets: demand
            .regions
            .iter()
            .map(|r| (r.region.as_str(), r.new_buckets.len()))
            .collect(),
        reservations,
        budget: report.rows().collect(),
        shortfalls: report
            .shortfalls
            .iter()
            .map(|s| JsonShortfall {
                region: s.region.clone(),
                quota: s.name.clone(),
                needed: s.required,
                available: s.available(),
                limit: s.limit,
                unit: s.unit.clone(),
                shortfall: s.deficit(),
                line: s.describe(),
            })
            .collect(),
        unchanged_targets: demand.unchanged.iter().map(ToString::to_string).collect(),
        skipped_targets: &demand.skipped,
        error: report.public_message(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quota::names::{self, GIB, TIB};

    #[test]
    fn amounts_read_in_their_own_terms() {
        assert_eq!(format_amount(names::DISK_SIZE, 1023 * GIB), "1,023.00 GiB");
        assert_eq!(format_amount(names::DISK_SIZE, 2302 * GIB), "2.25 TiB");
        assert_eq!(
            format_amount(names::DISK_SIZE, 2 * TIB + TIB / 4),
            "2.25 TiB"
        );
        assert_eq!(format_amount(names::DISK_SIZE, 1), "1 byte");
        assert_eq!(format_amount(names::DISK_SIZE, 1024), "1,024 bytes");
        assert_eq!(format_amount("compute.instance.gpu.h200", 16), "16 GPUs");
        assert_eq!(format_amount("compute.instance.gpu.h200", 1), "1 GPU");
        assert_eq!(format_amount(names::NON_GPU_VCPU, 96), "96 vCPUs");
        assert_eq!(format_amount(names::DISK_COUNT, 1), "1 disk");
        assert_eq!(format_amount("new.quota.kind", 3), "3 units");
        assert_eq!(format_signed(names::DISK_COUNT, -2), "-2 disks");
        assert_eq!(format_signed(names::DISK_COUNT, 2), "+2 disks");
        assert_eq!(format_signed(names::DISK_COUNT, 0), "0 disks");
    }
}
