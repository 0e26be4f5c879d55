//! The in-process network: every node of a test cluster lives in one
//! process, and an RPC is a call on the target's `Raft` handle, through a
//! [`Router`] that injects seeded faults per directed link:
//!
//! - **drop** (a rate per direction): the request, or the reply after the
//!   target handled it, is lost; the sender sees a `NetworkError` at once
//!   (a reset connection), so a lossy link costs retries, not timeouts;
//! - **delay** (uniform in [min, max], each direction);
//! - **cut** (one-way or symmetric partitions) and a **down** node (not
//!   registered): `Unreachable`, which makes openraft back off instead of
//!   retrying hot (openraft's FAQ). A cut reply direction means the target
//!   handled the request and the sender never learns it;
//! - **hang**: the call never answers until the RPC's `hard_ttl`, then
//!   `Timeout` (openraft's own timeout usually fires first).
//!
//! Requests run on the sender's runtime, the target's `Raft` handle hands
//! them to the target's core (its own runtime), so a slow or hung link
//! never blocks the target.

mod links;
mod mute;
mod rng;
mod stream;

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use openraft::error::{
    Fatal, NetworkError, RPCError, RaftError, RemoteError, ReplicationClosed, StreamingError,
    Timeout, Unreachable,
};
use openraft::network::{Backoff, RPCOption, RPCTypes, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, VoteRequest, VoteResponse,
};
use openraft::{Raft, Snapshot};

pub use links::{LinkClient, Links};
pub use mute::{Mute, MuteClient};
pub use rng::{test_seed, SplitMix64};
pub use stream::{
    SnapshotDeadlines, SNAPSHOT_CHUNK, SNAPSHOT_IDLE_DEFAULT, SNAPSHOT_TOTAL_DEFAULT,
};

use crate::types::{PeerNode, TypeConfig, Vote};

/// How long openraft waits before it retries a peer that answered
/// `Unreachable` (its default is 500 ms). Short enough that a healed
/// partition is noticed within a few heartbeats.
pub const UNREACHABLE_BACKOFF_DEFAULT: Duration = Duration::from_millis(200);

/// The in-memory network of one test cluster. Cheap to clone.
#[derive(Clone)]
pub struct Router {
    inner: Arc<Inner>,
}

struct Inner {
    seed: u64,
    rng: Mutex<SplitMix64>,
    targets: Mutex<HashMap<u64, Raft<TypeConfig>>>,
    faults: Mutex<Faults>,
    stats: Counters,
    /// When each node last accepted a leader's append-entries.
    heard: Mutex<HashMap<u64, std::time::Instant>>,
    /// Per node, what it admits ([`Router::set_gate`]).
    gates: Mutex<HashMap<u64, Gate>>,
}

/// One RPC as a receiving node's [`Gate`] sees it.
#[derive(Debug, Clone, Copy)]
pub struct Arriving {
    pub from: u64,
    pub action: RPCTypes,
    /// Whether the sender's configuration has the receiver as a voter
    /// (between processes the request will carry this bit).
    pub as_voter: bool,
}

/// A node's check of every RPC before its Raft sees it: `Err` refuses it
/// (the sender gets `Unreachable` with the reason).
pub type Gate = Arc<dyn Fn(Arriving) -> Result<(), String> + Send + Sync>;

#[derive(Default)]
struct Faults {
    /// Drop rate of every link without its own.
    drop_all: f64,
    /// Drop rate per directed link (from, to).
    drop: HashMap<(u64, u64), f64>,
    /// Delay range per message, in milliseconds.
    delay_ms: (u64, u64),
    /// Directed links that deliver nothing.
    cut: HashSet<(u64, u64)>,
    /// Directed links whose messages never arrive nor fail.
    hung: HashSet<(u64, u64)>,
    backoff: Option<Duration>,
    /// Snapshot transfers' deadlines (`stream.rs`), when set.
    snapshot: Option<SnapshotDeadlines>,
}

#[derive(Default)]
struct Counters {
    sent: AtomicU64,
    delivered: AtomicU64,
    dropped: AtomicU64,
    unreachable: AtomicU64,
    hung: AtomicU64,
    snapshots: AtomicU64,
}

/// What the router did so far, for assertions that faults happened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RouterStats {
    /// RPCs attempted.
    pub sent: u64,
    /// RPCs whose request reached the target.
    pub delivered: u64,
    /// Requests or replies lost to the drop rate.
    pub dropped: u64,
    /// RPCs answered `Unreachable` (cut link or down node).
    pub unreachable: u64,
    /// RPCs held on a hung link until their deadline.
    pub hung: u64,
    /// Snapshots sent whole and handed to the receiver's install.
    pub snapshots: u64,
}

/// What happens to one message on one directed link.
enum Fate {
    Deliver(Duration),
    Drop,
    Cut,
    Hang,
}

impl Router {
    /// A network with no faults, deciding its faults from `seed`.
    pub fn new(seed: u64) -> Router {
        Router {
            inner: Arc::new(Inner {
                seed,
                rng: Mutex::new(SplitMix64::new(seed)),
                targets: Mutex::new(HashMap::new()),
                faults: Mutex::new(Faults::default()),
                stats: Counters::default(),
                heard: Mutex::new(HashMap::new()),
                gates: Mutex::new(HashMap::new()),
            }),
        }
    }

    pub fn seed(&self) -> u64 {
        self.inner.seed
    }

    /// The network factory node `from` gives its `Raft`.
    pub fn factory(&self, from: u64) -> RouterFactory {
        RouterFactory {
            from,
            router: self.clone(),
        }
    }

    /// Make `id` reachable at `raft` (a started or restarted node).
    pub fn register(&self, id: u64, raft: Raft<TypeConfig>) {
        lock(&self.inner.targets).insert(id, raft);
    }

    /// Check every RPC to `id` with `gate` first (until replaced or
    /// [`Router::clear_gate`]).
    pub fn set_gate(&self, id: u64, gate: Gate) {
        lock(&self.inner.gates).insert(id, gate);
    }

    pub fn clear_gate(&self, id: u64) {
        lock(&self.inner.gates).remove(&id);
    }

    /// Take `id` off the network (a crashed node): every RPC to or from it
    /// answers `Unreachable` until it registers again.
    pub fn unregister(&self, id: u64) {
        lock(&self.inner.targets).remove(&id);
    }

    /// Node `id`'s `Raft`, while it is registered (the gRPC service of a
    /// node finds it here: `transport/server.rs`).
    pub fn target(&self, id: u64) -> Option<Raft<TypeConfig>> {
        lock(&self.inner.targets).get(&id).cloned()
    }

    /// `to`'s gate, if it has one, on an RPC that came from another
    /// process (its request says whether its sender has `to` as a voter).
    pub fn admit_arriving(&self, to: u64, a: Arriving) -> Result<(), String> {
        let Some(gate) = lock(&self.inner.gates).get(&to).cloned() else {
            return Ok(());
        };
        gate(a)
    }

    /// Note that `id` accepted a leader's append-entries now (the gRPC
    /// client does, as the in-process links do).
    pub fn mark_heard(&self, id: u64) {
        lock(&self.inner.heard).insert(id, std::time::Instant::now());
    }

    /// When node `id` last accepted an append-entries (a heartbeat or
    /// entries) from a leader, if it has since this router began.
    pub fn last_heard(&self, id: u64) -> Option<std::time::Instant> {
        lock(&self.inner.heard).get(&id).copied()
    }

    /// Every link drops each message with probability `rate`.
    pub fn set_drop_rate(&self, rate: f64) {
        self.faults().drop_all = rate;
    }

    /// Messages from `from` to `to` are dropped with probability `rate`.
    pub fn set_link_drop_rate(&self, from: u64, to: u64, rate: f64) {
        self.faults().drop.insert((from, to), rate);
    }

    /// Every message waits uniformly in [min, max] before it goes on.
    pub fn set_delay(&self, min: Duration, max: Duration) {
        self.faults().delay_ms = (min.as_millis() as u64, max.as_millis() as u64);
    }

    /// Nothing from `from` reaches `to` (a one-way partition).
    pub fn cut(&self, from: u64, to: u64) {
        self.faults().cut.insert((from, to));
    }

    /// No message either way between `a` and `b`.
    pub fn cut_both(&self, a: u64, b: u64) {
        let mut f = self.faults();
        f.cut.insert((a, b));
        f.cut.insert((b, a));
    }

    /// `id` exchanges nothing with any of `others` (a symmetric partition
    /// of `id` from them).
    pub fn isolate(&self, id: u64, others: &[u64]) {
        for &o in others {
            if o != id {
                self.cut_both(id, o);
            }
        }
    }

    /// Messages from `from` to `to` neither arrive nor fail: the sender
    /// waits out its deadline.
    pub fn hang(&self, from: u64, to: u64) {
        self.faults().hung.insert((from, to));
    }

    /// Clear cuts and hung links (drop rates and delays stay).
    pub fn heal(&self) {
        let mut f = self.faults();
        f.cut.clear();
        f.hung.clear();
    }

    /// Clear every fault.
    pub fn clear_faults(&self) {
        let (backoff, snapshot) = {
            let f = self.faults();
            (f.backoff, f.snapshot)
        };
        *self.faults() = Faults {
            backoff,
            snapshot,
            ..Faults::default()
        };
    }

    /// How long openraft backs off from an unreachable peer
    /// ([`UNREACHABLE_BACKOFF_DEFAULT`] unless set).
    pub fn set_unreachable_backoff(&self, d: Duration) {
        self.faults().backoff = Some(d);
    }

    pub fn stats(&self) -> RouterStats {
        let s = &self.inner.stats;
        RouterStats {
            sent: s.sent.load(Ordering::Relaxed),
            delivered: s.delivered.load(Ordering::Relaxed),
            dropped: s.dropped.load(Ordering::Relaxed),
            unreachable: s.unreachable.load(Ordering::Relaxed),
            hung: s.hung.load(Ordering::Relaxed),
            snapshots: s.snapshots.load(Ordering::Relaxed),
        }
    }

    fn faults(&self) -> std::sync::MutexGuard<'_, Faults> {
        lock(&self.inner.faults)
    }

    fn fate(&self, from: u64, to: u64) -> Fate {
        let f = self.faults();
        if f.cut.contains(&(from, to)) {
            return Fate::Cut;
        }
        if f.hung.contains(&(from, to)) {
            return Fate::Hang;
        }
        let rate = f.drop.get(&(from, to)).copied().unwrap_or(f.drop_all);
        let (lo, hi) = f.delay_ms;
        drop(f);
        let mut rng = lock(&self.inner.rng);
        if rng.chance(rate) {
            return Fate::Drop;
        }
        Fate::Deliver(Duration::from_millis(rng.between(lo, hi)))
    }

    /// Carry one RPC from `from` to `to` and its reply back, each leg
    /// under that link's faults.
    async fn carry<T, E, Fut>(
        &self,
        from: u64,
        to: u64,
        action: RPCTypes,
        ttl: Duration,
        call: impl FnOnce(Raft<TypeConfig>) -> Fut,
    ) -> Result<T, Failure<E>>
    where
        Fut: Future<Output = Result<T, E>>,
    {
        let s = &self.inner.stats;
        s.sent.fetch_add(1, Ordering::Relaxed);
        let timeout = || Timeout {
            action,
            id: from,
            target: to,
            timeout: ttl,
        };
        if !lock(&self.inner.targets).contains_key(&from) {
            // A down node sends nothing either (a test may unregister a
            // node whose `Raft` still runs).
            s.unreachable.fetch_add(1, Ordering::Relaxed);
            return Err(Failure::Unreachable(format!("node {from} is down")));
        }
        self.leg(from, to, ttl, &timeout).await?;
        let Some(raft) = lock(&self.inner.targets).get(&to).cloned() else {
            s.unreachable.fetch_add(1, Ordering::Relaxed);
            return Err(Failure::Unreachable(format!("node {to} is down")));
        };
        if let Err(why) = self.admit(from, to, action) {
            s.unreachable.fetch_add(1, Ordering::Relaxed);
            return Err(Failure::Unreachable(why));
        }
        s.delivered.fetch_add(1, Ordering::Relaxed);
        let answer = call(raft).await;
        self.leg(to, from, ttl, &timeout).await?;
        answer.map_err(Failure::Remote)
    }

    /// `to`'s gate, if it has one, on an RPC from `from`.
    fn admit(&self, from: u64, to: u64, action: RPCTypes) -> Result<(), String> {
        let Some(gate) = lock(&self.inner.gates).get(&to).cloned() else {
            return Ok(());
        };
        let sender = lock(&self.inner.targets).get(&from).cloned();
        let as_voter = sender.is_some_and(|r| {
            r.metrics()
                .borrow()
                .membership_config
                .membership()
                .voter_ids()
                .any(|v| v == to)
        });
        gate(Arriving {
            from,
            action,
            as_voter,
        })
    }

    /// One direction of one RPC.
    async fn leg<E>(
        &self,
        from: u64,
        to: u64,
        ttl: Duration,
        timeout: &impl Fn() -> Timeout<u64>,
    ) -> Result<(), Failure<E>> {
        let s = &self.inner.stats;
        match self.fate(from, to) {
            Fate::Deliver(d) => {
                if !d.is_zero() {
                    tokio::time::sleep(d).await;
                }
                Ok(())
            }
            Fate::Drop => {
                s.dropped.fetch_add(1, Ordering::Relaxed);
                Err(Failure::Dropped(format!("message {from} -> {to} dropped")))
            }
            Fate::Cut => {
                s.unreachable.fetch_add(1, Ordering::Relaxed);
                Err(Failure::Unreachable(format!("link {from} -> {to} is cut")))
            }
            Fate::Hang => {
                s.hung.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(ttl).await;
                Err(Failure::Timeout(timeout()))
            }
        }
    }
}

/// How an RPC failed, before it is cast into the error type of its call.
enum Failure<E> {
    Dropped(String),
    Unreachable(String),
    Timeout(Timeout<u64>),
    Remote(E),
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct LinkError(String);

type RpcResult<T> = Result<T, RPCError<u64, PeerNode, RaftError<u64>>>;

impl Failure<RaftError<u64>> {
    fn into_rpc(self, target: u64) -> RPCError<u64, PeerNode, RaftError<u64>> {
        match self {
            Failure::Dropped(m) => RPCError::Network(NetworkError::new(&LinkError(m))),
            Failure::Unreachable(m) => RPCError::Unreachable(Unreachable::new(&LinkError(m))),
            Failure::Timeout(t) => RPCError::Timeout(t),
            // A stopped target is as good as down: back off, don't retry hot.
            Failure::Remote(RaftError::Fatal(f)) => RPCError::Unreachable(Unreachable::new(&f)),
            Failure::Remote(e) => RPCError::RemoteError(RemoteError::new(target, e)),
        }
    }
}

/// Node `from`'s way to its peers.
pub struct RouterFactory {
    from: u64,
    router: Router,
}

impl RaftNetworkFactory<TypeConfig> for RouterFactory {
    type Network = RouterClient;

    async fn new_client(&mut self, target: u64, _node: &PeerNode) -> RouterClient {
        RouterClient {
            from: self.from,
            to: target,
            router: self.router.clone(),
        }
    }
}

/// One directed connection, `from` → `to`.
pub struct RouterClient {
    from: u64,
    to: u64,
    router: Router,
}

impl RaftNetwork<TypeConfig> for RouterClient {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> RpcResult<AppendEntriesResponse<u64>> {
        let (from, to) = (self.from, self.to);
        let last = rpc.entries.last().map(|e| e.log_id.index);
        self.router
            .carry(
                from,
                to,
                RPCTypes::AppendEntries,
                option.hard_ttl(),
                |r| async move {
                    if let Some(i) = last {
                        let now = std::time::Instant::now();
                        crate::probe::mark(crate::probe::Stage::Delivered, to, i, now);
                    }
                    r.append_entries(rpc).await
                },
            )
            .await
            .inspect(|r| {
                if !matches!(r, AppendEntriesResponse::HigherVote(_)) {
                    let now = std::time::Instant::now();
                    lock(&self.router.inner.heard).insert(to, now);
                    if let Some(i) = last {
                        crate::probe::mark(crate::probe::Stage::Acked, to, i, now);
                    }
                }
            })
            .map_err(|f| f.into_rpc(to))
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<u64>,
        option: RPCOption,
    ) -> RpcResult<VoteResponse<u64>> {
        let (from, to) = (self.from, self.to);
        self.router
            .carry(
                from,
                to,
                RPCTypes::Vote,
                option.hard_ttl(),
                |r| async move { r.vote(rpc).await },
            )
            .await
            .map_err(|f| f.into_rpc(to))
    }

    /// Streams the snapshot's files to the target (`stream.rs`), with
    /// deadlines of its own, not `option`'s.
    async fn full_snapshot(
        &mut self,
        vote: Vote,
        snapshot: Snapshot<TypeConfig>,
        cancel: impl Future<Output = ReplicationClosed> + Send + 'static,
        _option: RPCOption,
    ) -> Result<SnapshotResponse<u64>, StreamingError<TypeConfig, Fatal<u64>>> {
        self.router
            .send_snapshot(self.from, self.to, vote, snapshot, cancel)
            .await
    }

    fn backoff(&self) -> Backoff {
        let d = self
            .router
            .faults()
            .backoff
            .unwrap_or(UNREACHABLE_BACKOFF_DEFAULT);
        Backoff::new(std::iter::repeat(d))
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
