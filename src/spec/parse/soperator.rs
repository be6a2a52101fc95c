//! Reading a soperator cluster's `soperator:` mapping: key checks, the identity guard and
//! typed fields. What the values must satisfy is [`SoperatorSpec::validate`].

use crate::spec::error::SpecError;
use crate::spec::names;
use crate::spec::soperator::{
    ALLOWED, DEFAULT_K8S_VERSION, DEFAULT_NODE_GROUP_VERSION, DEFAULT_SLURM_OPERATOR_VERSION,
    SoperatorSpec, WORKER_ALLOWED, WorkerPoolSpec,
};
use crate::spec::yaml::{Entry, Node, Pos, Value};

use super::{Reader, join};

fn get<'n>(entries: &'n [Entry], key: &str) -> Option<&'n Node> {
    entries.iter().find(|e| e.key == key).map(|e| &e.value)
}

fn unknown(entries: &[Entry], allowed: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = entries
        .iter()
        .filter(|e| !allowed.contains(&e.key.as_str()))
        .map(|e| e.key.clone())
        .collect();
    out.sort();
    out
}

/// `_soperator_cluster_from` + the soperator `spec_from_mapping`: key checks, identity guard,
/// typed fields. Semantic validation is [`SoperatorSpec::validate`].
pub(crate) fn from_entries(
    r: &Reader<'_>,
    mapping: &[Entry],
    name: &str,
    pos: Pos,
    path: &str,
) -> Result<SoperatorSpec, SpecError> {
    let cluster = names::py_repr(name);
    let fail = |at: Pos, p: &str, msg: String| r.error(at, p, format!("cluster {cluster}: {msg}"));

    let mut identity: Vec<&str> = ["tenant_id", "project_id", "region", "subnet_id"]
        .into_iter()
        .filter(|k| {
            get(mapping, k).is_some_and(|n| match &n.value {
                Value::Str(s) => !s.trim().is_empty(),
                Value::Null => false,
                _ => n.is_truthy(),
            })
        })
        .collect();
    identity.sort();
    if !identity.is_empty() {
        return Err(fail(
            pos,
            path,
            format!(
                "fleet soperator configuration must not set target identity field(s) {}; use the fleet/project envelope",
                identity.join(", ")
            ),
        ));
    }
    let extra = unknown(mapping, ALLOWED);
    if !extra.is_empty() {
        return Err(fail(
            pos,
            path,
            format!("unsupported soperator field(s): {}", extra.join(", ")),
        ));
    }

    let workers_node = get(mapping, "workers");
    let worker_nodes: Vec<&Node> = match workers_node.map(|n| &n.value) {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Seq(items)) => items.iter().collect(),
        Some(_) => {
            let n = workers_node.expect("checked");
            return Err(fail(
                n.pos,
                &join(path, "workers"),
                "workers must be a list".into(),
            ));
        }
    };
    for (i, w) in worker_nodes.iter().enumerate() {
        if let Some(entries) = w.as_map() {
            let extra = unknown(entries, WORKER_ALLOWED);
            if !extra.is_empty() {
                return Err(fail(
                    w.pos,
                    &format!("{path}.workers[{i}]"),
                    format!(
                        "soperator.workers[{i}] has unsupported field(s): {}",
                        extra.join(", ")
                    ),
                ));
            }
        }
    }

    let control_node = get(mapping, "control_plane");
    let control: Vec<Entry> = match control_node {
        None => Vec::new(),
        Some(n) if !n.is_truthy() => Vec::new(),
        Some(n) => match n.as_map() {
            Some(e) => e.to_vec(),
            None => {
                return Err(fail(
                    n.pos,
                    &join(path, "control_plane"),
                    "soperator.control_plane must be a mapping".into(),
                ));
            }
        },
    };
    let extra = unknown(&control, &["system", "controller", "accounting", "login"]);
    if !extra.is_empty() {
        return Err(fail(
            control_node.map_or(pos, |n| n.pos),
            &join(path, "control_plane"),
            format!(
                "soperator.control_plane has unsupported field(s): {}",
                extra.join(", ")
            ),
        ));
    }
    for e in &control {
        let rpath = format!("{path}.control_plane.{}", e.key);
        let Some(role_entries) = e.value.as_map() else {
            return Err(fail(
                e.value.pos,
                &rpath,
                format!("soperator.control_plane.{} must be a mapping", e.key),
            ));
        };
        let allowed: &[&str] = if e.key == "system" {
            &["preset", "min_size", "max_size"]
        } else {
            &["preset"]
        };
        let extra = unknown(role_entries, allowed);
        if !extra.is_empty() {
            return Err(fail(
                e.value.pos,
                &rpath,
                format!(
                    "soperator.control_plane.{} has unsupported field(s): {}",
                    e.key,
                    extra.join(", ")
                ),
            ));
        }
    }
    let embedded = r.string(get(mapping, "name"), &join(path, "name"), "", "")?;
    if !embedded.is_empty() && embedded != name {
        return Err(fail(
            get(mapping, "name").map_or(pos, |n| n.pos),
            &join(path, "name"),
            format!(
                "soperator.name {} must match the fleet target name",
                names::py_repr(&embedded)
            ),
        ));
    }

    let mut workers = Vec::with_capacity(worker_nodes.len());
    for (i, w) in worker_nodes.iter().enumerate() {
        let wpath = format!("{path}.workers[{i}]");
        let Some(e) = w.as_map() else {
            return Err(fail(
                w.pos,
                &wpath,
                "each worker pool must be a mapping".into(),
            ));
        };
        let f = |k: &str| join(&wpath, k);
        workers.push(WorkerPoolSpec {
            name: r.string(get(e, "name"), &f("name"), "", "")?,
            platform: r.string(get(e, "platform"), &f("platform"), "cpu-d3", "")?,
            preset: r.string(get(e, "preset"), &f("preset"), "8vcpu-32gb", "")?,
            size: r.integer(get(e, "size"), &f("size"), 1, None)?,
            boot_disk_gib: r.integer(get(e, "boot_disk_gib"), &f("boot_disk_gib"), 512, None)?,
            fabric: r.string(get(e, "fabric"), &f("fabric"), "", "")?,
            preemptible: r.boolean(get(e, "preemptible"), &f("preemptible"), false)?,
            docker_cache: r.boolean(get(e, "docker_cache"), &f("docker_cache"), false)?,
            docker_cache_gib: r.integer(
                get(e, "docker_cache_gib"),
                &f("docker_cache_gib"),
                372,
                None,
            )?,
            docker_cache_disk_type: r.string(
                get(e, "docker_cache_disk_type"),
                &f("docker_cache_disk_type"),
                "NETWORK_SSD_IO_M3",
                "",
            )?,
            capacity_block_group: r
                .string(
                    get(e, "capacity_block_group"),
                    &f("capacity_block_group"),
                    "",
                    "",
                )?
                .trim()
                .to_string(),
            capacity_block_group_name: r
                .string(
                    get(e, "capacity_block_group_name"),
                    &f("capacity_block_group_name"),
                    "",
                    "",
                )?
                .trim()
                .to_string(),
        });
    }

    let role = |key: &str| {
        control
            .iter()
            .find(|e| e.key == key)
            .and_then(|e| e.value.as_map())
            .unwrap_or(&[])
    };
    let cpath = |role: &str, k: &str| format!("{path}.control_plane.{role}.{k}");
    let opt_preset = |role_name: &str| -> Result<Option<String>, SpecError> {
        match get(role(role_name), "preset") {
            None => Ok(None),
            Some(n) if n.is_null() => Ok(None),
            Some(n) => r
                .string(Some(n), &cpath(role_name, "preset"), "", "")
                .map(Some),
        }
    };
    let ssh_keys = match get(mapping, "ssh_public_keys") {
        None => Vec::new(),
        Some(n) if n.is_null() => Vec::new(),
        Some(n) => match &n.value {
            Value::Seq(items) => items
                .iter()
                .enumerate()
                .map(|(i, k)| r.string(Some(k), &format!("{path}.ssh_public_keys[{i}]"), "", ""))
                .collect::<Result<_, _>>()?,
            _ => {
                return Err(fail(
                    n.pos,
                    &join(path, "ssh_public_keys"),
                    "ssh_public_keys must be a list".into(),
                ));
            }
        },
    };
    let slurm_rest_enabled = match get(mapping, "slurm_rest_enabled") {
        None => None,
        Some(n) if n.is_null() => None,
        Some(Node {
            value: Value::Bool(b),
            ..
        }) => Some(*b),
        Some(n) => {
            return Err(fail(
                n.pos,
                &join(path, "slurm_rest_enabled"),
                "slurm_rest_enabled must be a boolean when set".into(),
            ));
        }
    };
    let system_max = match get(role("system"), "max_size") {
        None => None,
        Some(n) if n.is_null() => None,
        Some(n) => Some(r.integer(Some(n), &cpath("system", "max_size"), 0, None)?),
    };
    Ok(SoperatorSpec {
        name: name.to_string(),
        system_min_size: r.integer(
            get(role("system"), "min_size"),
            &cpath("system", "min_size"),
            3,
            None,
        )?,
        system_max_size: system_max,
        system_preset: opt_preset("system")?,
        controller_preset: opt_preset("controller")?,
        accounting_preset: opt_preset("accounting")?,
        login_preset: r.string(
            get(role("login"), "preset"),
            &cpath("login", "preset"),
            "16vcpu-64gb",
            "",
        )?,
        workers,
        accounting: r.boolean(get(mapping, "accounting"), &join(path, "accounting"), false)?,
        telemetry: r.boolean(get(mapping, "telemetry"), &join(path, "telemetry"), false)?,
        use_default_apparmor_profile: r.boolean(
            get(mapping, "use_default_apparmor_profile"),
            &join(path, "use_default_apparmor_profile"),
            false,
        )?,
        jail_size_gib: r.integer(
            get(mapping, "jail_size_gib"),
            &join(path, "jail_size_gib"),
            512,
            None,
        )?,
        slurm_operator_version: r.string(
            get(mapping, "slurm_operator_version"),
            &join(path, "slurm_operator_version"),
            DEFAULT_SLURM_OPERATOR_VERSION,
            DEFAULT_SLURM_OPERATOR_VERSION,
        )?,
        k8s_version: r.string(
            get(mapping, "k8s_version"),
            &join(path, "k8s_version"),
            DEFAULT_K8S_VERSION,
            "",
        )?,
        node_group_version: r.string(
            get(mapping, "node_group_version"),
            &join(path, "node_group_version"),
            DEFAULT_NODE_GROUP_VERSION,
            "",
        )?,
        root_login_ssh_public_key: r.string(
            get(mapping, "root_login_ssh_public_key"),
            &join(path, "root_login_ssh_public_key"),
            "",
            "",
        )?,
        ssh_public_keys: ssh_keys,
        slurm_rest_enabled,
    })
}
