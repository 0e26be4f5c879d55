//! `JobStream`: a `PollJobs` stream of a remote queue (`Queue._poll_jobs`),
//! the feed of a `Worker` / `AsyncWorker` that leases ahead over
//! `connect()` (py/python/telha_jobs/_remote.py). The server pushes leases
//! as they become ready, never more than `capacity` unsettled at once.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use pyo3::prelude::*;
use telha_jobs::limits::MAX_BATCH;
use telha_jobs::LeaseOptions;
use telha_jobs_client::RemoteQueue;

use crate::errors::invalid;
use crate::job::Job;
use crate::{args, task};

/// The longest single wait of `next_batch`: the GIL is taken back this
/// often (signal handlers, a `close()` from another thread).
const WAIT_SLICE: Duration = Duration::from_millis(200);

/// Leases pushed by a server for one worker. `next_batch` waits for the
/// next ones; `close()` ends the stream gracefully (`StopPoll`: the server
/// stops leasing for it, gives back what it had not sent, and ends it) and
/// answers what arrived meanwhile; collecting it closes it the same way and
/// releases those. Leases already delivered stay held: settle or release
/// them.
#[pyclass(frozen, module = "telha_jobs", name = "JobStream")]
pub struct JobStream {
    // Taken out while a wait runs (the GIL released), put back after: a
    // lock held across the wait would deadlock a `close()` holding the GIL.
    inner: Mutex<Option<telha_jobs_client::JobStream>>,
    closed: AtomicBool,
}

/// `Queue._poll_jobs`' body.
pub fn open(
    py: Python<'_>,
    remote: &RemoteQueue,
    worker_id: &str,
    capacity: &Bound<'_, PyAny>,
    kinds: Option<&Bound<'_, PyAny>>,
    scope: Option<&Bound<'_, PyAny>>,
    floor: Option<&Bound<'_, PyAny>>,
) -> PyResult<JobStream> {
    let capacity = args::int_in(capacity, "capacity", 1, MAX_BATCH as u64)? as u32;
    let floor = match floor {
        Some(f) if !f.is_none() => Some(args::int_in(f, "floor", 1, u64::from(capacity))? as u32),
        _ => None,
    };
    let options = LeaseOptions {
        scopes: args::scopes(scope)?,
        kinds: args::kinds(kinds)?,
        wait: None,
        cancel: None,
    };
    let s = task::run(py, || {
        remote.poll_jobs_window(worker_id, &options, capacity, floor)
    })?;
    Ok(JobStream {
        inner: Mutex::new(Some(s)),
        closed: AtomicBool::new(false),
    })
}

#[pymethods]
impl JobStream {
    /// The next leases the server pushed, waiting up to `timeout` seconds
    /// (at most 0.2 s per call; call again): [] when none came, None once
    /// the stream ended (closed, or the server shutting down).
    /// `QueueClosedError` when the queue was closed, `StorageError` when the
    /// connection is lost.
    fn next_batch(&self, py: Python<'_>, timeout: &Bound<'_, PyAny>) -> PyResult<Option<Vec<Job>>> {
        task::guard(py, "next_batch", || {
            let timeout = args::duration(timeout, "timeout")?.min(WAIT_SLICE);
            if self.closed.load(Ordering::SeqCst) {
                return Ok(None);
            }
            let taken = self.inner.lock().ok().and_then(|mut s| s.take());
            let Some(mut s) = taken else {
                return Err(invalid(
                    py,
                    "JobStream.next_batch is already waiting in another thread",
                ));
            };
            let r = task::run(py, || s.next_batch(Some(timeout)));
            if !self.closed.load(Ordering::SeqCst) && matches!(r, Ok(Some(_))) {
                if let Ok(mut slot) = self.inner.lock() {
                    *slot = Some(s);
                }
            } else {
                // Ended, failed or closed meanwhile: drop it without the GIL
                // (dropping ends the call on the client's runtime).
                self.closed.store(true, Ordering::SeqCst);
                task::run(py, move || {
                    drop(s);
                    Ok(())
                })?;
            }
            Ok(r?.map(|jobs| jobs.into_iter().map(Job::new).collect()))
        })
    }

    /// End the stream gracefully (idempotent): the server stops leasing
    /// for it and ends it after what it already sent, read here to the end
    /// (within the request timeout). Answers the leases that arrived
    /// meanwhile: held by the caller, to settle or release. Leases
    /// delivered before stay held too.
    fn close(&self, py: Python<'_>) -> PyResult<Vec<Job>> {
        task::guard(py, "close", || {
            self.closed.store(true, Ordering::SeqCst);
            // Taken by a `next_batch` waiting in another thread: that one
            // drops it when its wait ends, which closes it the same way and
            // releases what came.
            let s = self.inner.lock().ok().and_then(|mut s| s.take());
            let Some(mut s) = s else {
                return Ok(Vec::new());
            };
            let jobs = task::run(py, move || {
                let jobs = s.close();
                drop(s);
                jobs
            })?;
            Ok(jobs.into_iter().map(Job::new).collect())
        })
    }

    /// Whether `close()` was called or the stream ended.
    #[getter]
    fn closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }
}
