//! STRICT capacity blocks (§4.5): what each block must supply, what a block has left, the checks
//! and their reason texts, and the raised message.
//!
//! A block ID is private. The operator message names it, as the reference does; everything
//! meant for publication goes through [`BlockLabels`], which replaces each ID with `#<n>` in order
//! of first use.

use std::collections::BTreeMap;
use std::fmt;

use super::demand::preset_gpus;
use super::fraction::Decimal;
use super::names::{STATE_ACTIVE, USAGE_STATE_NOT_USED};
use super::target::TargetKey;
use super::wire::Wire;
use crate::spec::ClusterSpec;
use crate::spec::names::py_repr;

/// GPUs a fleet needs from one explicitly bound capacity block group in one region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReservationRequirement {
    pub block_id: String,
    pub region: String,
    pub platform: String,
    /// The InfiniBand fabric when the pool is GPU-clustered, else empty (not fabric-checked).
    pub fabric: String,
    pub required_gpus: u128,
    /// The targets whose GPU pools the block backs.
    pub targets: Vec<TargetKey>,
}

/// One block backs pools that disagree on platform or fabric.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("one capacity_block_group cannot back incompatible GPU pools: {block_id}")]
pub struct IncompatiblePools {
    pub block_id: String,
}

/// Accumulates STRICT GPU requirements by block ID, in order of first use.
pub fn required_reservations<'a>(
    clusters: impl IntoIterator<Item = (&'a TargetKey, &'a ClusterSpec)>,
    region: &str,
) -> Result<Vec<ReservationRequirement>, IncompatiblePools> {
    let mut requirements: Vec<ReservationRequirement> = Vec::new();
    for (target, cluster) in clusters {
        let Some(gpu) = cluster.gpu_nodes.as_ref() else {
            continue;
        };
        if gpu.count <= 0 || gpu.capacity_block_group.is_empty() {
            continue;
        }
        let gpus = u128::try_from(gpu.count)
            .unwrap_or(0)
            .saturating_mul(preset_gpus(&gpu.preset));
        let fabric = if cluster.resolved_enable_gpu_cluster() {
            cluster.infiniband_fabric.clone()
        } else {
            String::new()
        };
        match requirements
            .iter_mut()
            .find(|r| r.block_id == gpu.capacity_block_group)
        {
            Some(previous) => {
                if previous.platform != gpu.platform || previous.fabric != fabric {
                    return Err(IncompatiblePools {
                        block_id: gpu.capacity_block_group.clone(),
                    });
                }
                previous.required_gpus = previous.required_gpus.saturating_add(gpus);
                previous.targets.push(target.clone());
            }
            None => requirements.push(ReservationRequirement {
                block_id: gpu.capacity_block_group.clone(),
                region: region.to_string(),
                platform: gpu.platform.clone(),
                fabric,
                required_gpus: gpus,
                targets: vec![target.clone()],
            }),
        }
    }
    Ok(requirements)
}

/// One capacity block group as the provider reports it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CapacityBlockGroup {
    pub id: String,
    pub parent_id: String,
    pub region: String,
    pub state: String,
    pub platform: String,
    pub fabric: String,
    pub current_limit: Wire<u64>,
    pub usage: Wire<u64>,
    pub usage_percentage: Wire<String>,
    pub usage_state: String,
}

/// A capacity block group list.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CapacityBlockDocument {
    pub items: Vec<CapacityBlockGroup>,
    /// Non-empty means the list is incomplete; sources refuse such a list before it gets here.
    pub next_page_token: String,
}

impl CapacityBlockGroup {
    /// A conservative count of free GPUs, or `None` when the status cannot prove one: the exact
    /// `usage` counter first, then `usage_percentage` (a value ≤ 1 is a fraction, above 1 an old
    /// 0..100 percentage), then a `USAGE_STATE_NOT_USED` state.
    pub fn available_gpus(&self) -> Option<u64> {
        let Wire::Value(limit) = self.current_limit else {
            return None;
        };
        match &self.usage {
            Wire::Value(used) => return Some(limit.saturating_sub(*used)),
            Wire::Invalid => return None,
            Wire::Absent => {}
        }
        match &self.usage_percentage {
            Wire::Value(text) => {
                let used = Decimal::parse(text)?;
                let fraction = if used.cmp_one() == std::cmp::Ordering::Greater {
                    used.percent_to_fraction()
                } else {
                    used
                };
                Some(fraction.remaining(limit))
            }
            Wire::Invalid => None,
            Wire::Absent => (self.usage_state == USAGE_STATE_NOT_USED).then_some(limit),
        }
    }
}

/// A reservation check that failed; it blocks a STRICT deploy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReservationShortfall {
    pub block_id: String,
    pub reason: String,
}

impl fmt::Display for ReservationShortfall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.block_id, self.reason)
    }
}

/// Indexes blocks by ID; a later duplicate replaces an earlier one, and blocks without an ID
/// are ignored, as in the reference.
pub fn index_blocks(document: &CapacityBlockDocument) -> BTreeMap<&str, &CapacityBlockGroup> {
    document
        .items
        .iter()
        .filter(|b| !b.id.is_empty())
        .map(|b| (b.id.as_str(), b))
        .collect()
}

/// Why a block cannot serve a requirement, or `None` when it can. The first failing check wins.
pub fn check_requirement(
    requirement: &ReservationRequirement,
    block: Option<&CapacityBlockGroup>,
    tenant_id: &str,
) -> Option<String> {
    let Some(block) = block else {
        return Some("not found in tenant".to_string());
    };
    if block.parent_id != tenant_id {
        return Some("belongs to another tenant".to_string());
    }
    if block.state != STATE_ACTIVE {
        let state = if block.state.is_empty() {
            "unknown"
        } else {
            &block.state
        };
        return Some(format!("is not active ({state})"));
    }
    if block.region != requirement.region {
        return Some(format!(
            "region {} does not match {}",
            py_repr(&block.region),
            py_repr(&requirement.region)
        ));
    }
    if block.platform != requirement.platform {
        return Some(format!(
            "platform {} does not match {}",
            py_repr(&block.platform),
            py_repr(&requirement.platform)
        ));
    }
    // Only a GPU-clustered pool asks for a fabric. A single-GPU STRICT block is still placed
    // on some fabric by the provider, and its ID alone pins that placement.
    if !requirement.fabric.is_empty() && block.fabric != requirement.fabric {
        return Some(format!(
            "fabric {} does not match {}",
            py_repr(&block.fabric),
            py_repr(&requirement.fabric)
        ));
    }
    match block.available_gpus() {
        None => Some("remaining GPU capacity is unavailable".to_string()),
        Some(free) if u128::from(free) < requirement.required_gpus => Some(format!(
            "needs {} GPUs, only {free} reserved GPUs remain",
            requirement.required_gpus
        )),
        Some(_) => None,
    }
}

/// Every failing requirement, in requirement order.
pub fn find_reservation_shortfalls(
    requirements: &[ReservationRequirement],
    blocks: &CapacityBlockDocument,
    tenant_id: &str,
) -> Vec<ReservationShortfall> {
    let indexed = index_blocks(blocks);
    requirements
        .iter()
        .filter_map(|r| {
            check_requirement(r, indexed.get(r.block_id.as_str()).copied(), tenant_id).map(
                |reason| ReservationShortfall {
                    block_id: r.block_id.clone(),
                    reason,
                },
            )
        })
        .collect()
}

const SHORTFALL_HEADER: &str = "reserved capacity is insufficient or incompatible for this fleet:";
const SHORTFALL_FOOTER: &str =
    "STRICT reservation-backed node groups will not fall back to on-demand capacity.";

/// The operator message, naming each block by ID (the reference text).
pub fn reservation_shortfall_message(shortfalls: &[ReservationShortfall]) -> String {
    let mut lines = vec![SHORTFALL_HEADER.to_string()];
    lines.extend(shortfalls.iter().map(|s| format!("  - {s}")));
    lines.push(SHORTFALL_FOOTER.to_string());
    lines.join("\n")
}

/// The same message with each block ID replaced by its public label.
pub fn public_reservation_shortfall_message(
    shortfalls: &[ReservationShortfall],
    labels: &BlockLabels,
) -> String {
    let mut lines = vec![SHORTFALL_HEADER.to_string()];
    lines.extend(
        shortfalls
            .iter()
            .map(|s| format!("  - {}: {}", labels.public_name(&s.block_id), s.reason)),
    );
    lines.push(SHORTFALL_FOOTER.to_string());
    lines.join("\n")
}

/// Public names for block IDs: `capacity block #<n>`, numbered in order of first use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BlockLabels {
    ids: Vec<String>,
}

impl BlockLabels {
    /// Registers `block_id` (once) and returns its number.
    pub fn register(&mut self, block_id: &str) -> usize {
        match self.ids.iter().position(|id| id == block_id) {
            Some(i) => i + 1,
            None => {
                self.ids.push(block_id.to_string());
                self.ids.len()
            }
        }
    }

    /// `#<n>`, or `#?` for an ID that was never registered (it is still not shown).
    pub fn label(&self, block_id: &str) -> String {
        match self.ids.iter().position(|id| id == block_id) {
            Some(i) => format!("#{}", i + 1),
            None => "#?".to_string(),
        }
    }

    /// `capacity block #<n>`.
    pub fn public_name(&self, block_id: &str) -> String {
        format!("capacity block {}", self.label(block_id))
    }

    /// Replaces every registered ID in `text` by its public name; the longest IDs first, so an
    /// ID that contains another is never half-replaced.
    pub fn redact(&self, text: &str) -> String {
        let mut ids: Vec<(usize, &String)> = self.ids.iter().enumerate().collect();
        ids.sort_by_key(|(_, id)| std::cmp::Reverse(id.len()));
        let mut out = text.to_string();
        for (i, id) in ids {
            if !id.is_empty() {
                out = out.replace(id.as_str(), &format!("capacity block #{}", i + 1));
            }
        }
        out
    }
}
