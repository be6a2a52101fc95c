//! A project's part of the live plan: the project itself, its shared subnet and its bucket.

use super::observe::{Observed, ObservedProject};
use super::types::{Action, Change, Problem, ProblemKind, ProjectPlan, ResourceAction};
use crate::cloud::domain::{Bucket, State, Subnet};
use crate::engine::desired::{DesiredBucket, DesiredProject, generated_bucket_name};
use crate::store::ProjectRecord;

/// The subnet a project's clusters use: the one fleetbot recorded, else one named `default`,
/// else the lowest ID (fleet-engine §6.5).
pub fn choose_subnet<'a>(
    subnets: &'a [Subnet],
    record: Option<&ProjectRecord>,
) -> Option<&'a Subnet> {
    if let Some(recorded) = record
        .map(|r| r.subnet_id.as_str())
        .filter(|s| !s.is_empty())
        && let Some(s) = subnets.iter().find(|s| s.id == recorded)
    {
        return Some(s);
    }
    subnets
        .iter()
        .filter(|s| s.name.contains("default"))
        .min_by(|a, b| a.id.cmp(&b.id))
        .or_else(|| subnets.iter().min_by(|a, b| a.id.cmp(&b.id)))
}

/// The bucket name of a project once its ID is known.
pub fn bucket_name(
    bucket: &DesiredBucket,
    record: Option<&ProjectRecord>,
    tenant_id: &str,
    project_id: &str,
    fleet: &str,
) -> String {
    if !bucket.explicit_name.is_empty() {
        return bucket.explicit_name.clone();
    }
    if let Some(name) = record
        .map(|r| r.bucket_name.clone())
        .filter(|n| !n.is_empty())
    {
        return name;
    }
    generated_bucket_name(tenant_id, project_id, fleet)
}

fn subnet_actions(
    desired: &DesiredProject,
    obs: &ObservedProject,
    record: Option<&ProjectRecord>,
) -> Vec<ResourceAction> {
    let chosen = obs
        .project
        .as_ref()
        .and_then(|_| choose_subnet(&obs.subnets, record));
    match chosen {
        Some(subnet) => {
            let owned = record.is_some_and(|r| r.created_subnet_id == subnet.id);
            let action = if owned {
                Action::NoChange
            } else {
                Action::Reuse
            };
            vec![ResourceAction::new("subnet", &subnet.name, action)]
        }
        None if obs.project.is_none() => {
            let mut a = ResourceAction::new("subnet", "default-subnet", Action::Reuse);
            a.reason = "created with the project".into();
            vec![a]
        }
        None => vec![
            ResourceAction::new("network", &format!("{}-net", desired.key), Action::Create),
            ResourceAction::new("subnet", &format!("{}-subnet", desired.key), Action::Create),
        ],
    }
}

/// What to do about a bucket of the wanted name that is scheduled for deletion (soft-deleted
/// on Nebius: it keeps its name until purged, and S3 refuses it). fleetbot neither undeletes
/// it nor picks another name by itself: either is a person's decision.
pub const SCHEDULED_BUCKET_ADVICE: &str = "the project's bucket is scheduled for deletion and keeps its name until it is purged (7 days after the deletion, unless asked otherwise): undelete it (`nebius storage bucket undelete --id <bucket ID>`) to keep its objects, or set object_storage.bucket_name to another name; fleetbot does not choose another name by itself";

/// An existing bucket against the spec: resizable in place, anything else a problem.
fn existing_bucket(
    label: &str,
    found: &Bucket,
    bucket: &DesiredBucket,
    problems: &mut Vec<Problem>,
) -> ResourceAction {
    if found.storage_class != bucket.storage_class {
        problems.push(Problem::new(
            ProblemKind::BucketUnusable,
            format!(
                "existing bucket has storage class {} but the spec asks for {}; changing the class of a bucket is not supported",
                found.storage_class, bucket.storage_class
            ),
        ));
    }
    if found.scheduled_for_deletion {
        problems.push(Problem::new(
            ProblemKind::BucketUnusable,
            SCHEDULED_BUCKET_ADVICE,
        ));
        return ResourceAction::new("bucket", label, Action::NoChange);
    }
    if found.state != State::Ready {
        problems.push(Problem::new(
            ProblemKind::BucketUnusable,
            "existing bucket is not active (suspended or still changing)",
        ));
    }
    let mut a = ResourceAction::new("bucket", label, Action::NoChange);
    if found.max_size_bytes != bucket.max_size_bytes {
        a.action = Action::Update;
        a.changes.push(Change {
            field: "max_size_bytes",
            from: found.max_size_bytes.to_string(),
            to: bucket.max_size_bytes.to_string(),
        });
    }
    a
}

fn bucket_action(
    fleet: &str,
    bucket: &DesiredBucket,
    obs: &ObservedProject,
    record: Option<&ProjectRecord>,
    tenant_id: &str,
    problems: &mut Vec<Problem>,
) -> ResourceAction {
    let label = if bucket.explicit_name.is_empty() {
        "(generated name)"
    } else {
        "(explicit name)"
    };
    let project_id = obs.project.as_ref().map(|p| p.id.as_str()).unwrap_or("");
    if project_id.is_empty() {
        return ResourceAction::new("bucket", label, Action::Create);
    }
    let wanted = bucket_name(bucket, record, tenant_id, project_id, fleet);
    match obs.buckets.iter().find(|b| b.name == wanted) {
        None => ResourceAction::new("bucket", label, Action::Create),
        Some(found) => existing_bucket(label, found, bucket, problems),
    }
}

/// One project's plan: reuse or create it, then its subnet and its bucket.
pub(super) fn plan_project(
    fleet: &str,
    desired: &DesiredProject,
    observed: &Observed,
    record: Option<&ProjectRecord>,
) -> ProjectPlan {
    let empty = ObservedProject::default();
    let obs = observed.projects.get(&desired.key).unwrap_or(&empty);
    let mut actions = Vec::new();
    let mut problems = obs.problems.clone();
    let name = desired.display_name_or_id();
    match &obs.project {
        Some(_) => actions.push(ResourceAction::new("project", name, Action::Reuse)),
        None if desired.project_id.is_empty() => {
            actions.push(ResourceAction::new("project", name, Action::Create))
        }
        None => {}
    }
    if desired.needs_subnet {
        actions.extend(subnet_actions(desired, obs, record));
    }
    if let Some(bucket) = &desired.bucket {
        actions.push(bucket_action(
            fleet,
            bucket,
            obs,
            record,
            &observed.tenant_id,
            &mut problems,
        ));
    }
    ProjectPlan {
        key: desired.key.clone(),
        actions,
        problems,
    }
}
