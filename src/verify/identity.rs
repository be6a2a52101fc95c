//! A target's identity, proven before a verification creates anything in its cluster
//! (fleet-engine §7.1 "Identity"): the inventory record is fleetbot's, for this fleet, project
//! key and cluster, on the backend the spec selects; a fresh read of the cluster agrees with it
//! (name, project, ownership labels, state, node groups and their node count); the profile's
//! tenant is the spec's; and a kubeconfig from `--kubeconfigs`, when one is given, names the
//! very endpoint and CA the cloud reports. Anything unproven fails the target closed with
//! `target_identity_failed`.

use std::sync::Arc;

use crate::cloud::domain::{Cloud, Cluster};
use crate::clusters::kubeconfig::KubeconfigMap;
use crate::clusters::{Access, ClusterEndpoint, TokenSource};
use crate::engine::desired::target_labels;
use crate::spec::{ClusterSpec, FleetSpec};
use crate::store::TargetRecord;

/// What the proof established: the way in, and the fresh reads it rests on.
pub struct ProvenTarget {
    pub access: Access,
    pub cluster: Cluster,
}

/// Why a target's identity is not proven; the message is for the private receipt.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct IdentityError(pub String);

fn fail<T>(message: impl Into<String>) -> Result<T, IdentityError> {
    Err(IdentityError(message.into()))
}

/// Proves one target. `tenant` is the tenant the profile's credentials belong to, when they
/// name one.
#[allow(clippy::too_many_arguments)]
pub async fn prove<C: Cloud>(
    cloud: &C,
    records: &[TargetRecord],
    spec: &FleetSpec,
    project: usize,
    cluster: usize,
    tenant: Option<&str>,
    kubeconfigs: Option<&KubeconfigMap>,
) -> Result<ProvenTarget, IdentityError> {
    let p = &spec.projects[project];
    let c = &p.clusters[cluster];
    let key = p.key();
    let Some(record) = records
        .iter()
        .find(|r| r.fleet == spec.name && r.project_key == key && r.cluster_name == c.name)
    else {
        return fail("the inventory has no record of this target");
    };
    if record.cluster_id.is_empty() || record.project_id.is_empty() {
        return fail(format!(
            "the inventory records the target as {} without a cluster or project",
            record.status
        ));
    }
    let backend = if record.backend.is_empty() {
        "mk8s"
    } else {
        &record.backend
    };
    if backend != c.backend_name() || backend != "mk8s" {
        return fail(format!(
            "the target's backend is {backend} (the spec selects {}); verification reaches Managed Kubernetes targets only",
            c.backend_name()
        ));
    }
    if !p.cloud_project_id().is_empty() && p.cloud_project_id() != record.project_id {
        return fail("the spec's explicit project_id is not the recorded project");
    }
    match tenant {
        None => return fail("the profile names no tenant"),
        Some(t) if !spec.tenant_id.is_empty() && spec.tenant_id != t => {
            return fail("the profile's tenant is not the spec's tenant_id");
        }
        Some(t) if !record.tenant_id.is_empty() && record.tenant_id != t => {
            return fail("the profile's tenant is not the one the target was deployed in");
        }
        Some(_) => {}
    }
    let fresh = cloud
        .get_cluster(&record.cluster_id)
        .await
        .map_err(|e| IdentityError(format!("the recorded cluster cannot be read: {e}")))?;
    check_cluster(&fresh, record, spec, &key, c)?;
    let groups = cloud
        .list_node_groups(&fresh.id)
        .await
        .map_err(|e| IdentityError(format!("the cluster's node groups cannot be read: {e}")))?;
    let mut recorded = record.node_group_ids.clone();
    let mut live: Vec<String> = groups.iter().map(|g| g.id.clone()).collect();
    recorded.sort();
    live.sort();
    if recorded != live {
        return fail("the cluster's node groups are not the recorded ones");
    }
    let declared =
        c.cpu_nodes.as_ref().map_or(0, |n| n.count) + c.gpu_nodes.as_ref().map_or(0, |n| n.count);
    let live_nodes: i64 = groups.iter().map(|g| g.spec.node_count).sum();
    if live_nodes != declared {
        return fail(format!(
            "the node groups hold {live_nodes} nodes, the spec declares {declared}"
        ));
    }
    let endpoint = ClusterEndpoint::of(&fresh).map_err(|e| IdentityError(e.to_string()))?;
    let access = match kubeconfigs.and_then(|m| m.get(&key, &c.name)) {
        Some(path) => {
            check_kubeconfig(path, &endpoint)?;
            Access::Kubeconfig(path.to_path_buf())
        }
        None => {
            // The kube client runs from an in-memory snapshot of one token: nothing ambient.
            let token = cloud
                .bearer_token()
                .await
                .map_err(|e| IdentityError(format!("no token for the cluster: {e}")))?;
            let tokens: TokenSource = Arc::new(move || {
                let token = token.clone();
                Box::pin(async move { Ok(token) })
            });
            Access::Cloud { endpoint, tokens }
        }
    };
    Ok(ProvenTarget {
        access,
        cluster: fresh,
    })
}

fn check_cluster(
    fresh: &Cluster,
    record: &TargetRecord,
    spec: &FleetSpec,
    key: &str,
    c: &ClusterSpec,
) -> Result<(), IdentityError> {
    if fresh.id != record.cluster_id || fresh.project_id != record.project_id {
        return fail("the cluster is not in the recorded project");
    }
    if fresh.name != c.name {
        return fail("the cluster's name is not the spec's");
    }
    let owned = target_labels(&spec.name, key, &c.name)
        .iter()
        .all(|(k, v)| fresh.labels.get(k) == Some(v));
    if !owned {
        return fail("the cluster does not carry this target's ownership labels");
    }
    Ok(())
}

/// The kubeconfig's current context must reach the endpoint the cloud reports, trusting the
/// CA the cloud reports.
fn check_kubeconfig(
    path: &std::path::Path,
    endpoint: &ClusterEndpoint,
) -> Result<(), IdentityError> {
    let config = kube::config::Kubeconfig::read_from(path)
        .map_err(|e| IdentityError(format!("the target's kubeconfig cannot be read: {e}")))?;
    let context_name = config.current_context.clone().unwrap_or_default();
    let context = config
        .contexts
        .iter()
        .find(|c| c.name == context_name)
        .and_then(|c| c.context.clone())
        .ok_or_else(|| IdentityError("the target's kubeconfig has no current context".into()))?;
    let cluster = config
        .clusters
        .iter()
        .find(|c| c.name == context.cluster)
        .and_then(|c| c.cluster.clone())
        .ok_or_else(|| IdentityError("the kubeconfig's context names no cluster".into()))?;
    if cluster.server.as_deref().map(|s| s.trim_end_matches('/'))
        != Some(endpoint.server.trim_end_matches('/'))
    {
        return fail("the target's kubeconfig does not reach the cluster's endpoint");
    }
    let ca = cluster
        .certificate_authority_data
        .as_deref()
        .and_then(|b64| {
            use base64::Engine;
            base64::engine::general_purpose::STANDARD
                .decode(b64.trim())
                .ok()
        })
        .and_then(|bytes| String::from_utf8(bytes).ok());
    let same = |a: &str, b: &str| {
        a.split_whitespace().collect::<String>() == b.split_whitespace().collect::<String>()
    };
    if !ca.is_some_and(|ca| same(&ca, &endpoint.ca_pem)) {
        return fail("the target's kubeconfig does not trust the cluster's CA");
    }
    Ok(())
}
