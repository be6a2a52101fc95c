//! Choosing the cloud: real Nebius when credentials are configured, otherwise the embedded
//! simulator — announced, never silent, and never a fallback once credentials are set.
//!
//! The choice lives here, at the edge, because only the commands need both clouds: the client
//! layer must not know its own test double, and the simulator must not know the client.

use std::path::{Path, PathBuf};

use crate::cloud::auth::Credentials;
use crate::cloud::client::{Endpoints, NebiusClient};
use crate::cloud::credentials::{CredentialSources, configured_client, credentials_configured};
use crate::sim::k8s::KubeApi;
use crate::sim::{Simulator, World};

// Where the CLI's commands find a profile's tenant, as Nebius's own tools keep it.
pub use crate::cloud::profile::{NebiusConfig, default_config_path};

/// Why no cloud could be chosen or reached.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// `FLEETBOT_CLOUD` names no cloud fleetbot knows.
    #[error("FLEETBOT_CLOUD={0:?}: expected auto, nebius or simulator")]
    UnknownChoice(String),
    /// `FLEETBOT_CLOUD=nebius` without credentials.
    #[error(
        "FLEETBOT_CLOUD=nebius but no credentials are configured: set NEBIUS_IAM_TOKEN or a service-account profile in ~/.nebius/config.yaml"
    )]
    NoCredentials,
    /// The configured credentials do not read (the profile, the key file, the endpoint).
    #[error(transparent)]
    Credentials(#[from] crate::cloud::credentials::CredentialsError),
    /// The simulator's world file does not read or validate.
    #[error(transparent)]
    World(#[from] crate::sim::world::WorldError),
    /// A directory for the simulator's state could not be made.
    #[error("cannot create {}: {source}", path.display())]
    Directory {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The embedded simulator did not start.
    #[error("cannot start the embedded simulator: {0}")]
    Simulator(String),
}

/// Which cloud to use (`FLEETBOT_CLOUD`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CloudChoice {
    /// Nebius when credentials are configured, the embedded simulator otherwise.
    #[default]
    Auto,
    /// Nebius only; missing credentials are an error.
    Nebius,
    /// The embedded simulator, even with credentials configured.
    Simulator,
}

impl CloudChoice {
    /// Reads `FLEETBOT_CLOUD`'s value; empty is [`CloudChoice::Auto`], anything unknown an
    /// error naming what is accepted.
    pub fn parse(value: &str) -> Result<CloudChoice, ConnectError> {
        match value.trim().to_ascii_lowercase().as_str() {
            "" | "auto" => Ok(CloudChoice::Auto),
            "nebius" => Ok(CloudChoice::Nebius),
            "simulator" | "sim" => Ok(CloudChoice::Simulator),
            other => Err(ConnectError::UnknownChoice(other.to_string())),
        }
    }
}

/// What a [`Session`](super::Session) is opened with: which cloud, its credentials, the
/// simulator's world and state, the tenant and the CLI's inventory. The library reads no
/// environment variable: the CLI and the server fill these from theirs.
#[derive(Debug, Clone, Default)]
pub struct SessionOptions {
    /// Nebius, the simulator, or whichever the credentials say (`FLEETBOT_CLOUD`).
    pub choice: CloudChoice,
    /// `NEBIUS_IAM_TOKEN`.
    pub iam_token: Option<String>,
    /// `NEBIUS_ENDPOINT`.
    pub endpoint: Option<String>,
    /// The profile to read credentials from (`--profile`, `NEBIUS_PROFILE`, else the active one).
    pub profile: String,
    /// `~/.nebius/config.yaml` unless overridden (`FLEETBOT_NEBIUS_CONFIG`).
    pub nebius_config: Option<PathBuf>,
    /// The simulator world (`FLEETBOT_SIM_WORLD`); the embedded default otherwise.
    pub sim_world: Option<PathBuf>,
    /// Where the embedded simulator keeps its state (`FLEETBOT_SIM_STATE`); the user's data
    /// directory otherwise.
    pub sim_state: Option<PathBuf>,
    /// The tenant for specs that name none (`FLEETBOT_TENANT_ID`); else the credentials'.
    pub tenant_id: Option<String>,
    /// The CLI's inventory file (`FLEETBOT_INVENTORY`); see [`SessionOptions::inventory_path`].
    pub inventory: Option<PathBuf>,
}

impl SessionOptions {
    fn sources(&self) -> CredentialSources<'_> {
        CredentialSources {
            iam_token: self.iam_token.as_deref(),
            endpoint: self.endpoint.as_deref(),
            profile: &self.profile,
            nebius_config: self.nebius_config.as_deref(),
            required: self.choice == CloudChoice::Nebius,
        }
    }

    /// Whether [`connect`] would reach a cloud outside this process (Nebius, or a simulator
    /// at `NEBIUS_ENDPOINT`) rather than start the embedded simulator in it.
    pub fn names_a_cloud(&self) -> bool {
        match self.choice {
            CloudChoice::Simulator => false,
            CloudChoice::Nebius => true,
            CloudChoice::Auto => credentials_configured(&self.sources()),
        }
    }

    /// Where the CLI keeps the inventory of the embedded simulator (`simulated`) or of Nebius:
    /// [`SessionOptions::inventory`] when set; beside the simulator's state when simulated (so
    /// the two never mix); else the user's data directory. `serve` on the embedded simulator
    /// defaults its store to the same file, so its dashboard shows what the CLI deployed.
    pub fn inventory_path(&self, simulated: bool) -> PathBuf {
        if let Some(path) = &self.inventory {
            return path.clone();
        }
        if simulated {
            let state = self
                .sim_state
                .clone()
                .unwrap_or_else(|| default_sim_state("default"));
            return state.with_extension("inventory.sqlite");
        }
        dirs::data_dir()
            .or_else(dirs::home_dir)
            .unwrap_or_else(std::env::temp_dir)
            .join("fleetbot")
            .join("inventory.sqlite")
    }
}

/// A reached cloud, before it is a [`Session`](super::Session). Holding it keeps an embedded
/// simulator running.
pub(super) struct Link {
    /// The Nebius API client (the simulator's too: it speaks the same gRPC).
    pub(super) client: NebiusClient,
    /// The simulator, when it runs in this process.
    pub(super) simulator: Option<Simulator>,
    /// The tenant, when the credentials' source names one.
    pub(super) tenant_id: Option<String>,
    /// The resident simulator of the embedded default's state, when that is what we talk to.
    pub(super) resident: Option<super::resident::Resident>,
}

impl Link {
    /// Whether this is a simulator, embedded or resident.
    pub(super) fn is_simulated(&self) -> bool {
        self.simulator.is_some() || self.resident.is_some()
    }
}

/// The default place of the embedded simulator's state.
pub fn default_sim_state(world: &str) -> PathBuf {
    dirs::data_dir()
        .or_else(dirs::home_dir)
        .unwrap_or_else(std::env::temp_dir)
        .join("fleetbot")
        .join("simulator")
        .join(format!("{world}.state"))
}

/// The state file the embedded simulator of these options uses.
pub fn sim_state_path(options: &SessionOptions) -> Result<PathBuf, ConnectError> {
    if let Some(state) = &options.sim_state {
        return Ok(state.clone());
    }
    let world = match &options.sim_world {
        Some(path) => World::load(path).map_err(ConnectError::World)?.name,
        None => World::embedded_default().name,
    };
    Ok(default_sim_state(&world))
}

/// Registers `binary` with a simulator's kubelet (`kube`) as the verification probe image,
/// named by the binary's own digest, and returns the name.
pub fn register_probe_binary(kube: &KubeApi, binary: PathBuf) -> std::io::Result<String> {
    use sha2::{Digest, Sha256};
    let bytes = std::fs::read(&binary)?;
    let image = format!(
        "fleetbot.local/fleetbot-probe@sha256:{}",
        hex::encode(Sha256::digest(&bytes))
    );
    kube.shared.set_image(&image, binary);
    Ok(image)
}

/// [`register_probe_binary`] of this very binary: what the embedded simulator does for each
/// command, and `fleetbot sim` once at start for the commands and servers that reach it.
pub fn register_this_binary(kube: &KubeApi) -> std::io::Result<String> {
    register_probe_binary(kube, std::env::current_exe()?)
}

/// Starts the embedded simulator and a client for it.
async fn embedded_simulator(
    world_file: Option<&Path>,
    state: Option<PathBuf>,
) -> Result<Link, ConnectError> {
    let world = match world_file {
        Some(path) => World::load(path).map_err(ConnectError::World)?,
        None => World::embedded_default(),
    };
    embedded_simulator_of(world, state).await
}

/// A link to a simulator another process runs (a resident one, or the server's own for its
/// job processes), described as `description`.
pub(super) fn resident_link(resident: super::resident::Resident, description: String) -> Link {
    let client = NebiusClient::new(
        Endpoints::Single {
            uri: resident.endpoint.clone(),
        },
        Credentials::Static(resident.token.clone()),
    )
    .described_as(description);
    Link {
        client,
        simulator: None,
        tenant_id: Some(resident.tenant_id.clone()),
        resident: Some(resident),
    }
}

/// Starts the embedded simulator of `world` and a client for it; state in `state`, else the
/// user's data directory.
pub(super) async fn embedded_simulator_of(
    world: World,
    state: Option<PathBuf>,
) -> Result<Link, ConnectError> {
    let state = match state {
        Some(state) => state,
        None => {
            let state = default_sim_state(&world.name);
            // The default directory is fleetbot's own: its user's alone, also when an older
            // fleetbot made it readable by all.
            if let Some(dir) = state.parent() {
                crate::store::private::own_dir(dir).map_err(|source| ConnectError::Directory {
                    path: dir.to_path_buf(),
                    source,
                })?;
            }
            state
        }
    };
    // A resident simulator already serves this state (`fleetbot kubeconfig` started it): talk
    // to it, not to a second simulator writing the same state.
    if let Some(resident) = super::resident::find(&state) {
        let description = format!(
            "the resident Nebius simulator (state {}, pid {})",
            state.display(),
            resident.pid
        );
        return Ok(resident_link(resident, description));
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| ConnectError::Simulator(e.to_string()))?;
    let mut simulator = Simulator::start(world, Some(state.clone()), listener)
        .await
        .map_err(ConnectError::Simulator)?;
    // It lives as long as this command: its state is written as it goes and when it ends.
    simulator.defer_persistence();
    let token = format!("sim1.{}", uuid::Uuid::new_v4().simple());
    simulator.service.accept_token(&token, i64::MAX);
    let client = NebiusClient::new(
        Endpoints::Single {
            uri: simulator.endpoint(),
        },
        Credentials::Static(token),
    )
    .described_as(format!(
        "the embedded Nebius simulator (state {})",
        state.display()
    ));
    let tenant_id = Some(simulator.tenant_id());
    Ok(Link {
        client,
        simulator: Some(simulator),
        tenant_id,
        resident: None,
    })
}

/// Connects as the options say. The embedded simulator is announced on stderr.
pub(super) async fn connect(options: &SessionOptions) -> Result<Link, ConnectError> {
    if let Some(connection) = connect_configured(options).await? {
        return Ok(connection);
    }
    let connection =
        embedded_simulator(options.sim_world.as_deref(), options.sim_state.clone()).await?;
    eprintln!(
        "fleetbot: no Nebius credentials configured; using {}",
        connection.client.description()
    );
    Ok(connection)
}

/// Connects to what is configured, without the embedded-simulator fallback: `Ok(None)` when
/// the choice is `auto` and no credentials are configured (the server then plans statically
/// instead of planning against a simulator nobody asked for).
pub(super) async fn connect_configured(
    options: &SessionOptions,
) -> Result<Option<Link>, ConnectError> {
    if options.choice == CloudChoice::Simulator {
        let connection =
            embedded_simulator(options.sim_world.as_deref(), options.sim_state.clone()).await?;
        eprintln!(
            "fleetbot: using {} (FLEETBOT_CLOUD=simulator)",
            connection.client.description()
        );
        return Ok(Some(connection));
    }
    if let Some(configured) =
        configured_client(&options.sources()).map_err(ConnectError::Credentials)?
    {
        return Ok(Some(Link {
            client: configured.client,
            simulator: None,
            tenant_id: configured.tenant_id,
            resident: None,
        }));
    }
    if options.choice == CloudChoice::Nebius {
        return Err(ConnectError::NoCredentials);
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choice_parses() {
        assert_eq!(CloudChoice::parse("").unwrap(), CloudChoice::Auto);
        assert_eq!(
            CloudChoice::parse("Simulator").unwrap(),
            CloudChoice::Simulator
        );
        assert!(CloudChoice::parse("aws").is_err());
    }

    #[tokio::test]
    async fn credentials_never_fall_back_to_the_simulator() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.yaml");
        std::fs::write(
            &path,
            "default: fed\nprofiles:\n  fed: {auth-type: federation}\n",
        )
        .unwrap();
        let options = SessionOptions {
            choice: CloudChoice::Nebius,
            nebius_config: Some(path.clone()),
            ..Default::default()
        };
        let err = connect(&options).await.err().unwrap();
        assert!(
            matches!(&err, ConnectError::Credentials(e) if e.to_string().contains("federation")),
            "{err}"
        );
        let options = SessionOptions {
            iam_token: Some("token".into()),
            endpoint: Some("http://10.0.0.1:1".into()),
            ..Default::default()
        };
        let err = connect(&options).await.err().unwrap();
        assert!(
            matches!(&err, ConnectError::Credentials(e) if e.to_string().contains("loopback")),
            "{err}"
        );
        let options = SessionOptions {
            iam_token: Some("token".into()),
            ..Default::default()
        };
        let connection = connect(&options).await.unwrap();
        assert!(!connection.is_simulated());
    }

    #[test]
    fn a_cloud_is_named_exactly_when_connect_would_not_embed_the_simulator() {
        let dir = tempfile::tempdir().unwrap();
        let federation = dir.path().join("federation.yaml");
        std::fs::write(
            &federation,
            "default: fed\nprofiles:\n  fed: {auth-type: federation}\n",
        )
        .unwrap();
        let nothing = dir.path().join("absent.yaml");
        let with = |choice, token: Option<&str>, config: &Path| SessionOptions {
            choice,
            iam_token: token.map(str::to_string),
            nebius_config: Some(config.to_path_buf()),
            ..Default::default()
        };
        assert!(with(CloudChoice::Auto, Some("t"), &nothing).names_a_cloud());
        assert!(!with(CloudChoice::Auto, None, &nothing).names_a_cloud());
        // A profile fleetbot cannot use is no cloud: `connect` falls back to the simulator.
        assert!(!with(CloudChoice::Auto, None, &federation).names_a_cloud());
        assert!(!with(CloudChoice::Simulator, Some("t"), &nothing).names_a_cloud());
        assert!(with(CloudChoice::Nebius, None, &nothing).names_a_cloud());
    }
}
