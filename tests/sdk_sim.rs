//! The simulator held to the official Nebius Python SDK (PyPI `nebius`, installed by
//! scripts/fetch-nebius-sdk.sh, pinned by hash): tests/nebius_sdk.py drives it through the
//! lifecycle of every resource kind fleetbot uses, full and partial reset masks, required and
//! immutable refusals, bucket soft delete, idempotency keys, pagination to the end, errors and
//! their details, operation waits, the service-account token exchange and IAM v2. Where the
//! SDK and the simulator disagree, the simulator is wrong (docs/cloud.md lists the exceptions).

use crate::support;

use std::path::{Path, PathBuf};

use fleetbot::sim::auth::service_account_ids;
use fleetbot::sim::{Simulator, World};

/// The python with the SDK: `FLEETBOT_NEBIUS_SDK_PYTHON`, else the one
/// scripts/fetch-nebius-sdk.sh installs. CI must have it; elsewhere the test says how to get
/// it and passes without running.
fn sdk_python() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("FLEETBOT_NEBIUS_SDK_PYTHON") {
        return Some(PathBuf::from(path));
    }
    let installed =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("target/tools/nebius-sdk-0.6.29/bin/python");
    if installed.is_file() {
        return Some(installed);
    }
    assert!(
        std::env::var("CI").map_or(true, |v| v != "true"),
        "the Nebius SDK is missing in CI: scripts/test.sh runs scripts/fetch-nebius-sdk.sh first"
    );
    eprintln!(
        "skipped: no Nebius SDK; run scripts/fetch-nebius-sdk.sh (or set FLEETBOT_NEBIUS_SDK_PYTHON)"
    );
    None
}

#[tokio::test]
async fn the_official_sdk_agrees_with_the_simulator() {
    let Some(python) = sdk_python() else {
        return;
    };
    let (private, public) = support::rsa_keypair();
    let world = format!(
        "{}\nservice_accounts:\n  - name: sdk\n    public_key_pem: |\n{}",
        crate::support::quick_default_world(),
        public
            .lines()
            .map(|l| format!("      {l}\n"))
            .collect::<String>()
    );
    let mut world = World::from_yaml(&world).unwrap();
    world.static_tokens.push(support::TOKEN.to_string());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let sim = Simulator::start(world, None, listener).await.unwrap();
    let (account, key_id) = service_account_ids("default", "sdk");
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("sdk-key.pem");
    std::fs::write(&key_file, private).unwrap();

    let output = tokio::process::Command::new(&python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/nebius_sdk.py"))
        .env("SIM_ADDR", sim.addr.to_string())
        .env("SIM_TOKEN", support::TOKEN)
        .env("SIM_TENANT", sim.tenant_id())
        .env("SA_ID", account)
        .env("SA_KEY_ID", key_id)
        .env("SA_KEY_FILE", &key_file)
        // The SDK's own configuration and credentials must not leak in from the machine.
        .env("HOME", dir.path())
        .env_remove("NEBIUS_IAM_TOKEN")
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    assert!(
        output.status.success() && stdout.contains("\n0 failed"),
        "the SDK disagrees with the simulator:\n{stdout}\n{stderr}"
    );
    // Every promised area was exercised.
    for check in [
        "iam v2 tenant list",
        "pagination to the end",
        "partial mask keeps what it does not name",
        "full mask removes what the request leaves empty",
        "required: a node group without a template",
        "immutable: a filesystem's type",
        "soft delete: scheduled, purge in 7 days",
        "undelete",
        "idempotency key replays the first operation",
        "errors: code, details and request IDs",
        "service-account token exchange",
    ] {
        assert!(
            stdout.contains(&format!("ok {check}\n")),
            "{check}:\n{stdout}"
        );
    }
}
