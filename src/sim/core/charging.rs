//! Quota and reserved capacity: what a resource takes when it is created or grown, and
//! gives back when it shrinks or goes; a change that does not fit is refused whole.

use tonic::Code;

use super::Core;
use super::errors::service_error;
use crate::cloud::error::operation_status;
use crate::cloud::proto::fleetbot::sim::v1::ReservationRecord;
use crate::cloud::proto::nebius::capacity::v1 as capacity;
use crate::cloud::proto::nebius::common::v1::{self as common, service_error};
use crate::cloud::proto::nebius::quotas::v1 as quotas;
use crate::sim::resources::{Charges, Reservation};

impl Core {
    fn allowance_mut(&mut self, region: &str, name: &str) -> Option<&mut quotas::QuotaAllowance> {
        let tenant = self.tenant_id.clone();
        self.state.quota_allowances.iter_mut().find(|a| {
            a.metadata
                .as_ref()
                .is_some_and(|m| m.name == name && m.parent_id == tenant)
                && a.spec.as_ref().is_some_and(|s| s.region == region)
        })
    }

    /// Takes quota and reserved capacity for a resource, or refuses with the failure the
    /// operation ends in. Quotas the tenant has no allowance for are not quota-controlled.
    pub(super) fn charge(
        &mut self,
        region: &str,
        charges: &Charges,
        resource_id: &str,
        service: &str,
    ) -> Result<(), tonic_types::Status> {
        let violations = self.quota_violations(region, charges);
        if !violations.is_empty() {
            return Err(quota_exceeded(service, violations));
        }
        if let Some(reservation) = &charges.reserved {
            self.reserve(region, reservation, resource_id)?;
        }
        for (name, amount) in &charges.quotas {
            self.add_usage(region, name, |usage| usage.saturating_add(*amount));
        }
        Ok(())
    }

    /// Each quota the charges would take past its limit.
    fn quota_violations(
        &mut self,
        region: &str,
        charges: &Charges,
    ) -> Vec<common::quota_failure::Violation> {
        let mut violations = Vec::new();
        for (name, amount) in &charges.quotas {
            if *amount == 0 {
                continue;
            }
            let Some(allowance) = self.allowance_mut(region, name) else {
                continue;
            };
            let usage = allowance.status.as_ref().map_or(0, |s| s.usage);
            if let Some(limit) = allowance.spec.as_ref().and_then(|s| s.limit)
                && usage.saturating_add(*amount) > limit
            {
                violations.push(common::quota_failure::Violation {
                    quota: name.clone(),
                    message: format!(
                        "quota {name} in {region}: {amount} more requested, {} of {limit} available",
                        limit.saturating_sub(usage)
                    ),
                    limit: limit.to_string(),
                    requested: usage.saturating_add(*amount).to_string(),
                });
            }
        }
        violations
    }

    /// Takes the GPUs from the first listed block group they fit in, and records which.
    fn reserve(
        &mut self,
        region: &str,
        reservation: &Reservation,
        resource_id: &str,
    ) -> Result<(), tonic_types::Status> {
        let chosen = reservation.block_ids.iter().find(|id| {
            self.state.capacity_block_groups.iter().any(|b| {
                b.metadata.as_ref().is_some_and(|m| &m.id == *id)
                    && self.block_fits(b, region, reservation)
            })
        });
        let Some(chosen) = chosen.cloned() else {
            return Err(not_enough_capacity(reservation));
        };
        if let Some(status) = self
            .state
            .capacity_block_groups
            .iter_mut()
            .find(|b| b.metadata.as_ref().is_some_and(|m| m.id == chosen))
            .and_then(|b| b.status.as_mut())
        {
            status.usage += reservation.gpus;
            status.usage_state = block_usage_state(status.usage);
        }
        self.state.reservations.push(ReservationRecord {
            resource_id: resource_id.to_string(),
            block_id: chosen,
            gpus: reservation.gpus,
        });
        Ok(())
    }

    /// An active block group of the tenant's, in the region, for the platform, with room.
    fn block_fits(
        &self,
        block: &capacity::CapacityBlockGroup,
        region: &str,
        reservation: &Reservation,
    ) -> bool {
        let Some(status) = &block.status else {
            return false;
        };
        let affinity_platform = status
            .resource_affinity
            .as_ref()
            .and_then(|a| a.versions.as_ref())
            .map(|capacity::resource_affinity::Versions::ComputeV1(c)| c.platform.clone())
            .unwrap_or_default();
        block
            .metadata
            .as_ref()
            .is_some_and(|m| m.parent_id == self.tenant_id)
            && status.state == capacity::capacity_block_group_status::State::Active as i32
            && status.region == region
            && affinity_platform == reservation.platform
            && status.usage.saturating_add(reservation.gpus) <= status.current_limit
    }

    fn add_usage(&mut self, region: &str, name: &str, next: impl Fn(u64) -> u64) {
        if let Some(allowance) = self.allowance_mut(region, name) {
            let status = allowance.status.get_or_insert_with(Default::default);
            status.usage = next(status.usage);
            status.usage_state = quota_usage_state(status.usage);
        }
    }

    pub(super) fn release(&mut self, region: &str, charges: &Charges, resource_id: &str) {
        for (name, amount) in &charges.quotas {
            self.add_usage(region, name, |usage| usage.saturating_sub(*amount));
        }
        if let Some(pos) = self
            .state
            .reservations
            .iter()
            .position(|r| r.resource_id == resource_id)
        {
            let record = self.state.reservations.remove(pos);
            if let Some(status) = self
                .state
                .capacity_block_groups
                .iter_mut()
                .find(|b| b.metadata.as_ref().is_some_and(|m| m.id == record.block_id))
                .and_then(|b| b.status.as_mut())
            {
                status.usage = status.usage.saturating_sub(record.gpus);
                status.usage_state = block_usage_state(status.usage);
            }
        }
    }
}

fn quota_exceeded(
    service: &str,
    violations: Vec<common::quota_failure::Violation>,
) -> tonic_types::Status {
    let names: Vec<&str> = violations.iter().map(|v| v.quota.as_str()).collect();
    let message = format!("quota exceeded: {}", names.join(", "));
    operation_status(
        Code::ResourceExhausted,
        &message,
        Some(service_error(
            service,
            "QuotaExceeded",
            service_error::Details::QuotaFailure(common::QuotaFailure { violations }),
        )),
    )
}

fn not_enough_capacity(reservation: &Reservation) -> tonic_types::Status {
    operation_status(
        Code::ResourceExhausted,
        "not enough reserved capacity in the listed capacity block groups",
        Some(service_error(
            "compute",
            "NotEnoughResources",
            service_error::Details::NotEnoughResources(common::NotEnoughResources {
                violations: vec![common::not_enough_resources::Violation {
                    resource_type: reservation.platform.clone(),
                    message: format!("{} reserved GPUs requested", reservation.gpus),
                    requested: reservation.gpus.to_string(),
                }],
            }),
        )),
    )
}

/// The usage state the API reports beside a usage counter: `USED` while anything is charged,
/// `NOT_USED` once usage is back to zero (a released allowance is not "used" at 0).
pub(super) fn quota_usage_state(usage: u64) -> i32 {
    use quotas::quota_allowance_status::UsageState;
    if usage > 0 {
        UsageState::Used as i32
    } else {
        UsageState::NotUsed as i32
    }
}

pub(super) fn block_usage_state(usage: u64) -> i32 {
    use capacity::capacity_block_group_status::UsageState;
    if usage > 0 {
        UsageState::Used as i32
    } else {
        UsageState::NotUsed as i32
    }
}

/// The unit an allowance reports by default.
pub fn default_unit(name: &str) -> &'static str {
    if name.starts_with("compute.disk.size.")
        || name.starts_with("compute.filesystem.size.")
        || name.starts_with("storage.bucket.size.")
    {
        "byte"
    } else {
        "count"
    }
}
