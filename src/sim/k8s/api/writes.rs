//! Writes: create, replace, patch (merge, strategic, JSON, server-side apply) and delete.

use super::*;
pub(super) fn create(
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
pub(super) fn keep_status(kind: usize, current: &Value, next: &mut Value) {
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

pub(super) fn finish_update(
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

pub(super) fn replace(
    shared: &ApiShared,
    cluster: &str,
    write: ObjectWrite<'_>,
) -> Result<Response, ApiError> {
    let ObjectWrite {
        kind,
        namespace,
        name,
        sub,
        q,
        headers,
        body,
    } = write;
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

pub(super) fn patch_object(
    shared: &ApiShared,
    cluster: &str,
    write: ObjectWrite<'_>,
) -> Result<Response, ApiError> {
    let ObjectWrite {
        kind,
        namespace,
        name,
        sub,
        q,
        headers,
        body,
    } = write;
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

pub(super) fn delete_options(
    q: &HashMap<String, String>,
    body: &Bytes,
) -> Result<DeleteOptions, ApiError> {
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

pub(super) fn delete(
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

pub(super) fn delete_collection(
    shared: &ApiShared,
    cluster: &str,
    kind: usize,
    namespace: Option<&str>,
    q: &HashMap<String, String>,
) -> Result<Response, ApiError> {
    let (labels, fields) = selectors(q)?;
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
