//! `fleetbot verify-storage` and `fleetbot verify-graphics`: the shared filesystem of every
//! selected target proven on every worker, and the graphics stack on every GPU worker
//! (fleet-engine §7.1, §7.2, §8.1). The public report goes to stdout (text, or one JSON
//! document), progress to stderr, the exact receipts only to `--evidence-dir`; exit 1 unless
//! every selected target passed. Ctrl-C stops the run and still cleans up.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use tokio::sync::watch;

use super::lifecycle::{open_cloud, profile_for, progress_for, runtime_for};
use super::output::OutputFormat;
use crate::clusters::load_kubeconfig_map;
use crate::fleet::Session;
use crate::spec::FleetSpec;
use crate::verify::graphics_report::GraphicsReport;
use crate::verify::options::KindSettings;
use crate::verify::{Graphics, Options, Storage, StorageReport};

#[derive(Debug, Args)]
pub struct VerifyStorageArgs {
    #[command(flatten)]
    pub spec: super::args::SpecArgs,
    #[command(flatten)]
    pub selection: super::args::SelectionArgs,
    /// Prefix of project display names (default: the spec's).
    #[arg(long)]
    pub project_prefix: Option<String>,
    /// Nebius profile (default: the spec's).
    #[arg(long, default_value = "")]
    pub profile: String,
    /// Write each target's private receipt (node names, raw evidence) under a fresh
    /// directory here, mode 0600; never inside a git checkout.
    #[arg(long, value_name = "PATH")]
    pub evidence_dir: Option<PathBuf>,
    /// A YAML map `<project-key>/<cluster>: <kubeconfig path>`; a listed target is reached
    /// through its kubeconfig, which must name the endpoint and CA the cloud reports.
    #[arg(long, value_name = "PATH")]
    pub kubeconfigs: Option<PathBuf>,
    /// The probe image, by digest (`<name>@sha256:<64 hex>`). On the embedded simulator it
    /// defaults to this very binary.
    #[arg(long, env = "FLEETBOT_PROBE_IMAGE", value_name = "IMAGE")]
    pub probe_image: Option<String>,
    /// Output format: text or json.
    #[arg(long, alias = "output-format", value_enum, default_value_t = OutputFormat::Text, value_name = "fmt")]
    pub output: OutputFormat,
    /// Targets verified at once (values below 1 become 1; default 8).
    #[arg(long, short = 'j', value_name = "INT", allow_negative_numbers = true)]
    pub concurrency: Option<i64>,
}

/// The probe image: the flag's, else this binary on the embedded simulator.
pub(super) fn probe_image(given: Option<&String>, session: &Session) -> Result<String, String> {
    let simulated = session.simulated_probe_image().map_err(|e| e.to_string())?;
    match (given, simulated) {
        (Some(image), _) => Ok(image.clone()),
        (None, Some(image)) => Ok(image),
        (None, None) => Err(
            "name the probe image by digest: --probe-image <name>@sha256:<digest> (or FLEETBOT_PROBE_IMAGE); deploy/probe/README.md says how it is built"
                .into(),
        ),
    }
}

/// How many targets a selection names (for the progress bar; 0 when it names none, which the
/// run then refuses).
fn selected_count(
    spec: &FleetSpec,
    projects: &[String],
    clusters: &[String],
    prefix: &str,
) -> usize {
    crate::fleet::select(spec, projects, clusters, prefix).map_or(0, |s| s.len())
}

/// A flag that turns true on Ctrl-C (the run then cleans up and fails), and its watcher.
pub(super) fn interrupt_on_ctrl_c() -> (watch::Receiver<bool>, tokio::task::JoinHandle<()>) {
    let (stop, interrupt) = watch::channel(false);
    let signals = tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("fleetbot: interrupted; cleaning up (the run still fails)");
            let _ = stop.send(true);
        }
    });
    (interrupt, signals)
}

/// Prints a run's report (or, in JSON mode, the unavailable document when it could not run)
/// and exits 1 unless it passed. `view` gives (passed, JSON, text) of a report.
pub(super) fn finish<R>(
    result: Result<R, String>,
    output: OutputFormat,
    view: impl Fn(&R) -> (bool, String, String),
    unavailable: String,
) -> ExitCode {
    match result {
        Ok(report) => {
            let (passed, json, text) = view(&report);
            match output {
                OutputFormat::Json => println!("{json}"),
                OutputFormat::Text => print!("{text}"),
            }
            if passed {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("{e}");
            if output == OutputFormat::Json {
                println!("{unavailable}");
            }
            ExitCode::FAILURE
        }
    }
}

/// The selection must name targets before anything is contacted (fleet-engine §7.1); returns
/// the names the selectors give.
fn check_selection(
    spec: &FleetSpec,
    args: &VerifyStorageArgs,
) -> Result<(Vec<String>, Vec<String>), String> {
    let prefix = args
        .project_prefix
        .as_deref()
        .unwrap_or(&spec.project_prefix);
    let (projects, clusters) = args.selection.names().map_err(|e| e.to_string())?;
    crate::verify::select_targets(spec, &projects, &clusters, prefix).map_err(|e| e.to_string())?;
    Ok((projects, clusters))
}

/// The profile's own tenant (not the spec's: identity compares the two).
pub(super) fn profile_tenant(spec: &FleetSpec, session: &Session, profile: &str) -> Option<String> {
    let mut without = spec.clone();
    without.tenant_id.clear();
    super::lifecycle::resolve_tenant(&without, session, profile).ok()
}

/// What a fleet verification of kind `K` needs before it runs: the cloud, the inventory, its
/// options from the flags every kind shares, and how many targets they select.
async fn prepare<K: KindSettings>(
    args: &VerifyStorageArgs,
    spec: &FleetSpec,
) -> Result<(Session, Options<K>, usize), String> {
    let (only_projects, only_clusters) = check_selection(spec, args)?;
    let profile = profile_for(spec, &args.profile);
    let session = open_cloud(&profile).await?;
    let image = probe_image(args.probe_image.as_ref(), &session)?;
    let mut options = Options::<K>::new(&image);
    options.only_projects = only_projects;
    options.only_clusters = only_clusters;
    options.project_prefix = args
        .project_prefix
        .clone()
        .unwrap_or_else(|| spec.project_prefix.clone());
    options.tenant = profile_tenant(spec, &session, &profile);
    options.evidence_dir = args.evidence_dir.clone();
    options.concurrency = super::lifecycle::concurrency(args.concurrency, false);
    options.kubeconfigs = args
        .kubeconfigs
        .as_deref()
        .map(load_kubeconfig_map)
        .transpose()
        .map_err(|e| e.to_string())?;
    let targets = selected_count(
        spec,
        &options.only_projects,
        &options.only_clusters,
        &options.project_prefix,
    );
    Ok((session, options, targets))
}

async fn run_async(args: &VerifyStorageArgs, spec: &FleetSpec) -> Result<StorageReport, String> {
    let (session, options, targets) = prepare::<Storage>(args, spec).await?;
    let (interrupt, signals) = interrupt_on_ctrl_c();
    let progress = progress_for(targets, args.output == OutputFormat::Json);
    let run = session
        .verify_storage(spec, &options, progress, interrupt)
        .await;
    signals.abort();
    let run = run.map_err(|e| e.to_string())?;
    if let Some(dir) = &run.receipts {
        eprintln!("fleetbot: receipts in {}", dir.display());
    }
    Ok(run.report)
}

pub fn run(args: VerifyStorageArgs) -> ExitCode {
    let spec = match args.spec.load() {
        Ok(spec) => spec,
        Err(code) => return code,
    };
    let result = match runtime_for(&profile_for(&spec, &args.profile)) {
        Ok(rt) => rt.block_on(run_async(&args, &spec)),
        Err(e) => Err(e.to_string()),
    };
    finish(
        result,
        args.output,
        |r: &StorageReport| (r.passed, r.render_json(), r.render_text()),
        StorageReport::unavailable_json(),
    )
}

#[derive(Debug, Args)]
pub struct VerifyGraphicsArgs {
    #[command(flatten)]
    pub common: VerifyStorageArgs,
    /// Seconds the GPUs must be advertised unchanged before probing (default: each
    /// cluster's gpu_health_stabilization_seconds).
    #[arg(long)]
    pub stabilization_seconds: Option<u64>,
    /// Minutes each target may take (default: each cluster's gpu_health_timeout_minutes).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout_minutes: Option<u64>,
}

async fn run_graphics_async(
    args: &VerifyGraphicsArgs,
    spec: &FleetSpec,
) -> Result<GraphicsReport, String> {
    let (session, mut options, targets) = prepare::<Graphics>(&args.common, spec).await?;
    options.kind.stabilization = args
        .stabilization_seconds
        .map(std::time::Duration::from_secs);
    options.kind.timeout = args
        .timeout_minutes
        .map(|m| std::time::Duration::from_secs(m * 60));
    let (interrupt, signals) = interrupt_on_ctrl_c();
    let progress = progress_for(targets, args.common.output == OutputFormat::Json);
    let run = session
        .verify_graphics(spec, &options, progress, interrupt)
        .await;
    signals.abort();
    let run = run.map_err(|e| e.to_string())?;
    if let Some(dir) = &run.receipts {
        eprintln!("fleetbot: receipts in {}", dir.display());
    }
    Ok(run.report)
}

pub fn run_graphics(args: VerifyGraphicsArgs) -> ExitCode {
    let spec = match args.common.spec.load() {
        Ok(spec) => spec,
        Err(code) => return code,
    };
    let result = match runtime_for(&profile_for(&spec, &args.common.profile)) {
        Ok(rt) => rt.block_on(run_graphics_async(&args, &spec)),
        Err(e) => Err(e.to_string()),
    };
    finish(
        result,
        args.common.output,
        |r: &GraphicsReport| (r.passed, r.render_json(), r.render_text()),
        GraphicsReport::unavailable_json(),
    )
}
