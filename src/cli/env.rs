//! The environment, read at the edge: every variable the library's [`SessionOptions`] take,
//! so the library itself reads none.

use std::path::PathBuf;

use crate::fleet::connect::ConnectError;
use crate::fleet::{CloudChoice, SessionOptions};

fn nonempty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The session options the process environment gives, `profile` as `--profile` (empty: the
/// environment's or the active one).
pub fn session_options(profile: &str) -> Result<SessionOptions, ConnectError> {
    Ok(SessionOptions {
        choice: CloudChoice::parse(&std::env::var("FLEETBOT_CLOUD").unwrap_or_default())?,
        ..credentials_options(profile)
    })
}

/// Everything but the choice of cloud (for `serve`, which takes it from `--cloud`).
pub fn credentials_options(profile: &str) -> SessionOptions {
    SessionOptions {
        choice: CloudChoice::Auto,
        iam_token: nonempty("NEBIUS_IAM_TOKEN"),
        endpoint: nonempty("NEBIUS_ENDPOINT"),
        profile: if profile.is_empty() {
            nonempty("NEBIUS_PROFILE").unwrap_or_default()
        } else {
            profile.to_string()
        },
        nebius_config: nebius_config(),
        sim_world: nonempty("FLEETBOT_SIM_WORLD").map(PathBuf::from),
        sim_state: nonempty("FLEETBOT_SIM_STATE").map(PathBuf::from),
        tenant_id: tenant(),
        inventory: nonempty("FLEETBOT_INVENTORY").map(PathBuf::from),
    }
}

/// `FLEETBOT_TENANT_ID`, when set: the tenant for specs that name none, for the CLI as for the
/// server.
pub fn tenant() -> Option<String> {
    nonempty("FLEETBOT_TENANT_ID").map(|t| t.trim().to_string())
}

/// `FLEETBOT_NEBIUS_CONFIG`, when set: the Nebius CLI's config in place of
/// `~/.nebius/config.yaml`.
pub fn nebius_config() -> Option<PathBuf> {
    nonempty("FLEETBOT_NEBIUS_CONFIG").map(PathBuf::from)
}

/// The runtime values file named by `--runtime-values` (`flag`) when given, else by
/// `FLEETBOT_RUNTIME_VALUES`, else none.
pub fn runtime_values(
    flag: Option<&std::path::Path>,
) -> Result<Option<crate::runtime::RuntimeValues>, crate::spec::SpecError> {
    let from_env = std::env::var_os(crate::runtime::RUNTIME_VALUES_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    match flag.map(std::path::Path::to_path_buf).or(from_env) {
        Some(path) => crate::runtime::RuntimeValues::load(&path).map(Some),
        None => Ok(None),
    }
}
