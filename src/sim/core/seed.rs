//! A fresh world: the tenant, its quota allowances and capacity block groups, and the
//! projects the world names, all with IDs derived from the world so reruns agree.

use super::charging::{block_usage_state, default_unit, quota_usage_state};
use super::{CallContext, Core, now_ms, timestamp};
use crate::cloud::nid;
use crate::cloud::proto::nebius::capacity::v1 as capacity;
use crate::cloud::proto::nebius::common::v1::ResourceMetadata;
use crate::cloud::proto::nebius::iam::v1 as iam;
use crate::cloud::proto::nebius::quotas::v1 as quotas;
use crate::sim::resources::{Phase, Resource};
use crate::sim::world::{CapacityBlockSpec, ProjectSeed, QuotaSpec};

impl Core {
    pub(super) fn seed(&mut self) -> Result<(), String> {
        let world = self.world.clone();
        self.seed_tenant();
        for (region, entries) in &world.quotas {
            for (name, entry) in entries {
                let allowance = self.seeded_allowance(region, name, &entry.spec());
                self.state.quota_allowances.push(allowance);
            }
        }
        for block in &world.capacity_block_groups {
            let group = self.seeded_block_group(block)?;
            self.state.capacity_block_groups.push(group);
        }
        for seed in &world.projects {
            self.seed_project(seed)?;
        }
        Ok(())
    }

    fn seed_tenant(&mut self) {
        let tenant_meta = ResourceMetadata {
            id: self.tenant_id.clone(),
            name: self.world.tenant_name.clone(),
            created_at: Some(timestamp(now_ms())),
            resource_version: 1,
            ..Default::default()
        };
        let mut tenant = iam::Container::build(tenant_meta, iam::ContainerSpec::default());
        tenant.set_phase(Phase::Ready, "eu-north1");
        self.state.tenants.push(tenant);
    }

    fn seeded_allowance(
        &self,
        region: &str,
        name: &str,
        spec: &QuotaSpec,
    ) -> quotas::QuotaAllowance {
        let id = nid::make(
            "quotaallowance",
            region,
            &format!("{}/{region}/{name}", self.world.name),
        );
        quotas::QuotaAllowance {
            metadata: Some(ResourceMetadata {
                id,
                parent_id: self.tenant_id.clone(),
                name: name.to_string(),
                resource_version: 1,
                ..Default::default()
            }),
            spec: Some(quotas::QuotaAllowanceSpec {
                limit: spec.limit.finite(),
                region: region.to_string(),
            }),
            status: Some(quotas::QuotaAllowanceStatus {
                state: quotas::quota_allowance_status::State::Active as i32,
                usage: spec.usage,
                service: name.split('.').next().unwrap_or("").to_string(),
                unit: spec
                    .unit
                    .clone()
                    .unwrap_or_else(|| default_unit(name).to_string()),
                usage_state: quota_usage_state(spec.usage),
                ..Default::default()
            }),
        }
    }

    fn seeded_block_group(
        &self,
        block: &CapacityBlockSpec,
    ) -> Result<capacity::CapacityBlockGroup, String> {
        use capacity::capacity_block_group_status::State;
        let state = match block.state.as_str() {
            "allocating" => State::Allocating,
            "shutting" => State::Shutting,
            "inactive" => State::Inactive,
            "active" => State::Active,
            other => {
                return Err(format!(
                    "capacity block group {:?}: unknown state {other:?}",
                    block.name
                ));
            }
        };
        let affinity = capacity::ResourceAffinityComputeV1 {
            fabric: block.fabric.clone(),
            platform: block.platform.clone(),
        };
        Ok(capacity::CapacityBlockGroup {
            metadata: Some(ResourceMetadata {
                id: self.capacity_block_id(&block.name),
                parent_id: self.tenant_id.clone(),
                resource_version: 1,
                ..Default::default()
            }),
            spec: Some(capacity::CapacityBlockGroupSpec {}),
            status: Some(capacity::CapacityBlockGroupStatus {
                region: block.region.clone(),
                resource_affinity: Some(capacity::ResourceAffinity {
                    versions: Some(capacity::resource_affinity::Versions::ComputeV1(affinity)),
                }),
                service: "compute".into(),
                state: state as i32,
                current_limit: block.limit,
                usage: block.usage,
                usage_state: block_usage_state(block.usage),
                ..Default::default()
            }),
        })
    }

    /// Projects go through `create`, so a seeded one is indistinguishable from one a caller
    /// made: the same ID scheme, default network and subnet, and charges.
    fn seed_project(&mut self, seed: &ProjectSeed) -> Result<(), String> {
        let ctx = CallContext {
            caller: "world".into(),
            ..Default::default()
        };
        let meta = ResourceMetadata {
            parent_id: self.tenant_id.clone(),
            name: seed.name.clone(),
            ..Default::default()
        };
        let spec = iam::ContainerSpec {
            region: seed.region.clone(),
        };
        let op = self
            .create::<iam::Container>(&ctx, meta, spec, 0)
            .map_err(|s| format!("seeding project {:?}: {}", seed.name, s.message()))?;
        if let Some(status) = &op.status
            && status.code != 0
        {
            return Err(format!(
                "seeding project {:?}: {}",
                seed.name, status.message
            ));
        }
        Ok(())
    }

    /// The ID a world's capacity block group gets; tests use it to fill specs at run time.
    pub fn capacity_block_id(&self, name: &str) -> String {
        let region = self
            .world
            .capacity_block_groups
            .iter()
            .find(|b| b.name == name)
            .map_or("eu-north1", |b| b.region.as_str());
        nid::make(
            "capacityblockgroup",
            region,
            &format!("{}/{name}", self.world.name),
        )
    }
}
