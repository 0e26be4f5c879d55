//! The Raft type configuration: what an entry carries, what a node is.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The entry payload format this build writes, and the newest it applies:
/// a node refuses an entry of a newer format rather than misread it, so a
/// cluster can be upgraded one node at a time (followers first).
pub const PAYLOAD_FORMAT: u32 = 1;

openraft::declare_raft_types!(
    /// telha's Raft types: node ids are `u64`, entries carry write batches.
    pub TypeConfig:
        D = Payload,
        R = (),
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
    /// `WriteBatch::data()` of each commit, applied in order.
    #[serde(with = "batch_bytes")]
    pub batches: Vec<Vec<u8>>,
}

/// A snapshot is a RocksDB checkpoint of the node's store: a directory of
/// files, streamed file by file (snapshots come in a later step; until then
/// the policy is `Never`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotDir {
    pub path: PathBuf,
}

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
