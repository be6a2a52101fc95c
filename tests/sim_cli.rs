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

/// The standalone recipe as docs/cloud.md gives it: the endpoint, the token and the tenant the
/// simulator prints are enough for a command to read the cloud; a refused token is an
/// authentication error that says so, not a tenant error.
#[test]
fn the_printed_recipe_connects_and_a_wrong_token_is_an_authentication_error() {
    let dir = tempfile::tempdir().unwrap();
    let sim = start(&dir.path().join("world.state"));
    let plan = |token: &str, tenant: Option<&str>| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_fleetbot"));
        cmd.args(["plan", "--live", "-f", "fixtures/specs/fleet1-test.yaml"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env_clear()
            .env("HOME", dir.path())
            .env("XDG_DATA_HOME", dir.path().join("data"))
            .env("NEBIUS_ENDPOINT", &sim.endpoint)
            .env("NEBIUS_IAM_TOKEN", token);
        if let Some(tenant) = tenant {
            cmd.env("FLEETBOT_TENANT_ID", tenant);
        }
        cmd.output().unwrap()
    };
    let ok = plan("cli-token", Some(&sim.tenant));
    let stderr = String::from_utf8_lossy(&ok.stderr);
    assert_eq!(ok.status.code(), Some(0), "{stderr}");
    assert!(String::from_utf8_lossy(&ok.stdout).contains("to create"));
    let refused = plan("wrong", Some(&sim.tenant));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1));
    assert!(stderr.contains("cloud: authentication failed"), "{stderr}");
    let no_tenant = plan("cli-token", None);
    let stderr = String::from_utf8_lossy(&no_tenant.stderr);
    assert_eq!(no_tenant.status.code(), Some(1));
    assert!(
        stderr.contains("tenant_id could not be resolved") && stderr.contains("FLEETBOT_TENANT_ID"),
        "{stderr}"
    );
}
