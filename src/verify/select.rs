//! Which targets a verification covers (fleet-engine §7.1 `resolve_fleet_targets`): the
//! selectors must each name something, the selection must not be empty, and for storage a
//! target whose filesystem is explicitly off is skipped (it counts as passed and skipped).

use crate::spec::FleetSpec;

/// The selected targets, in spec order, each with its index in the selection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// `(project index, cluster index)`.
    pub targets: Vec<(usize, usize)>,
}

pub use crate::engine::ops::SelectError;

/// The targets `only_projects` (keys or display names) and `only_clusters` (names within the
/// selected projects) select; an unknown selector or an empty result is an error.
pub fn select_targets(
    spec: &FleetSpec,
    only_projects: &[String],
    only_clusters: &[String],
    prefix: &str,
) -> Result<Selection, SelectError> {
    let targets = crate::engine::ops::select(spec, only_projects, only_clusters, prefix)?;
    if targets.is_empty() {
        return Err(SelectError::Empty);
    }
    Ok(Selection { targets })
}

/// Whether storage verification skips a target: its filesystem is explicitly off.
pub fn storage_skipped(cluster: &crate::spec::ClusterSpec) -> bool {
    !cluster.enable_filestore && cluster.existing_filestore.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::load_str;

    fn spec() -> FleetSpec {
        load_str(
            "apiVersion: npa.fleet/v0.0.1\nname: f\ntenant_id: \"\"\nregion: eu-north1\nproject_prefix: pre-\ndefaults:\n  cpu_nodes: {count: 1, platform: cpu-d3, preset: 16vcpu-64gb}\nprojects:\n  - name: a\n    clusters:\n      - name: one\n        enable_filestore: true\n      - name: two\n  - name: b\n",
            "f.yaml",
        )
        .unwrap()
    }

    #[test]
    fn selectors_must_each_name_a_target_and_something_must_be_selected() {
        let s = spec();
        let all = select_targets(&s, &[], &[], "pre-").unwrap();
        assert_eq!(all.targets, [(0, 0), (0, 1), (1, 0)]);
        let by_display = select_targets(&s, &["pre-a".into()], &["two".into()], "pre-").unwrap();
        assert_eq!(by_display.targets, [(0, 1)]);
        assert_eq!(
            select_targets(&s, &["c".into()], &[], "pre-"),
            Err(SelectError::UnknownProject("c".into()))
        );
        assert_eq!(
            select_targets(&s, &["b".into()], &["one".into()], "pre-"),
            Err(SelectError::UnknownCluster("one".into()))
        );
        assert!(storage_skipped(&s.projects[0].clusters[1]));
        assert!(!storage_skipped(&s.projects[0].clusters[0]));
    }
}
