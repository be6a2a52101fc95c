//! Reads: lists with selectors and pages, watches from a version, and container logs.

use super::*;
pub(super) fn list(
    shared: &ApiShared,
    cluster: &str,
    kind: usize,
    namespace: Option<&str>,
    q: &HashMap<String, String>,
    as_table: bool,
) -> Result<Response, ApiError> {
    let (labels, fields) = selectors(q)?;
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

pub(super) fn event_line(action: &str, object: &Value) -> Bytes {
    let mut line = json!({"type": action, "object": object}).to_string();
    line.push('\n');
    Bytes::from(line)
}

pub(super) fn watch(
    shared: &ApiShared,
    cluster: &str,
    kind: usize,
    namespace: Option<String>,
    q: &HashMap<String, String>,
) -> Result<Response, ApiError> {
    let (labels, fields) = selectors(q)?;
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

pub(super) async fn logs(
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
