//! Command-line interface: argument parsing and dispatch; one file per subcommand.

mod args;
pub mod demo;
pub mod deploy;
pub mod destroy;
pub mod env;
mod git;
pub mod kubeconfig;
pub mod lifecycle;
pub mod output;
pub mod plan;
pub mod policy;
pub mod preflight;
pub mod preflight_run;
pub mod preview;
mod preview_post;
pub mod probe;
mod register;
pub mod scan;
pub mod serve;
mod serve_start;
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
    /// The whole loop in a minute on the embedded simulator: a throwaway repository, a change
    /// previewed as the App would comment, merged, applied, verified, shown, cleaned up.
    Demo(demo::DemoArgs),
    /// Show the resolved deployment plan without touching infrastructure.
    Plan(plan::PlanArgs),
    /// Refuse committed private IDs, keys and tokens.
    Scan(scan::ScanArgs),
    /// Show what the App would post on a pull request for a local change (comment and checks).
    Preview(preview::PreviewArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(CompletionsArgs),
    /// Check what the selected targets need against the tenant's quotas and capacity blocks.
    Preflight(preflight::PreflightArgs),
    /// Judge a spec by the organisation's Rego policies; print their input; run their tests.
    Policy(policy::PolicyArgs),
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
    Serve(Box<serve::ServeArgs>),
    /// Register the GitHub App from its manifest (GitHub's manifest flow) and keep its
    /// credentials for `serve`.
    Register(register::RegisterArgs),
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

/// `fleetbot completions SHELL`, e.g. `fleetbot completions bash > ~/.local/share/bash-completion/completions/fleetbot`.
#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// Logs go to stderr (level from `RUST_LOG`; by default `info` for the server, `warn` for
/// the commands); results go to stdout. Colour only on a terminal, so a log file or a log
/// collector gets plain text.
fn init_tracing(default_level: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(colour_on_stderr())
        .with_target(false)
        .try_init();
}

/// Colour only on a terminal, and never when `NO_COLOR` is set to anything (no-color.org).
fn colour_on_stderr() -> bool {
    use std::io::IsTerminal;
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stderr().is_terminal()
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
        Command::Demo(args) => demo::run(args),
        Command::Plan(args) => plan::run(args),
        Command::VerifyStorage(args) => verify::run(args),
        Command::VerifyGraphics(args) => verify::run_graphics(args),
        Command::VerifyMig(args) => verify_mig::run(args),
        Command::Scan(args) => scan::run(args),
        Command::Preview(args) => preview::run(args),
        Command::Completions(args) => {
            use clap::CommandFactory;
            clap_complete::generate(
                args.shell,
                &mut Cli::command(),
                "fleetbot",
                &mut std::io::stdout(),
            );
            ExitCode::SUCCESS
        }
        Command::Preflight(args) => preflight::run(args),
        Command::Policy(args) => policy::run(args),
        Command::Deploy(args) => deploy::run(args),
        Command::Destroy(args) => destroy::run(args),
        Command::Status(args) => status::run(args),
        Command::Kubeconfig(args) => kubeconfig::run(args),
        Command::KubeToken(args) => kubeconfig::run_token(args),
        Command::Serve(args) => serve::run(*args),
        Command::Register(args) => register::run(args),
        Command::Sim(args) => sim::run(args),
        Command::Probe(args) => probe::run(args),
    }
}
