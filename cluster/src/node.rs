//! One node: a data directory `D` with `D/raft/` (the log store) and
//! `D/store/` (the [`ReplicaStore`] the state machine applies to), its
//! `Raft` on its own small tokio runtime, and on the leader one engine per
//! leadership term.
//!
//! **Engine per term** (docs/ARCHITECTURE.md "Cluster"). A std thread
//! (`telha-node-<id>`) watches the Raft metrics and opens an engine
//! ([`Queue::open_replica`], writes through a [`Proposer`]) only when this
//! node is leader of a committed vote AND its own `Epoch::Open` entry,
//! proposed as soon as the leadership is seen, is applied (so everything
//! before it too). It also makes an overdue follower stand
//! (`elect.rs`). It fences
//! and drops the engine when leadership changes, when no quorum has
//! acknowledged it for longer than the election timeout's maximum
//! (openraft 0.9 has no check-quorum: an isolated leader calls itself
//! leader until it hears a higher vote), or when a write's outcome was
//! unknown. A fenced engine is never revived.
//!
//! **Fencing token.** Every engine opens only after an `Epoch::Open` entry
//! of this leader is applied here; its epoch is that entry's log index,
//! and its proposer stamps every entry with it. Everything before the
//! Open entry in the log is applied before the engine's recovery reads
//! the store; an entry of an earlier engine that reaches the log after it
//! (a fenced engine's proposal already past its fence check, or a
//! restarted leader's entries of its previous incarnation) is skipped by
//! every replica's state machine. So the store never holds a write the
//! engine's memory does not know.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use openraft::{Raft, RaftMetrics, ServerState};
use telha_jobs::replica::ReplicaStore;
use telha_jobs::{Clock, Config, Error, Queue, SystemClock};

use crate::elect::Overdue;

mod bootstrap;
pub mod dir;
mod membership;
mod open;
mod seed;
use crate::network::{Links, Mute, Router};
use crate::proposer::{Proposer, ProposerConfig};
use crate::snapshot::{SnapshotPolicy, SnapshotTrigger, Snapshots, StoreCell};
use crate::state_machine::StateMachine;
pub use crate::timing::{Timing, ELECTION_MAX_DEFAULT, ELECTION_MIN_DEFAULT, HEARTBEAT_DEFAULT};
use crate::transport::GrpcNetwork;
use crate::types::{PeerNode, TypeConfig, Vote};
use crate::LogStore;
pub use bootstrap::Bootstrap;
pub use dir::{EmptyDir, NodeFile, StartRefused, NODE_FILE};
pub use membership::{LearnerProgress, MembershipError, MembershipView, Role};
use open::try_open;
pub use seed::SEED_NODE_ID;

/// How a node runs.
#[derive(Clone)]
pub struct NodeOptions {
    pub timing: Timing,
    /// The engine's configuration on the leader.
    pub queue_config: Config,
    /// The engine's clock (TTLs, deadlines); Raft uses tokio's time.
    pub clock: Arc<dyn Clock>,
    pub proposer: ProposerConfig,
    /// How often the engine watcher looks at the metrics when nothing
    /// changes (it also wakes on every change).
    pub watch_interval: Duration,
    /// Whether a follower that heard no leader past openraft's longest
    /// ordinary wait stands itself (`elect.rs`; on by default, off only
    /// to measure what it saves).
    pub stand_when_overdue: bool,
    /// When to snapshot, and how much log to keep behind a snapshot.
    pub snapshots: SnapshotPolicy,
    /// What a start on an empty data directory is for (`node/dir.rs`):
    /// refused unless said.
    pub empty_dir: EmptyDir,
    /// Reach peers over gRPC (`transport/`) instead of the router's
    /// in-process links; the router still holds this node's `Raft`, gate
    /// and heard times, which its [`PeerService`](crate::transport::PeerService)
    /// uses.
    pub grpc: Option<GrpcNetwork>,
}

impl Default for NodeOptions {
    fn default() -> Self {
        NodeOptions {
            timing: Timing::default(),
            queue_config: Config::default(),
            clock: Arc::new(SystemClock),
            proposer: ProposerConfig::default(),
            watch_interval: Duration::from_millis(20),
            stand_when_overdue: true,
            snapshots: SnapshotPolicy::default(),
            empty_dir: EmptyDir::Refuse,
            grpc: None,
        }
    }
}

/// A node failed to start or to act.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct NodeError(pub String);

/// This node runs no engine now.
#[derive(Debug, Clone, thiserror::Error)]
#[error("node {node} has no engine: {reason}")]
pub struct Unavailable {
    pub node: u64,
    /// The leader this node knows of, if any (maybe itself, while its
    /// engine opens).
    pub leader: Option<u64>,
    pub reason: String,
}

impl From<Unavailable> for Error {
    fn from(u: Unavailable) -> Error {
        Error::unavailable(u.to_string())
    }
}

/// The engine of the current term, and what the watcher learned.
#[derive(Default)]
struct Slot {
    term: Option<Term>,
    leader: Option<u64>,
    opened: u64,
    /// The epoch of the last engine opened here.
    epoch: Option<u64>,
    fences: Vec<String>,
    /// The watcher's recent events (elections, the engine's opening), for
    /// failover timelines: [`Node::events_since`].
    events: std::collections::VecDeque<(Instant, String)>,
}

/// Events kept per node.
const EVENTS_KEPT: usize = 64;

impl Slot {
    fn event(&mut self, what: String) {
        if self.events.len() == EVENTS_KEPT {
            self.events.pop_front();
        }
        self.events.push_back((Instant::now(), what));
    }
}

struct Term {
    vote: Vote,
    epoch: u64,
    queue: Queue,
    proposer: Proposer,
    opened_at: Instant,
}

struct Shared {
    id: u64,
    slot: Mutex<Slot>,
    stop: AtomicBool,
    /// This node's append-entries fail locally (it stepped aside).
    muted: Arc<AtomicBool>,
}

/// One running node. Dropping it stops it in order (engine fenced, Raft
/// shut down, stores closed); [`Node::crash`] does the same without
/// waiting for Raft to finish.
pub struct Node {
    id: u64,
    dir: PathBuf,
    router: Router,
    raft: Raft<TypeConfig>,
    store: StoreCell,
    snapshots: Arc<Snapshots>,
    /// Entries the state machine skipped as stale (fencing token).
    skipped: Arc<AtomicU64>,
    shared: Arc<Shared>,
    /// Why the cluster was refused, joining (`node/dir.rs` `join_gate`).
    join_refused: Arc<Mutex<Option<StartRefused>>>,
    /// One membership call at a time on this node (`membership.rs`).
    admin: Mutex<()>,
    watcher: Option<JoinHandle<()>>,
    rt: Option<tokio::runtime::Runtime>,
}

impl Node {
    /// Start (or restart, from what `dir` holds) node `id` on `router`.
    /// `dir` is checked first (`node/dir.rs`): an empty one only with
    /// [`NodeOptions::empty_dir`] saying what for, one whose log is gone
    /// never ([`StartRefused`], in the error's text). A seed left
    /// unfinished is finished (`node/seed.rs`).
    pub fn start(
        id: u64,
        dir: &Path,
        router: &Router,
        opts: NodeOptions,
    ) -> Result<Node, NodeError> {
        let file = dir::prepare(id, dir, opts.empty_dir).map_err(|e| NodeError(e.to_string()))?;
        let node = Node::start_raft(id, dir, router, opts, file.joining)?;
        if file.seeding_from.is_some() {
            seed::finish(&node, file)?;
        }
        Ok(node)
    }

    fn start_raft(
        id: u64,
        dir: &Path,
        router: &Router,
        opts: NodeOptions,
        joining: bool,
    ) -> Result<Node, NodeError> {
        let raft_cfg = Arc::new(opts.timing.raft_config(opts.snapshots.keep_log)?);
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name(format!("telha-raft-{id}"))
            .enable_all()
            .build()
            .map_err(|e| NodeError(format!("node {id}: runtime: {e}")))?;
        std::fs::create_dir_all(dir.join("store"))
            .map_err(|e| NodeError(format!("node {id}: {}: {e}", dir.display())))?;
        let log = LogStore::open(dir.join("raft"))
            .map_err(|e| NodeError(format!("node {id}: log store: {e}")))?;
        let store = open_store(&dir.join("store"))
            .map_err(|e| NodeError(format!("node {id}: store: {e}")))?;
        let snapshots = Arc::new(
            Snapshots::open(&dir.join("snapshots"))
                .map_err(|e| NodeError(format!("node {id}: snapshots: {e}")))?,
        );
        log.set_probe_node(id);
        log.set_node(id);
        let mut sm = StateMachine::open(store)
            .map_err(|e| NodeError(format!("node {id}: state machine: {e}")))?;
        sm.set_probe_node(id);
        sm.wait_for_log(log.durable());
        sm.keep_snapshots(snapshots.clone());
        let store = sm.cell();
        log.before_purge(crate::snapshot::purge_guard(store.clone()));
        let purge_log = log.clone();
        sm.after_install(Arc::new(move || {
            purge_log
                .purge_deferred()
                .map(drop)
                .map_err(|e| e.to_string())
        }));
        let log_handle = log.clone();
        let skipped = sm.skipped();
        let muted = Arc::new(AtomicBool::new(false));
        let links = match &opts.grpc {
            Some(g) => Links::Grpc(g.bind(id, router.clone())),
            None => Links::Local(router.factory(id)),
        };
        let network = Mute::new(links, muted.clone());
        let raft = rt
            .block_on(Raft::new(id, raft_cfg, network, log, sm))
            .map_err(|e| NodeError(format!("node {id}: raft: {e}")))?;
        let join_refused = Arc::new(Mutex::new(None));
        if joining {
            let gate = dir::join_gate(id, dir, raft.clone(), join_refused.clone());
            router.set_gate(id, gate);
        } else {
            router.clear_gate(id);
        }
        router.register(id, raft.clone());
        let shared = Arc::new(Shared {
            id,
            slot: Mutex::new(Slot::default()),
            stop: AtomicBool::new(false),
            muted,
        });
        let watcher = {
            let (raft, store, shared, handle) = (
                raft.clone(),
                store.clone(),
                shared.clone(),
                rt.handle().clone(),
            );
            let (r, started) = (router.clone(), Instant::now());
            let heard: Heard = Box::new(move || r.last_heard(id).unwrap_or(started).max(started));
            std::thread::Builder::new()
                .name(format!("telha-node-{id}"))
                .spawn(move || watch(raft, store, shared, handle, opts, heard, log_handle))
                .map_err(|e| NodeError(format!("node {id}: watcher thread: {e}")))?
        };
        Ok(Node {
            id,
            dir: dir.to_path_buf(),
            router: router.clone(),
            raft,
            store,
            snapshots,
            skipped,
            shared,
            join_refused,
            admin: Mutex::new(()),
            watcher: Some(watcher),
            rt: Some(rt),
        })
    }

    pub fn id(&self) -> u64 {
        self.id
    }

    /// Started with [`EmptyDir::Join`], whether this node refused the
    /// cluster because its id is a voter there while its data is new
    /// ([`StartRefused::WipedMember`]: join under a new id).
    pub fn join_refused(&self) -> Option<StartRefused> {
        lock(&self.join_refused).clone()
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn raft(&self) -> &Raft<TypeConfig> {
        &self.raft
    }

    /// A handle to this node's store (`None` only after a snapshot
    /// install failed and no store could be opened again: the node has
    /// stopped). Let it go after use: an install waits for every handle.
    pub fn store(&self) -> Option<ReplicaStore> {
        self.store.get()
    }

    /// This node's retained snapshots (`D/snapshots/`).
    pub fn snapshots(&self) -> &Snapshots {
        &self.snapshots
    }

    pub fn metrics(&self) -> RaftMetrics<u64, PeerNode> {
        self.raft.metrics().borrow().clone()
    }

    /// Run `f` on this node's Raft runtime (for tests: triggers, waits).
    pub fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        self.rt.as_ref().expect("running").block_on(f)
    }

    /// The engine of the current term, or why there is none (with the
    /// leader this node knows of).
    pub fn queue(&self) -> Result<Queue, Unavailable> {
        let slot = lock(&self.shared.slot);
        match &slot.term {
            Some(t) => Ok(t.queue.clone()),
            None => Err(Unavailable {
                node: self.id,
                leader: slot.leader,
                reason: match slot.leader {
                    Some(l) if l == self.id => "leader, engine not open yet".into(),
                    Some(l) => format!("not the leader (node {l} is)"),
                    None => "no leader known".into(),
                },
            }),
        }
    }

    /// Fence this node's engine now, as the watcher does when no quorum
    /// acknowledged the leader in time: every call answers `Unavailable`,
    /// and if this node still leads, the next engine of its vote opens
    /// after a new epoch entry (for operators and tests).
    pub fn fence_engine(&self, reason: &str) {
        fence(&self.shared, reason);
    }

    /// The epoch (fencing token) of the last engine opened on this node.
    pub fn engine_epoch(&self) -> Option<u64> {
        lock(&self.shared.slot).epoch
    }

    /// Entries of a fenced engine this node's state machine skipped since
    /// it started (committed after a newer epoch opened: nothing of them
    /// written).
    pub fn entries_skipped(&self) -> u64 {
        self.skipped.load(Ordering::Relaxed)
    }

    /// What this node's watcher saw at or after `t` (state changes, the
    /// Open entry proposed and applied, the engine opened), each with the
    /// time since `t`: a failover's timeline.
    pub fn events_since(&self, t: Instant) -> Vec<(Duration, String)> {
        lock(&self.shared.slot)
            .events
            .iter()
            .filter(|(at, _)| *at >= t)
            .map(|(at, what)| (at.duration_since(t), what.clone()))
            .collect()
    }

    /// Engines opened on this node so far.
    pub fn engines_opened(&self) -> u64 {
        lock(&self.shared.slot).opened
    }

    /// Why each engine of this node was fenced, in order.
    pub fn fences(&self) -> Vec<String> {
        lock(&self.shared.slot).fences.clone()
    }

    /// Stop abruptly: off the network first (nothing more leaves or
    /// arrives), engine fenced, Raft and stores dropped. What the log and
    /// store hold on disk is what a restart finds.
    pub fn crash(mut self) {
        self.router.unregister(self.id);
        self.stop();
    }

    fn stop(&mut self) {
        self.router.unregister(self.id);
        self.shared.stop.store(true, Ordering::Release);
        if let Some(w) = self.watcher.take() {
            let _ = w.join();
        }
        fence(&self.shared, "node stopped");
        if let Some(rt) = self.rt.take() {
            let _ = rt.block_on(self.raft.shutdown());
            rt.shutdown_timeout(Duration::from_secs(5));
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `ReplicaStore::open`, retried briefly while a previous incarnation's
/// handles (an engine a caller still holds) let go of the store.
fn open_store(path: &Path) -> Result<ReplicaStore, Error> {
    let end = Instant::now() + Duration::from_secs(5);
    loop {
        match ReplicaStore::open(path) {
            Err(e) if e.kind() == telha_jobs::ErrorKind::StoreLocked && Instant::now() < end => {
                std::thread::sleep(Duration::from_millis(20));
            }
            r => return r,
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Fence and drop the current engine, if any.
fn fence(shared: &Shared, reason: &str) {
    let mut slot = lock(&shared.slot);
    if let Some(t) = slot.term.take() {
        let why = format!(
            "node {}: engine of {}, epoch {}, fenced after {} ms: {reason}",
            shared.id,
            t.vote,
            t.epoch,
            t.opened_at.elapsed().as_millis()
        );
        t.proposer.fence(&why);
        t.queue.fence(&why);
        slot.fences.push(why);
    }
}

/// When this node last heard a leader (or started, if later).
type Heard = Box<dyn Fn() -> Instant + Send>;

/// The engine watcher: one per node, a std thread (opening an engine
/// blocks and may replicate). It also triggers snapshots by the policy.
fn watch(
    raft: Raft<TypeConfig>,
    store: StoreCell,
    shared: Arc<Shared>,
    rt: tokio::runtime::Handle,
    opts: NodeOptions,
    heard: Heard,
    log: LogStore,
) {
    let mut rx = raft.metrics();
    let mut snap = SnapshotTrigger::new(opts.snapshots, log.appended_bytes());
    let stale_after = opts.timing.election_max;
    let mut seen_at = Instant::now();
    let mut seen_state = None;
    let mut seen_applied = None;
    let mut overdue = Overdue::new(opts.timing.heartbeat, opts.timing.election_max);
    while !shared.stop.load(Ordering::Acquire) {
        let m = rx.borrow_and_update().clone();
        let since_ack = m
            .millis_since_quorum_ack
            .map(|ms| Duration::from_millis(ms) + seen_at.elapsed());
        let leading = m.state == ServerState::Leader
            && m.current_leader == Some(shared.id)
            && m.vote.is_committed();
        let fresh = since_ack.is_some_and(|d| d <= stale_after);
        let term_applied = m
            .last_applied
            .is_some_and(|a| a.leader_id == *m.vote.leader_id());
        {
            let mut slot = lock(&shared.slot);
            slot.leader = m.current_leader;
            if seen_state != Some((m.state, m.vote)) {
                seen_state = Some((m.state, m.vote));
                slot.event(format!("{:?}, vote {}", m.state, m.vote));
            }
            if leading && term_applied && seen_applied != Some(m.vote) {
                seen_applied = Some(m.vote);
                slot.event(format!("an entry of vote {} applied", m.vote));
            }
            let why = slot.term.as_ref().and_then(|t| {
                if !leading || t.vote != m.vote {
                    Some(format!(
                        "leadership changed (state {:?}, vote {}, leader {:?})",
                        m.state, m.vote, m.current_leader
                    ))
                } else if !fresh {
                    Some(format!(
                        "no quorum acknowledged this leader for {:?} (limit {stale_after:?})",
                        since_ack
                    ))
                } else if t.proposer.answered_unknown() {
                    Some("a write's outcome was unknown".into())
                } else {
                    None
                }
            });
            drop(slot);
            if let Some(why) = why {
                fence(&shared, &why);
            }
        }
        // A leader no quorum acknowledged for twice the limit steps aside
        // (network/mute.rs) until it no longer leads.
        let is_leader = m.state == ServerState::Leader;
        let muted = shared.muted.load(Ordering::Acquire);
        if !muted && is_leader && since_ack.is_some_and(|d| d > stale_after * 2) {
            shared.muted.store(true, Ordering::Release);
        } else if muted && !is_leader {
            shared.muted.store(false, Ordering::Release);
        }
        // The Open entry goes into the log right behind the term's blank
        // entry, without waiting for it: the engine opens once the Open
        // entry is applied, so everything before it is too.
        let open = leading && fresh && lock(&shared.slot).term.is_none();
        if open {
            try_open(&raft, &store, &shared, &rt, &opts, m.vote);
        }
        if snap.due(&m, log.appended_bytes()) {
            let _ = rt.block_on(raft.trigger().snapshot());
        }
        // A follower's purge that came before its snapshot install.
        if let Err(e) = log.purge_deferred() {
            lock(&shared.slot).event(format!("deferred log purge failed: {e}"));
        }
        let leader_is_self = m.current_leader == Some(shared.id);
        if opts.stand_when_overdue
            && overdue.observe(m.state, &m.vote, leader_is_self, heard(), Instant::now())
        {
            lock(&shared.slot).event(format!(
                "no leader heard past openraft's longest wait under {}: standing",
                m.vote
            ));
            let _ = rt.block_on(raft.trigger().elect());
        }
        // Wake on the next metrics change or after the interval.
        let wait = opts.watch_interval;
        let changed = rt.block_on(async { tokio::time::timeout(wait, rx.changed()).await });
        match changed {
            Ok(Ok(())) => seen_at = Instant::now(),
            Ok(Err(_)) => break, // Raft is gone.
            Err(_) => {}
        }
    }
}
