//! `nebius.capacity.v1`: capacity block groups (reserved GPUs) and their intervals.

use tonic::{Request, Response, Status};

use super::SimService;
use crate::cloud::nid;
use crate::cloud::proto::nebius::capacity::v1 as capacity;
use crate::cloud::proto::nebius::common::v1 as common;
use crate::sim::core::{Core, not_found, paginate};

fn block_group<'c>(core: &'c Core, id: &str) -> Result<&'c capacity::CapacityBlockGroup, Status> {
    core.state
        .capacity_block_groups
        .iter()
        .find(|b| b.metadata.as_ref().is_some_and(|m| m.id == id))
        .ok_or_else(|| not_found("capacity", id))
}

fn block_affinity(
    block: &capacity::CapacityBlockGroup,
) -> Option<&capacity::ResourceAffinityComputeV1> {
    block
        .status
        .as_ref()?
        .resource_affinity
        .as_ref()?
        .versions
        .as_ref()
        .map(|capacity::resource_affinity::Versions::ComputeV1(c)| c)
}

#[tonic::async_trait]
impl capacity::capacity_block_group_service_server::CapacityBlockGroupService for SimService {
    async fn get(
        &self,
        request: Request<capacity::GetCapacityBlockGroupRequest>,
    ) -> Result<Response<capacity::CapacityBlockGroup>, Status> {
        self.enter(
            &request,
            "/nebius.capacity.v1.CapacityBlockGroupService/Get",
        )
        .await?;
        let core = self.lock();
        Ok(Response::new(
            block_group(&core, &request.get_ref().id)?.clone(),
        ))
    }
    async fn get_by_resource_affinity(
        &self,
        request: Request<capacity::GetCapacityBlockGroupByResourceAffinityRequest>,
    ) -> Result<Response<capacity::CapacityBlockGroup>, Status> {
        self.enter(
            &request,
            "/nebius.capacity.v1.CapacityBlockGroupService/GetByResourceAffinity",
        )
        .await?;
        let r = request.get_ref();
        let wanted = r
            .resource_affinity
            .as_ref()
            .and_then(|a| a.versions.as_ref())
            .map(|capacity::resource_affinity::Versions::ComputeV1(c)| c.clone());
        self.lock()
            .state
            .capacity_block_groups
            .iter()
            .find(|b| {
                b.metadata
                    .as_ref()
                    .is_some_and(|m| m.parent_id == r.parent_id)
                    && b.status.as_ref().is_some_and(|s| s.region == r.region)
                    && block_affinity(b) == wanted.as_ref()
            })
            .cloned()
            .map(Response::new)
            .ok_or_else(|| not_found("capacity", "capacity block group with that affinity"))
    }
    async fn list(
        &self,
        request: Request<capacity::ListCapacityBlockGroupsRequest>,
    ) -> Result<Response<capacity::ListCapacityBlockGroupsResponse>, Status> {
        self.enter(
            &request,
            "/nebius.capacity.v1.CapacityBlockGroupService/List",
        )
        .await?;
        let r = request.get_ref();
        let core = self.lock();
        let all: Vec<&capacity::CapacityBlockGroup> = core
            .state
            .capacity_block_groups
            .iter()
            .filter(|b| {
                b.metadata
                    .as_ref()
                    .is_some_and(|m| m.parent_id == r.parent_id)
            })
            .collect();
        let (items, next_page_token) =
            paginate(&all, r.page_size.min(200), &r.page_token, "capacity")?;
        Ok(Response::new(capacity::ListCapacityBlockGroupsResponse {
            items,
            next_page_token,
        }))
    }
    async fn list_resources(
        &self,
        request: Request<capacity::ListCapacityBlockGroupResourcesRequest>,
    ) -> Result<Response<capacity::ListCapacityBlockGroupResourcesResponse>, Status> {
        self.enter(
            &request,
            "/nebius.capacity.v1.CapacityBlockGroupService/ListResources",
        )
        .await?;
        let id = &request.get_ref().id;
        let core = self.lock();
        block_group(&core, id)?;
        let resource_ids = core
            .state
            .reservations
            .iter()
            .filter(|r| &r.block_id == id)
            .map(|r| r.resource_id.clone())
            .collect();
        Ok(Response::new(
            capacity::ListCapacityBlockGroupResourcesResponse { resource_ids },
        ))
    }
}

/// Each block has one active interval covering its whole limit.
fn interval_of(block: &capacity::CapacityBlockGroup) -> capacity::CapacityInterval {
    let meta = block.metadata.clone().unwrap_or_default();
    let status = block.status.clone().unwrap_or_default();
    let region = status.region.clone();
    capacity::CapacityInterval {
        metadata: Some(common::ResourceMetadata {
            id: nid::make("capacityinterval", &region, &meta.id),
            parent_id: meta.id.clone(),
            resource_version: 1,
            ..Default::default()
        }),
        spec: Some(capacity::CapacityIntervalSpec {}),
        status: Some(capacity::CapacityIntervalStatus {
            container_id: meta.parent_id,
            region,
            resource_affinity: status.resource_affinity,
            service: "compute".into(),
            quantity: status.current_limit,
            state: capacity::capacity_interval_status::State::Active as i32,
            ..Default::default()
        }),
    }
}

#[tonic::async_trait]
impl capacity::capacity_interval_service_server::CapacityIntervalService for SimService {
    async fn get(
        &self,
        request: Request<capacity::GetCapacityIntervalRequest>,
    ) -> Result<Response<capacity::CapacityInterval>, Status> {
        self.enter(&request, "/nebius.capacity.v1.CapacityIntervalService/Get")
            .await?;
        let id = &request.get_ref().id;
        self.lock()
            .state
            .capacity_block_groups
            .iter()
            .map(interval_of)
            .find(|i| i.metadata.as_ref().is_some_and(|m| &m.id == id))
            .map(Response::new)
            .ok_or_else(|| not_found("capacity", id))
    }
    async fn list(
        &self,
        request: Request<capacity::ListCapacityIntervalsRequest>,
    ) -> Result<Response<capacity::ListCapacityIntervalsResponse>, Status> {
        self.enter(&request, "/nebius.capacity.v1.CapacityIntervalService/List")
            .await?;
        let r = request.get_ref();
        let core = self.lock();
        let intervals: Vec<capacity::CapacityInterval> = core
            .state
            .capacity_block_groups
            .iter()
            .filter(|b| b.metadata.as_ref().is_some_and(|m| m.id == r.parent_id))
            .map(interval_of)
            .collect();
        let refs: Vec<&capacity::CapacityInterval> = intervals.iter().collect();
        let (items, next_page_token) = paginate(&refs, r.page_size, &r.page_token, "capacity")?;
        Ok(Response::new(capacity::ListCapacityIntervalsResponse {
            items,
            next_page_token,
        }))
    }
}
