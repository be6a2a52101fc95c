//! `fleetbot preflight`: what the selected targets need from the tenant's quotas and capacity
//! blocks, what the tenant has left, and whether the change fits.
//!
//! Exit 0 when everything fits, 1 on a shortfall or when capacity cannot be proven (missing,
//! unreadable, incomplete or ambiguous evidence, unresolved tenant), 2 on an invalid spec.
//! Until the live source is wired in, evidence comes from files saved from the Nebius CLI.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::output::OutputFormat;
use crate::quota::run::{PreflightCommand, run as run_command};

#[derive(Debug, Args)]
pub struct PreflightArgs {
    /// Path to an npa.fleet/v0.0.1 spec YAML.
    #[arg(long = "spec", short = 'f', value_name = "PATH")]
    pub spec: PathBuf,
    /// Output of `nebius quotas quota-allowance list --parent-id <tenant> --all --format json`.
    #[arg(long, value_name = "FILE")]
    pub quotas: Option<PathBuf>,
    /// Output of `nebius capacity capacity-block-group list --parent-id <tenant> --all --format
    /// json`; needed only when a GPU pool names a capacity_block_group.
    #[arg(long, value_name = "FILE")]
    pub capacity: Option<PathBuf>,
    /// Tenant whose allowances apply (else the spec's tenant_id, else the profile's).
    #[arg(long, default_value = "", value_name = "ID")]
    pub tenant_id: String,
    /// ~/.nebius profile whose tenant applies (overrides the spec's 'profile').
    #[arg(long, default_value = "", value_name = "P")]
    pub profile: String,
    /// Only these projects (comma-separated keys or display names).
    #[arg(long, default_value = "", value_name = "CSV")]
    pub only_projects: String,
    /// Only clusters with these names (comma-separated), in every selected project.
    #[arg(long, default_value = "", value_name = "CSV")]
    pub only_clusters: String,
    /// Output format: text or json.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text, value_name = "<fmt>")]
    pub output: OutputFormat,
    /// Also write the budget as Markdown (for a pull request comment) to this file.
    #[arg(long, value_name = "PATH")]
    pub markdown: Option<PathBuf>,
    /// Nebius CLI configuration to read profiles from.
    #[arg(long, env = "FLEETBOT_NEBIUS_CONFIG", value_name = "PATH", hide = true)]
    pub nebius_config: Option<PathBuf>,
}

impl From<PreflightArgs> for PreflightCommand {
    fn from(args: PreflightArgs) -> PreflightCommand {
        PreflightCommand {
            spec: args.spec,
            quotas: args.quotas,
            capacity: args.capacity,
            tenant_id: args.tenant_id,
            profile: args.profile,
            only_projects: args.only_projects,
            only_clusters: args.only_clusters,
            json: args.output == OutputFormat::Json,
            markdown: args.markdown,
            nebius_config: args.nebius_config,
        }
    }
}

pub fn run(args: PreflightArgs) -> ExitCode {
    let command = PreflightCommand::from(args);
    let mut stdout = std::io::stdout().lock();
    let mut stderr = std::io::stderr().lock();
    ExitCode::from(run_command(&command, &mut stdout, &mut stderr))
}
