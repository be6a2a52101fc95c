//! What runs inside a simulated cluster besides the kubelet ([`super::kubelet`]): the Job
//! controller, a scheduler and the garbage collector.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::kinds::{JOB, NODE, POD};
use super::select::LabelSelector;
use super::store::{ClusterStore, meta, now_rfc3339};
use super::validate::default_on_create;

fn quantity(text: &str) -> f64 {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let n: f64 = number.parse().unwrap_or(0.0);
    let factor = match suffix {
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "Ki" => 1024.0,
        "Mi" => 1024.0 * 1024.0,
        "Gi" => 1024.0 * 1024.0 * 1024.0,
        "Ti" => 1024f64.powi(4),
        _ => 1.0,
    };
    n * factor
}

/// A pod's requests; a resource with only a limit requests its limit, as the API defaults it.
fn requests(pod: &Value) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for c in pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let mut merged = c
            .pointer("/resources/limits")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        for (k, v) in c
            .pointer("/resources/requests")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            merged.insert(k.clone(), v.clone());
        }
        for (k, v) in merged {
            *out.entry(k).or_insert(0.0) += quantity(v.as_str().unwrap_or("0"));
        }
    }
    out
}

fn is_ready(node: &Value) -> bool {
    node.pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True")
}

fn terms_match(node: &Value, term: &Value) -> bool {
    let labels = node.pointer("/metadata/labels");
    let label = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
    let check = |value: Option<&str>, expr: &Value| {
        let values: Vec<&str> = expr["values"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        match expr["operator"].as_str() {
            Some("In") => value.is_some_and(|v| values.contains(&v)),
            Some("NotIn") => !value.is_some_and(|v| values.contains(&v)),
            Some("Exists") => value.is_some(),
            Some("DoesNotExist") => value.is_none(),
            _ => false,
        }
    };
    let expressions = term["matchExpressions"].as_array().into_iter().flatten();
    let fields = term["matchFields"].as_array().into_iter().flatten();
    expressions
        .clone()
        .all(|e| check(label(e["key"].as_str().unwrap_or_default()), e))
        && fields.clone().all(|e| {
            let value = match e["key"].as_str() {
                Some("metadata.name") => Some(meta(node, "name")),
                _ => None,
            };
            check(value, e)
        })
        && (expressions.count() + fields.count() > 0)
}

fn tolerates(pod: &Value, taint: &Value) -> bool {
    if taint["effect"] == "PreferNoSchedule" {
        return true;
    }
    pod.pointer("/spec/tolerations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|t| {
            let key_ok = t["key"].as_str().is_none_or(str::is_empty) && t["operator"] == "Exists"
                || t["key"] == taint["key"];
            let value_ok = t["operator"] == "Exists" || t["value"] == taint["value"];
            let effect_ok =
                t["effect"].as_str().is_none_or(str::is_empty) || t["effect"] == taint["effect"];
            key_ok && value_ok && effect_ok
        })
}

/// Why `node` cannot take `pod`, or `None` when it can.
fn unfit(store: &ClusterStore, pod: &Value, node: &Value) -> Option<&'static str> {
    if !is_ready(node) {
        return Some("node(s) were not ready");
    }
    if let Some(selector) = pod.pointer("/spec/nodeSelector").and_then(Value::as_object) {
        let labels = node.pointer("/metadata/labels");
        if !selector
            .iter()
            .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
        {
            return Some("node(s) didn't match Pod's node affinity/selector");
        }
    }
    if let Some(terms) = pod
        .pointer("/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms")
        .and_then(Value::as_array)
        && !terms.iter().any(|t| terms_match(node, t))
    {
        return Some("node(s) didn't match Pod's node affinity/selector");
    }
    if node
        .pointer("/spec/taints")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|t| !tolerates(pod, t))
    {
        return Some("node(s) had untolerated taint");
    }
    let mut used: BTreeMap<String, f64> = BTreeMap::new();
    for other in store.list(POD, None) {
        let phase = other.pointer("/status/phase").and_then(Value::as_str);
        if other.pointer("/spec/nodeName") == node.pointer("/metadata/name")
            && !matches!(phase, Some("Succeeded" | "Failed"))
        {
            for (k, v) in requests(other) {
                *used.entry(k).or_insert(0.0) += v;
            }
        }
    }
    for (resource, want) in requests(pod) {
        let have = node
            .pointer(&format!(
                "/status/allocatable/{}",
                resource.replace('/', "~1")
            ))
            .and_then(Value::as_str)
            .map_or(0.0, quantity);
        if used.get(&resource).copied().unwrap_or(0.0) + want > have + 1e-9 {
            return Some("Insufficient resources");
        }
    }
    None
}

pub(super) fn set_condition(
    object: &mut Value,
    kind: &str,
    status: &str,
    reason: &str,
    message: &str,
) {
    let now = now_rfc3339();
    let conditions = &mut object["status"]["conditions"];
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    let list = conditions.as_array_mut().expect("array");
    let condition = json!({
        "type": kind, "status": status, "reason": reason, "message": message,
        "lastTransitionTime": now, "lastProbeTime": null,
    });
    match list.iter_mut().find(|c| c["type"] == kind) {
        Some(existing) if existing["status"] == status && existing["reason"] == reason => {}
        Some(existing) => *existing = condition,
        None => list.push(condition),
    }
}

fn condition_true(object: &Value, kind: &str) -> bool {
    object
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| c["type"] == kind && c["status"] == "True")
}

pub(super) fn deleting(object: &Value) -> bool {
    object.pointer("/metadata/deletionTimestamp").is_some()
}

/// Background garbage collection and foreground deletion.
pub(super) fn collect_garbage(store: &mut ClusterStore) {
    for (kind, ns, name) in store.keys() {
        let Some(object) = store.get(kind, &ns, &name).cloned() else {
            continue;
        };
        let owners: Vec<&str> = object
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|r| r["uid"].as_str())
            .collect();
        if !owners.is_empty() && owners.iter().all(|uid| !store.has_uid(uid)) {
            store.remove(kind, &ns, &name);
            continue;
        }
        let waiting = object
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|f| f.iter().any(|x| x == "foregroundDeletion"));
        if deleting(&object) && waiting {
            let dependents = store.dependents(meta(&object, "uid"));
            if dependents.is_empty() {
                store.remove(kind, &ns, &name);
            } else {
                for (k, n_ns, n) in dependents {
                    store.remove(k, &n_ns, &n);
                }
            }
        }
    }
}

fn pods_of<'a>(store: &'a ClusterStore, job: &Value) -> Vec<&'a Value> {
    let uid = meta(job, "uid");
    store
        .list(POD, Some(meta(job, "namespace")))
        .into_iter()
        .filter(|p| {
            p.pointer("/metadata/ownerReferences")
                .and_then(Value::as_array)
                .is_some_and(|refs| refs.iter().any(|r| r["uid"] == uid))
        })
        .collect()
}

pub(super) fn run_jobs(store: &mut ClusterStore) {
    let jobs: Vec<Value> = store.list(JOB, None).into_iter().cloned().collect();
    for mut job in jobs {
        if deleting(&job) || condition_true(&job, "Complete") || condition_true(&job, "Failed") {
            continue;
        }
        if job.pointer("/spec/suspend") == Some(&json!(true)) {
            continue;
        }
        let spec_n = |field: &str, default: i64| {
            job.pointer(&format!("/spec/{field}"))
                .and_then(Value::as_i64)
                .unwrap_or(default)
        };
        let (completions, parallelism, backoff) = (
            spec_n("completions", 1),
            spec_n("parallelism", 1),
            spec_n("backoffLimit", 6),
        );
        let pods = pods_of(store, &job);
        let phase = |p: &Value| {
            p.pointer("/status/phase")
                .and_then(Value::as_str)
                .unwrap_or("Pending")
                .to_string()
        };
        let succeeded = pods.iter().filter(|p| phase(p) == "Succeeded").count() as i64;
        let failed = pods.iter().filter(|p| phase(p) == "Failed").count() as i64;
        let active = pods.len() as i64 - succeeded - failed;
        let ns = meta(&job, "namespace").to_string();
        if job.pointer("/status/startTime").is_none() {
            job["status"]["startTime"] = json!(now_rfc3339());
        }
        if succeeded >= completions {
            set_condition(
                &mut job,
                "SuccessCriteriaMet",
                "True",
                "CompletionsReached",
                "Reached expected number of succeeded pods",
            );
            set_condition(
                &mut job,
                "Complete",
                "True",
                "CompletionsReached",
                "Reached expected number of succeeded pods",
            );
            job["status"]["completionTime"] = json!(now_rfc3339());
        } else if failed > backoff {
            set_condition(
                &mut job,
                "FailureTarget",
                "True",
                "BackoffLimitExceeded",
                "Job has reached the specified backoff limit",
            );
            set_condition(
                &mut job,
                "Failed",
                "True",
                "BackoffLimitExceeded",
                "Job has reached the specified backoff limit",
            );
        } else {
            let wanted = parallelism.min(completions - succeeded) - active;
            let template = job.pointer("/spec/template").cloned().unwrap_or(json!({}));
            for _ in 0..wanted.max(0) {
                let mut pod = json!({
                    "metadata": template.get("metadata").cloned().unwrap_or(json!({})),
                    "spec": template.get("spec").cloned().unwrap_or(json!({})),
                });
                let m = &mut pod["metadata"];
                m["generateName"] = json!(format!("{}-", meta(&job, "name")));
                m["ownerReferences"] = json!([{
                    "apiVersion": "batch/v1", "kind": "Job", "name": meta(&job, "name"),
                    "uid": meta(&job, "uid"), "controller": true, "blockOwnerDeletion": true,
                }]);
                default_on_create(POD, &mut pod);
                let _ = store.create(POD, &ns, pod);
            }
        }
        let active_now = pods_of(store, &job)
            .iter()
            .filter(|p| !matches!(phase(p).as_str(), "Succeeded" | "Failed"))
            .count();
        let status = &mut job["status"];
        status["active"] = json!(active_now);
        status["succeeded"] = json!(succeeded);
        status["failed"] = json!(failed);
        status["ready"] = json!(0);
        status["terminating"] = json!(0);
        status["uncountedTerminatedPods"] = json!({});
        store.put(JOB, job);
    }
}

pub(super) fn schedule(store: &mut ClusterStore) {
    let pending: Vec<Value> = store
        .list(POD, None)
        .into_iter()
        .filter(|p| {
            p.pointer("/spec/nodeName")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
                && !deleting(p)
                && p.pointer("/status/phase").and_then(Value::as_str) == Some("Pending")
        })
        .cloned()
        .collect();
    for mut pod in pending {
        let nodes: Vec<Value> = store.list(NODE, None).into_iter().cloned().collect();
        let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
        let chosen = nodes.iter().find(|n| match unfit(store, &pod, n) {
            None => true,
            Some(reason) => {
                *reasons.entry(reason).or_insert(0) += 1;
                false
            }
        });
        match chosen {
            Some(node) => {
                pod["spec"]["nodeName"] = json!(meta(node, "name"));
                set_condition(&mut pod, "PodScheduled", "True", "", "");
            }
            None => {
                let why: Vec<String> = reasons.iter().map(|(r, n)| format!("{n} {r}")).collect();
                let message = format!("0/{} nodes are available: {}.", nodes.len(), why.join(", "));
                set_condition(&mut pod, "PodScheduled", "False", "Unschedulable", &message);
            }
        }
        store.put(POD, pod);
    }
}

/// Pods a label selector picks in a namespace (the log endpoint's `job/NAME` needs none).
pub fn select_pods<'a>(
    store: &'a ClusterStore,
    namespace: &str,
    selector: &LabelSelector,
) -> Vec<&'a Value> {
    store
        .list(POD, Some(namespace))
        .into_iter()
        .filter(|p| selector.matches(p))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_parse_in_base_units() {
        assert_eq!(quantity("500m"), 0.5);
        assert_eq!(quantity("2"), 2.0);
        assert_eq!(quantity("1Gi"), 1024.0 * 1024.0 * 1024.0);
    }
}
