//! `Queue::would_block`: whether a write issued now could wait on RocksDB
//! (issue 37). A binding that runs short calls on its caller's thread
//! (Node's event loop, node/src/stall.rs) keeps this answer in an atomic
//! refreshed by a thread of its own, and hands calls to its pool while it
//! is true: the caller's thread then never waits on a stall or a flush.
//!
//! What can make a write wait, and what this reads (RocksDB properties, per
//! column family where they are per family):
//! - writes stopped or slowed (too many memtables or level-0 files):
//!   `rocksdb.is-write-stopped`, `rocksdb.actual-delayed-write-rate`;
//! - a flush pending or running (an immutable memtable waiting: the next
//!   switch may have to wait for it, and installing its result takes the
//!   DB mutex the write path takes too): `rocksdb.mem-table-flush-pending`,
//!   `rocksdb.num-running-flushes`;
//! - an active memtable near its `write_buffer_size`: the write that fills
//!   it switches memtables (a new WAL file) on the writing thread:
//!   `rocksdb.cur-size-active-mem-table` against [`NEAR_FULL`] of it.

use crate::queue::Queue;
use crate::store::ALL_CFS;

/// RocksDB's default `write_buffer_size` (the store does not change it).
const WRITE_BUFFER_SIZE: u64 = 64 << 20;

/// The share of `write_buffer_size` past which the active memtable counts
/// as near full: 7/8 leaves 8 MiB, far more than the writes of one
/// refresh period of the binding's watcher.
const NEAR_FULL: u64 = WRITE_BUFFER_SIZE / 8 * 7;

impl Queue {
    /// Whether a write now could block on RocksDB: writes stopped or
    /// delayed, a flush pending or running, or an active memtable near
    /// full (see the module's notes). Reads a handful of properties (each
    /// takes RocksDB's DB mutex for a moment: a few microseconds in all),
    /// so callers cache it rather than ask per call. A closed handle
    /// answers false (the call then fails with `Closed` at once).
    pub fn would_block(&self) -> bool {
        let Ok(e) = self.engine() else { return false };
        let db = e.db();
        let int = |p: &std::ffi::CStr| db.property_int_value(p).ok().flatten().unwrap_or(0);
        if int(c"rocksdb.is-write-stopped") != 0
            || int(c"rocksdb.actual-delayed-write-rate") != 0
            || int(c"rocksdb.num-running-flushes") != 0
        {
            return true;
        }
        ALL_CFS.iter().filter_map(|n| db.cf_handle(n)).any(|cf| {
            let cf_int =
                |p: &std::ffi::CStr| db.property_int_value_cf(cf, p).ok().flatten().unwrap_or(0);
            cf_int(c"rocksdb.mem-table-flush-pending") != 0
                || cf_int(c"rocksdb.cur-size-active-mem-table") >= NEAR_FULL
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Config;
    use crate::queue::Queue;

    #[test]
    fn a_quiet_store_would_not_block_and_a_closed_one_answers_false() {
        let dir = tempfile::tempdir().unwrap();
        let q = Queue::open(dir.path(), Config::default()).unwrap();
        assert!(!q.would_block());
        q.close();
        assert!(!q.would_block());
    }
}
