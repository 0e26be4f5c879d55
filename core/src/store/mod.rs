//! The RocksDB store: column families, their options, the counters merge
//! operator, the format marker, and opening with the one-process lock.

pub(crate) mod batch;
#[cfg(feature = "rocksdb")]
pub(crate) mod checkpoint;
pub mod codec;
pub mod format;
pub mod keys;
pub(crate) mod msgpack;

/// The job rows, keyed by [`keys::JobKey`]; values are [`codec`] records.
pub const CF_JOBS: &str = "jobs";
/// Job id → the job's current jobs key.
pub const CF_IDS: &str = "ids";
/// The per-kind index of pending and failed rows (value: the state byte).
pub const CF_KINDS: &str = "kinds";
/// Scope + idempotency key → job id.
pub const CF_IDEM: &str = "idem";
/// Kind → job counts per state, maintained by [`counters_merge`].
pub const CF_COUNTERS: &str = "counters";
/// Durable settings of the store (format 2 and later), each kind under
/// its own key prefix: `pause/` (engine/pause.rs), `limit/`
/// (engine/flow.rs), and [`RAFT_META_PREFIX`], reserved for the replicated
/// state machine. The engine only ever seeks its own prefixes; nothing
/// walks the whole family, and whatever comes to walk it must skip
/// [`RAFT_META_PREFIX`].
pub const CF_META: &str = "meta";
/// The keys of the [`CF_META`] family that belong to the replicated state
/// machine (telha-jobs-cluster: the applied log id, the membership), not to
/// the engine: written only by [`crate::replica::ReplicaStore::apply`],
/// never by an engine batch, and left out of the replica digest. No engine
/// prefix starts with it.
pub const RAFT_META_PREFIX: &[u8] = b"raft/";
/// Job id → the payload, for payloads over [`INLINE_PAYLOAD_MAX`] (format 2
/// and later): written once at enqueue, deleted with the job, so a large
/// payload is not rewritten by every transition.
pub const CF_PAYLOADS: &str = "payloads";
/// Expiry instant (8 bytes, big-endian) + job id → empty: the pending jobs
/// that were never leased and carry an expiry (format 2), so the reaper
/// finds the due ones with one seek and nothing else costs anything.
pub const CF_EXPIRY: &str = "expiry";
/// Schedule name → the schedule's row ([`crate::schedule`]): what was put
/// and how far it has enqueued. Created in place in older stores (an
/// older build opens a store that has it and leaves it alone).
pub const CF_SCHEDULES: &str = "schedules";
/// Per-scope counters live in [`CF_COUNTERS`] beside the per-kind ones,
/// under keys no kind can have (a kind key is its UTF-8 name; these start
/// with 0xFF): `0xFF 's'` + the scope's 16 bytes. An older build that reads
/// the family skips them as malformed rows and goes on.
pub const SCOPE_COUNTER_PREFIX: [u8; 2] = [0xFF, b's'];
/// Written with the per-scope counters' rebuild: from then on every batch
/// keeps them. Absent (a store from before them), they are rebuilt at open.
pub const SCOPE_COUNTERS_MARKER: [u8; 2] = [0xFF, b'M'];

/// The counters key of a scope's counts.
pub fn scope_counter_key(s: &crate::ids::Scope) -> [u8; 18] {
    let mut k = [0u8; 18];
    k[..2].copy_from_slice(&SCOPE_COUNTER_PREFIX);
    k[2..].copy_from_slice(s.as_bytes());
    k
}

/// The scope of a per-scope counters key; `None` for any other key.
pub fn scope_of_counter_key(k: &[u8]) -> Option<crate::ids::Scope> {
    let b: [u8; 16] = k.strip_prefix(&SCOPE_COUNTER_PREFIX)?.try_into().ok()?;
    Some(crate::ids::Scope::from_bytes(b))
}

/// Every column family; a raw RocksDB open of the store must name them all.
pub const ALL_CFS: [&str; 9] = [
    CF_JOBS,
    CF_IDS,
    CF_KINDS,
    CF_IDEM,
    CF_COUNTERS,
    CF_META,
    CF_PAYLOADS,
    CF_EXPIRY,
    CF_SCHEDULES,
];

/// Payloads up to this many bytes live inside the job record (rewritten
/// by each transition, read with it); longer ones in [`CF_PAYLOADS`]
/// (written once, one more point read per lease). Chosen where an extra
/// write plus read costs about what rewriting the bytes twice does
/// (`make bench`, "cost").
pub const INLINE_PAYLOAD_MAX: usize = 1024;

/// The file in the store directory naming the owning process.
pub const PID_FILE: &str = "telha.pid";

/// The registered name of [`counters_merge`].
pub const COUNTERS_MERGE_NAME: &str = "telha_counters_add_v1";

pub use crate::state::{decode_counters, encode_counters};

/// Element-wise add of counter vectors: the merge operator of the counters
/// CF (tools that open the store with raw RocksDB must register it too).
/// Values of any length are added (see [`crate::state::merge_counter_values`]).
#[cfg(feature = "rocksdb")]
pub fn counters_merge(
    _key: &[u8],
    existing: Option<&[u8]>,
    operands: &rocksdb::MergeOperands,
) -> Option<Vec<u8>> {
    Some(crate::state::merge_counter_values(existing, operands))
}

/// The registered name of [`counters_filter`].
pub const COUNTERS_FILTER_NAME: &str = "telha_counters_drop_zero_scopes_v1";

/// The counters family's compaction filter: a per-scope row whose value
/// counts zero in every state is dropped (issue 50: a scope that came and
/// went leaves no row behind). Exact whatever runs concurrently: the filter
/// sees a value RocksDB has already merged, and an absent row adds up as
/// zeros do, so merge operands written later sum to the same counts with or
/// without it. Kind rows, the marker and malformed rows are kept.
#[cfg(feature = "rocksdb")]
pub fn counters_filter(_level: u32, key: &[u8], value: &[u8]) -> rocksdb::CompactionDecision {
    let zero = scope_of_counter_key(key).is_some()
        && crate::state::decode_counter_values(value).is_some_and(|v| v.iter().all(|x| *x == 0));
    if zero {
        rocksdb::CompactionDecision::Remove
    } else {
        rocksdb::CompactionDecision::Keep
    }
}

#[cfg(feature = "rocksdb")]
mod db;
#[cfg(feature = "rocksdb")]
pub use db::*;
#[cfg(feature = "rocksdb")]
mod owner;
#[cfg(feature = "rocksdb")]
pub(crate) use owner::{Store, HEAVY_WRITE};
