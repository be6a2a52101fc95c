//! The Nebius simulator: the same gRPC services as the real API, over a modelled world, served
//! in process (the embedded default, every test) or standalone (`fleetbot sim`).

pub mod auth;
pub mod catalogue;
pub mod core;
pub mod defaults;
pub mod k8s;
pub mod request_ids;
pub mod resources;
pub mod rules;
pub mod s3;
pub mod services;
pub mod world;

#[cfg(test)]
mod usage_props;

use std::net::SocketAddr;
use std::path::PathBuf;

use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tonic::transport::Server;
use tonic::transport::server::TcpIncoming;

use crate::cloud::proto::nebius::applications::v1alpha1 as apps;
use crate::cloud::proto::nebius::capacity::v1 as capacity;
use crate::cloud::proto::nebius::common::v1 as common;
use crate::cloud::proto::nebius::compute::v1 as compute;
use crate::cloud::proto::nebius::iam::v1 as iam;
use crate::cloud::proto::nebius::iam::v2 as iam2;
use crate::cloud::proto::nebius::mk8s::v1 as mk8s;
use crate::cloud::proto::nebius::quotas::v1 as quotas;
use crate::cloud::proto::nebius::storage::v1 as storage;
use crate::cloud::proto::nebius::vpc::v1 as vpc;
pub use services::SimService;
pub use world::World;

/// A running simulator.
pub struct Simulator {
    pub service: SimService,
    pub addr: SocketAddr,
    /// The simulated clusters' Kubernetes API.
    pub kube: k8s::KubeApi,
    /// The simulated buckets' S3 endpoint.
    pub s3: s3::S3Api,
    /// The nodes' host directories; removed at the end when the simulator keeps no state.
    node_root: PathBuf,
    node_root_is_temporary: bool,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<Result<(), tonic::transport::Error>>>,
    /// Writes the deferred state, when persistence is deferred.
    flusher: Option<tokio::task::JoinHandle<()>>,
}

impl Simulator {
    /// Starts serving `world` on `listener`. With `state_file`, the world persists there and
    /// is restored from it on the next start.
    pub async fn start(
        world: World,
        state_file: Option<PathBuf>,
        listener: TcpListener,
    ) -> Result<Simulator, String> {
        let (node_root, node_root_is_temporary) = match &state_file {
            Some(path) => (path.with_extension("nodes"), false),
            None => (
                std::env::temp_dir()
                    .join(format!("fleetbot-sim-{}", uuid::Uuid::new_v4().simple())),
                true,
            ),
        };
        // The state's directory and the nodes' are the user's alone (`private`).
        if let Some(dir) = state_file.as_ref().and_then(|p| p.parent()) {
            crate::store::private::dir(dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        crate::store::private::own_dir(&node_root)
            .map_err(|e| format!("cannot create {}: {e}", node_root.display()))?;
        let kube_state = state_file.as_ref().map(|p| p.with_extension("kube.json"));
        let core = core::Core::new(world, state_file)?;
        let service = SimService::new(core);
        let kube_listener =
            TcpListener::bind((listener.local_addr().map_err(|e| e.to_string())?.ip(), 0))
                .await
                .map_err(|e| format!("cannot listen for the simulated Kubernetes API: {e}"))?;
        let kube = k8s::KubeApi::start(
            service.clone(),
            kube_listener,
            node_root.clone(),
            kube_state,
        )
        .await?;
        let s3_listener =
            TcpListener::bind((listener.local_addr().map_err(|e| e.to_string())?.ip(), 0))
                .await
                .map_err(|e| format!("cannot listen for the simulated S3 endpoint: {e}"))?;
        let s3 = s3::S3Api::start(service.clone(), s3_listener).await?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        let (tx, rx) = oneshot::channel::<()>();
        let svc = service.clone();
        let task = tokio::spawn(async move {
            Server::builder()
                .layer(request_ids::RequestIdLayer)
                .add_service(common::operation_service_server::OperationServiceServer::new(svc.clone()))
                .add_service(iam::project_service_server::ProjectServiceServer::new(svc.clone()))
                .add_service(iam::tenant_service_server::TenantServiceServer::new(svc.clone()))
                .add_service(iam2::project_service_server::ProjectServiceServer::new(svc.clone()))
                .add_service(iam2::tenant_service_server::TenantServiceServer::new(svc.clone()))
                .add_service(iam::service_account_service_server::ServiceAccountServiceServer::new(svc.clone()))
                .add_service(iam2::access_key_service_server::AccessKeyServiceServer::new(svc.clone()))
                .add_service(iam::token_exchange_service_server::TokenExchangeServiceServer::new(svc.clone()))
                .add_service(quotas::quota_allowance_service_server::QuotaAllowanceServiceServer::new(svc.clone()))
                .add_service(capacity::capacity_block_group_service_server::CapacityBlockGroupServiceServer::new(svc.clone()))
                .add_service(capacity::capacity_interval_service_server::CapacityIntervalServiceServer::new(svc.clone()))
                .add_service(vpc::network_service_server::NetworkServiceServer::new(svc.clone()))
                .add_service(vpc::subnet_service_server::SubnetServiceServer::new(svc.clone()))
                .add_service(vpc::pool_service_server::PoolServiceServer::new(svc.clone()))
                .add_service(mk8s::cluster_service_server::ClusterServiceServer::new(svc.clone()))
                .add_service(mk8s::node_group_service_server::NodeGroupServiceServer::new(svc.clone()))
                .add_service(compute::filesystem_service_server::FilesystemServiceServer::new(svc.clone()))
                .add_service(compute::gpu_cluster_service_server::GpuClusterServiceServer::new(svc.clone()))
                .add_service(compute::platform_service_server::PlatformServiceServer::new(svc.clone()))
                .add_service(storage::bucket_service_server::BucketServiceServer::new(svc.clone()))
                .add_service(apps::k8s_release_service_server::K8sReleaseServiceServer::new(svc))
                // Without TCP_NODELAY, Nagle and delayed ACKs add ~40 ms to every small reply.
                .serve_with_incoming_shutdown(TcpIncoming::from(listener).with_nodelay(Some(true)), async {
                    let _ = rx.await;
                })
                .await
        });
        Ok(Simulator {
            service,
            addr,
            kube,
            s3,
            node_root,
            node_root_is_temporary,
            shutdown: Some(tx),
            task: Some(task),
            flusher: None,
        })
    }

    /// Writes the world's state at most every quarter second and when the simulator stops or
    /// is dropped, instead of at every change: for the embedded simulator, which lives and
    /// dies with its command (a standalone one keeps writing each change before answering).
    pub fn defer_persistence(&mut self) {
        const FLUSH_EVERY: std::time::Duration = std::time::Duration::from_millis(250);
        self.service.with_core(core::Core::defer_persistence);
        let service = self.service.clone();
        self.flusher = Some(tokio::spawn(async move {
            loop {
                tokio::time::sleep(FLUSH_EVERY).await;
                if let Err(e) = service.read_core(|core| core.flush()) {
                    tracing::warn!("cannot save the simulator's state: {}", e.message());
                }
            }
        }));
    }

    fn flush(&self) {
        if let Err(e) = self.service.read_core(|core| core.flush()) {
            eprintln!(
                "fleetbot: cannot save the simulator's state: {}",
                e.message()
            );
        }
    }

    /// The tenant the world's resources live in.
    pub fn tenant_id(&self) -> String {
        self.service.read_core(|core| core.tenant_id.clone())
    }

    /// The ID of a world capacity block group, by its world name.
    pub fn capacity_block_id(&self, name: &str) -> String {
        self.service.read_core(|core| core.capacity_block_id(name))
    }

    /// Where the nodes' host directories and each cluster's shared filesystems live on this
    /// machine (`<root>/<cluster>/nodes/<node>`, `<root>/<cluster>/filesystems/<id>`).
    pub fn node_root(&self) -> &std::path::Path {
        &self.node_root
    }

    /// `http://127.0.0.1:<port>`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops serving and waits for the server to finish.
    pub async fn stop(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
        self.flush();
    }
}

impl Drop for Simulator {
    fn drop(&mut self) {
        if let Some(flusher) = self.flusher.take() {
            flusher.abort();
        }
        self.flush();
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if self.node_root_is_temporary {
            let _ = std::fs::remove_dir_all(&self.node_root);
        }
    }
}
