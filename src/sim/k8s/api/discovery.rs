//! Discovery for the simulated API: resource lists, API groups, and the slice of OpenAPI v3
//! that clients read before writing.

use super::*;
pub(super) fn discovery_resources(group: &str, version: &str) -> Option<Value> {
    let mut resources = Vec::new();
    for k in KINDS
        .iter()
        .filter(|k| k.group == group && k.version == version)
    {
        resources.push(json!({
            "name": k.plural, "singularName": k.singular(), "namespaced": k.namespaced,
            "kind": k.kind, "shortNames": k.short_names,
            "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
        }));
        for sub in k.subresources {
            let verbs: &[&str] = if *sub == "log" {
                &["get"]
            } else {
                &["get", "patch", "update"]
            };
            resources.push(json!({
                "name": format!("{}/{sub}", k.plural), "singularName": "", "namespaced": k.namespaced,
                "kind": if *sub == "log" { "Pod" } else { k.kind }, "verbs": verbs,
            }));
        }
    }
    if resources.is_empty() {
        return None;
    }
    let group_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources}),
    )
}

pub(super) fn api_group(group: &str) -> Option<Value> {
    let versions: Vec<Value> = kinds::groups()
        .into_iter()
        .filter(|(g, _)| *g == group && !g.is_empty())
        .map(|(g, v)| json!({"groupVersion": format!("{g}/{v}"), "version": v}))
        .collect();
    let preferred = versions.first()?.clone();
    Some(
        json!({"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": versions, "preferredVersion": preferred}),
    )
}

/// The part of the OpenAPI v3 description clients read before writing: each kind's PATCH
/// operation, tagged with its group-version-kind and taking `fieldValidation`, so `kubectl`
/// leaves validation to the server instead of downloading schemas.
pub(super) fn openapi(cluster: &str, group_version: Option<&str>) -> Option<Value> {
    let path_of = |group: &str, version: &str| {
        if group.is_empty() {
            format!("api/{version}")
        } else {
            format!("apis/{group}/{version}")
        }
    };
    let Some(wanted) = group_version else {
        let paths: serde_json::Map<String, Value> = kinds::groups()
            .into_iter()
            .map(|(g, v)| {
                let path = path_of(g, v);
                let url = format!("{PATH_PREFIX}{cluster}/openapi/v3/{path}?hash=fleetbot-sim-1");
                (path, json!({"serverRelativeURL": url}))
            })
            .collect();
        return Some(json!({"paths": paths}));
    };
    let mut paths = serde_json::Map::new();
    for k in KINDS
        .iter()
        .filter(|k| path_of(k.group, k.version) == wanted)
    {
        let base = format!("/{}", path_of(k.group, k.version));
        let object = if k.namespaced {
            format!("{base}/namespaces/{{namespace}}/{}/{{name}}", k.plural)
        } else {
            format!("{base}/{}/{{name}}", k.plural)
        };
        let gvk = json!({"group": k.group, "version": k.version, "kind": k.kind});
        let operation = json!({
            "x-kubernetes-group-version-kind": gvk,
            "parameters": [
                {"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
                {"name": "fieldManager", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
            ],
            "responses": {"200": {"description": "OK"}},
        });
        paths.insert(object, json!({"patch": operation, "put": operation}));
    }
    if paths.is_empty() {
        return None;
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.34.0"},
        "paths": paths,
        "components": {"schemas": {}},
    }))
}
