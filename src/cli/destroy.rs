//! `fleetbot destroy`: tear down the spec's targets that fleetbot recorded, by exact ID.

use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use serde_json::json;

use super::lifecycle::{confirm, open_cloud, progress_for, runtime_for};
use super::output::{OutputFormat, print_json};
use crate::fleet::LifecycleOptions;
use crate::fleet::apply::destroy;
use crate::fleet::select;

#[derive(Debug, Args)]
pub struct DestroyArgs {
    #[command(flatten)]
    pub spec: super::args::SpecArgs,
    #[command(flatten)]
    pub selection: super::args::SelectionArgs,
    /// Minutes allowed per target.
    #[arg(long, default_value_t = 120, value_name = "MINUTES")]
    pub timeout: u64,
    /// Targets destroyed at once (values below 1 mean 1; default 8).
    #[arg(long, short = 'j', value_name = "INT", allow_negative_numbers = true)]
    pub concurrency: Option<i64>,
    /// ~/.nebius profile to authenticate as (overrides the spec's 'profile').
    #[arg(long, default_value = "", value_name = "P")]
    pub profile: String,
    /// Do not ask for confirmation.
    #[arg(long, short = 'y', visible_alias = "force")]
    pub yes: bool,
    /// Output format: text or json.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text, value_name = "fmt")]
    pub output: OutputFormat,
}

pub fn run(args: DestroyArgs) -> ExitCode {
    let spec = match args.spec.load() {
        Ok(spec) => spec,
        Err(code) => return code,
    };
    let json = args.output == OutputFormat::Json;
    let refused_doc = json!({"name": spec.name, "clusters": [], "networks": [], "failed": 1});
    let (only_projects, only_clusters) = match args.selection.names() {
        Ok(lists) => lists,
        Err(e) => return super::lifecycle::selection_refused(&e, json, refused_doc),
    };
    let profile = super::lifecycle::profile_for(&spec, &args.profile);
    let options = LifecycleOptions {
        only_projects,
        only_clusters,
        profile: profile.clone(),
        concurrency: super::lifecycle::concurrency(args.concurrency, false),
        timeout: Duration::from_secs(args.timeout.max(1) * 60),
        spec_path: args.spec.shown(),
        ..LifecycleOptions::default()
    };
    let selected = select(
        &spec,
        &options.only_projects,
        &options.only_clusters,
        &spec.project_prefix,
    );
    let selected = match selected {
        Ok(selected) => selected,
        Err(e) => return super::lifecycle::selection_refused(&e, json, refused_doc),
    };
    let targets: Vec<(String, String)> = selected
        .iter()
        .map(|&(p, c)| {
            (
                spec.projects[p].key(),
                spec.projects[p].clusters[c].name.clone(),
            )
        })
        .collect();
    let mut projects: Vec<usize> = selected.iter().map(|(p, _)| *p).collect();
    projects.dedup();
    if targets.is_empty() {
        let banner = format!(
            "About to destroy fleet '{}': 0 cluster(s) across 0 project(s).\n  (no targets in scope) -- nothing to do.",
            spec.name
        );
        if json {
            eprintln!("{banner}");
            print_json(&json!({"name": spec.name, "clusters": [], "networks": [], "failed": 0}));
        } else {
            println!("{banner}");
        }
        return ExitCode::SUCCESS;
    }
    let note = "  Each listed cluster with recorded state is torn down together with any VPC network the fleet created; projects and buckets are kept.";
    if !confirm(
        "destroy",
        &spec,
        &targets,
        projects.len(),
        args.yes,
        json,
        Some(note),
    ) {
        eprintln!("Aborted.");
        return ExitCode::FAILURE;
    }
    let fail = |error: String| {
        eprintln!("{error}");
        if json {
            print_json(
                &json!({"name": spec.name, "clusters": [], "networks": [], "failed": 1, "error": error}),
            );
        }
        ExitCode::FAILURE
    };
    let runtime = match runtime_for(&profile) {
        Ok(rt) => rt,
        Err(e) => return fail(e),
    };
    runtime.block_on(async {
        let session = match open_cloud(&profile).await {
            Ok(s) => s,
            Err(e) => return fail(e),
        };
        match destroy(&session, &spec, &options, progress_for(targets.len(), json)).await {
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
