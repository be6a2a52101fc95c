//! `fleetbot deploy`: validate, plan live, preflight, then create and converge the fleet.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use serde_json::json;

use super::lifecycle::{
    confirm, open_cloud, open_inventory, progress_for, resolve_ssh_key, resolve_tenant, runtime,
};
use super::output::{OutputFormat, print_json};
use super::plan::load_spec;
use crate::engine::ops::{LifecycleOptions, csv, deploy, select};

#[derive(Debug, Args)]
pub struct DeployArgs {
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
    /// Create named projects that do not exist yet (the default).
    #[arg(long = "create-projects", overrides_with = "no_create_projects")]
    pub create_projects: bool,
    /// Abort when a named project does not exist.
    #[arg(long = "no-create-projects")]
    pub no_create_projects: bool,
    /// Only these projects (keys or display names, comma-separated).
    #[arg(long, default_value = "", value_name = "CSV")]
    pub only_projects: String,
    /// Only these clusters (names, comma-separated), in every selected project.
    #[arg(long, default_value = "", value_name = "CSV")]
    pub only_clusters: String,
    /// Keep going after a target fails (the default).
    #[arg(long = "continue-on-error", overrides_with = "fail_fast")]
    pub continue_on_error: bool,
    /// Stop at the first failed target.
    #[arg(long = "fail-fast")]
    pub fail_fast: bool,
    /// ~/.nebius profile to authenticate as (overrides the spec's 'profile').
    #[arg(long, default_value = "", value_name = "P")]
    pub profile: String,
    /// Check quota and capacity before any mutation (the default).
    #[arg(long = "preflight", overrides_with = "no_preflight")]
    pub preflight: bool,
    /// Skip the quota and capacity preflight (it cannot fix a deficit).
    #[arg(long = "no-preflight")]
    pub no_preflight: bool,
    /// Also delete the targets fleetbot deployed for this fleet that the spec no longer
    /// declares (a removed cluster or project), as destroy would. Only without
    /// --only-projects/--only-clusters; without --prune deploy never deletes them.
    #[arg(long)]
    pub prune: bool,
    /// Do not ask for confirmation.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Targets applied at once (values below 1 mean 1).
    #[arg(
        long,
        short = 'j',
        default_value_t = 1,
        value_name = "INT",
        allow_negative_numbers = true
    )]
    pub concurrency: i64,
    /// Minutes allowed per target.
    #[arg(long, default_value_t = 120, value_name = "MINUTES")]
    pub timeout: u64,
    /// Output format: text or json.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text, value_name = "fmt")]
    pub output: OutputFormat,
}

pub fn run(args: DeployArgs) -> ExitCode {
    let spec = match load_spec(&args.spec, args.strict, args.runtime_values.as_deref()) {
        Ok(spec) => spec,
        Err(code) => return code,
    };
    let json = args.output == OutputFormat::Json;
    let profile = super::lifecycle::profile_for(&spec, &args.profile);
    let options = LifecycleOptions {
        only_projects: csv(&args.only_projects),
        only_clusters: csv(&args.only_clusters),
        project_prefix: args.project_prefix.clone(),
        profile: profile.clone(),
        concurrency: args.concurrency.max(1) as usize,
        continue_on_error: !args.fail_fast,
        create_projects: !args.no_create_projects,
        preflight: !args.no_preflight,
        timeout: Duration::from_secs(args.timeout.max(1) * 60),
        ssh_public_key: String::new(),
        spec_path: args.spec.display().to_string(),
        prune: args.prune,
        reads: None,
    };
    let filtered = !options.only_projects.is_empty() || !options.only_clusters.is_empty();
    let pruning = args.prune && !filtered;
    if args.prune && filtered {
        eprintln!(
            "fleetbot: --prune applies only to the whole spec; with --only-projects/--only-clusters nothing is pruned"
        );
    }
    let prefix = options.prefix(&spec).to_string();
    let selected = select(
        &spec,
        &options.only_projects,
        &options.only_clusters,
        &prefix,
    );
    let selected = match selected {
        Ok(selected) => selected,
        Err(e) => {
            return super::lifecycle::selection_refused(
                &e,
                json,
                json!({"name": spec.name, "clusters": [], "deployed": 0, "failed": 1}),
            );
        }
    };
    let targets: Vec<(String, String)> = selected
        .iter()
        .map(|&(p, c)| {
            let project = &spec.projects[p];
            let shown = if project.name.is_empty() {
                project.key()
            } else {
                project.display_name(&prefix)
            };
            (shown, project.clusters[c].name.clone())
        })
        .collect();
    let mut project_count: Vec<usize> = selected.iter().map(|(p, _)| *p).collect();
    project_count.dedup();
    // With prune, a spec that declares no target may still leave recorded targets to delete.
    if targets.is_empty() && !pruning {
        let banner = format!(
            "About to create/update fleet '{}': 0 cluster(s) across 0 project(s).\n  (no targets in scope) -- nothing to do.",
            spec.name
        );
        if json {
            eprintln!("{banner}");
            print_json(
                &json!({"name": spec.name, "tenant_id": spec.tenant_id, "region": spec.region, "clusters": [], "deployed": 0, "failed": 0}),
            );
        } else {
            println!("{banner}");
        }
        return ExitCode::SUCCESS;
    }
    let prune_note = "  --prune: targets deployed for this fleet that the spec no longer declares are deleted too (node groups, cluster, GPU cluster and filesystem fleetbot created); plan --live lists them.";
    if !confirm(
        "create/update",
        &spec,
        &targets,
        project_count.len(),
        args.yes,
        json,
        pruning.then_some(prune_note),
    ) {
        eprintln!("Aborted.");
        return ExitCode::FAILURE;
    }
    let runtime = match runtime() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let fail = |error: String| {
        eprintln!("{error}");
        if json {
            print_json(
                &json!({"name": spec.name, "clusters": [], "deployed": 0, "failed": 1, "error": error}),
            );
        }
        ExitCode::FAILURE
    };
    runtime.block_on(async {
        let connection = match open_cloud(&profile).await {
            Ok(c) => c,
            Err(e) => return fail(e),
        };
        let tenant = match resolve_tenant(&spec, &connection, &profile) {
            Ok(t) => t,
            Err(e) => return fail(e),
        };
        let store = match open_inventory(&connection).await {
            Ok(s) => s,
            Err(e) => return fail(e),
        };
        let options = LifecycleOptions {
            ssh_public_key: resolve_ssh_key(&spec, true),
            ..options
        };
        match deploy(
            &connection.client,
            &store,
            &spec,
            &tenant,
            &options,
            progress_for(targets.len(), json),
        )
        .await
        {
            Ok(result) => {
                if json {
                    print_json(&result);
                } else {
                    print!("{}", result.render_text());
                }
                if result.failed > 0 {
                    ExitCode::FAILURE
                } else {
                    ExitCode::SUCCESS
                }
            }
            Err(e) => fail(e.to_string()),
        }
    })
}
