//! The work a delivery starts, once its event handler has decided there is some: each job
//! fetches its inputs through the repository client, runs the pure evaluation and publishes
//! what it produced. Jobs know nothing of events, so a push and a `/plan` run the same one.

pub mod other_specs;
pub mod preflight;

use super::config::{CONFIG_PATH, LoadedConfig};
use crate::github::{ClientError, RepoClient};

/// The repository config, read from the default branch only (a pull request cannot change the
/// rules it is checked by).
pub(super) async fn load_config(repo: &RepoClient) -> Result<LoadedConfig, ClientError> {
    let branch = repo.default_branch().await?;
    let content = repo.file_content(CONFIG_PATH, &branch).await?;
    Ok(LoadedConfig::from_default_branch(
        &branch,
        content.as_deref(),
    ))
}
