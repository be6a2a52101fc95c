//! The checks verify-storage makes on what a cluster's API says before any probe runs
//! (fleet-engine §7.1 pass criteria 1 and 2): the workers are exactly the declared ones, each
//! Ready, schedulable, with a boot ID and one matching pool; the filestore's class is the only
//! default, with its provisioner and reclaim policy; its CSI driver is registered, on every
//! worker, and its node plugin runs ready on every worker at its current generation.

use std::collections::BTreeSet;

use serde_json::Value;

use super::storage_report::{Category, Role};
use crate::clusters::Node;

/// A declared pool: how its workers are labelled, and how many there must be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pool {
    pub role: Role,
    pub platform: String,
    pub preset: String,
    pub count: i64,
}

/// The pool a node belongs to: exactly one must match its platform and preset labels.
fn role_of(node: &Node, pools: &[Pool]) -> Option<Role> {
    let label = |k: &str| node.labels.get(k).map(String::as_str).unwrap_or_default();
    let matching: Vec<&Pool> = pools
        .iter()
        .filter(|p| {
            label("node.kubernetes.io/instance-type") == p.platform
                && label("nebius.com/resource-preset") == p.preset
        })
        .collect();
    match matching.as_slice() {
        [one] => Some(one.role),
        _ => None,
    }
}

/// The workers' categories, and each worker's role in node order (`None`: no single pool).
pub fn judge_workers(nodes: &[Node], pools: &[Pool]) -> (BTreeSet<Category>, Vec<Option<Role>>) {
    let mut out = BTreeSet::new();
    let wanted: i64 = pools.iter().map(|p| p.count).sum();
    if nodes.len() as i64 != wanted {
        out.insert(Category::WorkerCountMismatch);
    }
    let roles: Vec<Option<Role>> = nodes.iter().map(|n| role_of(n, pools)).collect();
    if roles.iter().any(Option::is_none) {
        out.insert(Category::WorkerShapeMismatch);
    }
    for pool in pools {
        let have = roles.iter().filter(|r| **r == Some(pool.role)).count() as i64;
        let want: i64 = pools
            .iter()
            .filter(|p| p.role == pool.role)
            .map(|p| p.count)
            .sum();
        if have != want {
            out.insert(Category::WorkerCountMismatch);
        }
    }
    for node in nodes {
        let cordoned = node
            .taints
            .iter()
            .any(|t| t.starts_with("node.kubernetes.io/unschedulable"));
        if !node.ready || cordoned {
            out.insert(Category::WorkerUnhealthy);
        }
        if node.boot_id.is_empty() {
            out.insert(Category::WorkerBootIdentityMissing);
        }
    }
    (out, roles)
}

/// What the CSI checks read.
#[derive(Debug, Clone, Default)]
pub struct CsiState {
    pub storage_classes: Vec<Value>,
    pub driver_registered: bool,
    /// Node name → the CSI drivers its CSINode lists.
    pub registrations: Vec<(String, Vec<String>)>,
    /// The node plugin's DaemonSet, if it exists.
    pub daemon_set: Option<Value>,
    /// Its pods.
    pub pods: Vec<Value>,
}

fn is_default(sc: &Value) -> bool {
    sc.pointer("/metadata/annotations/storageclass.kubernetes.io~1is-default-class")
        .and_then(Value::as_str)
        == Some("true")
}

fn ready(pod: &Value) -> bool {
    pod.pointer("/status/phase") == Some(&Value::from("Running"))
        && pod
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
}

/// The filestore's class and CSI driver, on every worker in `nodes`.
pub fn judge_csi(
    state: &CsiState,
    nodes: &[Node],
    class: &str,
    driver: &str,
) -> BTreeSet<Category> {
    let mut out = BTreeSet::new();
    let defaults: Vec<&Value> = state
        .storage_classes
        .iter()
        .filter(|sc| is_default(sc))
        .collect();
    let default_name = |sc: &Value| {
        sc.pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    if defaults.len() != 1 || default_name(defaults[0]) != class {
        out.insert(Category::DefaultStorageClassMismatch);
    }
    match state
        .storage_classes
        .iter()
        .find(|sc| default_name(sc) == class)
    {
        Some(sc) if sc["provisioner"] == driver && sc["reclaimPolicy"] == "Delete" => {}
        _ => {
            out.insert(Category::StorageClassPolicyMismatch);
        }
    }
    if !state.driver_registered {
        out.insert(Category::CsiDriverMismatch);
    }
    for node in nodes {
        let registered = state
            .registrations
            .iter()
            .any(|(n, drivers)| *n == node.name && drivers.iter().any(|d| d == driver));
        if !registered {
            out.insert(Category::CsiWorkerRegistrationMissing);
        }
    }
    let Some(ds) = &state.daemon_set else {
        out.insert(Category::CsiWorkloadUnhealthy);
        return out;
    };
    let n = |f: &str| {
        ds.pointer(&format!("/status/{f}"))
            .and_then(Value::as_i64)
            .unwrap_or(-1)
    };
    let generation = ds
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if n("observedGeneration") < generation
        || n("updatedNumberScheduled") != n("desiredNumberScheduled")
    {
        out.insert(Category::CsiGenerationUnhealthy);
    }
    let uid = ds
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default();
    for node in nodes {
        let on_node: Vec<&Value> = state
            .pods
            .iter()
            .filter(|p| {
                p.pointer("/spec/nodeName").and_then(Value::as_str) == Some(node.name.as_str())
            })
            .collect();
        if on_node.is_empty() {
            out.insert(Category::CsiWorkerWorkloadMissing);
        }
        for pod in on_node {
            let owner = pod
                .pointer("/metadata/ownerReferences/0/uid")
                .and_then(Value::as_str);
            if owner != Some(uid) {
                out.insert(Category::CsiOwnerMismatch);
            }
            if !ready(pod) {
                out.insert(Category::CsiWorkloadUnhealthy);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(name: &str, platform: &str, preset: &str) -> Node {
        Node {
            name: name.into(),
            uid: format!("uid-{name}"),
            ready: true,
            labels: [
                (
                    "node.kubernetes.io/instance-type".to_string(),
                    platform.to_string(),
                ),
                ("nebius.com/resource-preset".to_string(), preset.to_string()),
            ]
            .into(),
            allocatable: Default::default(),
            taints: Vec::new(),
            boot_id: format!("boot-{name}"),
        }
    }

    fn pools() -> Vec<Pool> {
        vec![
            Pool {
                role: Role::Cpu,
                platform: "cpu-d3".into(),
                preset: "16vcpu-64gb".into(),
                count: 2,
            },
            Pool {
                role: Role::Gpu,
                platform: "gpu-rtx6000".into(),
                preset: "1gpu-24vcpu-218gb".into(),
                count: 1,
            },
        ]
    }

    fn workers() -> Vec<Node> {
        vec![
            node("a", "cpu-d3", "16vcpu-64gb"),
            node("b", "cpu-d3", "16vcpu-64gb"),
            node("g", "gpu-rtx6000", "1gpu-24vcpu-218gb"),
        ]
    }

    #[test]
    fn workers_must_be_exactly_the_declared_pools_and_healthy() {
        let (bad, roles) = judge_workers(&workers(), &pools());
        assert!(bad.is_empty(), "{bad:?}");
        assert_eq!(roles, [Some(Role::Cpu), Some(Role::Cpu), Some(Role::Gpu)]);
        let (bad, _) = judge_workers(&workers()[..2], &pools());
        assert!(bad.contains(&Category::WorkerCountMismatch));
        let mut odd = workers();
        odd[2] = node("g", "gpu-rtx6000", "8gpu-192vcpu-1744gb");
        assert!(
            judge_workers(&odd, &pools())
                .0
                .contains(&Category::WorkerShapeMismatch)
        );
        let mut sick = workers();
        sick[0].ready = false;
        sick[1].boot_id.clear();
        let (bad, _) = judge_workers(&sick, &pools());
        assert!(
            bad.contains(&Category::WorkerUnhealthy)
                && bad.contains(&Category::WorkerBootIdentityMissing)
        );
    }

    fn csi() -> CsiState {
        let driver = "mounted-fs-path.csi.nebius.ai";
        CsiState {
            storage_classes: vec![
                json!({"metadata": {"name": "csi-mounted-fs-path-sc", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}}, "provisioner": driver, "reclaimPolicy": "Delete"}),
                json!({"metadata": {"name": "compute-csi-default-sc", "annotations": {"storageclass.kubernetes.io/is-default-class": "false"}}, "provisioner": "compute.csi.mk8s.nebius.ai", "reclaimPolicy": "Delete"}),
            ],
            driver_registered: true,
            registrations: ["a", "b", "g"].iter().map(|n| (n.to_string(), vec![driver.to_string()])).collect(),
            daemon_set: Some(json!({"metadata": {"uid": "ds", "generation": 2},
                "status": {"observedGeneration": 2, "desiredNumberScheduled": 3, "updatedNumberScheduled": 3}})),
            pods: ["a", "b", "g"]
                .iter()
                .map(|n| json!({"metadata": {"ownerReferences": [{"uid": "ds"}]}, "spec": {"nodeName": n},
                    "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}))
                .collect(),
        }
    }

    #[test]
    fn the_filestore_class_and_driver_must_serve_every_worker() {
        let (class, driver) = ("csi-mounted-fs-path-sc", "mounted-fs-path.csi.nebius.ai");
        assert!(judge_csi(&csi(), &workers(), class, driver).is_empty());
        let mut two_defaults = csi();
        two_defaults.storage_classes[1]["metadata"]["annotations"]["storageclass.kubernetes.io/is-default-class"] =
            json!("true");
        assert_eq!(
            judge_csi(&two_defaults, &workers(), class, driver),
            [Category::DefaultStorageClassMismatch].into()
        );
        let mut retained = csi();
        retained.storage_classes[0]["reclaimPolicy"] = json!("Retain");
        assert_eq!(
            judge_csi(&retained, &workers(), class, driver),
            [Category::StorageClassPolicyMismatch].into()
        );
        let mut unregistered = csi();
        unregistered.registrations.pop();
        unregistered.driver_registered = false;
        let bad = judge_csi(&unregistered, &workers(), class, driver);
        assert!(
            bad.contains(&Category::CsiWorkerRegistrationMissing)
                && bad.contains(&Category::CsiDriverMismatch)
        );
        let mut missing = csi();
        missing.pods.pop();
        missing.pods[0]["status"]["phase"] = json!("Pending");
        missing.pods[1]["metadata"]["ownerReferences"][0]["uid"] = json!("other");
        let bad = judge_csi(&missing, &workers(), class, driver);
        assert_eq!(
            bad,
            [
                Category::CsiWorkloadUnhealthy,
                Category::CsiWorkerWorkloadMissing,
                Category::CsiOwnerMismatch
            ]
            .into()
        );
        let mut rolling = csi();
        rolling.daemon_set.as_mut().unwrap()["status"]["observedGeneration"] = json!(1);
        assert_eq!(
            judge_csi(&rolling, &workers(), class, driver),
            [Category::CsiGenerationUnhealthy].into()
        );
    }
}
