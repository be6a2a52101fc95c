//! Patches (merge, strategic merge, JSON) and server-side apply with field ownership.
//!
//! Ownership is tracked per field manager in `metadata.managedFields` (FieldsV1), with lists
//! owned whole: enough for the conflicts clients meet (another manager set the field to
//! something else → 409 unless `force`) and for apply's removal of fields it stopped setting.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use super::store::{Cause, now_rfc3339};

pub type Path = Vec<String>;

/// The fields an object sets: leaves, empty maps and (whole) lists.
pub fn owned_paths(object: &Value) -> BTreeSet<Path> {
    let mut out = BTreeSet::new();
    let Some(map) = object.as_object() else {
        return out;
    };
    for (key, value) in map {
        match key.as_str() {
            "apiVersion" | "kind" | "status" => {}
            "metadata" => {
                for field in ["labels", "annotations", "finalizers", "ownerReferences"] {
                    if let Some(v) = value.get(field) {
                        collect(v, &mut vec!["metadata".into(), field.into()], &mut out);
                    }
                }
            }
            _ => collect(value, &mut vec![key.clone()], &mut out),
        }
    }
    out
}

fn collect(value: &Value, prefix: &mut Path, out: &mut BTreeSet<Path>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (k, v) in map {
                prefix.push(k.clone());
                collect(v, prefix, out);
                prefix.pop();
            }
        }
        _ => {
            out.insert(prefix.clone());
        }
    }
}

/// `{"f:spec": {"f:replicas": {}}}`.
pub fn to_fields_v1(paths: &BTreeSet<Path>) -> Value {
    let mut root = Map::new();
    for path in paths {
        let mut node = &mut root;
        for part in path {
            node = node
                .entry(format!("f:{part}"))
                .or_insert_with(|| json!({}))
                .as_object_mut()
                .expect("fields are objects");
        }
    }
    Value::Object(root)
}

pub fn from_fields_v1(fields: &Value) -> BTreeSet<Path> {
    fn walk(node: &Value, prefix: &mut Path, out: &mut BTreeSet<Path>) {
        let children: Vec<(&String, &Value)> = node
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, _)| k.starts_with("f:"))
            .collect();
        if children.is_empty() {
            if !prefix.is_empty() {
                out.insert(prefix.clone());
            }
            return;
        }
        for (k, v) in children {
            prefix.push(k[2..].to_string());
            walk(v, prefix, out);
            prefix.pop();
        }
    }
    let mut out = BTreeSet::new();
    walk(fields, &mut Vec::new(), &mut out);
    out
}

pub fn get_path<'a>(value: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(value, |v, part| v.get(part))
}

fn set_path(value: &mut Value, path: &[String], new: Value) {
    let mut node = value;
    for part in &path[..path.len() - 1] {
        if !node.get(part).is_some_and(Value::is_object) {
            node[part.as_str()] = json!({});
        }
        node = node.get_mut(part).expect("just made");
    }
    node[path[path.len() - 1].as_str()] = new;
}

fn remove_path(value: &mut Value, path: &[String]) {
    let mut node = value;
    for part in &path[..path.len() - 1] {
        match node.get_mut(part) {
            Some(next) => node = next,
            None => return,
        }
    }
    if let Some(map) = node.as_object_mut() {
        map.remove(&path[path.len() - 1]);
    }
}

fn overlaps(a: &[String], b: &[String]) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

/// One manager's entry.
#[derive(Debug, Clone)]
struct Managed {
    manager: String,
    operation: String,
    api_version: String,
    paths: BTreeSet<Path>,
}

fn read_managed(object: &Value) -> Vec<Managed> {
    object
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|entry| Managed {
            manager: entry["manager"].as_str().unwrap_or_default().into(),
            operation: entry["operation"].as_str().unwrap_or("Update").into(),
            api_version: entry["apiVersion"].as_str().unwrap_or_default().into(),
            paths: from_fields_v1(&entry["fieldsV1"]),
        })
        .collect()
}

fn write_managed(object: &mut Value, managed: &[Managed]) {
    let now = now_rfc3339();
    let entries: Vec<Value> = managed
        .iter()
        .filter(|m| !m.paths.is_empty())
        .map(|m| {
            json!({
                "manager": m.manager,
                "operation": m.operation,
                "apiVersion": m.api_version,
                "time": now,
                "fieldsType": "FieldsV1",
                "fieldsV1": to_fields_v1(&m.paths),
            })
        })
        .collect();
    object["metadata"]["managedFields"] = json!(entries);
}

/// Records an update (create, replace, patch) by `manager`: it owns what it changed.
pub fn record_update(before: Option<&Value>, after: &mut Value, manager: &str) {
    let mut managed = before.map(read_managed).unwrap_or_default();
    let changed: BTreeSet<Path> = owned_paths(after)
        .into_iter()
        .filter(|p| before.is_none_or(|b| get_path(b, p) != get_path(after, p)))
        .collect();
    if changed.is_empty() && before.is_some() {
        write_managed(after, &managed);
        return;
    }
    for other in managed.iter_mut() {
        other
            .paths
            .retain(|p| !changed.iter().any(|c| overlaps(c, p)));
    }
    let api_version = after["apiVersion"].as_str().unwrap_or_default().to_string();
    match managed
        .iter_mut()
        .find(|m| m.manager == manager && m.operation == "Update")
    {
        Some(mine) => mine.paths.extend(changed),
        None => managed.push(Managed {
            manager: manager.into(),
            operation: "Update".into(),
            api_version,
            paths: changed,
        }),
    }
    write_managed(after, &managed);
}

/// Server-side apply of `applied` over `current` by `manager`. Returns the new object, or
/// the conflicts (as 409 causes) when another manager owns a field set to something else.
pub fn apply(
    current: &Value,
    applied: &Value,
    manager: &str,
    force: bool,
) -> Result<Value, Vec<Cause>> {
    let mut managed = read_managed(current);
    let wanted = owned_paths(applied);
    let api_version = applied["apiVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let mut conflicts = Vec::new();
    for path in &wanted {
        if get_path(current, path) == get_path(applied, path) {
            continue;
        }
        for other in managed.iter().filter(|m| m.manager != manager) {
            if other.paths.iter().any(|p| overlaps(p, path)) {
                let field = format!(".{}", path.join("."));
                conflicts.push(Cause {
                    reason: "FieldManagerConflict",
                    message: format!(
                        "conflict with \"{}\" using {}: {field}",
                        other.manager, other.api_version
                    ),
                    field,
                });
            }
        }
    }
    if !conflicts.is_empty() && !force {
        return Err(conflicts);
    }
    let mut next = current.clone();
    let previously: BTreeSet<Path> = managed
        .iter()
        .filter(|m| m.manager == manager && m.operation == "Apply")
        .flat_map(|m| m.paths.iter().cloned())
        .collect();
    for gone in previously.difference(&wanted) {
        let shared = managed
            .iter()
            .filter(|m| !(m.manager == manager && m.operation == "Apply"))
            .any(|m| m.paths.contains(gone));
        if !shared {
            remove_path(&mut next, gone);
        }
    }
    for path in &wanted {
        if let Some(value) = get_path(applied, path) {
            set_path(&mut next, path, value.clone());
        }
    }
    for other in managed.iter_mut().filter(|m| m.manager != manager) {
        // Fields set to the same value are shared; forced ones change hands.
        other.paths.retain(|p| {
            !wanted
                .iter()
                .any(|w| overlaps(w, p) && get_path(current, w) != get_path(applied, w))
        });
    }
    managed.retain(|m| !(m.manager == manager && m.operation == "Apply"));
    managed.push(Managed {
        manager: manager.into(),
        operation: "Apply".into(),
        api_version,
        paths: wanted,
    });
    write_managed(&mut next, &managed);
    Ok(next)
}

/// Strategic merge patch, as far as the simulator needs it: a merge patch whose `$` directives
/// are dropped (lists are replaced whole).
pub fn strategic_merge(target: &mut Value, patch: &Value) {
    fn strip(v: &Value) -> Value {
        match v {
            Value::Object(m) => Value::Object(
                m.iter()
                    .filter(|(k, _)| !k.starts_with('$'))
                    .map(|(k, v)| (k.clone(), strip(v)))
                    .collect(),
            ),
            Value::Array(a) => Value::Array(a.iter().map(strip).collect()),
            other => other.clone(),
        }
    }
    json_patch::merge(target, &strip(patch));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment(replicas: i64, image: &str) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "labels": {"a": "1"}},
               "spec": {"replicas": replicas, "template": {"spec": {"containers": [{"name": "c", "image": image}]}}}})
    }

    #[test]
    fn fields_round_trip_through_fields_v1() {
        let paths = owned_paths(&deployment(1, "i"));
        assert!(paths.contains(&vec!["spec".to_string(), "replicas".to_string()]));
        assert!(paths.contains(&vec![
            "metadata".to_string(),
            "labels".to_string(),
            "a".to_string()
        ]));
        assert_eq!(from_fields_v1(&to_fields_v1(&paths)), paths);
    }

    #[test]
    fn apply_conflicts_with_another_manager_unless_forced_and_removes_what_it_dropped() {
        let mut current = deployment(1, "i");
        record_update(None, &mut current, "kubectl-create");
        let first = apply(&current, &deployment(1, "i"), "fleetbot", false).unwrap();
        let conflict = apply(&first, &deployment(3, "i"), "fleetbot", false).unwrap_err();
        assert_eq!(conflict[0].field, ".spec.replicas");
        assert!(conflict[0].message.contains("\"kubectl-create\""));
        let forced = apply(&first, &deployment(3, "i"), "fleetbot", true).unwrap();
        assert_eq!(forced["spec"]["replicas"], 3);
        // Now fleetbot alone owns replicas; applying without it removes it.
        let mut without = deployment(3, "i");
        without["spec"].as_object_mut().unwrap().remove("replicas");
        let dropped = apply(&forced, &without, "fleetbot", false).unwrap();
        assert!(dropped["spec"].get("replicas").is_none(), "{dropped}");
    }

    #[test]
    fn strategic_merge_drops_directives() {
        let mut target = json!({"metadata": {"labels": {"a": "1", "b": "2"}}});
        strategic_merge(
            &mut target,
            &json!({"metadata": {"labels": {"b": null, "c": "3"}, "$setElementOrder/x": []}}),
        );
        assert_eq!(
            target,
            json!({"metadata": {"labels": {"a": "1", "c": "3"}}})
        );
    }
}
