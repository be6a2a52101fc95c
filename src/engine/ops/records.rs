//! The inventory records as the lifecycle commands read and write them: lookups, fresh
//! records, timestamps, and the backend-ownership rule every command checks first.

use super::error::{EngineError, Refusal};
use crate::engine::desired::TargetKey;
use crate::spec::{Backend, ClusterSpec, FleetSpec};
use crate::store::TargetRecord;

// The crate's one clock: records are stamped as the store stamps its rows.
pub(super) use crate::store::queue::now_ms;

/// The record of one target, if the inventory has it.
pub(super) fn find_target<'a>(
    records: &'a [TargetRecord],
    project_key: &str,
    cluster: &str,
) -> Option<&'a TargetRecord> {
    records
        .iter()
        .find(|r| r.project_key == project_key && r.cluster_name == cluster)
}

/// The record a target starts with before anything of it exists.
pub(super) fn new_target(fleet: &str, key: &TargetKey, backend: Backend) -> TargetRecord {
    TargetRecord {
        fleet: fleet.to_string(),
        project_key: key.project_key.clone(),
        cluster_name: key.cluster.clone(),
        backend: backend.as_str().into(),
        ..Default::default()
    }
}

/// Backend ownership (fleet-engine §6.8): a record without a backend reads as `mk8s`, and a
/// record of another backend than the spec's refuses the action.
pub(super) fn require_backend(
    record: &TargetRecord,
    cluster: &ClusterSpec,
    refusal: &str,
) -> Result<(), EngineError> {
    let backend = if record.backend.is_empty() {
        "mk8s"
    } else {
        record.backend.as_str()
    };
    if backend == cluster.backend_name() {
        return Ok(());
    }
    Err(EngineError::refused(
        Refusal::OtherBackend,
        format!(
            "persisted cluster state belongs to backend '{backend}', but the spec selects '{}'; {refusal}",
            cluster.backend_name()
        ),
    ))
}

/// Every selected target the inventory records belongs to the backend the spec selects.
pub(super) fn require_selected_backends(
    spec: &FleetSpec,
    selected: &[(usize, usize)],
    records: &[TargetRecord],
) -> Result<(), EngineError> {
    for &(p, c) in selected {
        let (project, cluster) = (&spec.projects[p], &spec.projects[p].clusters[c]);
        if let Some(record) = find_target(records, &project.key(), &cluster.name) {
            require_backend(
                record,
                cluster,
                "refusing to plan, reconcile, or destroy with the wrong backend",
            )?;
        }
    }
    Ok(())
}
