//! An existing single store made node 1 of a new one-node cluster
//! ([`Node::seed_from_store`]); learners then join it by snapshot.
//!
//! **The store is moved, not copied**: `rename(S, D/store)` (one
//! filesystem: across filesystems it is refused, nothing changed), so
//! there are never two live copies that could both be written. Where it
//! was, a marker is left (`telha_jobs::store::format::mark_moved`): a
//! `Queue::open` of the old path answers `UnsupportedFormat` saying where
//! the store went, instead of creating an empty store there.
//!
//! In order, each step durable before the next (a crash anywhere is
//! finished by the next start of `D`):
//! 1. `S` opened as a replica store (its lock: a process using it fails
//!    the seed with `StoreLocked`), refused if it already is a node's
//!    store (`raft/applied`) or `check()` finds problems, then closed
//!    (every memtable flushed);
//! 2. `D/node.toml` written: node 1, a new cluster id, `seeding_from = S`;
//! 3. `S` renamed to `D/store`, both parents synced;
//! 4. the marker left at `S` (again at the next start if a crash came
//!    before it);
//! 5. the node started; while `seeding_from` is set, the start finishes
//!    the seed: Raft initialized with node 1 alone (unless it was), a
//!    snapshot built once the membership entry is applied, and the log
//!    purged up to it. The log's first entries do not hold the store's
//!    jobs, so no follower may ever be sent them: with the log purged, a
//!    learner's replication starts with the snapshot (the whole store).
//!    Then `seeding_from` is cleared.

use std::path::Path;
use std::time::{Duration, Instant};

use telha_jobs::replica::ReplicaStore;
use telha_jobs::store::format::{mark_moved, MOVED_FILE};

use super::dir::{self, NodeFile};
use super::{Node, NodeError, NodeOptions};
use crate::network::Router;
use crate::state_machine::{read_meta, META_APPLIED};
use crate::types::LogId;

/// The id a seeded node gets.
pub const SEED_NODE_ID: u64 = 1;

/// How long a seed waits for each of its Raft steps.
const STEP_WITHIN: Duration = Duration::from_secs(60);

impl Node {
    /// Make the plain store at `store` (as `Queue::open` makes it, not
    /// open elsewhere) node 1 of a new one-node cluster in the empty or
    /// missing directory `dir`: see the module doc. Returns the running
    /// node, leader of its cluster, its log purged up to a snapshot of
    /// the store, so learners added next join by that snapshot.
    pub fn seed_from_store(
        store: &Path,
        dir: &Path,
        router: &Router,
        opts: NodeOptions,
    ) -> Result<Node, NodeError> {
        let err = |msg: String| NodeError(format!("seed from {}: {msg}", store.display()));
        if !dir::is_empty(dir) {
            return Err(err(format!(
                "{} is not empty: a node is seeded into a new directory",
                dir.display()
            )));
        }
        if !store.join("CURRENT").exists() {
            return Err(err("no store there".into()));
        }
        let store = store
            .canonicalize()
            .map_err(|e| err(format!("cannot resolve it: {e}")))?;
        let s = ReplicaStore::open(&store).map_err(|e| err(e.to_string()))?;
        let applied: Option<LogId> = read_meta(&s, META_APPLIED).map_err(|e| err(e.to_string()))?;
        if let Some(a) = applied {
            return Err(err(format!(
                "it is already a cluster node's store (applied {a}): start that node instead"
            )));
        }
        let report = s
            .check(opts.queue_config.clone())
            .map_err(|e| err(format!("check(): {e}")))?;
        if !report.problems.is_empty() {
            return Err(err(format!(
                "check() found {} problems, e.g. {:?}: repair the store first",
                report.problems.len(),
                report.problems.first()
            )));
        }
        s.close(Duration::from_secs(10))
            .map_err(|(e, _)| err(format!("closing it: {e}")))?;

        std::fs::create_dir_all(dir).map_err(|e| err(format!("{}: {e}", dir.display())))?;
        let dir = dir
            .canonicalize()
            .map_err(|e| err(format!("{}: {e}", dir.display())))?;
        let mut file = NodeFile::new(SEED_NODE_ID);
        file.cluster_id = Some(uuid::Uuid::now_v7().to_string());
        file.seeding_from = Some(store.clone());
        file.write(&dir).map_err(err)?;
        let to = dir.join("store");
        if let Err(e) = std::fs::rename(&store, &to) {
            let _ = std::fs::remove_file(dir.join(dir::NODE_FILE));
            let why = if e.raw_os_error() == Some(18) {
                format!(
                    "it cannot be moved to {} ({e}): put the node's directory on the store's \
                     filesystem; nothing was changed",
                    to.display()
                )
            } else {
                format!(
                    "cannot move it to {}: {e}; nothing was changed",
                    to.display()
                )
            };
            return Err(err(why));
        }
        for d in [store.parent(), Some(dir.as_path())].into_iter().flatten() {
            crate::snapshot::sync_dir(d).map_err(|e| err(format!("{}: {e}", d.display())))?;
        }
        leave_marker(&store, &dir, &file)?;
        Node::start(SEED_NODE_ID, &dir, router, opts)
    }
}

fn leave_marker(store: &Path, dir: &Path, file: &NodeFile) -> Result<(), NodeError> {
    let note = format!(
        "it was moved to {} as node {} of cluster {}; run that node (its store is \
         {}/store) instead",
        dir.display(),
        file.node_id,
        file.cluster_id.as_deref().unwrap_or("?"),
        dir.display()
    );
    mark_moved(store, &note)
        .map_err(|e| NodeError(format!("seed: marking {}: {e}", store.display())))
}

/// Step 5 of the module doc, on a started node whose `node.toml` says
/// `seeding_from`.
pub(super) fn finish(node: &Node, mut file: NodeFile) -> Result<(), NodeError> {
    let id = node.id();
    let err = |msg: String| NodeError(format!("node {id}: finishing the seed: {msg}"));
    let Some(from) = file.seeding_from.clone() else {
        return Ok(());
    };
    if !from.join(MOVED_FILE).exists() {
        leave_marker(&from, node.dir(), &file)?;
    }
    let m = node.metrics();
    if m.membership_config
        .membership()
        .voter_ids()
        .next()
        .is_none()
    {
        node.initialize(&[id])?;
    }
    wait(node, "the membership applied", |m| {
        m.last_applied.is_some() && m.state == openraft::ServerState::Leader
    })
    .map_err(err)?;
    let _ = node.block_on(node.raft().trigger().snapshot());
    let snap = wait(node, "a snapshot of the store", |m| m.snapshot.is_some()).map_err(err)?;
    let upto = snap.snapshot.expect("waited for");
    let _ = node.block_on(node.raft().trigger().purge_log(upto.index));
    wait(node, "the log purged up to the snapshot", |m| {
        m.purged.is_some_and(|p| p.index >= upto.index)
    })
    .map_err(err)?;
    file.seeding_from = None;
    file.write(node.dir()).map_err(err)
}

type Metrics = openraft::RaftMetrics<u64, crate::types::PeerNode>;

fn wait(node: &Node, what: &str, ok: impl Fn(&Metrics) -> bool) -> Result<Metrics, String> {
    let end = Instant::now() + STEP_WITHIN;
    loop {
        let m = node.metrics();
        if ok(&m) {
            return Ok(m);
        }
        if let Err(e) = &m.running_state {
            return Err(format!("waiting for {what}: raft stopped: {e}"));
        }
        if Instant::now() > end {
            return Err(format!("{what} not within {STEP_WITHIN:?}"));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
