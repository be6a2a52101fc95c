//! `fleetbot plan`: the static plan of a spec, as text or JSON.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::output::{OutputFormat, print_json};
use crate::fleet::connect::{NebiusConfig, default_config_path};
use crate::fleet::static_plan::{PlanOptions, plan};

#[derive(Debug, Args)]
pub struct PlanArgs {
    /// Path to an npa.fleet/v0.0.1 spec YAML (`-` reads standard input). Give it more than
    /// once to plan several specs together: two that declare one fleet (tenant and name) or
    /// one cluster of a project are refused, as the App refuses them.
    #[arg(long = "spec", short = 'f', value_name = "PATH", required = true)]
    pub spec: Vec<PathBuf>,
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
    let runtime = super::env::runtime_values(runtime_values).map_err(|e| {
        let _ = writeln!(stderr, "Invalid runtime values: {e}");
        EXIT_INVALID_SPEC
    })?;
    let spec = crate::runtime::load_with(path, runtime.as_ref()).map_err(|e| {
        match crate::spec::unreadable_reason(&e) {
            Some(reason) => writeln!(stderr, "Cannot read fleet spec {}: {reason}", e.file),
            None => writeln!(stderr, "Invalid fleet spec: {e}"),
        }
        .ok();
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
    let mut specs = Vec::new();
    for path in &args.spec {
        match load_spec(path, args.strict, args.runtime_values.as_deref()) {
            Ok(spec) => specs.push(spec),
            Err(code) => return code,
        }
    }
    if let Err(code) = one_fleet_one_file(&specs, &args) {
        return code;
    }
    if args.live {
        return run_live(&specs, &args);
    }
    let options = |spec: &crate::spec::FleetSpec| {
        let effective_profile = if args.profile.is_empty() {
            spec.profile.clone()
        } else {
            args.profile.clone()
        };
        PlanOptions {
            project_prefix: Some(args.project_prefix.clone()),
            profile: Some(args.profile.clone()),
            profile_tenant_id: if spec.tenant_id.is_empty() {
                profile_tenant(args.nebius_config.clone(), &effective_profile)
            } else {
                None
            },
            ..PlanOptions::default()
        }
    };
    let code = match args.output {
        OutputFormat::Json => {
            let plans: Vec<_> = specs.iter().map(|s| plan(s, &options(s))).collect();
            match plans.as_slice() {
                [one] => print_json(one),
                all => print_json(&all),
            }
            // Freeing a 40,000-cluster plan node by node costs more CPU than making it.
            std::mem::forget(plans);
            ExitCode::SUCCESS
        }
        // Planned and written a project at a time: the text never holds the whole plan.
        OutputFormat::Text => match write_texts(&specs, options) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("fleetbot plan: cannot write the plan: {e}");
                ExitCode::FAILURE
            }
        },
    };
    // The process ends here: freeing a 40,000-cluster spec node by node would cost more CPU
    // than planning it, and the operating system takes the memory back whole.
    std::mem::forget(specs);
    code
}

/// The text plans of `specs`, one blank line between two.
fn write_texts(
    specs: &[crate::spec::FleetSpec],
    options: impl Fn(&crate::spec::FleetSpec) -> PlanOptions,
) -> std::io::Result<()> {
    let mut stdout = std::io::stdout().lock();
    for (i, spec) in specs.iter().enumerate() {
        if i > 0 {
            stdout.write_all(b"\n")?;
        }
        crate::fleet::static_plan::write_text(spec, &options(spec), &mut stdout)?;
    }
    stdout.flush()
}

/// Several specs planned together must each own their fleet and clusters, and selectors
/// (which name one spec's projects and clusters) need exactly one spec.
fn one_fleet_one_file(specs: &[crate::spec::FleetSpec], args: &PlanArgs) -> Result<(), ExitCode> {
    if specs.len() < 2 {
        return Ok(());
    }
    let refs: Vec<&crate::spec::FleetSpec> = specs.iter().collect();
    let conflicts = crate::spec::identity::conflicts(&refs);
    for c in &conflicts {
        eprintln!("Invalid fleet spec: {}", c.error());
    }
    if !conflicts.is_empty() {
        return Err(ExitCode::from(EXIT_INVALID_SPEC));
    }
    if args.only_projects.is_some() || args.only_clusters.is_some() {
        eprintln!("fleetbot plan: --only-projects and --only-clusters need exactly one --spec");
        return Err(ExitCode::from(EXIT_INVALID_SPEC));
    }
    Ok(())
}

/// `plan --live`: reads only; exits 1 when a plan finds problems deploy would refuse.
fn run_live(specs: &[crate::spec::FleetSpec], args: &PlanArgs) -> ExitCode {
    let mut plans = Vec::new();
    for spec in specs {
        match live_plan(spec, args) {
            Ok(plan) => plans.push(plan),
            Err(code) => return code,
        }
    }
    match (args.output, plans.as_slice()) {
        (OutputFormat::Json, [one]) => print_json(one),
        (OutputFormat::Json, all) => print_json(&all),
        (OutputFormat::Text, all) => {
            let texts: Vec<String> = all.iter().map(|p| p.render_text()).collect();
            print!("{}", texts.join("\n"));
        }
    }
    if plans.iter().any(|p| p.has_problems()) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// One spec's live plan, or the exit code of why it could not be made (said on stderr).
fn live_plan(
    spec: &crate::spec::FleetSpec,
    args: &PlanArgs,
) -> Result<crate::fleet::live::LivePlan, ExitCode> {
    use super::lifecycle::{open_cloud, resolve_ssh_key, resolve_tenant, runtime_for};
    use crate::fleet::LifecycleOptions;
    use crate::fleet::apply;
    let prefix = if args.project_prefix.is_empty() {
        &spec.project_prefix
    } else {
        &args.project_prefix
    };
    let (only_projects, only_clusters) = super::lifecycle::refuse_unknown_selectors(
        spec,
        args.only_projects.as_deref(),
        args.only_clusters.as_deref(),
        prefix,
    )?;
    let profile = super::lifecycle::profile_for(spec, &args.profile);
    let runtime = runtime_for(&profile).map_err(|e| {
        eprintln!("{e}");
        ExitCode::FAILURE
    })?;
    runtime
        .block_on(async {
            let session = open_cloud(&profile).await?;
            let tenant = resolve_tenant(spec, &session, &profile)?;
            let options = LifecycleOptions {
                only_projects: only_projects.clone(),
                only_clusters: only_clusters.clone(),
                project_prefix: args.project_prefix.clone(),
                profile: profile.clone(),
                ssh_public_key: resolve_ssh_key(spec, false),
                ..LifecycleOptions::default()
            };
            apply::plan(&session, spec, &tenant, &options)
                .await
                .map(|prepared| prepared.plan)
                .map_err(|e| e.to_string())
        })
        .map_err(|e: String| {
            eprintln!("{e}");
            ExitCode::FAILURE
        })
}
