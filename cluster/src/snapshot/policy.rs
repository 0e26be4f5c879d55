//! When a node snapshots, and how much log it keeps behind a snapshot.

use std::time::{Duration, Instant};

use openraft::RaftMetrics;

use crate::types::PeerNode;

/// A snapshot every this many entries applied since the last one.
pub const SNAPSHOT_ENTRIES_DEFAULT: u64 = 100_000;
/// ... or every this many bytes of log appended since the last one.
pub const SNAPSHOT_BYTES_DEFAULT: u64 = 256 << 20;
/// Entries kept in the log behind the newest snapshot: what a leader
/// writes while one snapshot is sent and installed, so a follower that
/// installs it catches up from the log (openraft #1706). 10,000 entries
/// cover a 10 s transfer at 1,000 entries/s (each entry coalesces many
/// engine commits).
pub const KEEP_LOG_DEFAULT: u64 = 10_000;

/// The snapshot policy by log size (openraft's own policy is left at
/// `Never`: the node's watcher triggers builds by this rule). Every
/// checkpoint flushes the store's memtables, so snapshots are rare, not
/// every few thousand entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotPolicy {
    /// A snapshot once this many entries were applied since the last
    /// (0: never by count).
    pub entries: u64,
    /// ... or once this many bytes of log were appended since (0: never
    /// by size).
    pub bytes: u64,
    /// openraft's `max_in_snapshot_log_to_keep`: entries kept in the log
    /// behind the newest snapshot.
    pub keep_log: u64,
}

impl Default for SnapshotPolicy {
    fn default() -> Self {
        SnapshotPolicy {
            entries: SNAPSHOT_ENTRIES_DEFAULT,
            bytes: SNAPSHOT_BYTES_DEFAULT,
            keep_log: KEEP_LOG_DEFAULT,
        }
    }
}

impl SnapshotPolicy {
    /// No snapshot, no purge (the log grows without bound): stage 2's
    /// behaviour, for tests and benches that measure without snapshots.
    pub fn never() -> SnapshotPolicy {
        SnapshotPolicy {
            entries: 0,
            bytes: 0,
            keep_log: KEEP_LOG_DEFAULT,
        }
    }

    /// Whether `entries` applied and `bytes` appended since the last
    /// snapshot call for a new one.
    pub fn due(&self, entries: u64, bytes: u64) -> bool {
        (self.entries > 0 && entries >= self.entries) || (self.bytes > 0 && bytes >= self.bytes)
    }
}

/// The snapshot policy's trigger: entries applied and log bytes appended
/// since the last snapshot this node saw (built or installed), once per
/// snapshot (again after [`SnapshotTrigger::RETRY`] if none came of it).
pub(crate) struct SnapshotTrigger {
    policy: SnapshotPolicy,
    seen: u64,
    bytes_at: u64,
    asked: Option<Instant>,
}

impl SnapshotTrigger {
    const RETRY: Duration = Duration::from_secs(5);

    pub(crate) fn new(policy: SnapshotPolicy, bytes: u64) -> SnapshotTrigger {
        SnapshotTrigger {
            policy,
            seen: 0,
            bytes_at: bytes,
            asked: None,
        }
    }

    pub(crate) fn due(&mut self, m: &RaftMetrics<u64, PeerNode>, bytes: u64) -> bool {
        let snapshot = m.snapshot.map_or(0, |s| s.index);
        if snapshot > self.seen {
            self.seen = snapshot;
            self.bytes_at = bytes;
            self.asked = None;
        }
        let applied = m.last_applied.map_or(0, |a| a.index);
        let since = applied.saturating_sub(self.seen);
        let due = since > 0
            && self.policy.due(since, bytes.saturating_sub(self.bytes_at))
            && self.asked.is_none_or(|t| t.elapsed() >= Self::RETRY);
        if due {
            self.asked = Some(Instant::now());
        }
        due
    }
}
