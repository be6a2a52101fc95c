//! Counters of API calls and the rate-limit headroom GitHub reports, for the server's metrics.

use std::collections::BTreeMap;
use std::sync::Mutex;

use reqwest::header::HeaderMap;

use super::headers::{header_str, header_u64};

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
    pub(super) fn record(&self, op: &str, status: Option<u16>, headers: Option<&HeaderMap>) {
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
