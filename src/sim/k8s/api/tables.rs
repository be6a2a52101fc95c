//! Server-side printing: the `Table` form `kubectl get` asks for.

use super::*;
/// `kubectl get`'s columns: the server prints, as a real API server does (`as=Table`).
pub(super) fn wants_table(headers: &HeaderMap) -> bool {
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
pub(super) fn age(object: &Value) -> String {
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

pub(super) fn columns_and_cells(kind: usize, object: &Value) -> (Vec<&'static str>, Vec<Value>) {
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

pub(super) fn table(kind: usize, objects: &[Value], resource_version: u64) -> Value {
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
