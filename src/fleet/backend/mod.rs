//! What the App's jobs need of the session beyond a live plan: [`Deploying`] (the session as
//! the apply job holds it, with the store of reviewed plans, approvals, apply runs, audit
//! records and per-fleet leases, [`DeployStore`]), the fleet's lease key, and the session's
//! status and verification runs as a pull request may be shown them.
//!
//! Its applying methods live in `fleet::apply`: only the guarded apply and the waves it rolls
//! out call them, after `fleet::guard::decide` allowed the plan; `src/architecture.rs` fails
//! on a call anywhere else.

use std::sync::Arc;

use sha2::{Digest, Sha256};

use super::Session;
use super::live::{LiveError, LiveErrorKind, public_error};
use crate::engine::ops::{Event, Progress, StatusResult};
use crate::spec::FleetSpec;
use crate::store::DeployStore;
use crate::verify::graphics_report::GraphicsReport;
use crate::verify::options::KindSettings;
use crate::verify::{
    GraphicsOptions, GraphicsRun, MigError, MigFleetReport, MigOptions, MigVerificationReport,
    Options, StorageOptions, StorageReport, StorageRun, VerifyError, verify_graphics,
    verify_mig_fleet, verify_storage,
};

/// A verification error as the App may show it: selection errors name only the spec's own
/// (public) names; anything else is logged and said in general words.
fn verify_error(e: VerifyError) -> LiveError {
    match e {
        VerifyError::Select(e) => LiveError::new(LiveErrorKind::Engine, e.to_string()),
        VerifyError::Image(_) => LiveError::new(
            LiveErrorKind::Engine,
            "the configured probe image is not named by digest",
        ),
        other => {
            tracing::warn!(error = %other, "a verification could not run");
            LiveError::new(
                LiveErrorKind::Store,
                "verification could not run (see the bot's log)",
            )
        }
    }
}

/// The options of a verification the App runs (the clusters a command named, all when none;
/// the spec's prefix, the App's tenant and evidence directory) and its progress, logged.
fn app_run<K: KindSettings>(
    session: &Session,
    spec: &FleetSpec,
    tenant_id: &str,
    clusters: Vec<String>,
) -> Result<(Options<K>, Progress), LiveError> {
    let Some(image) = session.configured_probe_image() else {
        return Err(no_probe_image());
    };
    let mut options = Options::<K>::new(image);
    options.only_clusters = clusters;
    options.project_prefix = spec.project_prefix.clone();
    options.tenant = Some(tenant_id.to_string());
    options.evidence_dir = session.evidence_dir().map(Into::into);
    let kind = K::KIND.as_str();
    let progress: Progress =
        Arc::new(move |event: &Event| tracing::info!("verify-{kind}: {event}"));
    Ok((options, progress))
}

fn no_probe_image() -> LiveError {
    LiveError::new(
        LiveErrorKind::Engine,
        "no probe image is configured (FLEETBOT_PROBE_IMAGE)",
    )
}

/// A session that applies ([`Session::deploying`]): what the App's apply job, its commands
/// and its guard hold. It borrows the session, so the session stays the one value holding the
/// cloud.
#[derive(Clone, Copy)]
pub struct Deploying<'a> {
    /// The session, as the apply job may change its cloud.
    pub session: &'a Session,
    /// Reviewed plans, approvals, apply runs, the audit log and fleet leases.
    pub store: &'a Arc<dyn DeployStore>,
    /// How long an apply's fleet lease lasts without renewal (a crashed holder's lease runs
    /// out after this).
    pub lease: std::time::Duration,
    /// The tenant applies go to (never shown or logged); part of each fleet's lease key.
    pub tenant_id: &'a str,
}

impl std::ops::Deref for Deploying<'_> {
    type Target = Session;

    fn deref(&self) -> &Session {
        self.session
    }
}

impl std::fmt::Debug for Deploying<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deploying")
            .field("cloud", &self.session.public_name())
            .field("tenant_id", &"<redacted>")
            .field("lease", &self.lease)
            .finish_non_exhaustive()
    }
}

/// The key of a fleet's apply lease: the fleet's identity, its tenant (as a digest, never the
/// ID) and its name, as the engine's labels and inventory know it. Whichever file or
/// repository declares the fleet, one apply of it runs at a time.
pub fn fleet_lease_key(tenant_id: &str, fleet: &str) -> String {
    let tenant = Sha256::digest(tenant_id.as_bytes());
    format!("t{}:fleet:{fleet}", &hex::encode(tenant)[..12])
}

/// Verification runs as given: the CLI's (and the library's), with the run's whole error. A
/// report whose `passed` is false is a result, not an error.
impl Session {
    /// Proves the shared filesystem of the targets `options` select on every worker.
    pub async fn verify_storage(
        &self,
        spec: &FleetSpec,
        options: &StorageOptions,
        progress: Progress,
        interrupt: tokio::sync::watch::Receiver<bool>,
    ) -> Result<StorageRun, VerifyError> {
        verify_storage(
            self.cloud(),
            self.inventory(),
            spec,
            options,
            progress,
            interrupt,
        )
        .await
    }

    /// Proves CUDA, GLX, EGL and Vulkan on every GPU worker of the targets `options` select.
    pub async fn verify_graphics(
        &self,
        spec: &FleetSpec,
        options: &GraphicsOptions,
        progress: Progress,
        interrupt: tokio::sync::watch::Receiver<bool>,
    ) -> Result<GraphicsRun, VerifyError> {
        verify_graphics(
            self.cloud(),
            self.inventory(),
            spec,
            options,
            progress,
            interrupt,
        )
        .await
    }

    /// Proves the MIG layout, Operator and slices of the one MIG cluster `options` select.
    pub async fn verify_mig(
        &self,
        spec: &FleetSpec,
        options: &MigOptions,
        progress: Progress,
        interrupt: tokio::sync::watch::Receiver<bool>,
    ) -> Result<MigVerificationReport, MigError> {
        crate::verify::verify_mig(
            self.cloud(),
            self.inventory(),
            spec,
            options,
            progress,
            interrupt,
        )
        .await
    }
}

/// The App's status and verification runs: reports a pull request may be shown, errors in
/// general words.
impl Session {
    /// The live status of the spec's targets.
    pub async fn fleet_status(&self, spec: &FleetSpec) -> Result<StatusResult, LiveError> {
        self.status(spec).await.map_err(|e| public_error(&e))
    }

    /// Verifies the shared storage of the spec's clusters (only `clusters`, when given) on
    /// every worker; the report is public, the receipts stay in the server's data directory.
    pub async fn verify_storage_fleet(
        &self,
        spec: &FleetSpec,
        tenant_id: &str,
        clusters: Vec<String>,
    ) -> Result<StorageReport, LiveError> {
        let (options, progress): (StorageOptions, _) = app_run(self, spec, tenant_id, clusters)?;
        // The server is never interrupted mid-run; a stopped job is taken over, and the
        // run's objects carry its label for the next run's cleanup to prove.
        let (_keep, interrupt) = tokio::sync::watch::channel(false);
        self.verify_storage(spec, &options, progress, interrupt)
            .await
            .map(|run| run.report)
            .map_err(verify_error)
    }

    /// Verifies CUDA, GLX, EGL and Vulkan on every GPU worker of the spec's clusters (only
    /// `clusters`, when given).
    pub async fn verify_graphics_fleet(
        &self,
        spec: &FleetSpec,
        tenant_id: &str,
        clusters: Vec<String>,
    ) -> Result<GraphicsReport, LiveError> {
        let (options, progress): (GraphicsOptions, _) = app_run(self, spec, tenant_id, clusters)?;
        let (_keep, interrupt) = tokio::sync::watch::channel(false);
        self.verify_graphics(spec, &options, progress, interrupt)
            .await
            .map(|run| run.report)
            .map_err(verify_error)
    }

    /// Verifies the MIG layout, Operator and slices of each of the spec's MIG clusters (only
    /// `clusters`, when given), one after another.
    pub async fn verify_mig_fleet(
        &self,
        spec: &FleetSpec,
        tenant_id: &str,
        clusters: Vec<String>,
    ) -> Result<MigFleetReport, LiveError> {
        let (mut options, progress): (MigOptions, _) = app_run(self, spec, tenant_id, clusters)?;
        // Two identical snapshots, as after a deploy; never --reconcile from a comment: a
        // driver repair is maintenance an operator starts.
        options.kind.wait = true;
        verify_mig_fleet(self.cloud(), self.inventory(), spec, &options, progress)
            .await
            .map_err(|e| match e {
                MigError::Selection(_) => LiveError::new(
                    LiveErrorKind::Engine,
                    "no MIG cluster of this fleet is selected",
                ),
                MigError::Verify(e) => verify_error(e),
            })
    }
}
