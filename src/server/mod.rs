//! `fleetbot serve`'s HTTP layer (axum): webhook intake, health, readiness and metrics.
//!
//! `POST /webhook`, in this order and nothing more: read the body (capped at
//! [`MAX_BODY_BYTES`]), verify `X-Hub-Signature-256` over those exact bytes, read the two
//! headers needed, hand the delivery to the [`DeliverySink`] (deduplicated by
//! `X-GitHub-Delivery`), answer `202`. Parsing and every GitHub call happen later, in the
//! worker, so GitHub's 10-second answer deadline is never at risk. `ping` and events the bot
//! does not handle are acknowledged (`202`) and not stored. Request headers are never logged:
//! GitHub once sent webhook secrets in one by mistake.

pub mod durable;
pub mod metrics;
pub mod sink;
pub mod worker;

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use tokio::sync::mpsc;
use tracing::Instrument;

use crate::bot::{Bot, Handled};
use crate::github::WebhookSecrets;
use crate::github::webhook::SIGNATURE_HEADER;

pub use durable::{DurableServer, DurableSettings, StoreSink};
pub use metrics::Metrics;
pub use sink::{
    Acceptance, CountsFuture, Delivery, DeliverySink, InMemorySink, SinkError, SinkFuture,
};
pub use worker::{WorkerSettings, run_queue_worker};

/// GitHub does not send payloads over 25 MB; a little more is allowed so none is refused.
pub const MAX_BODY_BYTES: usize = 25 * 1024 * 1024;
/// The events stored for the worker; every other event is acknowledged and dropped.
pub const HANDLED_EVENTS: [&str; 5] = [
    "pull_request",
    "issue_comment",
    "check_run",
    "installation",
    "push",
];
/// How long `/metrics` waits for the store's job counts.
const QUEUE_COUNT_LIMIT: Duration = Duration::from_secs(2);
/// `X-GitHub-Delivery` values are GUIDs; anything much longer is refused.
const MAX_DELIVERY_ID_LEN: usize = 100;

/// What the HTTP handlers share.
#[derive(Clone)]
pub struct AppState {
    secrets: Arc<WebhookSecrets>,
    sink: Arc<dyn DeliverySink>,
    metrics: Arc<Metrics>,
    /// The GitHub client, for its call counters and rate-limit headroom in `/metrics`.
    github: Option<crate::github::GitHubClient>,
}

impl AppState {
    pub fn new(
        secrets: WebhookSecrets,
        sink: Arc<dyn DeliverySink>,
        metrics: Arc<Metrics>,
        github: Option<crate::github::GitHubClient>,
    ) -> Self {
        AppState {
            secrets: Arc::new(secrets),
            sink,
            metrics,
            github,
        }
    }
}

/// The router: `/webhook`, `/healthz`, `/readyz`, `/metrics`.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route(
            "/webhook",
            post(webhook).layer(DefaultBodyLimit::max(MAX_BODY_BYTES)),
        )
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics_text))
        .with_state(state)
}

/// Serves `router` on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    use axum::serve::ListenerExt;
    // Answers are a few bytes: without TCP_NODELAY, Nagle's algorithm can hold one back
    // until the client's delayed ACK (tens of milliseconds).
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await
}

fn text(status: StatusCode, body: &'static str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        body,
    )
        .into_response()
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

async fn webhook(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let started = Instant::now();
    let event = header_str(&headers, "x-github-event");
    let label = metrics::event_label(event);
    let signature = headers.get(SIGNATURE_HEADER).map(|v| v.as_bytes());
    if let Err(e) = state.secrets.verify(&body, signature) {
        state.metrics.delivery(label, "refused", started.elapsed());
        tracing::warn!(event = label, "webhook refused: {e}");
        return text(StatusCode::UNAUTHORIZED, "signature refused\n");
    }
    let (Some(event), Some(id)) = (event, header_str(&headers, "x-github-delivery")) else {
        state
            .metrics
            .delivery(label, "bad_request", started.elapsed());
        return text(
            StatusCode::BAD_REQUEST,
            "X-GitHub-Event and X-GitHub-Delivery are required\n",
        );
    };
    let id_ok = !id.is_empty()
        && id.len() <= MAX_DELIVERY_ID_LEN
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    if !id_ok {
        state
            .metrics
            .delivery(label, "bad_request", started.elapsed());
        return text(StatusCode::BAD_REQUEST, "X-GitHub-Delivery is malformed\n");
    }
    if !HANDLED_EVENTS.contains(&event) {
        state.metrics.delivery(label, "ignored", started.elapsed());
        return text(StatusCode::ACCEPTED, "ignored\n");
    }
    let delivery = Delivery {
        id: id.to_string(),
        event: event.to_string(),
        payload: body,
        received_at: std::time::SystemTime::now(),
    };
    match state.sink.accept(delivery).await {
        Ok(outcome) => {
            state
                .metrics
                .delivery(label, outcome.as_str(), started.elapsed());
            text(
                StatusCode::ACCEPTED,
                match outcome {
                    Acceptance::Accepted => "accepted\n",
                    Acceptance::Duplicate => "duplicate\n",
                },
            )
        }
        Err(e) => {
            state.metrics.delivery(label, "error", started.elapsed());
            tracing::error!(event = label, "delivery not accepted: {e}");
            text(
                StatusCode::SERVICE_UNAVAILABLE,
                "not accepted; redeliver later\n",
            )
        }
    }
}

async fn readyz(State(state): State<AppState>) -> Response {
    if state.sink.ready() {
        text(StatusCode::OK, "ready\n")
    } else {
        text(StatusCode::SERVICE_UNAVAILABLE, "not ready\n")
    }
}

async fn metrics_text(State(state): State<AppState>) -> Response {
    let github = state.github.as_ref().map(|g| g.metrics().snapshot());
    let mut text = state.metrics.render(github.as_ref());
    if let Some(counts) = state.sink.queue_counts() {
        // A slow store must not cost the whole scrape (every other metric with it) exactly
        // when it is in trouble: past the limit it is reported down.
        let counts = tokio::time::timeout(QUEUE_COUNT_LIMIT, counts)
            .await
            .unwrap_or_else(|_| Err("the job count timed out".into()));
        if let Err(e) = &counts {
            tracing::warn!("/metrics: cannot count jobs: {e}");
        }
        metrics::render_queue(&mut text, &counts);
    }
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        text,
    )
        .into_response()
}

/// What the worker did with one delivery (for tests and logs).
#[derive(Debug, Clone)]
pub struct JobReport {
    pub delivery_id: String,
    pub event: String,
    pub result: Result<Handled, String>,
    pub took: Duration,
}

/// Runs deliveries from an [`InMemorySink`] one at a time, in arrival order, until the queue
/// closes (tests without a store). `fleetbot serve` runs [`worker::run_queue_worker`] over the
/// store's queue instead, which keeps jobs of one pull request one at a time across workers
/// and replicas.
pub async fn run_worker(
    mut queue: mpsc::UnboundedReceiver<Delivery>,
    bot: Bot,
    metrics: Arc<Metrics>,
    done: Option<mpsc::UnboundedSender<JobReport>>,
) {
    while let Some(delivery) = queue.recv().await {
        let started = Instant::now();
        let label = metrics::event_label(Some(&delivery.event));
        let span = tracing::info_span!("job", delivery = %delivery.id, event = label);
        let result = bot
            .handle(&delivery.event, &delivery.payload)
            .instrument(span)
            .await;
        let took = started.elapsed();
        let outcome = match &result {
            Ok(Handled::Ignored(_)) => "ignored",
            Ok(_) => "ok",
            Err(_) => "error",
        };
        metrics.job(label, outcome, took);
        if let Err(e) = &result {
            tracing::error!(delivery = %delivery.id, event = label, "job failed: {e}");
        }
        if let Some(done) = &done {
            let _ = done.send(JobReport {
                delivery_id: delivery.id,
                event: delivery.event,
                result: result.map_err(|e| e.to_string()),
                took,
            });
        }
    }
}
