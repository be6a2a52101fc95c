//! The live side of the pull-request preflight: each changed spec planned against the cloud
//! the engine reaches (Nebius, or a simulator an operator chose), and the tenant's quota
//! evidence, read before the pure evaluation in [`crate::bot::pr`].
//!
//! The bot reads only: it observes, plans and lists allowances; it never mutates. What it reads
//! is private (tenant, project and resource IDs), so it reaches the report only through
//! [`crate::bot::pr`], which keeps public fields and names only.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::engine::ops::{EngineError, ErrorSource, LifecycleOptions, Prepared, Refusal, prepare};

// What a caller reads of a fleet against its cloud, as the engine words it: the live plan,
// the targets fleetbot deployed and their status, the quota evidence.
pub use crate::engine::live::{
    Action, LivePlan, Problem, ProblemKind, ProjectPlan, ReadCache, ResourceAction, Summary,
    TargetPlan, target_key_of,
};
use crate::engine::ops::StatusResult;
pub use crate::engine::ops::{DeployedCluster, StatusEntry};
pub use crate::engine::preflight::proven_state;
use crate::fleet::Session;
use crate::quota::InMemoryEvidence;
use crate::quota::scope::ProvenState;
use crate::spec::{Backend, FleetSpec};

/// Why the cloud could not be planned against, by kind, so the preflight fails on each kind
/// and says which it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LiveErrorKind {
    /// No tenant is configured, or the spec names another one: nothing was read.
    Tenant,
    /// The cloud could not be read.
    Cloud,
    /// The bot's store (the inventory) could not be read.
    Store,
    /// The engine refused the spec before reading the cloud (a record of another backend, …).
    Engine,
}

/// A classified, public error: the message holds no store or cloud text (see [`public_error`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveError {
    /// What failed, for the report's wording and its metric label.
    pub kind: LiveErrorKind,
    /// The public message.
    pub message: String,
}

impl LiveError {
    /// An error of `kind` whose `message` is already public.
    pub fn new(kind: LiveErrorKind, message: impl Into<String>) -> Self {
        LiveError {
            kind,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for LiveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// The live plan of one spec's API-engine targets.
#[derive(Debug, Clone)]
pub struct PlannedFleet {
    /// The live plan of the spec's API-engine targets.
    pub plan: LivePlan,
    /// The spec's project index of each entry of `plan.projects`.
    pub project_index: Vec<usize>,
    /// The spec's (project, cluster) of each entry of `plan.targets`.
    pub target_index: Vec<(usize, usize)>,
    /// What the plan proves (unchanged targets add no demand).
    pub proven: ProvenState,
}

/// What the cloud said about one changed spec. Error texts are public (classified, see
/// [`public_error`]); the tenant is not.
#[derive(Clone)]
pub struct LiveSpec {
    /// Public name of the cloud ("Nebius", "the fleetbot simulator").
    pub cloud: String,
    /// `Ok(None)`: the spec has no target the API engine plans (soperator only).
    pub plan: Result<Option<PlannedFleet>, LiveError>,
    /// The tenant the evidence is for (private: never shown or logged).
    pub tenant_id: String,
    /// The quota evidence the cloud gave for that tenant (limits, usage, capacity).
    pub evidence: Result<Arc<InMemoryEvidence>, LiveError>,
}

impl std::fmt::Debug for LiveSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveSpec")
            .field("cloud", &self.cloud)
            .field(
                "plan",
                &self
                    .plan
                    .as_ref()
                    .map(|p| p.as_ref().map(|p| &p.plan.digest)),
            )
            .field("tenant_id", &"<redacted>")
            .field("evidence", &self.evidence.as_ref().map(|_| "read"))
            .finish()
    }
}

/// What a pull request may be told about an error: where it came from, never the text of a
/// store or cloud error (which can name hosts, paths, resources and IDs). The full error goes
/// to the bot's log without the cloud's own message.
pub fn public_error(e: &EngineError) -> LiveError {
    match e.source {
        // These refusals' words name the tenant, a capacity block or a project by ID: a pull
        // request is told which rule refused, in general words.
        ErrorSource::Engine(Refusal::Quota) => LiveError::new(
            LiveErrorKind::Engine,
            "the quota preflight found a shortfall (the fleet/preflight check shows the budget)",
        ),
        ErrorSource::Engine(Refusal::ProjectMissing) => LiveError::new(
            LiveErrorKind::Engine,
            "a project the spec names by ID does not exist",
        ),
        ErrorSource::Engine(_) => LiveError::new(LiveErrorKind::Engine, e.message.clone()),
        ErrorSource::Store => {
            tracing::warn!(error = %e.message, "live plan: the bot's store could not be read");
            LiveError::new(
                LiveErrorKind::Store,
                "the bot's store could not be read (see the bot's log)",
            )
        }
        ErrorSource::Cloud(code) => cloud_unreadable(code),
    }
}

fn cloud_unreadable(code: tonic::Code) -> LiveError {
    tracing::warn!(code = ?code, "live plan: the cloud could not be read");
    LiveError::new(
        LiveErrorKind::Cloud,
        format!("the cloud could not be read ({code:?})"),
    )
}

/// What the CLI reads of a fleet, with the engine's whole error (a person at a terminal may
/// see the cloud's own words; a pull request is shown [`public_error`]s only).
impl Session {
    /// The recorded and live state of every target of `spec`.
    pub async fn status(&self, spec: &FleetSpec) -> Result<StatusResult, EngineError> {
        crate::engine::ops::status(self.cloud(), self.inventory(), spec).await
    }

    /// The selected targets fleetbot deployed, each with its cluster as the cloud has it now.
    pub async fn deployed_clusters(
        &self,
        spec: &FleetSpec,
        only_projects: &[String],
        only_clusters: &[String],
    ) -> Result<Vec<DeployedCluster>, EngineError> {
        crate::engine::ops::deployed_clusters(
            self.cloud(),
            self.inventory(),
            spec,
            only_projects,
            only_clusters,
        )
        .await
    }

    /// The tenant's quota allowances and capacity blocks, read live.
    pub async fn live_evidence(
        &self,
        tenant_id: &str,
    ) -> Result<InMemoryEvidence, crate::cloud::CloudError> {
        crate::engine::preflight::live_evidence(self.cloud(), tenant_id).await
    }
}

/// The App's reads: what a pull request's preflight and the reconcile pass plan, budget and
/// check, with errors a pull request may be shown ([`public_error`]). The apply job alone
/// applies ([`super::apply`]), which `src/architecture.rs` holds.
impl Session {
    /// The tenant whose allowances apply to `spec` for the App: the configured one, which a
    /// spec naming a tenant must match.
    pub fn app_tenant_for(&self, spec: &FleetSpec) -> Result<String, LiveError> {
        // Only the configured tenant is ever read: a pull request chooses its spec's
        // tenant_id, and must not point the bot's credentials at another tenant.
        let tenant = self.tenant_id();
        if tenant.is_empty() {
            return Err(LiveError::new(
                LiveErrorKind::Tenant,
                "fleetbot has no tenant configured to plan against (FLEETBOT_TENANT_ID)",
            ));
        }
        let named = spec.tenant_id.trim();
        if !named.is_empty() && named != tenant {
            return Err(LiveError::new(
                LiveErrorKind::Tenant,
                "the spec's tenant_id is not the tenant fleetbot is configured to plan against (FLEETBOT_TENANT_ID)",
            ));
        }
        Ok(tenant.to_string())
    }

    /// The live plan of the spec's mk8s targets (`Ok(None)` when it has none). `reads`: the
    /// listings shared with the other specs of one pass or head (`None`: read afresh).
    pub async fn plan_fleet(
        &self,
        spec: &FleetSpec,
        tenant_id: &str,
        reads: Option<Arc<ReadCache>>,
    ) -> Result<Option<PlannedFleet>, LiveError> {
        Ok(self
            .prepare_fleet(spec, tenant_id, reads)
            .await?
            .map(|(planned, _)| planned))
    }

    /// [`Session::plan_fleet`], with the engine's prepared plan: what applying exactly
    /// this plan takes (the App's guard judges the one, the apply applies the other).
    pub(crate) async fn prepare_fleet(
        &self,
        spec: &FleetSpec,
        tenant_id: &str,
        reads: Option<Arc<ReadCache>>,
    ) -> Result<Option<(PlannedFleet, Prepared)>, LiveError> {
        // The API engine plans mk8s targets; soperator targets stay statically planned (and
        // are not budgeted, as in the reference). They are left out by position, not by name:
        // an mk8s and a soperator cluster may share a name in two projects.
        let (mk8s, index) = mk8s_only(spec);
        if index.is_empty() {
            return Ok(None);
        }
        let options = LifecycleOptions {
            // Only the spec's own key: a key on the bot's host means nothing to the fleet.
            ssh_public_key: spec.ssh_public_key.trim().to_string(),
            reads,
            ..LifecycleOptions::default()
        };
        let prepared = prepare(self.cloud(), self.inventory(), &mk8s, tenant_id, &options)
            .await
            .map_err(|e| public_error(&e))?;
        let planned = PlannedFleet {
            proven: proven_state(&prepared.plan),
            project_index: prepared.projects.iter().map(|(i, _)| *i).collect(),
            target_index: prepared
                .selected
                .iter()
                .map(|&(p, c)| (p, index[&(p, c)]))
                .collect(),
            plan: prepared.plan.clone(),
        };
        Ok(Some((planned, prepared)))
    }

    /// The tenant's allowances and capacity blocks.
    pub async fn quota_evidence(&self, tenant_id: &str) -> Result<InMemoryEvidence, LiveError> {
        self.live_evidence(tenant_id)
            .await
            .map_err(|e| cloud_unreadable(e.code))
    }
}

/// The spec without its soperator clusters, and where each kept cluster was in the original
/// (`(project, cluster in the copy)` → cluster in the original). Projects keep their positions.
pub(crate) fn mk8s_only(spec: &FleetSpec) -> (FleetSpec, BTreeMap<(usize, usize), usize>) {
    let mut copy = spec.clone();
    let mut index = BTreeMap::new();
    for (p, project) in copy.projects.iter_mut().enumerate() {
        let mut kept = 0;
        project.clusters = std::mem::take(&mut project.clusters)
            .into_iter()
            .enumerate()
            .filter(|(_, c)| c.backend != Backend::Soperator)
            .map(|(c, cluster)| {
                index.insert((p, kept), c);
                kept += 1;
                cluster
            })
            .collect();
    }
    (copy, index)
}

/// Plans every spec of one head against `cloud`, reading each tenant's evidence once and each
/// listing the specs share once.
pub async fn read_live(
    cloud: &Session,
    specs: &[(String, FleetSpec)],
) -> BTreeMap<String, LiveSpec> {
    let reads = ReadCache::new();
    let mut evidence: BTreeMap<String, Result<Arc<InMemoryEvidence>, LiveError>> = BTreeMap::new();
    let mut out = BTreeMap::new();
    for (path, spec) in specs {
        let tenant = match cloud.app_tenant_for(spec) {
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
        let plan = cloud.plan_fleet(spec, &tenant, Some(reads.clone())).await;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_naming_the_tenant_or_a_project_id_are_said_in_general_words() {
        let quota = EngineError::refused(
            Refusal::Quota,
            "tenant tenant-e00secret quota is too low for capacity block capacityblockgroup-e00x",
        );
        let missing = EngineError::refused(
            Refusal::ProjectMissing,
            "project project-e00x does not exist",
        );
        for e in [quota, missing] {
            let public = public_error(&e);
            assert_eq!(public.kind, LiveErrorKind::Engine);
            assert!(!public.message.contains("e00"), "{}", public.message);
        }
        let selection =
            EngineError::refused(Refusal::Selection, "--only-clusters names nothing: x");
        assert_eq!(public_error(&selection).message, selection.message);
    }

    #[test]
    fn soperator_clusters_are_left_out_by_position_not_by_name() {
        // research's soperator cluster shares its name with platform's mk8s cluster.
        let text = include_str!("../../fixtures/specs/mixed-backends.yaml")
            .replace("      - name: slurm-gpu\n", "      - name: legacy\n")
            .replace("name: slurm-gpu   #", "name: legacy   #");
        let spec = crate::spec::load_str(&text, "mixed.yaml").unwrap();
        assert!(
            spec.projects[1]
                .clusters
                .iter()
                .any(|c| c.name == "legacy" && c.backend == Backend::Soperator)
        );
        let (mk8s, index) = mk8s_only(&spec);
        let kept: Vec<(usize, usize, &str)> = index
            .iter()
            .map(|(&(p, c), &original)| (p, original, mk8s.projects[p].clusters[c].name.as_str()))
            .collect();
        assert_eq!(
            kept,
            vec![(0, 0, "legacy"), (0, 1, "kube"), (1, 0, "mig")],
            "{index:?}"
        );
        for (&(p, c), &original) in &index {
            assert_eq!(
                mk8s.projects[p].clusters[c].name,
                spec.projects[p].clusters[original].name
            );
            assert_ne!(
                spec.projects[p].clusters[original].backend,
                Backend::Soperator
            );
        }
        assert!(
            mk8s.projects
                .iter()
                .flat_map(|p| &p.clusters)
                .all(|c| c.backend != Backend::Soperator)
        );
    }
}
