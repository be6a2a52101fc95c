//! What the App's jobs need of the cloud beyond a live plan: the [`Deployer`] (the cloud the
//! apply job may change, and the store of reviewed plans, approvals, apply runs, audit records
//! and per-fleet leases, [`DeployStore`]) held in the bot's settings, the fleet's lease key,
//! and the [`CloudPlanner`]'s status and verification runs.
//!
//! Its applying methods live in `fleet::apply`: only the guarded apply and the waves it rolls
//! out call them, after `fleet::guard::decide` allowed the plan; `src/architecture.rs` fails
//! on a call anywhere else.

use std::sync::Arc;

use sha2::{Digest, Sha256};

use super::live::{CloudPlanner, LiveError, LiveErrorKind, VerifyConfig, public_error};
use crate::engine::ops::{Event, Progress, StatusResult, status};
use crate::spec::FleetSpec;
use crate::store::DeployStore;
use crate::verify::graphics_report::GraphicsReport;
use crate::verify::options::KindSettings;
use crate::verify::{
    GraphicsOptions, MigError, MigFleetReport, MigOptions, Options, StorageOptions, StorageReport,
    VerifyError, verify_graphics, verify_mig_fleet, verify_storage,
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
    config: &VerifyConfig,
    spec: &FleetSpec,
    tenant_id: &str,
    clusters: Vec<String>,
) -> Result<(Options<K>, Progress), LiveError> {
    let Some(image) = &config.probe_image else {
        return Err(no_probe_image());
    };
    let mut options = Options::<K>::new(image);
    options.only_clusters = clusters;
    options.project_prefix = spec.project_prefix.clone();
    options.tenant = Some(tenant_id.to_string());
    options.evidence_dir = config.evidence_root.clone();
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

/// What applying needs: the cloud and the store. Without it, merges are acknowledged and
/// nothing is applied.
#[derive(Clone)]
pub struct Deployer {
    /// The cloud, as the apply job may change it.
    pub applier: Arc<CloudPlanner>,
    /// Reviewed plans, approvals, apply runs, the audit log and fleet leases.
    pub state: Arc<dyn DeployStore>,
    /// The tenant applies go to (never shown or logged); part of each fleet's lease key.
    pub tenant_id: String,
    /// How long an apply's fleet lease lasts without renewal (a crashed holder's lease runs
    /// out after this).
    pub lease: std::time::Duration,
}

impl std::fmt::Debug for Deployer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deployer")
            .field("cloud", &self.applier.public_name())
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

impl CloudPlanner {
    /// The live status of the spec's targets.
    pub async fn fleet_status(&self, spec: &FleetSpec) -> Result<StatusResult, LiveError> {
        status(self.cloud(), self.inventory(), spec)
            .await
            .map_err(|e| public_error(&e))
    }

    /// Verifies the shared storage of the spec's clusters (only `clusters`, when given) on
    /// every worker; the report is public, the receipts stay in the server's data directory.
    pub async fn verify_storage_fleet(
        &self,
        spec: &FleetSpec,
        tenant_id: &str,
        clusters: Vec<String>,
    ) -> Result<StorageReport, LiveError> {
        let (options, progress): (StorageOptions, _) =
            app_run(self.verification(), spec, tenant_id, clusters)?;
        // The server is never interrupted mid-run; a stopped job is taken over, and the
        // run's objects carry its label for the next run's cleanup to prove.
        let (_keep, interrupt) = tokio::sync::watch::channel(false);
        verify_storage(
            self.cloud(),
            self.inventory(),
            spec,
            &options,
            progress,
            interrupt,
        )
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
        let (options, progress): (GraphicsOptions, _) =
            app_run(self.verification(), spec, tenant_id, clusters)?;
        let (_keep, interrupt) = tokio::sync::watch::channel(false);
        verify_graphics(
            self.cloud(),
            self.inventory(),
            spec,
            &options,
            progress,
            interrupt,
        )
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
        let (mut options, progress): (MigOptions, _) =
            app_run(self.verification(), spec, tenant_id, clusters)?;
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
