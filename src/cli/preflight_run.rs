//! One preflight run as the CLI performs it: load the spec, work out the demand, resolve the
//! tenant, read the evidence, compare, and write the results.
//!
//! It writes to the streams it is given, so tests drive it without a process. Progress lines
//! and the operator message go to stderr; stdout holds only the budget (text) or exactly one
//! JSON document, even when preflight fails.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::output::to_json;
use crate::fleet::connect::{NebiusConfig, default_config_path};
use crate::quota::budget::{PreflightReport, block_labels, run_preflight};
use crate::quota::error::PreflightError;
use crate::quota::evidence::{OfflineEvidence, QuotaEvidence};
use crate::quota::render::{json_report, render_markdown, render_text};
use crate::quota::scope::{FleetDemand, ProvenState, ScopeOptions, Selection, fleet_demand};
use crate::spec::FleetSpec;

/// Exit code of a spec that does not load.
pub use super::plan::EXIT_INVALID_SPEC;

/// What `fleetbot preflight` was asked to do.
#[derive(Debug, Clone, Default)]
pub struct PreflightCommand {
    pub spec: PathBuf,
    /// `--strict`: unknown spec keys are errors (exit 2), not warnings.
    pub strict: bool,
    /// `--runtime-values`: the operator's private values for the spec's placeholders.
    pub runtime_values: Option<PathBuf>,
    /// Saved `nebius quotas quota-allowance list … --format json`.
    pub quotas: Option<PathBuf>,
    /// Saved `nebius capacity capacity-block-group list … --format json`.
    pub capacity: Option<PathBuf>,
    /// `--tenant-id`; empty falls back to the spec, then the profile.
    pub tenant_id: String,
    /// `--profile`; empty keeps the spec's profile.
    pub profile: String,
    /// `--only-projects` CSV (`None`: not given).
    pub only_projects: Option<String>,
    /// `--only-clusters` CSV (`None`: not given).
    pub only_clusters: Option<String>,
    /// `--output json` instead of text.
    pub json: bool,
    /// Also write the Markdown budget (for a pull request comment) here.
    pub markdown: Option<PathBuf>,
    /// Nebius CLI configuration to read profiles from; `None` is `~/.nebius/config.yaml`.
    pub nebius_config: Option<PathBuf>,
}

/// Runs with the offline evidence named by the command and no proof of existing state.
pub fn run(command: &PreflightCommand, stdout: &mut dyn Write, stderr: &mut dyn Write) -> u8 {
    let evidence = OfflineEvidence::new(command.quotas.clone(), command.capacity.clone());
    run_with(command, &evidence, &ProvenState::default(), stdout, stderr)
}

/// Runs against any evidence source and any proof of existing state.
pub fn run_with(
    command: &PreflightCommand,
    evidence: &dyn QuotaEvidence,
    proven: &ProvenState,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> u8 {
    let spec = match super::plan::load_spec_to(
        &command.spec,
        command.strict,
        command.runtime_values.as_deref(),
        stderr,
    ) {
        Ok(spec) => spec,
        Err(code) => return code,
    };
    // In text mode a selector naming nothing is the whole answer; JSON mode still prints the
    // report document, whose `error` says the same.
    if !command.json
        && let Err(e) = super::lifecycle::check_selectors(
            &spec,
            command.only_projects.as_deref(),
            command.only_clusters.as_deref(),
            &spec.project_prefix,
        )
    {
        let _ = writeln!(stderr, "{e}");
        return 1;
    }
    let report = evaluate(&spec, command, evidence, proven, &mut |line| {
        let _ = writeln!(stderr, "  - {line}");
    });
    if command.json {
        let _ = writeln!(stdout, "{}", to_json(&json_report(&report)));
    } else {
        let _ = write!(stdout, "{}", render_text(&report));
    }
    if let Some(message) = report.message() {
        let _ = writeln!(stderr, "{message}");
    }
    if let Some(path) = &command.markdown
        && let Err(e) = std::fs::write(path, render_markdown(&report))
    {
        let _ = writeln!(
            stderr,
            "could not write the Markdown budget to {}: {}",
            path.display(),
            e.kind()
        );
        return 1;
    }
    report.exit_code()
}

/// Demand, tenant and evidence for an already loaded spec. Failures before the evidence is read
/// still yield a report, so the JSON document can say what is needed and why it stopped.
pub fn evaluate(
    spec: &FleetSpec,
    command: &PreflightCommand,
    evidence: &dyn QuotaEvidence,
    proven: &ProvenState,
    progress: &mut dyn FnMut(&str),
) -> PreflightReport {
    let selected = super::lifecycle::selectors(
        command.only_projects.as_deref(),
        command.only_clusters.as_deref(),
    );
    let (projects, clusters) = match selected {
        Ok(lists) => lists,
        Err(e) => {
            let demand = FleetDemand {
                name: spec.name.clone(),
                ..FleetDemand::default()
            };
            return stopped(demand, "", e.to_string());
        }
    };
    let options = ScopeOptions {
        selection: Selection { projects, clusters },
        project_prefix: None,
    };
    let demand = match fleet_demand(spec, &options, proven) {
        Ok(demand) => demand,
        Err(e) => {
            let demand = FleetDemand {
                name: spec.name.clone(),
                ..FleetDemand::default()
            };
            return stopped(demand, "", e.to_string());
        }
    };
    let tenant = match resolve_tenant(
        &command.tenant_id,
        spec,
        &command.profile,
        command.nebius_config.as_deref(),
    ) {
        Ok(tenant) => tenant,
        Err(message) => return stopped(demand, "", message),
    };
    run_preflight(demand, &tenant, evidence, progress)
}

fn stopped(demand: FleetDemand, tenant: &str, message: String) -> PreflightReport {
    PreflightReport {
        tenant_id: tenant.to_string(),
        labels: block_labels(&demand),
        demand,
        regions: Vec::new(),
        shortfalls: Vec::new(),
        error: Some(PreflightError::Unresolved(message)),
    }
}

/// `--tenant-id`, else the spec's `tenant_id`, else the tenant recorded for the profile
/// (`--profile`, else the spec's, else the active one). A named profile without a tenant, or an
/// unreadable configuration, is an error: guessing a tenant could check the wrong one.
pub fn resolve_tenant(
    explicit: &str,
    spec: &FleetSpec,
    profile: &str,
    config: Option<&Path>,
) -> Result<String, String> {
    if !explicit.is_empty() {
        return Ok(explicit.to_string());
    }
    if !spec.tenant_id.is_empty() {
        return Ok(spec.tenant_id.clone());
    }
    if let Some(tenant) = super::env::tenant() {
        return Ok(tenant);
    }
    let profile = if profile.is_empty() {
        spec.profile.as_str()
    } else {
        profile
    };
    let hint = "pass --tenant-id or set 'tenant_id' in the fleet spec";
    let path = config.map(Path::to_path_buf).or_else(default_config_path);
    let config = match path {
        Some(path) => NebiusConfig::load(&path)
            .map_err(|e| format!("tenant_id could not be resolved: {e}; {hint}"))?,
        None => NebiusConfig::default(),
    };
    config
        .resolve_tenant("", profile)
        .map_err(|e| format!("{e} ({hint})"))
}
