//! A home for running the `fleetbot` binary on the embedded simulator: its own `HOME`, data
//! directory, world (quick operations) and simulator state, with no credentials or runtime
//! values leaking in from the machine running the tests.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

pub struct CliHome {
    home: tempfile::TempDir,
}

/// A documented `fleetbot kubeconfig` starts a resident simulator for the home's state: it
/// goes with the home.
impl Drop for CliHome {
    fn drop(&mut self) {
        let file = self.home.path().join("sim.state.resident.json");
        let pid = std::fs::read_to_string(file)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| v["pid"].as_u64());
        if let Some(pid) = pid {
            let _ = Command::new("kill").arg(pid.to_string()).status();
        }
    }
}

impl CliHome {
    pub fn new() -> CliHome {
        CliHome {
            home: tempfile::tempdir().unwrap(),
        }
    }

    pub fn path(&self) -> &Path {
        self.home.path()
    }

    /// Runs `fleetbot args…` from the repository root with `stdin` as its input.
    pub fn run(&self, args: &[&str], stdin: &str) -> Output {
        output_with_stdin(&mut self.command(args), stdin.as_bytes())
    }

    /// `fleetbot args…` as [`CliHome::run`] runs it, to be started by the caller.
    pub fn command(&self, args: &[&str]) -> Command {
        let world = self.path().join("world.yaml");
        if !world.exists() {
            let text = include_str!("../../fixtures/sim/default.yaml")
                .replace("operation_latency_ms: 150", "operation_latency_ms: 5");
            std::fs::write(&world, text).unwrap();
        }
        let mut command = Command::new(env!("CARGO_BIN_EXE_fleetbot"));
        command
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("HOME", self.path())
            .env("XDG_DATA_HOME", self.path().join("data"))
            .env("FLEETBOT_CLOUD", "simulator")
            .env("FLEETBOT_SIM_WORLD", &world)
            .env("FLEETBOT_SIM_STATE", self.path().join("sim.state"))
            .env("FLEETBOT_NEBIUS_CONFIG", self.path().join("absent.yaml"))
            .env_remove("NEBIUS_IAM_TOKEN")
            .env_remove("FLEETBOT_RUNTIME_VALUES")
            .env_remove("RUST_LOG");
        command
    }
}

/// Runs `command` with `stdin` as its whole input; its output and status.
pub fn output_with_stdin(command: &mut Command, stdin: &[u8]) -> Output {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

/// The one JSON document a command printed on stdout.
pub fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON document ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// `program args…` as a fresh shell in `home` runs it: no credentials, no simulator settings,
/// nothing of the machine's environment but `PATH`, and the user's own data directory under
/// `home` (the embedded default's state lives there).
pub fn fresh_shell(program: &Path, home: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(program);
    command
        .args(args)
        .current_dir(home)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_DATA_HOME", home.join("data"));
    command
}
