//! The state machine: every node applies committed entries to its own
//! store (`D/store/`, a [`ReplicaStore`]), each entry's write batches with
//! the applied log id (and a membership entry's membership) in the same
//! atomic write, under the store's reserved `raft/` meta keys. After a power loss the store
//! rolls back to a consistent point, its applied id with it, and openraft
//! applies again from the log.
//!
//! An entry whose payload format is newer than this build's, or whose
//! column-family table digest differs from this store's, is refused: write
//! batches name families by number, so applying them to another table
//! would write rows into the wrong families. The refusal is a
//! `StorageError`, which stops this node's Raft: loud, and nothing applied.
//!
//! **The fencing token** (`types.rs` [`Epoch`]). An `Epoch::Open` entry
//! records its own log index as the current epoch (`raft/epoch`, in the
//! same atomic write as `raft/applied`). An entry whose batches carry an
//! older epoch is skipped — committed, its applied id written, none of
//! its batches — deterministically on every replica,
//! since the decision depends only on the log before it. An epoch newer
//! than the recorded one cannot be written by a correct leader (an engine
//! opens only after its `Open` entry applied) and is refused like a newer
//! format.
//!
//! **Removed ids.** A membership entry that drops nodes adds their ids to
//! `raft/removed` in the same write: the set of ids ever removed, derived
//! from the sequence of membership entries alone, so every replica (and
//! every snapshot) holds the same set, and a removed id is refused when
//! it would join again (`node/membership.rs`).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use openraft::storage::RaftStateMachine;
use openraft::{
    AnyError, EntryPayload, ErrorSubject, OptionalSend, Snapshot, SnapshotMeta, StorageIOError,
    StoredMembership,
};
use telha_jobs::replica::ReplicaStore;

use crate::snapshot::{Snapshots, StoreCell};

use crate::log_store::codec::{decode_meta, encode};
use crate::types::{
    Applied, Entry, Epoch, LogId, PeerNode, SnapshotDir, StorageError, TypeConfig, PAYLOAD_FORMAT,
};

/// The applied log id (MessagePack `LogId`, framed with a CRC-32C).
pub const META_APPLIED: &[u8] = b"raft/applied";
/// The last membership applied (`StoredMembership`, framed the same way).
pub const META_MEMBERSHIP: &[u8] = b"raft/membership";
/// The current epoch: the log index of the last `Epoch::Open` entry
/// applied (a `u64`, framed the same way; absent = 0).
pub const META_EPOCH: &[u8] = b"raft/epoch";
/// Every node id ever removed from the membership (a `BTreeSet<u64>`,
/// framed the same way; absent = none): written with each membership
/// entry that drops a node, so it is replicated, carried by snapshots,
/// and the same on every replica. A removed id never joins again
/// (`node/membership.rs`).
pub const META_REMOVED: &[u8] = b"raft/removed";

/// See [`StateMachine::after_install`].
pub type AfterInstall = Arc<dyn Fn() -> Result<(), String> + Send + Sync>;

/// The membership as applied: the log id that set it, and it.
pub(crate) type Members = StoredMembership<u64, PeerNode>;

mod snapshots;
pub use snapshots::SnapshotBuilder;

/// A node's state machine over its store. Open one per node; clones of
/// the [`ReplicaStore`] inside serve the engine on the leader.
pub struct StateMachine {
    /// The store, swapped by a snapshot install.
    cell: StoreCell,
    /// Its directory (the same after an install).
    path: PathBuf,
    /// Where snapshots are built and received; `None`: this state machine
    /// refuses them.
    snapshots: Option<Arc<Snapshots>>,
    /// Run after each install (the node: a purge the log put off until
    /// the store had the entries).
    after_install: Option<AfterInstall>,
    cf_table_digest: u64,
    last_applied: Option<LogId>,
    membership: Members,
    /// `membership` encoded, written with the entry that sets it.
    membership_raw: Vec<u8>,
    /// The current epoch (`raft/epoch`).
    epoch: u64,
    /// Entries skipped as stale since open (shared with the node).
    skipped: Arc<AtomicU64>,
    /// The node, for `probe` marks only.
    probe_node: u64,
    /// The node's log's durable index ([`crate::LogStore::durable`]): no
    /// entry is applied before the node's own log has it on disk.
    durable: Option<tokio::sync::watch::Receiver<u64>>,
}

impl StateMachine {
    /// The state machine over `store`, resuming from the applied id and
    /// membership recorded in it (none in a new store).
    pub fn open(store: ReplicaStore) -> Result<StateMachine, StorageError> {
        let last_applied = read_meta(&store, META_APPLIED)?;
        let membership: Members = read_meta(&store, META_MEMBERSHIP)?.unwrap_or_default();
        let membership_raw = encode(&membership).map_err(sm_write)?;
        let epoch = read_meta(&store, META_EPOCH)?.unwrap_or(0);
        Ok(StateMachine {
            epoch,
            skipped: Arc::default(),
            probe_node: 0,
            durable: None,
            cf_table_digest: store.cf_table_digest(),
            path: store.path().to_path_buf(),
            cell: StoreCell::new(store),
            snapshots: None,
            after_install: None,
            last_applied,
            membership,
            membership_raw,
        })
    }

    /// Names the node in this state machine's [`crate::probe`] marks.
    pub fn set_probe_node(&mut self, id: u64) {
        self.probe_node = id;
    }

    /// Applies no entry before `durable` (the node's log's
    /// [`crate::LogStore::durable`]) has reached it.
    pub fn wait_for_log(&mut self, durable: tokio::sync::watch::Receiver<u64>) {
        self.durable = Some(durable);
    }

    /// Builds snapshots in, and receives them into, `snapshots` (the
    /// node's `D/snapshots/`); without it they are refused.
    pub fn keep_snapshots(&mut self, snapshots: Arc<Snapshots>) {
        self.snapshots = Some(snapshots);
    }

    /// Runs `f` after each snapshot install, once the new store is in
    /// place; its error fails the install (the node passes the log's
    /// [`crate::LogStore::purge_deferred`]).
    pub fn after_install(&mut self, f: AfterInstall) {
        self.after_install = Some(f);
    }

    /// The store this state machine applies to, as the node shares it (a
    /// snapshot install swaps what is inside).
    pub fn cell(&self) -> StoreCell {
        self.cell.clone()
    }

    /// A handle to the store, or the error of an install that left none.
    fn store(&self) -> Result<ReplicaStore, StorageError> {
        self.cell.get().ok_or_else(|| {
            let msg = format!(
                "store {}: a snapshot install failed and no store could be opened again",
                self.path.display()
            );
            StorageIOError::write_state_machine(AnyError::error(msg)).into()
        })
    }

    /// How many entries this state machine skipped as stale since it
    /// opened (a counter shared with the caller: the node exposes it).
    pub fn skipped(&self) -> Arc<AtomicU64> {
        self.skipped.clone()
    }

    /// The current epoch: the index of the last `Epoch::Open` entry
    /// applied (0 before any).
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Why `entry` must not be applied here, if it must not.
    fn refusal(&self, log_id: &LogId, format: u32, digest: u64, epoch: Epoch) -> Option<String> {
        if format > PAYLOAD_FORMAT {
            return Some(format!(
                "raft entry {log_id} has payload format {format}, newer than this build's \
                 {PAYLOAD_FORMAT}: upgrade this node to apply it"
            ));
        }
        if format < PAYLOAD_FORMAT {
            return Some(format!(
                "raft entry {log_id} has payload format {format}, older than {PAYLOAD_FORMAT} \
                 (the first with a fencing token): this build does not apply it; the log was \
                 written by a pre-release build, start the cluster afresh"
            ));
        }
        if digest != self.cf_table_digest {
            return Some(format!(
                "raft entry {log_id} was written for column-family table {digest:#018x}, this store \
                 ({}) has table {:#018x}: its write batches would name the wrong families; \
                 reseed this node from a snapshot",
                self.path.display(),
                self.cf_table_digest
            ));
        }
        if let Epoch::Of(e) = epoch {
            if e > self.epoch {
                return Some(format!(
                    "raft entry {log_id} carries epoch {e}, newer than the current epoch {}: \
                     no engine can have opened it (a leader bug or a corrupt log)",
                    self.epoch
                ));
            }
        }
        None
    }

    fn apply_one(&mut self, store: &ReplicaStore, entry: Entry) -> Result<Applied, StorageError> {
        let log_id = entry.log_id;
        let mut applied = Applied::Written;
        let mut membership_changed = false;
        let mut removed_raw = None;
        let batches = match entry.payload {
            EntryPayload::Blank => Vec::new(),
            EntryPayload::Normal(p) => {
                if let Some(why) = self.refusal(&log_id, p.format, p.cf_table_digest, p.epoch) {
                    return Err(StorageIOError::apply(log_id, AnyError::error(why)).into());
                }
                match p.epoch {
                    Epoch::Open => {
                        applied = Applied::Opened(log_id.index);
                        Vec::new()
                    }
                    Epoch::Of(e) if e < self.epoch => {
                        applied = Applied::Stale {
                            epoch: e,
                            current: self.epoch,
                        };
                        Vec::new()
                    }
                    Epoch::Of(_) => p.batches,
                }
            }
            EntryPayload::Membership(m) => {
                // Ids this entry drops: the set of ids ever removed grows.
                let gone: Vec<u64> = self
                    .membership
                    .nodes()
                    .map(|(id, _)| *id)
                    .filter(|id| m.get_node(id).is_none())
                    .collect();
                if !gone.is_empty() {
                    let mut ever = removed_ids(store)?;
                    ever.extend(gone);
                    removed_raw = Some(encode(&ever).map_err(sm_write)?);
                }
                let membership = StoredMembership::new(Some(log_id), m);
                self.membership_raw = encode(&membership).map_err(sm_write)?;
                self.membership = membership;
                membership_changed = true;
                Vec::new()
            }
        };
        #[cfg(feature = "failpoints")]
        if crate::failpoint::hit(crate::failpoint::Point::BeforeApply, &self.path) {
            return Err(failpoint_crash(log_id));
        }
        let applied_raw = encode(&log_id).map_err(sm_write)?;
        let batches: Vec<&[u8]> = batches.iter().map(Vec::as_slice).collect();
        let epoch_raw;
        let mut meta = vec![(META_APPLIED, applied_raw.as_slice())];
        // Written with the entry that changes it only: the store keeps the
        // last one, beside the applied id of that entry or a later one.
        if membership_changed {
            meta.push((META_MEMBERSHIP, self.membership_raw.as_slice()));
        }
        if let Some(raw) = &removed_raw {
            meta.push((META_REMOVED, raw.as_slice()));
        }
        if let Applied::Opened(e) = applied {
            epoch_raw = encode(&e).map_err(sm_write)?;
            meta.push((META_EPOCH, epoch_raw.as_slice()));
        }
        store.apply(&batches, &meta).map_err(|e| {
            let msg = format!("applying raft entry {log_id}: {e}");
            StorageIOError::apply(log_id, AnyError::error(msg))
        })?;
        self.last_applied = Some(log_id);
        match applied {
            Applied::Opened(e) => self.epoch = e,
            Applied::Stale { .. } => {
                self.skipped.fetch_add(1, Ordering::Relaxed);
            }
            Applied::Written => {}
        }
        #[cfg(feature = "failpoints")]
        if crate::failpoint::hit(crate::failpoint::Point::AfterApply, &self.path) {
            return Err(failpoint_crash(log_id));
        }
        Ok(applied)
    }
}

#[cfg(feature = "failpoints")]
fn failpoint_crash(log_id: LogId) -> StorageError {
    StorageIOError::apply(log_id, AnyError::error("failpoint: the node crashed")).into()
}

pub(crate) fn read_meta<T: serde::de::DeserializeOwned>(
    store: &ReplicaStore,
    key: &[u8],
) -> Result<Option<T>, StorageError> {
    let name = String::from_utf8_lossy(key);
    let raw = store.meta_get(key).map_err(|e| {
        let msg = format!("reading {name} from {}: {e}", store.path().display());
        StorageIOError::read_state_machine(AnyError::error(msg))
    })?;
    raw.map(|raw| decode_meta(&name, ErrorSubject::StateMachine, &raw))
        .transpose()
}

/// The ids ever removed from the membership, as `store` applied it
/// ([`META_REMOVED`]).
pub fn removed_ids(store: &ReplicaStore) -> Result<BTreeSet<u64>, StorageError> {
    Ok(read_meta(store, META_REMOVED)?.unwrap_or_default())
}

fn sm_write(e: rmp_serde::encode::Error) -> StorageError {
    StorageIOError::write_state_machine(AnyError::new(&e)).into()
}

impl RaftStateMachine<TypeConfig> for StateMachine {
    type SnapshotBuilder = SnapshotBuilder;

    async fn applied_state(&mut self) -> Result<(Option<LogId>, Members), StorageError> {
        Ok((self.last_applied, self.membership.clone()))
    }

    /// One atomic store write per entry, in order. A refused or failed
    /// entry stops the call: the entries before it stay applied, and
    /// openraft stops this node on the error.
    async fn apply<I>(&mut self, entries: I) -> Result<Vec<Applied>, StorageError>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut out = Vec::new();
        let store = self.store()?;
        for entry in entries {
            #[cfg(feature = "failpoints")]
            crate::failpoint::hold_point(crate::failpoint::HoldAt::Apply, &self.path).await;
            let index = entry.log_id.index;
            if let Some(durable) = &mut self.durable {
                // A leader's entry may commit on two followers before the
                // leader's own sync ends: it waits for it here.
                if *durable.borrow() < index {
                    durable.wait_for(|d| *d >= index).await.map_err(|_| {
                        let e =
                            std::io::Error::other("the log closed before this entry was on disk");
                        StorageError::from(StorageIOError::write_state_machine(AnyError::new(&e)))
                    })?;
                }
            }
            crate::probe::mark(
                crate::probe::Stage::ApplyStart,
                self.probe_node,
                index,
                std::time::Instant::now(),
            );
            out.push(self.apply_one(&store, entry)?);
            crate::probe::mark(
                crate::probe::Stage::ApplyEnd,
                self.probe_node,
                index,
                std::time::Instant::now(),
            );
        }
        Ok(out)
    }

    async fn get_snapshot_builder(&mut self) -> SnapshotBuilder {
        self.builder()
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<SnapshotDir>, StorageError> {
        self.begin_receiving()
    }

    /// Verifies the received checkpoint and swaps it in for the store:
    /// `snapshots.rs`.
    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<u64, PeerNode>,
        snapshot: Box<SnapshotDir>,
    ) -> Result<(), StorageError> {
        self.install(meta, *snapshot).await
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<TypeConfig>>, StorageError> {
        Ok(self.snapshots.as_ref().and_then(|s| s.current()))
    }
}
