//! `fleetbot plan`: the static plan of a spec, as text or JSON.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::output::{OutputFormat, print_json};
use crate::cloud::profile::{NebiusConfig, default_config_path};
use crate::engine::{PlanOptions, plan};

#[derive(Debug, Args)]
pub struct PlanArgs {
    /// Path to an npa.fleet/v0.0.1 spec YAML (`-` reads standard input).
    #[arg(long = "spec", short = 'f', value_name = "PATH")]
    pub spec: PathBuf,
    /// Treat unknown spec keys (warnings on stderr otherwise) as errors: exit 2.
    #[arg(long)]
    pub strict: bool,
    /// The operator's private runtime values (existing project IDs, capacity block groups,
    /// chart repositories, bucket names) that fill the spec's placeholders; never printed.
    #[arg(long, value_name = "FILE", env = "FLEETBOT_RUNTIME_VALUES")]
    pub runtime_values: Option<PathBuf>,
    /// Override the spec's project_prefix for created projects.
    #[arg(long, default_value = "", value_name = "P")]
    pub project_prefix: String,
    /// ~/.nebius profile whose tenant the plan shows (overrides the spec's 'profile').
    #[arg(long, default_value = "", value_name = "P")]
    pub profile: String,
    /// Output format: text or json.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text, value_name = "fmt")]
    pub output: OutputFormat,
    /// Read the cloud and show what deploy would create, change or delete (the live plan).
    #[arg(long)]
    pub live: bool,
    /// With --live: only these projects (keys or display names, comma-separated).
    #[arg(long, value_name = "CSV", requires = "live")]
    pub only_projects: Option<String>,
    /// With --live: only these clusters (names, comma-separated).
    #[arg(long, value_name = "CSV", requires = "live")]
    pub only_clusters: Option<String>,
    /// Nebius CLI configuration to read profiles from.
    #[arg(long, env = "FLEETBOT_NEBIUS_CONFIG", value_name = "PATH", hide = true)]
    pub nebius_config: Option<PathBuf>,
}

/// Exit code of a spec that does not load (or, under `--strict`, has unknown keys).
pub const EXIT_INVALID_SPEC: u8 = 2;

/// Loads the spec or reports `Invalid fleet spec: …` with exit code 2; its unknown keys go to
/// stderr as warnings, or under `strict` as errors with the same exit code.
pub(crate) fn load_spec(
    path: &std::path::Path,
    strict: bool,
    runtime_values: Option<&std::path::Path>,
) -> Result<crate::spec::FleetSpec, ExitCode> {
    load_spec_to(path, strict, runtime_values, &mut std::io::stderr().lock())
        .map_err(ExitCode::from)
}

/// [`load_spec`] writing to `stderr`, for commands that are given their streams. Stdout is
/// never written, so JSON output stays one document whatever the spec's warnings.
pub(crate) fn load_spec_to(
    path: &std::path::Path,
    strict: bool,
    runtime_values: Option<&std::path::Path>,
    stderr: &mut dyn std::io::Write,
) -> Result<crate::spec::FleetSpec, u8> {
    let runtime = crate::runtime::RuntimeValues::from_flag_or_env(runtime_values).map_err(|e| {
        let _ = writeln!(stderr, "Invalid runtime values: {e}");
        EXIT_INVALID_SPEC
    })?;
    let spec = crate::runtime::load_with(path, runtime.as_ref()).map_err(|e| {
        let _ = writeln!(stderr, "Invalid fleet spec: {e}");
        EXIT_INVALID_SPEC
    })?;
    if let Some(runtime) = runtime.as_ref().filter(|r| !r.covers(&spec.name)) {
        let _ = writeln!(
            stderr,
            "fleetbot: runtime values {} have no entry for fleet '{}'; its placeholders stay as written",
            runtime.file(),
            spec.name
        );
    }
    for note in &spec.runtime_notes {
        let _ = writeln!(stderr, "note: {note}");
    }
    // The reference ignores these keys, so by default they change nothing but stderr.
    let level = if strict { "error" } else { "warning" };
    for line in spec.warnings.lines() {
        let _ = writeln!(stderr, "{level}: {line}");
    }
    if strict && !spec.warnings.is_empty() {
        return Err(EXIT_INVALID_SPEC);
    }
    Ok(spec)
}

/// The tenant recorded for `profile` (or the active profile), read from the config file only.
/// An unreadable file is reported by kind and treated as empty, as the reference does.
pub(crate) fn profile_tenant(config: Option<PathBuf>, profile: &str) -> Option<String> {
    let path = config.or_else(default_config_path)?;
    match NebiusConfig::load(&path) {
        Ok(config) => config.tenant_for(profile).map(str::to_string),
        Err(e) => {
            tracing::warn!("{e}");
            None
        }
    }
}

pub fn run(args: PlanArgs) -> ExitCode {
    let spec = match load_spec(&args.spec, args.strict, args.runtime_values.as_deref()) {
        Ok(spec) => spec,
        Err(code) => return code,
    };
    if args.live {
        return run_live(&spec, &args);
    }
    let effective_profile = if args.profile.is_empty() {
        spec.profile.clone()
    } else {
        args.profile.clone()
    };
    let options = PlanOptions {
        project_prefix: Some(args.project_prefix),
        profile: Some(args.profile),
        profile_tenant_id: if spec.tenant_id.is_empty() {
            profile_tenant(args.nebius_config, &effective_profile)
        } else {
            None
        },
        ..PlanOptions::default()
    };
    let plan = plan(&spec, &options);
    match args.output {
        OutputFormat::Json => print_json(&plan),
        OutputFormat::Text => print!("{}", plan.render_text()),
    }
    ExitCode::SUCCESS
}

/// `plan --live`: reads only; exits 1 when the plan finds problems deploy would refuse.
fn run_live(spec: &crate::spec::FleetSpec, args: &PlanArgs) -> ExitCode {
    use super::lifecycle::{open_cloud, open_inventory, resolve_ssh_key, resolve_tenant, runtime};
    use crate::engine::ops::{LifecycleOptions, prepare};
    let prefix = if args.project_prefix.is_empty() {
        &spec.project_prefix
    } else {
        &args.project_prefix
    };
    let checked = super::lifecycle::refuse_unknown_selectors(
        spec,
        args.only_projects.as_deref(),
        args.only_clusters.as_deref(),
        prefix,
    );
    let (only_projects, only_clusters) = match checked {
        Ok(lists) => lists,
        Err(code) => return code,
    };
    let profile = super::lifecycle::profile_for(spec, &args.profile);
    let runtime = match runtime() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async {
        let outcome = async {
            let connection = open_cloud(&profile).await?;
            let tenant = resolve_tenant(spec, &connection, &profile)?;
            let store = open_inventory(&connection).await?;
            let options = LifecycleOptions {
                only_projects: only_projects.clone(),
                only_clusters: only_clusters.clone(),
                project_prefix: args.project_prefix.clone(),
                profile: profile.clone(),
                ssh_public_key: resolve_ssh_key(spec, false),
                ..LifecycleOptions::default()
            };
            prepare(&connection.client, &store, spec, &tenant, &options)
                .await
                .map_err(|e| e.to_string())
        }
        .await;
        match outcome {
            Ok(prepared) => {
                match args.output {
                    OutputFormat::Json => print_json(&prepared.plan),
                    OutputFormat::Text => print!("{}", prepared.plan.render_text()),
                }
                if prepared.plan.has_problems() {
                    ExitCode::FAILURE
                } else {
                    ExitCode::SUCCESS
                }
            }
            Err(e) => {
                eprintln!("{e}");
                ExitCode::FAILURE
            }
        }
    })
}
