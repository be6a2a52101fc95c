//! A target's add-ons in the live plan: each desired add-on against the releases the cluster
//! has (by fleetbot's labels and the digest they carry) and the manifests the inventory
//! records. Values cannot be read back or changed in place, so a changed digest is a replace.

use super::types::{Action, Change, ResourceAction};
use crate::cloud::domain::{Release, ReleaseState};
use crate::engine::addons::{ADDON_LABEL, DIGEST_LABEL, Install};
use crate::engine::desired::{DesiredTarget, owned_by};
use crate::store::TargetRecord;

const RESOURCE: &str = "add-on";

fn digest_change() -> Change {
    Change {
        field: "values",
        from: "(installed)".into(),
        to: "(spec)".into(),
    }
}

/// The add-on actions of one target whose cluster exists (`releases` are its releases).
pub(super) fn addon_actions(
    fleet: &str,
    target: &DesiredTarget,
    releases: &[Release],
    record: Option<&TargetRecord>,
) -> Vec<ResourceAction> {
    let key = &target.key;
    let recorded = |name: &str| record.and_then(|r| r.addons.iter().find(|a| a.name == name));
    let ours = |r: &Release| {
        record.is_some_and(|rec| rec.addons.iter().any(|a| a.release_id == r.id))
            || owned_by(&r.labels, fleet, &key.project_key, &key.cluster)
    };
    let mut out = Vec::new();
    for addon in &target.addons {
        let mut a = ResourceAction::new(RESOURCE, &addon.name, Action::NoChange);
        match &addon.install {
            Install::Release { .. } => {
                let found = releases
                    .iter()
                    .find(|r| ours(r) && r.labels.get(ADDON_LABEL) == Some(&addon.name));
                match found {
                    None => a.action = Action::Create,
                    Some(r) if r.labels.get(DIGEST_LABEL) != Some(&addon.digest) => {
                        a.action = Action::Replace;
                        a.changes.push(digest_change());
                        a.reason = "a release's values cannot change in place".into();
                    }
                    Some(r) if r.state == ReleaseState::Failed => {
                        a.action = Action::Replace;
                        a.reason = "its install failed".into();
                    }
                    Some(r) if r.state != ReleaseState::Deployed => {
                        a.reason = format!("release is {}", r.state.as_str());
                    }
                    Some(_) => {}
                }
            }
            Install::Manifests { .. } => match recorded(&addon.name) {
                None => a.action = Action::Create,
                Some(r) if r.digest != addon.digest => {
                    a.action = Action::Update;
                    a.changes.push(Change {
                        field: "manifests",
                        from: "(applied)".into(),
                        to: "(spec)".into(),
                    });
                }
                Some(_) => {}
            },
        }
        out.push(a);
    }
    let wanted = |name: &str| target.addons.iter().any(|d| d.name == name);
    for r in releases.iter().filter(|r| ours(r)) {
        let name = r
            .labels
            .get(ADDON_LABEL)
            .cloned()
            .unwrap_or_else(|| r.application_name.clone());
        if !wanted(&name) {
            let mut a = ResourceAction::new(RESOURCE, &name, Action::Delete);
            a.reason = "no longer in the spec".into();
            out.push(a);
        }
    }
    for old in record.into_iter().flat_map(|r| &r.addons) {
        if old.release_id.is_empty() && !wanted(&old.name) {
            let mut a = ResourceAction::new(RESOURCE, &old.name, Action::Delete);
            a.reason = "no longer in the spec".into();
            out.push(a);
        }
    }
    out
}
