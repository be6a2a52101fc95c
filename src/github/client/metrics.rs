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

    /// Adds calls another process made (a job process's, since its last report) and takes
    /// its rate-limit figures where they are as new or newer than these.
    pub fn absorb(&self, other: &ApiMetricsSnapshot) {
        let mut m = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        for (key, n) in &other.calls {
            *m.calls.entry(key.clone()).or_default() += n;
        }
        for (resource, theirs) in &other.rate_limits {
            let newer = m.rate_limits.get(resource).is_none_or(|ours| {
                theirs.reset > ours.reset
                    || (theirs.reset == ours.reset && theirs.remaining <= ours.remaining)
            });
            if newer {
                m.rate_limits.insert(resource.clone(), theirs.clone());
            }
        }
    }
}

impl ApiMetricsSnapshot {
    /// What `self` holds beyond `earlier` (calls since then; its rate limits as they are).
    pub fn since(&self, earlier: &ApiMetricsSnapshot) -> ApiMetricsSnapshot {
        let calls = self
            .calls
            .iter()
            .filter_map(|(key, n)| {
                let before = earlier.calls.get(key).copied().unwrap_or(0);
                (*n > before).then(|| (key.clone(), n - before))
            })
            .collect();
        let rate_limits = self
            .rate_limits
            .iter()
            .filter(|(r, rl)| earlier.rate_limits.get(*r) != Some(*rl))
            .map(|(r, rl)| (r.clone(), rl.clone()))
            .collect();
        ApiMetricsSnapshot { calls, rate_limits }
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty() && self.rate_limits.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(calls: &[(&str, &str, u64)], remaining: Option<(u64, u64)>) -> ApiMetricsSnapshot {
        ApiMetricsSnapshot {
            calls: calls
                .iter()
                .map(|(op, status, n)| ((op.to_string(), status.to_string()), *n))
                .collect(),
            rate_limits: remaining
                .map(|(remaining, reset)| {
                    let rl = RateLimitState {
                        limit: 5000,
                        remaining,
                        reset,
                    };
                    BTreeMap::from([("core".to_string(), rl)])
                })
                .unwrap_or_default(),
        }
    }

    #[test]
    fn another_process_s_calls_are_added_once_and_its_newer_rate_limit_kept() {
        let ours = ApiMetrics::default();
        ours.absorb(&snapshot(&[("pulls/get", "200", 2)], Some((4990, 100))));
        // A job process reports cumulative figures; only what is new since its last report
        // is absorbed.
        let first = snapshot(&[("pulls/get", "200", 3)], Some((4980, 100)));
        let later = snapshot(
            &[("pulls/get", "200", 5), ("checks/create", "201", 1)],
            Some((4978, 100)),
        );
        ours.absorb(&first.since(&ApiMetricsSnapshot::default()));
        ours.absorb(&later.since(&first));
        let now = ours.snapshot();
        assert_eq!(now.calls[&("pulls/get".into(), "200".into())], 7);
        assert_eq!(now.calls[&("checks/create".into(), "201".into())], 1);
        assert_eq!(now.rate_limits["core"].remaining, 4978);
        // An older window's figure does not replace a newer one.
        ours.absorb(&snapshot(&[], Some((10, 50))));
        assert_eq!(ours.snapshot().rate_limits["core"].remaining, 4978);
        assert!(later.since(&later).is_empty());
    }
}
