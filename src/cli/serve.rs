//! `fleetbot serve`: the GitHub App's webhook server.
//!
//! Secrets come from the environment (flags work too, but show up in process lists); none is
//! ever printed: `--help` hides their environment values and `Debug` redacts them.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use super::serve_start::{DashboardPlace, OpenStore, open_store};
use crate::bot::{Bot, BotSettings};
use crate::fleet::backend::Deployer;
use crate::fleet::connect::{CloudChoice, ConnectOptions, Connection, connect_configured};
use crate::fleet::live::{CloudPlanner, VerifyConfig};
use crate::github::{AppCredentials, ClientConfig, GitHubClient, WebhookSecrets};
use crate::server::durable::{DurableSettings, start};
use crate::server::sources::SourceSetting;
use crate::server::{MAX_BODY_BYTES, Metrics, WorkerSettings};
use crate::store::{DeployStore, InventoryStore, JobQueue, OverviewStore, StoreUrl};

mod args;
pub use args::{SecretArg, ServeArgs};

/// How long a shutdown waits, past the workers' grace, for them to release what still runs.
const SHUTDOWN_MARGIN: Duration = Duration::from_secs(5);

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
            spec_blobs: Default::default(),
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
