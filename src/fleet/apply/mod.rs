//! The one door through which a fleet is changed: a plan read now, approved by whoever may
//! approve it (the App's guard, or a person at a terminal), and then exactly that plan applied;
//! and the teardown of recorded targets. The CLI's `deploy` and `destroy`, the App's apply job
//! and the demo (through [`guarded`]) and the library's [`super::Fleet`] all come here, and
//! `src/architecture.rs` holds everything else to it.

use super::Session;
use super::live::{LiveError, mk8s_only, public_error};
use crate::engine::live::LivePlan;
use crate::engine::ops::{
    DeployResult, DestroyResult, Destruction, EngineError, LifecycleOptions, Prepared, Progress,
};
use crate::spec::FleetSpec;

pub mod audit;
pub mod guarded;
pub mod leases;
pub mod waves;

/// Who approved the plan about to be applied, and so what it may delete, replace or shrink:
/// the destructive lines of that approved plan, never more.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approved {
    /// The App's guard allowed it ([`super::guard::decide`]): the plan is the one reviewed on
    /// the pull request (or `/apply` accepted the change), and whatever it deletes was approved
    /// there with `/approve-destroy`. `prune` deletes the targets the spec no longer declares.
    ByGuard {
        /// Whether the targets removed from the spec are deleted.
        prune: bool,
        /// What the judged plan deletes, replaces or shrinks
        /// ([`Destruction::listed_in`] of it): a plan made after it (a wave) may do no more.
        destructive: Destruction,
    },
    /// A person at a terminal: answered the prompt that listed each destructive line, or gave
    /// `--yes` (which allows them only with `--allow-destroy`). Pruning is the caller's
    /// `--prune`, in its options.
    ByPerson {
        /// Whether the plan may delete, replace or shrink inside the fleet's targets (what it
        /// listed, the plan applied being the one shown).
        allow_destroy: bool,
    },
}

impl Approved {
    /// The guard's approval of `plan` (the one it judged).
    pub fn by_guard(prune: bool, plan: &LivePlan) -> Self {
        Approved::ByGuard {
            prune,
            destructive: Destruction::listed_in(plan),
        }
    }

    /// `options` as this approval lets them read a plan (what is selected and pruned).
    fn scope(&self, options: &LifecycleOptions) -> LifecycleOptions {
        match self {
            Approved::ByGuard { prune, .. } => LifecycleOptions {
                prune: *prune,
                ..options.clone()
            },
            Approved::ByPerson { .. } => options.clone(),
        }
    }

    /// `options` as this approval lets them apply `plan`.
    fn options(&self, options: &LifecycleOptions, plan: &LivePlan) -> LifecycleOptions {
        let allow_destructive = match self {
            Approved::ByGuard { destructive, .. } => destructive.clone(),
            Approved::ByPerson {
                allow_destroy: true,
            } => Destruction::listed_in(plan),
            Approved::ByPerson {
                allow_destroy: false,
            } => Destruction::Refused,
        };
        LifecycleOptions {
            allow_destructive,
            ..self.scope(options)
        }
    }
}

/// Reads the plan of the selected targets (nothing is changed), for the approval to be given on.
pub async fn plan(
    session: &Session,
    spec: &FleetSpec,
    tenant_id: &str,
    options: &LifecycleOptions,
) -> Result<Prepared, EngineError> {
    crate::engine::ops::prepare(
        session.cloud(),
        session.inventory(),
        spec,
        tenant_id,
        options,
    )
    .await
}

/// Applies `plan` (read by [`plan`] with the same `options`) as `approved` allows: preflight
/// first, nothing mutated if it or the plan's problems refuse; a destructive plan that was not
/// approved as destructive is refused before anything changes.
pub async fn apply(
    session: &Session,
    spec: &FleetSpec,
    tenant_id: &str,
    options: &LifecycleOptions,
    plan: Prepared,
    approved: Approved,
    progress: Progress,
) -> Result<DeployResult, EngineError> {
    let options = approved.options(options, &plan.plan);
    crate::engine::ops::deploy_prepared(
        session.cloud(),
        session.inventory(),
        spec,
        tenant_id,
        &options,
        plan,
        progress,
    )
    .await
}

/// [`plan`], then [`apply`] of that plan: for callers whose approval does not depend on what
/// the plan says (the guard decided on the plan it read; `--yes`).
pub async fn plan_and_apply(
    session: &Session,
    spec: &FleetSpec,
    tenant_id: &str,
    options: &LifecycleOptions,
    approved: Approved,
    progress: Progress,
) -> Result<DeployResult, EngineError> {
    // The plan is read with the options the approval lets apply, so it is the plan applied.
    let prepared = plan(session, spec, tenant_id, &approved.scope(options)).await?;
    apply(
        session, spec, tenant_id, options, prepared, approved, progress,
    )
    .await
}

/// Tears down the selected targets the inventory records, each by exact ID after its
/// ownership is proven; projects and buckets are kept. Only a person asks for this (`destroy`
/// confirmed or `--yes`): the App never destroys a fleet.
pub async fn destroy(
    session: &Session,
    spec: &FleetSpec,
    options: &LifecycleOptions,
    progress: Progress,
) -> Result<DestroyResult, EngineError> {
    crate::engine::ops::destroy(
        session.cloud(),
        session.inventory(),
        spec,
        options,
        progress,
    )
    .await
}

/// The lifecycle options the bot applies with: the spec's own SSH key only (a key on the
/// bot's host means nothing to the fleet), preflight on. What the plan may delete or shrink
/// is the guard's approval's ([`Approved::ByGuard`]), not these options'.
pub(crate) fn bot_options(spec: &FleetSpec, prune: bool) -> LifecycleOptions {
    LifecycleOptions {
        ssh_public_key: spec.ssh_public_key.trim().to_string(),
        prune,
        preflight: true,
        ..LifecycleOptions::default()
    }
}

/// The plan the guard judged and allowed, which is what the App applies: whole, or wave by
/// wave with each wave held to it.
pub struct Judged {
    /// The engine's plan as read for the guard.
    prepared: Prepared,
    /// Whether the guard allowed its pruning (with `/approve-destroy`).
    prune: bool,
    /// What that plan read of the cloud, shared by the waves held to it.
    reading: std::sync::Arc<crate::engine::live::Observed>,
    /// What that plan deletes, replaces or shrinks: all any wave may.
    destructive: Destruction,
}

impl Judged {
    /// The plan `prepared` as the guard allowed it, pruning with `prune`.
    pub fn new(prepared: Prepared, prune: bool) -> Self {
        let reading = std::sync::Arc::new(prepared.observed.clone());
        let destructive = Destruction::listed_in(&prepared.plan);
        Judged {
            prepared,
            prune,
            reading,
            destructive,
        }
    }

    /// The guard's approval of it, pruning as it allowed (`prune: false` for a wave).
    fn approved(&self, prune: bool) -> Approved {
        Approved::ByGuard {
            prune: prune && self.prune,
            destructive: self.destructive.clone(),
        }
    }
}

/// The App's applying methods, private to this module: only [`guarded`] and its [`waves`] can
/// call them (after the guard allowed the plan).
impl Session {
    /// Applies exactly the judged plan — read by [`Session::prepare_fleet`] — never a
    /// plan made afresh: each target is changed only while the cloud still holds it as that
    /// plan read it. With its `prune`, the targets the spec no longer declares are deleted too;
    /// with `prune_only` nothing else is applied (the last pass of a staged rollout).
    async fn apply_judged(
        &self,
        spec: &FleetSpec,
        tenant_id: &str,
        judged: Judged,
        prune_only: bool,
        progress: Progress,
    ) -> Result<DeployResult, LiveError> {
        let (mk8s, _) = mk8s_only(spec);
        let approved = judged.approved(true);
        let options = LifecycleOptions {
            prune_only,
            ..bot_options(&mk8s, judged.prune)
        };
        apply(
            self,
            &mk8s,
            tenant_id,
            &options,
            judged.prepared,
            approved,
            progress,
        )
        .await
        .map_err(|e| public_error(&e))
    }

    /// Deploys only the targets `only_projects` × `only_clusters` select (a wave); never
    /// prunes. The wave plans its targets again; each is changed only while the cloud still
    /// holds it as the judged plan read it, and only as far as that plan destroyed.
    async fn apply_targets(
        &self,
        spec: &FleetSpec,
        tenant_id: &str,
        (only_projects, only_clusters): (Vec<String>, Vec<String>),
        judged: &Judged,
        progress: Progress,
    ) -> Result<DeployResult, LiveError> {
        let (mk8s, _) = mk8s_only(spec);
        // Never prune: deletions happen once, after the last wave, from the judged plan.
        let options = LifecycleOptions {
            only_projects,
            only_clusters,
            approved_reading: Some(judged.reading.clone()),
            ..bot_options(&mk8s, false)
        };
        let approved = judged.approved(false);
        plan_and_apply(self, &mk8s, tenant_id, &options, approved, progress)
            .await
            .map_err(|e| public_error(&e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plan that deletes node group `ng` of `p/c`.
    fn deleting(ng: &str) -> LivePlan {
        use crate::engine::live::{Action, ResourceAction, Summary, TargetPlan};
        LivePlan {
            fleet: "f".into(),
            cloud: "sim".into(),
            projects: Vec::new(),
            summary: Summary::default(),
            digest: String::new(),
            targets: vec![TargetPlan {
                target: "p/c".into(),
                actions: vec![ResourceAction {
                    resource: "node-group",
                    name: ng.into(),
                    action: Action::Delete,
                    changes: Vec::new(),
                    reason: String::new(),
                }],
                unchanged: false,
                problems: Vec::new(),
                prune: false,
            }],
        }
    }

    #[test]
    fn an_approval_allows_destroying_what_its_plan_listed_and_nothing_else() {
        let asked = LifecycleOptions {
            prune: true,
            only_clusters: vec!["a".into()],
            ..LifecycleOptions::default()
        };
        let (judged, later) = (deleting("gpu"), deleting("cpu"));
        // The guard's approval is of the plan it judged, whatever plan is applied after it.
        let guard = Approved::by_guard(false, &judged).options(&asked, &later);
        assert_eq!(guard.allow_destructive, Destruction::listed_in(&judged));
        assert!(!guard.prune);
        assert_eq!(guard.only_clusters, asked.only_clusters);
        let [allowed] = judged.destructive().try_into().unwrap();
        let [unlisted] = later.destructive().try_into().unwrap();
        assert!(guard.allow_destructive.allows(&allowed));
        assert!(!guard.allow_destructive.allows(&unlisted));
        // A person approves the plan they were shown, which is the plan applied.
        let person = Approved::ByPerson {
            allow_destroy: false,
        }
        .options(&asked, &later);
        assert_eq!(person.allow_destructive, Destruction::Refused);
        assert!(person.prune);
        let person = Approved::ByPerson {
            allow_destroy: true,
        }
        .options(&asked, &later);
        assert!(person.allow_destructive.allows(&unlisted));
        assert!(!person.allow_destructive.allows(&allowed));
    }
}
