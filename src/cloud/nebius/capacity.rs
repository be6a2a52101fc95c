//! What the tenant may use: quota allowances and capacity block groups, read for preflight.
//! Enum values keep the service's names (`STATE_ACTIVE`, `USAGE_STATE_…`): preflight reads
//! them into the same records as the Nebius CLI's JSON.

use tonic::transport::Channel;

use super::convert::meta_field;
use super::rpc::list_all;
use crate::cloud::client::{Host, NebiusClient};
use crate::cloud::domain::{CapacityBlockGroup, CloudResult, QuotaAllowance};
use crate::cloud::proto::nebius::capacity::v1 as capacity;
use crate::cloud::proto::nebius::quotas::v1 as quotas;

type AllowanceService =
    quotas::quota_allowance_service_client::QuotaAllowanceServiceClient<Channel>;
type BlockGroupService =
    capacity::capacity_block_group_service_client::CapacityBlockGroupServiceClient<Channel>;

pub(super) async fn list_quota_allowances(
    client: &NebiusClient,
    parent_id: &str,
) -> CloudResult<Vec<QuotaAllowance>> {
    list_all!(
        client,
        Host::Quotas,
        quotas::ListQuotaAllowancesRequest,
        parent_id,
        AllowanceService,
        allowance_from
    )
}

pub(super) async fn list_capacity_block_groups(
    client: &NebiusClient,
    tenant_id: &str,
) -> CloudResult<Vec<CapacityBlockGroup>> {
    list_all!(
        client,
        Host::Capacity,
        capacity::ListCapacityBlockGroupsRequest,
        tenant_id,
        BlockGroupService,
        block_from
    )
}
fn allowance_from(a: quotas::QuotaAllowance) -> QuotaAllowance {
    let spec = a.spec.clone().unwrap_or_default();
    let status = a.status.clone().unwrap_or_default();
    QuotaAllowance {
        id: meta_field(&a.metadata, |m| &m.id),
        parent_id: meta_field(&a.metadata, |m| &m.parent_id),
        name: meta_field(&a.metadata, |m| &m.name),
        region: spec.region,
        limit: spec.limit,
        usage: status.usage,
        usage_percentage: status.usage_percentage.clone(),
        usage_state: quotas::quota_allowance_status::UsageState::try_from(status.usage_state)
            .map(|s| {
                format!(
                    "USAGE_STATE_{}",
                    s.as_str_name().trim_start_matches("USAGE_STATE_")
                )
            })
            .unwrap_or_default(),
        unit: status.unit.clone(),
        state: quotas::quota_allowance_status::State::try_from(status.state)
            .map(|s| format!("STATE_{}", s.as_str_name().trim_start_matches("STATE_")))
            .unwrap_or_default(),
    }
}

fn block_from(b: capacity::CapacityBlockGroup) -> CapacityBlockGroup {
    let status = b.status.clone().unwrap_or_default();
    let affinity = status
        .resource_affinity
        .as_ref()
        .and_then(|a| a.versions.as_ref())
        .map(|capacity::resource_affinity::Versions::ComputeV1(c)| c.clone())
        .unwrap_or_default();
    CapacityBlockGroup {
        id: meta_field(&b.metadata, |m| &m.id),
        parent_id: meta_field(&b.metadata, |m| &m.parent_id),
        region: status.region.clone(),
        platform: affinity.platform,
        fabric: affinity.fabric,
        state: capacity::capacity_block_group_status::State::try_from(status.state)
            .map(|s| s.as_str_name().to_string())
            .unwrap_or_default(),
        current_limit: status.current_limit,
        usage: status.usage,
        usage_percentage: status.usage_percentage.clone(),
        usage_state: capacity::capacity_block_group_status::UsageState::try_from(
            status.usage_state,
        )
        .map(|s| s.as_str_name().to_string())
        .unwrap_or_default(),
    }
}
