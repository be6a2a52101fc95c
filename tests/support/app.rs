//! The production path: `fleetbot serve` run as the built binary, configured only through the
//! environment a deployment gives it, over a real SQLite store, the fake GitHub and (when asked)
//! a simulator; tests talk to it only over HTTP, and to GitHub and the cloud as peers do.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::fake_github::{APP_ID, SECRET, app_private_key_path};

/// What the server is started with.
#[derive(Clone, Debug)]
pub struct AppOptions {
    pub github_url: String,
    /// Where the SQLite store lives; kept across restarts.
    pub dir: PathBuf,
    pub workers: usize,
    /// `(endpoint, token, tenant)`: plan live against this Nebius endpoint.
    pub cloud: Option<(String, String, String)>,
    /// A `postgres://` store shared by replicas; `None`: SQLite in `dir`.
    pub store_url: Option<String>,
    /// `FLEETBOT_WEBHOOK_SECRET` (comma-separated during a rotation); `None`: [`SECRET`].
    pub webhook_secrets: Option<String>,
    /// `FLEETBOT_JOB_LEASE_SECS`; `None`: the default.
    pub job_lease_secs: Option<u64>,
    /// Further environment (`FLEETBOT_MAX_CONNECTIONS`, …).
    pub env: Vec<(&'static str, String)>,
}

/// A running `fleetbot serve`.
pub struct App {
    child: Child,
    pub url: String,
    pub options: AppOptions,
    /// Everything the server wrote to stderr (its logs), for assertions that nothing private
    /// was logged.
    pub logs: Arc<Mutex<Vec<String>>>,
    http: reqwest::Client,
}

/// `fleetbot serve` as [`App::start`] runs it.
fn command(options: &AppOptions) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fleetbot"));
    cmd.arg("serve")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &options.dir)
        .env("XDG_DATA_HOME", options.dir.join("data"))
        .env("FLEETBOT_LISTEN", "127.0.0.1:0")
        .env(
            "FLEETBOT_WEBHOOK_SECRET",
            options.webhook_secrets.as_deref().unwrap_or(SECRET),
        )
        .env("FLEETBOT_APP_ID", APP_ID)
        .env("FLEETBOT_APP_PRIVATE_KEY_PATH", app_private_key_path())
        .env("FLEETBOT_GITHUB_API_URL", &options.github_url)
        .env(
            "FLEETBOT_STORE",
            options.store_url.clone().unwrap_or_else(|| {
                format!("sqlite://{}", options.dir.join("fleetbot.sqlite").display())
            }),
        )
        .env("FLEETBOT_WORKERS", options.workers.to_string())
        // The dashboard has a listener of its own by default (127.0.0.1:3001); tests run many
        // servers at once, so each gets a free port ([`App::dashboard`]).
        .env("FLEETBOT_DASHBOARD", "127.0.0.1:0")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some(secs) = options.job_lease_secs {
        cmd.env("FLEETBOT_JOB_LEASE_SECS", secs.to_string())
            .env("FLEETBOT_APPLY_LEASE_SECS", secs.to_string());
    }
    match &options.cloud {
        Some((endpoint, token, tenant)) => {
            cmd.env("FLEETBOT_CLOUD", "nebius")
                .env("NEBIUS_ENDPOINT", endpoint)
                .env("NEBIUS_IAM_TOKEN", token)
                .env("FLEETBOT_TENANT_ID", tenant);
        }
        None => {
            cmd.env("FLEETBOT_CLOUD", "none");
        }
    }
    // Last, so a test's own settings win (`FLEETBOT_CLOUD=simulator`, say).
    for (name, value) in &options.env {
        cmd.env(name, value);
    }
    cmd
}

/// Runs `fleetbot serve` with `options` where it is expected to stop on its own (a
/// configuration it refuses, a store it cannot reach): its exit code and its output, or a
/// failure when it still runs after `limit`.
pub async fn run_to_exit(options: &AppOptions, limit: Duration) -> (Option<i32>, String) {
    let mut cmd = command(options);
    cmd.stderr(Stdio::piped());
    let child = cmd.spawn().expect("fleetbot serve starts");
    let id = child.id();
    let waited = tokio::task::spawn_blocking(move || child.wait_with_output());
    match tokio::time::timeout(limit, waited).await {
        Ok(Ok(Ok(out))) => (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        ),
        _ => {
            let _ = Command::new("kill")
                .args(["-KILL", &id.to_string()])
                .status();
            panic!("fleetbot serve was still running after {limit:?}");
        }
    }
}

impl App {
    pub async fn start(options: AppOptions) -> App {
        // reqwest is built without a default TLS provider; the binary installs ring likewise.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut child = command(&options).spawn().expect("fleetbot serve starts");
        let stderr = child.stderr.take().expect("stderr is piped");
        let logs = Arc::new(Mutex::new(Vec::new()));
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let sink = logs.clone();
        // Drains stderr for the server's life, so its logging never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut addr_tx = Some(addr_tx);
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Some(rest) = line.strip_prefix("fleetbot serve: listening on ")
                    && let Some(tx) = addr_tx.take()
                {
                    let _ = tx.send(rest.split_whitespace().next().unwrap_or("").to_string());
                }
                sink.lock().unwrap().push(line);
            }
        });
        let wait =
            tokio::task::spawn_blocking(move || addr_rx.recv_timeout(Duration::from_secs(60)));
        let addr = match wait.await {
            Ok(Ok(addr)) => addr,
            _ => panic!(
                "fleetbot serve did not start; its output:\n{}",
                logs.lock().unwrap().join("\n")
            ),
        };
        App {
            child,
            url: format!("http://{addr}"),
            options,
            logs,
            http: reqwest::Client::new(),
        }
    }

    /// Stops the server as an orchestrator does (SIGTERM) and waits for it to exit cleanly.
    pub async fn stop(mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = std::time::Instant::now() + Duration::from_secs(40);
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if std::time::Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(25)).await;
                }
                _ => break None,
            }
        };
        assert!(
            status.is_some_and(|s| s.success()),
            "fleetbot serve shut down cleanly ({status:?}); its output:\n{}",
            self.log_text()
        );
    }

    /// Stops the server and starts it again over the same store, with `workers`.
    pub async fn restart(self, workers: usize) -> App {
        let mut options = self.options.clone();
        options.workers = workers;
        self.stop().await;
        App::start(options).await
    }

    /// The server's process id (for CPU and memory readings).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Kills the server as a crash would (SIGKILL): running jobs keep their leases until they
    /// expire.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Posts a webhook delivery as it is, whatever the manifest subscribes to; `(status, body)`.
    pub async fn post(
        &self,
        event: &str,
        id: &str,
        body: &[u8],
        signature: Option<String>,
    ) -> (u16, String) {
        crate::fake_github::post_webhook(&self.http, &self.url, event, id, body, signature).await
    }

    /// Posts a correctly signed delivery, as GitHub delivers it to the App the manifest
    /// registers, and expects it accepted. An event GitHub would never send the App fails the
    /// test ([`App::post`] is the raw path, for what only an attacker or a misconfiguration
    /// sends).
    pub async fn deliver(&self, event: &str, id: &str, body: &[u8]) {
        crate::fake_github::manifest::assert_subscribed(event);
        let sig = fleetbot::github::sign(SECRET.as_bytes(), body);
        let (status, text) = self.post(event, id, body, Some(sig)).await;
        assert_eq!(
            (status, text.as_str()),
            (202, "accepted\n"),
            "delivery {id}"
        );
    }

    /// A GET on the server (`/healthz`, `/metrics`, …): `(status, body)`.
    pub async fn get(&self, path: &str) -> (u16, String) {
        let resp = self
            .http
            .get(format!("{}{path}", self.url))
            .send()
            .await
            .expect("the server answers");
        (
            resp.status().as_u16(),
            resp.text().await.unwrap_or_default(),
        )
    }

    /// Waits until the server holds no queued or running job: every delivery accepted before
    /// this call, and every job those queued (an apply, a verification), has run to its end.
    /// The barrier a "nothing more happens" check waits on, instead of a fixed sleep.
    pub async fn settled(&self) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            let (status, metrics) = self.get("/metrics").await;
            let count = |state: &str| jobs_in(&metrics, state);
            if status == 200 && count("queued") == Some(0) && count("running") == Some(0) {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the server never settled; /metrics:\n{metrics}"
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// The store's jobs in `state` (`queued`, `running`, `done`, `failed`), from `/metrics`.
    pub async fn jobs(&self, state: &str) -> u64 {
        let (status, metrics) = self.get("/metrics").await;
        assert_eq!(status, 200, "{metrics}");
        jobs_in(&metrics, state).unwrap_or_else(|| panic!("no {state} gauge in:\n{metrics}"))
    }

    /// The dashboard's base URL, as the server printed it (`None` when it serves none on a
    /// listener of its own).
    pub fn dashboard(&self) -> Option<String> {
        self.log_text()
            .lines()
            .find_map(|l| l.strip_prefix("fleetbot serve: dashboard on "))
            .map(|addr| format!("http://{}", addr.trim()))
    }

    /// A GET on the dashboard's listener: `(status, body)`.
    pub async fn dashboard_get(&self, path: &str) -> (u16, String) {
        let base = self
            .dashboard()
            .expect("the dashboard has a listener of its own");
        let response = self.http.get(format!("{base}{path}")).send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.text().await.unwrap_or_default())
    }

    pub fn log_text(&self) -> String {
        self.logs.lock().unwrap().join("\n")
    }
}

impl Drop for App {
    // A failing test must not leave a server behind.
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `fleetbot_queue_jobs{state="…"}` of a `/metrics` text.
fn jobs_in(metrics: &str, state: &str) -> Option<u64> {
    let prefix = format!("fleetbot_queue_jobs{{state=\"{state}\"}} ");
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|n| n.trim().parse::<u64>().ok())
}

/// Polls `probe` until it gives a value (every 25 ms, for up to 60 s).
pub async fn eventually<T>(what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(v) = probe() {
            return v;
        }
        assert!(tokio::time::Instant::now() < deadline, "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

impl App {
    /// Opens pull request `number` of [`crate::fake_github::REPO`] at `head` (`main` plus
    /// `changes`), delivers `opened`, and waits for its `fleet/preflight` to conclude.
    pub async fn open_reviewed(
        &self,
        gh: &crate::fake_github::FakeGitHub,
        number: u64,
        head: &str,
        changes: &[(&str, Option<&str>)],
    ) -> crate::fake_github::CheckRun {
        use crate::fake_github::{REPO, sha};
        {
            let mut w = gh.world();
            w.commit(REPO, &sha(1), head, changes);
            w.open_pr(REPO, number, "change", head);
        }
        let body = crate::fake_github::pr_delivery("opened", number, head, "change");
        self.deliver("pull_request", &format!("open-{number}-{head}"), &body)
            .await;
        eventually(&format!("the preflight of {head}"), || {
            gh.world()
                .runs_on(REPO, head)
                .into_iter()
                .find(|r| r.name == "fleet/preflight" && r.conclusion.is_some())
        })
        .await
    }
}
