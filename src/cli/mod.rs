//! Command-line interface: argument parsing and dispatch; one file per subcommand.

pub mod connect;
pub mod deploy;
pub mod destroy;
pub mod kubeconfig;
pub mod lifecycle;
pub mod output;
pub mod plan;
pub mod preflight;
pub mod preflight_run;
pub mod preview;
pub mod probe;
pub mod scan;
pub mod serve;
pub mod sim;
pub mod status;
pub mod verify;
mod verify_mig;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// fleetbot: keep fleets of Nebius Managed Kubernetes clusters in step with declarative YAML.
#[derive(Debug, Parser)]
#[command(name = "fleetbot", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show the resolved deployment plan without touching infrastructure.
    Plan(plan::PlanArgs),
    /// Refuse committed private IDs, keys and tokens.
    Scan(scan::ScanArgs),
    /// Show what the App would post on a pull request for a local change (comment and checks).
    Preview(preview::PreviewArgs),
    /// Check what the selected targets need against the tenant's quotas and capacity blocks.
    Preflight(preflight::PreflightArgs),
    /// Create and converge the fleet's clusters (live plan and preflight first).
    Deploy(deploy::DeployArgs),
    /// Tear down the fleet's recorded clusters; projects and buckets are kept.
    Destroy(destroy::DestroyArgs),
    /// Show every target's recorded and live state.
    Status(status::StatusArgs),
    /// Write a kubeconfig for the fleet's deployed clusters (one context per cluster).
    Kubeconfig(kubeconfig::KubeconfigArgs),
    /// Print a Kubernetes exec credential with a fresh Nebius IAM token (kubeconfig runs it).
    KubeToken(kubeconfig::KubeTokenArgs),
    /// Run the GitHub App: the webhook server and its worker.
    Serve(serve::ServeArgs),
    /// Run the Nebius simulator as a standalone gRPC server.
    Sim(sim::SimArgs),
    /// Prove every selected target's shared filesystem on every worker (exit 1 unless all pass).
    VerifyStorage(verify::VerifyStorageArgs),
    /// Prove CUDA, GLX, EGL and Vulkan on every GPU worker of RTX rendering targets.
    VerifyGraphics(verify::VerifyGraphicsArgs),
    /// Prove the one selected MIG target's layout, Operator and slices on every GPU node.
    VerifyMig(verify_mig::VerifyMigArgs),
    /// The verification probe a pod runs on a worker (prints one evidence document).
    Probe(probe::ProbeArgs),
}

/// Logs go to stderr (level from `RUST_LOG`; by default `info` for the server, `warn` for
/// the commands); results go to stdout. Colour only on a terminal, so a log file or a log
/// collector gets plain text.
fn init_tracing(default_level: &str) {
    use std::io::IsTerminal;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false)
        .try_init();
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing(if matches!(cli.command, Command::Serve(_)) {
        "info"
    } else {
        "warn"
    });
    match cli.command {
        Command::Plan(args) => plan::run(args),
        Command::VerifyStorage(args) => verify::run(args),
        Command::VerifyGraphics(args) => verify::run_graphics(args),
        Command::VerifyMig(args) => verify_mig::run(args),
        Command::Scan(args) => scan::run(args),
        Command::Preview(args) => preview::run(args),
        Command::Preflight(args) => preflight::run(args),
        Command::Deploy(args) => deploy::run(args),
        Command::Destroy(args) => destroy::run(args),
        Command::Status(args) => status::run(args),
        Command::Kubeconfig(args) => kubeconfig::run(args),
        Command::KubeToken(args) => kubeconfig::run_token(args),
        Command::Serve(args) => serve::run(args),
        Command::Sim(args) => sim::run(args),
        Command::Probe(args) => probe::run(args),
    }
}
