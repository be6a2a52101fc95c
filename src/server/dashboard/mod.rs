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
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

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

/// What the dashboard reads.
pub struct Dashboard<S> {
    store: S,
    store_kind: String,
    quota: Option<Arc<dyn QuotaSource>>,
    cached: tokio::sync::Mutex<Option<(Instant, QuotaView)>>,
}

impl<S: OverviewStore> Dashboard<S> {
    /// `store_kind` names the backend (`SQLite`, `PostgreSQL`), never its location.
    pub fn new(store: S, store_kind: &str, quota: Option<Arc<dyn QuotaSource>>) -> Self {
        Dashboard {
            store,
            store_kind: store_kind.to_string(),
            quota,
            cached: tokio::sync::Mutex::new(None),
        }
    }

    /// The view now.
    pub async fn view(&self) -> DashboardView {
        let (quota, problem) = self.quota().await;
        let mut view = gather(&self.store, &self.store_kind, quota, now_ms()).await;
        view.problems.extend(problem);
        view
    }

    async fn quota(&self) -> (Option<QuotaView>, Option<String>) {
        let Some(source) = &self.quota else {
            return (None, None);
        };
        let mut cached = self.cached.lock().await;
        if let Some((at, view)) = cached.as_ref()
            && at.elapsed() < QUOTA_CACHE
        {
            return (Some(view.clone()), None);
        }
        match tokio::time::timeout(QUOTA_TIMEOUT, source.read()).await {
            Ok(reading) => {
                let view = quota_view(&reading, &clean);
                *cached = Some((Instant::now(), view.clone()));
                (Some(view), None)
            }
            Err(_) => (
                cached.as_ref().map(|(_, v)| v.clone()),
                Some("The cloud's quota did not answer in time.".to_string()),
            ),
        }
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

async fn page<S: OverviewStore + 'static>(State(d): State<Arc<Dashboard<S>>>) -> Response {
    let html = render_dashboard(&d.view().await);
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
    let view = d.view().await;
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
}
