//! The Raft type configuration: what an entry carries, what a node is.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The entry payload format this build writes, and the only one it
/// applies: a node refuses an entry of a newer format rather than misread
/// it, so a cluster can be upgraded one node at a time (followers first).
///
/// Format 2 added the fencing token ([`Payload::epoch`]). Format 1 entries
/// (no token) are refused too: no cluster ran them, and applying one
/// without its engine's epoch would give up the fence.
pub const PAYLOAD_FORMAT: u32 = 2;

openraft::declare_raft_types!(
    /// telha's Raft types: node ids are `u64`, entries carry write batches.
    pub TypeConfig:
        D = Payload,
        R = Applied,
        NodeId = u64,
        Node = PeerNode,
        Entry = openraft::Entry<TypeConfig>,
        SnapshotData = SnapshotDir,
        AsyncRuntime = openraft::TokioRuntime,
);

pub type Entry = openraft::Entry<TypeConfig>;
pub type LogId = openraft::LogId<u64>;
pub type Vote = openraft::Vote<u64>;
pub type StorageError = openraft::StorageError<u64>;

/// A member as the others reach it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerNode {
    /// Where its peer service listens, e.g. `http://10.0.0.2:7450`.
    pub addr: String,
}

/// One Raft entry of engine writes: the RocksDB write batches of one or
/// more engine commits, coalesced by the proposer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Payload {
    /// [`PAYLOAD_FORMAT`] of the writer.
    pub format: u32,
    /// Digest of the writer's column-family name → id table: write batch
    /// bytes name families by number, so a node whose table differs must
    /// not apply them.
    pub cf_table_digest: u64,
    /// The fencing token: the epoch this entry opens, or the epoch of the
    /// engine whose batches it carries. Absent in format 1 (decoded as
    /// `Of(0)`, then refused by its format).
    #[serde(default)]
    pub epoch: Epoch,
    /// `WriteBatch::data()` of each commit, applied in order.
    #[serde(with = "batch_bytes")]
    pub batches: Vec<Vec<u8>>,
}

/// An engine's epoch is the log index of the entry that opened it: log
/// indexes of committed entries are unique and ordered, so epochs are
/// totally ordered across the cluster's history, whichever node led.
///
/// A leader opens every engine only after an [`Epoch::Open`] entry of its
/// own is applied on it (the state machine records that entry's index as
/// the current epoch, `raft/epoch`); the engine's proposer stamps each of
/// its entries `Of(that index)`. Every replica applies nothing of an entry
/// stamped with an epoch older than the one recorded: an entry the fenced
/// engine proposed after its successor opened is committed but skipped, so
/// the store holds exactly what the successor recovered plus what it
/// wrote since.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Epoch {
    /// This entry opens the epoch numbered by its own log index; it
    /// carries no batches.
    Open,
    /// Batches of the engine opened by the entry at this index.
    Of(u64),
}

impl Default for Epoch {
    fn default() -> Self {
        Epoch::Of(0)
    }
}

/// What applying an entry did, as the leader's proposer learns it from
/// `client_write`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Applied {
    /// The entry's batches (if any) are in the store.
    #[default]
    Written,
    /// An [`Epoch::Open`] entry: this epoch (its index) is now current.
    Opened(u64),
    /// Nothing of the entry's batches was written, here or on any
    /// replica: its engine's epoch is older than the current one.
    Stale { epoch: u64, current: u64 },
}

/// A snapshot is a RocksDB checkpoint of the node's store (plus its format
/// marker): a directory of files, streamed file by file
/// (`snapshot.rs`, `network/stream.rs`). A handle to one of the node's
/// retained snapshots keeps its directory on disk while it lives (a send
/// in progress), though a newer one retired it meanwhile.
#[derive(Debug, Clone)]
pub struct SnapshotDir {
    pub path: PathBuf,
    /// The retained snapshot this handle holds, if it is one.
    pub(crate) hold: Option<std::sync::Arc<crate::snapshot::Retained>>,
}

impl SnapshotDir {
    /// A handle to the snapshot (or staging) directory `path`, holding
    /// nothing.
    pub fn new(path: impl Into<PathBuf>) -> SnapshotDir {
        SnapshotDir {
            path: path.into(),
            hold: None,
        }
    }
}

impl PartialEq for SnapshotDir {
    fn eq(&self, other: &SnapshotDir) -> bool {
        self.path == other.path
    }
}

impl Eq for SnapshotDir {}

/// Batches as MessagePack `bin`, not arrays of integers: one copy, no
/// per-byte encoding, about half the size.
mod batch_bytes {
    use serde::{Deserialize, Deserializer, Serializer};
    use serde_bytes::{ByteBuf, Bytes};

    pub fn serialize<S: Serializer>(batches: &[Vec<u8>], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(batches.iter().map(|b| Bytes::new(b)))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Vec<u8>>, D::Error> {
        let bufs = Vec::<ByteBuf>::deserialize(d)?;
        Ok(bufs.into_iter().map(ByteBuf::into_vec).collect())
    }
}
