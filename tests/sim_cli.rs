//! `fleetbot sim` as a standalone process: served over loopback, state kept across runs, and
//! running the storage probe as the embedded simulator does (from the CLI and through the App).

use crate::app_harness as app;
use crate::fake_github;
use crate::support;

use std::process::Command;

use fleetbot::cloud::Cloud;
use fleetbot::cloud::auth::Credentials;
use fleetbot::cloud::client::{Endpoints, NebiusClient, idempotency_key};

/// A child process killed when the test ends, whether it passed or not.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

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

/// The probe runs on the standalone simulator as on the embedded one: `fleetbot sim` registers
/// its own binary, by digest, and prints it; a command or a server given that image verifies
/// storage against it.
#[tokio::test]
async fn verify_storage_passes_against_the_standalone_simulator_from_the_cli_and_the_app() {
    use app::{App, AppOptions, eventually};
    use fake_github::{REPO, fixtures, sha};

    let dir = tempfile::tempdir().unwrap();
    let world = dir.path().join("world.yaml");
    std::fs::write(&world, crate::support::quick_default_world()).unwrap();
    let sim =
        support::SimProcess::start("cli-token", &dir.path().join("world.state"), Some(&world));
    assert!(
        sim.probe_image
            .starts_with("fleetbot.local/fleetbot-probe@sha256:"),
        "{}",
        sim.probe_image
    );
    let store = dir.path().join("fleetbot.sqlite");
    let fleetbot = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_fleetbot"))
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", dir.path())
            .env("XDG_DATA_HOME", dir.path().join("data"))
            .env("NEBIUS_ENDPOINT", &sim.endpoint)
            .env("NEBIUS_IAM_TOKEN", "cli-token")
            .env("FLEETBOT_TENANT_ID", &sim.tenant)
            .env("FLEETBOT_PROBE_IMAGE", &sim.probe_image)
            .env("FLEETBOT_INVENTORY", &store)
            .output()
            .unwrap()
    };
    let spec = "fixtures/specs/fleet1-test.yaml";
    let deployed = fleetbot(&["deploy", "--spec", spec, "--yes"]);
    assert_eq!(
        deployed.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&deployed.stderr)
    );
    let verified = fleetbot(&["verify-storage", "--spec", spec, "--output", "json"]);
    let stderr = String::from_utf8_lossy(&verified.stderr);
    assert_eq!(verified.status.code(), Some(0), "{stderr}");
    let doc: serde_json::Value = serde_json::from_slice(&verified.stdout).unwrap();
    assert_eq!(doc["passed"], true, "{doc}");

    // Through the App: a server reaching the standalone simulator as Nebius.
    let base = support::base_spec();
    let gh = fake_github::with_fleet(&base).await;
    gh.world().set_role(REPO, "writer-wes", "write");
    let app = App::start(AppOptions {
        github_url: gh.url.clone(),
        dir: dir.path().to_path_buf(),
        workers: 2,
        cloud: Some((sim.endpoint.clone(), "cli-token".into(), sim.tenant.clone())),
        store_url: None,
        webhook_secrets: None,
        job_lease_secs: None,
        env: vec![
            ("FLEETBOT_PROBE_IMAGE", sim.probe_image.clone()),
            (
                "FLEETBOT_EVIDENCE_DIR",
                dir.path().join("evidence").display().to_string(),
            ),
        ],
    })
    .await;
    let head = sha(2);
    let touched = format!("{base}\n# verified against the standalone simulator\n");
    app.open_reviewed(&gh, 12, &head, &[("fleets/prod.yaml", Some(&touched))])
        .await;
    let pr = fixtures::PrRef {
        owner: fake_github::OWNER.into(),
        repo: fake_github::NAME.into(),
        number: 12,
        head_sha: head.clone(),
        base_sha: sha(1),
        head_ref: "change".into(),
        base_ref: "main".into(),
        installation_id: fake_github::INSTALLATION,
    };
    app.deliver(
        "issue_comment",
        "comment-1",
        &gh.pr_comment(&pr, 1, "writer-wes", "User", "/verify-storage"),
    )
    .await;
    let run = eventually("a concluded fleet/verify-storage run", || {
        gh.world()
            .runs_on(REPO, &head)
            .into_iter()
            .find(|r| r.name == "fleet/verify-storage" && r.conclusion.is_some())
    })
    .await;
    assert_eq!(
        run.conclusion.as_deref(),
        Some("success"),
        "{}",
        run.summary
    );
    app.settled().await;
    gh.assert_clean();
}

/// The printed "connect with" line pastes as it is (issue 36): with the token from
/// FLEETBOT_SIM_TOKEN it names that variable (the token itself is never printed), and a state
/// the embedded default wrote brings its inventory along.
#[test]
fn the_connect_line_pastes_as_it_is_and_never_prints_the_token() {
    use std::io::{BufRead, BufReader};
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("default.state");
    std::fs::write(dir.path().join("default.inventory.sqlite"), b"").unwrap();
    let mut child = KillOnDrop(
        std::process::Command::new(env!("CARGO_BIN_EXE_fleetbot"))
            .args(["sim", "--listen", "127.0.0.1:0", "--state"])
            .arg(&state)
            .env("FLEETBOT_SIM_TOKEN", "s3cr3t-sim-token")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let line = BufReader::new(child.0.stdout.take().unwrap())
        .lines()
        .map(Result::unwrap)
        .find(|l| l.trim_start().starts_with("connect with: "))
        .unwrap();
    drop(child);
    assert!(!line.contains("s3cr3t-sim-token"), "{line}");
    let paste = line.trim_start().trim_start_matches("connect with: ");
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "{paste} && printf '%s|%s' \"$NEBIUS_IAM_TOKEN\" \"$FLEETBOT_INVENTORY\""
        ))
        .env("FLEETBOT_SIM_TOKEN", "s3cr3t-sim-token")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!(
            "s3cr3t-sim-token|{}",
            dir.path().join("default.inventory.sqlite").display()
        )
    );
}

/// `fleetbot sim --metrics` serves the simulator's own call counters, as load scripts read
/// them (scripts/bench-scale.sh): each gRPC method a client called, and each request to a
/// cluster's Kubernetes API by HTTP method, counted.
#[tokio::test]
async fn the_metrics_endpoint_counts_the_calls_the_simulator_answered() {
    use std::io::{BufRead, BufReader, Read, Write};
    let metrics = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = metrics.local_addr().unwrap();
    drop(metrics);
    let mut child = KillOnDrop(
        std::process::Command::new(env!("CARGO_BIN_EXE_fleetbot"))
            .args(["sim", "--listen", "127.0.0.1:0", "--token", "cli-token"])
            .arg("--metrics")
            .arg(address.to_string())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut lines = BufReader::new(child.0.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let endpoint = first.rsplit(' ').next().unwrap().to_string();
    let tenant = lines.next().unwrap().unwrap();
    let tenant = tenant.rsplit(' ').next().unwrap().to_string();
    let mut kube_base = String::new();
    while let Some(Ok(line)) = lines.next() {
        if let Some((_, base)) = line.split_once("Kubernetes API of each running cluster: ") {
            kube_base = base.split('<').next().unwrap().to_string();
        }
        if line.trim_start().starts_with("metrics:") {
            break;
        }
    }
    let client = NebiusClient::new(
        Endpoints::from_override(&endpoint).unwrap(),
        Credentials::Static("cli-token".into()),
    );
    for _ in 0..3 {
        client.list_projects(&tenant).await.unwrap();
    }
    // Two requests to a cluster's Kubernetes API (there is no such cluster: each is answered,
    // and counted, all the same).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let kube = reqwest::Client::builder()
        .danger_accept_invalid_certs(true)
        .build()
        .unwrap();
    assert!(kube_base.starts_with("https://"), "{kube_base:?}");
    for _ in 0..2 {
        let answer = kube
            .get(format!("{kube_base}mk8scluster-none/version"))
            .bearer_auth("cli-token")
            .send()
            .await
            .unwrap();
        assert!(!answer.status().is_success(), "{}", answer.status());
    }
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    drop(child);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(
        text.contains("fleetbot_sim_calls_total{method=\"/nebius.iam.v2.ProjectService/List\"} 3")
            || text.contains(
                "fleetbot_sim_calls_total{method=\"/nebius.iam.v1.ProjectService/List\"} 3"
            ),
        "{text}"
    );
    assert!(
        text.contains("fleetbot_sim_kube_requests_total{method=\"GET\"} 2\n"),
        "{text}"
    );
    // No cluster exists, so none was read from the cloud.
    assert!(
        text.contains("\nfleetbot_sim_kube_cluster_reads_total 0\n"),
        "{text}"
    );
}
