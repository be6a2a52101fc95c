//! A session: the cloud fleets run against (Nebius, or the simulator), the inventory fleetbot
//! keeps for it, and the tenant a spec that names none is deployed in.

use std::path::{Path, PathBuf};

use super::Error;
use super::connect::{
    ConnectOptions, Connection, connect, default_sim_state, embedded_simulator_of,
};
use crate::sim::World;
use crate::spec::FleetSpec;
use crate::store::{InventoryStore, SqliteStore, StoreError};

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

/// A cloud to run fleets against, and the inventory fleetbot keeps for it: the CLI's SQLite
/// file unless [`Session::with_inventory`] gave another store (PostgreSQL, as a server keeps).
///
/// Holding a session keeps an embedded simulator running; drop it when done.
pub struct Session<S = SqliteStore> {
    pub(super) connection: Connection,
    pub(super) inventory: S,
    tenant_id: String,
    probe_image: Option<String>,
}

impl<S> std::fmt::Debug for Session<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("cloud", &self.connection.client.description())
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
        let connection = embedded_simulator_of(world, Some(dir.join("sim.state"))).await?;
        let inventory = SqliteStore::open(&dir.join("inventory.sqlite")).await?;
        Session::ready(connection, inventory, None)
    }

    /// The cloud the CLI would use: Nebius when credentials are configured (`NEBIUS_IAM_TOKEN`,
    /// a service-account profile, `FLEETBOT_CLOUD`), else the embedded simulator with its
    /// state in the user's data directory; `profile` as `--profile` (empty: the active one).
    /// The inventory is the CLI's too.
    pub async fn from_env(profile: &str) -> Result<Session, Error> {
        let options = ConnectOptions::from_env(profile)?;
        let connection = connect(&options).await?;
        let inventory = open_inventory(&connection).await?;
        let tenant = env_tenant();
        Session::ready(connection, inventory, tenant)
    }

    fn ready(
        connection: Connection,
        inventory: SqliteStore,
        tenant: Option<String>,
    ) -> Result<Session, Error> {
        let tenant_id = tenant
            .or_else(|| connection.tenant_id.clone())
            .filter(|t| !t.is_empty())
            .unwrap_or_default();
        Ok(Session {
            connection,
            inventory,
            tenant_id,
            probe_image: None,
        })
    }
}

impl<S: InventoryStore + Clone + 'static> Session<S> {
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
    pub fn with_inventory<T: InventoryStore + Clone + 'static>(self, inventory: T) -> Session<T> {
        Session {
            connection: self.connection,
            inventory,
            tenant_id: self.tenant_id,
            probe_image: self.probe_image,
        }
    }

    /// The tenant fleets are deployed in when their spec names none (empty when neither the
    /// credentials nor `FLEETBOT_TENANT_ID` name one).
    pub fn tenant_id(&self) -> &str {
        &self.tenant_id
    }

    /// Whether this is the simulator.
    pub fn is_simulated(&self) -> bool {
        self.connection.is_simulated()
    }

    /// What the session talks to, in words (for a log line).
    pub fn description(&self) -> String {
        self.connection.client.description().to_string()
    }

    /// Names the verification probe image, by digest (`<name>@sha256:<64 hex>`): the image
    /// built from `deploy/probe/`. Verification needs one.
    pub fn with_probe_image(mut self, image: impl Into<String>) -> Session<S> {
        self.probe_image = Some(image.into());
        self
    }

    /// On the simulator: runs this `fleetbot` binary as the verification probe, named by its
    /// own digest, as `fleetbot verify-storage` does on the embedded simulator. Elsewhere an
    /// error: a real cluster runs images, not local files.
    pub fn with_probe_binary(mut self, binary: impl Into<PathBuf>) -> Result<Session<S>, Error> {
        let binary = binary.into();
        let Some(sim) = &self.connection.simulator else {
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

/// `FLEETBOT_TENANT_ID`, when set: the tenant for specs that name none, for the CLI as for the
/// server.
pub fn env_tenant() -> Option<String> {
    std::env::var("FLEETBOT_TENANT_ID")
        .ok()
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
}

/// The CLI's inventory: a SQLite file ([`open_inventory`]).
pub type Inventory = SqliteStore;

/// The inventory for this cloud: beside the simulator's state when simulated (so the two
/// never mix), else `FLEETBOT_INVENTORY` or the user's data directory.
pub async fn open_inventory(connection: &Connection) -> Result<Inventory, StoreError> {
    SqliteStore::open(&inventory_path(connection.is_simulated())).await
}

/// Where [`open_inventory`] keeps the inventory of the embedded simulator (`simulated`) or of
/// Nebius. `serve` on the embedded simulator defaults its store to the same file, so its
/// dashboard shows the clusters the CLI deployed there.
pub fn inventory_path(simulated: bool) -> PathBuf {
    if let Some(path) = std::env::var_os("FLEETBOT_INVENTORY") {
        return PathBuf::from(path);
    }
    if simulated {
        let state = std::env::var_os("FLEETBOT_SIM_STATE")
            .map(PathBuf::from)
            .unwrap_or_else(|| default_sim_state("default"));
        return state.with_extension("inventory.sqlite");
    }
    dirs::data_dir()
        .or_else(dirs::home_dir)
        .unwrap_or_else(std::env::temp_dir)
        .join("fleetbot")
        .join("inventory.sqlite")
}
