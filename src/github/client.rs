//! The concrete GitHub REST client: App and installation auth, retries, pagination, and the
//! handful of calls the bot makes.
//!
//! Built on reqwest (rustls, ring) with an injectable base URL (`FLEETBOT_GITHUB_API_URL`), so
//! tests point the real client at a fake GitHub on loopback and GitHub Enterprise Server works
//! the same way. Responses are decoded into small local structs naming only what the bot reads.
//!
//! Retry rules, in order:
//! * a rate-limit answer (429, or 403 with `retry-after`, `x-ratelimit-remaining: 0` or a
//!   secondary-limit message) is waited out exactly as GitHub says, for every call, because
//!   GitHub refused it and nothing was created; a wait longer than [`RetryPolicy::max_wait`]
//!   ends the call with [`ClientError::RateLimited`] so the job can be rescheduled instead;
//! * a connection that was never made is retried for every call;
//! * a timeout or a 5xx is retried with exponential backoff only for calls that are safe to
//!   repeat (reads, and writes that overwrite); a content-creating call (a new comment, a new
//!   check run, an annotation batch) instead fails with [`ClientError::Ambiguous`], and the
//!   callers here look (by hidden marker or external id) before creating again;
//! * a 401 on an installation token drops the cached token and retries once with a new one.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use reqwest::header::{HeaderMap, HeaderValue};
use reqwest::{Method, StatusCode};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::app::{AppCredentials, InstallationToken, TokenCache, parse_github_time};
use super::{DEFAULT_API_URL, RepoName, SecretString};

/// GitHub's REST API version the client speaks.
pub const API_VERSION: &str = "2022-11-28";
/// At most this many annotations per check-run request (GitHub's limit).
pub const MAX_ANNOTATIONS_PER_REQUEST: usize = 50;
/// `GET /pulls/{n}/files` lists at most this many files, whatever the paging.
pub const MAX_PR_FILES: usize = 3000;
/// The page size used for every list call (GitHub's maximum).
const PER_PAGE: u32 = 100;
/// A paginated listing stops after this many pages, whatever `Link` says.
const MAX_PAGES: usize = 100;

/// How calls are retried.
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    /// Attempts per call, the first included.
    pub max_attempts: u32,
    /// Backoff before the second attempt; doubled for each further one.
    pub base_backoff: Duration,
    /// The longest rate-limit wait sat out in place; longer ones end the call.
    pub max_wait: Duration,
    /// Per-attempt timeout.
    pub attempt_timeout: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 3,
            base_backoff: Duration::from_secs(2),
            max_wait: Duration::from_secs(120),
            attempt_timeout: Duration::from_secs(15),
        }
    }
}

/// How to build a [`GitHubClient`].
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// REST base URL, `https://api.github.com` by default.
    pub api_url: String,
    /// The App's credentials; without them only unauthenticated calls can be made.
    pub credentials: Option<Arc<AppCredentials>>,
    /// Retry behaviour.
    pub retry: RetryPolicy,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            api_url: DEFAULT_API_URL.to_string(),
            credentials: None,
            retry: RetryPolicy::default(),
        }
    }
}

/// Why a call failed. No variant holds a token, and none holds request content.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// GitHub answered with an error status.
    #[error("GitHub {op} failed: HTTP {status}: {message}")]
    Status {
        op: &'static str,
        status: u16,
        /// GitHub's `message` field, when the answer had one.
        message: String,
    },
    /// A content-creating call may or may not have taken effect (timeout, 5xx): look before
    /// creating again.
    #[error("GitHub {op}: the outcome is unknown ({reason}); not repeated blindly")]
    Ambiguous { op: &'static str, reason: String },
    /// GitHub's rate limit asks for a longer wait than the policy sits out.
    #[error("GitHub {op}: rate limited for another {}s", retry_after.as_secs())]
    RateLimited {
        op: &'static str,
        retry_after: Duration,
    },
    /// The request could not be sent or the answer not read.
    #[error("GitHub {op}: {message}")]
    Transport { op: &'static str, message: String },
    /// The answer was not what the API describes.
    #[error("GitHub {op}: unexpected response: {message}")]
    Decode { op: &'static str, message: String },
    /// The App JWT could not be made, or no credentials are configured.
    #[error("GitHub App authentication: {0}")]
    Auth(String),
}

impl ClientError {
    /// The HTTP status, for errors that have one.
    pub fn status(&self) -> Option<u16> {
        match self {
            ClientError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// Counters of API calls and the last rate-limit figures GitHub sent.
#[derive(Debug, Default)]
pub struct ApiMetrics {
    inner: Mutex<ApiMetricsSnapshot>,
}

/// A copy of [`ApiMetrics`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApiMetricsSnapshot {
    /// Calls by (operation, HTTP status or `error`).
    pub calls: BTreeMap<(String, String), u64>,
    /// Rate limits by resource (`core`, `graphql`, …).
    pub rate_limits: BTreeMap<String, RateLimitState>,
}

/// GitHub's `x-ratelimit-*` headers from the latest answer of one resource.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RateLimitState {
    pub limit: u64,
    pub remaining: u64,
    /// Unix seconds when the window resets.
    pub reset: u64,
}

impl ApiMetrics {
    fn record(&self, op: &str, status: Option<u16>, headers: Option<&HeaderMap>) {
        let mut m = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let status = status.map_or_else(|| "error".to_string(), |s| s.to_string());
        *m.calls.entry((op.to_string(), status)).or_default() += 1;
        if let Some(h) = headers
            && let (Some(limit), Some(remaining)) = (
                header_u64(h, "x-ratelimit-limit"),
                header_u64(h, "x-ratelimit-remaining"),
            )
        {
            let resource = header_str(h, "x-ratelimit-resource").unwrap_or("core");
            m.rate_limits.insert(
                resource.to_string(),
                RateLimitState {
                    limit,
                    remaining,
                    reset: header_u64(h, "x-ratelimit-reset").unwrap_or(0),
                },
            );
        }
    }

    /// A copy of the figures.
    pub fn snapshot(&self) -> ApiMetricsSnapshot {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).clone()
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
    tokens: TokenCache,
    /// Serialises token refreshes so concurrent jobs do not each mint one.
    refresh: tokio::sync::Mutex<()>,
    retry: RetryPolicy,
    metrics: ApiMetrics,
}

impl std::fmt::Debug for GitHubClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GitHubClient")
            .field("base", &self.inner.base)
            .field("credentials", &self.inner.credentials)
            .finish_non_exhaustive()
    }
}

/// Whether a call may be repeated when its outcome is unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Repeat {
    /// Reads, and writes whose repetition leaves the same state.
    Safe,
    /// Writes that add something each time (comments, check runs, annotations).
    CreatesContent,
}

#[derive(Debug, Clone, Copy)]
enum Auth {
    /// The App JWT (installation-token exchange).
    App,
    /// An installation token.
    Installation(u64),
}

struct Call<'a> {
    op: &'static str,
    method: Method,
    url: String,
    query: Vec<(&'static str, String)>,
    body: Option<&'a Value>,
    accept: &'static str,
    auth: Auth,
    repeat: Repeat,
}

struct Answer {
    headers: HeaderMap,
    body: bytes::Bytes,
}

const JSON_ACCEPT: &str = "application/vnd.github+json";
const RAW_ACCEPT: &str = "application/vnd.github.raw+json";

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
                tokens: TokenCache::default(),
                refresh: tokio::sync::Mutex::new(()),
                retry: config.retry,
                metrics: ApiMetrics::default(),
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

    async fn token(&self, auth: Auth) -> Result<SecretString, ClientError> {
        let creds = self.inner.credentials.as_ref().ok_or_else(|| {
            ClientError::Auth("no GitHub App credentials are configured".to_string())
        })?;
        match auth {
            Auth::App => creds
                .jwt(SystemTime::now())
                .map_err(|e| ClientError::Auth(e.to_string())),
            Auth::Installation(id) => {
                if let Some(t) = self.inner.tokens.get(id, SystemTime::now()) {
                    return Ok(t.token);
                }
                let _guard = self.inner.refresh.lock().await;
                if let Some(t) = self.inner.tokens.get(id, SystemTime::now()) {
                    return Ok(t.token);
                }
                // Boxed: minting goes through `send`, which calls back here (with App auth).
                let token = Box::pin(self.mint_installation_token(id)).await?;
                let secret = token.token.clone();
                self.inner.tokens.put(id, token);
                Ok(secret)
            }
        }
    }

    /// `POST /app/installations/{id}/access_tokens` with the App JWT.
    async fn mint_installation_token(
        &self,
        installation_id: u64,
    ) -> Result<InstallationToken, ClientError> {
        #[derive(Deserialize)]
        struct TokenAnswer {
            token: String,
            expires_at: String,
        }
        let op = "apps/create-installation-access-token";
        let answer = self
            .send(Call {
                op,
                method: Method::POST,
                url: self.url(&format!(
                    "/app/installations/{installation_id}/access_tokens"
                )),
                query: vec![],
                body: None,
                accept: JSON_ACCEPT,
                auth: Auth::App,
                // Minting a token creates nothing visible; a second token is harmless.
                repeat: Repeat::Safe,
            })
            .await?;
        let t: TokenAnswer = decode(op, &answer.body)?;
        let expires_at = parse_github_time(&t.expires_at).ok_or_else(|| ClientError::Decode {
            op,
            message: "expires_at is not an ISO 8601 UTC time".into(),
        })?;
        Ok(InstallationToken {
            token: SecretString::new(t.token),
            expires_at,
        })
    }

    /// Sends one call under the retry rules of the module docs.
    async fn send(&self, call: Call<'_>) -> Result<Answer, ClientError> {
        let policy = &self.inner.retry;
        let mut attempt = 0u32;
        let mut refreshed_token = false;
        loop {
            attempt += 1;
            let token = self.token(call.auth).await?;
            let mut request = self
                .inner
                .http
                .request(call.method.clone(), &call.url)
                .header(reqwest::header::ACCEPT, call.accept)
                .bearer_auth(token.expose())
                .timeout(policy.attempt_timeout);
            if !call.query.is_empty() {
                request = request.query(&call.query);
            }
            if let Some(body) = call.body {
                request = request.json(body);
            }
            let result = request.send().await;
            let response = match result {
                Ok(r) => r,
                Err(e) => {
                    self.inner.metrics.record(call.op, None, None);
                    let never_sent = e.is_connect() && !e.is_timeout();
                    let message = e.without_url().to_string();
                    if attempt < policy.max_attempts && (never_sent || call.repeat == Repeat::Safe)
                    {
                        tracing::warn!(op = call.op, attempt, "GitHub call failed: {message}");
                        tokio::time::sleep(backoff(policy, attempt)).await;
                        continue;
                    }
                    if call.repeat == Repeat::CreatesContent && !never_sent {
                        return Err(ClientError::Ambiguous {
                            op: call.op,
                            reason: message,
                        });
                    }
                    return Err(ClientError::Transport {
                        op: call.op,
                        message,
                    });
                }
            };
            let status = response.status();
            let headers = response.headers().clone();
            self.inner
                .metrics
                .record(call.op, Some(status.as_u16()), Some(&headers));
            let body = match response.bytes().await {
                Ok(b) => b,
                Err(e) => {
                    let message = e.without_url().to_string();
                    if call.repeat == Repeat::CreatesContent {
                        return Err(ClientError::Ambiguous {
                            op: call.op,
                            reason: message,
                        });
                    }
                    if attempt < policy.max_attempts {
                        tokio::time::sleep(backoff(policy, attempt)).await;
                        continue;
                    }
                    return Err(ClientError::Transport {
                        op: call.op,
                        message,
                    });
                }
            };
            if status.is_success() || status == StatusCode::NOT_MODIFIED {
                return Ok(Answer { headers, body });
            }
            if status == StatusCode::UNAUTHORIZED
                && let Auth::Installation(id) = call.auth
                && !refreshed_token
            {
                // The token was revoked or expired early; GitHub did nothing with the call.
                self.inner.tokens.invalidate(id);
                refreshed_token = true;
                attempt -= 1;
                continue;
            }
            if let Some(wait) = rate_limit_wait(status, &headers, &body, attempt, policy) {
                if wait > policy.max_wait || attempt >= policy.max_attempts.max(1) * 2 {
                    return Err(ClientError::RateLimited {
                        op: call.op,
                        retry_after: wait,
                    });
                }
                tracing::warn!(
                    op = call.op,
                    wait_s = wait.as_secs_f64(),
                    "GitHub rate limit; waiting as asked"
                );
                tokio::time::sleep(wait).await;
                continue;
            }
            if status.is_server_error() {
                if call.repeat == Repeat::Safe && attempt < policy.max_attempts {
                    tokio::time::sleep(backoff(policy, attempt)).await;
                    continue;
                }
                if call.repeat == Repeat::CreatesContent {
                    return Err(ClientError::Ambiguous {
                        op: call.op,
                        reason: format!("HTTP {}", status.as_u16()),
                    });
                }
            }
            return Err(ClientError::Status {
                op: call.op,
                status: status.as_u16(),
                message: error_message(&body),
            });
        }
    }

    async fn get_json<T: DeserializeOwned>(
        &self,
        op: &'static str,
        installation_id: u64,
        path: &str,
        query: Vec<(&'static str, String)>,
    ) -> Result<T, ClientError> {
        let answer = self
            .send(Call {
                op,
                method: Method::GET,
                url: self.url(path),
                query,
                body: None,
                accept: JSON_ACCEPT,
                auth: Auth::Installation(installation_id),
                repeat: Repeat::Safe,
            })
            .await?;
        decode(op, &answer.body)
    }

    /// Every item of a paginated list, following `Link: rel="next"` on the same host.
    async fn get_all<T: DeserializeOwned>(
        &self,
        op: &'static str,
        installation_id: u64,
        path: &str,
        query: Vec<(&'static str, String)>,
        max_items: usize,
    ) -> Result<(Vec<T>, bool), ClientError> {
        let mut items = Vec::new();
        let mut url = self.url(path);
        let mut query = query;
        query.push(("per_page", PER_PAGE.to_string()));
        for _ in 0..MAX_PAGES {
            let answer = self
                .send(Call {
                    op,
                    method: Method::GET,
                    url: url.clone(),
                    query: std::mem::take(&mut query),
                    body: None,
                    accept: JSON_ACCEPT,
                    auth: Auth::Installation(installation_id),
                    repeat: Repeat::Safe,
                })
                .await?;
            let page: Vec<T> = decode(op, &answer.body)?;
            items.extend(page);
            if items.len() >= max_items {
                items.truncate(max_items);
                return Ok((items, true));
            }
            match next_link(&answer.headers) {
                // The next URL carries its own query; only follow it on our own API host, so
                // a token is never sent elsewhere.
                Some(next) if next.starts_with(&format!("{}/", self.inner.base)) => url = next,
                _ => return Ok((items, false)),
            }
        }
        Ok((items, true))
    }
}

fn backoff(policy: &RetryPolicy, attempt: u32) -> Duration {
    policy
        .base_backoff
        .saturating_mul(1u32 << (attempt.saturating_sub(1)).min(10))
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name)?.to_str().ok()
}

fn header_u64(headers: &HeaderMap, name: &str) -> Option<u64> {
    header_str(headers, name)?.trim().parse().ok()
}

/// How long GitHub asks us to wait, when the answer is a rate-limit refusal.
fn rate_limit_wait(
    status: StatusCode,
    headers: &HeaderMap,
    body: &[u8],
    attempt: u32,
    policy: &RetryPolicy,
) -> Option<Duration> {
    if status != StatusCode::TOO_MANY_REQUESTS && status != StatusCode::FORBIDDEN {
        return None;
    }
    if let Some(secs) = header_u64(headers, "retry-after") {
        return Some(Duration::from_secs(secs));
    }
    if header_u64(headers, "x-ratelimit-remaining") == Some(0)
        && let Some(reset) = header_u64(headers, "x-ratelimit-reset")
    {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        // One second more, so the request lands after the reset rather than on it.
        return Some(Duration::from_secs(reset.saturating_sub(now) + 1));
    }
    let secondary = String::from_utf8_lossy(body)
        .to_ascii_lowercase()
        .contains("secondary rate limit");
    if status == StatusCode::TOO_MANY_REQUESTS || secondary {
        // GitHub: with no header to go by, wait at least a minute, then back off further.
        return Some(Duration::from_secs(60).max(backoff(policy, attempt)));
    }
    None
}

fn error_message(body: &[u8]) -> String {
    #[derive(Deserialize)]
    struct GitHubError {
        message: Option<String>,
    }
    serde_json::from_slice::<GitHubError>(body)
        .ok()
        .and_then(|e| e.message)
        .map(|m| m.chars().take(300).collect())
        .unwrap_or_default()
}

fn decode<T: DeserializeOwned>(op: &'static str, body: &[u8]) -> Result<T, ClientError> {
    serde_json::from_slice(body).map_err(|e| ClientError::Decode {
        op,
        message: e.to_string(),
    })
}

/// The `rel="next"` URL of a `Link` header.
fn next_link(headers: &HeaderMap) -> Option<String> {
    let link = header_str(headers, "link")?;
    link.split(',').find_map(|part| {
        let (url, params) = part.split_once(';')?;
        params
            .split(';')
            .any(|p| p.trim() == "rel=\"next\"")
            .then(|| {
                url.trim()
                    .trim_start_matches('<')
                    .trim_end_matches('>')
                    .to_string()
            })
    })
}

/// Percent-encodes one path segment (RFC 3986 unreserved characters stay).
fn seg(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A repository path, each segment encoded, `/` kept.
fn path_segments(path: &str) -> String {
    path.split('/')
        .filter(|s| !s.is_empty())
        .map(seg)
        .collect::<Vec<_>>()
        .join("/")
}

/// One changed file of a pull request (`GET /pulls/{n}/files`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct PrFile {
    pub filename: String,
    /// `added`, `removed`, `modified`, `renamed`, `copied`, `changed` or `unchanged`.
    pub status: String,
    #[serde(default)]
    pub previous_filename: Option<String>,
    /// The unified diff hunks; absent for binary or very large changes.
    #[serde(default)]
    pub patch: Option<String>,
}

/// What the bot reads of a pull request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullRequestInfo {
    pub number: u64,
    pub state: String,
    pub draft: bool,
    pub head_sha: String,
    pub head_ref: String,
    pub head_repo: Option<String>,
    pub base_sha: String,
    pub base_ref: String,
}

/// A comment on an issue or pull request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssueComment {
    pub id: u64,
    pub body: String,
    pub author: String,
    pub author_is_bot: bool,
}

/// A collaborator's access, as `GET /collaborators/{user}/permission` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Permission {
    None,
    Read,
    Triage,
    Write,
    Maintain,
    Admin,
}

impl Permission {
    /// Parses a role or legacy permission name; custom role names are `None`.
    pub fn from_name(name: &str) -> Option<Permission> {
        Some(match name {
            "none" => Permission::None,
            "read" | "pull" => Permission::Read,
            "triage" => Permission::Triage,
            "write" | "push" => Permission::Write,
            "maintain" => Permission::Maintain,
            "admin" => Permission::Admin,
            _ => return None,
        })
    }

    /// The lower-case name.
    pub fn as_str(&self) -> &'static str {
        match self {
            Permission::None => "none",
            Permission::Read => "read",
            Permission::Triage => "triage",
            Permission::Write => "write",
            Permission::Maintain => "maintain",
            Permission::Admin => "admin",
        }
    }
}

/// How a check run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckConclusion {
    Success,
    Failure,
    Neutral,
    Skipped,
    ActionRequired,
    Cancelled,
    TimedOut,
}

impl CheckConclusion {
    /// The API's name for it.
    pub fn as_str(&self) -> &'static str {
        match self {
            CheckConclusion::Success => "success",
            CheckConclusion::Failure => "failure",
            CheckConclusion::Neutral => "neutral",
            CheckConclusion::Skipped => "skipped",
            CheckConclusion::ActionRequired => "action_required",
            CheckConclusion::Cancelled => "cancelled",
            CheckConclusion::TimedOut => "timed_out",
        }
    }
}

/// An annotation's severity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AnnotationLevel {
    Notice,
    Warning,
    Failure,
}

/// One annotation on a line of a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Annotation {
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
    /// Only when `start_line == end_line` (GitHub's rule).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_column: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_column: Option<u32>,
    pub annotation_level: AnnotationLevel,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// A check run's `output`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckOutput {
    pub title: String,
    /// At most 65,535 characters.
    pub summary: String,
    /// At most 65,535 characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Any number; the client sends them 50 per request.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub annotations: Vec<Annotation>,
}

/// A completed check run, as the bot reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckRunPayload {
    pub name: String,
    pub head_sha: String,
    /// Fleetbot's reference (the plan digest); also how a run is found again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub external_id: Option<String>,
    pub conclusion: CheckConclusion,
    pub output: CheckOutput,
}

/// What publishing a check run did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PublishedCheckRun {
    pub id: u64,
    /// Requests made (one create, then one update per further batch of 50 annotations).
    pub requests: usize,
}

/// What happened to the sticky comment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StickyComment {
    Created(u64),
    Updated(u64),
}

/// A client bound to one repository of one installation.
#[derive(Debug, Clone)]
pub struct RepoClient {
    client: GitHubClient,
    installation_id: u64,
    repo: RepoName,
}

#[derive(Deserialize)]
struct WireUser {
    login: String,
    #[serde(rename = "type", default)]
    kind: String,
}

#[derive(Deserialize)]
struct WireComment {
    id: u64,
    #[serde(default)]
    body: Option<String>,
    user: Option<WireUser>,
}

impl From<WireComment> for IssueComment {
    fn from(c: WireComment) -> Self {
        let (author, kind) = c.user.map(|u| (u.login, u.kind)).unwrap_or_default();
        IssueComment {
            id: c.id,
            body: c.body.unwrap_or_default(),
            author,
            author_is_bot: kind == "Bot",
        }
    }
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
                auth: Auth::Installation(self.installation_id),
                repeat,
            })
            .await
    }

    /// `GET /repos/{o}/{r}`: the default branch.
    pub async fn default_branch(&self) -> Result<String, ClientError> {
        #[derive(Deserialize)]
        struct Repo {
            default_branch: String,
        }
        let r: Repo = self
            .client
            .get_json(
                "repos/get",
                self.installation_id,
                &self.repo_path(""),
                vec![],
            )
            .await?;
        Ok(r.default_branch)
    }

    /// `GET /repos/{o}/{r}/pulls/{n}`.
    pub async fn pull_request(&self, number: u64) -> Result<PullRequestInfo, ClientError> {
        #[derive(Deserialize)]
        struct Repo {
            full_name: String,
        }
        #[derive(Deserialize)]
        struct Ref {
            sha: String,
            #[serde(rename = "ref")]
            name: String,
            repo: Option<Repo>,
        }
        #[derive(Deserialize)]
        struct Pr {
            number: u64,
            state: String,
            #[serde(default)]
            draft: bool,
            head: Ref,
            base: Ref,
        }
        let pr: Pr = self
            .client
            .get_json(
                "pulls/get",
                self.installation_id,
                &self.repo_path(&format!("/pulls/{number}")),
                vec![],
            )
            .await?;
        Ok(PullRequestInfo {
            number: pr.number,
            state: pr.state,
            draft: pr.draft,
            head_sha: pr.head.sha,
            head_ref: pr.head.name,
            head_repo: pr.head.repo.map(|r| r.full_name),
            base_sha: pr.base.sha,
            base_ref: pr.base.name,
        })
    }

    /// `GET /repos/{o}/{r}/pulls/{n}/files`, every page. The flag is true when the listing
    /// hit GitHub's 3,000-file ceiling, so some changed files are not in it.
    pub async fn pull_request_files(
        &self,
        number: u64,
    ) -> Result<(Vec<PrFile>, bool), ClientError> {
        self.client
            .get_all(
                "pulls/list-files",
                self.installation_id,
                &self.repo_path(&format!("/pulls/{number}/files")),
                vec![],
                MAX_PR_FILES,
            )
            .await
    }

    /// The bytes of `path` at `git_ref`; `None` when it does not exist there (or is not a
    /// file). Files over 1 MB, which the JSON form leaves empty, are fetched raw.
    pub async fn file_content(
        &self,
        path: &str,
        git_ref: &str,
    ) -> Result<Option<Vec<u8>>, ClientError> {
        #[derive(Deserialize)]
        struct Content {
            #[serde(rename = "type")]
            kind: String,
            #[serde(default)]
            encoding: Option<String>,
            #[serde(default)]
            content: Option<String>,
        }
        let op = "repos/get-content";
        let url = self
            .client
            .url(&self.repo_path(&format!("/contents/{}", path_segments(path))));
        let query = vec![("ref", git_ref.to_string())];
        let answer = self
            .client
            .send(Call {
                op,
                method: Method::GET,
                url: url.clone(),
                query: query.clone(),
                body: None,
                accept: JSON_ACCEPT,
                auth: Auth::Installation(self.installation_id),
                repeat: Repeat::Safe,
            })
            .await;
        let answer = match answer {
            Err(e) if e.status() == Some(404) => return Ok(None),
            other => other?,
        };
        // A directory answers with a JSON array.
        let Ok(content) = serde_json::from_slice::<Content>(&answer.body) else {
            return Ok(None);
        };
        if content.kind != "file" {
            return Ok(None);
        }
        match (content.encoding.as_deref(), content.content) {
            (Some("base64"), Some(text)) => {
                let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
                base64::engine::general_purpose::STANDARD
                    .decode(compact)
                    .map(Some)
                    .map_err(|e| ClientError::Decode {
                        op,
                        message: format!("content is not base64: {e}"),
                    })
            }
            _ => {
                let raw = self
                    .client
                    .send(Call {
                        op,
                        method: Method::GET,
                        url,
                        query,
                        body: None,
                        accept: RAW_ACCEPT,
                        auth: Auth::Installation(self.installation_id),
                        repeat: Repeat::Safe,
                    })
                    .await?;
                Ok(Some(raw.body.to_vec()))
            }
        }
    }

    /// Every comment of an issue or pull request.
    pub async fn issue_comments(&self, number: u64) -> Result<Vec<IssueComment>, ClientError> {
        let (comments, _) = self
            .client
            .get_all::<WireComment>(
                "issues/list-comments",
                self.installation_id,
                &self.repo_path(&format!("/issues/{number}/comments")),
                vec![],
                usize::MAX,
            )
            .await?;
        Ok(comments.into_iter().map(IssueComment::from).collect())
    }

    /// The bot's own comment carrying `marker`: the first by a bot account that holds it.
    pub async fn find_marked_comment(
        &self,
        number: u64,
        marker: &str,
    ) -> Result<Option<IssueComment>, ClientError> {
        Ok(self
            .issue_comments(number)
            .await?
            .into_iter()
            .find(|c| c.author_is_bot && c.body.contains(marker)))
    }

    /// `POST /issues/{n}/comments`. Not repeated on an unknown outcome.
    pub async fn create_comment(&self, number: u64, body: &str) -> Result<u64, ClientError> {
        let payload = serde_json::json!({ "body": body });
        let answer = self
            .write(
                "issues/create-comment",
                Method::POST,
                &format!("/issues/{number}/comments"),
                &payload,
                Repeat::CreatesContent,
            )
            .await?;
        let c: WireComment = decode("issues/create-comment", &answer.body)?;
        Ok(c.id)
    }

    /// `PATCH /issues/comments/{id}`: overwriting is safe to repeat.
    pub async fn update_comment(&self, comment_id: u64, body: &str) -> Result<(), ClientError> {
        let payload = serde_json::json!({ "body": body });
        self.write(
            "issues/update-comment",
            Method::PATCH,
            &format!("/issues/comments/{comment_id}"),
            &payload,
            Repeat::Safe,
        )
        .await?;
        Ok(())
    }

    /// Edits the comment holding `marker`, or creates it. When a create's outcome is unknown,
    /// looks again before trying once more, so the pull request never gets two.
    pub async fn upsert_marked_comment(
        &self,
        number: u64,
        marker: &str,
        body: &str,
    ) -> Result<StickyComment, ClientError> {
        if let Some(existing) = self.find_marked_comment(number, marker).await? {
            if existing.body != body {
                self.update_comment(existing.id, body).await?;
            }
            return Ok(StickyComment::Updated(existing.id));
        }
        match self.create_comment(number, body).await {
            Ok(id) => Ok(StickyComment::Created(id)),
            Err(ClientError::Ambiguous { .. }) => {
                if let Some(existing) = self.find_marked_comment(number, marker).await? {
                    return Ok(StickyComment::Created(existing.id));
                }
                self.create_comment(number, body)
                    .await
                    .map(StickyComment::Created)
            }
            Err(e) => Err(e),
        }
    }

    /// `POST /issues/comments/{id}/reactions`; GitHub answers 200 for a repeat, so it is safe.
    pub async fn add_reaction(&self, comment_id: u64, content: &str) -> Result<(), ClientError> {
        let payload = serde_json::json!({ "content": content });
        self.write(
            "reactions/create-for-issue-comment",
            Method::POST,
            &format!("/issues/comments/{comment_id}/reactions"),
            &payload,
            Repeat::Safe,
        )
        .await?;
        Ok(())
    }

    /// `GET /collaborators/{user}/permission`: the role when it is a built-in one, else the
    /// legacy permission (custom roles map to their base). 404 means no access.
    pub async fn collaborator_permission(&self, user: &str) -> Result<Permission, ClientError> {
        #[derive(Deserialize)]
        struct Answer {
            permission: String,
            #[serde(default)]
            role_name: Option<String>,
        }
        let answer: Result<Answer, _> = self
            .client
            .get_json(
                "repos/get-collaborator-permission-level",
                self.installation_id,
                &self.repo_path(&format!("/collaborators/{}/permission", seg(user))),
                vec![],
            )
            .await;
        match answer {
            Ok(a) => Ok(a
                .role_name
                .as_deref()
                .and_then(Permission::from_name)
                .or_else(|| Permission::from_name(&a.permission))
                .unwrap_or(Permission::None)),
            Err(e) if e.status() == Some(404) => Ok(Permission::None),
            Err(e) => Err(e),
        }
    }

    /// Creates a completed check run with its first 50 annotations, then adds the rest 50 per
    /// update. If the create's outcome is unknown, an existing run with the same name and
    /// external id on the head commit is used instead of creating a second one.
    pub async fn publish_check_run(
        &self,
        run: &CheckRunPayload,
    ) -> Result<PublishedCheckRun, ClientError> {
        let mut batches = run.output.annotations.chunks(MAX_ANNOTATIONS_PER_REQUEST);
        let first = batches.next().unwrap_or(&[]);
        let mut body = serde_json::to_value(run).map_err(|e| ClientError::Decode {
            op: "checks/create",
            message: e.to_string(),
        })?;
        body["status"] = Value::from("completed");
        set_annotations(&mut body["output"], first);
        let mut requests = 1;
        let id = match self.create_check_run(&body).await {
            Ok(id) => id,
            Err(ClientError::Ambiguous { .. }) => {
                requests += 1;
                match self.find_check_run(run).await? {
                    Some(id) => {
                        // The first create did land: bring it to this payload's first batch.
                        requests += 1;
                        self.update_check_run(id, &body).await?;
                        id
                    }
                    None => {
                        requests += 1;
                        self.create_check_run(&body).await?
                    }
                }
            }
            Err(e) => return Err(e),
        };
        for batch in batches {
            let mut output = serde_json::json!({
                "title": run.output.title,
                "summary": run.output.summary,
            });
            set_annotations(&mut output, batch);
            self.update_check_run(id, &serde_json::json!({ "output": output }))
                .await?;
            requests += 1;
        }
        Ok(PublishedCheckRun { id, requests })
    }

    async fn create_check_run(&self, body: &Value) -> Result<u64, ClientError> {
        #[derive(Deserialize)]
        struct Created {
            id: u64,
        }
        let op = "checks/create";
        let answer = self
            .write(
                op,
                Method::POST,
                "/check-runs",
                body,
                Repeat::CreatesContent,
            )
            .await?;
        Ok(decode::<Created>(op, &answer.body)?.id)
    }

    /// `PATCH /check-runs/{id}`. Annotations accumulate, so an update that carries some is a
    /// content-creating call.
    async fn update_check_run(&self, id: u64, body: &Value) -> Result<(), ClientError> {
        let adds = body["output"]["annotations"]
            .as_array()
            .is_some_and(|a| !a.is_empty());
        let repeat = if adds {
            Repeat::CreatesContent
        } else {
            Repeat::Safe
        };
        self.write(
            "checks/update",
            Method::PATCH,
            &format!("/check-runs/{id}"),
            body,
            repeat,
        )
        .await?;
        Ok(())
    }

    /// A run on the head commit with this name and external id, made by any App (the
    /// installation token only sees its own App's runs as writable, which is what matters).
    async fn find_check_run(&self, run: &CheckRunPayload) -> Result<Option<u64>, ClientError> {
        #[derive(Deserialize)]
        struct Run {
            id: u64,
            external_id: Option<String>,
        }
        #[derive(Deserialize)]
        struct Runs {
            check_runs: Vec<Run>,
        }
        let runs: Runs = self
            .client
            .get_json(
                "checks/list-for-ref",
                self.installation_id,
                &self.repo_path(&format!("/commits/{}/check-runs", seg(&run.head_sha))),
                vec![
                    ("check_name", run.name.clone()),
                    ("filter", "latest".to_string()),
                ],
            )
            .await?;
        Ok(runs
            .check_runs
            .into_iter()
            .find(|r| r.external_id == run.external_id)
            .map(|r| r.id))
    }
}

fn set_annotations(output: &mut Value, batch: &[Annotation]) {
    if let Some(map) = output.as_object_mut() {
        if batch.is_empty() {
            map.remove("annotations");
        } else {
            map.insert(
                "annotations".into(),
                serde_json::to_value(batch).unwrap_or_default(),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn link_header_next() {
        let h = headers(&[(
            "link",
            r#"<https://api.github.com/repositories/1/pulls/2/files?page=2>; rel="next", <https://api.github.com/repositories/1/pulls/2/files?page=5>; rel="last""#,
        )]);
        assert_eq!(
            next_link(&h).as_deref(),
            Some("https://api.github.com/repositories/1/pulls/2/files?page=2")
        );
        let last_only = headers(&[("link", r#"<https://x/?page=1>; rel="prev""#)]);
        assert_eq!(next_link(&last_only), None);
    }

    #[test]
    fn rate_limit_waits_follow_githubs_headers() {
        let p = RetryPolicy::default();
        let h = headers(&[("retry-after", "7")]);
        assert_eq!(
            rate_limit_wait(StatusCode::FORBIDDEN, &h, b"", 1, &p),
            Some(Duration::from_secs(7))
        );
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let reset = (now + 30).to_string();
        let h = headers(&[
            ("x-ratelimit-remaining", "0"),
            ("x-ratelimit-reset", &reset),
        ]);
        let wait = rate_limit_wait(StatusCode::FORBIDDEN, &h, b"", 1, &p).unwrap();
        assert!((29..=31).contains(&wait.as_secs()), "{wait:?}");
        let body = br#"{"message":"You have exceeded a secondary rate limit."}"#;
        assert_eq!(
            rate_limit_wait(StatusCode::FORBIDDEN, &HeaderMap::new(), body, 1, &p),
            Some(Duration::from_secs(60))
        );
        // A plain 403 (no permission) is not a rate limit.
        let h = headers(&[("x-ratelimit-remaining", "4999")]);
        assert_eq!(
            rate_limit_wait(
                StatusCode::FORBIDDEN,
                &h,
                b"{\"message\":\"Resource not accessible by integration\"}",
                1,
                &p
            ),
            None
        );
        assert_eq!(
            rate_limit_wait(StatusCode::BAD_GATEWAY, &h, b"", 1, &p),
            None
        );
    }

    #[test]
    fn path_encoding_keeps_slashes_between_segments() {
        assert_eq!(
            path_segments("fleets/prod a/x.yaml"),
            "fleets/prod%20a/x.yaml"
        );
        assert_eq!(seg("a#b?c"), "a%23b%3Fc");
    }

    #[test]
    fn permissions_order_and_names() {
        assert!(Permission::Admin > Permission::Maintain);
        assert!(Permission::Write > Permission::Triage);
        assert_eq!(Permission::from_name("push"), Some(Permission::Write));
        assert_eq!(Permission::from_name("custom-role"), None);
        assert_eq!(Permission::Maintain.as_str(), "maintain");
    }

    #[test]
    fn check_run_payload_serializes_like_the_api() {
        let run = CheckRunPayload {
            name: "fleet/privacy".into(),
            head_sha: "a".repeat(40),
            external_id: None,
            conclusion: CheckConclusion::Skipped,
            output: CheckOutput {
                title: "t".into(),
                summary: "s".into(),
                text: None,
                annotations: vec![],
            },
        };
        let v = serde_json::to_value(&run).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"name": "fleet/privacy", "head_sha": "a".repeat(40),
                "conclusion": "skipped", "output": {"title": "t", "summary": "s"}})
        );
    }
}
