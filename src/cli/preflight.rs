//! `fleetbot preflight`: what the selected targets need from the tenant's quotas and capacity
//! blocks, what the tenant has left, and whether the change fits.
//!
//! Exit 0 when everything fits, 1 on a shortfall or when capacity cannot be proven (missing,
//! unreadable, incomplete or ambiguous evidence, unresolved tenant), 2 on an invalid spec.
//! Evidence comes from files saved from the Nebius CLI (`--quotas`, `--capacity`), or, without
//! them, live from the cloud (Nebius, or the embedded simulator when no credentials are set),
//! where the live plan also proves which targets are unchanged. `--offline` forbids the live read.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::output::OutputFormat;
use super::preflight_run::{PreflightCommand, run as run_command};

#[derive(Debug, Args)]
pub struct PreflightArgs {
    #[command(flatten)]
    pub spec: super::args::SpecArgs,
    /// Output of `nebius quotas quota-allowance list --parent-id <tenant> --all --format json`.
    #[arg(long, value_name = "FILE")]
    pub quotas: Option<PathBuf>,
    /// Output of `nebius capacity capacity-block-group list --parent-id <tenant> --all --format
    /// json`; needed only when a GPU pool names a capacity_block_group.
    #[arg(long, value_name = "FILE")]
    pub capacity: Option<PathBuf>,
    /// Tenant whose allowances apply (else the spec's tenant_id, else FLEETBOT_TENANT_ID, else
    /// the profile's).
    #[arg(long, default_value = "", value_name = "ID")]
    pub tenant_id: String,
    /// ~/.nebius profile whose tenant applies (overrides the spec's 'profile').
    #[arg(long, default_value = "", value_name = "P")]
    pub profile: String,
    #[command(flatten)]
    pub selection: super::args::SelectionArgs,
    /// Output format: text or json.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text, value_name = "fmt")]
    pub output: OutputFormat,
    /// Also write the budget as Markdown (for a pull request comment) to this file.
    #[arg(long, value_name = "PATH")]
    pub markdown: Option<PathBuf>,
    /// Never read the cloud: without --quotas, fail closed.
    #[arg(long)]
    pub offline: bool,
    /// Nebius CLI configuration to read profiles from.
    #[arg(long, env = "FLEETBOT_NEBIUS_CONFIG", value_name = "PATH", hide = true)]
    pub nebius_config: Option<PathBuf>,
}

impl From<PreflightArgs> for PreflightCommand {
    fn from(args: PreflightArgs) -> PreflightCommand {
        let _ = args.offline;
        PreflightCommand {
            spec: args.spec.path,
            strict: args.spec.strict,
            runtime_values: args.spec.runtime_values,
            quotas: args.quotas,
            capacity: args.capacity,
            tenant_id: args.tenant_id,
            profile: args.profile,
            only_projects: args.selection.only_projects,
            only_clusters: args.selection.only_clusters,
            json: args.output == OutputFormat::Json,
            markdown: args.markdown,
            nebius_config: args.nebius_config,
        }
    }
}

pub fn run(args: PreflightArgs) -> ExitCode {
    if args.quotas.is_none() && !args.offline {
        return run_live(args);
    }
    let command = PreflightCommand::from(args);
    let mut stdout = std::io::stdout().lock();
    let mut stderr = std::io::stderr().lock();
    ExitCode::from(run_command(&command, &mut stdout, &mut stderr))
}

/// Live evidence: the tenant's allowances and capacity blocks read through the cloud layer, and
/// unchanged targets proven by the live plan (so they add no demand).
fn run_live(args: PreflightArgs) -> ExitCode {
    use super::lifecycle::{open_cloud, resolve_ssh_key, resolve_tenant, runtime_for};
    use super::preflight_run::run_with;
    use crate::fleet::LifecycleOptions;
    use crate::fleet::apply;
    use crate::fleet::live::proven_state;

    let spec = match args.spec.load() {
        Ok(spec) => spec,
        Err(code) => return code,
    };
    let (only_projects, only_clusters) = match super::lifecycle::refuse_unknown_selectors(
        &spec,
        args.selection.only_projects.as_deref(),
        args.selection.only_clusters.as_deref(),
        &spec.project_prefix,
    ) {
        Ok(lists) => lists,
        Err(code) => return code,
    };
    let profile = super::lifecycle::profile_for(&spec, &args.profile);
    let runtime = match runtime_for(&profile) {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let gathered = runtime.block_on(async {
        let session = open_cloud(&profile).await?;
        let tenant = if args.tenant_id.is_empty() {
            resolve_tenant(&spec, &session, &profile)?
        } else {
            args.tenant_id.clone()
        };
        let options = LifecycleOptions {
            only_projects,
            only_clusters,
            profile: profile.clone(),
            ssh_public_key: resolve_ssh_key(&spec, false),
            ..LifecycleOptions::default()
        };
        let prepared = apply::plan(&session, &spec, &tenant, &options)
            .await
            .map_err(|e| e.to_string())?;
        let evidence = session.live_evidence(&tenant).await.map_err(|e| {
            format!("could not read tenant quota allowances; refusing to create projects or resources without capacity evidence ({e})")
        })?;
        Ok::<_, String>((tenant, proven_state(&prepared.plan), evidence))
    });
    let (tenant, proven, evidence) = match gathered {
        Ok(g) => g,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let mut command = PreflightCommand::from(args);
    command.tenant_id = tenant;
    let mut stdout = std::io::stdout().lock();
    let mut stderr = std::io::stderr().lock();
    ExitCode::from(run_with(
        &command,
        &evidence,
        &proven,
        &mut stdout,
        &mut stderr,
    ))
}
