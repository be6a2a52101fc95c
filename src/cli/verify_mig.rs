//! `fleetbot verify-mig`: the one selected MIG target's layout proven on every GPU node
//! (fleet-engine §7.3, §8.1): exactly one target by `--project`/`--cluster` (else a usage
//! error, exit 2), identity proven, `--wait` for two identical snapshots, `--reconcile` to
//! replace stale OnDelete driver pods as maintenance, then the MIG probe on every GPU node.
//! The report names each GPU node by its worker ordinal (a node's own name is its compute
//! instance's ID); the names go only to `--evidence-dir`. Exit 1 when not ready.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;

use super::lifecycle::{open_cloud, profile_for, progress_for, runtime_for};
use super::output::OutputFormat;
use super::verify::{finish, interrupt_on_ctrl_c, probe_image, profile_tenant};
use crate::spec::FleetSpec;
use crate::verify::evidence_dir::EvidenceDir;
use crate::verify::{MigError, MigOptions, MigVerificationReport, select_mig_target};

#[derive(Debug, Args)]
pub struct VerifyMigArgs {
    #[command(flatten)]
    pub spec: super::args::SpecArgs,
    /// This target's kubeconfig; its endpoint and CA must still be the cluster's.
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// The project (key or display name).
    #[arg(long, value_name = "KEY")]
    pub project: Option<String>,
    #[arg(long, value_name = "NAME")]
    pub cluster: Option<String>,
    /// Wait for two identical consecutive snapshots within the cluster's GPU health timeout.
    #[arg(long, overrides_with = "no_wait")]
    pub wait: bool,
    #[arg(long = "no-wait", hide = true)]
    pub no_wait: bool,
    /// Replace driver pods left on an old template (OnDelete), one node at a time, never
    /// under an application's GPU pods; the node's scheduling is restored after.
    #[arg(long, overrides_with = "no_reconcile")]
    pub reconcile: bool,
    #[arg(long = "no-reconcile", hide = true)]
    pub no_reconcile: bool,
    #[arg(long, default_value = "")]
    pub profile: String,
    #[arg(long)]
    pub project_prefix: Option<String>,
    #[arg(long, env = "FLEETBOT_PROBE_IMAGE", value_name = "IMAGE")]
    pub probe_image: Option<String>,
    /// Write the private receipt (the report with each worker's node name) under a fresh
    /// directory here, mode 0600; never inside a git checkout.
    #[arg(long, value_name = "PATH")]
    pub evidence_dir: Option<PathBuf>,
    /// Seconds between snapshots under `--wait`.
    #[arg(long, default_value_t = 5, hide = true, value_parser = clap::value_parser!(u64).range(1..))]
    pub poll_seconds: u64,
    #[arg(long, alias = "output-format", value_enum, default_value_t = OutputFormat::Text, value_name = "fmt")]
    pub output: OutputFormat,
}

async fn run_async(
    args: &VerifyMigArgs,
    spec: &FleetSpec,
) -> Result<MigVerificationReport, String> {
    // A directory that cannot keep the receipt is refused before anything is contacted.
    let evidence = args
        .evidence_dir
        .as_deref()
        .map(EvidenceDir::create)
        .transpose()
        .map_err(|e| e.to_string())?;
    let profile = profile_for(spec, &args.profile);
    let session = open_cloud(&profile).await?;
    let image = probe_image(args.probe_image.as_ref(), &session)?;
    let mut options = MigOptions::new(&image);
    options.only_projects = args.project.iter().cloned().collect();
    options.only_clusters = args.cluster.iter().cloned().collect();
    options.project_prefix = args
        .project_prefix
        .clone()
        .unwrap_or_else(|| spec.project_prefix.clone());
    options.tenant = profile_tenant(spec, &session, &profile);
    options.kind.kubeconfig = args.kubeconfig.clone();
    options.kind.wait = args.wait;
    options.kind.reconcile = args.reconcile;
    options.kind.poll = Duration::from_secs(args.poll_seconds);
    let (interrupt, signals) = interrupt_on_ctrl_c();
    let progress = progress_for(1, args.output == OutputFormat::Json);
    let report = session
        .verify_mig(spec, &options, progress, interrupt)
        .await;
    signals.abort();
    let (mut public, receipt) = report.map_err(|e| e.to_string())?.published();
    if let Some(dir) = &evidence {
        public.evidence_sha256 = dir
            .write(0, receipt.as_bytes())
            .map_err(|e| e.to_string())?;
        eprintln!("fleetbot: receipts in {}", dir.path.display());
    }
    Ok(public)
}

pub fn run(args: VerifyMigArgs) -> ExitCode {
    let spec = match args.spec.load() {
        Ok(spec) => spec,
        Err(code) => return code,
    };
    let prefix = args
        .project_prefix
        .clone()
        .unwrap_or_else(|| spec.project_prefix.clone());
    // The selection is a usage error, refused before anything is contacted.
    if let Err(e @ MigError::Selection(_)) = select_mig_target(
        &spec,
        args.project.as_deref(),
        args.cluster.as_deref(),
        &prefix,
    ) {
        eprintln!("fleetbot verify-mig: {e}");
        return ExitCode::from(2);
    }
    let result = match runtime_for(&profile_for(&spec, &args.profile)) {
        Ok(rt) => rt.block_on(run_async(&args, &spec)),
        Err(e) => Err(e.to_string()),
    };
    finish(
        result,
        args.output,
        |r: &MigVerificationReport| (r.ready, r.render_json(), r.render_text()),
        r#"{"ready": false, "errors": ["mig_verification_unavailable"]}"#.to_string(),
    )
}
