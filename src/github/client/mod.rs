//! The concrete GitHub REST client: App and installation auth, retries, pagination, and the
//! handful of calls the bot makes.
//!
//! Built on reqwest (rustls, ring) with an injectable base URL (`FLEETBOT_GITHUB_API_URL`), so
//! tests point the real client at a fake GitHub on loopback and GitHub Enterprise Server works
//! the same way. Responses are decoded into small local structs naming only what the bot reads.
//!
//! Every request goes through one seam, `transport`'s `send`, which holds the retry rules
//! (rate limits, backoff, never blindly repeating a content-creating call); `auth` supplies its
//! tokens. The per-resource modules (`comments`, `checks`, `contents`, `pulls`,
//! `collaborators`) only say what to send and how to read the answer.

mod auth;
mod checks;
mod collaborators;
mod comments;
mod contents;
mod error;
mod headers;
mod issues;
mod manifest;
mod meta;
mod metrics;
mod paging;
mod paths;
pub use paths::is_safe_repo_path;
mod pulls;
mod repos;
mod transport;

use std::sync::Arc;

use reqwest::Method;
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::Value;

use super::app::{AppCredentials, TokenCache};
use super::{DEFAULT_API_URL, RepoName};
use paths::seg;
use transport::{Answer, Call, JSON_ACCEPT, Repeat};

pub use checks::{
    Annotation, AnnotationLevel, CheckAction, CheckConclusion, CheckOutput, CheckRunPayload,
    CheckRunRef, MAX_ANNOTATIONS_PER_REQUEST, MAX_CHECK_ACTIONS, PublishedCheckRun, RunningCheck,
};
pub use collaborators::Permission;
pub use comments::{CommentNow, IssueComment, StickyComment};
pub use contents::MAX_CONTENT_BYTES;
pub use error::ClientError;
pub use issues::TrackedIssue;
pub use manifest::RegisteredApp;
pub use metrics::{ApiMetrics, ApiMetricsSnapshot, RateLimitState};
pub use pulls::{FileStatus, MAX_PR_FILES, PrFile, PullRequestInfo, PullState};
pub use repos::{OpenPullRequest, TreeFile};
pub use transport::RetryPolicy;

/// GitHub's REST API version the client speaks.
pub const API_VERSION: &str = "2022-11-28";

/// How to build a [`GitHubClient`].
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// REST base URL, `https://api.github.com` by default.
    pub api_url: String,
    /// The App's credentials; without them only unauthenticated calls can be made.
    pub credentials: Option<Arc<AppCredentials>>,
    /// A token used as it is for every repository call instead of App installation tokens:
    /// a GitHub Actions workflow's `GITHUB_TOKEN` (the Action's posting path). Calls that need
    /// the App itself fail with an authentication error.
    pub token: Option<super::SecretString>,
    /// Who the token's comments are authored by (`github-actions[bot]` for a workflow
    /// token), so the sticky comment is found again; without it `GET /app` says.
    pub identity: Option<AppIdentity>,
    /// Retry behaviour.
    pub retry: RetryPolicy,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            api_url: DEFAULT_API_URL.to_string(),
            credentials: None,
            token: None,
            identity: None,
            retry: RetryPolicy::default(),
        }
    }
}

/// The GitHub client shared by every job: one HTTP connection pool, one token cache.
#[derive(Clone)]
pub struct GitHubClient {
    inner: Arc<Inner>,
}

struct Inner {
    http: reqwest::Client,
    base: String,
    credentials: Option<Arc<AppCredentials>>,
    /// [`ClientConfig::token`].
    token: Option<super::SecretString>,
    tokens: TokenCache,
    /// Serialises token refreshes so concurrent jobs do not each mint one.
    refresh: tokio::sync::Mutex<()>,
    retry: RetryPolicy,
    metrics: ApiMetrics,
    /// `GET /app`, once read.
    identity: tokio::sync::OnceCell<AppIdentity>,
}

/// Who the App is on GitHub: its ID and slug, and so the login of its bot account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppIdentity {
    pub id: u64,
    pub slug: String,
}

impl AppIdentity {
    /// The account the App's comments are authored by: `<slug>[bot]`.
    pub fn bot_login(&self) -> String {
        format!("{}[bot]", self.slug)
    }
}

impl std::fmt::Debug for GitHubClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GitHubClient")
            .field("base", &self.inner.base)
            .field("credentials", &self.inner.credentials)
            .finish_non_exhaustive()
    }
}

impl GitHubClient {
    /// Builds a client. TLS uses rustls with the ring provider and the platform's roots.
    pub fn new(config: ClientConfig) -> Result<Self, ClientError> {
        // reqwest is built without a bundled crypto provider; ring is already in the build
        // (tonic uses it), so install it once as the process default. A second call is a no-op.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut headers = HeaderMap::new();
        headers.insert(
            "x-github-api-version",
            HeaderValue::from_static(API_VERSION),
        );
        let http = reqwest::Client::builder()
            .user_agent(concat!("fleetbot/", env!("CARGO_PKG_VERSION")))
            .default_headers(headers)
            // Redirects are not followed: a moved repository should surface, and an
            // Authorization header must never be replayed to another host.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| ClientError::Transport {
                op: "client/build",
                message: e.without_url().to_string(),
            })?;
        Ok(GitHubClient {
            inner: Arc::new(Inner {
                http,
                base: config.api_url.trim_end_matches('/').to_string(),
                credentials: config.credentials,
                token: config.token,
                tokens: TokenCache::default(),
                refresh: tokio::sync::Mutex::new(()),
                retry: config.retry,
                metrics: ApiMetrics::default(),
                identity: tokio::sync::OnceCell::new_with(config.identity),
            }),
        })
    }

    /// The base URL in use.
    pub fn base_url(&self) -> &str {
        &self.inner.base
    }

    /// API call counters and rate-limit headroom.
    pub fn metrics(&self) -> &ApiMetrics {
        &self.inner.metrics
    }

    /// The App credentials, when configured.
    pub fn credentials(&self) -> Option<&Arc<AppCredentials>> {
        self.inner.credentials.as_ref()
    }

    /// A client for one repository of one installation.
    pub fn repo(&self, installation_id: u64, repo: RepoName) -> RepoClient {
        RepoClient {
            client: self.clone(),
            installation_id,
            repo,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{}", self.inner.base, path)
    }
}

/// A client bound to one repository of one installation.
#[derive(Debug, Clone)]
pub struct RepoClient {
    client: GitHubClient,
    installation_id: u64,
    repo: RepoName,
}

impl RepoClient {
    /// The repository.
    pub fn repo(&self) -> &RepoName {
        &self.repo
    }

    /// The installation.
    pub fn installation_id(&self) -> u64 {
        self.installation_id
    }

    fn repo_path(&self, rest: &str) -> String {
        format!(
            "/repos/{}/{}{}",
            seg(&self.repo.owner),
            seg(&self.repo.name),
            rest
        )
    }

    /// A JSON write under this repository (`rest` after `/repos/{owner}/{name}`), with the
    /// installation's token; `repeat` says whether an unknown outcome may be retried.
    async fn write(
        &self,
        op: &'static str,
        method: Method,
        rest: &str,
        body: &Value,
        repeat: Repeat,
    ) -> Result<Answer, ClientError> {
        self.client
            .send(Call {
                op,
                method,
                url: self.client.url(&self.repo_path(rest)),
                query: vec![],
                body: Some(body),
                accept: JSON_ACCEPT,
                auth: transport::Auth::Installation(self.installation_id),
                repeat,
            })
            .await
    }
}

/// An RFC 3339 time as GitHub writes it (`2026-12-04T16:50:57Z`), in unix milliseconds.
pub(crate) fn timestamp_ms(text: &str) -> Option<i64> {
    text.parse::<jiff::Timestamp>()
        .ok()
        .map(|t| t.as_millisecond())
}
