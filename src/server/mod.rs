//! `fleetbot serve`'s HTTP layer (axum): webhook intake, health, readiness and metrics (and the
//! read-only [`dashboard`], merged in by `fleetbot serve`).
//!
//! `POST /webhook`, in this order and nothing more: read the body within [`intake`]'s limits
//! (capped at [`MAX_BODY_BYTES`]; a stranger's unverified body cannot hold what a genuine
//! delivery needs), verify `X-Hub-Signature-256` over those exact bytes as they arrive, read
//! the two headers needed, hand the delivery to the [`DeliverySink`] (deduplicated by
//! `X-GitHub-Delivery`), answer `202`. Parsing and every GitHub call happen later, in the
//! worker, so GitHub's 10-second answer deadline is never at risk. `ping` and events the bot
//! does not handle are acknowledged (`202`) and not stored. Request headers are never logged:
//! GitHub once sent webhook secrets in one by mistake.

pub mod dashboard;
pub mod durable;
pub mod intake;
pub mod job_process;
pub mod metrics;
pub mod proxies;
pub mod reconcile;
pub mod sink;
pub mod sources;
pub mod worker;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use tokio::sync::mpsc;
use tracing::Instrument;

use crate::bot::{Bot, Handled};
use crate::github::WebhookSecrets;

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
/// body, and what unverified webhook bodies may hold ([`intake`]).
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
    /// Webhook bodies read at once, all peers together; more wait up to [`BODY_SLOT_WAIT`],
    /// then get `503`.
    pub max_body_readers: usize,
    /// Webhook bodies of one peer address read at once (0: no bound). Past it (and past
    /// [`ServerLimits::max_body_readers`]) the slowest body read for a while is dropped to
    /// make room; with none to drop, a body waits up to [`intake::PEER_WAIT`], then gets
    /// `429`. Behind a proxy the peer is the proxy unless it is trusted
    /// ([`ServerLimits::trusted_proxies`]).
    pub max_bodies_per_peer: usize,
    /// Bytes all unverified bodies may hold beyond each one's first [`intake::BLOCK`]; a body
    /// that would need more is answered `503`. At least [`MAX_BODY_BYTES`], or the largest
    /// deliveries can never pass.
    pub max_unverified_bytes: usize,
    /// Bytes a second a body must average once [`intake::BODY_GRACE`] is over (0: no floor);
    /// a slower one is answered `408`.
    pub min_body_rate: u64,
    /// The peers `POST /webhook` is taken from; `None`: any.
    pub sources: Option<Arc<sources::SourceRanges>>,
    /// Proxies whose `Forwarded` / `X-Forwarded-For` name the peer; `None`: the TCP peer is.
    pub trusted_proxies: Option<Arc<proxies::TrustedProxies>>,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            max_connections: 4096,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            max_body_readers: 256,
            max_bodies_per_peer: 8,
            max_unverified_bytes: 64 << 20,
            min_body_rate: 64 * 1024,
            sources: None,
            trusted_proxies: None,
        }
    }
}

/// The most a connection's read buffer grows to. hyper's default (about 400 KiB) is reached by
/// every fast sender, and is memory outside the unverified-byte budget: 40 large bodies held
/// 30 MiB in read buffers alone. Headers must fit too; GitHub's are a few KiB.
pub const READ_BUFFER_BYTES: usize = 64 * 1024;

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
    intake: Arc<intake::Intake>,
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
            intake: Arc::new(intake::Intake::new(limits)),
        }
    }
}

/// The router: `/webhook`, `/healthz`, `/readyz`, `/metrics`.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/webhook", post(webhook))
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
/// not set), and a shutdown lets open requests finish. Each request carries its peer's
/// address as [`ConnectInfo`], for the per-peer bound and the source allowlist.
pub async fn serve_with_limits(
    listener: tokio::net::TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
    limits: &ServerLimits,
) -> std::io::Result<()> {
    use hyper::body::Incoming;
    use hyper::http::Request;
    use hyper_util::rt::{TokioIo, TokioTimer};
    let cap = limits.max_connections.max(1);
    let slots = Arc::new(tokio::sync::Semaphore::new(cap));
    let overflow = Arc::new(tokio::sync::Semaphore::new(cap.saturating_mul(3)));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .max_buf_size(READ_BUFFER_BYTES)
        .keep_alive(true);
    let mut crowded = hyper::server::conn::http1::Builder::new();
    crowded
        .timer(TokioTimer::new())
        .header_read_timeout(OVERFLOW_HEADER_TIMEOUT)
        .max_buf_size(READ_BUFFER_BYTES)
        .keep_alive(false);
    tokio::pin!(shutdown);
    loop {
        let (tcp, peer) = tokio::select! {
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
        let router = router.clone();
        let service = hyper::service::service_fn(move |mut request: Request<Incoming>| {
            request.extensions_mut().insert(ConnectInfo(peer));
            let mut router = router.clone();
            // A router is always ready: no `poll_ready` is needed before `call`.
            async move { tower::Service::call(&mut router, request).await }
        });
        let conn = graceful.watch(builder.serve_connection(TokioIo::new(tcp), service));
        tokio::spawn(async move {
            let _slot = slot;
            if let Err(e) = conn.await {
                tracing::debug!(%peer, "connection ended: {e}");
            }
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

async fn webhook(State(state): State<AppState>, request: Request) -> Response {
    let started = Instant::now();
    let (parts, body) = request.into_parts();
    let headers = &parts.headers;
    let peer = parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip().to_canonical());
    let event = header_str(headers, "x-github-event");
    let label = metrics::event_label(event);
    let body = match state.intake.read(peer, headers, body, &state.secrets).await {
        Ok(bytes) => bytes,
        Err(refusal) => {
            state
                .metrics
                .delivery(label, refusal.outcome(), started.elapsed());
            state.metrics.refusal(refusal.reason());
            // The peer's address and the reason only: never a header. At most one warning a
            // second: strangers must not be able to flood the log (the metrics count each).
            let peer = peer.map_or_else(|| "unknown".to_string(), |p| p.to_string());
            match state.intake.may_warn() {
                Some(unlogged) => tracing::warn!(
                    event = label,
                    reason = refusal.reason(),
                    %peer,
                    unlogged,
                    "webhook refused before its body was used"
                ),
                None => tracing::debug!(
                    event = label,
                    reason = refusal.reason(),
                    %peer,
                    "webhook refused before its body was used"
                ),
            }
            return text(refusal.status(), refusal.answer());
        }
    };
    let (Some(event), Some(id)) = (event, header_str(headers, "x-github-delivery")) else {
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
    metrics::render_intake(&mut text, state.intake.in_flight());
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
