//! The operator's dashboard: `GET /` (a server-rendered page) and `GET /api/dashboard` (the
//! same view as JSON), read-only, over the store and, when one is configured, the cloud's
//! quota.
//!
//! The page is [`render_dashboard`] of a [`DashboardView`] that [`gather`] builds from any
//! [`OverviewStore`], so `fleetbot serve` and anything else holding a store (a demo, a test)
//! show the same page. Like every public surface of fleetbot, the view carries no cloud ID,
//! token or tenant ID (tenants are digests) and its free text went through the privacy scanner;
//! the finished page goes through it once more.

mod gather;
mod quota;
mod render;
mod view;

use std::sync::Arc;
use std::time::Duration;

// Tokio's clock, so tests can move it; the same as the system's otherwise.
use tokio::time::Instant;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures_util::FutureExt;
use futures_util::future::{BoxFuture, Shared};

pub use gather::{clean, gather};
pub use quota::{
    FixedQuota, LiveQuota, QuotaReading, QuotaSource, ReadingFuture, bar, quota_view, tenant_label,
};
pub use render::render_dashboard;
pub use view::{
    ApplyView, ClusterView, DashboardView, FleetView, JobView, LockView, QuotaBar, QuotaView,
    RegionQuota, RepositoryView, ReviewState, ReviewView, SpecView, TenantQuota,
};

use crate::store::OverviewStore;
use crate::store::queue::now_ms;

/// How long a quota reading is reused: a page reloaded every few seconds must not cost a cloud
/// call each time, and quota moves slowly.
pub const QUOTA_CACHE: Duration = Duration::from_secs(60);
/// How long a page waits for the cloud's quota before it is shown without it.
pub const QUOTA_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a quota read that did not answer is not tried again: a stalled cloud costs one
/// wait, not one per page.
pub const QUOTA_RETRY_AFTER: Duration = Duration::from_secs(30);
/// How long a page may take in all; past it the answer is `503`, so a stalled store or cloud
/// never holds a request open.
pub const PAGE_TIMEOUT: Duration = Duration::from_secs(15);

/// One quota read, shared by every page waiting for it.
type SharedRead = Shared<BoxFuture<'static, Option<QuotaView>>>;

/// What the dashboard knows of the cloud's quota.
#[derive(Default)]
struct QuotaCache {
    /// The last answer, and when it came.
    last: Option<(Instant, QuotaView)>,
    /// The read under way, if one is.
    reading: Option<SharedRead>,
    /// The last read did not answer: none is tried again before then.
    quiet_until: Option<Instant>,
}

/// The cloud's quota as pages read it: one read at a time, shared by every page waiting for
/// it, reused for [`QUOTA_CACHE`], and not tried again for [`QUOTA_RETRY_AFTER`] after one
/// that did not answer.
pub struct SharedQuota {
    source: Arc<dyn QuotaSource>,
    cache: std::sync::Mutex<QuotaCache>,
}

impl SharedQuota {
    pub fn new(source: Arc<dyn QuotaSource>) -> Self {
        SharedQuota {
            source,
            cache: std::sync::Mutex::new(QuotaCache::default()),
        }
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, QuotaCache> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The quota: a recent answer as it is; else the one read under way (pages arriving
    /// meanwhile wait for the same read, never queue behind it for reads of their own); after
    /// a read that did not answer, the last answer, marked stale, with the problem said.
    pub async fn read(&self) -> (Option<QuotaView>, Option<String>) {
        let read = {
            let mut cache = self.cache();
            if let Some((at, view)) = &cache.last
                && at.elapsed() < QUOTA_CACHE
            {
                return (Some(view.clone()), None);
            }
            if cache
                .quiet_until
                .is_some_and(|until| Instant::now() < until)
            {
                return without_answer(&cache);
            }
            let source = self.source.clone();
            cache
                .reading
                .get_or_insert_with(|| {
                    async move {
                        let reading = tokio::time::timeout(QUOTA_TIMEOUT, source.read())
                            .await
                            .ok()?;
                        Some(quota_view(&reading, &clean))
                    }
                    .boxed()
                    .shared()
                })
                .clone()
        };
        let answer = read.await;
        let mut cache = self.cache();
        cache.reading = None;
        match answer {
            Some(view) => {
                cache.last = Some((Instant::now(), view.clone()));
                cache.quiet_until = None;
                (Some(view), None)
            }
            None => {
                if cache
                    .quiet_until
                    .is_none_or(|until| Instant::now() >= until)
                {
                    cache.quiet_until = Some(Instant::now() + QUOTA_RETRY_AFTER);
                }
                without_answer(&cache)
            }
        }
    }
}

/// The last answer, marked stale, and what the page says of it.
fn without_answer(cache: &QuotaCache) -> (Option<QuotaView>, Option<String>) {
    let last = cache.last.as_ref().map(|(_, view)| QuotaView {
        stale: true,
        ..view.clone()
    });
    let problem = match &last {
        Some(_) => {
            "The cloud's quota did not answer in time; the quota shown is its last answer (see when it was read)."
        }
        None => "The cloud's quota did not answer in time.",
    };
    (last, Some(problem.to_string()))
}

/// What the dashboard reads.
pub struct Dashboard<S> {
    store: S,
    store_kind: String,
    quota: Option<SharedQuota>,
}

impl<S: OverviewStore> Dashboard<S> {
    /// `store_kind` names the backend (`SQLite`, `PostgreSQL`), never its location.
    pub fn new(store: S, store_kind: &str, quota: Option<Arc<dyn QuotaSource>>) -> Self {
        Dashboard {
            store,
            store_kind: store_kind.to_string(),
            quota: quota.map(SharedQuota::new),
        }
    }

    /// The view now.
    pub async fn view(&self) -> DashboardView {
        let (quota, problem) = match &self.quota {
            Some(q) => q.read().await,
            None => (None, None),
        };
        let mut view = gather(&self.store, &self.store_kind, quota, now_ms()).await;
        view.problems.extend(problem);
        view
    }
}

/// `GET /` and `GET /api/dashboard`, to merge into [`super::router`]'s. Any other method is
/// answered `405`: nothing here changes anything.
pub fn router<S: OverviewStore + 'static>(dashboard: Dashboard<S>) -> Router {
    Router::new()
        .route("/", get(page::<S>))
        .route("/api/dashboard", get(json::<S>))
        .with_state(Arc::new(dashboard))
}

/// Headers for both answers: not cached (the page is a moment's state), never framed, and
/// nothing run or loaded from elsewhere (the page has no script and inline CSS only).
fn secured(mut response: Response) -> Response {
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CACHE_CONTROL, "no-store"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        ),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

/// The view, or `None` when it took longer than [`PAGE_TIMEOUT`].
async fn view_in_time<S: OverviewStore>(d: &Dashboard<S>) -> Option<DashboardView> {
    let view = tokio::time::timeout(PAGE_TIMEOUT, d.view()).await.ok();
    if view.is_none() {
        tracing::warn!("dashboard: no view within {} s", PAGE_TIMEOUT.as_secs());
    }
    view
}

fn too_slow() -> Response {
    secured(
        (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::RETRY_AFTER, "10")],
            "the dashboard could not be gathered in time; try again shortly\n",
        )
            .into_response(),
    )
}

async fn page<S: OverviewStore + 'static>(State(d): State<Arc<Dashboard<S>>>) -> Response {
    let Some(view) = view_in_time(&d).await else {
        return too_slow();
    };
    let html = render_dashboard(&view);
    secured(
        (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
            html,
        )
            .into_response(),
    )
}

async fn json<S: OverviewStore + 'static>(State(d): State<Arc<Dashboard<S>>>) -> Response {
    let Some(view) = view_in_time(&d).await else {
        return too_slow();
    };
    // The JSON is scanned as the page is: a value that slipped into a field is redacted here
    // too, and the text stays valid JSON (a redaction never spans a quote).
    let text = serde_json::to_string_pretty(&view).unwrap_or_else(|_| "{}".to_string());
    let text = crate::bot::render::redact_private(gather::scanner(), &text);
    if serde_json::from_str::<serde_json::Value>(&text).is_err() {
        tracing::error!("/api/dashboard: a redaction broke the JSON; nothing is sent");
        return secured(
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "the dashboard could not be sanitized\n",
            )
                .into_response(),
        );
    }
    secured(
        (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            text,
        )
            .into_response(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_routes_merge_into_the_server_router() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::SqliteStore::open(&dir.path().join("s.sqlite"))
            .await
            .unwrap();
        let (sink, _queue) = super::super::InMemorySink::new();
        let state = super::super::AppState::new(
            crate::github::WebhookSecrets::from_comma_separated("s").unwrap(),
            Arc::new(sink),
            Arc::new(super::super::Metrics::default()),
            None,
        );
        // Overlapping routes would panic here, as `fleetbot serve` would at start.
        let _ = super::super::router(state).merge(router(Dashboard::new(store, "SQLite", None)));
    }

    /// A cloud that answers after `delay` (never, for `None`), counting its reads.
    struct Cloud {
        delay: std::sync::Mutex<Option<Duration>>,
        reads: std::sync::atomic::AtomicUsize,
    }

    impl QuotaSource for Cloud {
        fn read(&self) -> ReadingFuture<'_> {
            self.reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let delay = *self.delay.lock().unwrap();
            Box::pin(async move {
                match delay {
                    Some(d) => tokio::time::sleep(d).await,
                    None => std::future::pending::<()>().await,
                }
                QuotaReading {
                    source: "the fleetbot simulator".into(),
                    tenants: Vec::new(),
                }
            })
        }
    }

    #[tokio::test(start_paused = true)]
    async fn pages_share_one_quota_read_and_a_stalled_cloud_costs_one_wait() {
        let cloud = Arc::new(Cloud {
            delay: std::sync::Mutex::new(Some(Duration::from_millis(10))),
            reads: Default::default(),
        });
        let d = Arc::new(SharedQuota::new(cloud.clone() as Arc<dyn QuotaSource>));
        let reads = || cloud.reads.load(std::sync::atomic::Ordering::SeqCst);
        let six_pages_at_once = || -> Vec<_> {
            (0..6)
                .map(|_| {
                    let d = d.clone();
                    tokio::spawn(async move { d.read().await })
                })
                .collect()
        };
        // Six pages at once: one read, and all of them have its answer.
        let pages = six_pages_at_once();
        for page in pages {
            let (quota, problem) = page.await.unwrap();
            assert!(quota.is_some_and(|q| !q.stale) && problem.is_none());
        }
        assert_eq!(reads(), 1);
        // The cloud stalls. Once the answer is older than the cache, six pages at once wait
        // for one read, which gives up after the timeout: one wait, not six in a row.
        *cloud.delay.lock().unwrap() = None;
        tokio::time::advance(QUOTA_CACHE).await;
        let started = tokio::time::Instant::now();
        let pages = six_pages_at_once();
        for page in pages {
            let (quota, problem) = page.await.unwrap();
            let quota = quota.expect("the last answer is shown");
            assert!(quota.stale, "and said to be stale");
            assert!(problem.unwrap().contains("did not answer in time"));
        }
        assert_eq!(started.elapsed(), QUOTA_TIMEOUT);
        assert_eq!(reads(), 2);
        // Meanwhile no page waits, nor reads again, until the quiet time is over.
        let started = tokio::time::Instant::now();
        let (quota, problem) = d.read().await;
        assert!(quota.unwrap().stale && problem.is_some());
        assert_eq!(started.elapsed(), Duration::ZERO);
        assert_eq!(reads(), 2);
        // Then the cloud is asked again, and its answer is fresh.
        *cloud.delay.lock().unwrap() = Some(Duration::from_millis(10));
        tokio::time::advance(QUOTA_RETRY_AFTER).await;
        let (quota, problem) = d.read().await;
        assert!(!quota.unwrap().stale && problem.is_none());
        assert_eq!(reads(), 3);
    }
}
