//! Whether a write on the JS thread could wait on RocksDB now (issue 37):
//! the answer of `Queue::write_pressure` (a stall, a pending or running
//! flush, a memtable near full), kept in an atomic that a thread of its
//! own refreshes every [`REFRESH`]. The JS thread only loads the atomic:
//! it never reads a RocksDB property (each takes the DB mutex, which a
//! flush installing its result or a memtable switch can hold) and never
//! waits on what it guards against. While the answer is true, `now.rs`
//! sends the short calls to the pool.
//!
//! The process counts what the watchers read and why calls were sent to
//! the pool (`loopDeclines`, what bench/lag.js prints).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use napi_derive::napi;
use telha_jobs::{JobStore, WritePressure};

/// Why a short call went to the pool instead of the JS thread (`now.rs`).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Decline {
    /// A remote queue or `sync_writes`: never on the loop (not counted).
    Never,
    /// A pool call of the same handle still running, or a queue that serves.
    Pool,
    /// RocksDB pressure, as the watcher last read it.
    Pressure,
    /// Another thread's heavy write running (`Queue::write_busy`).
    Busy,
}

/// Declines by reason (`Pool`, `Pressure`, `Busy`), then the watchers'
/// reads, then those reads by [`WritePressure`] reason (stopped, delayed,
/// flush running, flush pending, memtable near full).
static COUNTS: [AtomicU64; 9] = [const { AtomicU64::new(0) }; 9];

fn bump(i: usize) {
    COUNTS[i].fetch_add(1, Ordering::Relaxed);
}

impl Decline {
    pub(crate) fn count(self) {
        match self {
            Decline::Never => {}
            Decline::Pool => bump(0),
            Decline::Pressure => bump(1),
            Decline::Busy => bump(2),
        }
    }
}

/// What `loopDeclines()` answers: counts since the addon loaded, for every
/// queue of the process.
#[napi(object, object_from_js = false)]
pub struct LoopDeclines {
    /// Short calls sent to the pool because a pool call of the same queue
    /// was still running (or the queue serves).
    pub pool: f64,
    /// Short calls sent to the pool because the watcher had read RocksDB
    /// pressure (a stall, a flush, a memtable near full).
    pub pressure: f64,
    /// Short calls sent to the pool because another thread's heavy write
    /// was running (`Queue::write_busy`).
    pub busy: f64,
    /// The watchers' reads of RocksDB's state (one per refresh).
    pub reads: f64,
    /// Reads that found writes stopped.
    pub stopped: f64,
    /// Reads that found writes delayed.
    pub delayed: f64,
    /// Reads that found a flush running.
    pub flush_running: f64,
    /// Reads that found a flush pending.
    pub flush_pending: f64,
    /// Reads that found a memtable near full.
    pub near_full: f64,
}

/// Why short calls went to the pool, and what the stall watchers read,
/// since the addon loaded (bench/lag.js).
#[napi]
pub fn loop_declines() -> LoopDeclines {
    let c = |i: usize| COUNTS[i].load(Ordering::Relaxed) as f64;
    LoopDeclines {
        pool: c(0),
        pressure: c(1),
        busy: c(2),
        reads: c(3),
        stopped: c(4),
        delayed: c(5),
        flush_running: c(6),
        flush_pending: c(7),
        near_full: c(8),
    }
}

/// How often the watcher reads RocksDB's state. A memtable fills from
/// near full (7/8 of 64 MiB) to full in far more than this at any write
/// rate the JS thread reaches (8 MiB of writes).
pub const REFRESH: Duration = Duration::from_millis(1);

/// The cached answer, and the flag that ends its watcher.
#[derive(Debug)]
pub(crate) struct StallWatch {
    blocked: Arc<AtomicBool>,
    alive: Arc<AtomicBool>,
}

impl StallWatch {
    /// Watch `q` when calls of it may run on the JS thread (`fast`); a
    /// store that is not watched answers blocked (its calls go to the pool
    /// anyway). The watcher holds the store weakly: a queue collected or
    /// closed ends it.
    pub(crate) fn new(q: &Arc<dyn JobStore>, fast: bool) -> Self {
        let blocked = Arc::new(AtomicBool::new(!fast));
        let alive = Arc::new(AtomicBool::new(true));
        if fast && q.as_local().is_some() {
            let weak: Weak<dyn JobStore> = Arc::downgrade(q);
            let (b, a) = (blocked.clone(), alive.clone());
            let spawned = std::thread::Builder::new()
                .name("telha-stall-watch".into())
                .spawn(move || watch(&weak, &b, &a));
            // No thread: never on the loop, rather than unguarded.
            if spawned.is_err() {
                blocked.store(true, Ordering::Relaxed);
            }
        }
        StallWatch { blocked, alive }
    }

    /// Whether a write now could wait on RocksDB (as of the last refresh).
    pub(crate) fn blocked(&self) -> bool {
        self.blocked.load(Ordering::Relaxed)
    }
}

impl Drop for StallWatch {
    fn drop(&mut self) {
        self.alive.store(false, Ordering::Relaxed);
    }
}

fn watch(q: &Weak<dyn JobStore>, blocked: &AtomicBool, alive: &AtomicBool) {
    while alive.load(Ordering::Relaxed) {
        let Some(store) = q.upgrade() else { return };
        let Some(local) = store.as_local() else {
            return;
        };
        if local.is_closed() {
            return;
        }
        let p = local.write_pressure();
        bump(3);
        if let Some(p) = p {
            bump(match p {
                WritePressure::Stopped => 4,
                WritePressure::Delayed => 5,
                WritePressure::FlushRunning => 6,
                WritePressure::FlushPending(_) => 7,
                WritePressure::MemtableNearFull(_) => 8,
            });
        }
        blocked.store(p.is_some(), Ordering::Relaxed);
        drop(store);
        std::thread::sleep(REFRESH);
    }
}
