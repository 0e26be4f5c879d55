//! Closing: a handle letting go, the last one's shutdown, and the drop
//! that lets go of the store under the registry lock.

use std::mem::ManuallyDrop;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::{registry, Engine};

impl Engine {
    /// A `Queue` handle lets go of this engine (close or drop). The last one
    /// shuts it down: no new open shares it from then on, the reaper is
    /// stopped (and joined, so its pass's reference is gone), waiters wake;
    /// RocksDB closes when the last reference drops, at the latest when the
    /// calls in progress end. Others only wake their waiters. Answers
    /// whether this was the last handle.
    pub fn release_handle(self: Arc<Engine>) -> bool {
        let last = {
            let _reg = registry();
            let last = self.handles.fetch_sub(1, Ordering::SeqCst) == 1;
            if last {
                self.shutting_down.store(true, Ordering::SeqCst);
            }
            last
        };
        if last {
            self.begin_shutdown();
        } else {
            self.notifier.bump_always();
        }
        last
    }

    /// Stop the reaper and wake every waiter; the engine is dropped when the
    /// last reference lets go of it.
    pub fn begin_shutdown(&self) {
        self.shutting_down.store(true, Ordering::SeqCst);
        if let Some(r) = self.reaper.lock().unwrap_or_else(|p| p.into_inner()).take() {
            r.stop();
        }
        if let Some(s) = self
            .scheduler
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            s.stop();
        }
        self.notifier.bump_always();
        self.hub.close_all();
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        if let Some(r) = self
            .reaper
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            r.stop();
        }
        if let Some(s) = self
            .scheduler
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            s.stop();
        }
        // Cached band iterators borrow the DB: they go first.
        self.bands.clear_iterators();
        // Let go of the store while holding the registry, so a concurrent
        // open of the same path waits for the LOCK to be released when ours
        // was the store's last reference (the embedded case: the store then
        // flushes its WAL, removes the pid file and closes RocksDB). (An
        // engine that never made it into the registry is dropped by its
        // opener, which holds the registry lock already.)
        let mut reg = self.registered.load(Ordering::SeqCst).then(registry);
        if let Some(reg) = reg.as_mut() {
            if reg.get(&self.path).is_some_and(|w| w.strong_count() == 0) {
                reg.remove(&self.path);
            }
        }
        // SAFETY: neither is touched again: this is the engine's drop. The
        // commit holds the store too (the embedded one), so it goes first.
        unsafe {
            ManuallyDrop::drop(&mut self.commit);
            ManuallyDrop::drop(&mut self.store);
        }
        drop(reg);
        self.dropped.set();
    }
}

/// Set once an engine's `drop` has let go of its store. The last handle's
/// `Queue::close` waits on it, so that when `close` returns RocksDB has
/// closed (its files and LOCK released) even if, at that moment, another
/// thread held the engine for a call in progress: a stall watcher's
/// property read, a stream's pass, a call racing the close. Without it a
/// process that deletes or reopens the directory right after `close`
/// could find RocksDB still writing there (seen once: `ENOTEMPTY` from a
/// Node test's `rmSync` right after `await q.close()`).
#[derive(Debug, Default)]
pub(crate) struct Dropped {
    done: Mutex<bool>,
    cv: Condvar,
}

impl Dropped {
    fn set(&self) {
        *self.done.lock().unwrap_or_else(|p| p.into_inner()) = true;
        self.cv.notify_all();
    }

    /// Wait until set, at most `limit`; whether it was set.
    pub(crate) fn wait(&self, limit: Duration) -> bool {
        let end = Instant::now() + limit;
        let mut done = self.done.lock().unwrap_or_else(|p| p.into_inner());
        while !*done {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            done = self
                .cv
                .wait_timeout(done, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        true
    }
}
