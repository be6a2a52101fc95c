//! `fleetbot register`: registers the GitHub App through GitHub's manifest flow and keeps its
//! credentials, so nobody copies a private key or a webhook secret by hand.
//!
//! The flow (docs.github.com, "Registering a GitHub App from a manifest"): a local page posts
//! `deploy/github-app-manifest.json` (with this deployment's URL) to GitHub's "new App" form;
//! the person presses "Create GitHub App"; GitHub redirects the browser back to this command
//! with a one-time code and the `state` it was given; the command trades the code for the
//! App's ID, private key and webhook secret (`POST /app-manifests/{code}/conversions`) and
//! writes them, mode 0600, outside any git checkout.

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use clap::Args;
use tokio::sync::{Mutex, oneshot};

use crate::github::client::{ClientConfig, RegisteredApp};
use crate::github::{DEFAULT_API_URL, GitHubClient};

/// The manifest this repository ships, with its placeholder host.
const MANIFEST: &str = include_str!("../../deploy/github-app-manifest.json");
const PLACEHOLDER_HOST: &str = "https://fleetbot.example.com";

#[derive(Debug, Args)]
pub struct RegisterArgs {
    /// Where this deployment of `fleetbot serve` is reached (`https://HOST`): the App's page
    /// and, with `/webhook`, its webhook URL.
    #[arg(long, value_name = "URL")]
    pub url: String,
    /// Register the App for this organization (default: for your own account).
    #[arg(long, value_name = "ORG")]
    pub org: Option<String>,
    /// The App's name on GitHub (unique on GitHub; default: fleetbot).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Where the credentials are written (mode 0700; never inside a git checkout).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// The local address the page and GitHub's redirect are served on.
    #[arg(long, default_value = "127.0.0.1:0", value_name = "ADDR")]
    pub listen: SocketAddr,
    /// GitHub's web address (GitHub Enterprise Server: `https://HOST`).
    #[arg(long, default_value = "https://github.com", value_name = "URL")]
    pub github_url: String,
    /// GitHub's REST address (GitHub Enterprise Server: `https://HOST/api/v3`).
    #[arg(
        long,
        env = "FLEETBOT_GITHUB_API_URL",
        default_value = DEFAULT_API_URL,
        value_name = "URL"
    )]
    pub api_url: String,
    /// Give up after this many minutes (GitHub's code is valid for an hour).
    #[arg(long, default_value_t = 15, value_name = "MINUTES")]
    pub timeout_minutes: u64,
}

pub fn run(args: RegisterArgs) -> ExitCode {
    let runtime = match super::lifecycle::runtime() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(register(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fleetbot register: {e}");
            ExitCode::FAILURE
        }
    }
}

/// What the page and the callback share.
struct Flow {
    /// The form's action: GitHub's "new App" page with the `state`.
    action: String,
    manifest: String,
    state: String,
    client: GitHubClient,
    /// Taken by the first callback that carries the right state.
    done: Mutex<Option<oneshot::Sender<Result<RegisteredApp, String>>>>,
}

async fn register(args: RegisterArgs) -> Result<(), String> {
    let base = args.url.trim_end_matches('/').to_string();
    if !(base.starts_with("https://") || base.starts_with("http://")) {
        return Err(format!(
            "--url {base:?}: give the deployment's address, https://HOST"
        ));
    }
    let out = match &args.out {
        Some(dir) => dir.clone(),
        None => dirs::config_dir()
            .ok_or("no configuration directory; pass --out DIR")?
            .join("fleetbot"),
    };
    refuse_inside_git(&out)?;
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    let page = format!("http://{local}/");
    let manifest = manifest(&base, &format!("{page}callback"), args.name.as_deref())?;
    let state = uuid::Uuid::new_v4().simple().to_string();
    let github = args.github_url.trim_end_matches('/');
    let form = match &args.org {
        Some(org) => format!("{github}/organizations/{org}/settings/apps/new"),
        None => format!("{github}/settings/apps/new"),
    };
    let client = GitHubClient::new(ClientConfig {
        api_url: args.api_url.clone(),
        ..ClientConfig::default()
    })
    .map_err(|e| e.to_string())?;
    let (tx, rx) = oneshot::channel();
    let flow = Arc::new(Flow {
        action: format!("{form}?state={state}"),
        manifest,
        state,
        client,
        done: Mutex::new(Some(tx)),
    });
    let app = Router::new()
        .route("/", get(page_handler))
        .route("/callback", get(callback))
        .with_state(flow);
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    say(&format!(
        "fleetbot register: open {page} in a browser signed in to GitHub, check the App, and press \"Create GitHub App\"."
    ));
    say(&format!(
        "  The page sends deploy/github-app-manifest.json, for {base}, to {form}."
    ));
    say(&format!(
        "  Waiting for GitHub's answer (up to {} minutes; Ctrl-C stops)…",
        args.timeout_minutes
    ));
    let outcome = tokio::select! {
        answer = rx => answer.map_err(|_| "the page stopped".to_string())?,
        _ = tokio::time::sleep(Duration::from_secs(args.timeout_minutes * 60)) => {
            Err(format!("no answer from GitHub within {} minutes", args.timeout_minutes))
        }
        _ = tokio::signal::ctrl_c() => Err("stopped".to_string()),
    };
    // Let the browser receive its "registered" page before the server goes.
    tokio::time::sleep(Duration::from_millis(200)).await;
    server.abort();
    let app = outcome?;
    let (env, key) = write_credentials(&out, &app)?;
    say(&format!(
        "Registered the GitHub App {} (App ID {}).",
        app.slug, app.id
    ));
    say(&format!(
        "  credentials: {} and {} (mode 0600; never commit them)",
        env.display(),
        key.display()
    ));
    let install = format!("{github}/apps/{}/installations/new", app.slug);
    say(&format!(
        "  next: install it on the repositories that hold fleet specs: {install}"
    ));
    say(&format!(
        "        then run it: set -a; . {}; set +a; fleetbot serve",
        env.display()
    ));
    Ok(())
}

fn say(line: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{line}");
    let _ = stdout.flush();
}

/// The shipped manifest for this deployment: its URL, webhook URL and redirect URL.
fn manifest(base: &str, redirect: &str, name: Option<&str>) -> Result<String, String> {
    let mut doc: serde_json::Value =
        serde_json::from_str(MANIFEST).map_err(|e| format!("the shipped manifest: {e}"))?;
    let rehost = |v: &serde_json::Value| {
        v.as_str()
            .map(|s| s.replace(PLACEHOLDER_HOST, base))
            .unwrap_or_default()
    };
    doc["url"] = rehost(&doc["url"]).into();
    doc["hook_attributes"]["url"] = rehost(&doc["hook_attributes"]["url"]).into();
    doc["redirect_url"] = redirect.into();
    if let Some(name) = name {
        doc["name"] = name.into();
    }
    serde_json::to_string(&doc).map_err(|e| e.to_string())
}

/// Credentials never go where `git add` could take them.
fn refuse_inside_git(dir: &Path) -> Result<(), String> {
    let absolute = if dir.is_absolute() {
        dir.to_path_buf()
    } else {
        std::env::current_dir()
            .map_err(|e| e.to_string())?
            .join(dir)
    };
    if let Some(repo) = absolute.ancestors().find(|a| a.join(".git").exists()) {
        return Err(format!(
            "{} is inside the git checkout {}; credentials are written outside any repository (--out DIR)",
            absolute.display(),
            repo.display()
        ));
    }
    Ok(())
}

/// Writes `<slug>.private-key.pem` and `<slug>.env` (the settings `fleetbot serve` reads),
/// both 0600 in a 0700 directory; an existing file is never overwritten.
fn write_credentials(dir: &Path, app: &RegisteredApp) -> Result<(PathBuf, PathBuf), String> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let dir = std::fs::canonicalize(dir).map_err(|e| e.to_string())?;
    let key = dir.join(format!("{}.private-key.pem", app.slug));
    let env = dir.join(format!("{}.env", app.slug));
    let write = |path: &Path, text: &str| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        file.write_all(text.as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))
    };
    write(&key, app.pem.expose())?;
    let mut text = format!(
        "# fleetbot serve settings for the GitHub App {} (App ID {}), written by fleetbot register.\n# Secret: keep it out of every repository.\nFLEETBOT_APP_ID={}\nFLEETBOT_APP_PRIVATE_KEY_PATH={}\n",
        app.slug,
        app.id,
        app.id,
        key.display()
    );
    match &app.webhook_secret {
        Some(secret) => text.push_str(&format!("FLEETBOT_WEBHOOK_SECRET={}\n", secret.expose())),
        None => text.push_str(
            "# GitHub returned no webhook secret: set FLEETBOT_WEBHOOK_SECRET to the App's.\n",
        ),
    }
    write(&env, &text)?;
    Ok((env, key))
}

async fn page_handler(State(flow): State<Arc<Flow>>) -> Html<String> {
    Html(format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Register fleetbot</title>\n\
<style>body {{ font: 15px/1.5 system-ui, sans-serif; max-width: 40rem; margin: 3rem auto; }} pre {{ background: #f6f8fa; padding: 1rem; overflow-x: auto; }}</style></head>\n\
<body>\n<h1>Register the fleetbot GitHub App</h1>\n<p>GitHub will show the App this manifest describes; press <b>Create GitHub App</b> there. GitHub then sends you back here and <code>fleetbot register</code> keeps the App's credentials.</p>\n\
<form method=\"post\" action=\"{}\">\n<input type=\"hidden\" name=\"manifest\" value=\"{}\">\n<button type=\"submit\">Continue to GitHub</button>\n</form>\n<pre>{}</pre>\n</body></html>\n",
        escape(&flow.action),
        escape(&flow.manifest),
        escape(
            &serde_json::from_str::<serde_json::Value>(&flow.manifest)
                .and_then(|v| serde_json::to_string_pretty(&v))
                .unwrap_or_default()
        ),
    ))
}

/// The redirect's query: GitHub's `code` and the `state` this run gave it.
#[derive(Default)]
struct Callback {
    code: Option<String>,
    state: Option<String>,
}

impl Callback {
    fn parse(query: Option<&str>) -> Callback {
        let mut q = Callback::default();
        for (k, v) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
            match k.as_ref() {
                "code" => q.code = Some(v.into_owned()),
                "state" => q.state = Some(v.into_owned()),
                _ => {}
            }
        }
        q
    }
}

async fn callback(State(flow): State<Arc<Flow>>, RawQuery(query): RawQuery) -> Response {
    let q = Callback::parse(query.as_deref());
    // A redirect that does not carry this run's state was not started by this page.
    if q.state.as_deref() != Some(flow.state.as_str()) {
        return (
            StatusCode::BAD_REQUEST,
            Html(
                "<p>This answer does not belong to this registration (its state differs).</p>"
                    .to_string(),
            ),
        )
            .into_response();
    }
    let Some(code) = q.code.filter(|c| {
        !c.is_empty()
            && c.len() <= 128
            && c.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    }) else {
        return (
            StatusCode::BAD_REQUEST,
            Html("<p>GitHub's answer has no code.</p>".to_string()),
        )
            .into_response();
    };
    let Some(done) = flow.done.lock().await.take() else {
        return (
            StatusCode::CONFLICT,
            Html("<p>This registration is already done.</p>".to_string()),
        )
            .into_response();
    };
    let result = flow
        .client
        .create_app_from_manifest(&code)
        .await
        .map_err(|e| format!("GitHub refused the code: {e}"));
    let page = match &result {
        Ok(app) => format!(
            "<p>Registered <b>{}</b>. Its credentials are written where <code>fleetbot register</code> says; you can close this tab.</p>",
            escape(&app.slug)
        ),
        Err(e) => format!("<p>{}</p>", escape(e)),
    };
    let status = if result.is_ok() {
        StatusCode::OK
    } else {
        StatusCode::BAD_GATEWAY
    };
    let _ = done.send(result);
    (status, Html(page)).into_response()
}

/// HTML text and attribute escaping (minijinja's, as the dashboard's templates use).
fn escape(text: &str) -> String {
    minijinja::HtmlEscape(text).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_manifest_is_rehosted_and_keeps_least_privilege() {
        let m: serde_json::Value = serde_json::from_str(
            &manifest(
                "https://fleet.acme.test",
                "http://127.0.0.1:9/callback",
                Some("acme-fleetbot"),
            )
            .unwrap(),
        )
        .unwrap();
        assert_eq!(m["url"], "https://fleet.acme.test/");
        assert_eq!(
            m["hook_attributes"]["url"],
            "https://fleet.acme.test/webhook"
        );
        assert_eq!(m["redirect_url"], "http://127.0.0.1:9/callback");
        assert_eq!(m["name"], "acme-fleetbot");
        assert_eq!(m["default_permissions"]["contents"], "read");
        assert_eq!(m["public"], false);
    }

    #[test]
    fn credentials_are_never_written_inside_a_checkout() {
        let e = refuse_inside_git(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("target/x")
                .as_path(),
        )
        .unwrap_err();
        assert!(e.contains("inside the git checkout"), "{e}");
        assert!(refuse_inside_git(&std::env::temp_dir().join("fleetbot-register-test")).is_ok());
    }

    #[test]
    fn page_text_is_escaped() {
        let escaped = escape("<a href=\"x\">&'");
        assert!(!escaped.contains(['<', '>', '"', '\'']), "{escaped}");
        assert!(
            escaped.starts_with("&lt;a href=&quot;x&quot;&gt;&amp;"),
            "{escaped}"
        );
    }
}
