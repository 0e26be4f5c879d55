//! Waiting for a job from Python. `Queue.wait` blocks in slices with the
//! GIL released and runs signal handlers between them (Ctrl-C ends it);
//! `JobWaiter` (`Queue._watch`) is the asyncio form: its done callback goes
//! through the notifier thread (notify.rs), never runs Python on the
//! committing thread, and `close()` ends the wait (a remote queue's long
//! poll stops).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pyo3::prelude::*;
use pyo3::types::PyDict;
use telha_jobs::{Error, JobId, JobStore, JobWatch};

use crate::job::JobInfo;
use crate::{args, notify, task};

/// How long one blocking slice of a wait lasts (signal handlers run
/// between slices).
const WAIT_SLICE: Duration = Duration::from_millis(100);

/// `Queue.wait`: the job once it is terminal (at once if it is), else as
/// it is when `timeout` ran out (`None`: no limit). `NotFoundError` for no
/// such job (or one deleted meanwhile), `QueueClosedError` when the handle
/// is closed before or during the wait; an exception from a signal handler
/// (`KeyboardInterrupt`) ends it.
pub fn wait(
    py: Python<'_>,
    store: &dyn JobStore,
    id: JobId,
    timeout: Option<Duration>,
) -> PyResult<JobInfo> {
    let w = task::run(py, || store.watch(&id))?;
    let end = timeout.and_then(|t| Instant::now().checked_add(t));
    let r = (|| loop {
        let left = end.map_or(Duration::MAX, |e| {
            e.saturating_duration_since(Instant::now())
        });
        let slice = left.min(WAIT_SLICE);
        let done = task::run(py, || Ok(w.wait(Some(slice))))?;
        if done || left <= WAIT_SLICE {
            return Ok(());
        }
        if store.is_closed() {
            return task::run(py, || Err(Error::Closed));
        }
        py.check_signals()?;
    })();
    if let Err(e) = r {
        w.cancel();
        drop_watch(py, w)?;
        return Err(e);
    }
    let info = task::run(py, || {
        if store.is_closed() {
            return Err(Error::Closed);
        }
        store.watched_job(&w)
    });
    drop_watch(py, w)?;
    Ok(JobInfo::new(info?))
}

/// `Queue.enqueue_and_wait`: `enqueue` (its options), then [`wait`].
pub fn enqueue_and_wait(
    py: Python<'_>,
    q: &dyn JobStore,
    kind: &Bound<'_, PyAny>,
    payload: Option<&Bound<'_, PyAny>>,
    timeout: Option<&Bound<'_, PyAny>>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<JobInfo> {
    let t = args::timeout(timeout)?;
    let opts = args::enqueue_options(options, "", &[])?;
    let job = args::new_job(args::text(kind, "kind")?, payload, opts, py)?;
    let e = task::run(py, || {
        q.enqueue(&job.kind, &job.payload, job.options.clone())
    })?;
    wait(py, q, e.id, t)
}

/// Drop a watch with the GIL released (it unregisters from the engine, or
/// stops a remote queue's long poll).
fn drop_watch(py: Python<'_>, w: JobWatch) -> PyResult<()> {
    task::run(py, move || {
        drop(w);
        Ok(())
    })
}

/// A watch of one job for asyncio (`AsyncQueue.wait`): `on_done(cb)` has
/// `cb()` called on the package's notifier thread (with the GIL) once the
/// job is terminal; `job()` reads it; `close()` ends the watch.
#[pyclass(frozen, module = "telha_jobs", name = "JobWaiter")]
pub struct JobWaiter {
    // Taken out by `close` (dropping the watch unregisters it).
    w: Mutex<Option<JobWatch>>,
    id: JobId,
    store: Arc<dyn JobStore>,
}

impl JobWaiter {
    /// `Queue._watch`'s body.
    pub fn open(py: Python<'_>, store: &Arc<dyn JobStore>, id: JobId) -> PyResult<JobWaiter> {
        let s = &**store;
        let w = task::run(py, || s.watch(&id))?;
        Ok(JobWaiter {
            w: Mutex::new(Some(w)),
            id,
            store: store.clone(),
        })
    }

    fn with<T>(&self, f: impl FnOnce(&JobWatch) -> T) -> Option<T> {
        let g = self.w.lock().unwrap_or_else(|p| p.into_inner());
        g.as_ref().map(f)
    }
}

#[pymethods]
impl JobWaiter {
    /// The job watched.
    #[getter]
    fn job_id(&self) -> String {
        self.id.to_string()
    }

    /// Whether the job is terminal (or gone, or the store closed).
    #[getter]
    fn done(&self) -> bool {
        self.with(JobWatch::is_done).unwrap_or(false)
    }

    /// Have `callback()` called once the job is done, on the notifier
    /// thread (soon, when it already is). Not called after `close()`
    /// unless it was already on its way.
    fn on_done(&self, py: Python<'_>, callback: Py<PyAny>) -> PyResult<()> {
        task::guard(py, "on_done", || {
            let cb = Arc::new(callback);
            self.with(|w| w.on_done(Box::new(move || notify::call_soon(cb))));
            Ok(())
        })
    }

    /// The job now (call it once done, or when giving up): what a remote
    /// queue's feed handed over, else read from the store.
    /// `NotFoundError` when it is gone, `QueueClosedError` once the queue
    /// (or this waiter) is closed.
    fn job(&self, py: Python<'_>) -> PyResult<JobInfo> {
        task::guard(py, "job", || {
            let info = task::run(py, || {
                if self.store.is_closed() {
                    return Err(Error::Closed);
                }
                let g = self.w.lock().unwrap_or_else(|p| p.into_inner());
                match g.as_ref() {
                    Some(w) => self.store.watched_job(w),
                    None => Err(Error::Closed),
                }
            })?;
            Ok(JobInfo::new(info))
        })
    }

    /// End the watch (idempotent): its callback is not called after this.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        task::guard(py, "close", || {
            let w = self.w.lock().unwrap_or_else(|p| p.into_inner()).take();
            if let Some(w) = w {
                w.cancel();
                drop_watch(py, w)?;
            }
            Ok(())
        })
    }

    fn __repr__(&self) -> String {
        format!("JobWaiter(job_id='{}', done={})", self.id, self.done())
    }
}
