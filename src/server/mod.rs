//! `fleetbot serve`'s HTTP layer (axum): webhook intake, health, readiness and metrics (and the
//! read-only [`dashboard`], merged in by `fleetbot serve`).
//!
//! `POST /webhook`, in this order and nothing more: read the body (capped at
//! [`MAX_BODY_BYTES`]), verify `X-Hub-Signature-256` over those exact bytes, read the two
//! headers needed, hand the delivery to the [`DeliverySink`] (deduplicated by
//! `X-GitHub-Delivery`), answer `202`. Parsing and every GitHub call happen later, in the
//! worker, so GitHub's 10-second answer deadline is never at risk. `ping` and events the bot
//! does not handle are acknowledged (`202`) and not stored. Request headers are never logged:
//! GitHub once sent webhook secrets in one by mistake.

pub mod dashboard;
pub mod durable;
pub mod metrics;
pub mod reconcile;
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

/// What the HTTP layer allows a client: how many connections, how long for headers and for a
/// body, and how many webhook bodies are read at once (each may be 25 MB).
#[derive(Debug, Clone)]
pub struct ServerLimits {
    /// Open connections served normally. Past it, up to three times as many more are still
    /// served, but must send their request within [`OVERFLOW_HEADER_TIMEOUT`] and are closed
    /// after one answer (so a health check gets through a flood of idle connections, and the
    /// flood drains fast); past that, a new connection is closed at once.
    pub max_connections: usize,
    /// A request's headers (and an idle keep-alive connection's next request) must arrive
    /// within this.
    pub header_timeout: Duration,
    /// A webhook body must arrive within this.
    pub body_timeout: Duration,
    /// Webhook bodies read at once; more wait up to [`BODY_SLOT_WAIT`], then get `503`.
    pub max_body_readers: usize,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            max_connections: 4096,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            max_body_readers: 16,
        }
    }
}

/// The header timeout of connections past [`ServerLimits::max_connections`].
pub const OVERFLOW_HEADER_TIMEOUT: Duration = Duration::from_secs(1);

/// How long a webhook waits for a body slot before it is told to come back.
pub const BODY_SLOT_WAIT: Duration = Duration::from_secs(5);

/// What the HTTP handlers share.
#[derive(Clone)]
pub struct AppState {
    secrets: Arc<WebhookSecrets>,
    sink: Arc<dyn DeliverySink>,
    metrics: Arc<Metrics>,
    /// The GitHub client, for its call counters and rate-limit headroom in `/metrics`.
    github: Option<crate::github::GitHubClient>,
    body_slots: Arc<tokio::sync::Semaphore>,
    body_timeout: Duration,
}

impl AppState {
    pub fn new(
        secrets: WebhookSecrets,
        sink: Arc<dyn DeliverySink>,
        metrics: Arc<Metrics>,
        github: Option<crate::github::GitHubClient>,
    ) -> Self {
        Self::with_limits(secrets, sink, metrics, github, &ServerLimits::default())
    }

    pub fn with_limits(
        secrets: WebhookSecrets,
        sink: Arc<dyn DeliverySink>,
        metrics: Arc<Metrics>,
        github: Option<crate::github::GitHubClient>,
        limits: &ServerLimits,
    ) -> Self {
        AppState {
            secrets: Arc::new(secrets),
            sink,
            metrics,
            github,
            body_slots: Arc::new(tokio::sync::Semaphore::new(limits.max_body_readers.max(1))),
            body_timeout: limits.body_timeout,
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
    serve_with_limits(listener, router, shutdown, &ServerLimits::default()).await
}

/// [`serve`] under `limits`: a connection past the cap is closed at once, headers must arrive
/// within the header timeout (hyper enforces it only with a timer, which `axum::serve` does
/// not set), and a shutdown lets open requests finish.
pub async fn serve_with_limits(
    listener: tokio::net::TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
    limits: &ServerLimits,
) -> std::io::Result<()> {
    use hyper_util::rt::{TokioIo, TokioTimer};
    use hyper_util::service::TowerToHyperService;
    let cap = limits.max_connections.max(1);
    let slots = Arc::new(tokio::sync::Semaphore::new(cap));
    let overflow = Arc::new(tokio::sync::Semaphore::new(cap.saturating_mul(3)));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true);
    let mut crowded = hyper::server::conn::http1::Builder::new();
    crowded
        .timer(TokioTimer::new())
        .header_read_timeout(OVERFLOW_HEADER_TIMEOUT)
        .keep_alive(false);
    tokio::pin!(shutdown);
    loop {
        let (tcp, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    // Out of file descriptors, most likely: wait instead of spinning.
                    tracing::warn!("cannot accept a connection: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let (slot, builder) = match slots.clone().try_acquire_owned() {
            Ok(slot) => (slot, &builder),
            Err(_) => match overflow.clone().try_acquire_owned() {
                Ok(slot) => (slot, &crowded),
                // Past both: closing at once keeps the server answering its other clients.
                Err(_) => {
                    drop(tcp);
                    continue;
                }
            },
        };
        // Answers are a few bytes: without TCP_NODELAY, Nagle's algorithm can hold one back
        // until the client's delayed ACK (tens of milliseconds).
        let _ = tcp.set_nodelay(true);
        let service = TowerToHyperService::new(router.clone());
        let conn = graceful.watch(builder.serve_connection(TokioIo::new(tcp), service));
        tokio::spawn(async move {
            let _slot = slot;
            let _ = conn.await;
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
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

/// Reads a webhook body within the limits, or says why not. Nothing is read for a request
/// that declares a body over the cap or carries no well-formed signature: an unsigned
/// sender never costs more than its headers.
async fn read_body(
    state: &AppState,
    headers: &HeaderMap,
    body: axum::body::Body,
) -> Result<Bytes, (StatusCode, &'static str, &'static str)> {
    let declared =
        header_str(headers, header::CONTENT_LENGTH.as_str()).and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return Err((
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
            "payload too large\n",
        ));
    }
    let signature = headers.get(SIGNATURE_HEADER).map(|v| v.as_bytes());
    if crate::github::webhook::parse_signature(signature).is_err() {
        return Err((StatusCode::UNAUTHORIZED, "refused", "signature refused\n"));
    }
    let slot = tokio::time::timeout(BODY_SLOT_WAIT, state.body_slots.clone().acquire_owned());
    let Ok(Ok(_slot)) = slot.await else {
        return Err((
            StatusCode::SERVICE_UNAVAILABLE,
            "busy",
            "too many deliveries at once; redeliver later\n",
        ));
    };
    match tokio::time::timeout(
        state.body_timeout,
        axum::body::to_bytes(body, MAX_BODY_BYTES),
    )
    .await
    {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(_)) => Err((
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
            "payload too large\n",
        )),
        Err(_) => Err((
            StatusCode::REQUEST_TIMEOUT,
            "timeout",
            "body not received in time\n",
        )),
    }
}

async fn webhook(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Response {
    let started = Instant::now();
    let event = header_str(&headers, "x-github-event");
    let label = metrics::event_label(event);
    let body = match read_body(&state, &headers, body).await {
        Ok(bytes) => bytes,
        Err((status, outcome, answer)) => {
            state.metrics.delivery(label, outcome, started.elapsed());
            tracing::warn!(
                event = label,
                outcome,
                "webhook refused before its body was used"
            );
            return text(status, answer);
        }
    };
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
