//! [`JobWatch`]: one job until it is terminal or gone.

use std::fmt;
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use super::lock;
use crate::error::Result;
use crate::ids::JobId;
use crate::job::JobInfo;

type Callback = Box<dyn FnOnce() + Send>;

#[derive(Default)]
struct WatchState {
    done: bool,
    cancelled: bool,
    /// What a remote feed found when it fired.
    job: Option<Result<JobInfo>>,
    waker: Option<Waker>,
    callbacks: Vec<Callback>,
}

pub(crate) struct WatchSlot {
    id: JobId,
    st: Mutex<WatchState>,
    cv: Condvar,
    detach: Mutex<Option<Callback>>,
}

/// Waits for one job to be terminal (see the module docs). Made by
/// [`crate::Queue::watch`] (or a remote queue's); dropping it unregisters.
pub struct JobWatch {
    slot: Arc<WatchSlot>,
}

impl fmt::Debug for JobWatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobWatch")
            .field("id", &self.slot.id)
            .field("done", &self.is_done())
            .finish()
    }
}

/// The firing half of a [`JobWatch`]. Cheap to clone.
#[derive(Clone)]
pub struct WatchSink {
    slot: Arc<WatchSlot>,
}

impl fmt::Debug for WatchSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WatchSink")
            .field("id", &self.slot.id)
            .finish()
    }
}

impl JobWatch {
    /// A watch of `id` and the sink that fires it, for an implementation
    /// of [`crate::JobStore`] that is not the engine.
    pub fn channel(id: JobId) -> (JobWatch, WatchSink) {
        let slot = Arc::new(WatchSlot {
            id,
            st: Mutex::new(WatchState::default()),
            cv: Condvar::new(),
            detach: Mutex::new(None),
        });
        (JobWatch { slot: slot.clone() }, WatchSink { slot })
    }

    /// The job watched.
    pub fn id(&self) -> JobId {
        self.slot.id
    }

    /// Whether the job has reached a terminal state (or is gone, or the
    /// store closed).
    pub fn is_done(&self) -> bool {
        lock(&self.slot.st).done
    }

    /// Block until the job is done (`true`), `timeout` passes or the watch
    /// is cancelled (`false`). `None` waits without a limit.
    pub fn wait(&self, timeout: Option<Duration>) -> bool {
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
        let mut st = lock(&self.slot.st);
        loop {
            if st.done {
                return true;
            }
            if st.cancelled {
                return false;
            }
            match (timeout, deadline) {
                (Some(_), Some(d)) => {
                    let now = Instant::now();
                    if now >= d {
                        return false;
                    }
                    st = self
                        .slot
                        .cv
                        .wait_timeout(st, d - now)
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                }
                _ => st = self.slot.cv.wait(st).unwrap_or_else(|p| p.into_inner()),
            }
        }
    }

    /// End a [`JobWatch::wait`] in progress (and later ones) with `false`,
    /// from any thread. The callbacks of [`JobWatch::on_done`] still run if
    /// the job finishes while the watch is alive.
    pub fn cancel(&self) {
        lock(&self.slot.st).cancelled = true;
        self.slot.cv.notify_all();
    }

    /// Whether [`JobWatch::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        lock(&self.slot.st).cancelled
    }

    /// Run `f` once the job is done: at once (on this thread) if it is,
    /// else on the committing thread, which must not be kept waiting (`f`
    /// should only signal: send on a channel, resolve a promise).
    pub fn on_done(&self, f: Box<dyn FnOnce() + Send>) {
        let mut st = lock(&self.slot.st);
        if st.done {
            drop(st);
            f();
        } else {
            st.callbacks.push(f);
        }
    }

    /// For async code: `Ready` once the job is done, else `Pending` with
    /// `cx`'s waker kept.
    pub fn poll_done(&self, cx: &mut Context<'_>) -> Poll<()> {
        let mut st = lock(&self.slot.st);
        if st.done {
            Poll::Ready(())
        } else {
            st.waker = Some(cx.waker().clone());
            Poll::Pending
        }
    }

    /// What a remote feed handed over with the firing (the job as it was
    /// then), taken once; `None` for the engine's watches (read the job).
    pub fn take_job(&self) -> Option<Result<JobInfo>> {
        lock(&self.slot.st).job.take()
    }

    /// Run `f` when the watch is dropped (the engine unregisters this way;
    /// a remote feed stops its long poll). Replaces an earlier one.
    pub fn on_drop(&self, f: Box<dyn FnOnce() + Send>) {
        *lock(&self.slot.detach) = Some(f);
    }
}

impl Drop for JobWatch {
    fn drop(&mut self) {
        let f = lock(&self.slot.detach).take();
        if let Some(f) = f {
            f();
        }
    }
}

impl WatchSink {
    /// The job watched.
    pub fn id(&self) -> JobId {
        self.slot.id
    }

    /// Fire: the job is done. `job` is what a remote feed found (`None`
    /// from the engine). Idempotent (the first firing wins).
    pub fn fire(&self, job: Option<Result<JobInfo>>) {
        let mut st = lock(&self.slot.st);
        if st.done {
            return;
        }
        st.done = true;
        st.job = job;
        let w = st.waker.take();
        let cbs = std::mem::take(&mut st.callbacks);
        drop(st);
        self.slot.cv.notify_all();
        if let Some(w) = w {
            w.wake();
        }
        for f in cbs {
            f();
        }
    }

    /// Whether this sink fires `other`'s watch.
    pub fn same(&self, other: &WatchSink) -> bool {
        Arc::ptr_eq(&self.slot, &other.slot)
    }
}
