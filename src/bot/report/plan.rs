//! What the report shows of a fleet's plan: the rows to create, change and destroy, and the
//! live plan's problems by kind.

use serde::Serialize;

use crate::fleet::live::LiveErrorKind;
use crate::fleet::live::ProblemKind;

/// What the head spec creates, changes and destroys: from the live plan when the bot reached a
/// cloud (`live_cloud`), else from the static plan compared with the base branch's spec.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlanSummary {
    pub region: String,
    pub projects: usize,
    pub clusters: usize,
    pub mk8s: usize,
    pub soperator: usize,
    pub create: Vec<PlanItem>,
    pub change: Vec<PlanItem>,
    pub destroy: Vec<PlanItem>,
    /// Clusters with nothing to do.
    pub unchanged: usize,
    /// The public name of the cloud the plan was read from; `None` for a static plan.
    pub live_cloud: Option<String>,
    /// Of `unchanged`, clusters that match the spec but are not proven unchanged (no deployed
    /// record in fleetbot's store, or not ready), so the budget still counts them in full.
    pub unproven: usize,
    /// What the live plan deletes, replaces or shrinks, by public names: a merge applies it
    /// only after `/approve-destroy` on this plan.
    pub needs_approval: Vec<String>,
    /// What stops the live plan (ownership, identity, an unreadable cloud); each blocks.
    pub problems: Vec<LiveProblem>,
}

/// One problem of a live plan: its kind, and a public line naming it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LiveProblem {
    pub kind: LiveProblemKind,
    /// Spec names and public fields only: never a tenant, project or resource ID.
    pub text: String,
}

/// Every kind of live-plan problem; each one blocks the pull request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LiveProblemKind {
    /// No tenant is configured, or the spec names another one.
    TenantRefused,
    CloudUnreadable,
    StoreUnreadable,
    /// The engine refused the spec before reading the cloud.
    EngineRefused,
    ProjectNotFound,
    ProjectAmbiguous,
    ProjectIdentity,
    ProjectInactive,
    BucketUnusable,
    NotOwned,
    FilesystemShrink,
    ExistingFilestore,
    SubnetChanged,
}

impl LiveProblemKind {
    pub const ALL: [LiveProblemKind; 13] = [
        LiveProblemKind::TenantRefused,
        LiveProblemKind::CloudUnreadable,
        LiveProblemKind::StoreUnreadable,
        LiveProblemKind::EngineRefused,
        LiveProblemKind::ProjectNotFound,
        LiveProblemKind::ProjectAmbiguous,
        LiveProblemKind::ProjectIdentity,
        LiveProblemKind::ProjectInactive,
        LiveProblemKind::BucketUnusable,
        LiveProblemKind::NotOwned,
        LiveProblemKind::FilesystemShrink,
        LiveProblemKind::ExistingFilestore,
        LiveProblemKind::SubnetChanged,
    ];

    /// A few words for a check run's title and the list of reasons.
    pub fn phrase(self) -> &'static str {
        match self {
            LiveProblemKind::TenantRefused => "tenant not the configured one",
            LiveProblemKind::CloudUnreadable => "cloud unreadable",
            LiveProblemKind::StoreUnreadable => "store unreadable",
            LiveProblemKind::EngineRefused => "spec refused by the engine",
            LiveProblemKind::ProjectNotFound => "pinned project not in the tenant",
            LiveProblemKind::ProjectAmbiguous => "ambiguous project name",
            LiveProblemKind::ProjectIdentity => "project identity mismatch",
            LiveProblemKind::ProjectInactive => "project not active",
            LiveProblemKind::BucketUnusable => "bucket unusable",
            LiveProblemKind::NotOwned => "resource not owned by the fleet",
            LiveProblemKind::FilesystemShrink => "filesystem would shrink",
            LiveProblemKind::ExistingFilestore => "existing_filestore unusable",
            LiveProblemKind::SubnetChanged => "cluster subnet changed",
        }
    }
}

// Exhaustive on purpose: a new kind in the engine does not compile until it is named here.
impl From<ProblemKind> for LiveProblemKind {
    fn from(kind: ProblemKind) -> Self {
        match kind {
            ProblemKind::ProjectNotFound => LiveProblemKind::ProjectNotFound,
            ProblemKind::ProjectAmbiguous => LiveProblemKind::ProjectAmbiguous,
            ProblemKind::ProjectIdentity => LiveProblemKind::ProjectIdentity,
            ProblemKind::ProjectInactive => LiveProblemKind::ProjectInactive,
            ProblemKind::BucketUnusable => LiveProblemKind::BucketUnusable,
            ProblemKind::NotOwned => LiveProblemKind::NotOwned,
            ProblemKind::FilesystemShrink => LiveProblemKind::FilesystemShrink,
            ProblemKind::ExistingFilestore => LiveProblemKind::ExistingFilestore,
            ProblemKind::SubnetChanged => LiveProblemKind::SubnetChanged,
        }
    }
}

impl From<LiveErrorKind> for LiveProblemKind {
    fn from(kind: LiveErrorKind) -> Self {
        match kind {
            LiveErrorKind::Tenant => LiveProblemKind::TenantRefused,
            LiveErrorKind::Cloud => LiveProblemKind::CloudUnreadable,
            LiveErrorKind::Store => LiveProblemKind::StoreUnreadable,
            LiveErrorKind::Engine => LiveProblemKind::EngineRefused,
        }
    }
}

impl PlanSummary {
    /// Whether the plan changes anything.
    pub fn is_noop(&self) -> bool {
        self.create.is_empty() && self.change.is_empty() && self.destroy.is_empty()
    }
}

/// One created, changed or destroyed object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlanItem {
    /// `project`, `cluster`, `bucket`, `network` or `subnet`.
    pub kind: &'static str,
    /// `project/cluster` for clusters, the project's display name otherwise.
    pub name: String,
    /// Public facts (`gpu_nodes: 1 → 2`, `backend: mk8s`).
    pub details: Vec<String>,
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn every_engine_and_live_error_kind_has_a_report_kind() {
        let mapped: BTreeSet<LiveProblemKind> = ProblemKind::ALL
            .into_iter()
            .map(LiveProblemKind::from)
            .chain(
                [
                    LiveErrorKind::Tenant,
                    LiveErrorKind::Cloud,
                    LiveErrorKind::Store,
                    LiveErrorKind::Engine,
                ]
                .map(LiveProblemKind::from),
            )
            .collect();
        assert_eq!(mapped, LiveProblemKind::ALL.into());
    }
}
