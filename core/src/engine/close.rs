//! Closing: a handle letting go, the last one's shutdown, and the drop
//! that lets go of the store under the registry lock.

use std::mem::ManuallyDrop;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::{registry, Engine};

impl Engine {
    /// A `Queue` handle lets go of this engine (close or drop). The last one
    /// shuts it down: no new open shares it from then on, the reaper is
    /// stopped (and joined, so its pass's reference is gone), waiters wake;
    /// RocksDB closes when the last reference drops, at the latest when the
    /// calls in progress end. Others only wake their waiters.
    pub fn release_handle(self: Arc<Engine>) {
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
    }
}
