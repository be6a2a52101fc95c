//! The one seam every GitHub request goes through: `send`, with the retry rules.
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
//!   callers look (by hidden marker or external id) before creating again;
//! * a 401 on an installation token drops the cached token and retries once with a new one.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::header::HeaderMap;
use reqwest::{Method, StatusCode};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::headers::header_u64;
use super::{ClientError, GitHubClient};
use crate::github::SecretString;

/// Which identity a call is made as (the tokens themselves are minted in `auth`).
#[derive(Debug, Clone, Copy)]
pub(super) enum Auth {
    /// The App JWT (installation-token exchange).
    App,
    /// An installation token.
    Installation(u64),
    /// No credentials (the manifest code exchange: the one-time code is the credential).
    Anonymous,
}

pub(super) const JSON_ACCEPT: &str = "application/vnd.github+json";
pub(super) const RAW_ACCEPT: &str = "application/vnd.github.raw+json";

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

/// Whether a call may be repeated when its outcome is unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Repeat {
    /// Reads, and writes whose repetition leaves the same state.
    Safe,
    /// Writes that add something each time (comments, check runs, annotations).
    CreatesContent,
}

pub(super) struct Call<'a> {
    pub op: &'static str,
    pub method: Method,
    pub url: String,
    pub query: Vec<(&'static str, String)>,
    pub body: Option<&'a Value>,
    pub accept: &'static str,
    pub auth: Auth,
    pub repeat: Repeat,
}

pub(super) struct Answer {
    pub headers: HeaderMap,
    pub body: bytes::Bytes,
}

/// What one attempt leaves the call loop to do.
enum Next {
    Finish(Result<Answer, ClientError>),
    /// Try again after this long; the attempt counts.
    RetryAfter(Duration),
    /// Try again at once without counting the attempt (a refused token was replaced).
    RetryUncounted,
}

impl GitHubClient {
    /// Sends one call under the retry rules of the module docs.
    pub(super) async fn send(&self, call: Call<'_>) -> Result<Answer, ClientError> {
        let mut attempt = 0u32;
        let mut refreshed_token = false;
        loop {
            attempt += 1;
            match self.attempt(&call, attempt, &mut refreshed_token).await {
                Next::Finish(result) => return result,
                Next::RetryAfter(wait) => tokio::time::sleep(wait).await,
                Next::RetryUncounted => attempt -= 1,
            }
        }
    }

    async fn attempt(&self, call: &Call<'_>, attempt: u32, refreshed_token: &mut bool) -> Next {
        let token = match call.auth {
            Auth::Anonymous => None,
            auth => match self.token(auth).await {
                Ok(token) => Some(token),
                Err(e) => return Next::Finish(Err(e)),
            },
        };
        let response = match self.request(call, token.as_ref()).send().await {
            Ok(r) => r,
            Err(e) => return self.not_answered(call, attempt, e),
        };
        let status = response.status();
        let headers = response.headers().clone();
        self.inner
            .metrics
            .record(call.op, Some(status.as_u16()), Some(&headers));
        match response.bytes().await {
            Ok(body) => self.judge(call, attempt, refreshed_token, status, headers, body),
            Err(e) => self.not_read(call, attempt, e),
        }
    }

    fn request(&self, call: &Call<'_>, token: Option<&SecretString>) -> reqwest::RequestBuilder {
        let mut request = self
            .inner
            .http
            .request(call.method.clone(), &call.url)
            .header(reqwest::header::ACCEPT, call.accept)
            .timeout(self.inner.retry.attempt_timeout);
        if let Some(token) = token {
            request = request.bearer_auth(token.expose());
        }
        if !call.query.is_empty() {
            request = request.query(&call.query);
        }
        if let Some(body) = call.body {
            request = request.json(body);
        }
        request
    }

    /// No answer came: retried when the request never left or the call is safe to repeat.
    fn not_answered(&self, call: &Call<'_>, attempt: u32, e: reqwest::Error) -> Next {
        let policy = &self.inner.retry;
        self.inner.metrics.record(call.op, None, None);
        let never_sent = e.is_connect() && !e.is_timeout();
        let message = e.without_url().to_string();
        if attempt < policy.max_attempts && (never_sent || call.repeat == Repeat::Safe) {
            tracing::warn!(op = call.op, attempt, "GitHub call failed: {message}");
            return Next::RetryAfter(backoff(policy, attempt));
        }
        if call.repeat == Repeat::CreatesContent && !never_sent {
            return ambiguous(call, message);
        }
        Next::Finish(Err(ClientError::Transport {
            op: call.op,
            message,
        }))
    }

    /// The answer's body could not be read: GitHub acted on the call, so only a safe one is
    /// repeated.
    fn not_read(&self, call: &Call<'_>, attempt: u32, e: reqwest::Error) -> Next {
        let policy = &self.inner.retry;
        let message = e.without_url().to_string();
        if call.repeat == Repeat::CreatesContent {
            return ambiguous(call, message);
        }
        if attempt < policy.max_attempts {
            return Next::RetryAfter(backoff(policy, attempt));
        }
        Next::Finish(Err(ClientError::Transport {
            op: call.op,
            message,
        }))
    }

    /// What GitHub's status says to do: done, a fresh token, a rate-limit wait, a backoff.
    fn judge(
        &self,
        call: &Call<'_>,
        attempt: u32,
        refreshed_token: &mut bool,
        status: StatusCode,
        headers: HeaderMap,
        body: bytes::Bytes,
    ) -> Next {
        let policy = &self.inner.retry;
        if status.is_success() || status == StatusCode::NOT_MODIFIED {
            return Next::Finish(Ok(Answer { headers, body }));
        }
        // The token was revoked or expired early; GitHub did nothing with the call.
        if status == StatusCode::UNAUTHORIZED
            && !*refreshed_token
            && self.drop_refused_token(call.auth)
        {
            *refreshed_token = true;
            return Next::RetryUncounted;
        }
        if let Some(wait) = rate_limit_wait(status, &headers, &body, attempt, policy) {
            return sit_out(call, attempt, policy, wait);
        }
        if status.is_server_error() {
            if call.repeat == Repeat::Safe && attempt < policy.max_attempts {
                return Next::RetryAfter(backoff(policy, attempt));
            }
            if call.repeat == Repeat::CreatesContent {
                return ambiguous(call, format!("HTTP {}", status.as_u16()));
            }
        }
        Next::Finish(Err(ClientError::Status {
            op: call.op,
            status: status.as_u16(),
            message: error_message(&body),
        }))
    }
}

fn ambiguous(call: &Call<'_>, reason: String) -> Next {
    Next::Finish(Err(ClientError::Ambiguous {
        op: call.op,
        reason,
    }))
}

/// Waits out a rate limit in place, unless it is longer than the policy allows or the call
/// keeps being refused.
fn sit_out(call: &Call<'_>, attempt: u32, policy: &RetryPolicy, wait: Duration) -> Next {
    if wait > policy.max_wait || attempt >= policy.max_attempts.max(1) * 2 {
        return Next::Finish(Err(ClientError::RateLimited {
            op: call.op,
            retry_after: wait,
        }));
    }
    tracing::warn!(
        op = call.op,
        wait_s = wait.as_secs_f64(),
        "GitHub rate limit; waiting as asked"
    );
    Next::RetryAfter(wait)
}

fn backoff(policy: &RetryPolicy, attempt: u32) -> Duration {
    policy
        .base_backoff
        .saturating_mul(1u32 << (attempt.saturating_sub(1)).min(10))
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

pub(super) fn decode<T: DeserializeOwned>(op: &'static str, body: &[u8]) -> Result<T, ClientError> {
    serde_json::from_slice(body).map_err(|e| ClientError::Decode {
        op,
        message: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::super::headers::test_headers as headers;
    use super::*;

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
}
