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
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

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
    /// The watcher's last answer is older than [`STALE_AFTER_MS`].
    Stale,
}

/// Declines by reason (`Pool`, `Pressure`, `Busy`), then the watchers'
/// reads, then those reads by [`WritePressure`] reason (stopped, delayed,
/// flush running, flush pending, memtable near full), then `Stale`
/// declines.
static COUNTS: [AtomicU64; 10] = [const { AtomicU64::new(0) }; 10];

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
            Decline::Stale => bump(9),
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
    /// Short calls sent to the pool because the watcher's last read was
    /// older than 10 ms (the watcher preempted, or waiting on RocksDB).
    pub stale: f64,
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
        stale: c(9),
        reads: c(3),
        stopped: c(4),
        delayed: c(5),
        flush_running: c(6),
        flush_pending: c(7),
        near_full: c(8),
    }
}

/// How often the watcher reads RocksDB's state. A memtable fills from
/// near full (7/8 of its buffer) to full in far more than this at any
/// write rate the JS thread reaches (8 MiB of writes, 1 MiB for the
/// counters' buffer).
pub const REFRESH: Duration = Duration::from_millis(1);

/// How old the watcher's last answer may be and still be trusted: a
/// watcher preempted on a loaded machine, or itself waiting on RocksDB's
/// DB mutex (a flush installing its result), answers nothing about now,
/// so calls go to the pool until it reads again. Far less than the time
/// any family takes to fill its last eighth at the rates measured.
pub const STALE_AFTER_MS: u64 = 10;

/// Milliseconds since the first call in this process (a monotonic clock).
fn now_ms() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_millis() as u64
}

/// The watcher's answer and when it read it.
#[derive(Debug)]
struct Answer {
    blocked: AtomicBool,
    /// [`now_ms`] of the last read.
    read_at: AtomicU64,
}

/// What a call makes of the watcher's answer `blocked`, read at `read_at`,
/// at `now` (ms): the reason to go to the pool, or `None`.
fn judge(blocked: bool, read_at: u64, now: u64) -> Option<Decline> {
    if blocked {
        Some(Decline::Pressure)
    } else if now.saturating_sub(read_at) > STALE_AFTER_MS {
        Some(Decline::Stale)
    } else {
        None
    }
}

/// The cached answer, and the flag that ends its watcher.
#[derive(Debug)]
pub(crate) struct StallWatch {
    answer: Arc<Answer>,
    alive: Arc<AtomicBool>,
}

impl StallWatch {
    /// Watch `q` when calls of it may run on the JS thread (`fast`); a
    /// store that is not watched answers blocked (its calls go to the pool
    /// anyway). The watcher holds the store weakly: a queue collected or
    /// closed ends it.
    pub(crate) fn new(q: &Arc<dyn JobStore>, fast: bool) -> Self {
        let answer = Arc::new(Answer {
            blocked: AtomicBool::new(!fast),
            read_at: AtomicU64::new(now_ms()),
        });
        let alive = Arc::new(AtomicBool::new(true));
        if fast && q.as_local().is_some() {
            let weak: Weak<dyn JobStore> = Arc::downgrade(q);
            let (b, a) = (answer.clone(), alive.clone());
            let spawned = std::thread::Builder::new()
                .name("telha-stall-watch".into())
                .spawn(move || watch(&weak, &b, &a));
            // No thread: never on the loop, rather than unguarded.
            if spawned.is_err() {
                answer.blocked.store(true, Ordering::Relaxed);
            }
        }
        StallWatch { answer, alive }
    }

    /// Why a write now could wait on RocksDB, as of the last refresh
    /// ([`Decline::Pressure`]), or [`Decline::Stale`] when that refresh is
    /// older than [`STALE_AFTER_MS`]; `None` when a call may run.
    pub(crate) fn decline(&self) -> Option<Decline> {
        // Its time first: an answer at least as new as that time.
        let read_at = self.answer.read_at.load(Ordering::Acquire);
        let blocked = self.answer.blocked.load(Ordering::Relaxed);
        judge(blocked, read_at, now_ms())
    }
}

impl Drop for StallWatch {
    fn drop(&mut self) {
        self.alive.store(false, Ordering::Relaxed);
    }
}

fn watch(q: &Weak<dyn JobStore>, answer: &Answer, alive: &AtomicBool) {
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
        // The answer first, then its time: a call that sees the new time
        // sees this answer or a later one.
        answer.blocked.store(p.is_some(), Ordering::Relaxed);
        answer.read_at.store(now_ms(), Ordering::Release);
        drop(store);
        std::thread::sleep(REFRESH);
    }
}

#[cfg(test)]
mod tests {
    use super::{judge, Decline, STALE_AFTER_MS};

    #[test]
    fn a_fresh_quiet_answer_runs_on_the_loop_a_stale_or_blocked_one_does_not() {
        assert!(judge(false, 100, 100).is_none());
        assert!(judge(false, 100, 100 + STALE_AFTER_MS).is_none());
        assert!(matches!(
            judge(false, 100, 101 + STALE_AFTER_MS),
            Some(Decline::Stale)
        ));
        assert!(matches!(judge(true, 100, 100), Some(Decline::Pressure)));
        // A read stamped after the caller's clock (another thread's later
        // `now_ms`) is fresh.
        assert!(judge(false, 105, 100).is_none());
    }
}
