//! Whether a write on the JS thread could wait on RocksDB now (issue 37):
//! the answer of `Queue::would_block` (a stall, a pending or running
//! flush, a memtable near full), kept in an atomic that a thread of its
//! own refreshes every [`REFRESH`]. The JS thread only loads the atomic:
//! it never reads a RocksDB property (each takes the DB mutex, which a
//! flush installing its result or a memtable switch can hold) and never
//! waits on what it guards against. While the answer is true, `now.rs`
//! sends the short calls to the pool.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use telha_jobs::JobStore;

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
        blocked.store(local.would_block(), Ordering::Relaxed);
        drop(store);
        std::thread::sleep(REFRESH);
    }
}
