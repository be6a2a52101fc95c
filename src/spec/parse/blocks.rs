//! The optional feature blocks: a project's `object_storage`, a cluster's `mig` and
//! `kuberay`. Each is absent or `null` for off, and refuses fields it does not know.

use super::reader::{Reader, entries_get, join};
use crate::spec::error::SpecError;
use crate::spec::model::{KubeRaySpec, MigSpec, ObjectStorageSpec, mig_pins};
use crate::spec::yaml::{Entry, Node, Pos, Value};

const OBJECT_STORAGE_FIELDS: &[&str] =
    &["enabled", "storage_class", "size_gibibytes", "bucket_name"];
const MIG_FIELDS: &[&str] = &["enabled", "strategy", "config"];
const KUBERAY_FIELDS: &[&str] = &[
    "enabled",
    "worker_replicas",
    "worker_cpus",
    "worker_memory_gib",
];

/// Where the block is and its mapping; `None` when it is absent or `null`.
fn block<'n>(
    r: &Reader<'_>,
    node: Option<&'n Node>,
    path: &str,
    name: &str,
) -> Result<Option<(Pos, &'n [Entry])>, SpecError> {
    match node {
        None => Ok(None),
        Some(n) if n.is_null() => Ok(None),
        Some(n) => match n.as_map() {
            Some(entries) => Ok(Some((n.pos, entries))),
            None => Err(r.error(n.pos, path, format!("{name} must be a mapping"))),
        },
    }
}

pub(super) fn object_storage_from(
    r: &Reader<'_>,
    node: Option<&Node>,
    path: &str,
) -> Result<Option<ObjectStorageSpec>, SpecError> {
    let Some((at, entries)) = block(r, node, path, "project.object_storage")? else {
        return Ok(None);
    };
    r.refuse_unknown(entries, OBJECT_STORAGE_FIELDS, at, path, |unknown| {
        format!("project.object_storage has unsupported field(s): {unknown}")
    })?;
    let f = r.fields(entries, path);
    Ok(Some(ObjectStorageSpec {
        enabled: f.boolean("enabled", true)?,
        storage_class: f.string("storage_class", "standard", "standard")?,
        size_gibibytes: f.integer("size_gibibytes", 0, Some(0))?,
        bucket_name: f.trimmed("bucket_name")?,
    }))
}

pub(super) fn mig_from(
    r: &Reader<'_>,
    node: Option<&Node>,
    path: &str,
) -> Result<Option<MigSpec>, SpecError> {
    let Some((at, e)) = block(r, node, path, "mig")? else {
        return Ok(None);
    };
    r.refuse_unknown(e, MIG_FIELDS, at, path, |unknown| {
        format!("mig contains unsupported field(s): {unknown}")
    })?;
    let enabled = r.strict_bool(
        entries_get(e, "enabled"),
        &join(path, "enabled"),
        true,
        "mig.enabled must be a boolean",
    )?;
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

pub(super) fn kuberay_from(
    r: &Reader<'_>,
    node: Option<&Node>,
    path: &str,
) -> Result<Option<KubeRaySpec>, SpecError> {
    let Some((at, e)) = block(r, node, path, "kuberay")? else {
        return Ok(None);
    };
    r.refuse_unknown(e, KUBERAY_FIELDS, at, path, |_| {
        "kuberay has unsupported fields; only enabled, worker_replicas, worker_cpus and worker_memory_gib are supported (CPU RayCluster only)".to_string()
    })?;
    let enabled_true = matches!(
        entries_get(e, "enabled").map(|n| &n.value),
        Some(Value::Bool(true))
    );
    if !enabled_true && e.iter().any(|x| x.key != "enabled") {
        return Err(r.error(at, path, "kuberay worker settings require enabled: true"));
    }
    let enabled = r.strict_bool(
        entries_get(e, "enabled"),
        &join(path, "enabled"),
        false,
        "kuberay.enabled must be a boolean",
    )?;
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
