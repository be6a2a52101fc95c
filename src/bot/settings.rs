//! How the bot is configured beyond its GitHub client: the cloud it plans against, fixed quota
//! evidence, and how much of a pull request it fetches.

use std::fmt;
use std::sync::Arc;

use crate::fleet::{Deploying, Session};
use crate::quota::evidence::QuotaEvidence;

/// Where quota evidence comes from for the budget, and for which tenant.
#[derive(Clone)]
pub struct QuotaSource {
    /// The tenant whose allowances apply (private: never shown or logged).
    pub tenant_id: String,
    pub evidence: Arc<dyn QuotaEvidence + Send + Sync>,
}

impl fmt::Debug for QuotaSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QuotaSource")
            .field("tenant_id", &"<redacted>")
            .finish_non_exhaustive()
    }
}

/// How the bot works, beyond the GitHub client.
#[derive(Clone)]
pub struct BotSettings {
    /// The session each changed spec is planned against, live; its quota evidence is the
    /// budget's. When it [`applies`](Session::applies), merges are applied through it; else a
    /// merge applies nothing (and says so only in the log).
    pub cloud: Option<Arc<Session>>,
    /// Fixed quota evidence for the budget when there is no cloud. With neither, the budget is
    /// reported as not checked and `fleet/preflight` is `neutral`.
    pub quota: Option<QuotaSource>,
    /// Changed files other than specs whose content is fetched for the privacy scan; the
    /// rest are reported as not scanned, which fails `fleet/privacy`.
    pub max_fetched_files: usize,
    /// Larger files other than specs are not fetched (and fail `fleet/privacy` as unread).
    pub max_file_bytes: usize,
    /// Changed specs read per pull request (each at its head and base); the rest are
    /// reported as not read, which fails both checks.
    pub max_spec_files: usize,
    /// Larger specs are not fetched; at most the spec reader's own limit.
    pub max_spec_bytes: usize,
    /// The operator's private values for the specs' placeholders (`FLEETBOT_RUNTIME_VALUES`),
    /// filled in wherever the App reads a spec; never read from a pull request.
    pub runtime: Option<Arc<crate::runtime::RuntimeValues>>,
    /// Unchanged spec files already read, by blob SHA, shared by every clone of these settings.
    pub spec_blobs: crate::bot::spec_blobs::SpecBlobs,
}

impl fmt::Debug for BotSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BotSettings")
            .field("cloud", &self.cloud.as_ref().map(|c| c.public_name()))
            .field("applies", &self.deploy().is_some())
            .field("quota", &self.quota)
            .field("max_fetched_files", &self.max_fetched_files)
            .field("max_file_bytes", &self.max_file_bytes)
            .field("max_spec_files", &self.max_spec_files)
            .field("max_spec_bytes", &self.max_spec_bytes)
            .field("runtime", &self.runtime.is_some())
            .finish()
    }
}

impl Default for BotSettings {
    fn default() -> Self {
        BotSettings {
            cloud: None,
            quota: None,
            max_fetched_files: 300,
            max_file_bytes: 1 << 20,
            max_spec_files: 100,
            max_spec_bytes: crate::github::client::MAX_CONTENT_BYTES,
            runtime: None,
            spec_blobs: Default::default(),
        }
    }
}

impl BotSettings {
    /// Reads a spec the App fetched, with the server's runtime values filled in.
    pub fn load_spec(
        &self,
        text: &str,
        path: &str,
    ) -> Result<crate::spec::FleetSpec, crate::spec::SpecError> {
        crate::runtime::load_str_with(text, path, self.runtime.as_deref())
    }

    /// The session merges are applied through, when there is one that applies.
    pub fn deploy(&self) -> Option<Deploying<'_>> {
        self.cloud.as_deref().and_then(Session::deploying)
    }
}
