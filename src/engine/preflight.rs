//! Preflight against the live cloud: the tenant's allowances and capacity blocks read through
//! the cloud layer, and proof of unchanged targets taken from the live plan.

use std::collections::{BTreeMap, BTreeSet};

use super::live::{Action, LivePlan, target_key_of};
use crate::cloud::domain::Cloud;
use crate::quota::allowances::{AllowanceStatus, StatusField};
use crate::quota::scope::{ProvenState, ScopeOptions, Selection, UnchangedEvidence};
use crate::quota::wire::Wire;
use crate::quota::{
    AllowanceDocument, AllowanceRecord, CapacityBlockDocument, CapacityBlockGroup,
    InMemoryEvidence, PreflightReport, fleet_demand, run_preflight,
};
use crate::spec::FleetSpec;

/// Zero is the proto3 default: a zero counter reads as "not sent", exactly as the CLI's JSON
/// shows it, so the usage evidence falls back the same way in both sources.
fn counter(value: u64) -> Wire<u64> {
    if value == 0 {
        Wire::Absent
    } else {
        Wire::Value(value)
    }
}

fn text(value: &str) -> Wire<String> {
    if value.is_empty() {
        Wire::Absent
    } else {
        Wire::Value(value.to_string())
    }
}

/// Reads the tenant's allowances and capacity blocks into the documents preflight checks.
pub async fn live_evidence<C: Cloud>(
    cloud: &C,
    tenant_id: &str,
) -> Result<InMemoryEvidence, crate::cloud::CloudError> {
    let allowances = cloud.list_quota_allowances(tenant_id).await?;
    let blocks = cloud.list_capacity_block_groups(tenant_id).await?;
    let allowances = AllowanceDocument {
        items: allowances
            .into_iter()
            .map(|a| AllowanceRecord {
                name: a.name,
                parent_id: a.parent_id,
                container_id: String::new(),
                region: a.region,
                limit: a.limit.into(),
                status: StatusField::Present(AllowanceStatus {
                    state: a.state,
                    unit: a.unit.trim().to_lowercase(),
                    usage: counter(a.usage),
                    usage_percentage: text(&a.usage_percentage),
                    usage_state: a.usage_state,
                }),
            })
            .collect(),
        next_page_token: String::new(),
    };
    let blocks = CapacityBlockDocument {
        items: blocks
            .into_iter()
            .map(|b| CapacityBlockGroup {
                id: b.id,
                parent_id: b.parent_id,
                region: b.region,
                state: b.state,
                platform: b.platform,
                fabric: b.fabric,
                current_limit: Wire::Value(b.current_limit),
                usage: counter(b.usage),
                usage_percentage: text(&b.usage_percentage),
                usage_state: b.usage_state,
            })
            .collect(),
        next_page_token: String::new(),
    };
    Ok(InMemoryEvidence::new(allowances, blocks))
}

/// What the live plan proves: targets unchanged in full, projects that exist, buckets that exist
/// with the declared shape.
pub fn proven_state(plan: &LivePlan) -> ProvenState {
    let mut unchanged = BTreeMap::new();
    for target in &plan.targets {
        if target.unchanged {
            let key = target_key_of(target);
            unchanged.insert(
                crate::quota::TargetKey::new(&key.project_key, &key.cluster),
                UnchangedEvidence {
                    inventory_deployed: true,
                    desired_state_matches: true,
                    project_verified: true,
                    cluster_running: true,
                    node_groups_match: true,
                },
            );
        }
    }
    let mut existing_projects = BTreeSet::new();
    let mut existing_buckets = BTreeSet::new();
    for project in &plan.projects {
        if project.problems.is_empty()
            && project
                .actions
                .iter()
                .any(|a| a.resource == "project" && a.action == Action::Reuse)
        {
            existing_projects.insert(project.key.clone());
        }
        if project
            .actions
            .iter()
            .any(|a| a.resource == "bucket" && a.action == Action::NoChange)
        {
            existing_buckets.insert(project.key.clone());
        }
    }
    ProvenState {
        unchanged,
        existing_projects,
        existing_buckets,
    }
}

/// Why a live preflight could not judge the selection.
#[derive(Debug, thiserror::Error)]
pub enum PreflightError {
    /// The selection's demand could not be computed (a region unresolved, …).
    #[error(transparent)]
    Demand(#[from] crate::quota::scope::ScopeError),
    /// The tenant's allowances could not be read: no evidence, so nothing may be created.
    #[error(
        "could not read tenant quota allowances; refusing to create projects or resources without capacity evidence ({0})"
    )]
    Evidence(#[source] crate::cloud::CloudError),
}

/// Runs preflight for the selected targets against live evidence.
pub async fn live_preflight<C: Cloud>(
    cloud: &C,
    spec: &FleetSpec,
    tenant_id: &str,
    selection: Selection,
    project_prefix: &str,
    plan: &LivePlan,
    progress: &mut (dyn FnMut(&str) + Send),
) -> Result<PreflightReport, PreflightError> {
    let options = ScopeOptions {
        selection,
        project_prefix: Some(project_prefix.to_string()),
    };
    let demand = fleet_demand(spec, &options, &proven_state(plan))?;
    let evidence = live_evidence(cloud, tenant_id)
        .await
        .map_err(PreflightError::Evidence)?;
    Ok(run_preflight(demand, tenant_id, &evidence, progress))
}
