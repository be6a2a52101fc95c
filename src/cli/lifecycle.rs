//! What the lifecycle commands share: connecting to the cloud, resolving the tenant and the SSH
//! key, opening the inventory, confirming, and printing progress.

use std::io::{BufRead, Write};
use std::sync::Arc;

use crate::fleet::connect::{NebiusConfig, default_config_path};
use crate::fleet::{Event, Progress, Session};
use crate::spec::FleetSpec;
use crate::spec::select::{SelectError, parse_selector, select};

/// Targets deployed, destroyed or verified at once when `-j` is not given. Targets are
/// independent (their own clusters, node groups and state), and on Nebius each takes minutes,
/// so one at a time adds them up; eight keeps the API calls in flight modest. `--fail-fast`
/// keeps one at a time: "stop at the first failure" needs an order.
pub const DEFAULT_CONCURRENCY: usize = 8;

/// `-j` as given, else [`DEFAULT_CONCURRENCY`] (one at a time when ordered); below 1 is 1.
pub fn concurrency(given: Option<i64>, ordered: bool) -> usize {
    match given {
        Some(n) => n.max(1) as usize,
        None if ordered => 1,
        None => DEFAULT_CONCURRENCY,
    }
}

/// The tokio runtime for one command.
pub fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))
}

/// The tokio runtime for a command that talks to the cloud `profile` names: one thread when
/// that cloud is outside this process. Such a command is a client waiting on the cloud; on
/// several threads each call went from the caller's thread to the connection's task on
/// another and back, a quarter of a 1,000-cluster live plan's CPU. The embedded simulator
/// serves in this process and keeps the runtime of several threads it shares with the client
/// (on a thread of its own it answered 10-15 % slower: every call then crosses threads too).
pub fn runtime_for(profile: &str) -> Result<tokio::runtime::Runtime, String> {
    let elsewhere = super::env::session_options(profile).is_ok_and(|o| o.names_a_cloud());
    if !elsewhere {
        return runtime();
    }
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))
}

/// The session the environment says (the cloud, the CLI's inventory, the tenant), the cloud
/// named on stderr.
pub async fn open_cloud(profile: &str) -> Result<Session, String> {
    let options = super::env::session_options(profile).map_err(|e| e.to_string())?;
    let session = Session::connect(&options)
        .await
        .map_err(|e| e.to_string())?;
    if !session.is_simulated() {
        eprintln!("fleetbot: talking to {}", session.description());
    }
    Ok(session)
}

/// The names `--only-projects` and `--only-clusters` give (each `None` when not given: no
/// filter). A flag given with nothing in it is an error, never "every target".
pub fn selectors(
    only_projects: Option<&str>,
    only_clusters: Option<&str>,
) -> Result<(Vec<String>, Vec<String>), SelectError> {
    Ok((
        parse_selector("--only-projects", only_projects)?,
        parse_selector("--only-clusters", only_clusters)?,
    ))
}

/// Refuses selectors that name nothing, before anything is contacted: fleet-engine §7.1's
/// rule, for every command that selects, and an empty, blank or comma-only selector too. The
/// message is the engine's, prefixed. Returns the names the selectors give.
pub fn check_selectors(
    spec: &FleetSpec,
    only_projects: Option<&str>,
    only_clusters: Option<&str>,
    prefix: &str,
) -> Result<(Vec<String>, Vec<String>), String> {
    let checked = selectors(only_projects, only_clusters).and_then(|(projects, clusters)| {
        select(spec, &projects, &clusters, prefix)?;
        Ok((projects, clusters))
    });
    checked.map_err(|e| format!("fleetbot: {e}"))
}

/// [`check_selectors`] for a command that stops on it: the message on stderr, exit 1.
pub fn refuse_unknown_selectors(
    spec: &FleetSpec,
    only_projects: Option<&str>,
    only_clusters: Option<&str>,
    prefix: &str,
) -> Result<(Vec<String>, Vec<String>), std::process::ExitCode> {
    check_selectors(spec, only_projects, only_clusters, prefix).map_err(|e| {
        eprintln!("{e}");
        std::process::ExitCode::FAILURE
    })
}

/// A selection refused by deploy or destroy (a resolution error, before anything is
/// contacted): the message on stderr and, in JSON mode, the command's error document `doc`
/// with the message as `error`; exit 1.
pub fn selection_refused(
    e: &SelectError,
    json: bool,
    mut doc: serde_json::Value,
) -> std::process::ExitCode {
    eprintln!("fleetbot: {e}");
    if json {
        doc["error"] = serde_json::Value::String(e.to_string());
        super::output::print_json(&doc);
    }
    std::process::ExitCode::FAILURE
}

/// The Nebius profile: `--profile` when given, else the spec's `profile`.
pub fn profile_for(spec: &FleetSpec, flag: &str) -> String {
    if flag.is_empty() {
        spec.profile.clone()
    } else {
        flag.to_string()
    }
}

/// The tenant: the spec's, else the session's (`FLEETBOT_TENANT_ID`, as the server reads it,
/// else what the credentials' source names: the simulator's tenant, a profile's
/// `tenant-id`), else the named or active profile's in `~/.nebius/config.yaml`.
pub fn resolve_tenant(
    spec: &FleetSpec,
    session: &Session,
    profile: &str,
) -> Result<String, String> {
    if !spec.tenant_id.is_empty() {
        return Ok(spec.tenant_id.clone());
    }
    if !session.tenant_id().is_empty() {
        return Ok(session.tenant_id().to_string());
    }
    let path = super::env::nebius_config().or_else(default_config_path);
    let config = match path {
        Some(path) => NebiusConfig::load(&path).map_err(|e| e.to_string())?,
        None => NebiusConfig::default(),
    };
    config
        .resolve_tenant("", profile)
        .map_err(|e| format!("{e}; set 'tenant_id' in the fleet spec or FLEETBOT_TENANT_ID"))
}

/// The SSH key for node access: the spec's, else `~/.ssh/id_ed25519.pub`, else
/// `~/.ssh/id_rsa.pub`, else none (nodes then have no SSH access; fleetbot itself never needs it).
/// Only a command that creates nodes says so (`warn`); one that only reads stays quiet.
pub fn resolve_ssh_key(spec: &FleetSpec, warn: bool) -> String {
    if !spec.ssh_public_key.trim().is_empty() {
        return spec.ssh_public_key.trim().to_string();
    }
    let home = dirs::home_dir().unwrap_or_default();
    for name in ["id_ed25519.pub", "id_rsa.pub"] {
        if let Ok(key) = std::fs::read_to_string(home.join(".ssh").join(name)) {
            return key.trim().to_string();
        }
    }
    if warn {
        eprintln!(
            "fleetbot: no ssh_public_key in the spec and no ~/.ssh/id_ed25519.pub or id_rsa.pub; nodes get no SSH access"
        );
    }
    String::new()
}

/// Progress for `targets` targets: a progress bar on a terminal in text mode (step lines above
/// it), plain lines on stderr otherwise, so stdout stays one document in JSON mode. Used by
/// every command that works through targets (deploy, destroy, verify-*).
pub fn progress_for(targets: usize, json: bool) -> Progress {
    use std::io::IsTerminal;
    if json || !std::io::stderr().is_terminal() {
        return stderr_progress();
    }
    let bar = indicatif::ProgressBar::new(targets as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} [{bar:30}] {pos}/{len} targets {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    Arc::new(move |event: &Event| {
        bar.println(format!("  - {event}"));
        if event.outcome().is_some() {
            bar.inc(1);
        }
        if bar.position() >= bar.length().unwrap_or(0) {
            bar.finish_and_clear();
        } else {
            bar.set_message(event.subject.clone().unwrap_or_default());
        }
    })
}

/// Progress lines on stderr, so stdout stays one document in JSON mode.
pub fn stderr_progress() -> Progress {
    Arc::new(|event: &Event| {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "  - {event}");
    })
}

/// The confirmation of fleet-engine §8.2. Returns whether to proceed.
pub fn confirm(
    action: &str,
    spec: &FleetSpec,
    targets: &[(String, String)],
    projects: usize,
    yes: bool,
    to_stderr: bool,
    note: Option<&str>,
) -> bool {
    let mut banner = format!(
        "About to {action} fleet '{}': {} cluster(s) across {projects} project(s).\n",
        spec.name,
        targets.len()
    );
    for (project, cluster) in targets {
        banner.push_str(&format!("  - {project} / cluster {cluster}\n"));
    }
    if let Some(note) = note {
        banner.push_str(note);
        banner.push('\n');
    }
    if to_stderr {
        eprint!("{banner}");
    } else {
        print!("{banner}");
    }
    if yes {
        return true;
    }
    let verb = action.split('/').next().unwrap_or(action);
    eprint!("Proceed to {verb}? [y/N]: ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    let _ = std::io::stdin().lock().read_line(&mut answer);
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

#[cfg(test)]
mod tests {
    #[test]
    fn targets_run_eight_at_a_time_unless_asked_or_ordered() {
        use super::{DEFAULT_CONCURRENCY, concurrency};
        assert_eq!(concurrency(None, false), DEFAULT_CONCURRENCY);
        assert_eq!(concurrency(None, true), 1, "--fail-fast keeps an order");
        assert_eq!(concurrency(Some(3), true), 3, "-j wins");
        assert_eq!(concurrency(Some(0), false), 1);
        assert_eq!(concurrency(Some(-4), false), 1);
    }
}
