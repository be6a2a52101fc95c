//! Which deployed clusters a command reaches inside: each selected target's live cluster, read
//! through the cloud from the inventory's record, or why it cannot be read.

use super::error::EngineError;
use super::options::select;
use super::records::{find_target, require_backend};
use crate::cloud::domain::{Cloud, Cluster};
use crate::spec::FleetSpec;
use crate::store::InventoryStore;

/// One selected target and its live cluster.
#[derive(Debug, Clone)]
pub struct DeployedCluster {
    pub project_key: String,
    pub cluster_name: String,
    /// The live cluster, or why there is none to reach.
    pub cluster: Result<Cluster, String>,
}

/// The selected targets' live clusters, in spec order.
pub async fn deployed_clusters<C: Cloud, S: InventoryStore>(
    cloud: &C,
    store: &S,
    spec: &FleetSpec,
    only_projects: &[String],
    only_clusters: &[String],
) -> Result<Vec<DeployedCluster>, EngineError> {
    let records = store.targets(&spec.name).await?;
    let mut out = Vec::new();
    for (pi, ci) in select(spec, only_projects, only_clusters, &spec.project_prefix)? {
        let project = &spec.projects[pi];
        let cluster_spec = &project.clusters[ci];
        let key = project.key();
        let record = find_target(&records, &key, &cluster_spec.name);
        let cluster = match record {
            None => Err("not deployed: the inventory has no record of it".to_string()),
            Some(r) if r.cluster_id.is_empty() => Err(format!(
                "not deployed: recorded as {}, with no cluster",
                r.status
            )),
            Some(r) => {
                require_backend(
                    r,
                    cluster_spec,
                    "refusing to reach the cluster without backend ownership proof",
                )?;
                cloud.get_cluster(&r.cluster_id).await.map_err(|e| {
                    if e.is_not_found() {
                        "the recorded cluster no longer exists".to_string()
                    } else {
                        e.to_string()
                    }
                })
            }
        };
        out.push(DeployedCluster {
            project_key: key,
            cluster_name: cluster_spec.name.clone(),
            cluster,
        });
    }
    Ok(out)
}
