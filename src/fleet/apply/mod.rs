//! The one door through which a fleet is changed: a plan read now, approved by whoever may
//! approve it (the App's guard, or a person at a terminal), and then exactly that plan applied;
//! and the teardown of recorded targets. The CLI's `deploy` and `destroy`, the App's apply job
//! and the demo (through [`guarded`]) and the library's [`super::Fleet`] all come here, and
//! `src/architecture.rs` holds everything else to it.

use super::live::{CloudPlanner, LiveError, mk8s_only, public_error};
use crate::cloud::domain::Cloud;
use crate::engine::ops::{
    DeployResult, DestroyResult, EngineError, LifecycleOptions, Prepared, Progress,
};
use crate::spec::FleetSpec;
use crate::store::InventoryStore;

pub mod guarded;
pub mod waves;

/// Who approved the plan about to be applied, and so what it may delete, replace or shrink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Approved {
    /// The App's guard allowed it ([`super::guard::decide`]): the plan is the one reviewed on
    /// the pull request (or `/apply` accepted the change), and whatever it deletes was approved
    /// there with `/approve-destroy`. `prune` deletes the targets the spec no longer declares.
    ByGuard {
        /// Whether the targets removed from the spec are deleted.
        prune: bool,
    },
    /// A person at a terminal: answered the prompt that listed each destructive line, or gave
    /// `--yes` (which allows them only with `--allow-destroy`). Pruning is the caller's
    /// `--prune`, in its options.
    ByPerson {
        /// Whether the plan may delete, replace or shrink inside the fleet's targets.
        allow_destroy: bool,
    },
}

impl Approved {
    /// `options` as this approval lets them apply.
    fn options(self, options: &LifecycleOptions) -> LifecycleOptions {
        match self {
            Approved::ByGuard { prune } => LifecycleOptions {
                prune,
                allow_destructive: true,
                ..options.clone()
            },
            Approved::ByPerson { allow_destroy } => LifecycleOptions {
                allow_destructive: allow_destroy,
                ..options.clone()
            },
        }
    }
}

/// Reads the plan of the selected targets (nothing is changed), for the approval to be given on.
pub async fn plan<C: Cloud, S: InventoryStore>(
    cloud: &C,
    inventory: &S,
    spec: &FleetSpec,
    tenant_id: &str,
    options: &LifecycleOptions,
) -> Result<Prepared, EngineError> {
    crate::engine::ops::prepare(cloud, inventory, spec, tenant_id, options).await
}

/// Applies `plan` (read by [`plan`] with the same `options`) as `approved` allows: preflight
/// first, nothing mutated if it or the plan's problems refuse; a destructive plan that was not
/// approved as destructive is refused before anything changes.
#[allow(clippy::too_many_arguments)]
pub async fn apply<C, S>(
    cloud: &C,
    inventory: &S,
    spec: &FleetSpec,
    tenant_id: &str,
    options: &LifecycleOptions,
    plan: Prepared,
    approved: Approved,
    progress: Progress,
) -> Result<DeployResult, EngineError>
where
    C: Cloud + Clone + 'static,
    S: InventoryStore + Clone + 'static,
{
    let options = approved.options(options);
    crate::engine::ops::deploy_prepared(cloud, inventory, spec, tenant_id, &options, plan, progress)
        .await
}

/// [`plan`], then [`apply`] of that plan: for callers whose approval does not depend on what
/// the plan says (the guard decided on the plan it read; `--yes`).
pub async fn plan_and_apply<C, S>(
    cloud: &C,
    inventory: &S,
    spec: &FleetSpec,
    tenant_id: &str,
    options: &LifecycleOptions,
    approved: Approved,
    progress: Progress,
) -> Result<DeployResult, EngineError>
where
    C: Cloud + Clone + 'static,
    S: InventoryStore + Clone + 'static,
{
    // The plan is read with the options the approval lets apply, so it is the plan applied.
    let prepared = plan(
        cloud,
        inventory,
        spec,
        tenant_id,
        &approved.options(options),
    )
    .await?;
    apply(
        cloud, inventory, spec, tenant_id, options, prepared, approved, progress,
    )
    .await
}

/// Tears down the selected targets the inventory records, each by exact ID after its
/// ownership is proven; projects and buckets are kept. Only a person asks for this (`destroy`
/// confirmed or `--yes`): the App never destroys a fleet.
pub async fn destroy<C: Cloud, S: InventoryStore>(
    cloud: &C,
    inventory: &S,
    spec: &FleetSpec,
    options: &LifecycleOptions,
    progress: Progress,
) -> Result<DestroyResult, EngineError> {
    crate::engine::ops::destroy(cloud, inventory, spec, options, progress).await
}

/// The lifecycle options the bot applies with: the spec's own SSH key only (a key on the
/// bot's host means nothing to the fleet), preflight on. What the plan deletes or shrinks
/// inside a target is allowed here because `fleet::guard::decide` already required
/// `/approve-destroy` on exactly this plan before any apply was queued.
pub(crate) fn bot_options(spec: &FleetSpec, prune: bool) -> LifecycleOptions {
    LifecycleOptions {
        ssh_public_key: spec.ssh_public_key.trim().to_string(),
        prune,
        allow_destructive: true,
        preflight: true,
        ..LifecycleOptions::default()
    }
}

/// The App's applying methods, private to this module: only [`guarded`] and its [`waves`] can
/// call them (after the guard allowed the plan).
impl CloudPlanner {
    /// Deploys the spec's mk8s targets, all of them or the `(projects, clusters)` selected
    /// (empty: no filter); `prune` applies only to the whole spec, as in the engine.
    async fn apply_selected(
        &self,
        spec: &FleetSpec,
        tenant_id: &str,
        prune: bool,
        (only_projects, only_clusters): (Vec<String>, Vec<String>),
        approved_reading: Option<std::sync::Arc<crate::engine::live::Observed>>,
        progress: Progress,
    ) -> Result<DeployResult, LiveError> {
        let (mk8s, _) = mk8s_only(spec);
        let options = LifecycleOptions {
            only_projects,
            only_clusters,
            approved_reading,
            ..bot_options(&mk8s, prune)
        };
        plan_and_apply(
            self.cloud(),
            self.inventory(),
            &mk8s,
            tenant_id,
            &options,
            Approved::ByGuard { prune },
            progress,
        )
        .await
        .map_err(|e| public_error(&e))
    }

    /// Applies exactly `prepared` — the plan the guard judged, read by
    /// [`CloudPlanner::prepare_fleet`] — never a plan made afresh: each target is changed only
    /// while the cloud still holds it as that plan read it. With `prune`, the targets the spec
    /// no longer declares are deleted too.
    async fn apply_prepared(
        &self,
        spec: &FleetSpec,
        tenant_id: &str,
        prune: bool,
        prepared: crate::engine::ops::Prepared,
        progress: Progress,
    ) -> Result<DeployResult, LiveError> {
        let (mk8s, _) = mk8s_only(spec);
        apply(
            self.cloud(),
            self.inventory(),
            &mk8s,
            tenant_id,
            &bot_options(&mk8s, prune),
            prepared,
            Approved::ByGuard { prune },
            progress,
        )
        .await
        .map_err(|e| public_error(&e))
    }

    /// Deploys the spec's mk8s targets through the engine (preflight first, fail-closed);
    /// with `prune`, the targets the spec no longer declares are deleted too.
    async fn apply_fleet(
        &self,
        spec: &FleetSpec,
        tenant_id: &str,
        prune: bool,
        progress: Progress,
    ) -> Result<DeployResult, LiveError> {
        self.apply_selected(
            spec,
            tenant_id,
            prune,
            (Vec::new(), Vec::new()),
            None,
            progress,
        )
        .await
    }

    /// Deploys only the targets `only_projects` × `only_clusters` select (a wave), as
    /// [`CloudPlanner::apply_fleet`] does the whole fleet; never prunes. The wave plans its
    /// targets again, and each is changed only while the cloud still holds it as
    /// `approved_reading` (the plan the guard judged) read it.
    async fn apply_targets(
        &self,
        spec: &FleetSpec,
        tenant_id: &str,
        (only_projects, only_clusters): (Vec<String>, Vec<String>),
        approved_reading: std::sync::Arc<crate::engine::live::Observed>,
        progress: Progress,
    ) -> Result<DeployResult, LiveError> {
        // Never prune: deletions happen once, after the last wave, with the whole spec.
        self.apply_selected(
            spec,
            tenant_id,
            false,
            (only_projects, only_clusters),
            Some(approved_reading),
            progress,
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_approval_sets_what_the_plan_may_destroy_and_nothing_else() {
        let asked = LifecycleOptions {
            prune: true,
            allow_destructive: false,
            only_clusters: vec!["a".into()],
            ..LifecycleOptions::default()
        };
        let guard = Approved::ByGuard { prune: false }.options(&asked);
        assert!(guard.allow_destructive && !guard.prune);
        assert_eq!(guard.only_clusters, asked.only_clusters);
        let person = Approved::ByPerson {
            allow_destroy: false,
        }
        .options(&asked);
        assert!(!person.allow_destructive && person.prune);
        let person = Approved::ByPerson {
            allow_destroy: true,
        }
        .options(&asked);
        assert!(person.allow_destructive);
    }
}
