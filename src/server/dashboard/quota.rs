//! The dashboard's quota picture: where it comes from ([`QuotaSource`]: the cloud the server
//! plans against, or a fixed reading for tests and the demo) and how an allowance list
//! becomes bars ([`quota_view`]), read by the same fail-closed rules preflight uses.
//!
//! The store records no quota: used and limit are the cloud's own figures, read when the page
//! is loaded (cached briefly by the router). Nothing records what open pull requests would
//! request, so the view has no such figure.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use super::view::{QuotaBar, QuotaView, RegionQuota, TenantQuota};
use crate::fleet::Session;
use crate::quota::shortfall::format_amount;
use crate::quota::{Allowance, AllowanceDocument, parse_allowances};

/// What a source read: per tenant (its ID, private), the allowance list or why not.
#[derive(Debug, Clone, Default)]
pub struct QuotaReading {
    /// The source in public words.
    pub source: String,
    pub tenants: Vec<(String, Result<AllowanceDocument, String>)>,
}

/// A boxed future of a [`QuotaReading`].
pub type ReadingFuture<'a> = Pin<Box<dyn Future<Output = QuotaReading> + Send + 'a>>;

/// Where the dashboard reads quota from.
pub trait QuotaSource: Send + Sync {
    fn read(&self) -> ReadingFuture<'_>;
}

/// The cloud the server plans against, for its configured tenant.
pub struct LiveQuota {
    pub cloud: Arc<Session>,
    /// Private: only its digest is ever shown.
    pub tenant_id: String,
}

impl QuotaSource for LiveQuota {
    fn read(&self) -> ReadingFuture<'_> {
        Box::pin(async move {
            let allowances = match self.cloud.quota_evidence(&self.tenant_id).await {
                Ok(evidence) => evidence.allowances.map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            QuotaReading {
                source: self.cloud.public_name(),
                tenants: vec![(self.tenant_id.clone(), allowances)],
            }
        })
    }
}

/// A reading fixed in advance (tests, the demo's simulator world).
pub struct FixedQuota(pub QuotaReading);

impl QuotaSource for FixedQuota {
    fn read(&self) -> ReadingFuture<'_> {
        let reading = self.0.clone();
        Box::pin(async move { reading })
    }
}

/// A tenant as the dashboard names it: the same label as the apply lease keys carry
/// (`fleet::backend::fleet_lease_key`) and reviewed plans record, so a lock, a request and a
/// tenant's quota can be matched by eye without the ID ever being shown.
pub use crate::quota::tenant_label;

/// Bars per tenant and region: every finite allowance, by name; unlimited ones are counted.
/// `clean` sanitizes the text that comes from the source (error messages).
pub fn quota_view(reading: &QuotaReading, clean: &dyn Fn(&str) -> String) -> QuotaView {
    let tenants = reading
        .tenants
        .iter()
        .map(|(tenant_id, document)| {
            let mut tenant = TenantQuota {
                tenant: tenant_label(tenant_id),
                ..Default::default()
            };
            match document {
                Ok(document) => match regions(document, tenant_id) {
                    Ok(regions) => tenant.regions = regions,
                    Err(e) => tenant.error = clean(&scrub(&e, tenant_id)),
                },
                Err(e) => tenant.error = clean(&scrub(e, tenant_id)),
            }
            tenant
        })
        .collect();
    QuotaView {
        source: clean(&reading.source),
        tenants,
        read_at: crate::store::queue::now_ms(),
        stale: false,
    }
}

/// A message about a tenant's quota never names the tenant, whatever the source wrote.
fn scrub(text: &str, tenant_id: &str) -> String {
    if tenant_id.is_empty() {
        text.to_string()
    } else {
        text.replace(tenant_id, "the tenant")
    }
}

fn regions(document: &AllowanceDocument, tenant_id: &str) -> Result<Vec<RegionQuota>, String> {
    if !document.next_page_token.is_empty() {
        return Err(crate::quota::allowances::INCOMPLETE.to_string());
    }
    let mut names: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for record in &document.items {
        if !record.region.is_empty() && !record.name.is_empty() {
            names
                .entry(record.region.as_str())
                .or_default()
                .insert(record.name.as_str());
        }
    }
    let mut out = Vec::new();
    for (region, quotas) in names {
        let mut quota = RegionQuota {
            region: region.to_string(),
            ..Default::default()
        };
        // One quota at a time: a record preflight could not use hides only its own bar.
        for name in quotas {
            let one = BTreeSet::from([name]);
            match parse_allowances(document, region, &one, tenant_id) {
                Ok(found) => match found.get(name) {
                    Some(Allowance::Finite(f)) => quota.bars.push(bar(name, f.usage, f.limit)),
                    Some(Allowance::Unlimited { .. }) => quota.unlimited += 1,
                    None => {}
                },
                Err(_) => quota.unreadable += 1,
            }
        }
        out.push(quota);
    }
    Ok(out)
}

/// One bar; its width is `used / limit`, capped at the full width (usage past a lowered limit
/// happens, and is shown as full).
pub fn bar(name: &str, used: u64, limit: u64) -> QuotaBar {
    let percent = if limit == 0 {
        if used > 0 { 100.0 } else { 0.0 }
    } else {
        (used as f64 * 100.0 / limit as f64).min(100.0)
    };
    // One decimal is what a bar can show; rounding here keeps HTML and JSON equal.
    let percent = (percent * 10.0).round() / 10.0;
    QuotaBar {
        name: name.to_string(),
        used,
        limit,
        used_text: format_amount(name, u128::from(used)),
        limit_text: format_amount(name, u128::from(limit)),
        percent,
        level: super::view::level(percent).to_string(),
        ..QuotaBar::default()
    }
}

/// Quota requested by open pull requests, per `(tenant label, region, quota)`: the amount and
/// how many pull requests ask for it.
pub type Requested = BTreeMap<(String, String, String), (u128, usize)>;

/// Adds what open pull requests request to the bars of the same tenant, region and quota.
pub fn add_requested(view: &mut QuotaView, requested: &Requested) {
    for tenant in &mut view.tenants {
        for region in &mut tenant.regions {
            for b in &mut region.bars {
                let key = (tenant.tenant.clone(), region.region.clone(), b.name.clone());
                let Some(&(amount, by)) = requested.get(&key) else {
                    continue;
                };
                let amount = u64::try_from(amount).unwrap_or(u64::MAX);
                let left = b.limit.saturating_sub(b.used);
                let shown = amount.min(left);
                b.requested = amount;
                b.requested_by = by;
                b.requested_text = format_amount(&b.name, u128::from(amount));
                b.requested_over = amount > left;
                b.requested_percent = if b.limit == 0 {
                    0.0
                } else {
                    ((shown as f64 * 100.0 / b.limit as f64) * 10.0).round() / 10.0
                };
            }
        }
    }
}

/// Regions in use first (by name), then the rest, marked so the page folds them.
pub fn fold(view: &mut QuotaView) {
    for tenant in &mut view.tenants {
        for region in &mut tenant.regions {
            region.in_use =
                region.unreadable > 0 || region.bars.iter().any(|b| b.used > 0 || b.requested > 0);
        }
        tenant.regions.sort_by(|a, b| {
            b.in_use
                .cmp(&a.in_use)
                .then_with(|| a.region.cmp(&b.region))
        });
    }
}
