//! Load check for a GitHub App's webhook intake: signed deliveries at a fixed rate on
//! loopback, for a bounded time, against `fleetbot serve` (started here) or any running server
//! (`--url`, `--pid`: e.g. the Probot app `scripts/load-side-by-side.sh` runs beside it), then
//! the intake latency (p50/p99), errors, throughput, the server's CPU per delivery, its peak
//! memory and its idle CPU once the load is over.
//!
//! ```sh
//! cargo build --release --bin fleetbot --example load_webhooks
//! target/release/examples/load_webhooks                                   # 500/s for 10 s
//! target/release/examples/load_webhooks --event pull_request-busy --rate 1000 --seconds 5
//! target/release/examples/load_webhooks --event pull_request-busy --prefill-backoff 10000
//! target/release/examples/load_webhooks --store postgres://…  # e.g. under scripts/with-postgres.sh
//! target/release/examples/load_webhooks --url http://127.0.0.1:3000 --pid 1234 \
//!     --webhook-path /api/github/webhooks --ready-path /ping              # another server
//! ```
//!
//! Started here, `fleetbot serve` gets a free loopback port, a throwaway App key, a temporary
//! SQLite store and a stand-in GitHub that mints tokens and answers everything else 404, so
//! each job makes its first call and ends (`target::GitHub`); the measurement is intake and
//! queue, not GitHub. `--prefill-backoff N` first queues N deliveries (one `pull_request`,
//! then `/plan` comments) for the busy pull request with GitHub refusing connections, so the
//! first job backs off and the rest wait behind it; the measured deliveries then join that queue. Nothing leaves the machine,
//! and the run stops by itself.
//!
//! Latency is measured from the moment each request was due, not from when it was sent, so a
//! stalled server shows up in the figures instead of slowing the sender down (no coordinated
//! omission). A request counts as an error when it gets no 2xx (the client gives up after
//! 30 s); one answered after more than 10 s is counted as a GitHub timeout too, since GitHub
//! gives up on a delivery then and does not redeliver. The sender shares the machine's cores
//! with the server. With `--tsv`, a last line `result<TAB>…` carries the figures for scripts
//! (fields named in [`TSV_FIELDS`]).

// serde_json::json! recurses once per token tree; GitHub-sized objects need more than 128.
#![recursion_limit = "512"]

mod payloads;
mod send;
mod target;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Parser;

use send::{Scenario, Shape};
use target::{GitHub, Queue, ServeOptions};

/// GitHub waits this long for an answer, then records the delivery as failed.
const GITHUB_TIMEOUT: Duration = Duration::from_secs(10);
/// The client's own limit: a request still unanswered then is an error.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(30);

/// The fields of the `--tsv` line, after `result`.
const TSV_FIELDS: &str = "name scenario rate sent ok errors github_timeouts p50_ms p90_ms p99_ms max_ms \
     throughput cpu_s cpu_ms_per_delivery peak_rss_mib idle_cpu_pct settle_s queued_end prefilled";

#[derive(Parser, Debug)]
#[command(
    about = "Drive signed webhook deliveries at fleetbot serve (or another server) on loopback"
)]
struct Args {
    /// Deliveries per second.
    #[arg(long, default_value_t = 500)]
    rate: u32,
    /// How long to send, in seconds (at most 120).
    #[arg(long, default_value_t = 10)]
    seconds: u32,
    /// What is sent.
    #[arg(long, value_enum, default_value_t = Scenario::PullRequestMany)]
    event: Scenario,
    /// The `pull_request` action (`synchronize`: a push to the pull request, which asks for a
    /// preflight; `labeled` asks for nothing).
    #[arg(long, default_value = "synchronize")]
    pr_action: String,
    /// Pull requests the comments and re-runs are spread over.
    #[arg(long, default_value_t = 50)]
    spread: u64,
    /// Approximate size of each payload in bytes (default: GitHub's examples' size for the
    /// event: pull_request 24 KB, issue_comment 14 KB, check_run 10 KB).
    #[arg(long)]
    payload_bytes: Option<usize>,
    /// Before measuring, queue this many `pull_request` deliveries for the busy pull request
    /// behind its first job, which backs off (GitHub refused), and wait until they are queued.
    #[arg(long, default_value_t = 0)]
    prefill_backoff: u64,
    /// Deliveries of the measured kind sent (as fast as they are answered, 8 at a time) and
    /// let settle before measuring, so a freshly started server is measured warm: a JIT (Node)
    /// or a cold cache would otherwise weigh on short runs. Not sent with `--prefill-backoff`,
    /// whose deliveries warm the server up instead.
    #[arg(long, default_value_t = 1000)]
    warmup: u64,
    /// How long the prefill may take, in seconds; what is queued by then is what is measured.
    #[arg(long, default_value_t = 600)]
    prefill_timeout: u64,
    /// Seconds of idle CPU measured once the load is over (and the queue has settled).
    #[arg(long, default_value_t = 5)]
    idle_seconds: u64,
    /// How long to wait, at most, for the queue to settle after the last answer, in seconds.
    #[arg(long, default_value_t = 120)]
    settle_timeout: u64,
    /// The server binary to start.
    #[arg(long, default_value = "target/release/fleetbot")]
    server: PathBuf,
    /// FLEETBOT_STORE for the started server (default: a temporary SQLite file).
    #[arg(long)]
    store: Option<String>,
    /// Workers in the started server.
    #[arg(long, default_value_t = 2)]
    workers: usize,
    /// What the started server's GitHub URL leads to (default: `stub`; `refused` with
    /// `--prefill-backoff`).
    #[arg(long, value_enum)]
    github: Option<GitHub>,
    /// Measure a running server at this base URL (http://127.0.0.1:PORT) instead.
    #[arg(long, requires = "pid")]
    url: Option<String>,
    /// The running server's process id (for its CPU and memory).
    #[arg(long)]
    pid: Option<u32>,
    /// The webhook secret deliveries are signed with (the started server gets it).
    #[arg(
        long,
        env = "LOAD_WEBHOOK_SECRET",
        default_value = "load-test-secret",
        hide_env_values = true
    )]
    secret: String,
    /// Where deliveries are posted (Probot: /api/github/webhooks).
    #[arg(long, default_value = "/webhook")]
    webhook_path: String,
    /// A path answering 2xx once the server is ready (Probot: /ping).
    #[arg(long, default_value = "/readyz")]
    ready_path: String,
    /// The target's name in the report.
    #[arg(long)]
    name: Option<String>,
    /// Requests in flight at most; beyond it the sender waits (and the wait counts as latency).
    #[arg(long, default_value_t = 256)]
    max_in_flight: usize,
    /// Print a last `result` line of tab-separated figures for scripts.
    #[arg(long)]
    tsv: bool,
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

async fn wait_ready(http: &reqwest::Client, url: &str, path: &str) {
    let ready = Instant::now();
    loop {
        if let Ok(r) = http.get(format!("{url}{path}")).send().await
            && r.status().is_success()
        {
            return;
        }
        assert!(
            ready.elapsed() < Duration::from_secs(60),
            "the server did not become ready ({url}{path})"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Queues `count` deliveries for the busy pull request behind its first, backing-off job.
/// Returns the jobs queued once that is so (or the prefill's time is up).
async fn prefill(http: &reqwest::Client, url: &str, endpoint: &str, args: &Args) -> u64 {
    let size = args
        .payload_bytes
        .unwrap_or(payloads::default_size("pull_request"));
    let opened = Shape {
        scenario: Scenario::PullRequestBusy,
        pr_action: "opened".into(),
        size,
        spread: 1,
        offset: 0,
    };
    // Comments with a command, not pushes: a newer head supersedes a queued preflight, so
    // pushes alone would leave one job queued, while every command is kept, in order.
    let pushes = Shape {
        scenario: Scenario::IssueCommentPlan,
        size: payloads::default_size("issue_comment"),
        spread: 1,
        ..opened.clone()
    };
    let deliveries = send::prepare(&pushes, args.prefill_backoff, &args.secret, Some(&opened));
    let started = Instant::now();
    let budget = Duration::from_secs(args.prefill_timeout);
    let (ok, sent) = send::closed_loop(http, endpoint, deliveries, 64, budget).await;
    println!(
        "  prefill     {ok} of {sent} deliveries accepted in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    // Queued means stored and not running; the first job must have failed once (a retry), so
    // it is in backoff and the rest wait behind it.
    let mut last = None;
    while started.elapsed() < budget + Duration::from_secs(60) {
        let Some(q) = target::queue(http, url).await else {
            return 0;
        };
        let ready = q.running == 0.0 && q.retries >= 1.0 && q.queued >= ok as f64;
        last = Some(q);
        if ready {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let q = last.unwrap_or_default();
    println!(
        "  prefill     {} queued, {} attempts backed off, after {:.1} s",
        q.queued,
        q.retries,
        started.elapsed().as_secs_f64()
    );
    q.queued as u64
}

/// Waits until nothing runs and the queue is empty or stopped changing (jobs held behind one
/// in backoff); returns how long it took and the queue then.
async fn settle(http: &reqwest::Client, url: &str, limit: Duration) -> (Duration, Option<Queue>) {
    let started = Instant::now();
    let mut previous: Option<Queue> = None;
    let mut still = 0;
    while started.elapsed() < limit {
        let Some(q) = target::queue(http, url).await else {
            return (started.elapsed(), None);
        };
        let unchanged = previous
            .as_ref()
            .is_some_and(|p| p.queued == q.queued && p.jobs_run == q.jobs_run && q.running == 0.0);
        still = if unchanged { still + 1 } else { 0 };
        if (q.running == 0.0 && q.queued == 0.0) || still >= 4 {
            return (started.elapsed(), Some(q));
        }
        previous = Some(q);
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    (started.elapsed(), previous)
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args = Args::parse();
    assert!(
        args.seconds <= 120 && args.rate > 0 && args.rate <= 20_000,
        "bounded runs only: --seconds ≤ 120, --rate ≤ 20000"
    );
    // reqwest is built without a default TLS provider (fleetbot picks ring); plain HTTP on
    // loopback still needs one installed.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(args.max_in_flight)
        .timeout(CLIENT_TIMEOUT)
        .build()
        .expect("an HTTP client");

    let (spawned, url, pid) = match (&args.url, args.pid) {
        (Some(url), Some(pid)) => {
            assert!(
                url.starts_with("http://127.0.0.1:") || url.starts_with("http://localhost:"),
                "loopback only"
            );
            (None, url.trim_end_matches('/').to_string(), pid)
        }
        _ => {
            let github = args.github.unwrap_or(if args.prefill_backoff > 0 {
                GitHub::Refused
            } else {
                GitHub::Stub
            });
            if args.prefill_backoff > 0 && github == GitHub::Stub {
                eprintln!(
                    "--prefill-backoff needs --github refused: a 404 ends a job, it never backs off"
                );
                return std::process::ExitCode::from(2);
            }
            let github_url = match github {
                GitHub::Stub => target::start_github_stub().await,
                GitHub::Refused => target::refused_url(),
            };
            let (s, url) = target::spawn_fleetbot(&ServeOptions {
                server: args.server.clone(),
                store: args.store.clone(),
                workers: args.workers,
                secret: args.secret.clone(),
                github_url,
            });
            let pid = s.pid();
            (Some(s), url, pid)
        }
    };
    if spawned.is_some() {
        // Interrupted (^C, `timeout`), the started server must not be left running.
        tokio::spawn(async move {
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                    .expect("a SIGTERM handler");
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            let _ = std::process::Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status();
            std::process::exit(130);
        });
    }
    let name = args.name.clone().unwrap_or_else(|| {
        if spawned.is_some() {
            "fleetbot"
        } else {
            "server"
        }
        .to_string()
    });
    let endpoint = format!("{url}{}", args.webhook_path);
    wait_ready(&http, &url, &args.ready_path).await;
    println!(
        "{name} intake load: {} at {}/s for {} s, {endpoint}, pid {pid}",
        args.event.name(),
        args.rate,
        args.seconds
    );

    let size = args
        .payload_bytes
        .unwrap_or(payloads::default_size(args.event.event()));
    let shape = |offset| Shape {
        scenario: args.event,
        pr_action: args.pr_action.clone(),
        size,
        spread: args.spread,
        offset,
    };
    let prefilled = if args.prefill_backoff > 0 {
        prefill(&http, &url, &endpoint, &args).await
    } else {
        if args.warmup > 0 {
            // Heads and numbers of their own, far from the measured ones.
            let warm = send::prepare(&shape(1 << 40), args.warmup, &args.secret, None);
            let started = Instant::now();
            let (ok, sent) =
                send::closed_loop(&http, &endpoint, warm, 8, Duration::from_secs(120)).await;
            let (settled, _) = settle(&http, &url, Duration::from_secs(args.settle_timeout)).await;
            println!(
                "  warm-up     {ok} of {sent} deliveries accepted in {:.1} s, settled {:.1} s later",
                (started.elapsed() - settled).as_secs_f64(),
                settled.as_secs_f64()
            );
        }
        0
    };
    // A moment for whatever the start (or the prefill) set going to finish.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (idle_before, _) = target::memory_kib(pid);

    // The payloads are made and signed beforehand, so the sender spends its time sending;
    // past the prefill's heads, so every measured push is a new head.
    let total = u64::from(args.rate) * u64::from(args.seconds);
    let deliveries = send::prepare(&shape(args.prefill_backoff), total, &args.secret, None);
    let cpu_before = target::cpu_seconds(pid);
    let (samples, sending) =
        send::open_loop(&http, &endpoint, deliveries, args.rate, args.max_in_flight).await;
    let server_cpu = target::cpu_seconds(pid) - cpu_before;

    let mut statuses = std::collections::BTreeMap::<u16, u64>::new();
    for s in &samples {
        *statuses.entry(s.status).or_default() += 1;
    }
    let ok = samples.iter().filter(|s| s.ok()).count() as u64;
    let errors = total - ok;
    let github_timeouts = samples
        .iter()
        .filter(|s| s.latency > GITHUB_TIMEOUT)
        .count() as u64;
    let mut latencies: Vec<Duration> = samples.iter().map(|s| s.latency).collect();
    latencies.sort();

    // Let the workers finish what they can, then measure the server sitting idle.
    let (settle_took, queue_end) =
        settle(&http, &url, Duration::from_secs(args.settle_timeout)).await;
    let idle_cpu_start = target::cpu_seconds(pid);
    tokio::time::sleep(Duration::from_secs(args.idle_seconds)).await;
    let idle_cpu = (target::cpu_seconds(pid) - idle_cpu_start) / args.idle_seconds.max(1) as f64;
    let (idle_after, peak) = target::memory_kib(pid);

    let (p50, p90, p99) = (
        percentile(&latencies, 50.0),
        percentile(&latencies, 90.0),
        percentile(&latencies, 99.0),
    );
    let max = latencies.last().copied().unwrap_or_default();
    let throughput = ok as f64 / sending.as_secs_f64();
    let cpu_per_delivery_ms = 1e3 * server_cpu / total.max(1) as f64;
    println!(
        "  sent        {total} {} deliveries of ~{size} bytes",
        args.event.event()
    );
    println!(
        "  answers     {statuses:?} (0 = no answer within {} s)",
        CLIENT_TIMEOUT.as_secs()
    );
    println!(
        "  errors      {errors} (not 2xx); {github_timeouts} answered after more than {} s (GitHub gives up)",
        GITHUB_TIMEOUT.as_secs()
    );
    println!(
        "  throughput  {throughput:.0} deliveries/s answered 2xx ({:.2} s from the first due to the last answer)",
        sending.as_secs_f64()
    );
    println!(
        "  intake      p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        ms(p50),
        ms(p90),
        ms(p99),
        ms(max)
    );
    println!(
        "  server CPU  {server_cpu:.2} s while sending ({:.0}% of one core), {cpu_per_delivery_ms:.3} ms a delivery",
        100.0 * server_cpu / sending.as_secs_f64()
    );
    match &queue_end {
        Some(q) => {
            println!(
                "  queue       settled {:.2} s after the last answer: {} queued, {} attempts {:?}",
                settle_took.as_secs_f64(),
                q.queued,
                q.jobs_run,
                q.outcomes
            );
            println!("  GitHub      calls {:?}", q.github_calls);
        }
        None => println!("  queue       (the server shows none)"),
    }
    println!(
        "  idle        {:.1}% of one core over the {} s after that",
        100.0 * idle_cpu,
        args.idle_seconds
    );
    println!(
        "  memory      RSS {:.1} MiB before, {:.1} MiB after; peak {:.1} MiB",
        idle_before as f64 / 1024.0,
        idle_after as f64 / 1024.0,
        peak as f64 / 1024.0
    );
    if args.tsv {
        let fields = [
            name.clone(),
            args.event.name().to_string(),
            args.rate.to_string(),
            total.to_string(),
            ok.to_string(),
            errors.to_string(),
            github_timeouts.to_string(),
            format!("{:.2}", ms(p50)),
            format!("{:.2}", ms(p90)),
            format!("{:.2}", ms(p99)),
            format!("{:.2}", ms(max)),
            format!("{throughput:.0}"),
            format!("{server_cpu:.2}"),
            format!("{cpu_per_delivery_ms:.3}"),
            format!("{:.1}", peak as f64 / 1024.0),
            format!("{:.1}", 100.0 * idle_cpu),
            format!("{:.2}", settle_took.as_secs_f64()),
            queue_end
                .as_ref()
                .map_or("-".into(), |q| q.queued.to_string()),
            prefilled.to_string(),
        ];
        debug_assert_eq!(fields.len(), TSV_FIELDS.split_whitespace().count());
        println!("result\t{}", fields.join("\t"));
    }
    // The started server is stopped (on drop) before the exit code is returned.
    drop(spawned);
    if errors > 0 {
        std::process::ExitCode::FAILURE
    } else {
        std::process::ExitCode::SUCCESS
    }
}
