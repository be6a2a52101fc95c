//! A session: the one value that holds a cloud. It is the cloud fleets run against (Nebius,
//! or the simulator), the inventory fleetbot keeps for it, the tenant a spec that names none
//! is deployed in, what verification needs, and — for the App — the deploy state its guarded
//! applies keep. The CLI, the App, the demo and library users all hold one.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::Error;
use super::connect::{Link, SessionOptions};
use crate::cloud::client::NebiusClient;
use crate::sim::World;
use crate::spec::FleetSpec;
use crate::store::{DeployStore, InventoryStore, SqliteStore};

/// What a session lacks for the operation asked of it.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The spec names no tenant and the session has none.
    #[error("no tenant: set 'tenant_id' in the fleet spec or FLEETBOT_TENANT_ID")]
    NoTenant,
    /// Verification needs a probe image and none was named.
    #[error("no probe image: Session::with_probe_image (or with_probe_binary on the simulator)")]
    NoProbeImage,
    /// A local probe binary was given for a cloud that runs images.
    #[error("a probe binary runs only on the simulator; name a probe image by digest")]
    ProbeBinaryOffSimulator,
    /// A file or directory the session needs could not be read or made.
    #[error("cannot {what} {}: {source}", path.display())]
    File {
        /// `read` or `create`.
        what: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// What the App's guarded applies keep beside the cloud: reviewed plans, approvals, apply
/// runs, the audit log and per-fleet leases, and how long a lease lasts unrenewed.
#[derive(Clone)]
pub(crate) struct DeployState {
    pub(crate) store: Arc<dyn DeployStore>,
    pub(crate) lease: Duration,
}

/// A cloud to run fleets against, and the inventory fleetbot keeps for it: the CLI's SQLite
/// file unless [`Session::with_inventory`] gave another store (PostgreSQL, as a server keeps).
///
/// Holding a session keeps an embedded simulator running; drop it when done.
pub struct Session {
    pub(super) cloud: NebiusClient,
    /// Alive as long as the session when the simulator runs in this process.
    embedded: Option<crate::sim::Simulator>,
    resident: Option<super::resident::Resident>,
    pub(super) inventory: Arc<dyn InventoryStore>,
    tenant_id: String,
    public_name: String,
    probe_image: Option<String>,
    evidence_dir: Option<PathBuf>,
    deploy: Option<DeployState>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("cloud", &self.public_name)
            .field("tenant_id", &"<redacted>")
            .field("applies", &self.deploy.is_some())
            .finish_non_exhaustive()
    }
}

impl Session {
    /// The embedded Nebius simulator with its default world (generous quotas in every public
    /// region; the projects and capacity blocks the example fleets name), keeping its state
    /// and the inventory under `dir`, so a later session on the same directory finds what
    /// this one deployed.
    ///
    /// ```
    /// # #[tokio::main] async fn main() -> Result<(), fleetbot::Error> {
    /// let dir = tempfile::tempdir().unwrap();
    /// let session = fleetbot::Session::simulator(dir.path()).await?;
    /// assert!(session.is_simulated());
    /// assert!(session.tenant_id().starts_with("tenant-"));
    /// # Ok(()) }
    /// ```
    pub async fn simulator(dir: impl AsRef<Path>) -> Result<Session, Error> {
        Session::simulator_with(World::embedded_default(), dir).await
    }

    /// [`Session::simulator`] with another world (`fixtures/sim/*.yaml` describes the format):
    /// other quotas, latencies, capacity blocks or scripted faults.
    pub async fn simulator_with(world: World, dir: impl AsRef<Path>) -> Result<Session, Error> {
        let dir = dir.as_ref();
        std::fs::create_dir_all(dir).map_err(|source| SessionError::File {
            what: "create",
            path: dir.to_path_buf(),
            source,
        })?;
        let link =
            super::connect::embedded_simulator_of(world, Some(dir.join("sim.state"))).await?;
        let inventory = SqliteStore::open(&dir.join("inventory.sqlite")).await?;
        Ok(Session::of(link, Arc::new(inventory), None))
    }

    /// The cloud `options` choose: Nebius when credentials are configured (or chosen), else
    /// the embedded simulator, announced on stderr; the CLI's inventory
    /// ([`SessionOptions::inventory_path`]). The CLI reads the options from its environment.
    pub async fn connect(options: &SessionOptions) -> Result<Session, Error> {
        let link = super::connect::connect(options).await?;
        Session::with_cli_inventory(link, options).await
    }

    /// [`Session::connect`] without the embedded-simulator fallback: `Ok(None)` when the
    /// choice is `auto` and no credentials are configured.
    pub async fn connect_configured(options: &SessionOptions) -> Result<Option<Session>, Error> {
        match super::connect::connect_configured(options).await? {
            Some(link) => Ok(Some(Session::with_cli_inventory(link, options).await?)),
            None => Ok(None),
        }
    }

    /// [`Session::connect_configured`] with `inventory` as the record of what fleetbot
    /// deployed (the server's store): no file of the CLI's is opened.
    pub async fn connect_configured_with(
        options: &SessionOptions,
        inventory: impl InventoryStore + 'static,
    ) -> Result<Option<Session>, Error> {
        Ok(super::connect::connect_configured(options)
            .await?
            .map(|link| Session::of(link, Arc::new(inventory), options.tenant_id.clone())))
    }

    /// A simulator another process runs (a resident one, or the server's own for its job
    /// processes), described in logs as `description`.
    pub fn resident(
        resident: super::resident::Resident,
        description: impl Into<String>,
        inventory: impl InventoryStore + 'static,
    ) -> Session {
        let link = super::connect::resident_link(resident, description.into());
        Session::of(link, Arc::new(inventory), None)
    }

    /// A cloud already reached (a client of Nebius or of a simulator) with `inventory`: what
    /// tests and benchmarks that start their own simulator hold.
    pub fn over(cloud: NebiusClient, inventory: impl InventoryStore + 'static) -> Session {
        let link = Link {
            client: cloud,
            simulator: None,
            tenant_id: None,
            resident: None,
        };
        Session::of(link, Arc::new(inventory), None)
    }

    async fn with_cli_inventory(link: Link, options: &SessionOptions) -> Result<Session, Error> {
        let path = options.inventory_path(link.is_simulated());
        let inventory = SqliteStore::open(&path).await?;
        Ok(Session::of(
            link,
            Arc::new(inventory),
            options.tenant_id.clone(),
        ))
    }

    fn of(link: Link, inventory: Arc<dyn InventoryStore>, tenant: Option<String>) -> Session {
        let tenant_id = tenant
            .or(link.tenant_id)
            .map(|t| t.trim().to_string())
            .unwrap_or_default();
        let simulated = link.simulator.is_some() || link.resident.is_some();
        Session {
            cloud: link.client,
            embedded: link.simulator,
            resident: link.resident,
            inventory,
            tenant_id,
            public_name: if simulated {
                "the fleetbot simulator"
            } else {
                "Nebius"
            }
            .to_string(),
            probe_image: None,
            evidence_dir: None,
            deploy: None,
        }
    }
}

/// What the session is and holds, and the options that add to it.
impl Session {
    /// This session's cloud with `inventory` as the record of what fleetbot deployed (any
    /// store: the server's PostgreSQL, another SQLite file).
    ///
    /// ```
    /// # #[tokio::main] async fn main() -> Result<(), fleetbot::Error> {
    /// let dir = tempfile::tempdir().unwrap();
    /// let elsewhere = fleetbot::store::SqliteStore::open(&dir.path().join("other.sqlite"))
    ///     .await
    ///     .unwrap();
    /// let session = fleetbot::Session::simulator(dir.path()).await?.with_inventory(elsewhere);
    /// let fleet = fleetbot::Fleet::from_yaml(fleetbot::fleet::EXAMPLE_SPEC, "docs.yaml")?;
    /// fleet.deploy(&session, &fleetbot::Options::default()).await?;
    /// assert!(fleet.status(&session).await?.healthy());
    /// # Ok(()) }
    /// ```
    pub fn with_inventory(mut self, inventory: impl InventoryStore + 'static) -> Session {
        self.inventory = Arc::new(inventory);
        self
    }

    /// The tenant for specs that name none (what the operator configured), in place of the
    /// one the credentials' source names; blank keeps that one.
    pub fn with_tenant(mut self, tenant: impl Into<String>) -> Session {
        let tenant = tenant.into();
        if !tenant.trim().is_empty() {
            self.tenant_id = tenant.trim().to_string();
        }
        self
    }

    /// The tenant fleets are deployed in when their spec names none (empty when neither the
    /// options nor the credentials name one).
    pub fn tenant_id(&self) -> &str {
        &self.tenant_id
    }

    /// Whether this is the simulator, embedded or resident.
    pub fn is_simulated(&self) -> bool {
        self.embedded.is_some() || self.resident.is_some()
    }

    /// The resident simulator this session talks to, when it does.
    pub fn resident_simulator(&self) -> Option<&super::resident::Resident> {
        self.resident.as_ref()
    }

    /// Whether the simulator runs inside this process (and stops with the session).
    pub fn is_embedded(&self) -> bool {
        self.embedded.is_some()
    }

    /// What the session talks to, in words (for a log line; may name a local path).
    pub fn description(&self) -> String {
        self.cloud.description().to_string()
    }

    /// The cloud's name for a pull request's comment: never an endpoint, path or ID.
    pub fn public_name(&self) -> String {
        self.public_name.clone()
    }

    /// Names the cloud in pull requests' comments (`Nebius`, `the fleetbot simulator`): for a
    /// session [`over`](Session::over) a client, whose endpoint alone does not say.
    pub fn named(mut self, public_name: impl Into<String>) -> Session {
        self.public_name = public_name.into();
        self
    }

    /// A fresh bearer token of this session's credentials (what `kubectl` is given).
    pub async fn bearer_token(&self) -> Result<String, Error> {
        self.cloud
            .bearer_token()
            .await
            .map_err(|e| Error::Engine(crate::engine::ops::EngineError::from(e)))
    }

    /// Names the verification probe image, by digest (`<name>@sha256:<64 hex>`): the image
    /// built from `deploy/probe/`. Verification needs one.
    pub fn with_probe_image(mut self, image: impl Into<String>) -> Session {
        self.probe_image = Some(image.into());
        self
    }

    /// Keeps each verification's receipts (the exact, private evidence) under `dir`.
    pub fn with_evidence_dir(mut self, dir: impl Into<PathBuf>) -> Session {
        self.evidence_dir = Some(dir.into());
        self
    }

    /// On the simulator: runs this `fleetbot` binary as the verification probe, named by its
    /// own digest, as `fleetbot verify-storage` does on the embedded simulator. Elsewhere an
    /// error: a real cluster runs images, not local files.
    pub fn with_probe_binary(mut self, binary: impl Into<PathBuf>) -> Result<Session, Error> {
        let binary = binary.into();
        let Some(sim) = &self.embedded else {
            return Err(SessionError::ProbeBinaryOffSimulator.into());
        };
        let image =
            super::connect::register_probe_binary(&sim.kube, binary.clone()).map_err(|source| {
                SessionError::File {
                    what: "read",
                    path: binary,
                    source,
                }
            })?;
        self.probe_image = Some(image);
        Ok(self)
    }

    /// The probe image the simulator runs without being told: the resident's, or this very
    /// binary registered with the embedded one; `None` on a real cloud.
    pub fn simulated_probe_image(&self) -> Result<Option<String>, Error> {
        if let Some(resident) = &self.resident {
            return Ok(Some(resident.probe_image.clone()));
        }
        let Some(sim) = &self.embedded else {
            return Ok(None);
        };
        let exe = std::env::current_exe().map_err(|source| SessionError::File {
            what: "read",
            path: PathBuf::from("this binary"),
            source,
        })?;
        super::connect::register_probe_binary(&sim.kube, exe.clone())
            .map(Some)
            .map_err(|source| {
                SessionError::File {
                    what: "read",
                    path: exe,
                    source,
                }
                .into()
            })
    }

    /// Lets other processes reach this session's embedded simulator as a resident one, with a
    /// token of their own (`None` unless the simulator is embedded here).
    pub fn share_embedded(&self, probe_image: String) -> Option<super::resident::Resident> {
        let sim = self.embedded.as_ref()?;
        let token = format!("sim1.{}", uuid::Uuid::new_v4().simple());
        sim.service.accept_token(&token, i64::MAX);
        Some(super::resident::Resident {
            pid: std::process::id(),
            endpoint: sim.endpoint(),
            tenant_id: sim.tenant_id(),
            token,
            probe_image,
        })
    }

    /// Ends the session, stopping an embedded simulator with its state saved (so a resident
    /// one can serve that state next).
    pub async fn stop(self) {
        if let Some(sim) = self.embedded {
            sim.stop().await;
        }
    }

    /// Lets this session's guarded applies keep their reviewed plans, approvals, runs, audit
    /// and leases in `store`; a lease not renewed for `lease` runs out (a crashed holder's).
    pub fn with_deploy_state(
        mut self,
        store: impl DeployStore + 'static,
        lease: Duration,
    ) -> Session {
        self.deploy = Some(DeployState {
            store: Arc::new(store),
            lease,
        });
        self
    }

    /// Whether merges may be applied through this session: it keeps deploy state and knows
    /// its tenant.
    pub fn applies(&self) -> bool {
        self.deploy.is_some() && !self.tenant_id.is_empty()
    }

    /// This session as the App's apply job holds it, when it [`applies`](Session::applies).
    pub fn deploying(&self) -> Option<super::backend::Deploying<'_>> {
        let state = self.deploy.as_ref()?;
        (!self.tenant_id.is_empty()).then_some(super::backend::Deploying {
            session: self,
            store: &state.store,
            lease: state.lease,
            tenant_id: &self.tenant_id,
        })
    }

    pub(crate) fn evidence_dir(&self) -> Option<&Path> {
        self.evidence_dir.as_deref()
    }

    pub(crate) fn configured_probe_image(&self) -> Option<&str> {
        self.probe_image.as_deref()
    }

    pub(crate) fn cloud(&self) -> &NebiusClient {
        &self.cloud
    }

    pub(crate) fn inventory(&self) -> &Arc<dyn InventoryStore> {
        &self.inventory
    }

    /// The tenant of `spec` for the library and the CLI: the spec's own, else the session's.
    pub(super) fn tenant_for(&self, spec: &FleetSpec) -> Result<String, Error> {
        if !spec.tenant_id.is_empty() {
            return Ok(spec.tenant_id.clone());
        }
        if self.tenant_id.is_empty() {
            return Err(SessionError::NoTenant.into());
        }
        Ok(self.tenant_id.clone())
    }

    pub(super) fn probe_image(&self) -> Result<&str, Error> {
        self.probe_image
            .as_deref()
            .ok_or_else(|| SessionError::NoProbeImage.into())
    }
}

/// The CLI's inventory: a SQLite file ([`SessionOptions::inventory_path`]).
pub type Inventory = SqliteStore;
