//! Deploy's last phase: the targets the inventory records that the spec no longer declares.
//! With prune they are torn down exactly as destroy tears a target down; without it they are
//! only reported, because deploy never deletes a target unasked.

use std::collections::HashSet;

use super::destroy::{DestroyEntry, destroy_recorded};
use super::error::EngineError;
use super::options::{Destruction, LifecycleOptions};
use super::prepare::Prepared;
use super::progress::Progress;
use crate::cloud::domain::Cloud;
use crate::engine::live::Action;
use crate::store::InventoryStore;

/// What the prune phase did.
#[derive(Debug, Default)]
pub(super) struct Pruned {
    /// The targets torn down, or left incomplete with their errors.
    pub(super) pruned: Vec<DestroyEntry>,
    /// `project/cluster` of each target left running.
    pub(super) kept: Vec<String>,
}

/// Tears down (with `options.prune`) or reports the planned prune entries. `stopped`: a
/// fail-fast deploy already failed, so nothing more is changed.
pub(super) async fn prune<C: Cloud, S: InventoryStore>(
    cloud: &C,
    store: &S,
    fleet: &str,
    prepared: &Prepared,
    options: &LifecycleOptions,
    stopped: bool,
    progress: &Progress,
) -> Result<Pruned, EngineError> {
    let mut out = Pruned::default();
    // Under an approval that listed what it destroys, a target is pruned only as that list
    // says: one the cloud changed since (a node group added by hand) is kept and reported.
    let unlisted: HashSet<String> = match options.allow_destructive {
        Destruction::Refused => HashSet::new(),
        Destruction::Listed(_) => prepared
            .plan
            .destructive()
            .into_iter()
            .filter(|d| !options.allow_destructive.allows(d))
            .map(|d| d.target)
            .collect(),
    };
    for observed in &prepared.observed.pruned {
        let record = &observed.record;
        let key = format!("{}/{}", record.project_key, record.cluster_name);
        if !options.prune || stopped || unlisted.contains(&key) {
            // A record whose resources are all gone leaves nothing running to report; the
            // plan says so, and the next deploy with prune drops the record.
            let running = prepared
                .plan
                .pruned()
                .filter(|t| t.target == key)
                .flat_map(|t| &t.actions)
                .any(|a| a.action == Action::Delete);
            if running {
                out.kept.push(key);
            }
            continue;
        }
        // A pruned target is not in the spec, so a scoped destroy cannot reach it: the retry
        // is the same deploy.
        let retry = format!("fleetbot deploy --spec {} --prune --yes", options.spec_path);
        let entry = destroy_recorded(cloud, store, fleet, record, retry, progress).await?;
        out.pruned.push(entry);
    }
    Ok(out)
}
