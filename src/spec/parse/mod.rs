//! Builds the spec model from a YAML tree: the `defaults` deep merge, backend envelopes,
//! default names, and strict typing of every field.

use super::error::SpecError;
use super::model::*;
use super::names::slug;
use super::soperator;
use super::yaml::{Entry, Node, Pos, Value};

/// Keys allowed inside an explicit `mk8s:` envelope.
pub const MK8S_ENVELOPE_FIELDS: &[&str] = &[
    "name",
    "k8s_version",
    "cpu_nodes",
    "gpu_nodes",
    "enable_gpu_cluster",
    "infiniband_fabric",
    "enable_filestore",
    "existing_filestore",
    "filestore_disk_size_gibibytes",
    "gpu_disk_size_gib",
    "subnet_id",
    "filestore_mount_path",
    "filestore_mount_tag",
    "filesystem_csi_chart_repository",
    "gpu_driver_mode",
    "managed_driver_preset",
    "allow_unsafe_nvswitch_operator",
    "gpu_health_stabilization_seconds",
    "gpu_health_timeout_minutes",
    "gpu_cuda_smoke",
    "gpu_cuda_smoke_image",
    "gpu_workload_profile",
    "gpu_driver_package_repositories",
    "mig",
    "kuberay",
];

/// Keys allowed in a node pool inside an explicit `mk8s:` envelope.
pub const POOL_FIELDS: &[&str] = &[
    "count",
    "platform",
    "preset",
    "disk_size_gib",
    "capacity_block_group",
    "preemptible",
];

const OBJECT_STORAGE_FIELDS: &[&str] =
    &["enabled", "storage_class", "size_gibibytes", "bucket_name"];
const MIG_FIELDS: &[&str] = &["enabled", "strategy", "config"];
const KUBERAY_FIELDS: &[&str] = &[
    "enabled",
    "worker_replicas",
    "worker_cpus",
    "worker_memory_gib",
];

/// Typed access to YAML values with errors that carry the file, position and field path.
pub(crate) struct Reader<'a> {
    pub file: &'a str,
}

impl<'a> Reader<'a> {
    pub fn error(&self, pos: Pos, path: &str, message: impl Into<String>) -> SpecError {
        SpecError::new(self.file, Some(pos), path, message)
    }

    fn type_error(&self, node: &Node, path: &str, expected: &str) -> SpecError {
        self.error(
            node.pos,
            path,
            format!("expected {expected}, found {}", node.describe()),
        )
    }

    /// A string field. Numbers keep their source text (`k8s_version: 1.34` reads as "1.34");
    /// booleans and collections are errors. `null` reads as `null_value`.
    pub fn string(
        &self,
        node: Option<&Node>,
        path: &str,
        default: &str,
        null_value: &str,
    ) -> Result<String, SpecError> {
        let Some(node) = node else {
            return Ok(default.to_string());
        };
        match &node.value {
            Value::Null => Ok(null_value.to_string()),
            Value::Str(s) | Value::Float(s) => Ok(s.clone()),
            Value::Int(i) => Ok(i.to_string()),
            _ => Err(self.type_error(node, path, "a string")),
        }
    }

    /// An integer field. A string such as `"2"` is an error, unlike the reference's `int()`.
    /// `null_default` is what `null` means, when the reference treats it as unset.
    pub fn integer(
        &self,
        node: Option<&Node>,
        path: &str,
        default: i64,
        null_default: Option<i64>,
    ) -> Result<i64, SpecError> {
        let Some(node) = node else {
            return Ok(default);
        };
        match (&node.value, null_default) {
            (Value::Int(i), _) => Ok(*i),
            (Value::Null, Some(d)) => Ok(d),
            _ => Err(self.type_error(node, path, "an integer")),
        }
    }

    /// A boolean field. The string `"false"` is an error, never truthy.
    pub fn boolean(
        &self,
        node: Option<&Node>,
        path: &str,
        default: bool,
    ) -> Result<bool, SpecError> {
        let Some(node) = node else {
            return Ok(default);
        };
        match &node.value {
            Value::Bool(b) => Ok(*b),
            _ => Err(self.type_error(node, path, "a boolean")),
        }
    }
}

/// Joins a path and a key.
pub(crate) fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn sorted_unknown(entries: &[Entry], allowed: &[&str], also: &[&str]) -> Vec<String> {
    let mut unknown: Vec<String> = entries
        .iter()
        .map(|e| e.key.clone())
        .filter(|k| !allowed.contains(&k.as_str()) && !also.contains(&k.as_str()))
        .collect();
    unknown.sort();
    unknown.dedup();
    unknown
}

/// `_deep_merge`: override wins; mappings merge recursively except `mig` and `kuberay`, which
/// replace whole; lists and `null` replace.
pub fn deep_merge(base: &[Entry], overrides: &[Entry]) -> Vec<Entry> {
    let mut result: Vec<Entry> = base.to_vec();
    for entry in overrides {
        let atomic = entry.key == "mig" || entry.key == "kuberay";
        match result.iter_mut().find(|e| e.key == entry.key) {
            Some(existing) => {
                let merged = match (&existing.value.value, &entry.value.value) {
                    (Value::Map(b), Value::Map(o)) if !atomic => {
                        Some(Node::new(Value::Map(deep_merge(b, o)), entry.value.pos))
                    }
                    _ => None,
                };
                *existing = Entry {
                    key: entry.key.clone(),
                    key_pos: entry.key_pos,
                    value: merged.unwrap_or_else(|| entry.value.clone()),
                };
            }
            None => result.push(entry.clone()),
        }
    }
    result
}

fn without_backend_keys(entries: &[Entry]) -> Vec<Entry> {
    entries
        .iter()
        .filter(|e| !matches!(e.key.as_str(), "backend" | "soperator" | "mk8s"))
        .cloned()
        .collect()
}

fn entries_get<'n>(entries: &'n [Entry], key: &str) -> Option<&'n Node> {
    entries.iter().find(|e| e.key == key).map(|e| &e.value)
}

/// Records where each field of a merged cluster mapping was written (two levels deep).
fn record_positions(entries: &[Entry], prefix: &str, out: &mut Positions, depth: usize) {
    for e in entries {
        let key = join(prefix, &e.key);
        out.fields.insert(key.clone(), e.value.pos);
        if depth > 0
            && let Value::Map(inner) = &e.value.value
        {
            record_positions(inner, &key, out, depth - 1);
        }
    }
}

/// `spec_from_mapping`: builds the model without validating it.
pub fn spec_from_node(root: &Node, file: &str) -> Result<FleetSpec, SpecError> {
    let r = Reader { file };
    let empty: Vec<Entry> = Vec::new();
    let top: &[Entry] = match &root.value {
        Value::Null => &empty,
        Value::Map(entries) => entries,
        _ => return Err(r.error(root.pos, "", "spec must be a mapping")),
    };

    let api_node = entries_get(top, "apiVersion");
    let api = match api_node {
        None => API_VERSION.to_string(),
        Some(n) => scalar_text(n),
    };
    if api != API_VERSION {
        return Err(r.error(
            api_node.map_or(root.pos, |n| n.pos),
            "apiVersion",
            format!(
                "unsupported apiVersion {}; expected {API_VERSION}",
                super::names::py_repr(&api)
            ),
        ));
    }

    let defaults: Vec<Entry> = match entries_get(top, "defaults") {
        None => Vec::new(),
        Some(n) if !n.is_truthy() && !matches!(n.value, Value::Seq(_) | Value::Map(_)) => {
            if n.is_null() {
                Vec::new()
            } else {
                return Err(r.error(n.pos, "defaults", "defaults must be a mapping"));
            }
        }
        Some(n) => match &n.value {
            Value::Map(entries) => entries.clone(),
            _ => return Err(r.error(n.pos, "defaults", "defaults must be a mapping")),
        },
    };

    let projects_node = entries_get(top, "projects");
    let raw_projects: &[Node] = match projects_node.map(|n| &n.value) {
        Some(Value::Seq(items)) if !items.is_empty() => items,
        _ => {
            return Err(r.error(
                projects_node.map_or(root.pos, |n| n.pos),
                "projects",
                "projects must be a non-empty list",
            ));
        }
    };

    let mut projects = Vec::with_capacity(raw_projects.len());
    for (pidx, entry) in raw_projects.iter().enumerate() {
        projects.push(project_from(&r, entry, pidx, &defaults)?);
    }

    let name = r.string(entries_get(top, "name"), "name", "", "None")?;
    let mut positions = Positions {
        at: root.pos,
        path: String::new(),
        fields: Default::default(),
    };
    record_positions(top, "", &mut positions, 0);
    Ok(FleetSpec {
        name: slug(&name),
        tenant_id: r.string(entries_get(top, "tenant_id"), "tenant_id", "", "")?,
        region: r.string(entries_get(top, "region"), "region", "", "")?,
        project_prefix: r.string(entries_get(top, "project_prefix"), "project_prefix", "", "")?,
        ssh_public_key: r.string(entries_get(top, "ssh_public_key"), "ssh_public_key", "", "")?,
        projects,
        profile: r.string(entries_get(top, "profile"), "profile", "", "")?,
        source: file.to_string(),
        positions,
    })
}

/// Python `str(value)` for a scalar, used where the reference stringifies before comparing.
fn scalar_text(node: &Node) -> String {
    match &node.value {
        Value::Null => "None".to_string(),
        Value::Bool(b) => super::names::py_bool(*b).to_string(),
        Value::Int(i) => i.to_string(),
        Value::Float(s) | Value::Str(s) => s.clone(),
        Value::Seq(_) => "[...]".to_string(),
        Value::Map(_) => "{...}".to_string(),
    }
}

fn project_from(
    r: &Reader<'_>,
    entry: &Node,
    pidx: usize,
    defaults: &[Entry],
) -> Result<ProjectSpec, SpecError> {
    let ppath = format!("projects[{pidx}]");
    let Some(fields) = entry.as_map() else {
        return Err(r.error(entry.pos, &ppath, "each project must be a mapping"));
    };
    let empty_cluster = Node::new(Value::Map(Vec::new()), entry.pos);
    // (mapping, where it came from, its own path)
    let cluster_nodes: Vec<(Vec<Entry>, Pos, String)> = match entries_get(fields, "clusters") {
        None => vec![(Vec::new(), entry.pos, format!("{ppath}.clusters[0]"))],
        Some(n) if n.is_null() => vec![(Vec::new(), entry.pos, format!("{ppath}.clusters[0]"))],
        Some(Node {
            value: Value::Seq(items),
            ..
        }) if !items.is_empty() => items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let item = if item.as_map().is_some() {
                    item
                } else {
                    &empty_cluster
                };
                (
                    item.as_map().unwrap_or_default().to_vec(),
                    if item.as_map().is_some() {
                        item.pos
                    } else {
                        entry.pos
                    },
                    format!("{ppath}.clusters[{i}]"),
                )
            })
            .collect(),
        Some(n) => {
            return Err(r.error(
                n.pos,
                &join(&ppath, "clusters"),
                "project 'clusters' must be a non-empty list when set",
            ));
        }
    };

    let multi = cluster_nodes.len() > 1;
    let mut clusters = Vec::with_capacity(cluster_nodes.len());
    for (idx, (raw, pos, cpath)) in cluster_nodes.iter().enumerate() {
        clusters.push(cluster_target_from(
            r, raw, *pos, cpath, idx, multi, defaults,
        )?);
    }

    let name = r.string(entries_get(fields, "name"), &join(&ppath, "name"), "", "")?;
    let project_id = r.string(
        entries_get(fields, "project_id"),
        &join(&ppath, "project_id"),
        "",
        "",
    )?;
    let region = r.string(
        entries_get(fields, "region"),
        &join(&ppath, "region"),
        "",
        "",
    )?;
    let object_storage = object_storage_from(
        r,
        entries_get(fields, "object_storage"),
        &join(&ppath, "object_storage"),
    )?;
    let mut positions = Positions {
        at: entry.pos,
        path: ppath,
        fields: Default::default(),
    };
    record_positions(fields, "", &mut positions, 1);
    Ok(ProjectSpec {
        name,
        project_id,
        region,
        clusters,
        object_storage,
        positions,
    })
}

fn object_storage_from(
    r: &Reader<'_>,
    node: Option<&Node>,
    path: &str,
) -> Result<Option<ObjectStorageSpec>, SpecError> {
    let Some(node) = node else { return Ok(None) };
    if node.is_null() {
        return Ok(None);
    }
    let Some(entries) = node.as_map() else {
        return Err(r.error(node.pos, path, "project.object_storage must be a mapping"));
    };
    let unknown = sorted_unknown(entries, OBJECT_STORAGE_FIELDS, &[]);
    if !unknown.is_empty() {
        return Err(r.error(
            node.pos,
            path,
            format!(
                "project.object_storage has unsupported field(s): {}",
                unknown.join(", ")
            ),
        ));
    }
    Ok(Some(ObjectStorageSpec {
        enabled: r.boolean(
            entries_get(entries, "enabled"),
            &join(path, "enabled"),
            true,
        )?,
        storage_class: r.string(
            entries_get(entries, "storage_class"),
            &join(path, "storage_class"),
            "standard",
            "standard",
        )?,
        size_gibibytes: r.integer(
            entries_get(entries, "size_gibibytes"),
            &join(path, "size_gibibytes"),
            0,
            Some(0),
        )?,
        bucket_name: r
            .string(
                entries_get(entries, "bucket_name"),
                &join(path, "bucket_name"),
                "",
                "",
            )?
            .trim()
            .to_string(),
    }))
}

/// Chooses the backend path for one cluster entry and builds its target.
fn cluster_target_from(
    r: &Reader<'_>,
    raw: &[Entry],
    pos: Pos,
    cpath: &str,
    idx: usize,
    multi: bool,
    defaults: &[Entry],
) -> Result<ClusterSpec, SpecError> {
    let backend_node = entries_get(raw, "backend").or_else(|| entries_get(defaults, "backend"));
    let requested = match backend_node {
        None => "mk8s".to_string(),
        Some(n) => {
            let text = r.string(Some(n), &join(cpath, "backend"), "mk8s", "mk8s")?;
            let text = text.trim().to_lowercase();
            if text.is_empty() {
                "mk8s".to_string()
            } else {
                text
            }
        }
    };
    let default_name = if multi {
        format!("cluster-{idx}")
    } else {
        "cluster".to_string()
    };

    match requested.as_str() {
        "soperator" => {
            let unexpected = sorted_unknown(raw, &["name", "backend", "soperator"], &[]);
            if !unexpected.is_empty() {
                return Err(r.error(
                    pos,
                    cpath,
                    format!(
                        "soperator fleet cluster has unsupported mk8s/flat field(s): {}; place backend-specific settings under 'soperator'",
                        unexpected.join(", ")
                    ),
                ));
            }
            let default_soperator = match entries_get(defaults, "soperator") {
                None => Vec::new(),
                Some(n) if !n.is_truthy() => Vec::new(),
                Some(n) => match n.as_map() {
                    Some(e) => e.to_vec(),
                    None => {
                        return Err(r.error(
                            n.pos,
                            "defaults.soperator",
                            "defaults.soperator must be a mapping",
                        ));
                    }
                },
            };
            let raw_soperator = match entries_get(raw, "soperator") {
                None => Vec::new(),
                Some(n) if !n.is_truthy() => Vec::new(),
                Some(n) => match n.as_map() {
                    Some(e) => e.to_vec(),
                    None => {
                        return Err(r.error(
                            n.pos,
                            &join(cpath, "soperator"),
                            "cluster.soperator must be a mapping",
                        ));
                    }
                },
            };
            let name_node = entries_get(raw, "name")
                .filter(|n| n.is_truthy())
                .or_else(|| entries_get(defaults, "name").filter(|n| n.is_truthy()));
            let name_text = match name_node {
                Some(n) => r.string(Some(n), &join(cpath, "name"), "", "")?,
                None => default_name,
            };
            let name = {
                let s = slug(&name_text);
                if s.is_empty() {
                    "cluster".to_string()
                } else {
                    s
                }
            };
            let merged = deep_merge(&default_soperator, &raw_soperator);
            let spec = soperator::from_entries(r, &merged, &name, pos, &join(cpath, "soperator"))?;
            let mut positions = Positions {
                at: pos,
                path: cpath.to_string(),
                fields: Default::default(),
            };
            record_positions(raw, "", &mut positions, 1);
            Ok(ClusterSpec {
                name,
                backend: Backend::Soperator,
                soperator: Some(spec),
                backend_explicit: true,
                positions,
                ..ClusterSpec::default()
            })
        }
        "mk8s" => {
            let envelope = entries_get(raw, "mk8s");
            let (mut merged, name_override) = match envelope {
                Some(env) if !env.is_null() => {
                    let epath = join(cpath, "mk8s");
                    let Some(env_entries) = env.as_map() else {
                        return Err(r.error(env.pos, &epath, "cluster.mk8s must be a mapping"));
                    };
                    let unknown = sorted_unknown(env_entries, MK8S_ENVELOPE_FIELDS, &[]);
                    if !unknown.is_empty() {
                        return Err(r.error(
                            env.pos,
                            &epath,
                            format!(
                                "cluster.mk8s has unsupported field(s): {}",
                                unknown.join(", ")
                            ),
                        ));
                    }
                    for pool_name in ["cpu_nodes", "gpu_nodes"] {
                        let Some(pool) = entries_get(env_entries, pool_name) else {
                            continue;
                        };
                        if pool.is_null() {
                            continue;
                        }
                        let ppath = join(&epath, pool_name);
                        let Some(pool_entries) = pool.as_map() else {
                            return Err(r.error(
                                pool.pos,
                                &ppath,
                                format!("cluster.mk8s.{pool_name} must be a mapping"),
                            ));
                        };
                        let unknown = sorted_unknown(pool_entries, POOL_FIELDS, &[]);
                        if !unknown.is_empty() {
                            return Err(r.error(
                                pool.pos,
                                &ppath,
                                format!(
                                    "cluster.mk8s.{pool_name} has unsupported field(s): {}",
                                    unknown.join(", ")
                                ),
                            ));
                        }
                    }
                    let unexpected = sorted_unknown(raw, &["name", "backend", "mk8s"], &[]);
                    if !unexpected.is_empty() {
                        return Err(r.error(
                            pos,
                            cpath,
                            format!(
                                "mk8s fleet cluster mixes the 'mk8s' envelope with flat field(s): {}",
                                unexpected.join(", ")
                            ),
                        ));
                    }
                    let base = match entries_get(defaults, "mk8s").filter(|n| n.is_truthy()) {
                        Some(n) => match n.as_map() {
                            Some(e) => e.to_vec(),
                            None => {
                                return Err(r.error(
                                    n.pos,
                                    "defaults.mk8s",
                                    "defaults.mk8s must be a mapping",
                                ));
                            }
                        },
                        None => without_backend_keys(defaults),
                    };
                    let merged = deep_merge(&base, env_entries);
                    let name = entries_get(raw, "name").filter(|n| n.is_truthy()).cloned();
                    (merged, name)
                }
                _ => (deep_merge(&without_backend_keys(defaults), raw), None),
            };
            if let Some(name) = name_override {
                set_entry(&mut merged, "name", name);
            }
            let has_name = entries_get(&merged, "name").is_some_and(Node::is_truthy);
            if !has_name {
                set_entry(
                    &mut merged,
                    "name",
                    Node::new(Value::Str(default_name), pos),
                );
            }
            let explicit = raw.iter().any(|e| e.key == "backend" || e.key == "mk8s");
            mk8s_cluster_from(r, &merged, pos, cpath, explicit)
        }
        other => Err(r.error(
            backend_node.map_or(pos, |n| n.pos),
            &join(cpath, "backend"),
            format!(
                "unsupported cluster backend {}; expected 'mk8s' or 'soperator'",
                super::names::py_repr(other)
            ),
        )),
    }
}

fn set_entry(entries: &mut Vec<Entry>, key: &str, value: Node) {
    match entries.iter_mut().find(|e| e.key == key) {
        Some(e) => e.value = value,
        None => entries.push(Entry {
            key: key.to_string(),
            key_pos: value.pos,
            value,
        }),
    }
}

fn pool_from(
    r: &Reader<'_>,
    node: Option<&Node>,
    path: &str,
    default_platform: &str,
) -> Result<Option<NodePoolSpec>, SpecError> {
    let Some(node) = node else { return Ok(None) };
    if !node.is_truthy() {
        return Ok(None);
    }
    let Some(e) = node.as_map() else {
        return Err(r.type_error(node, path, "a mapping"));
    };
    Ok(Some(NodePoolSpec {
        count: r.integer(entries_get(e, "count"), &join(path, "count"), 0, None)?,
        platform: r.string(
            entries_get(e, "platform"),
            &join(path, "platform"),
            default_platform,
            "",
        )?,
        preset: r.string(entries_get(e, "preset"), &join(path, "preset"), "", "")?,
        disk_size_gib: r.integer(
            entries_get(e, "disk_size_gib"),
            &join(path, "disk_size_gib"),
            0,
            Some(0),
        )?,
        capacity_block_group: r
            .string(
                entries_get(e, "capacity_block_group"),
                &join(path, "capacity_block_group"),
                "",
                "",
            )?
            .trim()
            .to_string(),
        preemptible: r.boolean(
            entries_get(e, "preemptible"),
            &join(path, "preemptible"),
            false,
        )?,
    }))
}

fn mig_from(
    r: &Reader<'_>,
    node: Option<&Node>,
    path: &str,
    cluster: &str,
) -> Result<Option<MigSpec>, SpecError> {
    let Some(node) = node else { return Ok(None) };
    if node.is_null() {
        return Ok(None);
    }
    let _ = cluster;
    let Some(e) = node.as_map() else {
        return Err(r.error(node.pos, path, "mig must be a mapping"));
    };
    let unknown = sorted_unknown(e, MIG_FIELDS, &[]);
    if !unknown.is_empty() {
        return Err(r.error(
            node.pos,
            path,
            format!("mig contains unsupported field(s): {}", unknown.join(", ")),
        ));
    }
    let enabled = match entries_get(e, "enabled") {
        None => true,
        Some(Node {
            value: Value::Bool(b),
            ..
        }) => *b,
        Some(n) => {
            return Err(r.error(
                n.pos,
                &join(path, "enabled"),
                "mig.enabled must be a boolean",
            ));
        }
    };
    let text = |key: &str, default: &str| -> Result<String, SpecError> {
        match entries_get(e, key) {
            None => Ok(default.to_string()),
            Some(Node {
                value: Value::Str(s),
                ..
            }) => Ok(s.trim().to_lowercase()),
            Some(n) => Err(r.error(
                n.pos,
                &join(path, key),
                "mig.strategy and mig.config must be strings",
            )),
        }
    };
    let (ds, dc) = if enabled {
        (mig_pins::STRATEGY, mig_pins::CONFIG)
    } else {
        ("none", "")
    };
    Ok(Some(MigSpec {
        enabled,
        strategy: text("strategy", ds)?,
        config: text("config", dc)?,
    }))
}

fn kuberay_from(
    r: &Reader<'_>,
    node: Option<&Node>,
    path: &str,
) -> Result<Option<KubeRaySpec>, SpecError> {
    let Some(node) = node else { return Ok(None) };
    if node.is_null() {
        return Ok(None);
    }
    let Some(e) = node.as_map() else {
        return Err(r.error(node.pos, path, "kuberay must be a mapping"));
    };
    if !sorted_unknown(e, KUBERAY_FIELDS, &[]).is_empty() {
        return Err(r.error(
            node.pos,
            path,
            "kuberay has unsupported fields; only enabled, worker_replicas, worker_cpus and worker_memory_gib are supported (CPU RayCluster only)",
        ));
    }
    let enabled_true = matches!(
        entries_get(e, "enabled").map(|n| &n.value),
        Some(Value::Bool(true))
    );
    if !enabled_true && e.iter().any(|x| x.key != "enabled") {
        return Err(r.error(
            node.pos,
            path,
            "kuberay worker settings require enabled: true",
        ));
    }
    let enabled = match entries_get(e, "enabled") {
        None => false,
        Some(Node {
            value: Value::Bool(b),
            ..
        }) => *b,
        Some(n) => {
            return Err(r.error(
                n.pos,
                &join(path, "enabled"),
                "kuberay.enabled must be a boolean",
            ));
        }
    };
    let positive = |key: &str, default: i64| -> Result<i64, SpecError> {
        match entries_get(e, key) {
            None => Ok(default),
            Some(Node {
                value: Value::Int(i),
                ..
            }) if *i > 0 => Ok(*i),
            Some(n) => Err(r.error(
                n.pos,
                &join(path, key),
                format!("kuberay.{key} must be a positive integer"),
            )),
        }
    };
    Ok(Some(KubeRaySpec {
        enabled,
        worker_replicas: positive("worker_replicas", 1)?,
        worker_cpus: positive("worker_cpus", 2)?,
        worker_memory_gib: positive("worker_memory_gib", 4)?,
    }))
}

/// `_cluster_from` plus the RTX workload profile that the reference applies at construction.
fn mk8s_cluster_from(
    r: &Reader<'_>,
    merged: &[Entry],
    pos: Pos,
    cpath: &str,
    backend_explicit: bool,
) -> Result<ClusterSpec, SpecError> {
    let get = |k: &str| entries_get(merged, k);
    let f = |k: &str| join(cpath, k);
    let name_text = r.string(get("name"), &f("name"), "cluster", "None")?;
    let name = {
        let s = slug(&name_text);
        if s.is_empty() {
            "cluster".to_string()
        } else {
            s
        }
    };
    let mig = mig_from(r, get("mig"), &f("mig"), &name)?;
    let kuberay = kuberay_from(r, get("kuberay"), &f("kuberay"))?;

    let enable_gpu_cluster = match get("enable_gpu_cluster") {
        None => None,
        Some(n) if n.is_null() => None,
        Some(n) => Some(r.boolean(Some(n), &f("enable_gpu_cluster"), false)?),
    };
    let (repos, repos_invalid) = match get("gpu_driver_package_repositories") {
        None => (Vec::new(), false),
        Some(n) => match &n.value {
            Value::Map(entries) => (
                entries
                    .iter()
                    .map(|e| match &e.value.value {
                        Value::Str(s) => (e.key.clone(), s.clone()),
                        _ => (e.key.clone(), String::new()),
                    })
                    .collect(),
                false,
            ),
            _ => (Vec::new(), true),
        },
    };

    let mut positions = Positions {
        at: pos,
        path: cpath.to_string(),
        fields: Default::default(),
    };
    record_positions(merged, "", &mut positions, 1);

    let mut cluster = ClusterSpec {
        name,
        k8s_version: r.string(get("k8s_version"), &f("k8s_version"), "", "")?,
        cpu_nodes: pool_from(r, get("cpu_nodes"), &f("cpu_nodes"), DEFAULT_CPU_PLATFORM)?,
        gpu_nodes: pool_from(r, get("gpu_nodes"), &f("gpu_nodes"), DEFAULT_GPU_PLATFORM)?,
        enable_gpu_cluster,
        infiniband_fabric: r.string(get("infiniband_fabric"), &f("infiniband_fabric"), "", "")?,
        enable_filestore: r.boolean(get("enable_filestore"), &f("enable_filestore"), false)?,
        existing_filestore: r.string(
            get("existing_filestore"),
            &f("existing_filestore"),
            "",
            "",
        )?,
        filestore_disk_size_gibibytes: r.integer(
            get("filestore_disk_size_gibibytes"),
            &f("filestore_disk_size_gibibytes"),
            1024,
            None,
        )?,
        gpu_disk_size_gib: r.integer(
            get("gpu_disk_size_gib"),
            &f("gpu_disk_size_gib"),
            1023,
            None,
        )?,
        subnet_id: r.string(get("subnet_id"), &f("subnet_id"), "", "")?,
        filestore_mount_path: r.string(
            get("filestore_mount_path"),
            &f("filestore_mount_path"),
            "/mnt/data",
            "",
        )?,
        filestore_mount_tag: r.string(
            get("filestore_mount_tag"),
            &f("filestore_mount_tag"),
            "data",
            "",
        )?,
        filesystem_csi_chart_repository: r
            .string(
                get("filesystem_csi_chart_repository"),
                &f("filesystem_csi_chart_repository"),
                "",
                "",
            )?
            .trim()
            .to_string(),
        gpu_driver_mode: non_empty_or(
            r.string(
                get("gpu_driver_mode"),
                &f("gpu_driver_mode"),
                "auto",
                "auto",
            )?,
            "auto",
        ),
        managed_driver_preset: non_empty_or(
            r.string(
                get("managed_driver_preset"),
                &f("managed_driver_preset"),
                DEFAULT_MANAGED_DRIVER_PRESET,
                DEFAULT_MANAGED_DRIVER_PRESET,
            )?,
            DEFAULT_MANAGED_DRIVER_PRESET,
        ),
        allow_unsafe_nvswitch_operator: r.boolean(
            get("allow_unsafe_nvswitch_operator"),
            &f("allow_unsafe_nvswitch_operator"),
            false,
        )?,
        gpu_health_stabilization_seconds: r.integer(
            get("gpu_health_stabilization_seconds"),
            &f("gpu_health_stabilization_seconds"),
            DEFAULT_STABILIZATION_SECONDS,
            None,
        )?,
        gpu_health_timeout_minutes: r.integer(
            get("gpu_health_timeout_minutes"),
            &f("gpu_health_timeout_minutes"),
            DEFAULT_GPU_HEALTH_TIMEOUT_MINUTES,
            None,
        )?,
        gpu_cuda_smoke: r.boolean(get("gpu_cuda_smoke"), &f("gpu_cuda_smoke"), true)?,
        gpu_cuda_smoke_image: non_empty_or(
            r.string(
                get("gpu_cuda_smoke_image"),
                &f("gpu_cuda_smoke_image"),
                DEFAULT_CUDA_SMOKE_IMAGE,
                DEFAULT_CUDA_SMOKE_IMAGE,
            )?,
            DEFAULT_CUDA_SMOKE_IMAGE,
        ),
        gpu_workload_profile: r.string(
            get("gpu_workload_profile"),
            &f("gpu_workload_profile"),
            "",
            "",
        )?,
        gpu_driver_package_repositories: repos,
        gpu_driver_package_repositories_invalid: repos_invalid,
        carries_soperator: get("soperator")
            .is_some_and(|n| matches!(n.value, Value::Map(_)) && n.is_truthy()),
        mig,
        kuberay,
        backend: Backend::Mk8s,
        backend_explicit,
        positions,
        ..ClusterSpec::default()
    };
    super::profile::apply_workload_profile(&mut cluster).map_err(|msg| {
        r.error(
            cluster.positions.of("gpu_workload_profile"),
            &f("gpu_workload_profile"),
            msg,
        )
    })?;
    Ok(cluster)
}

fn non_empty_or(value: String, default: &str) -> String {
    if value.is_empty() {
        default.to_string()
    } else {
        value
    }
}
