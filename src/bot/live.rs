//! The live side of the pull-request preflight: each changed spec planned against the cloud
//! the engine reaches (Nebius, or a simulator an operator chose), and the tenant's quota
//! evidence, read before the pure evaluation in [`super::pr`].
//!
//! The bot reads only: it observes, plans and lists allowances; it never mutates. What it reads
//! is private (tenant, project and resource IDs), so it reaches the report only through
//! [`super::pr`], which keeps public fields and names only.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::cloud::domain::Cloud;
use crate::engine::live::LivePlan;
use crate::engine::ops::{LifecycleOptions, prepare};
use crate::engine::preflight::{live_evidence, proven_state};
use crate::quota::InMemoryEvidence;
use crate::quota::scope::ProvenState;
use crate::spec::{Backend, FleetSpec};
use crate::store::InventoryStore;

/// A boxed future, so [`LiveCloud`] stays object-safe (`Arc<dyn LiveCloud>` in the bot).
pub type LiveFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, String>> + Send + 'a>>;

/// The live plan of one spec's API-engine targets.
#[derive(Debug, Clone)]
pub struct PlannedFleet {
    pub plan: LivePlan,
    /// The spec's project index of each entry of `plan.projects`.
    pub project_index: Vec<usize>,
    /// The spec's (project, cluster) of each entry of `plan.targets`.
    pub target_index: Vec<(usize, usize)>,
    /// What the plan proves (unchanged targets add no demand).
    pub proven: ProvenState,
}

/// What the cloud said about one changed spec.
#[derive(Debug, Clone)]
pub struct LiveSpec {
    /// Public name of the cloud ("Nebius", "the fleetbot simulator").
    pub cloud: String,
    /// `Ok(None)`: the spec has no target the API engine plans (soperator only).
    pub plan: Result<Option<PlannedFleet>, String>,
    /// The tenant the evidence is for (private: never shown).
    pub tenant_id: String,
    pub evidence: Result<Arc<InMemoryEvidence>, String>,
}

/// A cloud the bot can plan against. Reads only.
pub trait LiveCloud: Send + Sync + 'static {
    /// Public name for the comment; never an endpoint, path or ID.
    fn public_name(&self) -> String;

    /// The tenant whose allowances apply to `spec`: the spec's, else the configured one.
    fn tenant_for(&self, spec: &FleetSpec) -> Result<String, String>;

    /// The live plan of the spec's mk8s targets (`Ok(None)` when it has none).
    fn plan_fleet<'a>(
        &'a self,
        spec: &'a FleetSpec,
        tenant_id: &'a str,
    ) -> LiveFuture<'a, Option<PlannedFleet>>;

    /// The tenant's allowances and capacity blocks.
    fn quota_evidence<'a>(&'a self, tenant_id: &'a str) -> LiveFuture<'a, InMemoryEvidence>;
}

/// [`LiveCloud`] over the cloud layer and an inventory (the bot's store).
pub struct CloudPlanner<C, S> {
    cloud: C,
    inventory: S,
    public_name: String,
    default_tenant: Option<String>,
}

impl<C, S> CloudPlanner<C, S> {
    /// `default_tenant` applies to specs that name none (`FLEETBOT_TENANT_ID`, or what the
    /// credentials' source names).
    pub fn new(
        cloud: C,
        inventory: S,
        public_name: impl Into<String>,
        default_tenant: Option<String>,
    ) -> Self {
        CloudPlanner {
            cloud,
            inventory,
            public_name: public_name.into(),
            default_tenant: default_tenant.filter(|t| !t.trim().is_empty()),
        }
    }
}

impl<C, S> LiveCloud for CloudPlanner<C, S>
where
    C: Cloud + 'static,
    S: InventoryStore + 'static,
{
    fn public_name(&self) -> String {
        self.public_name.clone()
    }

    fn tenant_for(&self, spec: &FleetSpec) -> Result<String, String> {
        if !spec.tenant_id.trim().is_empty() {
            return Ok(spec.tenant_id.trim().to_string());
        }
        self.default_tenant.clone().ok_or_else(|| {
            "the spec names no tenant_id and fleetbot has no default tenant (FLEETBOT_TENANT_ID)"
                .to_string()
        })
    }

    fn plan_fleet<'a>(
        &'a self,
        spec: &'a FleetSpec,
        tenant_id: &'a str,
    ) -> LiveFuture<'a, Option<PlannedFleet>> {
        Box::pin(async move {
            // The API engine plans mk8s targets; soperator targets stay statically planned
            // and are charged in full by the budget.
            let mk8s: Vec<String> = spec
                .projects
                .iter()
                .flat_map(|p| &p.clusters)
                .filter(|c| c.backend != Backend::Soperator)
                .map(|c| c.name.clone())
                .collect();
            if mk8s.is_empty() {
                return Ok(None);
            }
            let all = spec
                .projects
                .iter()
                .map(|p| p.clusters.len())
                .sum::<usize>();
            let options = LifecycleOptions {
                only_clusters: if mk8s.len() == all { Vec::new() } else { mk8s },
                // Only the spec's own key: a key on the bot's host means nothing to the fleet.
                ssh_public_key: spec.ssh_public_key.trim().to_string(),
                ..LifecycleOptions::default()
            };
            let prepared = prepare(&self.cloud, &self.inventory, spec, tenant_id, &options)
                .await
                .map_err(|e| e.to_string())?;
            Ok(Some(PlannedFleet {
                proven: proven_state(&prepared.plan),
                project_index: prepared.projects.iter().map(|(i, _)| *i).collect(),
                target_index: prepared.selected.clone(),
                plan: prepared.plan,
            }))
        })
    }

    fn quota_evidence<'a>(&'a self, tenant_id: &'a str) -> LiveFuture<'a, InMemoryEvidence> {
        Box::pin(live_evidence(&self.cloud, tenant_id))
    }
}

/// Plans every spec against `cloud`, reading each tenant's evidence once.
pub async fn read_live(
    cloud: &dyn LiveCloud,
    specs: &[(String, FleetSpec)],
) -> BTreeMap<String, LiveSpec> {
    let mut evidence: BTreeMap<String, Result<Arc<InMemoryEvidence>, String>> = BTreeMap::new();
    let mut out = BTreeMap::new();
    for (path, spec) in specs {
        let tenant = match cloud.tenant_for(spec) {
            Ok(t) => t,
            Err(e) => {
                out.insert(
                    path.clone(),
                    LiveSpec {
                        cloud: cloud.public_name(),
                        plan: Err(e.clone()),
                        tenant_id: String::new(),
                        evidence: Err(e),
                    },
                );
                continue;
            }
        };
        let plan = cloud.plan_fleet(spec, &tenant).await;
        if !evidence.contains_key(&tenant) {
            let read = cloud.quota_evidence(&tenant).await.map(Arc::new);
            evidence.insert(tenant.clone(), read);
        }
        out.insert(
            path.clone(),
            LiveSpec {
                cloud: cloud.public_name(),
                plan,
                evidence: evidence[&tenant].clone(),
                tenant_id: tenant,
            },
        );
    }
    out
}
