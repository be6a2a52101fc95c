//! The simulated clusters' API objects kept beside the simulator's own state, so a cluster
//! deployed by one `fleetbot` command still has its add-ons, classes and CSI objects when the
//! next command (a status, a verification) starts the embedded simulator again. Pods and
//! events are not kept: their processes ended with the simulator, and the controllers make
//! the workloads' pods again.

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

use super::kinds::{KINDS, POD, find};
use super::store::ClusterStore;

/// One kept object, borrowed: a snapshot is written without copying the objects it holds.
#[derive(serde::Serialize)]
struct Kept<'a> {
    group: &'a str,
    version: &'a str,
    plural: &'a str,
    namespace: &'a str,
    object: &'a Value,
}

#[derive(serde::Serialize)]
struct Cluster<'a> {
    rv: u64,
    objects: Vec<Kept<'a>>,
}

/// Cluster ID → its objects, as the JSON [`restore`] reads.
pub fn snapshot<'a>(
    clusters: impl Iterator<Item = (&'a String, &'a ClusterStore)>,
) -> serde_json::Result<Vec<u8>> {
    let all: HashMap<&String, Cluster<'a>> = clusters
        .map(|(id, store)| {
            let objects = store
                .all()
                .filter(|(kind, _, _)| *kind != POD && KINDS[*kind].plural != "events")
                .map(|(kind, namespace, object)| {
                    let k = &KINDS[kind];
                    Kept {
                        group: k.group,
                        version: k.version,
                        plural: k.plural,
                        namespace,
                        object,
                    }
                })
                .collect();
            (
                id,
                Cluster {
                    rv: store.resource_version(),
                    objects,
                },
            )
        })
        .collect();
    serde_json::to_vec(&all)
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

/// Writes a snapshot atomically, the user's alone.
pub fn save(path: &Path, snapshot: &[u8]) -> std::io::Result<()> {
    crate::store::private::write(path, snapshot)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::k8s::kinds::STORAGE_CLASS;
    use serde_json::json;

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
        let snap = snapshot([(&id, &store)].into_iter()).unwrap();
        let back = restore(&serde_json::from_slice(&snap).unwrap());
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
