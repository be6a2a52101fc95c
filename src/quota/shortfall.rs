//! Quota shortfalls and the message that blocks a deploy (§4.7), with the reference's numbers,
//! units and guidance text.

use std::collections::BTreeMap;

use super::allowances::Allowance;
use super::demand::Demand;
use super::names::{self, GIB, TIB};

/// The guidance after the shortfall lines: what can and cannot fix a deficit.
pub const GUIDANCE: &str = "Project-level allowances only subdivide the tenant allowance, so raising these is a tenant (root) operation -- ask the Nebius account team. Increase the affected tenant allowance, release resources you own, or reduce the declared resource requirements, then rerun the same deploy with preflight enabled. Skipping preflight cannot resolve a provider quota deficit.";

/// Added when boot-disk capacity is short: reservations and storage classes do not help there.
pub const DISK_GUIDANCE: &str = "Reserved GPUs still require worker boot-disk quota. Object-storage capacity and preemptible GPU placement do not increase that quota.";

/// One quota whose remaining tenant allowance cannot cover what the fleet requires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuotaShortfall {
    pub name: String,
    pub region: String,
    pub required: u128,
    pub limit: u64,
    /// What is left of the limit; `None` reads as the whole limit.
    pub available: Option<u64>,
    /// The allowance's unit (`byte`, `count`, …); empty when unknown.
    pub unit: String,
}

impl QuotaShortfall {
    pub fn available(&self) -> u64 {
        self.available.unwrap_or(self.limit)
    }

    /// How much is missing.
    pub fn deficit(&self) -> u128 {
        self.required.saturating_sub(u128::from(self.available()))
    }

    /// `<name> [<region>]: needs <req>[ <unit>], <avail> available from tenant limit <limit>`,
    /// then `; shortfall <n>`, or for bytes the same in GiB with two decimals.
    pub fn describe(&self) -> String {
        let available = self.available();
        let unit = if self.unit.is_empty() {
            String::new()
        } else {
            format!(" {}", self.unit)
        };
        let head = format!(
            "{} [{}]: needs {}{unit}, {available} available from tenant limit {}",
            self.name, self.region, self.required, self.limit
        );
        if self.unit == "byte" {
            format!(
                "{head} (requires {} GiB; available {} GiB; shortfall {} GiB)",
                format_gib(self.required),
                format_gib(u128::from(available)),
                format_gib(self.deficit())
            )
        } else {
            format!("{head}; shortfall {}", self.deficit())
        }
    }
}

/// Finite allowances below what is required, sorted by quota name. Unlimited and unadvertised
/// quotas never fall short.
pub fn find_shortfalls(
    needed: &Demand,
    allowances: &BTreeMap<String, Allowance>,
    region: &str,
) -> Vec<QuotaShortfall> {
    needed
        .iter()
        .filter_map(|(name, required)| match allowances.get(name) {
            Some(Allowance::Finite(finite)) if required > u128::from(finite.available) => {
                Some(QuotaShortfall {
                    name: name.to_string(),
                    region: region.to_string(),
                    required,
                    limit: finite.limit,
                    available: Some(finite.available),
                    unit: finite.unit.clone(),
                })
            }
            _ => None,
        })
        .collect()
}

/// The error text of a blocked preflight. It names the tenant, so it is for the operator only.
pub fn shortfall_message(shortfalls: &[QuotaShortfall], tenant_id: &str) -> String {
    let mut lines = vec![format!(
        "tenant {tenant_id} quota is too low for this fleet:"
    )];
    lines.extend(shortfalls.iter().map(|s| format!("  - {}", s.describe())));
    lines.push(GUIDANCE.to_string());
    if shortfalls.iter().any(|s| s.name == names::DISK_SIZE) {
        lines.push(DISK_GUIDANCE.to_string());
    }
    lines.join("\n")
}

/// Bytes as GiB with two decimals and thousands separators (`2,302.00`). Rounded half to even
/// on the exact value, which is what Python's `format(x, ",.2f")` does for these exact binary
/// fractions.
pub fn format_gib(bytes: u128) -> String {
    format_units(bytes, GIB)
}

/// `value / unit` (a power of two) with two decimals and thousands separators.
pub fn format_units(value: u128, unit: u128) -> String {
    let whole = value / unit;
    let scaled = (value % unit) * 100;
    let mut cents = scaled / unit;
    let remainder = scaled % unit;
    let half = unit / 2;
    if remainder > half || (remainder == half && cents % 2 == 1) {
        cents += 1;
    }
    let (whole, cents) = if cents == 100 {
        (whole.saturating_add(1), 0)
    } else {
        (whole, cents)
    };
    format!("{}.{cents:02}", thousands(whole))
}

/// An integer with `,` between groups of three digits.
pub fn thousands(value: u128) -> String {
    let digits = value.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// An amount in the quota's own terms: bytes as GiB or TiB (exact bytes below 1 GiB), counts
/// with their noun ("16 GPUs", "1 disk").
pub fn format_amount(quota: &str, amount: u128) -> String {
    if names::is_byte_quota(quota) {
        if amount < GIB {
            let noun = if amount == 1 { "byte" } else { "bytes" };
            format!("{} {noun}", thousands(amount))
        } else if amount < TIB {
            format!("{} GiB", format_units(amount, GIB))
        } else {
            format!("{} TiB", format_units(amount, TIB))
        }
    } else {
        let (one, many) = names::noun(quota);
        format!(
            "{} {}",
            thousands(amount),
            if amount == 1 { one } else { many }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gib_formatting_rounds_half_to_even() {
        assert_eq!(format_gib(2302 * GIB), "2,302.00");
        assert_eq!(format_gib(0), "0.00");
        assert_eq!(format_gib(GIB / 8), "0.12"); // 0.125 -> even
        assert_eq!(format_gib(GIB * 3 / 8), "0.38"); // 0.375 -> even
        assert_eq!(format_gib(GIB - 1), "1.00");
        assert_eq!(format_gib(1_234_567 * GIB + GIB / 2), "1,234,567.50");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1_000_000), "1,000,000");
    }
}
