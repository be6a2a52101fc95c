//! Builds the spec model from a YAML tree: the `defaults` deep merge, backend envelopes,
//! default names, and strict typing of every field.
//!
//! The top level is read here and each project in `project`; each cluster goes through
//! `backend` (which backend, and what it merges with), then `mk8s` or the Soperator reader;
//! `blocks` reads the optional feature blocks, `reader` the scalars.

mod backend;
mod blocks;
mod merge;
mod mk8s;
mod project;
mod reader;
mod soperator;

pub use merge::{MAX_MERGED_BYTES, MAX_MERGED_NODES, deep_merge};
pub use mk8s::{MK8S_ENVELOPE_FIELDS, POOL_FIELDS};
pub(crate) use reader::{Reader, join};

use super::error::SpecError;
use super::model::*;
use super::names::slug;
use super::warning::{BACKEND_FIELDS, TOP_LEVEL_FIELDS};
use super::yaml::{Entry, Node, Pos, Value};
use reader::entries_get;

/// `spec_from_mapping`: builds the model without validating it. The document is taken whole
/// and each project's part of it is dropped once read, so a large fleet's tree and its model
/// are not held at once.
pub fn spec_from_node(root: Node, file: &str) -> Result<FleetSpec, SpecError> {
    let r = Reader::new(file);
    let root_pos = root.pos;
    let mut top: Vec<Entry> = match root.value {
        Value::Null => Vec::new(),
        Value::Map(entries) => entries,
        _ => return Err(r.error(root.pos, "", "spec must be a mapping")),
    };
    check_api_version(&r, &top, root_pos)?;
    r.warn_unknown(&top, "", &[TOP_LEVEL_FIELDS]);
    let defaults_positions = defaults_positions(&top);
    let defaults = defaults_of(&r, &top)?;
    let defaults = merge::Defaults::new(&defaults);
    let projects_at = top.iter().position(|e| e.key == "projects");
    let raw_projects: Vec<Node> = match projects_at.map(|i| &mut top[i].value) {
        Some(Node {
            value: Value::Seq(items),
            ..
        }) if !items.is_empty() => std::mem::take(items),
        other => {
            return Err(r.error(
                other.map_or(root_pos, |n| n.pos),
                "projects",
                "projects must be a non-empty list",
            ));
        }
    };
    let mut projects = Vec::with_capacity(raw_projects.len());
    for (pidx, entry) in raw_projects.into_iter().enumerate() {
        projects.push(project::project_from(&r, &entry, pidx, &defaults)?);
    }
    let top = &top;
    let root = Node::new(Value::Null, root_pos);
    let top_fields = r.fields(top, "");
    let name = top_fields.string("name", "", "None")?;
    Ok(FleetSpec {
        name: slug(&name),
        tenant_id: top_fields.string("tenant_id", "", "")?,
        region: top_fields.string("region", "", "")?,
        project_prefix: top_fields.string("project_prefix", "", "")?,
        ssh_public_key: top_fields.string("ssh_public_key", "", "")?,
        projects,
        profile: top_fields.string("profile", "", "")?,
        source: file.to_string(),
        positions: {
            let mut positions = r.positions_of(top, root.pos, "", 0);
            positions
                .fields
                .extend(defaults_positions.iter().map(|(k, p)| (k.into(), *p)));
            positions
        },
        warnings: r.take_warnings(),
        runtime_notes: Vec::new(),
    })
}

fn check_api_version(r: &Reader<'_>, top: &[Entry], root: Pos) -> Result<(), SpecError> {
    let api_node = entries_get(top, "apiVersion");
    let api = match api_node {
        None => API_VERSION.to_string(),
        Some(n) => scalar_text(n),
    };
    if api == API_VERSION {
        return Ok(());
    }
    Err(r.error(
        api_node.map_or(root, |n| n.pos),
        "apiVersion",
        format!(
            "unsupported apiVersion {}; expected {API_VERSION}",
            super::names::py_repr(&api)
        ),
    ))
}

/// Where each value under `defaults` was written, by its `defaults.` path: what an error about
/// an inherited value is located by (`super::locate_inherited`).
pub(crate) fn defaults_positions(top: &[Entry]) -> crate::spec::model::FieldPositions {
    let mut out = crate::spec::model::Positions::default();
    if let Some(entries) = entries_get(top, "defaults").and_then(Node::as_map) {
        reader::record_positions(&reader::Keys::default(), entries, "defaults", &mut out, 16);
    }
    out.fields
}

/// The top-level `defaults` mapping every cluster merges over; absent or `null` is none.
fn defaults_of(r: &Reader<'_>, top: &[Entry]) -> Result<Vec<Entry>, SpecError> {
    let Some(n) = entries_get(top, "defaults") else {
        return Ok(Vec::new());
    };
    match &n.value {
        Value::Null => Ok(Vec::new()),
        Value::Map(entries) => {
            warn_unknown_defaults(r, entries);
            Ok(entries.clone())
        }
        _ => Err(r.error(n.pos, "defaults", "defaults must be a mapping")),
    }
}

/// `defaults` is read only through the clusters that merge it, and nothing there refuses a
/// key it does not know, so its typos are looked for once, here: its flat fields and pools,
/// and the `mk8s` defaults with theirs. `defaults.soperator` is left out: the Soperator reader
/// refuses unknown keys in what it merges.
fn warn_unknown_defaults(r: &Reader<'_>, entries: &[Entry]) {
    r.warn_unknown(entries, "defaults", &[MK8S_ENVELOPE_FIELDS, BACKEND_FIELDS]);
    mk8s::warn_unknown_pools(r, entries, "defaults");
    if let Some(mk8s) = entries_get(entries, "mk8s").and_then(Node::as_map) {
        r.warn_unknown(mk8s, "defaults.mk8s", &[MK8S_ENVELOPE_FIELDS]);
        mk8s::warn_unknown_pools(r, mk8s, "defaults.mk8s");
    }
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
