//! One entry of `projects:`: its own fields, its object storage, and its clusters (one
//! unnamed default cluster when it lists none).

use super::backend::cluster_target_from;
use super::blocks::object_storage_from;
use super::merge::Defaults;
use super::reader::{Reader, entries_get, join};
use crate::spec::error::SpecError;
use crate::spec::model::ProjectSpec;
use crate::spec::warning::PROJECT_FIELDS;
use crate::spec::yaml::{Entry, Node, Pos, Value};

/// One cluster entry as written: its mapping, where it came from, and its own path.
struct RawCluster {
    entries: Vec<Entry>,
    pos: Pos,
    path: String,
}

pub(super) fn project_from(
    r: &Reader<'_>,
    entry: &Node,
    pidx: usize,
    defaults: &Defaults<'_>,
) -> Result<ProjectSpec, SpecError> {
    let ppath = format!("projects[{pidx}]");
    let Some(fields) = entry.as_map() else {
        return Err(r.error(entry.pos, &ppath, "each project must be a mapping"));
    };
    r.warn_unknown(fields, &ppath, &[PROJECT_FIELDS]);
    let raw_clusters = raw_clusters(r, fields, entry.pos, &ppath)?;
    let multi = raw_clusters.len() > 1;
    let clusters = raw_clusters
        .iter()
        .enumerate()
        .map(|(idx, c)| cluster_target_from(r, &c.entries, c.pos, &c.path, idx, multi, defaults))
        .collect::<Result<Vec<_>, _>>()?;

    let f = r.fields(fields, &ppath);
    Ok(ProjectSpec {
        name: f.string("name", "", "")?,
        project_id: f.string("project_id", "", "")?,
        region: f.string("region", "", "")?,
        clusters,
        object_storage: object_storage_from(r, f.get("object_storage"), &f.path("object_storage"))?,
        positions: r.positions_of(fields, entry.pos, &ppath, 1),
        bound_project_id: String::new(),
    })
}

/// The project's `clusters:`; absent or `null` is one default cluster, and an entry that is
/// not a mapping is an empty one placed at the project.
fn raw_clusters(
    r: &Reader<'_>,
    fields: &[Entry],
    project_pos: Pos,
    ppath: &str,
) -> Result<Vec<RawCluster>, SpecError> {
    let path = |i: usize| format!("{ppath}.clusters[{i}]");
    match entries_get(fields, "clusters") {
        None => {}
        Some(n) if n.is_null() => {}
        Some(Node {
            value: Value::Seq(items),
            ..
        }) if !items.is_empty() => {
            return Ok(items
                .iter()
                .enumerate()
                .map(|(i, item)| match item.as_map() {
                    Some(entries) => RawCluster {
                        entries: entries.to_vec(),
                        pos: item.pos,
                        path: path(i),
                    },
                    None => RawCluster {
                        entries: Vec::new(),
                        pos: project_pos,
                        path: path(i),
                    },
                })
                .collect());
        }
        Some(n) => {
            return Err(r.error(
                n.pos,
                &join(ppath, "clusters"),
                "project 'clusters' must be a non-empty list when set",
            ));
        }
    }
    Ok(vec![RawCluster {
        entries: Vec::new(),
        pos: project_pos,
        path: path(0),
    }])
}
