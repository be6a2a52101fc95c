//! Where accepted deliveries go: the [`DeliverySink`] seam between the HTTP layer and the store.
//!
//! The webhook handler answers `202` only after the sink has accepted the delivery, so a
//! durable sink ([`super::durable::StoreSink`], what `fleetbot serve` uses) makes "answered"
//! mean "persisted". Acceptance is
//! deduplicated by `X-GitHub-Delivery`: GitHub reuses the id when a delivery is redelivered,
//! so a second acceptance of the same id must not cause a second run.

use std::collections::{HashSet, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::SystemTime;

use bytes::Bytes;
use tokio::sync::mpsc;

/// One verified delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// `X-GitHub-Delivery` (a GUID; the same on redelivery).
    pub id: String,
    /// `X-GitHub-Event`.
    pub event: String,
    /// The raw body, exactly as verified.
    pub payload: Bytes,
    pub received_at: SystemTime,
}

/// The outcome of [`DeliverySink::accept`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acceptance {
    /// New: stored and queued for a worker.
    Accepted,
    /// Seen before: nothing was stored or queued.
    Duplicate,
}

impl Acceptance {
    /// The metrics label.
    pub fn as_str(&self) -> &'static str {
        match self {
            Acceptance::Accepted => "accepted",
            Acceptance::Duplicate => "duplicate",
        }
    }
}

/// The sink could not take the delivery (the store is down): answered 503, so GitHub marks
/// the delivery failed and it can be redelivered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("delivery sink unavailable: {0}")]
pub struct SinkError(pub String);

/// A boxed future, so the trait stays object-safe (`Arc<dyn DeliverySink>`).
pub type SinkFuture<'a> = Pin<Box<dyn Future<Output = Result<Acceptance, SinkError>> + Send + 'a>>;

/// Accepts deliveries: persists (or queues) each new one once.
///
/// Implementations must be idempotent per `delivery.id` and must have made the delivery
/// durable (or at least queued) before the future resolves to [`Acceptance::Accepted`].
pub trait DeliverySink: Send + Sync + 'static {
    /// Accepts one delivery.
    fn accept(&self, delivery: Delivery) -> SinkFuture<'_>;

    /// Whether the sink can take deliveries now (for `/readyz`).
    fn ready(&self) -> bool {
        true
    }

    /// The store's job counts by state, for `/metrics`; `None` when the sink has no store.
    fn queue_counts(&self) -> Option<CountsFuture<'_>> {
        None
    }
}

/// The future of [`DeliverySink::queue_counts`].
pub type CountsFuture<'a> =
    Pin<Box<dyn Future<Output = Result<crate::store::QueueCounts, String>> + Send + 'a>>;

/// Delivery ids remembered for deduplication. GitHub redelivers for 3 days; at the target
/// 1,000 deliveries/s an in-memory window can only ever be partial, which is why the store
/// replaces this sink.
pub const IN_MEMORY_DEDUP_WINDOW: usize = 100_000;

/// An in-memory sink: deduplicates, keeps a log, and hands new deliveries to a worker
/// through a channel. For tests that need no store; nothing survives a restart.
pub struct InMemorySink {
    seen: Mutex<Seen>,
    queue: mpsc::UnboundedSender<Delivery>,
}

#[derive(Default)]
struct Seen {
    ids: HashSet<String>,
    order: VecDeque<String>,
    accepted: VecDeque<(String, String)>,
}

impl InMemorySink {
    /// A sink and the receiving end of its work queue.
    pub fn new() -> (Self, mpsc::UnboundedReceiver<Delivery>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (
            InMemorySink {
                seen: Mutex::new(Seen::default()),
                queue: tx,
            },
            rx,
        )
    }

    /// `(delivery id, event)` of every accepted delivery, in order (the last
    /// [`IN_MEMORY_DEDUP_WINDOW`]).
    pub fn accepted(&self) -> Vec<(String, String)> {
        self.seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .accepted
            .iter()
            .cloned()
            .collect()
    }
}

impl DeliverySink for InMemorySink {
    fn accept(&self, delivery: Delivery) -> SinkFuture<'_> {
        let result = (|| {
            let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
            if seen.ids.contains(&delivery.id) {
                return Ok(Acceptance::Duplicate);
            }
            let (id, event) = (delivery.id.clone(), delivery.event.clone());
            // Queued first: a delivery that could not be queued is not remembered, so a
            // redelivery can still be accepted.
            self.queue
                .send(delivery)
                .map_err(|_| SinkError("the worker has stopped".into()))?;
            if seen.order.len() >= IN_MEMORY_DEDUP_WINDOW
                && let Some(old) = seen.order.pop_front()
            {
                seen.ids.remove(&old);
                seen.accepted.pop_front();
            }
            seen.ids.insert(id.clone());
            seen.order.push_back(id.clone());
            seen.accepted.push_back((id, event));
            Ok(Acceptance::Accepted)
        })();
        Box::pin(std::future::ready(result))
    }

    fn ready(&self) -> bool {
        !self.queue.is_closed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delivery(id: &str) -> Delivery {
        Delivery {
            id: id.into(),
            event: "pull_request".into(),
            payload: Bytes::from_static(b"{}"),
            received_at: SystemTime::UNIX_EPOCH,
        }
    }

    #[tokio::test]
    async fn deduplicates_by_delivery_id() {
        let (sink, mut rx) = InMemorySink::new();
        assert_eq!(sink.accept(delivery("a")).await, Ok(Acceptance::Accepted));
        assert_eq!(sink.accept(delivery("a")).await, Ok(Acceptance::Duplicate));
        assert_eq!(sink.accept(delivery("b")).await, Ok(Acceptance::Accepted));
        assert_eq!(rx.recv().await.unwrap().id, "a");
        assert_eq!(rx.recv().await.unwrap().id, "b");
        assert!(rx.try_recv().is_err());
        assert_eq!(sink.accepted().len(), 2);
        assert!(sink.ready());
        drop(rx);
        assert!(!sink.ready());
        assert!(sink.accept(delivery("c")).await.is_err());
    }

    #[test]
    fn the_trait_is_object_safe() {
        let (sink, _rx) = InMemorySink::new();
        let _dyn: std::sync::Arc<dyn DeliverySink> = std::sync::Arc::new(sink);
    }
}
