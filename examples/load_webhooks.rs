//! Load check for `fleetbot serve`'s webhook intake: signed deliveries at a fixed rate on
//! loopback, for a bounded time, then the intake latency (p50/p99), the throughput and the
//! server's idle resident memory.
//!
//! ```sh
//! cargo build --release --bin fleetbot --example load_webhooks
//! target/release/examples/load_webhooks                       # 500/s for 10 s, SQLite
//! target/release/examples/load_webhooks --rate 1000 --seconds 5
//! target/release/examples/load_webhooks --store postgres://…  # e.g. under scripts/with-postgres.sh
//! ```
//!
//! By default it starts `target/release/fleetbot serve` itself on a free loopback port, with a
//! throwaway App key, a temporary SQLite store and a GitHub URL nothing listens on (the
//! deliveries are `pull_request` `labeled`, which the worker stores, decodes and acknowledges
//! without calling GitHub, so the measurement is intake and queue, not GitHub). With `--url`
//! and `--pid` it measures a server that is already running instead. It never sends anything
//! off the machine and stops by itself.
//!
//! Latency is measured from the moment each request was due, not from when it was sent, so a
//! stalled server shows up in the figures instead of slowing the sender down (no coordinated
//! omission). The sender shares the machine's cores with the server.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use serde_json::json;

#[derive(Parser, Debug)]
#[command(about = "Drive signed webhook deliveries at fleetbot serve on loopback")]
struct Args {
    /// Deliveries per second.
    #[arg(long, default_value_t = 500)]
    rate: u32,
    /// How long to send, in seconds (at most 120).
    #[arg(long, default_value_t = 10)]
    seconds: u32,
    /// Approximate size of each payload in bytes (GitHub's pull_request payloads are 20–30 KB).
    #[arg(long, default_value_t = 24_000)]
    payload_bytes: usize,
    /// The server binary to start.
    #[arg(long, default_value = "target/release/fleetbot")]
    server: PathBuf,
    /// FLEETBOT_STORE for the started server (default: a temporary SQLite file).
    #[arg(long)]
    store: Option<String>,
    /// Workers in the started server.
    #[arg(long, default_value_t = 2)]
    workers: usize,
    /// Measure a running server at this base URL (http://127.0.0.1:PORT) instead.
    #[arg(long, requires = "pid")]
    url: Option<String>,
    /// The running server's process id (for its memory).
    #[arg(long)]
    pid: Option<u32>,
    /// The running server's webhook secret.
    #[arg(long, default_value = "load-test-secret")]
    secret: String,
    /// The `X-GitHub-Event` sent. `ping` is verified and answered without touching the store,
    /// which gives the HTTP path's own share of the latency for comparison.
    #[arg(long, default_value = "pull_request")]
    event: String,
    /// Requests in flight at most; beyond it the sender waits (and the wait counts as latency).
    #[arg(long, default_value_t = 256)]
    max_in_flight: usize,
}

/// The server under test, stopped on drop.
struct Spawned {
    child: Child,
    _dir: tempfile::TempDir,
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

fn spawn_server(args: &Args) -> (Spawned, String, u32) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let key = dir.path().join("app-key.pem");
    let status = Command::new("openssl")
        .args(["genrsa", "-traditional", "-out"])
        .arg(&key)
        .arg("2048")
        .stderr(Stdio::null())
        .status()
        .expect("the openssl CLI makes the throwaway App key");
    assert!(status.success());
    let port = free_port();
    let store = args
        .store
        .clone()
        .unwrap_or_else(|| format!("sqlite://{}", dir.path().join("load.sqlite").display()));
    let child = Command::new(&args.server)
        .arg("serve")
        .env("FLEETBOT_LISTEN", format!("127.0.0.1:{port}"))
        .env("FLEETBOT_WEBHOOK_SECRET", &args.secret)
        .env("FLEETBOT_APP_ID", "1")
        .env("FLEETBOT_APP_PRIVATE_KEY_PATH", &key)
        // Nothing listens there; the deliveries sent need no GitHub call.
        .env("FLEETBOT_GITHUB_API_URL", "http://127.0.0.1:9")
        .env("FLEETBOT_STORE", store)
        .env("FLEETBOT_WORKERS", args.workers.to_string())
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot start {} ({e}); build it with `cargo build --release --bin fleetbot`",
                args.server.display()
            )
        });
    let pid = child.id();
    (
        Spawned { child, _dir: dir },
        format!("http://127.0.0.1:{port}"),
        pid,
    )
}

/// `VmRSS` and `VmHWM` of `pid`, in KiB.
fn memory_kib(pid: u32) -> (u64, u64) {
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

/// A `pull_request` `labeled` delivery of about `size` bytes.
fn payload(number: u64, size: usize) -> Vec<u8> {
    let full = "octo-org/fleet-config";
    let mut p = json!({
        "action": "labeled",
        "number": number,
        "label": {"id": 1, "name": "fleet", "color": "0e8a16"},
        "pull_request": {
            "number": number,
            "state": "open",
            "draft": false,
            "merged": false,
            "merge_commit_sha": null,
            "title": format!("Grow the GPU pool ({number})"),
            "body": "",
            "head": {"sha": format!("{number:040x}"), "ref": format!("grow-{number}"), "repo": {"full_name": full}},
            "base": {"sha": format!("{:040x}", 1), "ref": "main", "repo": {"full_name": full}},
        },
        "repository": {"full_name": full, "name": "fleet-config", "owner": {"login": "octo-org"}},
        "installation": {"id": 77},
        "sender": {"login": "octocat", "type": "User"},
    });
    let current = serde_json::to_vec(&p).unwrap().len();
    // Padding in a field the bot does not read, like the many GitHub sends.
    p["pull_request"]["body"] = json!("x".repeat(size.saturating_sub(current)));
    serde_json::to_vec(&p).unwrap()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Jobs the server has finished, from `/metrics`.
async fn jobs_done(http: &reqwest::Client, url: &str) -> Option<u64> {
    let text = http
        .get(format!("{url}/metrics"))
        .send()
        .await
        .ok()?
        .text()
        .await
        .ok()?;
    Some(
        text.lines()
            .filter(|l| l.starts_with("fleetbot_job_duration_seconds_count"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum(),
    )
}

/// CPU seconds `pid` has used (user + system), from `/proc/PID/stat`.
fn cpu_seconds(pid: u32) -> f64 {
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
    // tick is 100 Hz on Linux.
    (ticks(11) + ticks(12)) / 100.0
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args = Args::parse();
    assert!(
        args.seconds <= 120 && args.rate > 0 && args.rate <= 20_000,
        "bounded runs only: --seconds ≤ 120, --rate ≤ 20000"
    );
    let (_spawned, url, pid) = match (&args.url, args.pid) {
        (Some(url), Some(pid)) => {
            assert!(
                url.starts_with("http://127.0.0.1:") || url.starts_with("http://localhost:"),
                "loopback only"
            );
            (None, url.clone(), pid)
        }
        _ => {
            let (s, url, pid) = spawn_server(&args);
            (Some(s), url, pid)
        }
    };
    if _spawned.is_some() {
        // Interrupted (^C, `timeout`), the started server must not be left running.
        tokio::spawn(async move {
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).unwrap();
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            let _ = Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status();
            std::process::exit(130);
        });
    }
    // reqwest is built without a default TLS provider (fleetbot picks ring); plain HTTP on
    // loopback still needs one installed.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(args.max_in_flight)
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let ready = Instant::now();
    loop {
        if let Ok(r) = http.get(format!("{url}/readyz")).send().await
            && r.status().is_success()
        {
            break;
        }
        assert!(
            ready.elapsed() < Duration::from_secs(30),
            "the server did not become ready"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let done_before = jobs_done(&http, &url).await.unwrap_or(0);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (idle_before, _) = memory_kib(pid);

    // The payloads are made and signed beforehand, so the sender spends its time sending.
    let total = (args.rate as u64) * (args.seconds as u64);
    let run = uuid::Uuid::new_v4().simple().to_string();
    let bodies: Vec<(String, bytes::Bytes, String)> = (0..total)
        .map(|i| {
            let body = payload(1 + i % 50, args.payload_bytes);
            let sig = fleetbot::github::sign(args.secret.as_bytes(), &body);
            let id = format!("{}-{:012}", &run[..23], i);
            (id, bytes::Bytes::from(body), sig)
        })
        .collect();
    let permits = Arc::new(tokio::sync::Semaphore::new(args.max_in_flight));
    let cpu_before = cpu_seconds(pid);
    let interval = Duration::from_secs_f64(1.0 / args.rate as f64);
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(total as usize);
    for (i, (id, body, sig)) in bodies.into_iter().enumerate() {
        let due = started + interval.mul_f64(i as f64);
        tokio::time::sleep_until(due.into()).await;
        let permit = permits.clone().acquire_owned().await.unwrap();
        let (http, url, event) = (http.clone(), url.clone(), args.event.clone());
        tasks.push(tokio::spawn(async move {
            let result = http
                .post(format!("{url}/webhook"))
                .header("x-github-event", event)
                .header("x-github-delivery", id)
                .header("x-hub-signature-256", sig)
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await;
            let latency = due.elapsed();
            drop(permit);
            match result {
                Ok(r) => (r.status().as_u16(), latency),
                Err(_) => (0, latency),
            }
        }));
    }
    let mut latencies = Vec::with_capacity(tasks.len());
    let mut statuses = std::collections::BTreeMap::<u16, u64>::new();
    for t in tasks {
        let (status, latency) = t.await.unwrap();
        *statuses.entry(status).or_default() += 1;
        latencies.push(latency);
    }
    let sending = started.elapsed();
    let server_cpu = cpu_seconds(pid) - cpu_before;
    latencies.sort();
    let accepted = statuses.get(&202).copied().unwrap_or(0);

    // Let the workers drain the queue, then let the server sit idle. Without workers of its
    // own (`--workers 0`) there is nothing to wait for.
    let drain = Instant::now();
    let mut drained = (args.workers == 0 && args.url.is_none()) || args.event == "ping";
    while !drained && drain.elapsed() < Duration::from_secs(120) {
        if jobs_done(&http, &url).await.unwrap_or(0) >= done_before + accepted {
            drained = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let drain_took = drain.elapsed();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (idle_after, peak) = memory_kib(pid);

    println!("fleetbot intake load: {url}, pid {pid}");
    println!(
        "  sent        {total} deliveries of ~{} bytes at {}/s for {} s",
        args.payload_bytes, args.rate, args.seconds
    );
    println!("  answers     {statuses:?} (202 = stored before the answer)");
    println!(
        "  throughput  {:.0} deliveries/s answered ({:.2} s)",
        total as f64 / sending.as_secs_f64(),
        sending.as_secs_f64()
    );
    println!(
        "  intake      p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        percentile(&latencies, 50.0).as_secs_f64() * 1e3,
        percentile(&latencies, 90.0).as_secs_f64() * 1e3,
        percentile(&latencies, 99.0).as_secs_f64() * 1e3,
        latencies.last().copied().unwrap_or_default().as_secs_f64() * 1e3
    );
    println!(
        "  server CPU  {:.2} s while sending ({:.0}% of one core)",
        server_cpu,
        100.0 * server_cpu / sending.as_secs_f64()
    );
    println!(
        "  queue       {} after the last answer{}",
        if drained { "drained" } else { "NOT drained" },
        if drained {
            format!(" in {:.2} s", drain_took.as_secs_f64())
        } else {
            String::new()
        }
    );
    println!(
        "  memory      idle RSS {:.1} MiB before, {:.1} MiB after; peak {:.1} MiB",
        idle_before as f64 / 1024.0,
        idle_after as f64 / 1024.0,
        peak as f64 / 1024.0
    );
    // The started server is stopped (on drop) before the exit code is returned.
    drop(_spawned);
    if total - accepted > 0 || !drained {
        std::process::ExitCode::FAILURE
    } else {
        std::process::ExitCode::SUCCESS
    }
}
