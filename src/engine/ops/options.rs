//! The options every lifecycle command shares, target selection, and the progress sink.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use crate::spec::FleetSpec;

pub use crate::spec::select::{SelectError, parse_selector, select};

/// What an apply may delete, replace or shrink: never a flag that allows anything, but the
/// destructive lines of the plan that was approved (`Destructive::line`), so that a plan made
/// after the approval (a wave of a staged rollout, its last pruning pass) can destroy only
/// what the approval listed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Destruction {
    /// Nothing: a destructive plan is refused before the first mutation.
    #[default]
    Refused,
    /// Exactly these lines, as the approved plan listed them (a person answered the prompt
    /// that showed them or gave `--allow-destroy`; the App's guard required `/approve-destroy`).
    Listed(Arc<BTreeSet<String>>),
}

impl Destruction {
    /// Every destructive line of `plan` (inside targets and of the targets it prunes): what
    /// approving that plan as destructive allows.
    pub fn listed_in(plan: &crate::engine::live::LivePlan) -> Self {
        Destruction::Listed(Arc::new(
            plan.destructive().iter().map(|d| d.line()).collect(),
        ))
    }

    /// Whether this allows `d`.
    pub fn allows(&self, d: &crate::engine::live::Destructive) -> bool {
        match self {
            Destruction::Refused => false,
            Destruction::Listed(lines) => lines.contains(&d.line()),
        }
    }
}

/// Options shared by the lifecycle commands.
#[derive(Debug, Clone)]
pub struct LifecycleOptions {
    pub only_projects: Vec<String>,
    pub only_clusters: Vec<String>,
    pub project_prefix: String,
    pub profile: String,
    pub concurrency: usize,
    pub continue_on_error: bool,
    pub create_projects: bool,
    pub preflight: bool,
    /// Per-target limit on applying (or destroying).
    pub timeout: Duration,
    pub ssh_public_key: String,
    /// The spec's path, for retry commands.
    pub spec_path: String,
    /// Deploy also tears down the targets the inventory records that the spec no longer
    /// declares (only when the whole spec is selected). Without it deploy never deletes a
    /// target: it reports them as kept.
    pub prune: bool,
    /// What deploy may delete, replace or shrink inside the projects and targets it applies
    /// (a node group or an add-on deleted, a filesystem detached, a pool shrunk, a bucket cap
    /// lowered): nothing by default, else exactly the lines of the approved plan. Whole
    /// targets the spec no longer declares are `prune`'s.
    pub allow_destructive: Destruction,
    /// Listings shared with the other plans of a reconcile pass or a pull-request head; `None`
    /// reads everything afresh (every apply).
    pub reads: Option<Arc<crate::engine::live::ReadCache>>,
    /// What the approved plan read of the cloud, when the plan applied is another one made
    /// after it (each wave of a staged rollout plans its targets again): a target is changed
    /// only while the cloud still holds it as the approved plan read it. `None`: the plan
    /// applied is the approved one, and its own reading is the one held to.
    pub approved_reading: Option<Arc<crate::engine::live::Observed>>,
    /// Apply nothing but `prune`: the last pass of a staged rollout, which deletes what the
    /// approved plan pruned once every wave is applied and healthy.
    pub prune_only: bool,
}

impl Default for LifecycleOptions {
    fn default() -> Self {
        LifecycleOptions {
            only_projects: Vec::new(),
            only_clusters: Vec::new(),
            project_prefix: String::new(),
            profile: String::new(),
            concurrency: 1,
            continue_on_error: true,
            create_projects: true,
            preflight: true,
            timeout: Duration::from_secs(120 * 60),
            ssh_public_key: String::new(),
            spec_path: "fleet.yaml".into(),
            prune: false,
            allow_destructive: Destruction::Refused,
            reads: None,
            approved_reading: None,
            prune_only: false,
        }
    }
}

impl LifecycleOptions {
    /// The project prefix: `--project-prefix` when given, else the spec's.
    pub fn prefix<'a>(&'a self, spec: &'a FleetSpec) -> &'a str {
        if self.project_prefix.is_empty() {
            &spec.project_prefix
        } else {
            &self.project_prefix
        }
    }
}
