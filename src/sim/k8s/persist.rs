//! The simulated clusters' API objects kept beside the simulator's own state, so a cluster
//! deployed by one `fleetbot` command still has its add-ons, classes and CSI objects when the
//! next command (a status, a verification) starts the embedded simulator again. Pods and
//! events are not kept: their processes ended with the simulator, and the controllers make
//! the workloads' pods again.

use std::collections::HashMap;
use std::path::Path;

use serde_json::{Value, json};

use super::kinds::{KINDS, POD, find};
use super::store::ClusterStore;

/// Cluster ID → its objects.
pub fn snapshot<'a>(clusters: impl Iterator<Item = (&'a String, &'a ClusterStore)>) -> Value {
    let mut out = serde_json::Map::new();
    for (id, store) in clusters {
        let objects: Vec<Value> = store
            .all()
            .filter(|(kind, _, _)| *kind != POD && KINDS[*kind].plural != "events")
            .map(|(kind, ns, object)| {
                let k = &KINDS[kind];
                json!({"group": k.group, "version": k.version, "plural": k.plural,
                    "namespace": ns, "object": object})
            })
            .collect();
        out.insert(
            id.clone(),
            json!({"rv": store.resource_version(), "objects": objects}),
        );
    }
    Value::Object(out)
}

/// The stores a snapshot holds; objects of kinds this build does not serve are dropped.
pub fn restore(snapshot: &Value) -> HashMap<String, ClusterStore> {
    let mut out = HashMap::new();
    for (id, cluster) in snapshot.as_object().into_iter().flatten() {
        let objects = cluster["objects"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|o| {
                let kind = find(
                    o["group"].as_str()?,
                    o["version"].as_str()?,
                    o["plural"].as_str()?,
                )?;
                Some((
                    kind,
                    o["namespace"].as_str()?.to_string(),
                    o["object"].clone(),
                ))
            })
            .collect();
        let rv = cluster["rv"].as_u64().unwrap_or(1000);
        out.insert(id.clone(), ClusterStore::restored(rv, objects));
    }
    out
}

/// Reads a snapshot file; a missing one is an empty world, an unreadable one an error.
pub fn load(path: &Path) -> Result<HashMap<String, ClusterStore>, String> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice::<Value>(&bytes)
            .map(|v| restore(&v))
            .map_err(|e| {
                format!(
                    "simulated clusters' state {} is unreadable: {e}",
                    path.display()
                )
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(HashMap::new()),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

/// Writes a snapshot atomically.
pub fn save(path: &Path, snapshot: &Value) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, serde_json::to_vec(snapshot)?)?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::k8s::kinds::STORAGE_CLASS;

    #[test]
    fn a_snapshot_restores_every_object_but_pods() {
        let mut store = ClusterStore::new();
        store
            .create(
                STORAGE_CLASS,
                "",
                json!({"metadata": {"name": "sc"}, "provisioner": "p"}),
            )
            .unwrap();
        store
            .create(
                POD,
                "default",
                json!({"metadata": {"name": "p"}, "spec": {"containers": []}}),
            )
            .unwrap();
        let id = "c1".to_string();
        let snap = snapshot([(&id, &store)].into_iter());
        let text = serde_json::to_string(&snap).unwrap();
        let back = restore(&serde_json::from_str(&text).unwrap());
        let restored = &back["c1"];
        assert_eq!(
            restored.get(STORAGE_CLASS, "", "sc"),
            store.get(STORAGE_CLASS, "", "sc")
        );
        assert!(restored.get(POD, "default", "p").is_none());
        assert_eq!(restored.resource_version(), store.resource_version());
        assert_eq!(restored.list(0, None).len(), store.list(0, None).len());
    }
}
