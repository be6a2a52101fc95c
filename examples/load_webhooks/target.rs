//! The server under test: `fleetbot serve` started here (throwaway App key, temporary store,
//! a stand-in GitHub on loopback), what `/proc` says about any server process, and what
//! fleetbot's `/metrics` says about its queue.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use axum::Router;
use axum::http::{StatusCode, Uri};
use axum::response::IntoResponse;

/// What the started server's GitHub API URL leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GitHub {
    /// A stand-in on loopback that mints installation tokens and answers every other call
    /// `404 Not Found`: a job makes its first real call and ends (a 404 is permanent), so the
    /// queue keeps moving without GitHub. Nothing listening instead would fail every job with
    /// a transport error and back it off for 30 s, which turns any pull request's queue into
    /// the backoff scenario after its first job.
    Stub,
    /// A port nothing listens on: every job's GitHub calls fail and the job backs off.
    Refused,
}

/// How to start `fleetbot serve`.
pub struct ServeOptions {
    pub server: PathBuf,
    pub store: Option<String>,
    pub workers: usize,
    pub secret: String,
    pub github_url: String,
}

/// The started server, stopped on drop.
pub struct Spawned {
    child: Child,
    _dir: tempfile::TempDir,
}

impl Spawned {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// Starts `fleetbot serve` on a free loopback port; returns it and its base URL.
pub fn spawn_fleetbot(options: &ServeOptions) -> (Spawned, String) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let key = dir.path().join("app-key.pem");
    let status = Command::new("openssl")
        .args(["genrsa", "-traditional", "-out"])
        .arg(&key)
        .arg("2048")
        .stderr(Stdio::null())
        .status()
        .expect("the openssl CLI makes the throwaway App key");
    assert!(status.success(), "openssl genrsa failed");
    let port = free_port();
    let store = options
        .store
        .clone()
        .unwrap_or_else(|| format!("sqlite://{}", dir.path().join("load.sqlite").display()));
    let child = Command::new(&options.server)
        .arg("serve")
        .env("FLEETBOT_LISTEN", format!("127.0.0.1:{port}"))
        .env("FLEETBOT_WEBHOOK_SECRET", &options.secret)
        .env("FLEETBOT_APP_ID", "1")
        .env("FLEETBOT_APP_PRIVATE_KEY_PATH", &key)
        .env("FLEETBOT_GITHUB_API_URL", &options.github_url)
        .env("FLEETBOT_STORE", store)
        .env("FLEETBOT_WORKERS", options.workers.to_string())
        // Static plans: no cloud credentials are looked for, none is called.
        .env("FLEETBOT_CLOUD", "none")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        // Its warnings under load (GitHub refused, jobs retried) would drown the report.
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot start {} ({e}); build it with `cargo build --release --bin fleetbot`",
                options.server.display()
            )
        });
    (
        Spawned { child, _dir: dir },
        format!("http://127.0.0.1:{port}"),
    )
}

/// A port on loopback that nothing listens on (bound, then closed, so it was free a moment
/// ago; port 9, discard, is not always closed).
pub fn refused_url() -> String {
    format!("http://127.0.0.1:{}", free_port())
}

/// Starts the stand-in GitHub (see [`GitHub::Stub`]) on a free loopback port, in this process;
/// returns its base URL.
pub async fn start_github_stub() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port for the GitHub stand-in");
    let url = format!("http://{}", listener.local_addr().expect("its address"));
    let app = Router::new().fallback(github_answer);
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    url
}

async fn github_answer(uri: Uri) -> axum::response::Response {
    let json = [("content-type", "application/json; charset=utf-8")];
    let path = uri.path();
    if path.starts_with("/app/installations/") && path.ends_with("/access_tokens") {
        // Not a token's format, so no scanner ever mistakes it for one.
        let expires = jiff::Timestamp::now() + jiff::SignedDuration::from_hours(1);
        let body = serde_json::json!({
            "token": "load-test-installation-token",
            "expires_at": expires.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
            "permissions": {"checks": "write", "contents": "read", "issues": "write", "pull_requests": "write"},
            "repository_selection": "all",
        });
        return (StatusCode::CREATED, json, body.to_string()).into_response();
    }
    let body = r#"{"message":"Not Found","documentation_url":"https://docs.github.com/rest","status":"404"}"#;
    (StatusCode::NOT_FOUND, json, body).into_response()
}

/// `VmRSS` and `VmHWM` (peak) of `pid`, in KiB.
pub fn memory_kib(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// CPU seconds `pid` has used (user + system, all its threads), from `/proc/PID/stat`.
pub fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which is in parentheses and may hold spaces).
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name; the clock
    // tick is 100 Hz on Linux (USER_HZ, whatever the kernel's own HZ).
    (ticks(11) + ticks(12)) / 100.0
}

/// What fleetbot's `/metrics` says about its queue.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Queue {
    pub queued: f64,
    pub running: f64,
    /// Jobs finished (any outcome, retries included), counted by the job histogram.
    pub jobs_run: f64,
    /// Attempts that ended in a retry (a job backing off).
    pub retries: f64,
    /// Attempts by outcome (`ok`, `ignored`, `error`, `retry`, …).
    pub outcomes: BTreeMap<String, f64>,
    /// GitHub calls by `operation status`.
    pub github_calls: BTreeMap<String, f64>,
}

/// The value of label `name` in a Prometheus sample line.
fn label<'a>(line: &'a str, name: &str) -> &'a str {
    let key = format!("{name}=\"");
    line.split_once(&key)
        .and_then(|(_, rest)| rest.split_once('"'))
        .map_or("", |(value, _)| value)
}

/// The queue as `/metrics` shows it; `None` when the server has no such page (Probot) or
/// shows no queue.
pub async fn queue(http: &reqwest::Client, url: &str) -> Option<Queue> {
    let r = http.get(format!("{url}/metrics")).send().await.ok()?;
    if !r.status().is_success() {
        return None;
    }
    let text = r.text().await.ok()?;
    if !text.contains("fleetbot_queue_jobs") {
        return None;
    }
    let mut q = Queue::default();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some(value) = line.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok()) else {
            continue;
        };
        if line.starts_with("fleetbot_queue_jobs{") {
            match label(line, "state") {
                "queued" => q.queued += value,
                "running" => q.running += value,
                _ => {}
            }
        } else if line.starts_with("fleetbot_job_duration_seconds_count") {
            q.jobs_run += value;
            *q.outcomes
                .entry(label(line, "outcome").to_string())
                .or_default() += value;
        } else if line.starts_with("fleetbot_github_api_calls_total") {
            let key = format!("{} {}", label(line, "operation"), label(line, "status"));
            *q.github_calls.entry(key).or_default() += value;
        }
    }
    q.retries = q.outcomes.get("retry").copied().unwrap_or(0.0);
    Some(q)
}
