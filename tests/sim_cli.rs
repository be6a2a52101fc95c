//! `fleetbot sim` as a standalone process: served over loopback, state kept across runs.

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use fleetbot::cloud::Cloud;
use fleetbot::cloud::auth::Credentials;
use fleetbot::cloud::client::{Endpoints, NebiusClient, idempotency_key};

struct Running {
    child: Child,
    endpoint: String,
    tenant: String,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(state: &std::path::Path) -> Running {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fleetbot"))
        .args([
            "sim",
            "--listen",
            "127.0.0.1:0",
            "--token",
            "cli-token",
            "--state",
        ])
        .arg(state)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let endpoint = first.rsplit(' ').next().unwrap().to_string();
    let tenant = lines
        .next()
        .unwrap()
        .unwrap()
        .trim()
        .trim_start_matches("tenant: ")
        .to_string();
    // Keep draining stdout so the server never writes into a closed pipe.
    std::thread::spawn(move || for _ in lines {});
    Running {
        child,
        endpoint,
        tenant,
    }
}

#[tokio::test]
async fn separate_runs_see_one_world() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("world.state");
    let first = start(&state);
    assert!(
        first.endpoint.starts_with("http://127.0.0.1:"),
        "{}",
        first.endpoint
    );
    let client = |endpoint: &str| {
        NebiusClient::new(
            Endpoints::from_override(endpoint).unwrap(),
            Credentials::Static("cli-token".into()),
        )
    };
    let project = client(&first.endpoint)
        .create_project(
            &first.tenant,
            "kept-across-runs",
            "eu-north1",
            &Default::default(),
            &idempotency_key(&["x"]),
        )
        .await
        .unwrap();
    drop(first);

    let second = start(&state);
    let seen = client(&second.endpoint)
        .get_project(&project.id)
        .await
        .unwrap();
    assert_eq!(seen.name, "kept-across-runs");
    let refused = NebiusClient::new(
        Endpoints::from_override(&second.endpoint).unwrap(),
        Credentials::Static("wrong".into()),
    )
    .get_project(&project.id)
    .await
    .unwrap_err();
    assert_eq!(refused.code, tonic::Code::Unauthenticated);
}

#[test]
fn refuses_to_start_without_a_way_to_authenticate() {
    let out = Command::new(env!("CARGO_BIN_EXE_fleetbot"))
        .args(["sim", "--listen", "127.0.0.1:0"])
        .env_remove("FLEETBOT_SIM_TOKEN")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--token"));
}
