//! Reading a webhook body that strangers cannot use to stall intake.
//!
//! Until its signature is checked, a body is a stranger's: anyone can send a well-formed but
//! wrong `X-Hub-Signature-256`. So an unverified body may hold only what a genuine delivery
//! does not need:
//!
//! - **the first block without a slot**: a body's first [`FIRST_BYTES`] (all of a smaller
//!   one) are read before it takes any slot. Nearly every delivery of GitHub's arrives whole
//!   within it and needs no slot at all, whoever holds them; an upload that trickles never
//!   holds one; the slots below bound only the bodies larger than a block;
//! - **per peer**: at most [`ServerLimits::max_bodies_per_peer`] bodies of one address are
//!   read at once; past it, the address's slowest body that has been read for at least
//!   [`EVICT_AFTER`] is dropped (`503`) to make room, and with none to drop a body waits up to
//!   [`PEER_WAIT`] for one of that address's own slots, then gets `429`, without ever waiting
//!   for or taking one of the shared slots. Behind trusted proxies the address is the client
//!   their forwarding headers name ([`super::proxies`]);
//! - **in all**: at most [`ServerLimits::max_body_readers`] bodies at once; past it, the
//!   slowest of all is dropped the same way, and with none to drop a body waits up to
//!   [`super::BODY_SLOT_WAIT`], then gets `503`. A genuine delivery arrives at datacentre
//!   speed, so it is never the slowest: strangers holding every slot cannot keep it out;
//! - **a rate floor**: after [`BODY_GRACE`], a body must have averaged
//!   [`ServerLimits::min_body_rate`] bytes a second since it started, or it is answered `408`
//!   and its slots go back;
//! - **memory**: a body is kept in blocks of [`BLOCK`] bytes; each body's first block is
//!   covered by the connection cap (as the connection's read buffer is), every further block
//!   by one byte budget shared by all
//!   unverified bodies ([`ServerLimits::max_unverified_bytes`]); a body whose next block does
//!   not fit is answered `503` at once and its bytes go back. The HMAC is computed as the
//!   bytes arrive, so a body is never walked twice, and only a verified one is joined into
//!   one buffer.
//!
//! GitHub's own deliveries are mostly under 100 KB and arrive at datacentre speed: most fit
//! their first block and take no slot, a larger one holds a slot for about one round trip, and
//! none waits on the
//! byte budget that large strangers fill. Why the defaults are safe for GitHub is in
//! docs/github-app.md ("Intake under attack").

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, StatusCode, header};
use bytes::BytesMut;
use http_body_util::BodyExt;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use super::sources::SourceRanges;
use super::{BODY_SLOT_WAIT, MAX_BODY_BYTES, ServerLimits};
use crate::github::WebhookSecrets;
use crate::github::webhook::SIGNATURE_HEADER;

/// How long a body over its peer's bound waits for one of that peer's slots: a burst of
/// GitHub's deliveries from one address queues for a moment instead of being refused.
pub const PEER_WAIT: Duration = Duration::from_secs(2);
/// How long a body may take before the rate floor applies (a slow start, a TLS proxy's
/// first flush).
pub const BODY_GRACE: Duration = Duration::from_secs(2);
/// The unit bodies are kept and charged in.
pub const BLOCK: usize = 64 * 1024;
/// The bytes of a body (all of a smaller one) read before it takes a slot: its first block.
pub const FIRST_BYTES: usize = BLOCK;
/// A body read for less than this is never dropped to make room: a delivery just given its
/// slot has no rate to judge it by yet. GitHub sends its headers and body together, so a
/// genuine body is read whole within a few milliseconds of its slot; one still in a slot after
/// this and the slowest of them is a stranger's. An attacker who wants every slot younger than
/// this must open a connection every few milliseconds per slot, which the proxy's own limits
/// (and the connection cap) are for.
pub const EVICT_AFTER: Duration = Duration::from_millis(50);

/// Why a webhook was refused before its body was used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The peer is outside `FLEETBOT_WEBHOOK_SOURCE_RANGES`.
    Source,
    /// Declared or sent over [`MAX_BODY_BYTES`].
    TooLarge,
    /// No well-formed `X-Hub-Signature-256`.
    Unsigned,
    /// The peer already has its bound of bodies in flight.
    PeerBusy,
    /// All body slots are taken.
    Busy,
    /// The byte budget of unverified bodies is spent.
    Memory,
    /// Under the rate floor after the grace.
    TooSlow,
    /// Not complete within the body timeout.
    Timeout,
    /// The body broke off (the client closed the connection).
    Broken,
    /// Dropped, as the slowest body in flight, to make room for another.
    Evicted,
    /// No configured secret signed it.
    Signature,
}

impl Refusal {
    /// The answer's status.
    pub fn status(self) -> StatusCode {
        match self {
            Refusal::Source => StatusCode::FORBIDDEN,
            Refusal::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Refusal::Unsigned | Refusal::Signature => StatusCode::UNAUTHORIZED,
            Refusal::PeerBusy => StatusCode::TOO_MANY_REQUESTS,
            Refusal::Busy | Refusal::Memory | Refusal::Evicted => StatusCode::SERVICE_UNAVAILABLE,
            Refusal::TooSlow | Refusal::Timeout => StatusCode::REQUEST_TIMEOUT,
            Refusal::Broken => StatusCode::BAD_REQUEST,
        }
    }

    /// The `outcome` label of `fleetbot_webhook_deliveries_total`.
    pub fn outcome(self) -> &'static str {
        match self {
            Refusal::Source => "forbidden",
            Refusal::TooLarge => "too_large",
            Refusal::Unsigned | Refusal::Signature => "refused",
            Refusal::PeerBusy | Refusal::Busy | Refusal::Memory | Refusal::Evicted => "busy",
            Refusal::TooSlow | Refusal::Timeout => "timeout",
            Refusal::Broken => "bad_request",
        }
    }

    /// The `reason` label of `fleetbot_webhook_refusals_total`.
    pub fn reason(self) -> &'static str {
        match self {
            Refusal::Source => "source",
            Refusal::TooLarge => "too_large",
            Refusal::Unsigned => "unsigned",
            Refusal::PeerBusy => "peer_busy",
            Refusal::Busy => "busy",
            Refusal::Memory => "memory",
            Refusal::TooSlow => "too_slow",
            Refusal::Timeout => "timeout",
            Refusal::Broken => "broken",
            Refusal::Evicted => "evicted",
            Refusal::Signature => "signature",
        }
    }

    /// The answer's text.
    pub fn answer(self) -> &'static str {
        match self {
            Refusal::Source => "this address may not deliver webhooks\n",
            Refusal::TooLarge => "payload too large\n",
            Refusal::Unsigned | Refusal::Signature => "signature refused\n",
            Refusal::PeerBusy => "too many deliveries from this address at once\n",
            Refusal::Busy => "too many deliveries at once; redeliver later\n",
            Refusal::Memory => "too much delivery data in flight; redeliver later\n",
            Refusal::TooSlow => "body too slow\n",
            Refusal::Timeout => "body not received in time\n",
            Refusal::Broken => "body incomplete\n",
            Refusal::Evicted => "dropped to make room for a faster delivery; redeliver later\n",
        }
    }
}

/// The rate floor: after `grace`, a body must average `bytes_per_sec` since it started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateFloor {
    pub grace: Duration,
    /// 0: no floor.
    pub bytes_per_sec: u64,
}

impl RateFloor {
    /// How long after its start a body that has sent `received` bytes has to send more before
    /// its average falls under the floor; `None` without a floor. Checking the next byte
    /// against this deadline checks the average continuously: every byte moves it on by
    /// `1 / bytes_per_sec`.
    pub fn next_byte_due(&self, received: u64) -> Option<Duration> {
        if self.bytes_per_sec == 0 {
            return None;
        }
        let nanos = u128::from(received) * 1_000_000_000 / u128::from(self.bytes_per_sec);
        Some(self.grace + Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX)))
    }
}

/// Bytes of unverified bodies kept now, against their limit, and the full blocks no body
/// holds now.
#[derive(Debug)]
struct ByteBudget {
    limit: usize,
    used: AtomicUsize,
    /// Full blocks given back, reused rather than freed: under a flood of large bodies the
    /// same memory serves one body after another, where fresh allocations (each thread
    /// allocating from its own arena) cost 20–45 MiB more at the peak
    /// (`scripts/load-intake-strangers.py`, 40 bodies). There are
    /// never more blocks than the budget covers, and none once no unverified byte is held.
    spare: Mutex<Vec<BytesMut>>,
}

impl ByteBudget {
    fn new(limit: usize) -> Self {
        ByteBudget {
            limit,
            used: AtomicUsize::new(0),
            spare: Mutex::new(Vec::new()),
        }
    }

    fn spare(&self) -> std::sync::MutexGuard<'_, Vec<BytesMut>> {
        self.spare.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A block for `size` bytes, charged to the budget; `None` when they do not fit.
    fn block(&self, size: usize) -> Option<BytesMut> {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(size).filter(|total| *total <= self.limit)
            })
            .ok()?;
        let spare = (size == BLOCK).then(|| self.spare().pop()).flatten();
        Some(spare.unwrap_or_else(|| BytesMut::with_capacity(size)))
    }

    /// Gives back `charged` bytes and the `blocks` that held them.
    fn give_back(&self, charged: usize, blocks: impl Iterator<Item = BytesMut>) {
        let mut spare = self.spare();
        for mut block in blocks.filter(|b| b.capacity() >= BLOCK) {
            block.clear();
            spare.push(block);
        }
        if self.used.fetch_sub(charged, Ordering::AcqRel) == charged {
            spare.clear();
        }
    }
}

/// An unverified body as it arrives, in blocks of at most [`BLOCK`] bytes: the first its own,
/// each further one charged to the byte budget, which gets them back when the body is
/// dropped.
#[derive(Debug)]
struct Unverified {
    blocks: Vec<BytesMut>,
    /// What the last block may still take.
    room: usize,
    len: usize,
    charged: usize,
    budget: Arc<ByteBudget>,
}

impl Unverified {
    fn new(budget: Arc<ByteBudget>) -> Self {
        Unverified {
            blocks: Vec::new(),
            room: 0,
            len: 0,
            charged: 0,
            budget,
        }
    }

    /// Keeps `data`. A new block is sized to what the body declared it still has to send
    /// (never more than [`BLOCK`]), so a small body costs what it is; every block after the
    /// first is charged to the budget before it is taken.
    fn push(&mut self, mut data: &[u8], declared: Option<u64>) -> Result<(), Refusal> {
        while !data.is_empty() {
            if self.room == 0 {
                let remaining = declared
                    .map_or(BLOCK as u64, |d| d.saturating_sub(self.len as u64))
                    .max(data.len() as u64);
                let size = usize::try_from(remaining).unwrap_or(BLOCK).min(BLOCK);
                let block = if self.blocks.is_empty() {
                    BytesMut::with_capacity(size)
                } else {
                    let block = self.budget.block(size).ok_or(Refusal::Memory)?;
                    self.charged += size;
                    block
                };
                self.blocks.push(block);
                self.room = size;
            }
            let n = self.room.min(data.len());
            let last = self.blocks.last_mut().expect("a block was just added");
            last.extend_from_slice(&data[..n]);
            (self.room, self.len, data) = (self.room - n, self.len + n, &data[n..]);
        }
        Ok(())
    }

    /// The body as one buffer: a body of one block as it is, a larger one joined (once, and
    /// only after its signature was checked).
    fn into_bytes(mut self) -> Bytes {
        if self.blocks.len() <= 1 {
            return self.blocks.pop().map(BytesMut::freeze).unwrap_or_default();
        }
        let mut joined = BytesMut::with_capacity(self.len);
        for block in &self.blocks {
            joined.extend_from_slice(block);
        }
        joined.freeze()
    }
}

impl Drop for Unverified {
    fn drop(&mut self) {
        // The first block is the body's own, never charged.
        let blocks = std::mem::take(&mut self.blocks).into_iter().skip(1);
        self.budget.give_back(self.charged, blocks);
    }
}

/// The slots a body holds while it is read: its peer's (when there is a per-peer bound) and
/// a shared one. Dropping the body hands them to the body that dropped it.
#[derive(Debug)]
struct Slots {
    // Held for its `Drop`, which gives the peer's slot back.
    #[allow(dead_code)]
    peer: Option<PeerSlot>,
    shared: OwnedSemaphorePermit,
}

/// A body being read, as the choice of which to drop sees it.
#[derive(Debug)]
struct Reading {
    peer: Option<IpAddr>,
    started: Instant,
    received: AtomicU64,
    /// Its slots; taken by the body that drops it.
    slots: Mutex<Option<Slots>>,
    drop_now: Notify,
}

impl Reading {
    fn dropped(&self) -> bool {
        self.slots
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_none()
    }
}

/// Every body being read, so the slowest can be dropped.
#[derive(Debug, Default)]
struct Readings {
    all: Mutex<Vec<Arc<Reading>>>,
}

/// A body's place in [`Readings`]: when it ends, it leaves the list and its slots go back.
struct Registered<'a> {
    reading: Arc<Reading>,
    readings: &'a Readings,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        let mut all = self.readings.lock();
        if let Some(i) = all.iter().position(|r| Arc::ptr_eq(r, &self.reading)) {
            all.swap_remove(i);
        }
        drop(all);
        drop(
            self.reading
                .slots
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take(),
        );
    }
}

impl Readings {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Arc<Reading>>> {
        self.all.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn register(&self, peer: Option<IpAddr>, started: Instant, slots: Slots) -> Registered<'_> {
        let reading = Arc::new(Reading {
            peer,
            started,
            received: AtomicU64::new(0),
            slots: Mutex::new(Some(slots)),
            drop_now: Notify::new(),
        });
        self.lock().push(reading.clone());
        Registered {
            reading,
            readings: self,
        }
    }

    /// Drops the slowest body (of `peer`, when given) read for at least [`EVICT_AFTER`] — the
    /// lowest average rate since it started — and hands its slots to the caller. The caller
    /// takes them at once: a body that drops another never queues behind the waiting ones.
    fn take_slowest(&self, peer: Option<IpAddr>, now: Instant) -> Option<Slots> {
        let all = self.lock();
        let slowest = all
            .iter()
            .filter(|r| peer.is_none() || r.peer == peer)
            .filter(|r| now.saturating_duration_since(r.started) >= EVICT_AFTER)
            .filter(|r| !r.dropped())
            .min_by(|a, b| {
                // a.received / a.age against b.received / b.age, without division.
                let rate = |r: &Reading, other: &Reading| {
                    u128::from(r.received.load(Ordering::Relaxed))
                        * now.saturating_duration_since(other.started).as_nanos()
                };
                rate(a, b).cmp(&rate(b, a))
            })?;
        let slots = slowest
            .slots
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()?;
        slowest.drop_now.notify_one();
        Some(slots)
    }
}

/// Each peer's slots. A peer's entry lives while it has a body in flight or waiting.
#[derive(Debug)]
struct PeerSlots {
    per_peer: usize,
    /// [`PEER_WAIT`], shorter in tests.
    wait: Duration,
    slots: Mutex<HashMap<IpAddr, Arc<Semaphore>>>,
}

/// One of a peer's slots, held while its body is read.
#[derive(Debug)]
struct PeerSlot {
    permit: Option<OwnedSemaphorePermit>,
    peer: IpAddr,
    peers: Arc<PeerSlots>,
}

impl PeerSlots {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, Arc<Semaphore>>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// One of `peer`'s slots if one is free now.
    fn try_acquire(self: &Arc<Self>, peer: IpAddr) -> Option<PeerSlot> {
        let slots = self
            .lock()
            .entry(peer)
            .or_insert_with(|| Arc::new(Semaphore::new(self.per_peer)))
            .clone();
        let permit = slots.try_acquire_owned().ok();
        self.slot(peer, permit)
    }

    /// One of `peer`'s slots, waiting up to [`PeerSlots::wait`] for one.
    async fn acquire(self: &Arc<Self>, peer: IpAddr) -> Option<PeerSlot> {
        let slots = self
            .lock()
            .entry(peer)
            .or_insert_with(|| Arc::new(Semaphore::new(self.per_peer)))
            .clone();
        let permit = match slots.clone().try_acquire_owned() {
            Ok(permit) => Some(permit),
            Err(_) => tokio::time::timeout(self.wait, slots.clone().acquire_owned())
                .await
                .ok()
                .and_then(Result::ok),
        };
        drop(slots);
        self.slot(peer, permit)
    }

    fn slot(
        self: &Arc<Self>,
        peer: IpAddr,
        permit: Option<OwnedSemaphorePermit>,
    ) -> Option<PeerSlot> {
        match permit {
            Some(permit) => Some(PeerSlot {
                permit: Some(permit),
                peer,
                peers: self.clone(),
            }),
            None => {
                self.forget_if_idle(peer);
                None
            }
        }
    }

    /// Drops a peer's entry when nothing holds or waits for its slots (each holder and waiter
    /// owns a reference to them), so the map never outgrows the connections.
    fn forget_if_idle(&self, peer: IpAddr) {
        let mut slots = self.lock();
        if slots.get(&peer).is_some_and(|s| Arc::strong_count(s) == 1) {
            slots.remove(&peer);
        }
    }
}

impl Drop for PeerSlot {
    fn drop(&mut self) {
        drop(self.permit.take());
        self.peers.forget_if_idle(self.peer);
    }
}

/// What bodies in flight hold now (for `/metrics`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InFlight {
    pub bodies: usize,
    pub bytes: usize,
}

/// The webhook intake's limits in force, shared by every request.
#[derive(Debug)]
pub struct Intake {
    sources: Option<Arc<SourceRanges>>,
    bodies: Arc<Semaphore>,
    max_bodies: usize,
    peers: Option<Arc<PeerSlots>>,
    readings: Readings,
    proxies: Option<Arc<super::proxies::TrustedProxies>>,
    budget: Arc<ByteBudget>,
    floor: RateFloor,
    body_timeout: Duration,
    /// When a refusal was last logged as a warning, and how many were not since.
    warned: Mutex<(Option<Instant>, u64)>,
}

impl Intake {
    pub fn new(limits: &ServerLimits) -> Self {
        let max_bodies = limits.max_body_readers.max(1);
        Intake {
            sources: limits.sources.clone(),
            bodies: Arc::new(Semaphore::new(max_bodies)),
            max_bodies,
            peers: (limits.max_bodies_per_peer > 0).then(|| {
                Arc::new(PeerSlots {
                    per_peer: limits.max_bodies_per_peer,
                    wait: PEER_WAIT,
                    slots: Mutex::new(HashMap::new()),
                })
            }),
            readings: Readings::default(),
            proxies: limits.trusted_proxies.clone(),
            budget: Arc::new(ByteBudget::new(limits.max_unverified_bytes)),
            floor: RateFloor {
                grace: BODY_GRACE,
                bytes_per_sec: limits.min_body_rate,
            },
            body_timeout: limits.body_timeout,
            warned: Mutex::new((None, 0)),
        }
    }

    /// Whether a refusal may be logged as a warning now (at most one a second), with how many
    /// were refused since the last one that was.
    pub fn may_warn(&self) -> Option<u64> {
        let mut warned = self.warned.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        if warned
            .0
            .is_some_and(|at| now.duration_since(at) < Duration::from_secs(1))
        {
            warned.1 += 1;
            return None;
        }
        let unlogged = std::mem::take(&mut warned.1);
        warned.0 = Some(now);
        Some(unlogged)
    }

    /// The slots a body from `peer` is read in. Past a bound, the slowest body read for
    /// [`EVICT_AFTER`] or more is dropped and its slots are taken at once; with none to drop,
    /// the body waits for a slot (its peer's, then a shared one), and is refused past the wait.
    async fn slots(&self, peer: Option<IpAddr>) -> Result<Slots, Refusal> {
        let peer_slot = match (&self.peers, peer) {
            (Some(peers), Some(peer)) => match peers.try_acquire(peer) {
                Some(slot) => Some(slot),
                // The dropped body was this peer's: its shared slot comes with it.
                None => match self.readings.take_slowest(Some(peer), Instant::now()) {
                    Some(taken) => return Ok(taken),
                    None => Some(peers.acquire(peer).await.ok_or(Refusal::PeerBusy)?),
                },
            },
            _ => None,
        };
        if let Ok(shared) = self.bodies.clone().try_acquire_owned() {
            return Ok(Slots {
                peer: peer_slot,
                shared,
            });
        }
        if let Some(taken) = self.readings.take_slowest(None, Instant::now()) {
            // The dropped body's peer slot (another peer's, or ours if it is ours) goes back
            // when it is dropped here; this body keeps its own.
            return Ok(Slots {
                peer: peer_slot,
                shared: taken.shared,
            });
        }
        let shared = tokio::time::timeout(BODY_SLOT_WAIT, self.bodies.clone().acquire_owned())
            .await
            .ok()
            .and_then(Result::ok)
            .ok_or(Refusal::Busy)?;
        Ok(Slots {
            peer: peer_slot,
            shared,
        })
    }

    /// Bodies being read and the bytes they hold beyond their first block.
    pub fn in_flight(&self) -> InFlight {
        InFlight {
            bodies: self.max_bodies - self.bodies.available_permits(),
            bytes: self.budget.used.load(Ordering::Acquire),
        }
    }

    /// Reads and verifies a webhook body from `peer` (`None` when the transport gave none:
    /// no per-peer bound then, and no source allowlist passes it). Cheap refusals come first:
    /// the source, the declared size and the signature's form cost no slot; a peer over its
    /// bound never waits for a shared slot.
    /// The next piece of `body` (`None` at its end), within the body timeout and the rate
    /// floor counted from `started` over the `received` bytes so far; when `drop_now` is told,
    /// the body is dropped to make room for another.
    async fn next_data(
        &self,
        body: &mut Body,
        received: u64,
        started: Instant,
        drop_now: Option<&Notify>,
    ) -> Result<Option<Bytes>, Refusal> {
        let hard = started + self.body_timeout;
        let due = self
            .floor
            .next_byte_due(received)
            .map_or(hard, |d| hard.min(started + d));
        loop {
            let next = match drop_now {
                Some(told) => tokio::select! {
                    next = tokio::time::timeout_at(due, body.frame()) => next,
                    () = told.notified() => return Err(Refusal::Evicted),
                },
                None => tokio::time::timeout_at(due, body.frame()).await,
            };
            let frame = match next {
                Err(_) if due < hard => return Err(Refusal::TooSlow),
                Err(_) => return Err(Refusal::Timeout),
                Ok(None) => return Ok(None),
                Ok(Some(Err(_))) => return Err(Refusal::Broken),
                Ok(Some(Ok(frame))) => frame,
            };
            if let Ok(data) = frame.into_data() {
                return Ok(Some(data));
            }
        }
    }

    /// Keeps one piece of a body and feeds it to the signature check.
    fn keep(
        &self,
        kept: &mut Unverified,
        verifier: &mut crate::github::webhook::Verifier,
        data: &[u8],
        declared: Option<u64>,
    ) -> Result<(), Refusal> {
        if kept.len + data.len() > MAX_BODY_BYTES {
            return Err(Refusal::TooLarge);
        }
        verifier.update(data);
        kept.push(data, declared)
    }

    pub async fn read(
        &self,
        peer: Option<IpAddr>,
        headers: &HeaderMap,
        body: Body,
        secrets: &WebhookSecrets,
    ) -> Result<Bytes, Refusal> {
        let peer = match (&self.proxies, peer) {
            (Some(proxies), Some(peer)) => Some(proxies.client(peer, headers)),
            (_, peer) => peer.map(|p| p.to_canonical()),
        };
        if let Some(sources) = &self.sources
            && !peer.is_some_and(|p| sources.allows(p))
        {
            return Err(Refusal::Source);
        }
        let declared = headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
            return Err(Refusal::TooLarge);
        }
        let mut verifier = secrets
            .verifier(headers.get(SIGNATURE_HEADER).map(|v| v.as_bytes()))
            .map_err(|_| Refusal::Unsigned)?;
        let started = Instant::now();
        let mut body = body;
        let mut kept = Unverified::new(self.budget.clone());
        // A body's first block is read before it takes any slot: GitHub sends a delivery's
        // headers and body together, so nearly every one arrives whole within it and never
        // needs a slot at all, whoever holds them; an upload that trickles never holds one;
        // and slots bound only the bodies larger than a block, as long as they are read.
        let first = declared.map_or(FIRST_BYTES, |d| {
            usize::try_from(d).unwrap_or(FIRST_BYTES).min(FIRST_BYTES)
        });
        let mut ended = false;
        // Up to the first block, and once more when that is all it declared: a body that has
        // sent all it declared ends here, without a slot.
        while !ended && (kept.len < first || declared == Some(kept.len as u64)) {
            let whole = declared == Some(kept.len as u64);
            match self
                .next_data(&mut body, kept.len as u64, started, None)
                .await?
            {
                Some(data) => self.keep(&mut kept, &mut verifier, &data, declared)?,
                None => ended = true,
            }
            if whole && !ended {
                // More than it declared: read on with a slot, as any large body.
                break;
            }
        }
        if !ended {
            let slots = self.slots(peer).await?;
            let registered = self.readings.register(peer, started, slots);
            let reading = &registered.reading;
            reading.received.store(kept.len as u64, Ordering::Relaxed);
            while let Some(data) = self
                .next_data(&mut body, kept.len as u64, started, Some(&reading.drop_now))
                .await?
            {
                self.keep(&mut kept, &mut verifier, &data, declared)?;
                reading.received.store(kept.len as u64, Ordering::Relaxed);
            }
        }
        verifier.finish().map_err(|_| Refusal::Signature)?;
        Ok(kept.into_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn budget(limit: usize) -> Arc<ByteBudget> {
        Arc::new(ByteBudget::new(limit))
    }

    #[test]
    fn the_rate_floor_moves_on_with_every_byte() {
        let floor = RateFloor {
            grace: Duration::from_secs(2),
            bytes_per_sec: 1024,
        };
        assert_eq!(floor.next_byte_due(0), Some(Duration::from_secs(2)));
        assert_eq!(floor.next_byte_due(512), Some(Duration::from_millis(2500)));
        assert_eq!(
            floor.next_byte_due(10 * 1024),
            Some(Duration::from_secs(12))
        );
        // A trickle of a byte a second falls behind as soon as the grace is over.
        assert!(floor.next_byte_due(3).unwrap() < Duration::from_secs(3));
        // 25 MB at the floor: no overflow.
        let big = floor.next_byte_due(25 << 20).unwrap();
        assert_eq!(big, Duration::from_secs(2 + 25 * 1024));
        let off = RateFloor {
            grace: Duration::from_secs(2),
            bytes_per_sec: 0,
        };
        assert_eq!(off.next_byte_due(0), None);
    }

    /// Slots as a body in flight holds them.
    fn held(peers: &Arc<PeerSlots>, shared: &Arc<Semaphore>, peer: IpAddr) -> Slots {
        Slots {
            peer: peers.try_acquire(peer),
            shared: shared.clone().try_acquire_owned().unwrap(),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_slowest_body_read_for_a_while_is_dropped_and_its_slots_handed_over() {
        let readings = Readings::default();
        let peers = Arc::new(PeerSlots {
            per_peer: 4,
            wait: Duration::from_millis(50),
            slots: Mutex::new(HashMap::new()),
        });
        let shared = Arc::new(Semaphore::new(8));
        let (a, b): (IpAddr, IpAddr) = ([10, 0, 0, 1].into(), [10, 0, 0, 2].into());
        let trickle = readings.register(Some(a), Instant::now(), held(&peers, &shared, a));
        trickle.reading.received.store(10, Ordering::Relaxed);
        tokio::time::advance(Duration::from_millis(20)).await;
        let fast = readings.register(Some(a), Instant::now(), held(&peers, &shared, a));
        fast.reading.received.store(1 << 20, Ordering::Relaxed);
        let other = readings.register(Some(b), Instant::now(), held(&peers, &shared, b));
        // Nothing has been read long enough to judge it.
        assert!(readings.take_slowest(None, Instant::now()).is_none());
        tokio::time::advance(EVICT_AFTER).await;
        // Of two bodies old enough, the lower average rate goes, even though the other
        // started later; another peer's body is not a candidate for `a`'s room.
        let taken = readings
            .take_slowest(Some(a), Instant::now())
            .expect("one is dropped");
        assert!(
            taken.peer.as_ref().is_some_and(|p| p.peer == a),
            "its peer slot comes too"
        );
        assert!(trickle.reading.dropped());
        assert!(!fast.reading.dropped() && !other.reading.dropped());
        // Its slots are the taker's now: nothing went back to be queued for.
        assert_eq!(shared.available_permits(), 5);
        // It is told at once.
        tokio::time::timeout(
            Duration::from_millis(1),
            trickle.reading.drop_now.notified(),
        )
        .await
        .expect("the dropped body was told");
        // A dropped body is not chosen twice; then the next slowest is.
        let next = readings.take_slowest(Some(a), Instant::now()).unwrap();
        assert!(fast.reading.dropped());
        assert!(readings.take_slowest(Some(a), Instant::now()).is_none());
        // A body that ends leaves the list and gives back what it still holds (nothing, once
        // dropped); the taker gives back what it took when it ends.
        drop((trickle, fast));
        assert_eq!(readings.lock().len(), 1);
        assert_eq!(shared.available_permits(), 5);
        drop((taken, next));
        assert_eq!(shared.available_permits(), 7);
        drop(other);
        assert_eq!(shared.available_permits(), 8);
        assert!(peers.lock().is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_past_a_bound_drops_the_slowest_or_waits_while_all_are_young() {
        let limits = ServerLimits {
            max_body_readers: 2,
            max_bodies_per_peer: 1,
            ..ServerLimits::default()
        };
        let intake = Intake::new(&limits);
        let (a, b): (IpAddr, IpAddr) = ([10, 0, 0, 1].into(), [10, 0, 0, 2].into());
        let first = intake.slots(Some(a)).await.unwrap();
        let first = intake.readings.register(Some(a), Instant::now(), first);
        // Its peer's bound is reached and its one body is young: a second body of `a` waits,
        // then is refused.
        assert_eq!(intake.slots(Some(a)).await.err(), Some(Refusal::PeerBusy));
        tokio::time::advance(EVICT_AFTER).await;
        // Now it is the slowest of `a`'s: the next body of `a` takes its slots at once.
        let second = intake.slots(Some(a)).await.unwrap();
        assert!(first.reading.dropped());
        let second = intake.readings.register(Some(a), Instant::now(), second);
        // The shared bound: `b` gets the last shared slot, then a third peer drops the
        // slowest old enough (`b`'s, as `a`'s second is young).
        let third = intake.readings.register(
            Some(b),
            Instant::now(),
            intake.slots(Some(b)).await.unwrap(),
        );
        tokio::time::advance(EVICT_AFTER).await;
        second.reading.received.store(1000, Ordering::Relaxed);
        let c: IpAddr = [10, 0, 0, 3].into();
        let fourth = intake.slots(Some(c)).await.unwrap();
        assert!(third.reading.dropped() && !second.reading.dropped());
        drop((fourth, first, second, third));
    }

    #[tokio::test]
    async fn a_body_within_its_first_block_is_read_without_a_slot() {
        let limits = ServerLimits {
            max_body_readers: 1,
            max_bodies_per_peer: 1,
            ..ServerLimits::default()
        };
        let intake = Intake::new(&limits);
        let peer: IpAddr = [10, 0, 0, 1].into();
        // Every slot is held, shared and the peer's.
        let held = intake.slots(Some(peer)).await.unwrap();
        let secrets = WebhookSecrets::from_comma_separated("s3cret").unwrap();
        let signed = |body: &[u8]| {
            let mut h = HeaderMap::new();
            let sig = crate::github::webhook::sign(b"s3cret", body);
            h.insert(SIGNATURE_HEADER, sig.parse().unwrap());
            h.insert(
                header::CONTENT_LENGTH,
                body.len().to_string().parse().unwrap(),
            );
            h
        };
        let small = br#"{"zen":"small"}"#.to_vec();
        let read = intake
            .read(
                Some(peer),
                &signed(&small),
                Body::from(small.clone()),
                &secrets,
            )
            .await;
        assert_eq!(read.unwrap(), Bytes::from(small));
        // A body larger than a block needs a slot for the rest: it waits for its peer's, then
        // is refused.
        let large = vec![b' '; BLOCK + 1];
        let streamed = || {
            let pieces = vec![
                Ok::<_, std::io::Error>(Bytes::copy_from_slice(&large[..BLOCK])),
                Ok(Bytes::copy_from_slice(&large[BLOCK..])),
            ];
            Body::from_stream(futures_util::stream::iter(pieces))
        };
        let read = intake
            .read(Some(peer), &signed(&large), streamed(), &secrets)
            .await;
        assert_eq!(read.unwrap_err(), Refusal::PeerBusy);
        drop(held);
        let read = intake
            .read(Some(peer), &signed(&large), streamed(), &secrets)
            .await;
        assert_eq!(read.unwrap().len(), large.len());
    }

    #[test]
    fn a_small_body_is_one_block_of_its_size_and_charges_nothing() {
        let b = budget(0);
        let mut body = Unverified::new(b.clone());
        body.push(b"{\"a\":", Some(9)).unwrap();
        body.push(b"1}\n", Some(9)).unwrap();
        assert_eq!(body.blocks.len(), 1);
        assert_eq!(body.blocks[0].capacity(), 9);
        assert_eq!(b.used.load(Ordering::Acquire), 0);
        assert_eq!(&body.into_bytes()[..], b"{\"a\":1}\n");
    }

    #[test]
    fn blocks_past_the_first_are_charged_and_given_back() {
        let b = budget(3 * BLOCK);
        let data = vec![7u8; 3 * BLOCK + 10];
        let mut body = Unverified::new(b.clone());
        for piece in data.chunks(1000) {
            body.push(piece, Some(data.len() as u64)).unwrap();
        }
        // The first block is free; the second and third are charged; the fourth holds 10.
        assert_eq!(b.used.load(Ordering::Acquire), 2 * BLOCK + 10);
        assert_eq!(body.into_bytes().len(), data.len());
        assert_eq!(b.used.load(Ordering::Acquire), 0);
        // Past the budget the body is refused, and what it held goes back.
        let b = budget(2 * BLOCK);
        let mut over = Unverified::new(b.clone());
        let e = data
            .chunks(1000)
            .try_for_each(|p| over.push(p, None))
            .unwrap_err();
        assert_eq!(e, Refusal::Memory);
        assert!(b.used.load(Ordering::Acquire) <= 2 * BLOCK);
        drop(over);
        assert_eq!(b.used.load(Ordering::Acquire), 0);
    }

    #[test]
    fn full_blocks_are_reused_while_bytes_are_held_and_freed_after() {
        let b = budget(16 * BLOCK);
        let data = vec![1u8; 4 * BLOCK];
        let mut holder = Unverified::new(b.clone());
        holder.push(&data[..2 * BLOCK], None).unwrap();
        let mut large = Unverified::new(b.clone());
        large.push(&data, None).unwrap();
        drop(large);
        // Three full blocks back, kept while the holder still holds a charged one.
        assert_eq!(b.spare().len(), 3);
        let mut next = Unverified::new(b.clone());
        next.push(&data[..2 * BLOCK], None).unwrap();
        assert_eq!(b.spare().len(), 2);
        drop((holder, next));
        assert_eq!(b.used.load(Ordering::Acquire), 0);
        assert!(b.spare().is_empty());
    }

    #[test]
    fn a_body_longer_than_it_declared_is_still_kept_whole() {
        let mut body = Unverified::new(budget(BLOCK));
        body.push(b"abc", Some(1)).unwrap();
        body.push(b"def", Some(1)).unwrap();
        assert_eq!(&body.into_bytes()[..], b"abcdef");
    }

    proptest! {
        /// However a stranger splits a body, it is kept whole, what it holds of the budget is
        /// exact to the block, and all of it goes back.
        #[test]
        fn any_split_is_kept_whole_and_charged_by_the_block(
            len in 0usize..(4 * BLOCK + 100),
            cuts in proptest::collection::vec(1usize..(BLOCK + 10), 1..40),
            declare in any::<bool>(),
        ) {
            let b = budget(usize::MAX);
            let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            let mut body = Unverified::new(b.clone());
            let declared = declare.then_some(len as u64);
            let (mut at, mut i) = (0, 0);
            while at < len {
                let n = cuts[i % cuts.len()].min(len - at);
                body.push(&data[at..at + n], declared).unwrap();
                (at, i) = (at + n, i + 1);
            }
            let charged = b.used.load(Ordering::Acquire);
            let past_first = len.saturating_sub(BLOCK);
            prop_assert!(charged >= past_first);
            prop_assert!(charged <= past_first.div_ceil(BLOCK) * BLOCK);
            prop_assert_eq!(&body.into_bytes()[..], &data[..]);
            prop_assert_eq!(b.used.load(Ordering::Acquire), 0);
        }

        #[test]
        fn the_rate_floor_never_moves_back(a in 0u64..(1 << 30), b in 0u64..(1 << 30), rate in 1u64..(1 << 24)) {
            let floor = RateFloor { grace: BODY_GRACE, bytes_per_sec: rate };
            let (lo, hi) = (a.min(b), a.max(b));
            prop_assert!(floor.next_byte_due(lo) <= floor.next_byte_due(hi));
        }
    }

    #[test]
    fn refusals_are_warned_of_once_a_second_with_the_count_left_unlogged() {
        let intake = Intake::new(&ServerLimits::default());
        assert_eq!(intake.may_warn(), Some(0));
        assert_eq!(intake.may_warn(), None);
        assert_eq!(intake.may_warn(), None);
        let earlier = Instant::now().checked_sub(Duration::from_secs(2));
        intake.warned.lock().unwrap().0 = earlier;
        assert_eq!(intake.may_warn(), Some(2));
        assert_eq!(intake.may_warn(), None);
    }

    #[tokio::test]
    async fn a_peer_over_its_bound_waits_then_is_refused_and_leaves_no_entry() {
        let peers = Arc::new(PeerSlots {
            per_peer: 2,
            wait: Duration::from_millis(50),
            slots: Mutex::new(HashMap::new()),
        });
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "192.0.2.2".parse().unwrap();
        let one = peers.acquire(a).await.unwrap();
        let two = peers.acquire(a).await.unwrap();
        assert!(
            peers.acquire(a).await.is_none(),
            "the third waits, then is refused"
        );
        assert!(
            peers.acquire(b).await.is_some(),
            "another peer is not held up"
        );
        drop(one);
        let three = peers.acquire(a).await.unwrap();
        drop((two, three));
        assert!(peers.lock().is_empty());
    }
}
