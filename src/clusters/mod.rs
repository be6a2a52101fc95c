//! Kubernetes access inside each deployed cluster, through kube-rs.
//!
//! A client is built from what the cloud says of the cluster (its public endpoint and CA
//! certificate) with a Nebius IAM bearer token on every request, or from a kubeconfig the user
//! supplies (`--kubeconfigs MAP.json`). The generated Kubernetes types stop here: callers see
//! [`ClusterClient`] and this module's own structs.

mod bearer;
pub mod kubeconfig;
pub mod objects;
mod pool;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::Node as KubeNode;
use kube::api::ListParams;
use kube::{Api, Client, Config};
use serde::Serialize;

pub use bearer::TokenSource;
pub use kubeconfig::{KubeconfigMap, context_name};
pub use pool::Connections;

use crate::cloud::client::NebiusClient;

/// Why a cluster cannot be reached.
#[derive(Debug, thiserror::Error)]
pub enum AccessError {
    #[error("{0}")]
    Endpoint(String),
    #[error("kubeconfig {path}: {message}")]
    Kubeconfig { path: String, message: String },
    #[error("Kubernetes API: {0}")]
    Api(String),
}

impl From<kube::Error> for AccessError {
    fn from(e: kube::Error) -> AccessError {
        AccessError::Api(match e {
            kube::Error::Api(status) => format!("{} ({})", status.message, status.code),
            other => other.to_string(),
        })
    }
}

/// What the cloud reports of a cluster's control plane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterEndpoint {
    /// `https://…`.
    pub server: String,
    /// The cluster CA certificate, PEM.
    pub ca_pem: String,
}

impl ClusterEndpoint {
    /// The endpoint of a cluster as the cloud layer reads it; fails when it is not reachable.
    pub fn of(cluster: &crate::cloud::domain::Cluster) -> Result<ClusterEndpoint, AccessError> {
        if cluster.state != crate::cloud::domain::State::Ready {
            return Err(AccessError::Endpoint(format!(
                "the cluster is {}, not running",
                format!("{:?}", cluster.state).to_lowercase()
            )));
        }
        if cluster.public_endpoint.is_empty() {
            return Err(AccessError::Endpoint(
                "the cluster reports no public endpoint".into(),
            ));
        }
        if cluster.ca_certificate.trim().is_empty() {
            return Err(AccessError::Endpoint(
                "the cluster reports no CA certificate".into(),
            ));
        }
        Ok(ClusterEndpoint {
            server: cluster.public_endpoint.clone(),
            ca_pem: cluster.ca_certificate.clone(),
        })
    }
}

/// Tokens from the cloud client's credentials.
pub fn tokens_of(client: &NebiusClient) -> TokenSource {
    let client = client.clone();
    std::sync::Arc::new(move || {
        let client = client.clone();
        Box::pin(async move { client.bearer_token().await.map_err(|e| e.to_string()) })
    })
}

/// How one target's cluster is reached.
#[derive(Clone)]
pub enum Access {
    /// Through the cloud: endpoint and CA from the cluster's status, IAM token as bearer.
    Cloud {
        endpoint: ClusterEndpoint,
        tokens: TokenSource,
    },
    /// Through a kubeconfig file (its current context).
    Kubeconfig(PathBuf),
}

impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Access::Cloud { .. } => f.write_str("Access::Cloud"),
            Access::Kubeconfig(path) => write!(f, "Access::Kubeconfig({})", path.display()),
        }
    }
}

/// A connected cluster.
#[derive(Clone)]
pub struct ClusterClient {
    client: Client,
}

fn ca_der(pem_text: &str) -> Result<Vec<Vec<u8>>, AccessError> {
    let blocks = pem::parse_many(pem_text).map_err(|e| {
        AccessError::Endpoint(format!("the cluster CA certificate is not PEM: {e}"))
    })?;
    let certs: Vec<Vec<u8>> = blocks
        .into_iter()
        .filter(|b| b.tag() == "CERTIFICATE")
        .map(|b| b.into_contents())
        .collect();
    if certs.is_empty() {
        return Err(AccessError::Endpoint(
            "the cluster CA certificate holds no certificate".into(),
        ));
    }
    Ok(certs)
}

impl ClusterClient {
    pub async fn connect(access: &Access) -> Result<ClusterClient, AccessError> {
        match access {
            Access::Cloud { endpoint, tokens } => Connections::default().cluster(endpoint, tokens),
            Access::Kubeconfig(path) => {
                let fail = |message: String| AccessError::Kubeconfig {
                    path: path.display().to_string(),
                    message,
                };
                let file =
                    kube::config::Kubeconfig::read_from(path).map_err(|e| fail(e.to_string()))?;
                let config = Config::from_custom_kubeconfig(file, &Default::default())
                    .await
                    .map_err(|e| fail(e.to_string()))?;
                let client = Client::try_from(config).map_err(|e| fail(e.to_string()))?;
                Ok(ClusterClient { client })
            }
        }
    }

    /// The kube-rs client, for this crate's own modules (probes, add-ons).
    pub fn kube(&self) -> &Client {
        &self.client
    }

    /// Every node, as [`Node`].
    pub async fn nodes(&self) -> Result<Vec<Node>, AccessError> {
        let api: Api<KubeNode> = Api::all(self.client.clone());
        let list = api.list(&ListParams::default()).await?;
        Ok(list.items.iter().map(Node::from_kube).collect())
    }
}

/// The taint a cordoned node carries.
pub const UNSCHEDULABLE_TAINT: &str = "node.kubernetes.io/unschedulable";

/// A node, as fleetbot reads it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Node {
    pub name: String,
    pub uid: String,
    pub ready: bool,
    pub labels: BTreeMap<String, String>,
    /// `cpu`, `memory`, `nvidia.com/gpu`, … as the API states them.
    pub allocatable: BTreeMap<String, String>,
    pub taints: Vec<String>,
    pub boot_id: String,
}

impl Node {
    fn from_kube(node: &KubeNode) -> Node {
        let status = node.status.clone().unwrap_or_default();
        let mut taints: Vec<String> = node
            .spec
            .as_ref()
            .and_then(|s| s.taints.clone())
            .unwrap_or_default()
            .into_iter()
            .map(|t| format!("{}={}:{}", t.key, t.value.unwrap_or_default(), t.effect))
            .collect();
        // A cordon is the unschedulable taint, whether or not the node controller has
        // written the taint yet.
        let cordoned = node.spec.as_ref().and_then(|s| s.unschedulable) == Some(true);
        if cordoned && !taints.iter().any(|t| t.starts_with(UNSCHEDULABLE_TAINT)) {
            taints.push(format!("{UNSCHEDULABLE_TAINT}=:NoSchedule"));
        }
        Node {
            name: node.metadata.name.clone().unwrap_or_default(),
            uid: node.metadata.uid.clone().unwrap_or_default(),
            ready: status
                .conditions
                .iter()
                .flatten()
                .any(|c| c.type_ == "Ready" && c.status == "True"),
            labels: node.metadata.labels.clone().unwrap_or_default(),
            allocatable: status
                .allocatable
                .unwrap_or_default()
                .into_iter()
                .map(|(k, v)| (k, v.0))
                .collect(),
            taints,
            boot_id: status.node_info.map(|i| i.boot_id).unwrap_or_default(),
        }
    }

    /// The node group this node belongs to (the label Managed Kubernetes sets).
    pub fn node_group_id(&self) -> &str {
        self.labels
            .get("mk8s.nebius.ai/node-group-id")
            .map_or("", String::as_str)
    }
}

/// One target's way in: the `--kubeconfigs` map wins, else the cloud's endpoint.
pub fn access_for(
    map: Option<&KubeconfigMap>,
    project_key: &str,
    cluster_name: &str,
    from_cloud: impl FnOnce() -> Result<Access, AccessError>,
) -> Result<Access, AccessError> {
    match map.and_then(|m| m.get(project_key, cluster_name)) {
        Some(path) => Ok(Access::Kubeconfig(path.to_path_buf())),
        None => from_cloud(),
    }
}

/// Reads a `--kubeconfigs` map.
pub fn load_kubeconfig_map(path: &Path) -> Result<KubeconfigMap, kubeconfig::KubeconfigMapError> {
    KubeconfigMap::load(path)
}
