//! Shared helpers for scenario tests: a simulator on loopback and a client for it.
#![allow(dead_code)]

use std::time::Duration;

use fleetbot::cloud::NebiusClient;
use fleetbot::cloud::auth::Credentials;
use fleetbot::cloud::client::{Endpoints, PollPolicy, RetryPolicy};
use fleetbot::sim::{Simulator, World};

pub const TOKEN: &str = "test-token-for-the-simulator";

/// The embedded default world with quick operations and without the projects and capacity
/// blocks it seeds for the example fleets: an empty tenant with generous allowances.
/// The embedded default world (fixtures/sim/default.yaml) with quick operations: what most
/// scenarios run in.
pub fn quick_default_world() -> String {
    include_str!("../../fixtures/sim/default.yaml")
        .replace("operation_latency_ms: 150", "operation_latency_ms: 5")
}

pub fn empty_default_world() -> String {
    let text = quick_default_world();
    let base = text
        .split("# --- the examples' existing resources ---")
        .next()
        .unwrap();
    assert!(base.len() < text.len(), "the examples' section is marked");
    base.to_string()
}

/// Starts a simulator for `world` (YAML) on 127.0.0.1 with a static test token.
pub async fn simulator(world_yaml: &str) -> Simulator {
    let mut world = World::from_yaml(world_yaml).expect("valid world");
    world.static_tokens.push(TOKEN.to_string());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    Simulator::start(world, None, listener)
        .await
        .expect("simulator starts")
}

/// A client for the simulator with short policies so failing tests fail fast.
pub fn client(sim: &Simulator) -> NebiusClient {
    NebiusClient::new(
        Endpoints::Single {
            uri: sim.endpoint(),
        },
        Credentials::Static(TOKEN.to_string()),
    )
    .with_policies(
        RetryPolicy {
            attempts: 3,
            per_attempt: Duration::from_secs(5),
            overall: Duration::from_secs(15),
            first_backoff: Duration::from_millis(10),
        },
        PollPolicy {
            first_interval: Duration::from_millis(5),
            max_interval: Duration::from_millis(50),
            timeout: Duration::from_secs(10),
        },
    )
}

/// A 2048-bit RSA key pair (private PKCS#8 PEM, public SPKI PEM), made with the openssl CLI.
pub fn rsa_keypair() -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    let private = dir.path().join("key.pem");
    let status = std::process::Command::new("openssl")
        .args([
            "genpkey",
            "-algorithm",
            "RSA",
            "-pkeyopt",
            "rsa_keygen_bits:2048",
            "-out",
        ])
        .arg(&private)
        .stderr(std::process::Stdio::null())
        .status()
        .expect("openssl is installed");
    assert!(status.success());
    let public = std::process::Command::new("openssl")
        .args(["pkey", "-pubout", "-in"])
        .arg(&private)
        .output()
        .unwrap();
    assert!(public.status.success());
    (
        std::fs::read_to_string(&private).unwrap(),
        String::from_utf8(public.stdout).unwrap(),
    )
}

/// A world with room for everything and the given extra YAML appended.
pub fn roomy_world(extra: &str) -> String {
    format!(
        "name: test\nregions: [eu-north1, us-central1]\noperation_latency_ms: 30\nquotas:\n  us-central1: {{mk8s.cluster.count: 10, compute.instance.gpu.h200: 64}}\n{extra}"
    )
}

/// `fleetbot sim` in its own process (killed when dropped), its world kept in `state`.
pub struct SimProcess {
    child: std::process::Child,
    pub endpoint: String,
    pub tenant: String,
    /// The probe image it runs (`FLEETBOT_PROBE_IMAGE` for commands that verify).
    pub probe_image: String,
}

impl Drop for SimProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl SimProcess {
    /// Starts `fleetbot sim` on a free loopback port, accepting `token`, with `world` (the
    /// embedded default when `None`).
    pub fn start(token: &str, state: &std::path::Path, world: Option<&std::path::Path>) -> Self {
        use std::io::{BufRead, BufReader};
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_fleetbot"));
        cmd.args([
            "sim",
            "--listen",
            "127.0.0.1:0",
            "--token",
            token,
            "--state",
        ])
        .arg(state);
        if let Some(world) = world {
            cmd.arg("--world").arg(world);
        }
        let mut child = cmd
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
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
        let probe_image = lines
            .next()
            .unwrap()
            .unwrap()
            .trim()
            .trim_start_matches("probe image: ")
            .to_string();
        // Keep draining stdout so the server never writes into a closed pipe.
        std::thread::spawn(move || for _ in lines {});
        SimProcess {
            child,
            endpoint,
            tenant,
            probe_image,
        }
    }
}

/// Deploys through the one door, as `fleetbot deploy --yes` does: the plan read now is
/// applied, and a plan that deletes, replaces or shrinks inside a target is refused.
pub async fn deploy<S>(
    cloud: &fleetbot::cloud::NebiusClient,
    store: &S,
    spec: &fleetbot::spec::FleetSpec,
    tenant: &str,
    options: &fleetbot::engine::ops::LifecycleOptions,
    progress: fleetbot::engine::ops::Progress,
) -> Result<fleetbot::engine::ops::DeployResult, fleetbot::engine::ops::EngineError>
where
    S: fleetbot::store::InventoryStore + Clone + 'static,
{
    let approved = fleetbot::fleet::apply::Approved::ByPerson {
        allow_destroy: false,
    };
    let session = session(cloud, store);
    fleetbot::fleet::apply::plan_and_apply(&session, spec, tenant, options, approved, progress)
        .await
}

/// The session a test that started its own simulator holds: its client and `store`.
pub fn session<S>(cloud: &fleetbot::cloud::NebiusClient, store: &S) -> fleetbot::Session
where
    S: fleetbot::store::InventoryStore + Clone + 'static,
{
    fleetbot::Session::over(cloud.clone(), store.clone())
}

/// Tears down through the one door, as `fleetbot destroy --yes` does.
pub async fn destroy<S>(
    cloud: &fleetbot::cloud::NebiusClient,
    store: &S,
    spec: &fleetbot::spec::FleetSpec,
    options: &fleetbot::engine::ops::LifecycleOptions,
    progress: fleetbot::engine::ops::Progress,
) -> Result<fleetbot::engine::ops::DestroyResult, fleetbot::engine::ops::EngineError>
where
    S: fleetbot::store::InventoryStore + Clone + 'static,
{
    fleetbot::fleet::apply::destroy(&session(cloud, store), spec, options, progress).await
}

/// [`deploy`] as `fleetbot deploy --yes --allow-destroy` does: what the plan read now
/// deletes, replaces or shrinks is applied too.
pub async fn deploy_allowing_destroy(
    cloud: &fleetbot::cloud::NebiusClient,
    store: &fleetbot::store::SqliteStore,
    spec: &fleetbot::spec::FleetSpec,
    tenant: &str,
    options: &fleetbot::engine::ops::LifecycleOptions,
    progress: fleetbot::engine::ops::Progress,
) -> Result<fleetbot::engine::ops::DeployResult, fleetbot::engine::ops::EngineError> {
    let approved = fleetbot::fleet::apply::Approved::ByPerson {
        allow_destroy: true,
    };
    let session = session(cloud, store);
    fleetbot::fleet::apply::plan_and_apply(&session, spec, tenant, options, approved, progress)
        .await
}

/// Deploys `spec_text` (as `path`) through the one door into the SQLite inventory at
/// `store`, against `sim`, and checks that every target deployed: the world a server then
/// starts from.
pub async fn deployed(sim: &Simulator, store: &std::path::Path, spec_text: &str, path: &str) {
    let inventory = fleetbot::store::SqliteStore::open(store).await.unwrap();
    let spec = fleetbot::spec::load_str(spec_text, path).unwrap();
    let result = deploy(
        &client(sim),
        &inventory,
        &spec,
        &sim.tenant_id(),
        &fleetbot::engine::ops::LifecycleOptions::default(),
        std::sync::Arc::new(|_: &fleetbot::engine::ops::Event| {}),
    )
    .await
    .unwrap();
    assert_eq!(result.failed, 0, "{result:?}");
    assert!(result.deployed > 0, "{result:?}");
}

// The example fleet the App scenarios start from, and the changes they review.

pub fn base_spec() -> String {
    include_str!("../../fixtures/specs/fleet1-test.yaml").to_string()
}

pub fn staging_spec() -> String {
    base_spec()
        .replace("name: fleet1-test", "name: staging")
        .replace(
            "project_prefix: \"fleet1-test-\"",
            "project_prefix: \"staging-\"",
        )
}

/// The base spec with only project `a`'s cluster grown to two GPU nodes.
pub fn spec_with_a_grown() -> String {
    let from = "  - name: a   # display name fleet1-test-a\n";
    let s = base_spec();
    assert!(s.contains(from));
    s.replacen(
        from,
        &format!("{from}    clusters:\n      - name: cluster\n        gpu_nodes: {{count: 2}}\n"),
        1,
    )
}

/// Lifecycle options with a test SSH key (nodes get one, so deploy warns about nothing).
pub fn test_options() -> fleetbot::engine::ops::LifecycleOptions {
    fleetbot::engine::ops::LifecycleOptions {
        ssh_public_key: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExampleKeyForTestsOnly fleetbot-test"
            .into(),
        ..Default::default()
    }
}

/// A progress sink that keeps every line, and the lines.
pub fn recorded_progress() -> (
    fleetbot::engine::ops::Progress,
    std::sync::Arc<std::sync::Mutex<Vec<String>>>,
) {
    let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = lines.clone();
    (
        std::sync::Arc::new(move |line: &fleetbot::engine::ops::Event| {
            sink.lock().unwrap().push(line.to_string())
        }),
        lines,
    )
}

/// Runs `git -C dir args…`, asserting it succeeds; its trimmed stdout.
pub fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Writes `text` at `dir/path`, creating the directories on the way.
pub fn write_file(dir: &std::path::Path, path: &str, text: &str) {
    let full = dir.join(path);
    std::fs::create_dir_all(full.parent().unwrap()).unwrap();
    std::fs::write(full, text).unwrap();
}
