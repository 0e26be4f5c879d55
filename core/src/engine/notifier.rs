//! The notifier: how waiting pollers learn that work may have arrived.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// Wakes long-polling leasers when work may have arrived.
#[derive(Debug, Default)]
pub(crate) struct Notifier {
    epoch: Mutex<u64>,
    cv: Condvar,
    waiters: AtomicUsize,
}

impl Notifier {
    /// Wake every waiter (cheap when none waits).
    pub fn bump(&self) {
        if self.waiters.load(Ordering::SeqCst) > 0 {
            let mut e = self.epoch.lock().unwrap_or_else(|p| p.into_inner());
            *e = e.wrapping_add(1);
            self.cv.notify_all();
        }
    }

    /// Register as a waiter *before* looking for work, so an enqueue that
    /// lands after the look always bumps.
    pub fn register(&self) -> u64 {
        self.waiters.fetch_add(1, Ordering::SeqCst);
        *self.epoch.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn unregister(&self) {
        self.waiters.fetch_sub(1, Ordering::SeqCst);
    }

    /// Sleep until the epoch moves past `seen` or `timeout` passes; returns the new epoch.
    pub fn wait(&self, seen: u64, timeout: Duration) -> u64 {
        let g = self.epoch.lock().unwrap_or_else(|p| p.into_inner());
        if *g != seen {
            return *g;
        }
        let (g, _) = self
            .cv
            .wait_timeout(g, timeout)
            .unwrap_or_else(|p| p.into_inner());
        *g
    }
}

impl Notifier {
    /// Wake waiters even if none registered (shutdown).
    pub fn bump_always(&self) {
        let mut e = self.epoch.lock().unwrap_or_else(|p| p.into_inner());
        *e = e.wrapping_add(1);
        self.cv.notify_all();
    }
}
