//! The App's guarded apply of one fleet: its plan read now, decided against the plan reviewed
//! on the pull request and the approvals given there ([`super::super::guard::decide`]), the
//! decision recorded, then the fleet applied whole or in health-gated waves. The apply job
//! and `fleetbot demo` (through it) come here with one [`Review`]; what GitHub shows of the
//! [`Guarded`] outcome is the caller's.

use std::sync::atomic::{AtomicBool, Ordering};

use super::Judged;
use super::audit::{self, Origin};
use super::leases::{self, Busy};
use super::waves::{RolloutConfig, roll_out};
use crate::engine::ops::{DeployResult, Prepared, Progress};
use crate::fleet::Session;
use crate::fleet::backend::Deploying;
use crate::fleet::guard::{
    self, Decision, GuardInput, PublicNames, Refusal, ReviewSummary, Trigger, approval_digest,
};
use crate::fleet::live::{LiveError, PlannedFleet};
use crate::spec::FleetSpec;
use crate::store::queue::now_ms;
use crate::store::{ApplyRun, DeployStore, ReviewedPlan, StoreError};

/// What the plan of one fleet is held to: where it was reviewed and who asked for the apply.
#[derive(Debug, Clone, Copy)]
pub struct Review<'a> {
    /// The apply's job: a job resumed after a crash finds its own record of having passed
    /// the guard under this id.
    pub job_id: &'a str,
    /// The pull request (`store::queue::pr_key`) whose reviews and approvals count.
    pub pr_key: &'a str,
    /// The pull request's last head, whose reviewed plan the plan read now must equal.
    pub head_sha: &'a str,
    /// The commit applied (the merge commit, or the head itself before a merge).
    pub sha: &'a str,
    /// The spec's path in the repository: reviews and approvals are per file.
    pub fleet_path: &'a str,
    /// What asked for the apply (`/apply` overrides a review that drifted; a merge does not).
    pub trigger: Trigger,
}

/// How the guarded apply of one fleet ended.
pub enum Guarded {
    /// The spec has no target the engine applies.
    NothingForTheEngine,
    /// Nothing was applied, and why (a store or cloud error, a lost lease).
    NotApplied(NotApplied),
    /// The guard refused the plan; it is kept as reviewed at the applied commit, so that
    /// `/approve-destroy` after the merge approves exactly it.
    Refused(Refusal),
    /// The plan changed nothing, and the engine (run to record what an interrupted apply
    /// left unrecorded) failed nowhere.
    Unchanged {
        /// The plan's targets, all unchanged.
        targets: usize,
    },
    /// The plan was applied (or a wave of it failed or stayed unhealthy).
    Applied(Box<Applied>),
}

/// Why nothing was applied to a fleet; its words are public (no store or cloud text).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotApplied {
    /// The cloud could not be planned against or applied to (its public error).
    #[error("{}", .0.message)]
    Live(LiveError),
    /// The guard's inputs could not be read: fail closed.
    #[error("fleetbot's store could not be read; nothing was applied")]
    StoreUnreadable,
    /// The decision could not be recorded before the first mutation.
    #[error("fleetbot's store could not be written; nothing was applied")]
    StoreUnwritable,
    /// The fleet's lease was freed (`/unlock`) or expired before this fleet.
    #[error(
        "this apply's fleet lock was freed (/unlock) or expired before this fleet; nothing was applied to it"
    )]
    LeaseLost,
}

/// How a guarded apply of one fleet ends, as its check run concludes and the audit log says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Applied (or nothing to change), every target as reviewed.
    Success,
    /// Nothing for the engine to apply.
    Neutral,
    /// A person is needed: an approval, or a target the cloud changed under since review.
    ActionRequired,
    /// Not applied, or a target failed, or a wave stopped the rollout.
    Failure,
}

impl Verdict {
    /// The word a check run's conclusion and the audit log use.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Success => "success",
            Verdict::Neutral => "neutral",
            Verdict::ActionRequired => "action_required",
            Verdict::Failure => "failure",
        }
    }
}

impl Guarded {
    /// How this ended.
    pub fn verdict(&self) -> Verdict {
        match self {
            Guarded::NothingForTheEngine => Verdict::Neutral,
            Guarded::NotApplied(_) => Verdict::Failure,
            Guarded::Refused(refusal) if refusal.needs_action() => Verdict::ActionRequired,
            Guarded::Refused(_) => Verdict::Failure,
            Guarded::Unchanged { .. } => Verdict::Success,
            Guarded::Applied(applied) => applied.verdict(),
        }
    }
}

/// A plan that was applied, and what the engine did.
pub struct Applied {
    /// The plan that was applied.
    pub planned: PlannedFleet,
    /// What the engine did.
    pub result: DeployResult,
    /// One public line per wave, when the rollout is staged.
    pub waves: Vec<String>,
    /// Whether a wave failed or stayed unhealthy, so later waves were not applied.
    pub stopped: bool,
}

impl Applied {
    /// A target the cloud changed under since review asks for a person, unless another
    /// failed; a failed target, a failed pruning or a stopped rollout fails.
    pub fn verdict(&self) -> Verdict {
        let mut changed = false;
        let mut failed = self.result.pruned.iter().any(|e| e.status.is_failure());
        let outcomes: std::collections::HashMap<String, _> = self
            .result
            .clusters
            .iter()
            .map(|c| (format!("{}/{}", c.project_key, c.cluster_name), c))
            .collect();
        for target in &self.planned.plan.targets {
            match outcomes.get(&target.target) {
                Some(c) if c.changed_since_plan => changed = true,
                Some(c) if c.status.is_failure() => failed = true,
                _ => {}
            }
        }
        if changed && !failed {
            Verdict::ActionRequired
        } else if failed || self.stopped || self.result.failed > 0 {
            Verdict::Failure
        } else {
            Verdict::Success
        }
    }
}

/// One fleet applied as the apply job applies each of its fleets — its lease taken before the
/// first mutation, the guarded apply, the lease released, the audit written — without a
/// repository or a rollout: `fleetbot demo`.
pub async fn apply_alone(
    deployer: &Deploying<'_>,
    review: &Review<'_>,
    origin: &Origin<'_>,
    spec: &FleetSpec,
    progress: Progress,
) -> Result<Guarded, Busy> {
    let held = leases::take(deployer, review.job_id, &origin.holder(), &[spec]).await?;
    let names = PublicNames::with_base(spec, None);
    let guarded = apply_reviewed(
        deployer,
        review,
        spec,
        &names,
        &RolloutConfig::default(),
        &held.lost(),
        |_| progress,
    )
    .await;
    held.release().await;
    let entry = origin.entry("apply", review.fleet_path, guarded.verdict().as_str(), "");
    audit::record(deployer.store.as_ref(), &entry).await;
    Ok(guarded)
}

/// Plans `spec` now, decides it against `review` and, when the guard allows, records the
/// decision (before the first mutation, so a resumed job knows it passed) and applies it under
/// `rollout`. Nothing is applied once `lost` is set (the fleet's lease was freed or expired).
/// `progress` is asked for a sink once the plan is known, with its number of targets.
pub async fn apply_reviewed(
    deployer: &Deploying<'_>,
    review: &Review<'_>,
    spec: &FleetSpec,
    names: &PublicNames,
    rollout: &RolloutConfig,
    lost: &AtomicBool,
    progress: impl FnOnce(usize) -> Progress,
) -> Guarded {
    let (tenant, planned, prepared) = match plan_now(deployer.session, spec).await {
        Ok((tenant, Some((planned, prepared)))) => (tenant, planned, prepared),
        Ok((_, None)) => return Guarded::NothingForTheEngine,
        Err(e) => return Guarded::NotApplied(NotApplied::Live(e)),
    };
    let state = deployer.store.as_ref();
    // A quiet plan is still run through the engine: it makes no mutation, and it records what
    // an apply killed after its last create left unrecorded (the cloud matches the spec, the
    // inventory does not yet know every ID).
    let (prune, quiet) = match decide(state, review, &planned, names).await {
        Ok(Decision::Apply { prune }) => (prune, false),
        Ok(Decision::NothingToDo) => (false, true),
        Ok(Decision::Refuse(refusal)) => {
            remember_refused_plan(state, review, &planned, names).await;
            return Guarded::Refused(refusal);
        }
        Err(reason) => return Guarded::NotApplied(reason),
    };
    if lost.load(Ordering::SeqCst) {
        return Guarded::NotApplied(NotApplied::LeaseLost);
    }
    let run = ApplyRun {
        job_id: review.job_id.to_string(),
        fleet_path: review.fleet_path.to_string(),
        digest: planned.plan.digest.clone(),
        destructive_approved: prune,
        started_at: now_ms(),
    };
    if let Err(e) = state.record_apply_run(&run).await {
        tracing::warn!("cannot record the apply run: {e}");
        return Guarded::NotApplied(NotApplied::StoreUnwritable);
    }
    let progress = progress(planned.plan.targets.len());
    // Exactly the plan the guard judged is applied: whole, that very plan; in waves, each
    // wave's targets held to what it read of the cloud.
    let judged = Judged::new(prepared, prune);
    let result = if rollout.staged() && !quiet {
        roll_out(deployer, spec, &tenant, judged, rollout, names, progress)
            .await
            .map(|r| (r.result, r.lines, r.stopped))
    } else {
        deployer
            .session
            .apply_judged(spec, &tenant, judged, false, progress)
            .await
            .map(|r| (r, Vec::new(), false))
    };
    match result {
        Ok((result, _, _)) if quiet && result.failed == 0 => Guarded::Unchanged {
            targets: planned.plan.targets.len(),
        },
        Ok((result, waves, stopped)) => Guarded::Applied(Box::new(Applied {
            planned,
            result,
            waves,
            stopped,
        })),
        Err(e) => Guarded::NotApplied(NotApplied::Live(e)),
    }
}

/// The guard's inputs read from the store (fail-closed: a store that cannot be read applies
/// nothing), then its decision.
async fn decide(
    state: &dyn DeployStore,
    review: &Review<'_>,
    planned: &PlannedFleet,
    names: &PublicNames,
) -> Result<Decision, NotApplied> {
    let unreadable = |e: StoreError| {
        tracing::warn!("apply guard: the store could not be read: {e}");
        NotApplied::StoreUnreadable
    };
    let (pr, path) = (review.pr_key, review.fleet_path);
    let reviewed = state
        .reviewed_plan(pr, review.head_sha, path)
        .await
        .map_err(unreadable)?;
    let reviewed = reviewed.map(|r| (r.digest.clone(), ReviewSummary::parse(&r.summary)));
    let destructive = planned.plan.destructive();
    let mut approved = false;
    for head in [review.head_sha, review.sha] {
        let key = approval_digest(head, &planned.plan.digest);
        if state
            .approval(pr, path, &key)
            .await
            .map_err(unreadable)?
            .is_some()
        {
            approved = true;
        }
    }
    let resumed = state
        .apply_run(review.job_id, path)
        .await
        .map_err(unreadable)?
        .map(|r| r.destructive_approved);
    let lines = reviewed.as_ref().map(|(_, s)| s.lines.join("\n"));
    Ok(guard::decide(&GuardInput {
        trigger: review.trigger,
        reviewed: reviewed
            .as_ref()
            .zip(lines.as_deref())
            .map(|((digest, _), lines)| (digest.as_str(), lines)),
        plan: &planned.plan,
        destructive: &destructive,
        approved,
        resumed,
        names,
    }))
}

/// Keeps a refused plan as reviewed at the applied commit.
async fn remember_refused_plan(
    state: &dyn DeployStore,
    review: &Review<'_>,
    planned: &PlannedFleet,
    names: &PublicNames,
) {
    let plan = ReviewedPlan {
        pr_key: review.pr_key.to_string(),
        head_sha: review.sha.to_string(),
        fleet_path: review.fleet_path.to_string(),
        digest: planned.plan.digest.clone(),
        summary: ReviewSummary::of(planned, names).to_json(),
        recorded_at: now_ms(),
    };
    if let Err(e) = state.record_reviewed_plan(&plan).await {
        tracing::warn!("cannot record the refused plan: {e}");
    }
}

/// Plans one spec for the apply job: the same plan the preflight showed, read again now, with
/// the engine's prepared plan that applying exactly it takes.
async fn plan_now(
    applier: &Session,
    spec: &FleetSpec,
) -> Result<(String, Option<(PlannedFleet, Prepared)>), LiveError> {
    let tenant = applier.app_tenant_for(spec)?;
    // Never a shared read: an apply decides on what the cloud holds now.
    let planned = applier.prepare_fleet(spec, &tenant, None).await?;
    Ok((tenant, planned))
}
