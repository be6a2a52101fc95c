//! `fleetbot kubeconfig`: a kubeconfig for the fleet's deployed clusters (one context per
//! cluster), and `fleetbot kube-token`, the exec credential that kubeconfig calls for a token.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use super::lifecycle::{open_cloud, profile_for, runtime, runtime_for};
use crate::clusters::kubeconfig::{ExecCommand, KubeconfigEntry, exec_credential, render};
use crate::clusters::{ClusterEndpoint, context_name};
use crate::fleet::Session;

#[derive(Debug, Args)]
pub struct KubeconfigArgs {
    #[command(flatten)]
    pub spec: super::args::SpecArgs,
    #[command(flatten)]
    pub selection: super::args::SelectionArgs,
    /// Nebius profile (default: the spec's); the exec credential uses it too.
    #[arg(long, default_value = "")]
    pub profile: String,
    /// Write the kubeconfig here (mode 0600) instead of standard output.
    #[arg(long, value_name = "PATH")]
    pub output: Option<PathBuf>,
}

/// Writes `text` to `path` with mode 0600, replacing it atomically.
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let temp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("kubeconfig"),
        std::process::id()
    ));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let result = (|| {
        let mut file = options.open(&temp)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&temp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}

pub fn run(args: KubeconfigArgs) -> ExitCode {
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
    let profile = profile_for(&spec, &args.profile);
    let runtime = match runtime_for(&profile) {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async {
        let session = match open_cloud(&profile).await {
            Ok(s) => s,
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::FAILURE;
            }
        };
        // On the embedded simulator, the clusters must outlive this command: the kubeconfig
        // points at the resident simulator of the same state, started here if none runs; but
        // only when there is a cluster to point at (a kubeconfig of nothing starts nothing).
        if session.is_embedded() {
            match reachable(&session, &spec, &only_projects, &only_clusters).await {
                Ok((entries, _)) if entries.is_empty() => {
                    eprintln!(
                        "fleetbot: no selected cluster can be reached; no kubeconfig written"
                    );
                    return ExitCode::FAILURE;
                }
                Ok(_) => {}
                Err(e) => {
                    eprintln!("{e}");
                    return ExitCode::FAILURE;
                }
            }
        }
        let (session, sim_state) = match residentially(session, &profile).await {
            Ok(c) => c,
            Err(e) => {
                eprintln!("fleetbot: {e}");
                return ExitCode::FAILURE;
            }
        };
        let (entries, left_out) =
            match reachable(&session, &spec, &only_projects, &only_clusters).await {
                Ok(found) => found,
                Err(e) => {
                    eprintln!("{e}");
                    return ExitCode::FAILURE;
                }
            };
        if entries.is_empty() {
            eprintln!("fleetbot: no selected cluster can be reached; no kubeconfig written");
            return ExitCode::FAILURE;
        }
        let command = std::env::current_exe()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| "fleetbot".into());
        let mut exec_args = vec!["kube-token".to_string()];
        if let Some(state) = &sim_state {
            exec_args.extend([
                "--simulator-state".to_string(),
                state.display().to_string(),
            ]);
        } else if !profile.is_empty() {
            exec_args.extend(["--profile".to_string(), profile.clone()]);
        }
        let text = render(&entries, &ExecCommand { command, args: exec_args });
        match &args.output {
            Some(path) => {
                if let Err(e) = write_private(path, &text) {
                    eprintln!("fleetbot: cannot write {}: {e}", path.display());
                    return ExitCode::FAILURE;
                }
                eprintln!(
                    "fleetbot: wrote {} context(s) to {}",
                    entries.len(),
                    path.display()
                );
            }
            None => print!("{text}"),
        }
        if let Some(resident) = session.resident_simulator() {
            eprintln!(
                "fleetbot: the clusters are served by the resident simulator (pid {}) until it is stopped: `kill {}`",
                resident.pid, resident.pid
            );
        }
        if left_out > 0 {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        }
    })
}

/// The kubeconfig entries of the selected clusters `session` reaches, and how many were left
/// out (each named on stderr).
async fn reachable(
    session: &Session,
    spec: &crate::spec::FleetSpec,
    only_projects: &[String],
    only_clusters: &[String],
) -> Result<(Vec<KubeconfigEntry>, usize), String> {
    let targets = session
        .deployed_clusters(spec, only_projects, only_clusters)
        .await
        .map_err(|e| e.to_string())?;
    let mut entries = Vec::new();
    let mut left_out = 0;
    for target in &targets {
        let endpoint = target
            .cluster
            .as_ref()
            .map_err(Clone::clone)
            .and_then(|c| ClusterEndpoint::of(c).map_err(|e| e.to_string()));
        match endpoint {
            Ok(endpoint) => entries.push(KubeconfigEntry {
                context: context_name(&spec.name, &target.project_key, &target.cluster_name),
                endpoint,
            }),
            Err(e) => {
                left_out += 1;
                eprintln!(
                    "fleetbot: {}/{}: {e}; left out of the kubeconfig",
                    target.project_key, target.cluster_name
                );
            }
        }
    }
    Ok((entries, left_out))
}

/// The session, moved to the resident simulator when it is the embedded one (the in-process
/// simulator stops, its state saved, and the resident serves that state), with the state the
/// resident serves; a real cloud's session as it is, with none.
async fn residentially(
    session: Session,
    profile: &str,
) -> Result<(Session, Option<PathBuf>), String> {
    if !session.is_simulated() {
        return Ok((session, None));
    }
    let options = super::env::session_options(profile).map_err(|e| e.to_string())?;
    let state = crate::fleet::connect::sim_state_path(&options).map_err(|e| e.to_string())?;
    if session.resident_simulator().is_some() {
        return Ok((session, Some(state)));
    }
    session.stop().await;
    let world = options.sim_world.clone();
    let serves = state.clone();
    tokio::task::spawn_blocking(move || crate::fleet::resident::ensure(&serves, world.as_deref()))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    Ok((open_cloud(profile).await?, Some(state)))
}

#[derive(Debug, Args)]
pub struct KubeTokenArgs {
    /// Nebius profile to read credentials from.
    #[arg(long, default_value = "")]
    pub profile: String,
    /// The embedded default's simulator state whose resident simulator's token to give
    /// (what `fleetbot kubeconfig` writes on the embedded simulator).
    #[arg(long, value_name = "PATH")]
    pub simulator_state: Option<PathBuf>,
}

/// Prints a client-go ExecCredential with a fresh IAM token (kubectl runs this).
pub fn run_token(args: KubeTokenArgs) -> ExitCode {
    let runtime = match runtime() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(state) = &args.simulator_state {
        return match crate::fleet::resident::find(state) {
            Some(resident) => {
                println!("{}", exec_credential(&resident.token));
                ExitCode::SUCCESS
            }
            None => {
                eprintln!(
                    "fleetbot kube-token: no resident simulator serves {}; run `fleetbot kubeconfig` again to start it",
                    state.display()
                );
                ExitCode::FAILURE
            }
        };
    }
    runtime.block_on(async {
        let options = match super::env::session_options(&args.profile) {
            Ok(o) => o,
            Err(e) => {
                eprintln!("fleetbot kube-token: {e}");
                return ExitCode::FAILURE;
            }
        };
        let session = match Session::connect_configured(&options).await {
            Ok(Some(s)) if !s.is_simulated() => s,
            Ok(_) => {
                eprintln!(
                    "fleetbot kube-token: no Nebius credentials configured (NEBIUS_IAM_TOKEN or a service-account profile); an embedded simulator's token would end with this command"
                );
                return ExitCode::FAILURE;
            }
            Err(e) => {
                eprintln!("fleetbot kube-token: {e}");
                return ExitCode::FAILURE;
            }
        };
        match session.bearer_token().await {
            Ok(token) => {
                println!("{}", exec_credential(&token));
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("fleetbot kube-token: {e}");
                ExitCode::FAILURE
            }
        }
    })
}
