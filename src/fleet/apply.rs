//! The one door through which a fleet is changed: a plan read now, approved by whoever may
//! approve it (the App's guard, or a person at a terminal), and then exactly that plan applied;
//! and the teardown of recorded targets. The CLI's `deploy` and `destroy`, the App's apply job
//! (through [`super::backend`]), the demo and the library's [`super::Fleet`] all come here, and
//! `src/architecture.rs` holds everything else to it.

use crate::cloud::domain::Cloud;
use crate::engine::ops::{
    DeployResult, DestroyResult, EngineError, LifecycleOptions, Prepared, Progress,
};
use crate::spec::FleetSpec;
use crate::store::InventoryStore;

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
