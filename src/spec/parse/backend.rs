//! Which backend a cluster entry asks for (its own `backend:`, else the defaults'), and the
//! mapping it is read from: Soperator merges its `soperator:` block over the defaults' one;
//! mk8s merges either its `mk8s:` envelope or its flat fields over the defaults.

use super::merge::{Defaults, deep_merge};
use super::mk8s::{MK8S_ENVELOPE_FIELDS, check_envelope, mk8s_cluster_from, warn_unknown_pools};
use super::reader::{Reader, entries_get, join, set_entry, slug_or_cluster};
use super::soperator;
use crate::spec::error::SpecError;
use crate::spec::model::{Backend, ClusterSpec};
use crate::spec::names::py_repr;
use crate::spec::warning::BACKEND_FIELDS;
use crate::spec::yaml::{Entry, Node, Pos, Value};

/// One cluster entry as written, with where it is.
#[derive(Clone, Copy)]
struct ClusterEntry<'e> {
    raw: &'e [Entry],
    pos: Pos,
    path: &'e str,
}

/// Chooses the backend path for one cluster entry and builds its target.
pub(super) fn cluster_target_from(
    r: &Reader<'_>,
    raw: &[Entry],
    pos: Pos,
    cpath: &str,
    idx: usize,
    multi: bool,
    defaults: &Defaults<'_>,
) -> Result<ClusterSpec, SpecError> {
    let entry = ClusterEntry {
        raw,
        pos,
        path: cpath,
    };
    let backend_node = entries_get(raw, "backend").or(defaults.backend);
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
        "soperator" => soperator_target(r, entry, defaults, default_name),
        "mk8s" => mk8s_target(r, entry, defaults, default_name),
        other => Err(r.error(
            backend_node.map_or(pos, |n| n.pos),
            &join(cpath, "backend"),
            format!(
                "unsupported cluster backend {}; expected 'mk8s' or 'soperator'",
                py_repr(other)
            ),
        )),
    }
}

fn soperator_target(
    r: &Reader<'_>,
    c: ClusterEntry<'_>,
    defaults: &Defaults<'_>,
    default_name: String,
) -> Result<ClusterSpec, SpecError> {
    r.refuse_unknown(c.raw, &["name", "backend", "soperator"], c.pos, c.path, |unexpected| {
        format!(
            "soperator fleet cluster has unsupported mk8s/flat field(s): {unexpected}; place backend-specific settings under 'soperator'"
        )
    })?;
    let default_soperator = r.mapping_or_empty(
        defaults.soperator,
        "defaults.soperator",
        "defaults.soperator must be a mapping",
    )?;
    let raw_soperator = r.mapping_or_empty(
        entries_get(c.raw, "soperator"),
        &join(c.path, "soperator"),
        "cluster.soperator must be a mapping",
    )?;
    let name_node = entries_get(c.raw, "name")
        .filter(|n| n.is_truthy())
        .or(defaults.name.filter(|n| n.is_truthy()));
    let name_text = match name_node {
        Some(n) => r.string(Some(n), &join(c.path, "name"), "", "")?,
        None => default_name,
    };
    let name = slug_or_cluster(&name_text);
    let merged = deep_merge(&default_soperator, &raw_soperator);
    defaults.charge(r, &merged, c.pos, c.path)?;
    let spec = soperator::from_entries(r, &merged, &name, c.pos, &join(c.path, "soperator"))?;
    Ok(ClusterSpec {
        name,
        backend: Backend::Soperator,
        soperator: Some(Box::new(spec)),
        backend_explicit: true,
        positions: r.positions_of(c.raw, c.pos, c.path, 1),
        ..ClusterSpec::default()
    })
}

fn mk8s_target(
    r: &Reader<'_>,
    c: ClusterEntry<'_>,
    defaults: &Defaults<'_>,
    default_name: String,
) -> Result<ClusterSpec, SpecError> {
    let (mut merged, name_override) = match entries_get(c.raw, "mk8s") {
        Some(envelope) if !envelope.is_null() => merge_envelope(r, c, envelope, defaults)?,
        _ => {
            // Flat fields are not refused (the reference's "permissive forward fields"), so
            // a typo there is only a warning, for this cluster's own keys; the defaults' are
            // looked at once, where they are read.
            r.warn_unknown(c.raw, c.path, &[MK8S_ENVELOPE_FIELDS, BACKEND_FIELDS]);
            warn_unknown_pools(r, c.raw, c.path);
            (deep_merge(&defaults.flat, c.raw), None)
        }
    };
    defaults.charge(r, &merged, c.pos, c.path)?;
    if let Some(name) = name_override {
        set_entry(&mut merged, "name", name);
    }
    if !entries_get(&merged, "name").is_some_and(Node::is_truthy) {
        set_entry(
            &mut merged,
            "name",
            Node::new(Value::Str(default_name), c.pos),
        );
    }
    let explicit = c.raw.iter().any(|e| e.key == "backend" || e.key == "mk8s");
    mk8s_cluster_from(r, &merged, c.pos, c.path, explicit)
}

/// An explicit `mk8s:` envelope holds every setting; beside it the entry has only its name
/// and backend. It merges over `defaults.mk8s`, or the flat defaults when there is none.
fn merge_envelope(
    r: &Reader<'_>,
    c: ClusterEntry<'_>,
    envelope: &Node,
    defaults: &Defaults<'_>,
) -> Result<(Vec<Entry>, Option<Node>), SpecError> {
    let epath = join(c.path, "mk8s");
    let Some(env_entries) = envelope.as_map() else {
        return Err(r.error(envelope.pos, &epath, "cluster.mk8s must be a mapping"));
    };
    check_envelope(r, envelope.pos, env_entries, &epath)?;
    r.refuse_unknown(
        c.raw,
        &["name", "backend", "mk8s"],
        c.pos,
        c.path,
        |unexpected| {
            format!("mk8s fleet cluster mixes the 'mk8s' envelope with flat field(s): {unexpected}")
        },
    )?;
    let merged = match defaults.mk8s.filter(|n| n.is_truthy()) {
        Some(n) => deep_merge(
            &r.mapping_or_empty(Some(n), "defaults.mk8s", "defaults.mk8s must be a mapping")?,
            env_entries,
        ),
        None => deep_merge(&defaults.flat, env_entries),
    };
    let name = entries_get(c.raw, "name")
        .filter(|n| n.is_truthy())
        .cloned();
    Ok((merged, name))
}
