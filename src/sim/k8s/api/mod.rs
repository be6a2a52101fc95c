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

mod discovery;
mod reads;
mod tables;
mod writes;

use discovery::{api_group, discovery_resources, openapi};
use reads::{list, logs, watch};
use tables::{table, wants_table};
use writes::{create, delete, delete_collection, patch_object, replace};

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

/// A write to one object (`PUT` or `PATCH`): what the write handlers read.
#[derive(Clone, Copy)]
struct ObjectWrite<'a> {
    kind: usize,
    namespace: &'a str,
    name: &'a str,
    sub: Option<&'a str>,
    q: &'a HashMap<String, String>,
    headers: &'a HeaderMap,
    body: &'a Bytes,
}

/// The `labelSelector` and `fieldSelector` of a list, watch or collection delete.
fn selectors(q: &HashMap<String, String>) -> Result<(LabelSelector, FieldSelector), ApiError> {
    let text = |key: &str| q.get(key).map_or("", String::as_str);
    Ok((
        LabelSelector::parse(text("labelSelector")).map_err(ApiError::bad_request)?,
        FieldSelector::parse(text("fieldSelector")).map_err(ApiError::bad_request)?,
    ))
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
    shared.service.count_kube_request(method.as_str());
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
            &Method::PUT | &Method::PATCH,
            Target::Object {
                kind,
                namespace,
                name,
                sub,
            },
        ) => {
            let write = ObjectWrite {
                kind,
                namespace: &namespace,
                name: &name,
                sub: sub.as_deref(),
                q: &q,
                headers: &headers,
                body: &body,
            };
            if method == Method::PUT {
                replace(&shared, cluster, write)
            } else {
                patch_object(&shared, cluster, write)
            }
        }
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
