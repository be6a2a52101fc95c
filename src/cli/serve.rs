//! `fleetbot serve`: the GitHub App's webhook server.
//!
//! Secrets come from the environment (flags work too, but show up in process lists); none is
//! ever printed: `--help` hides their environment values and `Debug` redacts them.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use super::serve_start::{DashboardPlace, OpenStore, open_store};
use crate::bot::{Bot, BotSettings};
use crate::fleet::{CloudChoice, Session};
use crate::github::{AppCredentials, ClientConfig, GitHubClient, WebhookSecrets};
use crate::server::durable::{DurableSettings, start};
use crate::server::job_process::{self, ChildConfig, Supervisor, SupervisorSettings, memory};
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
    /// Jobs run in job processes of their own (`FLEETBOT_JOB_ISOLATION=process`).
    isolated: bool,
    trusted_proxies: Option<Arc<crate::server::proxies::TrustedProxies>>,
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
            || super::env::credentials_options("").inventory.is_some() =>
        {
            StoreUrl::Sqlite(super::env::credentials_options("").inventory_path(true))
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
        trusted_proxies: crate::server::proxies::TrustedProxies::parse(&args.trusted_proxies)?
            .map(Arc::new),
        isolated: match args.job_isolation.trim().to_ascii_lowercase().as_str() {
            "process" => true,
            "none" => false,
            other => {
                return Err(format!(
                    "FLEETBOT_JOB_ISOLATION {other:?}: expected process or none"
                ));
            }
        },
    })
}

pub fn run(args: ServeArgs) -> ExitCode {
    // First, before the process has allocated much: a job process's heap is counted from here.
    let child = match ChildConfig::from_env() {
        Ok(child) => child,
        Err(message) => {
            eprintln!("fleetbot serve: {message}");
            return ExitCode::from(2);
        }
    };
    if let Some(c) = &child
        && c.memory_mib > 0
    {
        memory::set_budget(usize::try_from(c.memory_mib << 20).unwrap_or(usize::MAX));
    }
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
    match runtime.block_on(serve_until_signal(args, checked, child)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("fleetbot serve: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn serve_until_signal(
    args: ServeArgs,
    checked: Checked,
    child: Option<ChildConfig>,
) -> Result<(), String> {
    let within = Duration::from_secs(args.store_connect_secs.max(1));
    match (open_store(&checked.store, within).await?, child) {
        (OpenStore::Sqlite(store), None) => serve_with(store, args, checked).await,
        (OpenStore::Postgres(store), None) => serve_with(store, args, checked).await,
        (OpenStore::Sqlite(store), Some(child)) => run_jobs(store, args, checked, child).await,
        (OpenStore::Postgres(store), Some(child)) => run_jobs(store, args, checked, child).await,
    }
}

/// The GitHub client of the App.
fn github_client(args: &ServeArgs, checked: &Checked) -> Result<GitHubClient, String> {
    GitHubClient::new(ClientConfig {
        api_url: args.github_api_url.clone(),
        credentials: Some(checked.credentials.clone()),
        ..ClientConfig::default()
    })
    .map_err(|e| e.to_string())
}

/// What runs jobs: the bot, and the session it holds for its life (an embedded simulator
/// stops when the last holder of the session drops it).
struct JobSide {
    bot: Bot,
    session: Option<Arc<Session>>,
}

/// The session the server's jobs run through: `session`'s cloud with the server's store as
/// its inventory and deploy state, its tenant, probe image and receipt directory.
fn server_session<Q: InventoryStore + DeployStore + Clone + 'static>(
    store: &Q,
    args: &ServeArgs,
    session: Session,
) -> Session {
    let tenant = args
        .tenant_id
        .as_ref()
        .map(|t| t.expose().to_string())
        .unwrap_or_default();
    let probe_image = args
        .probe_image
        .clone()
        .or_else(|| session.simulated_probe_image().ok().flatten());
    let evidence_root = args
        .evidence_dir
        .clone()
        .or_else(|| dirs::data_dir().map(|d| d.join("fleetbot").join("evidence")));
    let mut session = session
        .with_inventory(store.clone())
        .with_deploy_state(
            store.clone(),
            Duration::from_secs(args.apply_lease_secs.max(1)),
        )
        .with_tenant(tenant);
    if let Some(image) = probe_image {
        session = session.with_probe_image(image);
    }
    if let Some(dir) = evidence_root {
        session = session.with_evidence_dir(dir);
    }
    session
}

/// Builds the bot over `session` as the server configures it.
fn job_side<Q: InventoryStore + DeployStore + Clone + 'static>(
    store: &Q,
    args: &ServeArgs,
    github: GitHubClient,
    session: Option<Session>,
) -> Result<JobSide, String> {
    let session = session.map(|s| Arc::new(server_session(store, args, s)));
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
            cloud: session.clone(),
            quota: None,
            max_fetched_files: args.max_scanned_files,
            max_file_bytes: args.max_scanned_bytes,
            max_spec_files: args.max_spec_files,
            max_spec_bytes: args.max_spec_bytes,
            runtime,
            spec_blobs: Default::default(),
        },
    );
    Ok(JobSide { bot, session })
}

/// The worker settings the server's arguments give.
fn worker_settings(args: &ServeArgs) -> WorkerSettings {
    WorkerSettings {
        lease: Duration::from_secs(args.job_lease_secs.max(1)),
        shutdown_grace: Duration::from_secs(args.shutdown_grace_secs),
        job_timeout: Duration::from_secs(args.job_timeout_secs.max(1)),
        apply_timeout: Duration::from_secs(args.apply_timeout_secs.max(1)),
        ..WorkerSettings::default()
    }
}

/// A job process (`FLEETBOT_JOB_PROCESS`): one worker over the store, until its supervisor
/// closes its input.
async fn run_jobs<Q: JobQueue + InventoryStore + DeployStore + Clone + 'static>(
    store: Q,
    args: ServeArgs,
    checked: Checked,
    child: ChildConfig,
) -> Result<(), String> {
    let github = github_client(&args, &checked)?;
    let session = match child.simulator.clone() {
        Some(resident) => Some(Session::resident(
            resident,
            "the server's embedded Nebius simulator",
            store.clone(),
        )),
        None => open_cloud(checked.cloud, &store).await?,
    };
    let side = job_side(&store, &args, github, session)?;
    let wake = Arc::new(tokio::sync::Notify::new());
    let (stop, stopped) = tokio::sync::watch::channel(false);
    job_process::listen_to_supervisor(wake.clone(), stop);
    let worker = WorkerSettings {
        id: child.worker_id.clone(),
        hook: Some(job_process::child_hook(
            side.bot.github().clone(),
            side.bot.reconcile_intervals().clone(),
        )),
        ..worker_settings(&args)
    };
    tracing::info!(worker = %child.worker_id, memory_mib = child.memory_mib, "job process started");
    crate::server::run_queue_worker(
        store,
        side.bot,
        Arc::new(job_process::child_metrics()),
        worker,
        wake,
        stopped,
        None,
    )
    .await;
    drop(side.session);
    Ok(())
}

/// Runs the server over an open store until SIGINT or SIGTERM.
async fn serve_with<
    Q: JobQueue + InventoryStore + DeployStore + OverviewStore + Clone + 'static,
>(
    store: Q,
    args: ServeArgs,
    checked: Checked,
) -> Result<(), String> {
    let github = github_client(&args, &checked)?;
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
    let session = open_cloud(checked.cloud, &store).await?;
    let side = job_side(&store, &args, github, session)?;
    // Job processes reach the server's embedded simulator as a resident one, with a token of
    // their own.
    let simulator = side
        .session
        .as_ref()
        .and_then(|s| s.share_embedded(s.configured_probe_image().unwrap_or_default().to_string()));
    let JobSide { bot, session } = &side;
    match session {
        Some(s) => tracing::info!(cloud = %s.public_name(), "pull requests are planned live"),
        None => tracing::warn!(
            "no cloud configured (FLEETBOT_CLOUD): pull requests get static plans and no quota budget"
        ),
    }
    match session {
        Some(s) if s.applies() => tracing::info!("merges into the default branch are applied"),
        Some(_) => {
            tracing::warn!("no tenant configured (FLEETBOT_TENANT_ID): merges apply nothing")
        }
        None => {}
    }
    let quota = match session {
        Some(s) if s.applies() => Some(Arc::new(crate::server::dashboard::LiveQuota {
            cloud: s.clone(),
            tenant_id: s.tenant_id().to_string(),
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
        trusted_proxies: checked.trusted_proxies.clone(),
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
    let worker = worker_settings(&args);
    let settings = DurableSettings {
        // With job processes, this process runs no job itself.
        workers: if checked.isolated { 0 } else { args.workers },
        worker: worker.clone(),
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
    let metrics = Arc::new(Metrics::default());
    let server = start(
        listener,
        store.clone(),
        checked.secrets,
        bot.clone(),
        metrics.clone(),
        settings,
        None,
    )
    .map_err(|e| e.to_string())?;
    let supervisor = (checked.isolated && args.workers > 0)
        .then(|| -> Result<Supervisor, String> {
            let program = std::env::current_exe()
                .map_err(|e| format!("cannot find this binary to start job processes: {e}"))?;
            let settings = SupervisorSettings {
                processes: args.workers,
                worker,
                memory_mib: args.job_memory_mib,
                simulator,
                program,
                args: std::env::args_os().skip(1).collect(),
            };
            Ok(Supervisor::start(
                store,
                metrics,
                bot,
                settings,
                server.wake(),
            ))
        })
        .transpose()?;
    // The store is shown redacted: a PostgreSQL URL's password never reaches a log.
    tracing::info!(
        listen = %args.listen,
        api = %public_url(&args.github_api_url),
        store = %checked.store,
        workers = args.workers,
        job_processes = supervisor.is_some(),
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
    // Job processes release what still runs after their grace, and are killed after a few
    // seconds more.
    if let Some(supervisor) = supervisor {
        supervisor.shutdown().await;
    }
    // The workers release what is still running after their grace; this only bounds the
    // wait for them to do so.
    let result = server
        .shutdown(Duration::from_secs(args.shutdown_grace_secs) + SHUTDOWN_MARGIN)
        .await
        .map_err(|e| e.to_string());
    drop(side);
    result
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

/// The cloud pull requests are planned against, if any, with the server's store as its
/// inventory.
async fn open_cloud<Q: InventoryStore + Clone + 'static>(
    choice: Option<CloudChoice>,
    store: &Q,
) -> Result<Option<Session>, String> {
    let Some(choice) = choice else {
        return Ok(None);
    };
    let mut options = super::env::credentials_options("");
    options.choice = choice;
    Session::connect_configured_with(&options, store.clone())
        .await
        .map_err(|e| e.to_string())
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
