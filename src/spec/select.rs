//! Which targets of a spec the `--only-projects` and `--only-clusters` selectors name, for
//! every command that selects (fleet-engine §7.1): a selector naming nothing is an error.

use super::FleetSpec;

/// Why a selection is refused (fleet-engine §7.1, applied to every command that selects):
/// a selector that names nothing is a typo, never an empty run that exits 0.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectError {
    #[error("project selector has no declared Fleet target: {0}")]
    UnknownProject(String),
    #[error("cluster selector has no target in selected projects: {0}")]
    UnknownCluster(String),
    #[error("no Fleet target is selected")]
    Empty,
    /// A selector given with nothing in it: `--only-clusters=","`, `--only-projects " "`.
    /// Never read as "no filter", which would select everything.
    #[error(
        "{0} names nothing (it is empty, blank or only commas); name at least one, or leave {0} out to select every target"
    )]
    NamesNothing(&'static str),
}

/// The names one selector value gives (`--only-projects`, `--only-clusters`): split on commas,
/// each trimmed, empty items dropped. `None` (not given) is no filter; a value given that names
/// nothing once split is an error naming `flag`, so a stray comma or a blank variable can never
/// widen a command to every target.
pub fn parse_selector(flag: &'static str, value: Option<&str>) -> Result<Vec<String>, SelectError> {
    let Some(value) = value else {
        return Ok(Vec::new());
    };
    let names: Vec<String> = value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    if names.is_empty() {
        return Err(SelectError::NamesNothing(flag));
    }
    Ok(names)
}

/// The selected targets as `(project index, cluster index)`, in spec order. Every project
/// selector (a key or a display name) must name a project (every project has a cluster: the
/// spec gives one that declares none a default), and every cluster
/// selector a cluster within the selected projects. Without selectors, a spec with no cluster
/// selects nothing, which is not an error here.
pub fn select(
    spec: &FleetSpec,
    only_projects: &[String],
    only_clusters: &[String],
    prefix: &str,
) -> Result<Vec<(usize, usize)>, SelectError> {
    // A blank name (from a caller that split a list itself) would name nothing and must not
    // pass for "no filter" once dropped.
    for (flag, list) in [
        ("--only-projects", only_projects),
        ("--only-clusters", only_clusters),
    ] {
        if list.iter().any(|name| name.trim().is_empty()) {
            return Err(SelectError::NamesNothing(flag));
        }
    }
    let names = |p: &super::ProjectSpec, wanted: &String| {
        &p.key() == wanted || &p.display_name(prefix) == wanted
    };
    if let Some(unknown) = only_projects
        .iter()
        .find(|wanted| !spec.projects.iter().any(|p| names(p, wanted)))
    {
        return Err(SelectError::UnknownProject(unknown.clone()));
    }
    let in_scope = |p: &super::ProjectSpec| {
        only_projects.is_empty() || only_projects.iter().any(|w| names(p, w))
    };
    if let Some(unknown) = only_clusters.iter().find(|wanted| {
        !spec
            .projects
            .iter()
            .filter(|p| in_scope(p))
            .any(|p| p.clusters.iter().any(|c| &&c.name == wanted))
    }) {
        return Err(SelectError::UnknownCluster(unknown.clone()));
    }
    let mut out = Vec::new();
    for (pi, project) in spec.projects.iter().enumerate() {
        if !in_scope(project) {
            continue;
        }
        for (ci, cluster) in project.clusters.iter().enumerate() {
            if only_clusters.is_empty() || only_clusters.contains(&cluster.name) {
                out.push((pi, ci));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> FleetSpec {
        crate::spec::load_str(
            "apiVersion: npa.fleet/v0.0.1\nname: f\ntenant_id: \"\"\nregion: eu-north1\nproject_prefix: pre-\ndefaults:\n  cpu_nodes: {count: 1, platform: cpu-d3, preset: 16vcpu-64gb}\nprojects:\n  - name: a\n    clusters:\n      - name: one\n      - name: two\n  - name: b\n    clusters:\n      - name: three\n",
            "f.yaml",
        )
        .unwrap()
    }

    fn sel(p: &[&str], c: &[&str]) -> Result<Vec<(usize, usize)>, SelectError> {
        let own = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        select(&spec(), &own(p), &own(c), "pre-")
    }

    #[test]
    fn every_selector_must_name_a_target() {
        assert_eq!(sel(&[], &[]).unwrap(), [(0, 0), (0, 1), (1, 0)]);
        assert_eq!(sel(&["pre-a"], &["two"]).unwrap(), [(0, 1)]);
        assert_eq!(sel(&["a", "b"], &["three"]).unwrap(), [(1, 0)]);
        assert_eq!(
            sel(&["regoin"], &[]),
            Err(SelectError::UnknownProject("regoin".into()))
        );
        // A project without clusters declares no target to select.
        assert_eq!(
            sel(&["empty"], &[]),
            Err(SelectError::UnknownProject("empty".into()))
        );
        assert_eq!(
            sel(&["b"], &["one"]),
            Err(SelectError::UnknownCluster("one".into()))
        );
        assert_eq!(
            SelectError::UnknownCluster("one".into()).to_string(),
            "cluster selector has no target in selected projects: one"
        );
    }

    /// Issue #32: `destroy --only-clusters=","` destroyed every cluster. A selector given with
    /// nothing in it is an error naming the flag, never "all".
    #[test]
    fn a_selector_that_names_nothing_is_an_error_not_all() {
        assert_eq!(parse_selector("--only-clusters", None), Ok(vec![]));
        assert_eq!(
            parse_selector("--only-clusters", Some(" a, b ,,c ,")).unwrap(),
            ["a", "b", "c"]
        );
        for blank in ["", " ", ",", " , ,", "\t"] {
            let e = parse_selector("--only-clusters", Some(blank)).unwrap_err();
            assert_eq!(e, SelectError::NamesNothing("--only-clusters"), "{blank:?}");
            assert!(
                e.to_string().starts_with("--only-clusters names nothing"),
                "{e}"
            );
        }
        // A list built elsewhere (the library) with a blank name in it is refused too.
        assert_eq!(
            sel(&[" "], &[]),
            Err(SelectError::NamesNothing("--only-projects"))
        );
        assert_eq!(
            sel(&[], &["one", ""]),
            Err(SelectError::NamesNothing("--only-clusters"))
        );
    }
}
