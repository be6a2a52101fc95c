//! `fleetbot sim` as a standalone process: served over loopback, state kept across runs.

mod support;

use std::process::Command;

use fleetbot::cloud::Cloud;
use fleetbot::cloud::auth::Credentials;
use fleetbot::cloud::client::{Endpoints, NebiusClient, idempotency_key};

fn start(state: &std::path::Path) -> support::SimProcess {
    support::SimProcess::start("cli-token", state, None)
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
