//! The reaper: a background thread started by `open` that, every
//! `reaper_interval`, returns expired leases to pending (or dead), moves
//! jobs that expired before they started to dead, and prunes completed,
//! dead and cancelled jobs past their retention. `Queue::reap()` runs one pass on demand.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::engine::Engine;
use crate::error::Result;
use crate::job::ReapReport;

pub(crate) struct Reaper {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

impl Reaper {
    pub fn start(engine: Weak<Engine>, interval: Duration) -> Reaper {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let s = stop.clone();
        let thread = std::thread::Builder::new()
            .name("telha-reaper".into())
            .spawn(move || loop {
                {
                    let (m, cv) = &*s;
                    let g = m.lock().unwrap_or_else(|p| p.into_inner());
                    let (g, _) = cv
                        .wait_timeout_while(g, interval, |stopped| !*stopped)
                        .unwrap_or_else(|p| p.into_inner());
                    if *g {
                        return;
                    }
                }
                let Some(e) = engine.upgrade() else { return };
                // A failed pass is retried at the next interval; the error is
                // visible to whoever calls reap() and in the metrics.
                if pass(&e).is_err() {
                    e.metrics.reaper_errors.fetch_add(1, Ordering::Relaxed);
                }
            })
            .ok();
        Reaper { stop, thread }
    }

    /// Tell the thread to stop after its pass in progress, without waiting
    /// for it (a fence, under the writer's locks).
    pub fn signal(&self) {
        let (m, cv) = &*self.stop;
        *m.lock().unwrap_or_else(|p| p.into_inner()) = true;
        cv.notify_all();
    }

    /// Whether the thread has ended (tests of a fence).
    #[cfg(test)]
    pub fn is_finished(&self) -> bool {
        self.thread.as_ref().is_none_or(|t| t.is_finished())
    }

    /// Signal the thread and wait for it (unless this is the reaper thread,
    /// dropping the last engine reference from inside its own pass).
    pub fn stop(mut self) {
        self.signal();
        if let Some(t) = self.thread.take() {
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
    }
}

/// One reaper pass.
pub(crate) fn pass(e: &Engine) -> Result<ReapReport> {
    let now = e.now();
    // Unpin whatever DB state idle bands' cached iterators still hold.
    e.bands.clear_iterators();
    // Forget the flow-control state of tenants that hold nothing.
    e.limiter.sweep(now);
    let (expired, dead) = e.expire_leases(now)?;
    let expired_unstarted = e.expire_unstarted(now, e.cfg.prune_batch)?;
    let (pruned, corrupt) = e.prune_finished(now, e.cfg.prune_batch)?;
    // Unique windows past their end, in a pass of the same bound.
    e.prune_windows(now, e.cfg.prune_batch)?;
    // Children that `cancel_rest` parents no longer need.
    e.cancel_fan_rest()?;
    // Forget per-scope state that no job needs any more.
    e.forget_idle()?;
    e.metrics.reaper_passes.fetch_add(1, Ordering::Relaxed);
    Ok(ReapReport {
        expired,
        dead,
        pruned,
        expired_unstarted,
        corrupt,
    })
}
