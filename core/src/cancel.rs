//! Ending a waiting lease early, from another thread (a Node `AbortSignal`,
//! a Python worker stopping, a host shutting one poller down).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

use crate::engine::Engine;

/// Cancels the waits of the leases it is passed to (see
/// [`crate::LeaseOptions::cancel`]). Cheap to clone; clones share the flag.
/// Once cancelled it stays cancelled: a lease call given a cancelled token
/// does not wait (it still takes a job that is ready at once).
#[derive(Clone, Debug, Default)]
pub struct CancelWait {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    cancelled: AtomicBool,
    /// Engines with a wait using this token; `cancel` wakes their waiters.
    engines: Mutex<Vec<Weak<Engine>>>,
}

impl CancelWait {
    /// A token that is not cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancel: every wait using this token returns `Ok` with what it has
    /// (usually nothing) promptly. Idempotent; callable from any thread.
    pub fn cancel(&self) {
        self.inner.cancelled.store(true, Ordering::SeqCst);
        let engines = self
            .inner
            .engines
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        for e in engines.iter().filter_map(Weak::upgrade) {
            e.notifier.bump_always();
        }
    }

    /// Whether [`CancelWait::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancelled.load(Ordering::SeqCst)
    }

    /// Remember `e` so `cancel` wakes its waiters. Called before the wait
    /// registers, so a cancel that lands after the check still wakes it.
    pub(crate) fn attach(&self, e: &Arc<Engine>) {
        let mut v = self.inner.engines.lock().unwrap_or_else(|p| p.into_inner());
        v.retain(|w| w.strong_count() > 0);
        if !v.iter().any(|w| std::ptr::eq(w.as_ptr(), Arc::as_ptr(e))) {
            v.push(Arc::downgrade(e));
        }
    }
}

/// Tokens compare equal when they are clones of one another.
impl PartialEq for CancelWait {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}
