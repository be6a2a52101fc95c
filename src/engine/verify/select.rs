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

/// Why a selection is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectError {
    #[error("project selector has no declared Fleet target: {0}")]
    UnknownProject(String),
    #[error("cluster selector has no target in selected projects: {0}")]
    UnknownCluster(String),
    #[error("no Fleet target is selected")]
    Empty,
}

/// The targets `only_projects` (keys or display names) and `only_clusters` (names within the
/// selected projects) select; an unknown selector or an empty result is an error.
pub fn select_targets(
    spec: &FleetSpec,
    only_projects: &[String],
    only_clusters: &[String],
    prefix: &str,
) -> Result<Selection, SelectError> {
    for wanted in only_projects {
        let known = spec.projects.iter().any(|p| {
            !p.clusters.is_empty() && (&p.key() == wanted || &p.display_name(prefix) == wanted)
        });
        if !known {
            return Err(SelectError::UnknownProject(wanted.clone()));
        }
    }
    let in_scope = |p: &crate::spec::ProjectSpec| {
        only_projects.is_empty()
            || only_projects.contains(&p.key())
            || only_projects.contains(&p.display_name(prefix))
    };
    for wanted in only_clusters {
        let known = spec
            .projects
            .iter()
            .filter(|p| in_scope(p))
            .any(|p| p.clusters.iter().any(|c| &c.name == wanted));
        if !known {
            return Err(SelectError::UnknownCluster(wanted.clone()));
        }
    }
    let targets: Vec<(usize, usize)> = spec
        .projects
        .iter()
        .enumerate()
        .filter(|(_, p)| in_scope(p))
        .flat_map(|(pi, p)| {
            p.clusters
                .iter()
                .enumerate()
                .filter(|(_, c)| only_clusters.is_empty() || only_clusters.contains(&c.name))
                .map(move |(ci, _)| (pi, ci))
        })
        .collect();
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
