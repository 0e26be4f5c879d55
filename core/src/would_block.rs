//! `Queue::would_block` and `Queue::write_busy`: whether a write issued
//! now could wait (issue 37). A binding that runs short calls on its
//! caller's thread (Node's event loop, node/src/stall.rs) keeps the first
//! answer in an atomic refreshed by a thread of its own, asks the second
//! (one atomic load) per call, and hands calls to its pool while either is
//! true: the caller's thread then never waits on a stall, a flush or
//! another thread's long write.
//!
//! What can make a write wait, and what this reads (RocksDB properties, per
//! column family where they are per family):
//! - writes stopped or slowed (too many memtables or level-0 files):
//!   `rocksdb.is-write-stopped`, `rocksdb.actual-delayed-write-rate`;
//! - a flush pending or running (an immutable memtable waiting: the next
//!   switch may have to wait for it, and installing its result takes the
//!   DB mutex the write path takes too): `rocksdb.mem-table-flush-pending`,
//!   `rocksdb.num-running-flushes`;
//! - an active memtable near its family's `write_buffer_size` (64 MiB, the
//!   counters family's 8 MiB): the write that fills it switches memtables
//!   (a new WAL file) on the writing thread: `rocksdb.cur-size-active-mem-table`
//!   against [`NEAR_FULL_EIGHTHS`] of it;
//! - another thread's heavy write running ([`crate::store::HEAVY_WRITE`]
//!   entries or more: a reaper pass, an `enqueue_many`): RocksDB inserts a
//!   write group's batches one after another, so a short write that joins
//!   behind it waits for all of it. Counted by the embedded commit in an
//!   atomic ([`Queue::write_busy`]).
//!
//! Not covered: the switch of every family's memtable when the WAL files
//! pass `max_total_wal_size` (4 × the families' buffers, about 2.6 GiB of
//! WAL held by a family that is rarely written), which RocksDB exposes no
//! property for.

use std::fmt;

use crate::queue::Queue;
use crate::store::{ALL_CFS, CF_COUNTERS, COUNTERS_WRITE_BUFFER};

/// RocksDB's default `write_buffer_size`, which every family but the
/// counters keeps (`store/db.rs`).
const WRITE_BUFFER_SIZE: u64 = 64 << 20;

/// The share of a family's `write_buffer_size`, in eighths, past which its
/// active memtable counts as near full: 7/8 leaves 8 MiB of a 64 MiB
/// buffer and 1 MiB of the counters' 8 MiB, far more than the writes of
/// one refresh period of the binding's watcher.
pub const NEAR_FULL_EIGHTHS: u64 = 7;

/// The byte count past which `family`'s active memtable is near full.
fn near_full(family: &str) -> u64 {
    let size = if family == CF_COUNTERS {
        COUNTERS_WRITE_BUFFER as u64
    } else {
        WRITE_BUFFER_SIZE
    };
    size / 8 * NEAR_FULL_EIGHTHS
}

/// Why a write issued now could wait on RocksDB ([`Queue::write_pressure`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WritePressure {
    /// RocksDB stopped writes (`rocksdb.is-write-stopped`).
    Stopped,
    /// RocksDB delays writes (`rocksdb.actual-delayed-write-rate`).
    Delayed,
    /// A flush is running (`rocksdb.num-running-flushes`).
    FlushRunning,
    /// A family has an immutable memtable waiting for its flush.
    FlushPending(&'static str),
    /// A family's active memtable is near its `write_buffer_size`.
    MemtableNearFull(&'static str),
}

impl fmt::Display for WritePressure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WritePressure::Stopped => f.write_str("writes stopped"),
            WritePressure::Delayed => f.write_str("writes delayed"),
            WritePressure::FlushRunning => f.write_str("a flush running"),
            WritePressure::FlushPending(cf) => write!(f, "a flush pending in {cf}"),
            WritePressure::MemtableNearFull(cf) => write!(f, "the {cf} memtable near full"),
        }
    }
}

impl Queue {
    /// Whether a write now could block on RocksDB: [`Queue::write_pressure`]
    /// has a reason. See its costs.
    pub fn would_block(&self) -> bool {
        self.write_pressure().is_some()
    }

    /// Why a write now could block on RocksDB, the first reason found
    /// (see the module's notes); `None` when nothing would. Reads up to 21
    /// properties, each of which takes RocksDB's DB mutex for a moment
    /// (6–9 µs in all, measured at load 12 on 2 cores; a background flush installing
    /// its result holds that mutex longer), so a caller that must not wait
    /// caches it from another thread rather than asking per call. A closed
    /// handle answers `None` (the call then fails with `Closed` at once).
    pub fn write_pressure(&self) -> Option<WritePressure> {
        let e = self.engine().ok()?;
        let db = e.db();
        let int = |p: &std::ffi::CStr| db.property_int_value(p).ok().flatten().unwrap_or(0);
        if int(c"rocksdb.is-write-stopped") != 0 {
            return Some(WritePressure::Stopped);
        }
        if int(c"rocksdb.actual-delayed-write-rate") != 0 {
            return Some(WritePressure::Delayed);
        }
        if int(c"rocksdb.num-running-flushes") != 0 {
            return Some(WritePressure::FlushRunning);
        }
        for name in ALL_CFS {
            let Some(cf) = db.cf_handle(name) else {
                continue;
            };
            let cf_int =
                |p: &std::ffi::CStr| db.property_int_value_cf(cf, p).ok().flatten().unwrap_or(0);
            if cf_int(c"rocksdb.mem-table-flush-pending") != 0 {
                return Some(WritePressure::FlushPending(name));
            }
            if cf_int(c"rocksdb.cur-size-active-mem-table") >= near_full(name) {
                return Some(WritePressure::MemtableNearFull(name));
            }
        }
        None
    }

    /// Whether another thread's heavy write (a reaper pass, an
    /// `enqueue_many` of hundreds and more: [`crate::store::HEAVY_WRITE`]
    /// entries) is running on this store now, which a short write issued
    /// now would queue behind. One atomic load, kept current by the
    /// embedded commit: cheap enough to ask per call. A write that starts
    /// just after the answer is not seen; a closed handle answers false.
    pub fn write_busy(&self) -> bool {
        self.engine().is_ok_and(|e| e.heavy_writes() > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::{near_full, WritePressure};
    use crate::config::Config;
    use crate::queue::Queue;
    use crate::store::{CF_COUNTERS, CF_JOBS, CF_META};

    #[test]
    fn a_quiet_store_would_not_block_and_a_closed_one_answers_false() {
        let dir = tempfile::tempdir().unwrap();
        let q = Queue::open(dir.path(), Config::default()).unwrap();
        assert_eq!(q.write_pressure(), None);
        assert!(!q.would_block());
        assert!(!q.write_busy());
        q.close();
        assert!(!q.would_block());
        assert!(!q.write_busy());
    }

    /// Fill `family`'s active memtable with 64 KiB values (in a family the
    /// engine does not read back) until `write_pressure` answers.
    fn fill_until_pressure(family: &str) -> (u64, Option<WritePressure>) {
        let dir = tempfile::tempdir().unwrap();
        let q = Queue::open(dir.path(), Config::default()).unwrap();
        let e = q.engine().unwrap();
        let cf = e.db().cf_handle(family).unwrap();
        let value = vec![7u8; 64 << 10];
        let mut written = 0u64;
        let mut i = 0u32;
        let answer = loop {
            if let Some(p) = q.write_pressure() {
                break Some(p);
            }
            if written > near_full(family) + (1 << 20) {
                break None;
            }
            let key = [b"zz-would-block-test-".as_slice(), &i.to_be_bytes()].concat();
            e.db().put_cf(cf, key, &value).unwrap();
            written += value.len() as u64;
            i += 1;
        };
        drop(e);
        q.close();
        (written, answer)
    }

    #[test]
    fn a_memtable_near_full_is_pressure_at_seven_eighths_of_its_family_buffer() {
        // The counters family's buffer is 8 MiB: near full before 8 MiB were
        // written (the 64 MiB families' threshold would never be reached
        // before it switches). RocksDB's size counts the memtable's arena
        // blocks, a little more than the bytes written.
        let (written, p) = fill_until_pressure(CF_COUNTERS);
        assert_eq!(p, Some(WritePressure::MemtableNearFull(CF_COUNTERS)));
        assert!((4 << 20..8 << 20).contains(&written), "{written}");
        let (written, p) = fill_until_pressure(CF_META);
        assert_eq!(p, Some(WritePressure::MemtableNearFull(CF_META)));
        assert!((48 << 20..64 << 20).contains(&written), "{written}");
        assert_eq!(
            WritePressure::MemtableNearFull(CF_JOBS).to_string(),
            "the jobs memtable near full"
        );
    }

    #[test]
    fn a_heavy_write_makes_the_store_busy_while_it_runs_and_only_then() {
        let dir = tempfile::tempdir().unwrap();
        let q = Queue::open(dir.path(), Config::default()).unwrap();
        let done = std::sync::atomic::AtomicBool::new(false);
        let seen = std::thread::scope(|s| {
            let watcher = s.spawn(|| {
                let mut seen = false;
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    seen |= q.write_busy();
                }
                seen
            });
            // One batch of MAX_BATCH (10,000) jobs: tens of milliseconds of memtable
            // inserts, counted while they run.
            let jobs: Vec<_> = (0..crate::limits::MAX_BATCH)
                .map(|_| crate::job::NewJob::new("k", b"{}".to_vec()))
                .collect();
            q.enqueue_many(jobs).unwrap();
            done.store(true, std::sync::atomic::Ordering::Relaxed);
            watcher.join().unwrap()
        });
        assert!(seen, "write_busy never answered true during a heavy write");
        assert!(!q.write_busy(), "the heavy write is still counted after it");
        // Short writes are not counted.
        let jobs: Vec<_> = (0..crate::store::HEAVY_WRITE / 8)
            .map(|_| crate::job::NewJob::new("k", b"{}".to_vec()))
            .collect();
        q.enqueue_many(jobs).unwrap();
        assert!(!q.write_busy());
    }
}
