//! What a spec claims in the cloud, and where two spec files claim the same thing: one fleet
//! (tenant and fleet name) or one target (project and cluster) belongs to one file, or two
//! files would apply over each other.

use super::{FleetSpec, SpecError};

/// Where a spec claims something: the file, and the position of the field that names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    pub file: String,
    pub pos: super::yaml::Pos,
    /// The field's path in its document (`name`, `projects[0].clusters[1].name`).
    pub path: String,
}

impl std::fmt::Display for Claim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.pos)
    }
}

/// Two files claiming one thing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// What both claim, in words (`fleet research`, `cluster train of project research-a`).
    pub what: String,
    /// The claim that comes first (by file, then position).
    pub first: Claim,
    pub second: Claim,
}

impl Conflict {
    /// The error for the second file, pointing at the first.
    pub fn error(&self) -> SpecError {
        SpecError::new(
            &self.second.file,
            Some(self.second.pos),
            &self.second.path,
            format!(
                "{} is also declared in {}; one fleet and one cluster belong to one spec file",
                self.what, self.first
            ),
        )
    }

    /// The same, for the first file, pointing at the second.
    pub fn error_at_first(&self) -> SpecError {
        SpecError::new(
            &self.first.file,
            Some(self.first.pos),
            &self.first.path,
            format!(
                "{} is also declared in {}; one fleet and one cluster belong to one spec file",
                self.what, self.second
            ),
        )
    }
}

/// The fleet a spec declares: its tenant as written (empty: the one configured where it is
/// applied) and its name. The engine's labels and inventory are keyed by it.
pub fn fleet_key(spec: &FleetSpec) -> String {
    format!("{}/{}", spec.tenant_id, spec.name)
}

/// The project a spec's project resolves to: its existing project's ID when it names one,
/// else the name it is found or created by.
fn project_key(spec: &FleetSpec, project: &super::ProjectSpec) -> (String, String) {
    let id = project.cloud_project_id();
    if !id.is_empty() {
        return (
            format!("{}/id:{id}", spec.tenant_id),
            project.label().to_string(),
        );
    }
    let name = project.display_name(&spec.project_prefix);
    (format!("{}/name:{name}", spec.tenant_id), name)
}

/// Every fleet and target claimed by more than one of `specs`, each once, in the order of the
/// specs given. Claims within one file are the validator's (duplicate project keys).
pub fn conflicts(specs: &[&FleetSpec]) -> Vec<Conflict> {
    use std::collections::BTreeMap;
    let mut seen: BTreeMap<String, (usize, Claim, String)> = BTreeMap::new();
    let mut out = Vec::new();
    let mut claim = |key: String, index: usize, at: Claim, what: String| match seen.get(&key) {
        Some((first, first_at, _)) if *first != index => out.push(Conflict {
            what,
            first: first_at.clone(),
            second: at,
        }),
        Some(_) => {}
        None => {
            seen.insert(key, (index, at, what));
        }
    };
    for (index, spec) in specs.iter().enumerate() {
        let file = spec.source.clone();
        claim(
            format!("fleet:{}", fleet_key(spec)),
            index,
            Claim {
                file: file.clone(),
                pos: spec.positions.of("name"),
                path: "name".into(),
            },
            format!("fleet {}", spec.name),
        );
        for project in &spec.projects {
            let (project_key, project_name) = project_key(spec, project);
            for cluster in &project.clusters {
                claim(
                    format!("target:{project_key}/{}", cluster.name),
                    index,
                    Claim {
                        file: file.clone(),
                        pos: cluster.positions.of("name"),
                        path: format!("{}.name", cluster.positions.path),
                    },
                    format!("cluster {} of project {project_name}", cluster.name),
                );
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(file: &str, text: &str) -> FleetSpec {
        crate::spec::load_str(text, file).unwrap()
    }

    const RESEARCH: &str = "apiVersion: npa.fleet/v0.0.1\nkind: Fleet\nname: research\nregion: eu-north1\nprojects:\n  - name: a\n    clusters:\n      - name: train\n        cpu_nodes: {count: 1, platform: cpu-d3, preset: 4vcpu-16gb}\n";

    #[test]
    fn two_files_declaring_one_fleet_and_its_cluster_conflict_twice() {
        let a = spec("fleets/research.yaml", RESEARCH);
        let b = spec("fleets/zz-copy.yaml", RESEARCH);
        let found = conflicts(&[&a, &b]);
        let whats: Vec<&str> = found.iter().map(|c| c.what.as_str()).collect();
        assert_eq!(whats, ["fleet research", "cluster train of project a"]);
        let fleet = &found[0];
        assert_eq!(fleet.first.to_string(), "fleets/research.yaml:3:7");
        assert_eq!(fleet.second.to_string(), "fleets/zz-copy.yaml:3:7");
        let e = fleet.error().to_string();
        assert!(
            e.starts_with("fleets/zz-copy.yaml:3:7: name: fleet research is also declared in fleets/research.yaml:3:7"),
            "{e}"
        );
        assert!(
            found[1]
                .error_at_first()
                .to_string()
                .starts_with("fleets/research.yaml:8:15: projects[0].clusters[0].name: cluster train of project a is also declared in fleets/zz-copy.yaml:8:15"),
            "{}",
            found[1].error_at_first()
        );
    }

    #[test]
    fn a_renamed_fleet_still_cannot_take_anothers_cluster() {
        let a = spec("fleets/research.yaml", RESEARCH);
        let b = spec(
            "fleets/other.yaml",
            &RESEARCH.replace("name: research", "name: other"),
        );
        let found = conflicts(&[&a, &b]);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].what, "cluster train of project a");
    }

    #[test]
    fn other_clusters_prefixes_and_tenants_do_not_conflict() {
        let a = spec("fleets/research.yaml", RESEARCH);
        let other_cluster = spec(
            "fleets/b.yaml",
            &RESEARCH
                .replace("name: research", "name: b")
                .replace("name: train", "name: serve"),
        );
        let other_prefix = spec(
            "fleets/c.yaml",
            &RESEARCH
                .replace("name: research", "name: c")
                .replace("projects:", "project_prefix: c-\nprojects:"),
        );
        let other_tenant = spec(
            "fleets/d.yaml",
            &RESEARCH.replace("region:", "tenant_id: tenant-e00other\nregion:"),
        );
        assert_eq!(
            conflicts(&[&a, &other_cluster, &other_prefix, &other_tenant]),
            Vec::new()
        );
        // One file alone never conflicts with itself.
        assert_eq!(conflicts(&[&a]), Vec::new());
    }
}
