//! Waiting for a job from JS: `NativeQueue.watch(id, onDone)` resolves with
//! a [`NativeWatch`] over the core's `JobWatch` (`JobStore::watch`, the same
//! on an embedded queue and over `Queue.connect`). The watch is woken by the
//! commit of the job's terminal transition, never by polling: its
//! `on_done` callback (run on the committing thread, or on the pool thread
//! at once when the job is already terminal) calls `onDone` on the JS
//! thread through a threadsafe function, and lets go of it. No thread is
//! blocked per waiter; `lib/events.js` arms the timeout with a JS timer and
//! reads the job with `job()` (on the pool) once woken or timed out.
//!
//! The threadsafe function is referenced (it keeps the process alive while
//! the wait is pending, like a socket read) until it fires or `close()`
//! drops it.

use std::sync::{Arc, Mutex, MutexGuard};

use napi::bindgen_prelude::{AsyncTask, Env, Unknown};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Status;
use napi_derive::napi;

use telha_jobs::{JobId, JobStore, JobWatch};

use crate::errors::Failure;
use crate::job::JobInfo;
use crate::queue::NativeQueue;
use crate::task::{guard, Op};

/// A JS callback without arguments, callable from any thread; referenced
/// (it keeps the event loop alive until released).
pub(crate) type Wake = ThreadsafeFunction<(), Unknown<'static>, (), Status, false>;

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The callback of one watch, until it fires or the watch is closed.
type Slot = Arc<Mutex<Option<Wake>>>;

/// Queue the callback in `slot` on the JS thread and let go of it (once).
/// Never blocks: the call is non-blocking on an unbounded queue.
fn fire(slot: &Slot) {
    let f = lock(slot).take();
    if let Some(f) = f {
        f.call((), ThreadsafeFunctionCallMode::NonBlocking);
    }
}

/// What the pool hands back to the JS thread for `watch`.
pub struct Watching {
    w: JobWatch,
    wake: Slot,
    q: Arc<dyn JobStore>,
}

/// One job being waited for (see the module docs). Made by
/// `NativeQueue.watch`; `close()` unregisters it.
#[napi]
pub struct NativeWatch {
    /// None once closed.
    w: Mutex<Option<Arc<JobWatch>>>,
    wake: Slot,
    q: Arc<dyn JobStore>,
}

impl NativeWatch {
    fn from_watching(x: Watching) -> Self {
        NativeWatch {
            w: Mutex::new(Some(Arc::new(x.w))),
            wake: x.wake,
            q: x.q,
        }
    }
}

#[napi]
impl NativeQueue {
    /// Watch job `id` (`NOT_FOUND` for no such job, `INVALID_ARGUMENT` for
    /// a malformed id, `CLOSED`): `onDone` is called once, on the JS
    /// thread, when the job is terminal (completed, dead, cancelled), gone,
    /// or the store closed; at once when it already is.
    #[napi(
        ts_args_type = "id: string, onDone: () => void",
        ts_return_type = "Promise<NativeWatch>"
    )]
    pub fn watch(
        &self,
        env: Env,
        id: String,
        on_done: Wake,
    ) -> napi::Result<AsyncTask<Op<Watching, NativeWatch>>> {
        guard(&env, "wait", || {
            let id = id.parse::<JobId>()?;
            // A wait writes nothing: it does not keep calls off the loop.
            let q = self.store().arc().clone();
            let wake: Slot = Arc::new(Mutex::new(Some(on_done)));
            Ok(Op::task(
                "wait",
                move || {
                    let w = q.watch(&id)?;
                    let slot = wake.clone();
                    w.on_done(Box::new(move || fire(&slot)));
                    Ok(Watching { w, wake, q })
                },
                NativeWatch::from_watching,
            ))
        })
    }
}

#[napi]
impl NativeWatch {
    /// The job now (on the pool): terminal once `onDone` was called, else
    /// its current state. `NOT_FOUND` when it is gone, `CLOSED` when the
    /// store closed.
    #[napi(ts_return_type = "Promise<JobInfo>")]
    pub fn job(&self, env: Env) -> napi::Result<AsyncTask<Op<JobInfo, JobInfo>>> {
        guard(&env, "wait", || {
            let w = lock(&self.w)
                .clone()
                .ok_or_else(|| Failure::Invalid("wait: this watch is closed".into()))?;
            let q = self.q.clone();
            Ok(Op::task(
                "wait",
                move || Ok(JobInfo::from_core(q.watched_job(&w)?)),
                |v| v,
            ))
        })
    }

    /// Whether the job is terminal (or gone, or the store closed).
    #[napi(getter)]
    pub fn done(&self) -> bool {
        lock(&self.w).as_ref().is_some_and(|w| w.is_done())
    }

    /// Stop watching: `onDone` will not be called (if it was not yet), the
    /// callback is released and the watch unregistered. Idempotent.
    #[napi]
    pub fn close(&self) {
        let w = lock(&self.w).take();
        if let Some(w) = &w {
            w.cancel();
        }
        drop(lock(&self.wake).take());
        drop(w);
    }
}

impl Drop for NativeWatch {
    fn drop(&mut self) {
        self.close();
    }
}
