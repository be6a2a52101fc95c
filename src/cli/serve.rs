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

use clap::Args;

use crate::bot::{Bot, BotSettings};
use crate::github::{AppCredentials, ClientConfig, DEFAULT_API_URL, GitHubClient, WebhookSecrets};
use crate::server::{AppState, InMemorySink, Metrics, router, run_worker, serve};

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
    /// Where deliveries and jobs are kept: sqlite://PATH (one replica; default
    /// sqlite://fleetbot.db) or postgres://… (several replicas). May hold a password, so its
    /// value is never shown.
    #[arg(
        long,
        env = "FLEETBOT_STORE",
        default_value = "sqlite://fleetbot.db",
        hide_env_values = true,
        hide_default_value = true,
        value_name = "URL"
    )]
    pub store: SecretArg,
}

/// The checked configuration (its `Debug` redacts, like its parts).
#[derive(Debug)]
struct Checked {
    secrets: WebhookSecrets,
    credentials: Arc<AppCredentials>,
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
    let store = args.store.expose();
    if !(store.starts_with("sqlite://")
        || store.starts_with("postgres://")
        || store.starts_with("postgresql://"))
    {
        return Err("FLEETBOT_STORE must be sqlite://PATH or postgres://…".to_string());
    }
    if !(args.github_api_url.starts_with("https://") || args.github_api_url.starts_with("http://"))
    {
        return Err("FLEETBOT_GITHUB_API_URL must be an http(s) URL".to_string());
    }
    Ok(Checked {
        secrets,
        credentials: Arc::new(credentials),
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
    let github = GitHubClient::new(ClientConfig {
        api_url: args.github_api_url.clone(),
        credentials: Some(checked.credentials),
        ..ClientConfig::default()
    })
    .map_err(|e| e.to_string())?;
    // The durable store is the next phase; until then deliveries are deduplicated and queued
    // in memory, and a restart loses what was queued.
    tracing::warn!("the durable store is not wired in yet: deliveries are kept in memory");
    let (sink, queue) = InMemorySink::new();
    let metrics = Arc::new(Metrics::default());
    let bot = Bot::new(github.clone(), BotSettings::default());
    let worker = tokio::spawn(run_worker(queue, bot, metrics.clone(), None));
    let state = AppState::new(checked.secrets, Arc::new(sink), metrics, Some(github));
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
    tracing::info!(listen = %args.listen, api = %args.github_api_url, "fleetbot serve is listening");
    eprintln!("fleetbot serve: listening on {}", args.listen);
    serve(listener, router(state), shutdown_signal())
        .await
        .map_err(|e| e.to_string())?;
    worker.abort();
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> ServeArgs {
        ServeArgs {
            listen: "127.0.0.1:0".parse().unwrap(),
            webhook_secret: Some("a,b".parse().unwrap()),
            app_id: Some("1".into()),
            app_private_key_path: Some(PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/src/github/testdata/app-test-key.pem"
            ))),
            github_api_url: DEFAULT_API_URL.into(),
            store: "postgres://user:hunter2@db/fleetbot".parse().unwrap(),
        }
    }

    #[test]
    fn checks_and_redacts() {
        let a = args();
        assert!(check(&a).is_ok());
        let shown = format!("{a:?}");
        assert!(
            !shown.contains("hunter2") && !shown.contains("\"a,b\""),
            "{shown}"
        );
        let mut missing = args();
        missing.webhook_secret = None;
        assert!(
            check(&missing)
                .unwrap_err()
                .contains("FLEETBOT_WEBHOOK_SECRET")
        );
        let mut no_key = args();
        no_key.app_private_key_path = None;
        assert!(check(&no_key).unwrap_err().contains("both required"));
        let mut bad_store = args();
        bad_store.store = "mysql://x".parse().unwrap();
        assert!(check(&bad_store).unwrap_err().contains("FLEETBOT_STORE"));
    }
}
