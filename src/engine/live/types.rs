//! The live plan's vocabulary: actions on resources, the changes behind them, the problems that
//! block an apply, and the plan of a project, a target and a fleet.

use serde::Serialize;

use crate::engine::desired::TargetKey;

/// What to do with one resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    Create,
    Update,
    /// Delete and create again: a field that cannot change in place changed.
    Replace,
    Delete,
    NoChange,
    /// Reused as it is (a pre-existing project or subnet fleetbot does not own).
    Reuse,
}

/// One field that differs: values are shown only for fields that are safe to publish.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    pub field: &'static str,
    pub from: String,
    pub to: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResourceAction {
    /// `project`, `subnet`, `bucket`, `cluster`, `node-group`, `filesystem`, `gpu-cluster`.
    pub resource: &'static str,
    pub name: String,
    pub action: Action,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<Change>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

impl ResourceAction {
    pub(super) fn new(resource: &'static str, name: &str, action: Action) -> Self {
        ResourceAction {
            resource,
            name: name.to_string(),
            action,
            changes: Vec::new(),
            reason: String::new(),
        }
    }
}

/// What kind of problem stops a plan. Every kind blocks an apply; the kinds exist so that
/// callers which must not show the cloud's text (a pull request) can still name each one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProblemKind {
    /// A project pinned by `project_id` is not there.
    ProjectNotFound,
    /// Several projects of the tenant carry the name.
    ProjectAmbiguous,
    /// An existing project is not the spec's: another tenant, region or name.
    ProjectIdentity,
    /// An existing project is suspended, being deleted or otherwise not active.
    ProjectInactive,
    /// An existing bucket cannot serve as it is (storage class, state).
    BucketUnusable,
    /// A same-named resource exists that this fleet target does not own.
    NotOwned,
    /// A filesystem fleetbot owns would have to shrink.
    FilesystemShrink,
    /// `existing_filestore` cannot be found or read.
    ExistingFilestore,
    /// A cluster's subnet is not the spec's `subnet_id`.
    SubnetChanged,
}

impl ProblemKind {
    pub const ALL: [ProblemKind; 9] = [
        ProblemKind::ProjectNotFound,
        ProblemKind::ProjectAmbiguous,
        ProblemKind::ProjectIdentity,
        ProblemKind::ProjectInactive,
        ProblemKind::BucketUnusable,
        ProblemKind::NotOwned,
        ProblemKind::FilesystemShrink,
        ProblemKind::ExistingFilestore,
        ProblemKind::SubnetChanged,
    ];
}

/// One problem of a plan. The message names resources by the spec's names and public fields
/// only, never by a cloud ID, so it may be shown wherever the plan is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub kind: ProblemKind,
    pub message: String,
}

impl Problem {
    pub fn new(kind: ProblemKind, message: impl Into<String>) -> Self {
        Problem {
            kind,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

// Serialized as its message alone, so the plan's JSON keeps its shape (a list of strings) now
// that problems have kinds.
impl Serialize for Problem {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.message)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProjectPlan {
    pub key: String,
    pub actions: Vec<ResourceAction>,
    /// Why the project cannot be used, if it cannot (identity, ambiguity, ownership).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<Problem>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TargetPlan {
    pub target: String,
    pub actions: Vec<ResourceAction>,
    /// Every resource exists, is owned by fleetbot and matches the spec.
    pub unchanged: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<Problem>,
    /// A target the inventory records that the spec no longer declares: its actions delete it.
    /// Left out of the JSON when false, so the plans (and digests) of fleets without one read
    /// as they always have.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub prune: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Summary {
    pub create: usize,
    pub update: usize,
    pub replace: usize,
    pub delete: usize,
    pub unchanged: usize,
}

/// The live plan of the selected targets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LivePlan {
    /// The fleet's name; `name` in JSON, as in every other command's document.
    #[serde(rename = "name")]
    pub fleet: String,
    pub cloud: String,
    pub projects: Vec<ProjectPlan>,
    pub targets: Vec<TargetPlan>,
    pub summary: Summary,
    /// Changes exactly when the actions change.
    pub digest: String,
}

impl LivePlan {
    /// Whether applying the plan would create, change or delete anything at all.
    pub fn changes_anything(&self) -> bool {
        self.projects
            .iter()
            .flat_map(|p| &p.actions)
            .chain(self.targets.iter().flat_map(|t| &t.actions))
            .any(|a| !matches!(a.action, Action::NoChange | Action::Reuse))
    }

    pub fn has_problems(&self) -> bool {
        self.projects.iter().any(|p| !p.problems.is_empty())
            || self.targets.iter().any(|t| !t.problems.is_empty())
    }

    pub fn problems(&self) -> Vec<String> {
        self.projects
            .iter()
            .flat_map(|p| {
                p.problems
                    .iter()
                    .map(move |m| format!("project {}: {m}", p.key))
            })
            .chain(
                self.targets
                    .iter()
                    .flat_map(|t| t.problems.iter().map(move |m| format!("{}: {m}", t.target))),
            )
            .collect()
    }

    /// Every action of projects and targets, in plan order.
    pub fn actions(&self) -> impl Iterator<Item = &ResourceAction> {
        self.projects
            .iter()
            .flat_map(|p| &p.actions)
            .chain(self.targets.iter().flat_map(|t| &t.actions))
    }

    /// Whether every action is a no-op (for "deploy again → no mutation").
    pub fn is_quiet(&self) -> bool {
        self.actions()
            .all(|a| matches!(a.action, Action::NoChange | Action::Reuse))
    }

    /// The targets the spec no longer declares, which only a deploy with prune deletes.
    pub fn pruned(&self) -> impl Iterator<Item = &TargetPlan> {
        self.targets.iter().filter(|t| t.prune)
    }
}

/// Finds the target key of a plan entry.
pub fn target_key_of(plan: &TargetPlan) -> TargetKey {
    let (project_key, cluster) = plan.target.split_once('/').unwrap_or((&plan.target, ""));
    TargetKey {
        project_key: project_key.to_string(),
        cluster: cluster.to_string(),
    }
}
