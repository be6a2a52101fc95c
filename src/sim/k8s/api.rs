//! The HTTP face of the simulated clusters: discovery, CRUD, patch and apply, watch, logs,
//! bearer authentication, all under `/mk8s/<cluster-id>` on one TLS listener.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::kinds::{self, KINDS, NAMESPACE, POD};
use super::patch;
use super::select::{FieldSelector, LabelSelector};
use super::store::{ApiError, DeleteOptions, Deleted, Event, meta};
use super::validate::{default_on_create, validate};
use super::{ApiShared, PATH_PREFIX};

/// The longest a watch stays open without a `timeoutSeconds`.
const MAX_WATCH: Duration = Duration::from_secs(30 * 60);

fn json_response(code: u16, value: &Value) -> Response {
    (
        StatusCode::from_u16(code).unwrap_or(StatusCode::OK),
        [(header::CONTENT_TYPE, "application/json")],
        value.to_string(),
    )
        .into_response()
}

fn error_response(error: &ApiError) -> Response {
    json_response(error.code, &error.status())
}

fn not_served() -> ApiError {
    ApiError::new(
        404,
        "NotFound",
        "the server could not find the requested resource",
    )
}

/// Where a request points inside one cluster's API.
#[derive(Debug, PartialEq, Eq)]
enum Target {
    Version,
    CoreVersions,
    Groups,
    Group(String),
    Resources(String, String),
    /// `/openapi/v3` (None) or one group-version's document.
    OpenApi(Option<String>),
    Collection {
        kind: usize,
        namespace: Option<String>,
    },
    Object {
        kind: usize,
        namespace: String,
        name: String,
        sub: Option<String>,
    },
    Health,
}

fn parse_target(segments: &[&str]) -> Result<Target, ApiError> {
    let (group, version, rest) = match segments {
        [] => return Err(not_served()),
        ["version"] => return Ok(Target::Version),
        ["healthz" | "livez" | "readyz", ..] => return Ok(Target::Health),
        ["openapi", "v3"] => return Ok(Target::OpenApi(None)),
        ["openapi", "v3", rest @ ..] => return Ok(Target::OpenApi(Some(rest.join("/")))),
        ["api"] => return Ok(Target::CoreVersions),
        ["apis"] => return Ok(Target::Groups),
        ["api", v] => return Ok(Target::Resources(String::new(), v.to_string())),
        ["apis", g] => return Ok(Target::Group(g.to_string())),
        ["apis", g, v] => return Ok(Target::Resources(g.to_string(), v.to_string())),
        ["api", v, rest @ ..] => ("", *v, rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return Err(not_served()),
    };
    let find = |plural: &str| kinds::find(group, version, plural).ok_or_else(not_served);
    let namespace_sub = |s: &str| matches!(s, "status" | "finalize");
    Ok(match rest {
        [plural] => Target::Collection {
            kind: find(plural)?,
            namespace: None,
        },
        ["namespaces", ns, sub] if group.is_empty() && namespace_sub(sub) => Target::Object {
            kind: NAMESPACE,
            namespace: String::new(),
            name: ns.to_string(),
            sub: Some(sub.to_string()),
        },
        ["namespaces", ns, plural] => {
            let kind = find(plural)?;
            if !KINDS[kind].namespaced {
                return Err(not_served());
            }
            Target::Collection {
                kind,
                namespace: Some(ns.to_string()),
            }
        }
        ["namespaces", ns, plural, name, more @ ..] if more.len() <= 1 => {
            let kind = find(plural)?;
            if !KINDS[kind].namespaced {
                return Err(not_served());
            }
            Target::Object {
                kind,
                namespace: ns.to_string(),
                name: name.to_string(),
                sub: more.first().map(|s| s.to_string()),
            }
        }
        [plural, name, more @ ..] if more.len() <= 1 => {
            let kind = find(plural)?;
            if KINDS[kind].namespaced {
                return Err(not_served());
            }
            Target::Object {
                kind,
                namespace: String::new(),
                name: name.to_string(),
                sub: more.first().map(|s| s.to_string()),
            }
        }
        _ => return Err(not_served()),
    })
}

fn discovery_resources(group: &str, version: &str) -> Option<Value> {
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

fn api_group(group: &str) -> Option<Value> {
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
fn openapi(cluster: &str, group_version: Option<&str>) -> Option<Value> {
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

/// `kubectl get`'s columns: the server prints, as a real API server does (`as=Table`).
fn wants_table(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| {
            a.split(',')
                .next()
                .is_some_and(|first| first.contains("as=Table"))
        })
}

/// `5s`, `3m`, `2h`, `4d`, as `kubectl` shows ages.
fn age(object: &Value) -> String {
    let created = meta(object, "creationTimestamp");
    let Ok(then) = created.parse::<jiff::Timestamp>() else {
        return "<unknown>".into();
    };
    let seconds = (jiff::Timestamp::now().as_second() - then.as_second()).max(0);
    match seconds {
        s if s < 120 => format!("{s}s"),
        s if s < 2 * 3600 => format!("{}m", s / 60),
        s if s < 2 * 86400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86400),
    }
}

fn columns_and_cells(kind: usize, object: &Value) -> (Vec<&'static str>, Vec<Value>) {
    let text = |p: &str| {
        object
            .pointer(p)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let condition = |kind: &str| {
        object
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|c| c["type"] == kind && c["status"] == "True")
    };
    let name = json!(meta(object, "name"));
    match KINDS[kind].kind {
        "Node" => (
            vec!["Name", "Status", "Roles", "Age", "Version"],
            vec![
                name,
                json!(if condition("Ready") {
                    "Ready"
                } else {
                    "NotReady"
                }),
                json!("<none>"),
                json!(age(object)),
                json!(text("/status/nodeInfo/kubeletVersion")),
            ],
        ),
        "Pod" => {
            let statuses = object
                .pointer("/status/containerStatuses")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let total = object
                .pointer("/spec/containers")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            let ready = statuses.iter().filter(|s| s["ready"] == true).count();
            let phase = text("/status/phase");
            let shown = if phase == "Succeeded" {
                "Completed".to_string()
            } else {
                phase
            };
            (
                vec!["Name", "Ready", "Status", "Restarts", "Age"],
                vec![
                    name,
                    json!(format!("{ready}/{total}")),
                    json!(shown),
                    json!(0),
                    json!(age(object)),
                ],
            )
        }
        "Job" => {
            let status = if condition("Complete") {
                "Complete"
            } else if condition("Failed") {
                "Failed"
            } else {
                "Running"
            };
            let done = object
                .pointer("/status/succeeded")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            let wanted = object
                .pointer("/spec/completions")
                .and_then(Value::as_i64)
                .unwrap_or(1);
            (
                vec!["Name", "Status", "Completions", "Age"],
                vec![
                    name,
                    json!(status),
                    json!(format!("{done}/{wanted}")),
                    json!(age(object)),
                ],
            )
        }
        "Namespace" => (
            vec!["Name", "Status", "Age"],
            vec![name, json!(text("/status/phase")), json!(age(object))],
        ),
        _ => (vec!["Name", "Age"], vec![name, json!(age(object))]),
    }
}

fn table(kind: usize, objects: &[Value], resource_version: u64) -> Value {
    let (columns, _) = columns_and_cells(kind, &json!({}));
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| {
            json!({
                "cells": columns_and_cells(kind, o).1,
                "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": o["metadata"]},
            })
        })
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": resource_version.to_string()},
        "columnDefinitions": columns.iter().map(|c| json!({
            "name": c, "type": "string", "format": if *c == "Name" { "name" } else { "" },
            "description": "", "priority": 0,
        })).collect::<Vec<_>>(),
        "rows": rows,
    })
}

fn query(uri: &Uri) -> HashMap<String, String> {
    form_urlencoded::parse(uri.query().unwrap_or_default().as_bytes())
        .into_owned()
        .collect()
}

fn parse_body(headers: &HeaderMap, body: &Bytes) -> Result<Value, ApiError> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json");
    let parsed: Result<Value, String> = if content_type.contains("yaml") {
        serde_yaml::from_slice(body).map_err(|e| e.to_string())
    } else {
        serde_json::from_slice(body).map_err(|e| e.to_string())
    };
    let value = parsed.map_err(|e| {
        ApiError::bad_request(format!(
            "the body of the request was in an unknown format: {e}"
        ))
    })?;
    if !value.is_object() {
        return Err(ApiError::bad_request(
            "the body of the request is not an object",
        ));
    }
    Ok(value)
}

/// Refuses bodies whose `metadata`, `spec` or `status` is not an object, before anything
/// indexes into them.
fn check_shape(object: &Value) -> Result<(), ApiError> {
    if !object.is_object() {
        return Err(ApiError::bad_request("the object is not a JSON object"));
    }
    for field in ["metadata", "spec", "status"] {
        if object
            .get(field)
            .is_some_and(|v| !v.is_object() && !v.is_null())
        {
            return Err(ApiError::bad_request(format!("{field} must be an object")));
        }
    }
    if object.get("metadata").is_some_and(Value::is_null) {
        return Err(ApiError::bad_request("metadata must be an object"));
    }
    for field in ["labels", "annotations"] {
        if object
            .pointer(&format!("/metadata/{field}"))
            .is_some_and(|v| !v.is_object() && !v.is_null())
        {
            return Err(ApiError::bad_request(format!(
                "metadata.{field} must be an object"
            )));
        }
    }
    Ok(())
}

fn check_type(kind: usize, object: &Value) -> Result<(), ApiError> {
    check_shape(object)?;
    let k = &KINDS[kind];
    let api_version = object.get("apiVersion").and_then(Value::as_str);
    let object_kind = object.get("kind").and_then(Value::as_str);
    if api_version.is_some_and(|v| v != k.api_version()) || object_kind.is_some_and(|v| v != k.kind)
    {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({}) does not match the expected API version ({})",
            api_version.unwrap_or_default(),
            k.api_version()
        )));
    }
    Ok(())
}

fn check_namespace(kind: usize, object: &Value, namespace: &str) -> Result<(), ApiError> {
    let given = meta(object, "namespace");
    if KINDS[kind].namespaced && !given.is_empty() && given != namespace {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    Ok(())
}

fn manager(query: &HashMap<String, String>, headers: &HeaderMap) -> String {
    query.get("fieldManager").cloned().unwrap_or_else(|| {
        headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .and_then(|ua| ua.split('/').next())
            .unwrap_or("unknown")
            .to_string()
    })
}

/// Handles one request for `/mk8s/...`.
pub async fn handle(
    shared: Arc<ApiShared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(rest) = uri.path().strip_prefix(PATH_PREFIX) else {
        return error_response(&not_served());
    };
    let (cluster, rest) = rest.split_once('/').unwrap_or((rest, ""));
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default();
    if token.is_empty() || shared.service.check_bearer(token).is_err() {
        return error_response(&ApiError::new(401, "Unauthorized", "Unauthorized"));
    }
    let Some(version) = shared.cluster_version(cluster) else {
        return error_response(&ApiError::new(
            503,
            "ServiceUnavailable",
            "the cluster is not running",
        ));
    };
    let segments: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
    let target = match parse_target(&segments) {
        Ok(t) => t,
        Err(e) => return error_response(&e),
    };
    let q = query(&uri);
    let result = match (&method, target) {
        (_, Target::Health) => return (StatusCode::OK, "ok").into_response(),
        (&Method::GET, Target::Version) => Ok(json_response(
            200,
            &json!({
                "major": "1",
                "minor": version.split('.').nth(1).unwrap_or("31"),
                "gitVersion": format!("v{version}.0"),
                "gitCommit": "0000000000000000000000000000000000000000",
                "gitTreeState": "clean",
                "buildDate": "2026-01-01T00:00:00Z",
                "goVersion": "go1.24.0",
                "compiler": "gc",
                "platform": "linux/amd64",
            }),
        )),
        (&Method::GET, Target::CoreVersions) => Ok(json_response(
            200,
            &json!({
                "kind": "APIVersions", "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": shared.address}],
            }),
        )),
        (&Method::GET, Target::Groups) => {
            let groups: Vec<Value> = kinds::groups()
                .into_iter()
                .filter(|(g, _)| !g.is_empty())
                .filter_map(|(g, _)| api_group(g))
                .collect();
            Ok(json_response(
                200,
                &json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}),
            ))
        }
        (&Method::GET, Target::Group(g)) => api_group(&g)
            .map(|v| json_response(200, &v))
            .ok_or_else(not_served),
        (&Method::GET, Target::OpenApi(gv)) => openapi(cluster, gv.as_deref())
            .map(|v| json_response(200, &v))
            .ok_or_else(not_served),
        (&Method::GET, Target::Resources(g, v)) => discovery_resources(&g, &v)
            .map(|r| json_response(200, &r))
            .ok_or_else(not_served),
        (&Method::GET, Target::Collection { kind, namespace }) => {
            if matches!(q.get("watch").map(String::as_str), Some("true" | "1")) {
                watch(&shared, cluster, kind, namespace, &q)
            } else {
                list(
                    &shared,
                    cluster,
                    kind,
                    namespace.as_deref(),
                    &q,
                    wants_table(&headers),
                )
            }
        }
        (&Method::POST, Target::Collection { kind, namespace }) => create(
            &shared,
            cluster,
            kind,
            namespace.as_deref().unwrap_or_default(),
            &q,
            &headers,
            &body,
        ),
        (&Method::DELETE, Target::Collection { kind, namespace }) => {
            delete_collection(&shared, cluster, kind, namespace.as_deref(), &q)
        }
        (
            &Method::GET,
            Target::Object {
                kind,
                namespace,
                name,
                sub,
            },
        ) if sub.as_deref() == Some("log") && kind == POD => {
            logs(&shared, cluster, &namespace, &name, &q).await
        }
        (
            &Method::GET,
            Target::Object {
                kind,
                namespace,
                name,
                ..
            },
        ) => shared
            .with_store(cluster, |store| {
                store
                    .get(kind, &namespace, &name)
                    .map(|o| (o.clone(), store.resource_version()))
            })
            .ok_or_else(|| ApiError::not_found(kind, &name))
            .map(|(o, rv)| {
                if wants_table(&headers) {
                    json_response(200, &table(kind, &[o], rv))
                } else {
                    json_response(200, &o)
                }
            }),
        (
            &Method::PUT,
            Target::Object {
                kind,
                namespace,
                name,
                sub,
            },
        ) => replace(
            &shared,
            cluster,
            kind,
            &namespace,
            &name,
            sub.as_deref(),
            &q,
            &headers,
            &body,
        ),
        (
            &Method::PATCH,
            Target::Object {
                kind,
                namespace,
                name,
                sub,
            },
        ) => patch_object(
            &shared,
            cluster,
            kind,
            &namespace,
            &name,
            sub.as_deref(),
            &q,
            &headers,
            &body,
        ),
        (
            &Method::DELETE,
            Target::Object {
                kind,
                namespace,
                name,
                sub: None,
            },
        ) => delete(&shared, cluster, kind, &namespace, &name, &q, &body),
        _ => Err(ApiError::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )),
    };
    result.unwrap_or_else(|e| error_response(&e))
}

fn list(
    shared: &ApiShared,
    cluster: &str,
    kind: usize,
    namespace: Option<&str>,
    q: &HashMap<String, String>,
    as_table: bool,
) -> Result<Response, ApiError> {
    let labels = LabelSelector::parse(q.get("labelSelector").map_or("", String::as_str))
        .map_err(ApiError::bad_request)?;
    let fields = FieldSelector::parse(q.get("fieldSelector").map_or("", String::as_str))
        .map_err(ApiError::bad_request)?;
    let limit: usize = q
        .get("limit")
        .and_then(|l| l.parse().ok())
        .filter(|l| *l > 0)
        .unwrap_or(usize::MAX);
    let after = q.get("continue").cloned().unwrap_or_default();
    let k = &KINDS[kind];
    let (items, rv, next) = shared.with_store(cluster, |store| {
        let mut matched: Vec<Value> = store
            .list(kind, namespace)
            .into_iter()
            .filter(|o| labels.matches(o) && fields.matches(o))
            .filter(|o| {
                after.is_empty() || format!("{}/{}", meta(o, "namespace"), meta(o, "name")) > after
            })
            .cloned()
            .collect();
        let next = if matched.len() > limit {
            matched.truncate(limit);
            matched
                .last()
                .map(|o| format!("{}/{}", meta(o, "namespace"), meta(o, "name")))
        } else {
            None
        };
        (matched, store.resource_version(), next)
    });
    if as_table {
        let mut t = table(kind, &items, rv);
        if let Some(next) = next {
            t["metadata"]["continue"] = json!(next);
        }
        return Ok(json_response(200, &t));
    }
    let mut metadata = json!({"resourceVersion": rv.to_string()});
    if let Some(next) = next {
        metadata["continue"] = json!(next);
    }
    Ok(json_response(
        200,
        &json!({
            "kind": format!("{}List", k.kind), "apiVersion": k.api_version(), "metadata": metadata, "items": items,
        }),
    ))
}

struct WatchState {
    replay: VecDeque<Arc<Event>>,
    live: tokio::sync::broadcast::Receiver<Arc<Event>>,
    deadline: tokio::time::Instant,
    kind: usize,
    namespace: Option<String>,
    labels: LabelSelector,
    fields: FieldSelector,
    bookmark: Option<Value>,
}

impl WatchState {
    fn wanted(&self, e: &Event) -> bool {
        e.kind == self.kind
            && self.namespace.as_ref().is_none_or(|ns| *ns == e.namespace)
            && self.labels.matches(&e.object)
            && self.fields.matches(&e.object)
    }
}

fn event_line(action: &str, object: &Value) -> Bytes {
    let mut line = json!({"type": action, "object": object}).to_string();
    line.push('\n');
    Bytes::from(line)
}

fn watch(
    shared: &ApiShared,
    cluster: &str,
    kind: usize,
    namespace: Option<String>,
    q: &HashMap<String, String>,
) -> Result<Response, ApiError> {
    let labels = LabelSelector::parse(q.get("labelSelector").map_or("", String::as_str))
        .map_err(ApiError::bad_request)?;
    let fields = FieldSelector::parse(q.get("fieldSelector").map_or("", String::as_str))
        .map_err(ApiError::bad_request)?;
    let timeout = q
        .get("timeoutSeconds")
        .and_then(|t| t.parse().ok())
        .map_or(MAX_WATCH, |s: u64| Duration::from_secs(s).min(MAX_WATCH));
    let since = q.get("resourceVersion").cloned().unwrap_or_default();
    let initial =
        since.is_empty() || since == "0" || q.get("sendInitialEvents").is_some_and(|v| v == "true");
    let k = &KINDS[kind];
    let (replay, live, bookmark) = shared.with_store(cluster, |store| {
        let rv = store.resource_version();
        if initial {
            let now: VecDeque<Arc<Event>> = store
                .list(kind, namespace.as_deref())
                .into_iter()
                .map(|o| {
                    Arc::new(Event {
                        rv,
                        kind,
                        namespace: meta(o, "namespace").to_string(),
                        action: "ADDED",
                        object: o.clone(),
                    })
                })
                .collect();
            let bookmark = q
                .get("sendInitialEvents")
                .is_some_and(|v| v == "true")
                .then(|| {
                    json!({"kind": k.kind, "apiVersion": k.api_version(), "metadata": {
                        "resourceVersion": rv.to_string(),
                        "annotations": {"k8s.io/initial-events-end": "true"},
                    }})
                });
            Ok((now, store.subscribe(), bookmark))
        } else {
            let from: u64 = since
                .parse()
                .map_err(|_| ApiError::bad_request(format!("invalid resourceVersion {since:?}")))?;
            match store.watch_from(from) {
                Some((events, live)) => Ok((events.into_iter().collect(), live, None)),
                None => Err(ApiError::new(
                    410,
                    "Expired",
                    format!("too old resource version: {from} ({rv})"),
                )),
            }
        }
    })?;
    let state = WatchState {
        replay,
        live,
        deadline: tokio::time::Instant::now() + timeout,
        kind,
        namespace,
        labels,
        fields,
        bookmark,
    };
    let stream = futures_util::stream::unfold(state, |mut s| async move {
        while let Some(e) = s.replay.pop_front() {
            if s.wanted(&e) {
                return Some((
                    Ok::<_, std::convert::Infallible>(event_line(e.action, &e.object)),
                    s,
                ));
            }
        }
        if let Some(bookmark) = s.bookmark.take() {
            return Some((Ok(event_line("BOOKMARK", &bookmark)), s));
        }
        loop {
            match tokio::time::timeout_at(s.deadline, s.live.recv()).await {
                Ok(Ok(e)) if s.wanted(&e) => return Some((Ok(event_line(e.action, &e.object)), s)),
                Ok(Ok(_)) => continue,
                // Lagged or closed or timed out: end the watch; the client lists again.
                _ => return None,
            }
        }
    });
    Ok((
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        Body::from_stream(stream),
    )
        .into_response())
}

fn create(
    shared: &ApiShared,
    cluster: &str,
    kind: usize,
    namespace: &str,
    q: &HashMap<String, String>,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<Response, ApiError> {
    let object = parse_body(headers, body)?;
    check_type(kind, &object)?;
    check_namespace(kind, &object, namespace)?;
    validate(kind, &object)?;
    let manager = manager(q, headers);
    if q.get("dryRun").is_some_and(|d| d == "All") {
        let mut preview = object;
        default_on_create(kind, &mut preview);
        return Ok(json_response(201, &preview));
    }
    let created = shared.with_store(cluster, |store| {
        store.create_with(kind, namespace, object, |o| {
            default_on_create(kind, o);
            patch::record_update(None, o, &manager);
        })
    })?;
    shared.poke();
    Ok(json_response(201, &created))
}

/// What a write to the main resource may not change: the status (its own subresource).
fn keep_status(kind: usize, current: &Value, next: &mut Value) {
    if KINDS[kind].subresources.contains(&"status") {
        match current.get("status") {
            Some(status) => next["status"] = status.clone(),
            None => {
                if let Some(m) = next.as_object_mut() {
                    m.remove("status");
                }
            }
        }
    }
}

fn finish_update(
    kind: usize,
    current: &Value,
    mut next: Value,
    sub: Option<&str>,
    manager: &str,
) -> Result<Value, ApiError> {
    match sub {
        Some("status") => {
            let status = next.get("status").cloned();
            next = current.clone();
            match status {
                Some(s) => next["status"] = s,
                None => {
                    if let Some(m) = next.as_object_mut() {
                        m.remove("status");
                    }
                }
            }
            return Ok(next);
        }
        Some(other) if other != "finalize" => return Err(not_served()),
        _ => {}
    }
    keep_status(kind, current, &mut next);
    if next.pointer("/metadata/managedFields").is_none()
        && let Some(fields) = current.pointer("/metadata/managedFields")
    {
        next["metadata"]["managedFields"] = fields.clone();
    }
    validate(kind, &next)?;
    patch::record_update(Some(current), &mut next, manager);
    Ok(next)
}

#[allow(clippy::too_many_arguments)]
fn replace(
    shared: &ApiShared,
    cluster: &str,
    kind: usize,
    namespace: &str,
    name: &str,
    sub: Option<&str>,
    q: &HashMap<String, String>,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<Response, ApiError> {
    let object = parse_body(headers, body)?;
    check_type(kind, &object)?;
    check_namespace(kind, &object, namespace)?;
    if meta(&object, "name") != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({}) does not match the name on the URL ({name})",
            meta(&object, "name")
        )));
    }
    let manager = manager(q, headers);
    let replaced = shared.with_store(cluster, |store| {
        let current = store
            .get(kind, namespace, name)
            .cloned()
            .ok_or_else(|| ApiError::not_found(kind, name))?;
        let mut next = finish_update(kind, &current, object.clone(), sub, &manager)?;
        next["metadata"]["resourceVersion"] = json!(meta(&object, "resourceVersion"));
        store.replace(kind, namespace, name, next)
    })?;
    shared.poke();
    Ok(json_response(200, &replaced))
}

#[allow(clippy::too_many_arguments)]
fn patch_object(
    shared: &ApiShared,
    cluster: &str,
    kind: usize,
    namespace: &str,
    name: &str,
    sub: Option<&str>,
    q: &HashMap<String, String>,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<Response, ApiError> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_string();
    let manager = manager(q, headers);
    let force = q.get("force").is_some_and(|f| f == "true");
    let (code, result) = shared.with_store(cluster, |store| -> Result<(u16, Value), ApiError> {
        let current = store.get(kind, namespace, name).cloned();
        if content_type == "application/apply-patch+yaml" {
            if !q.contains_key("fieldManager") {
                return Err(ApiError::bad_request("PATCH /apply: fieldManager must be set for apply requests"));
            }
            let applied: Value = serde_yaml::from_slice(body).map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
            check_type(kind, &applied)?;
            check_namespace(kind, &applied, namespace)?;
            if applied.get("apiVersion").is_none() || applied.get("kind").is_none() {
                return Err(ApiError::bad_request("apiVersion and kind must be set in an apply request"));
            }
            if !meta(&applied, "name").is_empty() && meta(&applied, "name") != name {
                return Err(ApiError::bad_request("the name of the object does not match the name on the URL"));
            }
            let Some(current) = current else {
                let mut fresh = applied.clone();
                fresh["metadata"]["name"] = json!(name);
                validate(kind, &fresh)?;
                let base = patch::apply(&json!({"metadata": {}}), &fresh, &manager, true)
                    .map_err(|_| ApiError::bad_request("cannot apply"))?;
                let mut start = fresh;
                start["metadata"]["managedFields"] = base["metadata"]["managedFields"].clone();
                let created = store.create_with(kind, namespace, start, |o| default_on_create(kind, o))?;
                return Ok((201, created));
            };
            let next = patch::apply(&current, &applied, &manager, force).map_err(|causes| {
                let listed: Vec<String> = causes.iter().map(|c| c.message.clone()).collect();
                ApiError {
                    details: Some(json!({"name": name, "group": KINDS[kind].group, "kind": KINDS[kind].plural,
                        "causes": causes.iter().map(|c| json!({"reason": c.reason, "message": c.message, "field": c.field})).collect::<Vec<_>>()})),
                    ..ApiError::new(409, "Conflict", format!("Apply failed with {} conflict{}: {}", causes.len(), if causes.len() == 1 { "" } else { "s" }, listed.join("\n")))
                }
            })?;
            let mut next = next;
            keep_status(kind, &current, &mut next);
            validate(kind, &next)?;
            next["metadata"]["resourceVersion"] = json!("");
            return Ok((200, store.replace(kind, namespace, name, next)?));
        }
        let current = current.ok_or_else(|| ApiError::not_found(kind, name))?;
        let patch_body: Value = serde_json::from_slice(body).map_err(|e| ApiError::bad_request(format!("invalid patch: {e}")))?;
        let mut next = current.clone();
        match content_type.as_str() {
            "application/merge-patch+json" => json_patch::merge(&mut next, &patch_body),
            "application/strategic-merge-patch+json" => patch::strategic_merge(&mut next, &patch_body),
            "application/json-patch+json" => {
                let ops: json_patch::Patch = serde_json::from_value(patch_body.clone()).map_err(|e| ApiError::bad_request(format!("invalid JSON patch: {e}")))?;
                json_patch::patch(&mut next, &ops).map_err(|e| ApiError::new(422, "Invalid", format!("the JSON patch cannot be applied: {e}")))?;
            }
            other => return Err(ApiError::new(415, "UnsupportedMediaType", format!("the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json (got {other:?})"))),
        }
        let asked_rv = patch_body.pointer("/metadata/resourceVersion").and_then(Value::as_str).unwrap_or_default().to_string();
        let mut next = finish_update(kind, &current, next, sub, &manager)?;
        next["metadata"]["resourceVersion"] = json!(asked_rv);
        Ok((200, store.replace(kind, namespace, name, next)?))
    })?;
    shared.poke();
    Ok(json_response(code, &result))
}

fn delete_options(q: &HashMap<String, String>, body: &Bytes) -> Result<DeleteOptions, ApiError> {
    let mut options = if body.is_empty() {
        DeleteOptions::default()
    } else {
        let value: Value = serde_json::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("invalid DeleteOptions: {e}")))?;
        DeleteOptions::from_body(&value)
    };
    if let Some(policy) = q.get("propagationPolicy") {
        options.propagation = policy.clone();
    }
    if !matches!(
        options.propagation.as_str(),
        "" | "Foreground" | "Background" | "Orphan"
    ) {
        return Err(ApiError::bad_request(format!(
            "unsupported propagationPolicy {:?}",
            options.propagation
        )));
    }
    Ok(options)
}

fn delete(
    shared: &ApiShared,
    cluster: &str,
    kind: usize,
    namespace: &str,
    name: &str,
    q: &HashMap<String, String>,
    body: &Bytes,
) -> Result<Response, ApiError> {
    let options = delete_options(q, body)?;
    let deleted = shared.with_store(cluster, |store| {
        store.delete(kind, namespace, name, &options)
    })?;
    shared.poke();
    let k = &KINDS[kind];
    Ok(match deleted {
        Deleted::Gone(object) => json_response(
            200,
            &json!({
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                "details": {"name": name, "group": k.group, "kind": k.plural, "uid": meta(&object, "uid")},
            }),
        ),
        Deleted::Pending(object) => json_response(202, &object),
    })
}

fn delete_collection(
    shared: &ApiShared,
    cluster: &str,
    kind: usize,
    namespace: Option<&str>,
    q: &HashMap<String, String>,
) -> Result<Response, ApiError> {
    let labels = LabelSelector::parse(q.get("labelSelector").map_or("", String::as_str))
        .map_err(ApiError::bad_request)?;
    let fields = FieldSelector::parse(q.get("fieldSelector").map_or("", String::as_str))
        .map_err(ApiError::bad_request)?;
    let options = delete_options(q, &Bytes::new())?;
    let k = &KINDS[kind];
    let items = shared.with_store(cluster, |store| {
        let keys: Vec<(String, String)> = store
            .list(kind, namespace)
            .into_iter()
            .filter(|o| labels.matches(o) && fields.matches(o))
            .map(|o| {
                (
                    meta(o, "namespace").to_string(),
                    meta(o, "name").to_string(),
                )
            })
            .collect();
        keys.into_iter()
            .filter_map(|(ns, n)| match store.delete(kind, &ns, &n, &options) {
                Ok(Deleted::Gone(o) | Deleted::Pending(o)) => Some(o),
                Err(_) => None,
            })
            .collect::<Vec<_>>()
    });
    shared.poke();
    Ok(json_response(
        200,
        &json!({"kind": format!("{}List", k.kind), "apiVersion": k.api_version(), "metadata": {}, "items": items}),
    ))
}

async fn logs(
    shared: &ApiShared,
    cluster: &str,
    namespace: &str,
    name: &str,
    q: &HashMap<String, String>,
) -> Result<Response, ApiError> {
    let pod = shared
        .with_store(cluster, |store| store.get(POD, namespace, name).cloned())
        .ok_or_else(|| ApiError::not_found(POD, name))?;
    let container = q.get("container").cloned().unwrap_or_default();
    let Some(source) = shared.kubelet_logs(meta(&pod, "uid"), &container) else {
        let shown = if container.is_empty() {
            pod.pointer("/spec/containers/0/name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        } else {
            container
        };
        return Err(ApiError::bad_request(format!(
            "container \"{shown}\" in pod \"{name}\" is waiting to start: ContainerCreating"
        )));
    };
    let follow = q.get("follow").is_some_and(|f| f == "true");
    let tail: Option<usize> = q.get("tailLines").and_then(|t| t.parse().ok());
    let snapshot = |from: usize| -> Vec<u8> {
        let out = source.output.lock().unwrap_or_else(|p| p.into_inner());
        out.log.get(from..).unwrap_or_default().to_vec()
    };
    let mut first = snapshot(0);
    if let Some(n) = tail {
        let lines: Vec<&[u8]> = first.split_inclusive(|b| *b == b'\n').collect();
        first = lines[lines.len().saturating_sub(n)..].concat();
    }
    let headers = [(header::CONTENT_TYPE, "text/plain")];
    if !follow {
        return Ok((StatusCode::OK, headers, first).into_response());
    }
    let sent = source
        .output
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .log
        .len();
    let done = source.done.clone();
    let output = source.output.clone();
    let stream = futures_util::stream::unfold(
        (Some(first), sent, false),
        move |(pending, sent, finished)| {
            let output = output.clone();
            let mut done = done.clone();
            async move {
                if let Some(bytes) = pending {
                    return Some((
                        Ok::<_, std::convert::Infallible>(Bytes::from(bytes)),
                        (None, sent, finished),
                    ));
                }
                loop {
                    let (fresh, len) = {
                        let out = output.lock().unwrap_or_else(|p| p.into_inner());
                        (
                            out.log.get(sent..).unwrap_or_default().to_vec(),
                            out.log.len(),
                        )
                    };
                    if !fresh.is_empty() {
                        return Some((Ok(Bytes::from(fresh)), (None, len, finished)));
                    }
                    if finished || *done.borrow() {
                        return None;
                    }
                    let _ = tokio::time::timeout(Duration::from_millis(100), done.changed()).await;
                }
            }
        },
    );
    Ok((StatusCode::OK, headers, Body::from_stream(stream)).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_collections_objects_and_subresources() {
        let t = |p: &str| parse_target(&p.split('/').filter(|s| !s.is_empty()).collect::<Vec<_>>());
        assert_eq!(
            t("api/v1/nodes").unwrap(),
            Target::Collection {
                kind: kinds::NODE,
                namespace: None
            }
        );
        assert_eq!(
            t("api/v1/namespaces").unwrap(),
            Target::Collection {
                kind: NAMESPACE,
                namespace: None
            }
        );
        assert_eq!(
            t("api/v1/namespaces/probe").unwrap(),
            Target::Object {
                kind: NAMESPACE,
                namespace: String::new(),
                name: "probe".into(),
                sub: None
            }
        );
        assert_eq!(
            t("api/v1/namespaces/probe/pods").unwrap(),
            Target::Collection {
                kind: POD,
                namespace: Some("probe".into())
            }
        );
        assert_eq!(
            t("api/v1/namespaces/a/pods/p/log").unwrap(),
            Target::Object {
                kind: POD,
                namespace: "a".into(),
                name: "p".into(),
                sub: Some("log".into())
            }
        );
        assert_eq!(
            t("apis/batch/v1/namespaces/a/jobs/j/status").unwrap(),
            Target::Object {
                kind: kinds::JOB,
                namespace: "a".into(),
                name: "j".into(),
                sub: Some("status".into())
            }
        );
        assert_eq!(
            t("api/v1/nodes/n").unwrap(),
            Target::Object {
                kind: kinds::NODE,
                namespace: String::new(),
                name: "n".into(),
                sub: None
            }
        );
        assert!(t("api/v1/namespaces/a/nodes").is_err());
        assert!(t("apis/unknown/v1/things").is_err());
    }
}
