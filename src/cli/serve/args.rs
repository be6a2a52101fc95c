//! `fleetbot serve`'s command line: every setting, from a flag or its environment variable,
//! with secrets held as [`SecretArg`] so that neither `--help` nor `Debug` shows them.

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::str::FromStr;

use clap::Args;

use crate::github::DEFAULT_API_URL;

/// A secret command-line value: parsed as given, shown as `<redacted>`.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretArg(String);

impl SecretArg {
    /// The value; call only where it is used.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl FromStr for SecretArg {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(SecretArg(s.to_string()))
    }
}

impl fmt::Debug for SecretArg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl fmt::Display for SecretArg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address and port to listen on.
    #[arg(
        long,
        env = "FLEETBOT_LISTEN",
        default_value = "127.0.0.1:3000",
        value_name = "ADDR"
    )]
    pub listen: SocketAddr,
    /// Webhook secret(s) for X-Hub-Signature-256, comma-separated: during a rotation give the
    /// new and the old one. Required. Prefer the environment variable to the flag.
    #[arg(
        long,
        env = "FLEETBOT_WEBHOOK_SECRET",
        hide_env_values = true,
        value_name = "SECRET[,SECRET]"
    )]
    pub webhook_secret: Option<SecretArg>,
    /// The GitHub App's ID (numeric) or client ID. Required, with the private key.
    #[arg(long, env = "FLEETBOT_APP_ID", value_name = "ID")]
    pub app_id: Option<String>,
    /// Path of the GitHub App's private key (PEM, RSA). Required, with the App ID.
    #[arg(long, env = "FLEETBOT_APP_PRIVATE_KEY_PATH", value_name = "PATH")]
    pub app_private_key_path: Option<PathBuf>,
    /// GitHub REST API base URL; for GitHub Enterprise Server use https://HOST/api/v3.
    #[arg(long, env = "FLEETBOT_GITHUB_API_URL", default_value = DEFAULT_API_URL, value_name = "URL")]
    pub github_api_url: String,
    /// Where deliveries, jobs and the inventory are kept: sqlite://PATH (one replica; default
    /// sqlite://DATA_DIR/fleetbot/fleetbot.sqlite, e.g. ~/.local/share/fleetbot/fleetbot.sqlite,
    /// or the CLI's inventory file on the embedded simulator or when FLEETBOT_INVENTORY is
    /// set) or postgres://USER:PASSWORD@HOST/DB (several replicas share it). May hold a
    /// password, so its value is never shown or logged.
    #[arg(
        long,
        env = "FLEETBOT_STORE",
        hide_env_values = true,
        value_name = "URL"
    )]
    pub store: Option<SecretArg>,
    /// Workers, each running one job at a time. Jobs of one pull request run one at a time
    /// whatever the number; more workers run more pull requests at once.
    #[arg(long, env = "FLEETBOT_WORKERS", default_value_t = 2, value_name = "N")]
    pub workers: usize,
    /// Where jobs run: `process` (each worker is a job process of its own, with the memory
    /// and time budgets below, so that whatever a job does intake keeps answering) or `none`
    /// (the workers run inside the server; a job that exhausts memory takes it down).
    #[arg(
        long,
        env = "FLEETBOT_JOB_ISOLATION",
        default_value = "process",
        value_name = "process|none"
    )]
    pub job_isolation: String,
    /// The heap a job process may use, in MiB, its own few MiB included; an allocation past
    /// it ends the process, and its job is failed with that reason (0: no budget).
    #[arg(
        long,
        env = "FLEETBOT_JOB_MEMORY_MIB",
        default_value_t = 1024,
        value_name = "MIB"
    )]
    pub job_memory_mib: u64,
    /// Seconds a webhook job or a reconcile pass may run; past it, it is ended and failed,
    /// not run again.
    #[arg(
        long,
        env = "FLEETBOT_JOB_TIMEOUT_SECS",
        default_value_t = 3600,
        value_name = "SECS"
    )]
    pub job_timeout_secs: u64,
    /// Seconds an apply may run (creating a large fleet takes hours); past it, as above.
    #[arg(
        long,
        env = "FLEETBOT_APPLY_TIMEOUT_SECS",
        default_value_t = 21600,
        value_name = "SECS"
    )]
    pub apply_timeout_secs: u64,
    /// Days delivery ids are remembered (a redelivery within them is not run again) and
    /// finished jobs kept. At least 3: GitHub redelivers for up to 3 days.
    #[arg(
        long,
        env = "FLEETBOT_RETENTION_DAYS",
        default_value_t = 7,
        value_name = "DAYS"
    )]
    pub retention_days: u64,
    /// The cloud each changed spec is planned against, read-only: `auto` (Nebius when
    /// credentials are configured — NEBIUS_IAM_TOKEN or a service-account profile — else
    /// none), `nebius`, `simulator` (the embedded one, for trials), or `none` (static plans;
    /// the quota budget is then not checked).
    #[arg(
        long,
        env = "FLEETBOT_CLOUD",
        default_value = "auto",
        value_name = "CLOUD"
    )]
    pub cloud: String,
    /// The tenant whose quota allowances apply to specs that name no `tenant_id`. Private:
    /// never shown or logged.
    #[arg(
        long,
        env = "FLEETBOT_TENANT_ID",
        hide_env_values = true,
        value_name = "ID"
    )]
    pub tenant_id: Option<SecretArg>,
    /// Seconds a fleet's apply lock lasts without renewal: a server that dies while applying
    /// holds its fleets this long at most (a running apply renews it every third).
    #[arg(
        long,
        env = "FLEETBOT_APPLY_LEASE_SECS",
        default_value_t = 120,
        value_name = "SECS"
    )]
    pub apply_lease_secs: u64,
    /// Seconds a worker's claim on a job lasts without renewal: a job whose server died is
    /// taken over by another worker (or this server after a restart) after this.
    #[arg(
        long,
        env = "FLEETBOT_JOB_LEASE_SECS",
        default_value_t = 300,
        value_name = "SECS"
    )]
    pub job_lease_secs: u64,
    /// Connections the kernel may hold waiting to be accepted (the listen backlog), for
    /// bursts of deliveries; the kernel caps it at net.core.somaxconn.
    #[arg(
        long,
        env = "FLEETBOT_LISTEN_BACKLOG",
        default_value_t = 1024,
        value_name = "N"
    )]
    pub listen_backlog: u32,
    /// Open connections at most; more are closed at once.
    #[arg(
        long,
        env = "FLEETBOT_MAX_CONNECTIONS",
        default_value_t = 4096,
        value_name = "N"
    )]
    pub max_connections: usize,
    /// Seconds a client has to send a request's headers (also how long an idle connection
    /// stays open).
    #[arg(
        long,
        env = "FLEETBOT_HEADER_TIMEOUT_SECS",
        default_value_t = 10,
        value_name = "SECS"
    )]
    pub header_timeout_secs: u64,
    /// Seconds a client has to send a webhook body.
    #[arg(
        long,
        env = "FLEETBOT_BODY_TIMEOUT_SECS",
        default_value_t = 30,
        value_name = "SECS"
    )]
    pub body_timeout_secs: u64,
    /// Unverified webhook bodies read at once, all peers together; more wait 5 s, then get
    /// 503.
    #[arg(
        long,
        env = "FLEETBOT_MAX_BODY_READERS",
        default_value_t = 256,
        value_name = "N"
    )]
    pub max_body_readers: usize,
    /// Unverified webhook bodies of one peer address read at once. Past it, the peer's
    /// slowest body read for 50 ms or more is dropped to make room; with none, a body waits
    /// 2 s, then gets 429. 0: no per-peer bound.
    #[arg(
        long,
        env = "FLEETBOT_MAX_BODIES_PER_PEER",
        default_value_t = 8,
        value_name = "N"
    )]
    pub max_bodies_per_peer: usize,
    /// Proxies (CIDR ranges and addresses, comma-separated) whose `Forwarded` or
    /// `X-Forwarded-For` header names the peer: the rightmost address in it that is not a
    /// trusted proxy. Empty: the TCP peer is the peer.
    #[arg(
        long,
        env = "FLEETBOT_TRUSTED_PROXIES",
        default_value = "",
        value_name = "RANGES"
    )]
    pub trusted_proxies: String,
    /// Bytes all unverified webhook bodies may hold together beyond each one's first 64 KiB;
    /// a body that needs more gets 503. At least 26214400 (GitHub's largest delivery).
    #[arg(
        long,
        env = "FLEETBOT_MAX_UNVERIFIED_BYTES",
        default_value_t = 64 << 20,
        value_name = "BYTES"
    )]
    pub max_unverified_bytes: usize,
    /// Bytes a second a webhook body must average once its first 2 seconds are over; a
    /// slower one gets 408. 0: no floor.
    #[arg(
        long,
        env = "FLEETBOT_MIN_BODY_RATE",
        default_value_t = 64 * 1024,
        value_name = "BYTES_PER_SEC"
    )]
    pub min_body_rate: u64,
    /// Peers webhooks are taken from: `github` (the `hooks` ranges of GitHub's GET /meta,
    /// read at start and hourly), CIDR ranges, or both, comma-separated. Off when empty. The
    /// peer is the TCP peer: behind a proxy, filter at the proxy instead.
    #[arg(
        long,
        env = "FLEETBOT_WEBHOOK_SOURCE_RANGES",
        default_value = "",
        value_name = "github|CIDR[,…]"
    )]
    pub webhook_source_ranges: String,
    /// Where the dashboard (no login) is served: ADDR:PORT for a listener of its own (by
    /// default on the loopback address only), `off`, or `same` (beside the webhook, where
    /// whoever reaches the webhook reaches it too).
    #[arg(
        long,
        env = "FLEETBOT_DASHBOARD",
        default_value = "127.0.0.1:3001",
        value_name = "ADDR:PORT|off|same"
    )]
    pub dashboard: String,
    /// Seconds to keep trying to reach a PostgreSQL store at start (each attempt is logged)
    /// before giving up with exit status 1.
    #[arg(
        long,
        env = "FLEETBOT_STORE_CONNECT_SECS",
        default_value_t = 60,
        value_name = "SECS"
    )]
    pub store_connect_secs: u64,
    /// Changed specs read per pull request; more fail `fleet/preflight` as not read.
    #[arg(
        long,
        env = "FLEETBOT_MAX_SPEC_FILES",
        default_value_t = 100,
        value_name = "N"
    )]
    pub max_spec_files: usize,
    /// Bytes read of one changed spec (at most the spec reader's 4 MiB); a larger one fails
    /// `fleet/preflight` unread, without being downloaded.
    #[arg(
        long,
        env = "FLEETBOT_MAX_SPEC_BYTES",
        default_value_t = crate::github::client::MAX_CONTENT_BYTES,
        value_name = "BYTES"
    )]
    pub max_spec_bytes: usize,
    /// Other changed files scanned per pull request; more fail `fleet/privacy` as unread.
    #[arg(
        long,
        env = "FLEETBOT_MAX_SCANNED_FILES",
        default_value_t = 300,
        value_name = "N"
    )]
    pub max_scanned_files: usize,
    /// Bytes read of one other changed file; a larger one fails `fleet/privacy` unread,
    /// without being downloaded.
    #[arg(
        long,
        env = "FLEETBOT_MAX_SCANNED_BYTES",
        default_value_t = 1 << 20,
        value_name = "BYTES"
    )]
    pub max_scanned_bytes: usize,
    /// The verification probe image, by digest (`<name>@sha256:<64 hex>`); without it
    /// `/verify-storage` says verification is not configured. On the embedded simulator it
    /// defaults to this binary.
    #[arg(long, env = "FLEETBOT_PROBE_IMAGE", value_name = "IMAGE")]
    pub probe_image: Option<String>,
    /// The operator's private runtime values (existing project IDs, capacity block groups,
    /// chart repositories, bucket names) filled into every spec the App reads; never read
    /// from a pull request, never shown (messages call it "runtime values").
    #[arg(long, env = "FLEETBOT_RUNTIME_VALUES", value_name = "FILE")]
    pub runtime_values: Option<PathBuf>,
    /// Queue a reconcile pass of every installed repository at start: the default branches
    /// compared with the cloud (`fleet/drift`), and pull request heads and merges whose
    /// delivery was lost while the server was down planned and applied.
    #[arg(
        long,
        env = "FLEETBOT_RECONCILE_NOW",
        value_parser = clap::builder::BoolishValueParser::new()
    )]
    pub reconcile_now: bool,
    /// Seconds between looks at the reconcile schedule (each repository's
    /// `drift.interval_minutes`); 0 turns the periodic reconcile off on this replica.
    #[arg(
        long,
        env = "FLEETBOT_RECONCILE_TICK_SECS",
        default_value_t = 60,
        value_name = "SECS"
    )]
    pub reconcile_tick_secs: u64,
    /// On SIGTERM or SIGINT: stop taking jobs, let a running job finish for this long, then
    /// stop it and release it to another replica at once (jobs are restart-safe); exit within
    /// this and a few seconds more. Below the orchestrator's termination grace period.
    #[arg(
        long,
        env = "FLEETBOT_SHUTDOWN_GRACE_SECS",
        default_value_t = 25,
        value_name = "SECS"
    )]
    pub shutdown_grace_secs: u64,
    /// Where verification receipts are kept (mode 0700 directories, 0600 files; default
    /// DATA_DIR/fleetbot/evidence). Never inside a git checkout.
    #[arg(long, env = "FLEETBOT_EVIDENCE_DIR", value_name = "PATH")]
    pub evidence_dir: Option<PathBuf>,
}
