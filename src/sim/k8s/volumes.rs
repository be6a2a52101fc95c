//! Claims and volumes of the shared-filesystem CSI driver, played: a claim of a class whose
//! provisioner is `mounted-fs-path.csi.nebius.ai` binds, once the driver runs, to a new
//! volume `pvc-<claim uid>` (its handle the same), whose data lives under the driver's
//! `--data-dir` in the filestore every node shares; a volume whose claim is gone is reclaimed
//! as its policy says, and with `Delete` its data goes too. Other classes leave claims pending.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::kinds::{DAEMON_SET, STORAGE_CLASS};
use super::store::{ClusterStore, meta};

pub const DRIVER: &str = "mounted-fs-path.csi.nebius.ai";
const PVC: usize = 8;
const PV: usize = 9;
const DEFAULT_CLASS: &str = "storageclass.kubernetes.io~1is-default-class";

/// The driver's data directory on every node (`--data-dir=` of its node plugin), when it runs.
pub fn data_dir(store: &ClusterStore) -> Option<String> {
    store.list(DAEMON_SET, None).into_iter().find_map(|ds| {
        let ready = ds
            .pointer("/status/numberReady")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let args = ds
            .pointer("/spec/template/spec/containers")?
            .as_array()?
            .iter()
            .flat_map(|c| c["args"].as_array().cloned().unwrap_or_default());
        let mut dir = None;
        let mut serves = false;
        for a in args {
            let a = a.as_str().unwrap_or_default().to_string();
            if let Some(d) = a.strip_prefix("--data-dir=") {
                dir = Some(d.trim_end_matches('/').to_string());
            }
            if a.contains(&format!("/plugins/{DRIVER}/")) {
                serves = true;
            }
        }
        (ready > 0 && serves).then_some(dir).flatten()
    })
}

fn class_of<'a>(store: &'a ClusterStore, claim: &Value) -> Option<&'a Value> {
    match claim
        .pointer("/spec/storageClassName")
        .and_then(Value::as_str)
    {
        Some(name) => store.get(STORAGE_CLASS, "", name),
        None => store.list(STORAGE_CLASS, None).into_iter().find(|sc| {
            sc.pointer(&format!("/metadata/annotations/{DEFAULT_CLASS}")) == Some(&json!("true"))
        }),
    }
}

/// Binds claims the driver can serve; reclaims volumes whose claim is gone.
pub fn provision(store: &mut ClusterStore) {
    let driver_up = data_dir(store).is_some();
    let claims: Vec<Value> = store.list(PVC, None).into_iter().cloned().collect();
    for claim in &claims {
        if claim
            .pointer("/spec/volumeName")
            .and_then(Value::as_str)
            .is_some_and(|v| !v.is_empty())
            || !meta(claim, "deletionTimestamp").is_empty()
        {
            continue;
        }
        let Some(class) = class_of(store, claim).cloned() else {
            continue;
        };
        if class["provisioner"] != DRIVER || !driver_up {
            continue;
        }
        let uid = meta(claim, "uid").to_string();
        let name = format!("pvc-{uid}");
        let request = claim
            .pointer("/spec/resources/requests/storage")
            .cloned()
            .unwrap_or(json!("1Gi"));
        let modes = claim
            .pointer("/spec/accessModes")
            .cloned()
            .unwrap_or(json!([]));
        let pv = json!({
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": name, "annotations": {"pv.kubernetes.io/provisioned-by": DRIVER}},
            "spec": {
                "capacity": {"storage": request},
                "accessModes": modes,
                "persistentVolumeReclaimPolicy": class["reclaimPolicy"].as_str().unwrap_or("Delete"),
                "storageClassName": meta(&class, "name"),
                "csi": {"driver": DRIVER, "volumeHandle": name},
                "claimRef": {"kind": "PersistentVolumeClaim", "namespace": meta(claim, "namespace"),
                    "name": meta(claim, "name"), "uid": uid},
            },
            "status": {"phase": "Bound"},
        });
        if store.get(PV, "", &name).is_none() && store.create(PV, "", pv).is_err() {
            continue;
        }
        let mut bound = claim.clone();
        bound["spec"]["volumeName"] = json!(name);
        bound["spec"]["storageClassName"] = json!(meta(&class, "name"));
        bound["status"] =
            json!({"phase": "Bound", "accessModes": modes, "capacity": {"storage": request}});
        store.put(PVC, bound);
    }
    let live: Vec<String> = claims.iter().map(|c| meta(c, "uid").to_string()).collect();
    let released: Vec<(String, String)> = store
        .list(PV, None)
        .into_iter()
        .filter(|pv| {
            pv.pointer("/spec/claimRef/uid")
                .and_then(Value::as_str)
                .is_some_and(|uid| !live.iter().any(|l| l == uid))
        })
        .map(|pv| {
            (
                meta(pv, "name").to_string(),
                pv.pointer("/spec/persistentVolumeReclaimPolicy")
                    .and_then(Value::as_str)
                    .unwrap_or("Retain")
                    .to_string(),
            )
        })
        .collect();
    for (name, policy) in released {
        if policy == "Delete" {
            store.remove(PV, "", &name);
        } else if let Some(mut pv) = store.get(PV, "", &name).cloned()
            && pv["status"]["phase"] != "Released"
        {
            pv["status"]["phase"] = json!("Released");
            store.put(PV, pv);
        }
    }
}

/// Where a pod's claim volume is on a node: the volume's data directory under the driver's
/// data directory, in the node's host. `None` while the claim is unbound or not the driver's.
pub fn claim_path(
    store: &ClusterStore,
    namespace: &str,
    claim: &str,
    node_dir: &Path,
) -> Option<PathBuf> {
    let pvc = store.get(PVC, namespace, claim)?;
    let volume = pvc.pointer("/spec/volumeName")?.as_str()?;
    let pv = store.get(PV, "", volume)?;
    if pv.pointer("/spec/csi/driver") != Some(&json!(DRIVER)) {
        return None;
    }
    let handle = pv.pointer("/spec/csi/volumeHandle")?.as_str()?;
    let data = data_dir(store)?;
    Some(node_dir.join(data.trim_start_matches('/')).join(handle))
}

/// Data directories of volumes that no longer exist, under a node's view of the driver's
/// data directory: what the driver's reclaim removes.
pub fn orphaned_data(store: &ClusterStore, node_dir: &Path) -> Vec<PathBuf> {
    let Some(data) = data_dir(store) else {
        return Vec::new();
    };
    let root = node_dir.join(data.trim_start_matches('/'));
    let Ok(entries) = std::fs::read_dir(&root) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            name.starts_with("pvc-") && store.get(PV, "", name).is_none()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store_with_driver() -> ClusterStore {
        let mut store = ClusterStore::new();
        store
            .create(
                STORAGE_CLASS,
                "",
                json!({"metadata": {"name": "csi-mounted-fs-path-sc",
                "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
                "provisioner": DRIVER, "reclaimPolicy": "Delete"}),
            )
            .unwrap();
        let mut ds = store
            .create(DAEMON_SET, "kube-system", json!({"metadata": {"name": "csi"},
                "spec": {"template": {"spec": {"containers": [{"name": "d", "args": [
                    format!("--kubelet-registration-path=/var/lib/kubelet/plugins/{DRIVER}/csi.sock"),
                    "--data-dir=/mnt/data/csi-mounted-fs-path-data/"]}]}}}}))
            .unwrap();
        ds["status"] = json!({"numberReady": 1});
        store.put(DAEMON_SET, ds);
        store
    }

    #[test]
    fn a_claim_binds_to_its_own_volume_and_the_volume_goes_with_it() {
        let mut store = store_with_driver();
        let claim = store
            .create(
                PVC,
                "default",
                json!({"metadata": {"name": "c"}, "spec": {
                "accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "1Gi"}}}}),
            )
            .unwrap();
        provision(&mut store);
        let bound = store.get(PVC, "default", "c").unwrap().clone();
        let volume = bound["spec"]["volumeName"].as_str().unwrap().to_string();
        assert_eq!(volume, format!("pvc-{}", meta(&claim, "uid")));
        let pv = store.get(PV, "", &volume).unwrap();
        assert_eq!(pv["spec"]["claimRef"]["uid"], meta(&claim, "uid"));
        assert_eq!(pv["spec"]["persistentVolumeReclaimPolicy"], "Delete");
        assert_eq!(
            claim_path(&store, "default", "c", Path::new("/n")).unwrap(),
            Path::new("/n/mnt/data/csi-mounted-fs-path-data").join(&volume)
        );
        store.remove(PVC, "default", "c");
        provision(&mut store);
        assert!(store.get(PV, "", &volume).is_none());
    }

    #[test]
    fn without_the_driver_a_claim_stays_pending() {
        let mut store = store_with_driver();
        let mut ds = store.get(DAEMON_SET, "kube-system", "csi").unwrap().clone();
        ds["status"] = json!({"numberReady": 0});
        store.put(DAEMON_SET, ds);
        store
            .create(
                PVC,
                "default",
                json!({"metadata": {"name": "c"}, "spec": {"accessModes": ["ReadWriteMany"]}}),
            )
            .unwrap();
        provision(&mut store);
        assert!(
            store
                .get(PVC, "default", "c")
                .unwrap()
                .pointer("/spec/volumeName")
                .is_none()
        );
    }
}
