//! `fleetbot serve`: the GitHub App's webhook server.
//!
//! Secrets come from the environment (flags work too, but show up in process lists); none is
//! ever printed: `--help` hides their environment values and `Debug` redacts them.

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;

use super::serve_start::{DashboardPlace, OpenStore, open_store};
use crate::bot::{Bot, BotSettings};
use crate::fleet::backend::Deployer;
use crate::fleet::connect::{CloudChoice, ConnectOptions, Connection, connect_configured};
use crate::fleet::live::{CloudPlanner, VerifyConfig};
use crate::github::{AppCredentials, ClientConfig, DEFAULT_API_URL, GitHubClient, WebhookSecrets};
use crate::server::durable::{DurableSettings, start};
use crate::server::sources::SourceSetting;
use crate::server::{MAX_BODY_BYTES, Metrics, WorkerSettings};
use crate::store::{DeployStore, InventoryStore, JobQueue, OverviewStore, StoreUrl};

/// How long a shutdown waits, past the workers' grace, for them to release what still runs.
const SHUTDOWN_MARGIN: Duration = Duration::from_secs(5);

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
    /// Workers in this process. Jobs of one pull request run one at a time whatever the
    /// number; more workers run more pull requests at once.
    #[arg(long, env = "FLEETBOT_WORKERS", default_value_t = 2, value_name = "N")]
    pub workers: usize,
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
    /// Unverified webhook bodies of one peer address read at once; more wait 2 s, then get
    /// 429. 0: no per-peer bound (behind a proxy, where every peer is the proxy).
    #[arg(
        long,
        env = "FLEETBOT_MAX_BODIES_PER_PEER",
        default_value_t = 8,
        value_name = "N"
    )]
    pub max_bodies_per_peer: usize,
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
    /// Where the dashboard (no login) is served: `same` (beside the webhook), `off`, or
    /// ADDR:PORT for a listener of its own.
    #[arg(
        long,
        env = "FLEETBOT_DASHBOARD",
        default_value = "same",
        value_name = "same|off|ADDR:PORT"
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

/// The checked configuration (its `Debug` redacts, like its parts).
#[derive(Debug)]
struct Checked {
    secrets: WebhookSecrets,
    credentials: Arc<AppCredentials>,
    store: StoreUrl,
    cloud: Option<CloudChoice>,
    sources: Option<SourceSetting>,
    dashboard: DashboardPlace,
}

fn check(args: &ServeArgs) -> Result<Checked, String> {
    let secrets = args
        .webhook_secret
        .as_ref()
        .ok_or("FLEETBOT_WEBHOOK_SECRET (or --webhook-secret) is required".to_string())
        .and_then(|s| {
            WebhookSecrets::from_comma_separated(s.expose()).map_err(|e| e.to_string())
        })?;
    let (app_id, key_path) = match (&args.app_id, &args.app_private_key_path) {
        (Some(id), Some(path)) => (id, path),
        _ => {
            return Err(
                "FLEETBOT_APP_ID and FLEETBOT_APP_PRIVATE_KEY_PATH are both required".to_string(),
            );
        }
    };
    let credentials = AppCredentials::from_pem_file(app_id, key_path).map_err(|e| e.to_string())?;
    let cloud = cloud_choice(&args.cloud)?;
    let store = match args.store.as_ref().map(SecretArg::expose) {
        // One inventory with the CLI where the CLI's is known without asking a cloud: the
        // embedded simulator's, or the one FLEETBOT_INVENTORY names.
        None if cloud == Some(CloudChoice::Simulator)
            || std::env::var_os("FLEETBOT_INVENTORY").is_some() =>
        {
            StoreUrl::Sqlite(crate::fleet::inventory_path(true))
        }
        url => StoreUrl::parse(url, &StoreUrl::default_dir()).map_err(|e| e.to_string())?,
    };
    if args.retention_days < 3 {
        return Err(
            "FLEETBOT_RETENTION_DAYS must be at least 3: GitHub redelivers for 3 days".to_string(),
        );
    }
    if !(args.github_api_url.starts_with("https://") || args.github_api_url.starts_with("http://"))
    {
        return Err("FLEETBOT_GITHUB_API_URL must be an http(s) URL".to_string());
    }
    if args.max_unverified_bytes < MAX_BODY_BYTES {
        return Err(format!(
            "FLEETBOT_MAX_UNVERIFIED_BYTES must be at least {MAX_BODY_BYTES}: GitHub's largest deliveries would never pass"
        ));
    }
    Ok(Checked {
        secrets,
        credentials: Arc::new(credentials),
        store,
        cloud,
        sources: SourceSetting::parse(&args.webhook_source_ranges)?,
        dashboard: DashboardPlace::parse(&args.dashboard)?,
    })
}

pub fn run(args: ServeArgs) -> ExitCode {
    let checked = match check(&args) {
        Ok(c) => c,
        Err(message) => {
            eprintln!("fleetbot serve: {message}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("fleetbot serve: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve_until_signal(args, checked)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("fleetbot serve: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn serve_until_signal(args: ServeArgs, checked: Checked) -> Result<(), String> {
    let within = Duration::from_secs(args.store_connect_secs.max(1));
    match open_store(&checked.store, within).await? {
        OpenStore::Sqlite(store) => serve_with(store, args, checked).await,
        OpenStore::Postgres(store) => serve_with(store, args, checked).await,
    }
}

/// Runs the server over an open store until SIGINT or SIGTERM.
async fn serve_with<
    Q: JobQueue + InventoryStore + DeployStore + OverviewStore + Clone + 'static,
>(
    store: Q,
    args: ServeArgs,
    checked: Checked,
) -> Result<(), String> {
    let github = GitHubClient::new(ClientConfig {
        api_url: args.github_api_url.clone(),
        credentials: Some(checked.credentials),
        ..ClientConfig::default()
    })
    .map_err(|e| e.to_string())?;
    let sources = match &checked.sources {
        Some(setting) => {
            let ranges = Arc::new(crate::server::sources::load(setting, &github).await?);
            tracing::info!(
                ranges = ranges.len(),
                github = setting.github,
                "webhooks are taken only from FLEETBOT_WEBHOOK_SOURCE_RANGES"
            );
            Some(ranges)
        }
        None => None,
    };
    // Held for the server's life: an embedded simulator stops when its connection drops.
    let connection = open_cloud(checked.cloud).await?;
    let applier: Option<Arc<CloudPlanner>> = connection.as_ref().map(|c| {
        let name = if c.is_simulated() {
            "the fleetbot simulator"
        } else {
            "Nebius"
        };
        let tenant = args
            .tenant_id
            .as_ref()
            .map(|t| t.expose().to_string())
            .or_else(|| c.tenant_id.clone());
        let probe_image = args
            .probe_image
            .clone()
            .or_else(|| super::verify::simulated_probe_image(c).ok().flatten());
        let evidence_root = args
            .evidence_dir
            .clone()
            .or_else(|| dirs::data_dir().map(|d| d.join("fleetbot").join("evidence")));
        Arc::new(
            CloudPlanner::new(c.client.clone(), store.clone(), name, tenant).with_verification(
                VerifyConfig {
                    probe_image,
                    evidence_root,
                },
            ),
        )
    });
    let cloud = applier.clone();
    match &cloud {
        Some(c) => tracing::info!(cloud = %c.public_name(), "pull requests are planned live"),
        None => tracing::warn!(
            "no cloud configured (FLEETBOT_CLOUD): pull requests get static plans and no quota budget"
        ),
    }
    let tenant = args
        .tenant_id
        .as_ref()
        .map(|t| t.expose().to_string())
        .or_else(|| connection.as_ref().and_then(|c| c.tenant_id.clone()))
        .filter(|t| !t.trim().is_empty());
    let quota = match (&cloud, &tenant) {
        (Some(cloud), Some(tenant_id)) => Some(Arc::new(crate::server::dashboard::LiveQuota {
            cloud: cloud.clone(),
            tenant_id: tenant_id.clone(),
        })
            as Arc<dyn crate::server::dashboard::QuotaSource>),
        _ => None,
    };
    let store_kind = match &checked.store {
        StoreUrl::Sqlite(_) => "SQLite",
        StoreUrl::Postgres(_) => "PostgreSQL",
    };
    let dashboard = (checked.dashboard != DashboardPlace::Off).then(|| {
        crate::server::dashboard::router(crate::server::dashboard::Dashboard::new(
            store.clone(),
            store_kind,
            quota,
        ))
    });
    let deploy = match (applier, tenant) {
        (Some(applier), Some(tenant_id)) => {
            tracing::info!("merges into the default branch are applied");
            Some(Deployer {
                applier,
                state: Arc::new(store.clone()) as Arc<dyn DeployStore>,
                tenant_id,
                lease: Duration::from_secs(args.apply_lease_secs.max(1)),
            })
        }
        (Some(_), None) => {
            tracing::warn!("no tenant configured (FLEETBOT_TENANT_ID): merges apply nothing");
            None
        }
        _ => None,
    };
    // Read once at start: a bad file stops the server rather than failing every pull request.
    let runtime = match &args.runtime_values {
        Some(path) => Some(Arc::new(
            crate::runtime::RuntimeValues::load(path)
                .map_err(|e| format!("FLEETBOT_RUNTIME_VALUES: {e}"))?
                .labelled("runtime values"),
        )),
        None => None,
    };
    let bot = Bot::new(
        github,
        BotSettings {
            cloud,
            deploy,
            quota: None,
            max_fetched_files: args.max_scanned_files,
            max_file_bytes: args.max_scanned_bytes,
            max_spec_files: args.max_spec_files,
            max_spec_bytes: args.max_spec_bytes,
            runtime,
        },
    );
    if args.workers == 0 {
        tracing::warn!(
            "FLEETBOT_WORKERS=0: deliveries are stored but handled by other replicas only"
        );
    }
    let listener = listen(args.listen, args.listen_backlog)
        .map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
    let limits = crate::server::ServerLimits {
        max_connections: args.max_connections.max(1),
        header_timeout: Duration::from_secs(args.header_timeout_secs.max(1)),
        body_timeout: Duration::from_secs(args.body_timeout_secs.max(1)),
        max_body_readers: args.max_body_readers.max(1),
        max_bodies_per_peer: args.max_bodies_per_peer,
        max_unverified_bytes: args.max_unverified_bytes,
        min_body_rate: args.min_body_rate,
        sources: sources.clone(),
    };
    let (stop_side, side_stopped) = tokio::sync::watch::channel(false);
    let (routes, dashboard_server) = match (checked.dashboard, dashboard) {
        (DashboardPlace::Listen(addr), Some(dashboard)) => {
            let listener = listen(addr, args.listen_backlog)
                .map_err(|e| format!("cannot listen on {addr} (FLEETBOT_DASHBOARD): {e}"))?;
            let local = listener.local_addr().map_err(|e| e.to_string())?;
            let mut stopped = side_stopped.clone();
            let stop = async move {
                let _ = stopped.wait_for(|s| *s).await;
            };
            let limits = limits.clone();
            eprintln!("fleetbot serve: dashboard on {local}");
            tracing::info!(dashboard = %local, "the dashboard has a listener of its own");
            let server = tokio::spawn(async move {
                crate::server::serve_with_limits(listener, dashboard, stop, &limits).await
            });
            (None, Some(server))
        }
        (_, dashboard) => (dashboard, None),
    };
    if checked.dashboard == DashboardPlace::Off {
        tracing::info!("FLEETBOT_DASHBOARD=off: no dashboard is served");
    }
    let refresh = sources.as_ref().filter(|r| r.uses_github()).map(|ranges| {
        tokio::spawn(crate::server::sources::refresh_github(
            ranges.clone(),
            bot.github().clone(),
            side_stopped.clone(),
        ))
    });
    let settings = DurableSettings {
        workers: args.workers,
        worker: WorkerSettings {
            lease: Duration::from_secs(args.job_lease_secs.max(1)),
            shutdown_grace: Duration::from_secs(args.shutdown_grace_secs),
            ..WorkerSettings::default()
        },
        retention: Duration::from_secs(args.retention_days * 24 * 3600),
        limits,
        routes,
        ..DurableSettings::default()
    };
    let schedule = (args.reconcile_tick_secs > 0 || args.reconcile_now).then(|| {
        let settings = crate::server::reconcile::ScheduleSettings {
            tick: Duration::from_secs(if args.reconcile_tick_secs == 0 {
                // Only the pass at start: the next tick is never reached.
                u64::MAX / 4
            } else {
                args.reconcile_tick_secs
            }),
            now: args.reconcile_now,
            ..Default::default()
        };
        tokio::spawn(crate::server::reconcile::run_schedule(
            bot.clone(),
            store.clone(),
            settings,
            side_stopped.clone(),
        ))
    });
    let server = start(
        listener,
        store,
        checked.secrets,
        bot,
        Arc::new(Metrics::default()),
        settings,
        None,
    )
    .map_err(|e| e.to_string())?;
    // The store is shown redacted: a PostgreSQL URL's password never reaches a log.
    tracing::info!(
        listen = %args.listen,
        api = %public_url(&args.github_api_url),
        store = %checked.store,
        workers = args.workers,
        "fleetbot serve is listening"
    );
    eprintln!(
        "fleetbot serve: listening on {} (store {})",
        server.local_addr(),
        checked.store
    );
    shutdown_signal().await;
    eprintln!("fleetbot serve: shutting down");
    let _ = stop_side.send(true);
    if let Some(schedule) = schedule {
        let _ = schedule.await;
    }
    if let Some(refresh) = refresh {
        let _ = refresh.await;
    }
    if let Some(dashboard) = dashboard_server {
        let _ = dashboard.await;
    }
    // The workers release what is still running after their grace; this only bounds the
    // wait for them to do so.
    server
        .shutdown(Duration::from_secs(args.shutdown_grace_secs) + SHUTDOWN_MARGIN)
        .await
        .map_err(|e| e.to_string())
}

/// A URL as it may be logged: no user information (a token is often passed as the user name)
/// and no query.
fn public_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut u) => {
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.set_query(None);
            u.to_string()
        }
        // Not a URL at all: nothing of it is shown.
        Err(_) => "(not a valid URL)".to_string(),
    }
}

/// `--cloud`: `None` for `none`.
fn cloud_choice(value: &str) -> Result<Option<CloudChoice>, String> {
    if value.trim().eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    CloudChoice::parse(value)
        .map(Some)
        .map_err(|_| format!("--cloud {value:?}: expected auto, nebius, simulator or none"))
}

/// The cloud pull requests are planned against, if any.
async fn open_cloud(choice: Option<CloudChoice>) -> Result<Option<Connection>, String> {
    let Some(choice) = choice else {
        return Ok(None);
    };
    let mut options = ConnectOptions::credentials_from_env("");
    options.choice = choice;
    connect_configured(&options).await
}

/// SIGINT or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
}

/// Binds the webhook listener with an explicit backlog (a burst of GitHub's deliveries must
/// queue in the kernel, not be refused) and address reuse, so a restart can bind at once.
fn listen(addr: std::net::SocketAddr, backlog: u32) -> std::io::Result<tokio::net::TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.set_nodelay(true)?;
    socket.bind(addr)?;
    socket.listen(backlog.max(1))
}

#[cfg(test)]
mod tests;
