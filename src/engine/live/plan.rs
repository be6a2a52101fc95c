//! The fleet's live plan: each project and target diffed, then counted and digested so that
//! the digest changes exactly when the actions do.

use sha2::{Digest, Sha256};

use super::observe::{Observed, ObservedProject};
use super::project_diff::plan_project;
use super::prune::plan_pruned;
use super::target_diff::plan_target;
use super::types::{Action, LivePlan, Summary};
use crate::engine::desired::{DesiredProject, DesiredTarget};
use crate::store::{ProjectRecord, TargetRecord};

impl Summary {
    fn of(plan: &LivePlan) -> Summary {
        let mut summary = Summary::default();
        for a in plan.actions() {
            match a.action {
                Action::Create => summary.create += 1,
                Action::Update => summary.update += 1,
                Action::Replace => summary.replace += 1,
                Action::Delete => summary.delete += 1,
                Action::NoChange | Action::Reuse => {}
            }
        }
        summary.unchanged = plan.targets.iter().filter(|t| t.unchanged).count();
        summary
    }
}

/// The SHA-256 of the plan's projects and targets as JSON, hashed as it is written: a
/// 1,000-target plan's JSON is megabytes that nothing else reads.
fn digest(plan: &LivePlan) -> String {
    struct Hashing(Sha256);
    impl std::io::Write for Hashing {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.update(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut hashing = Hashing(Sha256::new());
    serde_json::to_writer(&mut hashing, &(&plan.projects, &plan.targets)).expect("plan serializes");
    hex::encode(hashing.0.finalize())
}

/// Diffs desired against observed.
pub fn plan(
    fleet: &str,
    cloud_name: &str,
    projects: &[DesiredProject],
    targets: &[DesiredTarget],
    observed: &Observed,
    project_records: &[ProjectRecord],
    target_records: &[TargetRecord],
) -> LivePlan {
    let project_plans = projects
        .iter()
        .map(|desired| {
            let record = project_records
                .iter()
                .find(|r| r.project_key == desired.key);
            plan_project(fleet, desired, observed, record)
        })
        .collect();
    let empty = ObservedProject::default();
    let target_plans = targets
        .iter()
        .map(|target| {
            let key = &target.key;
            let obs = observed.projects.get(&key.project_key).unwrap_or(&empty);
            let record = target_records
                .iter()
                .find(|r| r.project_key == key.project_key && r.cluster_name == key.cluster);
            plan_target(fleet, target, obs, record)
        })
        // After the declared targets, as deploy tears them down after applying the rest.
        .chain(observed.pruned.iter().map(|o| plan_pruned(fleet, o)))
        .collect();
    let mut plan = LivePlan {
        fleet: fleet.to_string(),
        cloud: cloud_name.to_string(),
        projects: project_plans,
        targets: target_plans,
        summary: Summary::default(),
        digest: String::new(),
    };
    plan.summary = Summary::of(&plan);
    plan.digest = digest(&plan);
    plan
}
