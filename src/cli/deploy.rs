//! `fleetbot deploy`: validate, plan live, preflight, then create and converge the fleet.

use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use serde_json::json;

use super::lifecycle::{
    confirm, open_cloud, progress_for, resolve_ssh_key, resolve_tenant, runtime_for,
    selection_refused,
};
use super::output::{OutputFormat, print_json};
use crate::fleet::LifecycleOptions;
use crate::fleet::apply::{Approved, apply, plan};
use crate::fleet::live::{Action, LivePlan};
use crate::fleet::select;

#[derive(Debug, Args)]
pub struct DeployArgs {
    #[command(flatten)]
    pub spec: super::args::SpecArgs,
    /// Override the spec's project_prefix for created projects.
    #[arg(long, default_value = "", value_name = "P")]
    pub project_prefix: String,
    /// Create named projects that do not exist yet (the default).
    #[arg(long = "create-projects", overrides_with = "no_create_projects")]
    pub create_projects: bool,
    /// Abort when a named project does not exist.
    #[arg(long = "no-create-projects")]
    pub no_create_projects: bool,
    #[command(flatten)]
    pub selection: super::args::SelectionArgs,
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
    /// Allow what deletes, replaces or shrinks inside the selected targets (a node group or an
    /// add-on deleted, a filesystem detached, a pool shrunk, a bucket cap lowered). Without it
    /// --yes refuses such a plan; the prompt lists each one and asks.
    #[arg(long)]
    pub allow_destroy: bool,
    /// Do not ask for confirmation.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Targets applied at once (values below 1 mean 1; default 8, or 1 with --fail-fast).
    #[arg(long, short = 'j', value_name = "INT", allow_negative_numbers = true)]
    pub concurrency: Option<i64>,
    /// Minutes allowed per target.
    #[arg(long, default_value_t = 120, value_name = "MINUTES")]
    pub timeout: u64,
    /// Output format: text or json.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text, value_name = "fmt")]
    pub output: OutputFormat,
}

/// The plan's part of the confirmation: what the deploy would do, counted as Terraform counts
/// (a replacement is one to create and one to delete), then each thing it deletes, replaces or
/// shrinks. Whole targets the spec no longer declares count only when they are pruned.
fn plan_lines(plan: &LivePlan, pruning: bool) -> String {
    let (mut create, mut change, mut delete) = (0, 0, 0);
    let applied = plan.projects.iter().flat_map(|p| &p.actions).chain(
        plan.targets
            .iter()
            .filter(|t| pruning || !t.prune)
            .flat_map(|t| &t.actions),
    );
    for a in applied {
        match a.action {
            Action::Create => create += 1,
            Action::Update => change += 1,
            Action::Replace => {
                create += 1;
                delete += 1;
            }
            Action::Delete => delete += 1,
            Action::NoChange | Action::Reuse => {}
        }
    }
    let mut out = format!("Plan: {create} to create, {change} to change, {delete} to delete.\n");
    let destructive = if pruning {
        plan.destructive()
    } else {
        plan.destructive_within()
    };
    for d in destructive {
        out.push_str(&format!("  ! {}\n", d.line()));
    }
    out
}

pub fn run(args: DeployArgs) -> ExitCode {
    let spec = match args.spec.load() {
        Ok(spec) => spec,
        Err(code) => return code,
    };
    let json = args.output == OutputFormat::Json;
    let refused_doc = json!({"name": spec.name, "clusters": [], "deployed": 0, "failed": 1});
    let (only_projects, only_clusters) = match args.selection.names() {
        Ok(lists) => lists,
        Err(e) => return selection_refused(&e, json, refused_doc),
    };
    let profile = super::lifecycle::profile_for(&spec, &args.profile);
    let options = LifecycleOptions {
        only_projects,
        only_clusters,
        project_prefix: args.project_prefix.clone(),
        profile: profile.clone(),
        concurrency: super::lifecycle::concurrency(args.concurrency, args.fail_fast),
        continue_on_error: !args.fail_fast,
        create_projects: !args.no_create_projects,
        preflight: !args.no_preflight,
        timeout: Duration::from_secs(args.timeout.max(1) * 60),
        ssh_public_key: String::new(),
        spec_path: args.spec.shown(),
        prune: args.prune,
        // What it may destroy is its approval's (`fleet::apply::Approved`), given on the plan.
        ..LifecycleOptions::default()
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
        Err(e) => return selection_refused(&e, json, refused_doc),
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
    let runtime = match runtime_for(&profile) {
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
        let session = match open_cloud(&profile).await {
            Ok(s) => s,
            Err(e) => return fail(e),
        };
        let tenant = match resolve_tenant(&spec, &session, &profile) {
            Ok(t) => t,
            Err(e) => return fail(e),
        };
        let options = LifecycleOptions {
            ssh_public_key: resolve_ssh_key(&spec, true),
            ..options
        };
        // The plan is read first (nothing is changed) so the confirmation can say what the
        // deploy deletes or shrinks, and what is applied is exactly what was confirmed.
        let prepared = match plan(&session, &spec, &tenant, &options).await {
            Ok(p) => p,
            Err(e) => return fail(e.to_string()),
        };
        let mut allow_destroy = args.allow_destroy;
        // A plan with problems is refused by the engine before anything else: nothing to ask.
        if !prepared.plan.has_problems() {
            let mut note = plan_lines(&prepared.plan, pruning);
            if pruning {
                note.push_str("  --prune: targets deployed for this fleet that the spec no longer declares are deleted too (node groups, cluster, GPU cluster and filesystem fleetbot created); plan --live lists them.\n");
            }
            let within = prepared.plan.destructive_within();
            let refuse = args.yes && !args.allow_destroy && !within.is_empty();
            let proceed = confirm(
                "create/update",
                &spec,
                &targets,
                project_count.len(),
                args.yes,
                json,
                Some(note.trim_end()),
            );
            if refuse {
                let lines: Vec<String> = within.iter().map(|d| d.line()).collect();
                return fail(format!(
                    "fleetbot: deploy --yes does not delete, replace or shrink inside the fleet's targets unless --allow-destroy is given; nothing was changed:\n  - {}",
                    lines.join("\n  - ")
                ));
            }
            if !proceed {
                eprintln!("Aborted.");
                return ExitCode::FAILURE;
            }
            // Answering the prompt that listed each destructive line allows exactly those.
            allow_destroy |= !args.yes;
        }
        match apply(
            &session,
            &spec,
            &tenant,
            &options,
            prepared,
            Approved::ByPerson { allow_destroy },
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
