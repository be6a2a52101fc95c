//! Runtime values: the operator's private file that fills a public spec's placeholders
//! (existing project IDs, capacity block groups, CSI chart repositories, bucket names).
//!
//! Public specs carry placeholders (`project-REPLACE_AT_RUNTIME`, `"<your-project-id>"`,
//! `capacityblockgroup-REPLACE_AT_RUNTIME`) or leave a private field empty. The runtime file
//! supplies the real values, keyed by fleet name, project key and cluster name, and is given
//! on the command line (`--runtime-values FILE`) or as a server setting
//! (`FLEETBOT_RUNTIME_VALUES`); it is never read from a pull request.
//!
//! ```yaml
//! fleets:
//!   rtx-render-fleet:                 # the spec's `name`
//!     capacity_block_group: capacityblockgroup-…   # every cluster's placeholder reservation
//!     projects:
//!       large:                        # a project key (the slug of its name or project_id)
//!         project_id: project-…       # bind to an existing project
//!         bucket_name: my-private-bucket
//!         clusters:
//!           render:
//!             filesystem_csi_chart_repository: oci://registry.internal/charts
//! ```
//!
//! Binding never changes what a spec is called: a project's key and display name stay those
//! of the public spec, so inventories, labels, kubeconfig contexts and every public report are
//! the same with or without the file. No value of the file is ever part of an error message:
//! errors name the file, the line and the field only.

use std::collections::BTreeMap;
use std::path::Path;

use crate::spec::warning::nearest_key;
use crate::spec::yaml::{self, Node, Pos, Value};
use crate::spec::{FleetSpec, SpecError};

/// [`crate::spec::load_str`] with the operator's runtime values filled in before validation.
pub fn load_str_with(
    text: &str,
    file: &str,
    runtime: Option<&RuntimeValues>,
) -> Result<FleetSpec, SpecError> {
    let mut spec = crate::spec::spec_from_str(text, file)?;
    if let Some(runtime) = runtime {
        spec.runtime_notes = runtime.apply(&mut spec)?;
    }
    crate::spec::validate(&spec)?;
    Ok(spec)
}

/// [`crate::spec::load`] with the operator's runtime values filled in before validation.
pub fn load_with(path: &Path, runtime: Option<&RuntimeValues>) -> Result<FleetSpec, SpecError> {
    let (text, file) = crate::spec::read_capped(path)?;
    load_str_with(&text, &file, runtime)
}

/// Environment variable naming the runtime values file, for the CLI and the server alike.
pub const RUNTIME_VALUES_ENV: &str = "FLEETBOT_RUNTIME_VALUES";

/// A private value with where it was written (for errors, which never show the value).
#[derive(Clone, PartialEq, Eq)]
struct Private {
    value: String,
    pos: Pos,
}

impl std::fmt::Debug for Private {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "<private at {}>", self.pos)
    }
}

/// Values that apply to clusters (at fleet, project or cluster level; the nearest wins).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct ClusterValues {
    capacity_block_group: Option<Private>,
    filesystem_csi_chart_repository: Option<Private>,
}

impl ClusterValues {
    fn or(&self, outer: &ClusterValues) -> ClusterValues {
        ClusterValues {
            capacity_block_group: self
                .capacity_block_group
                .clone()
                .or_else(|| outer.capacity_block_group.clone()),
            filesystem_csi_chart_repository: self
                .filesystem_csi_chart_repository
                .clone()
                .or_else(|| outer.filesystem_csi_chart_repository.clone()),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct ProjectValues {
    pos: Pos,
    project_id: Option<Private>,
    bucket_name: Option<Private>,
    defaults: ClusterValues,
    clusters: BTreeMap<String, (Pos, ClusterValues)>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct FleetValues {
    defaults: ClusterValues,
    projects: BTreeMap<String, ProjectValues>,
}

/// A parsed runtime values file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuntimeValues {
    /// The file name as given, for errors.
    file: String,
    fleets: BTreeMap<String, FleetValues>,
}

const TOP_KEYS: &[&str] = &["fleets"];
const CLUSTER_KEYS: &[&str] = &["capacity_block_group", "filesystem_csi_chart_repository"];
const FLEET_KEYS: &[&str] = &[
    "capacity_block_group",
    "filesystem_csi_chart_repository",
    "projects",
];
const PROJECT_KEYS: &[&str] = &[
    "project_id",
    "bucket_name",
    "capacity_block_group",
    "filesystem_csi_chart_repository",
    "clusters",
];

/// The largest runtime values file read: it names a few IDs per cluster.
const MAX_BYTES: u64 = 1 << 20;

impl RuntimeValues {
    /// Reads a runtime values file. Its values are private: errors name places, not values.
    pub fn load(path: &Path) -> Result<RuntimeValues, SpecError> {
        let file = path.display().to_string();
        let io = |e: std::io::Error| {
            SpecError::new(&file, None, "", format!("cannot read runtime values: {e}"))
        };
        let meta = std::fs::metadata(path).map_err(io)?;
        if meta.len() > MAX_BYTES {
            return Err(SpecError::new(
                &file,
                None,
                "",
                format!(
                    "runtime values file is {} bytes; the limit is {MAX_BYTES} bytes",
                    meta.len()
                ),
            ));
        }
        let text = std::fs::read_to_string(path).map_err(io)?;
        RuntimeValues::from_str(&text, &file)
    }

    /// Parses runtime values held in memory; `file` names them in errors.
    pub fn from_str(text: &str, file: &str) -> Result<RuntimeValues, SpecError> {
        let limits = yaml::Limits {
            max_bytes: MAX_BYTES as usize,
            max_expanded_bytes: 4 * MAX_BYTES as usize,
            ..yaml::Limits::default()
        };
        let root = yaml::parse(text, limits)
            .map_err(|e| SpecError::new(file, Some(e.pos), "", e.message))?;
        let reader = Reader { file };
        let mut values = RuntimeValues {
            file: file.to_string(),
            fleets: BTreeMap::new(),
        };
        if root.is_null() {
            return Ok(values);
        }
        let top = reader.map(&root, "")?;
        reader.known_keys(top, TOP_KEYS, "")?;
        let Some(fleets) = root.get("fleets").filter(|n| !n.is_null()) else {
            return Ok(values);
        };
        for fleet in reader.map(fleets, "fleets")? {
            let path = format!("fleets.{}", fleet.key);
            let entries = reader.map(&fleet.value, &path)?;
            reader.known_keys(entries, FLEET_KEYS, &path)?;
            let mut out = FleetValues {
                defaults: reader.cluster_values(&fleet.value, &path)?,
                projects: BTreeMap::new(),
            };
            if let Some(projects) = fleet.value.get("projects").filter(|n| !n.is_null()) {
                for project in reader.map(projects, &format!("{path}.projects"))? {
                    let ppath = format!("{path}.projects.{}", project.key);
                    let pentries = reader.map(&project.value, &ppath)?;
                    reader.known_keys(pentries, PROJECT_KEYS, &ppath)?;
                    let mut p = ProjectValues {
                        pos: project.key_pos,
                        project_id: reader.private(&project.value, "project_id", &ppath)?,
                        bucket_name: reader.private(&project.value, "bucket_name", &ppath)?,
                        defaults: reader.cluster_values(&project.value, &ppath)?,
                        clusters: BTreeMap::new(),
                    };
                    if let Some(clusters) = project.value.get("clusters").filter(|n| !n.is_null()) {
                        for cluster in reader.map(clusters, &format!("{ppath}.clusters"))? {
                            let cpath = format!("{ppath}.clusters.{}", cluster.key);
                            let centries = reader.map(&cluster.value, &cpath)?;
                            reader.known_keys(centries, CLUSTER_KEYS, &cpath)?;
                            p.clusters.insert(
                                cluster.key.clone(),
                                (
                                    cluster.key_pos,
                                    reader.cluster_values(&cluster.value, &cpath)?,
                                ),
                            );
                        }
                    }
                    out.projects.insert(project.key.clone(), p);
                }
            }
            values.fleets.insert(fleet.key.clone(), out);
        }
        Ok(values)
    }

    /// The file these values were read from.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// Whether the file has an entry for the fleet `name`.
    pub fn covers(&self, name: &str) -> bool {
        self.fleets.contains_key(name)
    }

    /// Fills `spec`'s placeholders with this file's values for its fleet (nothing when the
    /// file has no entry for it). A value that contradicts a concrete value in the spec is an
    /// error. A value the spec has no use for (a project or cluster it does not declare, a
    /// bucket without object storage, a reservation the spec does not declare) is returned
    /// as a note and not used: the file outlives the specs it serves (a merged pull request
    /// may remove a project), and it never adds to the shape of a fleet.
    pub fn apply(&self, spec: &mut FleetSpec) -> Result<Vec<SpecError>, SpecError> {
        let mut notes = Vec::new();
        let Some(fleet) = self.fleets.get(&spec.name) else {
            return Ok(notes);
        };
        let err = |pos: Pos, path: &str, message: String| {
            SpecError::new(&self.file, Some(pos), path, message)
        };
        let keys: Vec<String> = spec.projects.iter().map(|p| p.key()).collect();
        for (key, values) in &fleet.projects {
            if !keys.contains(key) {
                let hint = nearest_key(key, keys.iter().map(String::as_str))
                    .map(|k| format!(" (did you mean '{k}'?)"))
                    .unwrap_or_default();
                notes.push(err(
                    values.pos,
                    &format!("fleets.{}.projects.{key}", spec.name),
                    format!(
                        "fleet '{}' has no project with key '{key}'{hint}; not used",
                        spec.name
                    ),
                ));
            }
        }
        for project in &mut spec.projects {
            let key = project.key();
            let values = fleet.projects.get(&key);
            let ppath = format!("fleets.{}.projects.{key}", spec.name);
            if let Some(values) = values {
                if let Some(id) = &values.project_id {
                    if !project.project_id.is_empty()
                        && !crate::privacy::is_placeholder(&project.project_id)
                        && project.project_id != id.value
                    {
                        return Err(err(
                            id.pos,
                            &format!("{ppath}.project_id"),
                            "the spec already names a different project_id; a runtime value only replaces a placeholder".into(),
                        ));
                    }
                    project.bound_project_id = id.value.trim().to_string();
                }
                if let Some(bucket) = &values.bucket_name {
                    match project.object_storage.as_mut().filter(|s| s.enabled) {
                        Some(storage)
                            if storage.bucket_name.is_empty()
                                || crate::privacy::is_placeholder(&storage.bucket_name) =>
                        {
                            storage.bucket_name = bucket.value.trim().to_string();
                        }
                        Some(storage) if storage.bucket_name != bucket.value => {
                            return Err(err(
                                bucket.pos,
                                &format!("{ppath}.bucket_name"),
                                "the spec already names a different bucket_name".into(),
                            ));
                        }
                        Some(_) => {}
                        None => notes.push(err(
                            bucket.pos,
                            &format!("{ppath}.bucket_name"),
                            "the project has no enabled object_storage; not used".into(),
                        )),
                    }
                }
                let names: Vec<&str> = project.clusters.iter().map(|c| c.name.as_str()).collect();
                for (name, (pos, _)) in &values.clusters {
                    if !names.contains(&name.as_str()) {
                        let hint = nearest_key(name, names.iter().copied())
                            .map(|k| format!(" (did you mean '{k}'?)"))
                            .unwrap_or_default();
                        notes.push(err(
                            *pos,
                            &format!("{ppath}.clusters.{name}"),
                            format!(
                                "project '{key}' has no cluster named '{name}'{hint}; not used"
                            ),
                        ));
                    }
                }
            }
            let empty = ProjectValues::default();
            let values = values.unwrap_or(&empty);
            let outer = values.defaults.or(&fleet.defaults);
            for cluster in &mut project.clusters {
                let own = values.clusters.get(&cluster.name);
                let explicit = own.is_some();
                let effective = own.map_or(outer.clone(), |(_, c)| c.or(&outer));
                let cpath = format!("{ppath}.clusters.{}", cluster.name);
                if let Some(cbg) = &effective.capacity_block_group {
                    let mut bound = false;
                    let mut pools: Vec<&mut String> = Vec::new();
                    if let Some(gpu) = cluster.gpu_nodes.as_mut() {
                        pools.push(&mut gpu.capacity_block_group);
                    }
                    if let Some(s) = cluster.soperator.as_mut() {
                        pools.extend(s.workers.iter_mut().map(|w| &mut w.capacity_block_group));
                    }
                    for pool in pools {
                        if pool.is_empty() {
                            continue;
                        }
                        if crate::privacy::is_placeholder(pool) {
                            *pool = cbg.value.trim().to_string();
                            bound = true;
                        } else if explicit && *pool != cbg.value {
                            return Err(err(
                                cbg.pos,
                                &format!("{cpath}.capacity_block_group"),
                                "the spec already names a different capacity_block_group; a runtime value only replaces a placeholder".into(),
                            ));
                        }
                    }
                    let own_value = own.is_some_and(|(_, c)| c.capacity_block_group.is_some());
                    if own_value && !bound {
                        notes.push(err(
                            cbg.pos,
                            &format!("{cpath}.capacity_block_group"),
                            "the cluster declares no placeholder capacity_block_group to replace (a reservation is declared in the spec, never added at run time); not used".into(),
                        ));
                    }
                }
                if let Some(repo) = &effective.filesystem_csi_chart_repository {
                    let current = &mut cluster.filesystem_csi_chart_repository;
                    if current.is_empty() || crate::privacy::is_placeholder(current) {
                        *current = repo.value.trim().to_string();
                    } else if explicit && *current != repo.value {
                        return Err(err(
                            repo.pos,
                            &format!("{cpath}.filesystem_csi_chart_repository"),
                            "the spec already names a different filesystem_csi_chart_repository"
                                .into(),
                        ));
                    }
                }
            }
        }
        Ok(notes)
    }

    /// The same values, named `label` in messages instead of the file's path (the server
    /// names its settings, not its host's paths, on a pull request).
    pub fn labelled(mut self, label: &str) -> RuntimeValues {
        self.file = label.to_string();
        self
    }
}

/// Walks the parsed file, naming the file and the field in every error.
struct Reader<'a> {
    file: &'a str,
}

impl Reader<'_> {
    fn error(&self, pos: Pos, path: &str, message: impl Into<String>) -> SpecError {
        SpecError::new(self.file, Some(pos), path, message)
    }

    fn map<'n>(&self, node: &'n Node, path: &str) -> Result<&'n [yaml::Entry], SpecError> {
        node.as_map().ok_or_else(|| {
            self.error(
                node.pos,
                path,
                format!("expected a mapping, found {}", kind(&node.value)),
            )
        })
    }

    fn known_keys(
        &self,
        entries: &[yaml::Entry],
        known: &[&str],
        path: &str,
    ) -> Result<(), SpecError> {
        for entry in entries {
            if !known.contains(&entry.key.as_str()) {
                let hint = nearest_key(&entry.key, known.iter().copied())
                    .map(|k| format!(" (did you mean '{k}'?)"))
                    .unwrap_or_default();
                let at = if path.is_empty() {
                    entry.key.clone()
                } else {
                    format!("{path}.{}", entry.key)
                };
                return Err(self.error(
                    entry.key_pos,
                    &at,
                    format!("unknown key; expected one of {}{hint}", known.join(", ")),
                ));
            }
        }
        Ok(())
    }

    /// A private string field: a non-empty string without whitespace inside. The value is
    /// never part of the message.
    fn private(&self, node: &Node, key: &str, path: &str) -> Result<Option<Private>, SpecError> {
        let Some(value) = node.get(key).filter(|n| !n.is_null()) else {
            return Ok(None);
        };
        let at = format!("{path}.{key}");
        let Value::Str(text) = &value.value else {
            return Err(self.error(
                value.pos,
                &at,
                format!("expected a string, found {}", kind(&value.value)),
            ));
        };
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Err(self.error(
                value.pos,
                &at,
                "must not be empty (leave the key out instead)",
            ));
        }
        if trimmed.chars().any(char::is_whitespace) {
            return Err(self.error(value.pos, &at, "must contain no whitespace"));
        }
        if crate::privacy::is_placeholder(trimmed) {
            return Err(self.error(
                value.pos,
                &at,
                "is itself a placeholder; give the real value",
            ));
        }
        Ok(Some(Private {
            value: trimmed.to_string(),
            pos: value.pos,
        }))
    }

    fn cluster_values(&self, node: &Node, path: &str) -> Result<ClusterValues, SpecError> {
        Ok(ClusterValues {
            capacity_block_group: self.private(node, "capacity_block_group", path)?,
            filesystem_csi_chart_repository: self.private(
                node,
                "filesystem_csi_chart_repository",
                path,
            )?,
        })
    }
}

/// A value's kind, never its text (the file is private).
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Int(_) | Value::Float(_) => "a number",
        Value::Str(_) => "a string",
        Value::Seq(_) => "a sequence",
        Value::Map(_) => "a mapping",
    }
}

#[cfg(test)]
mod tests;
