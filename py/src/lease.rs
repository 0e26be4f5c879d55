//! Leasing from Python: `CancelWait` (ends a lease wait from any thread)
//! and the wait loop of `Queue.lease_next` / `lease_many`, in slices so
//! Ctrl-C (a Python signal handler) ends a long wait.

use std::time::{Duration, Instant};

use pyo3::prelude::*;
use telha_jobs::{JobStore, LeaseOptions};

use crate::job::Job;
use crate::{args, task};

/// How long one blocking slice of a lease wait lasts: between slices the
/// GIL is taken back to run signal handlers, so Ctrl-C ends a long wait.
const WAIT_SLICE: Duration = Duration::from_millis(100);

/// Ends the wait of the `lease_next` / `lease_many` calls it is passed to,
/// from any thread (a worker stopping). Once cancelled it stays cancelled.
#[pyclass(frozen, module = "telha_jobs", name = "CancelWait")]
#[derive(Default)]
pub struct CancelWait {
    pub(crate) inner: telha_jobs::CancelWait,
}

#[pymethods]
impl CancelWait {
    #[new]
    fn py_new() -> Self {
        Self::default()
    }
    /// Cancel: waits using this token return promptly with what they have.
    fn cancel(&self) {
        self.inner.cancel()
    }
    /// Whether `cancel()` was called.
    #[getter]
    fn cancelled(&self) -> bool {
        self.inner.is_cancelled()
    }
}

/// `lease_next` / `lease_many`: waits in slices of [`WAIT_SLICE`], taking
/// the GIL back between them for signal handlers.
#[allow(clippy::too_many_arguments)]
pub fn lease(
    store: &dyn JobStore,
    py: Python<'_>,
    worker_id: &str,
    max: usize,
    kinds: Option<&Bound<'_, PyAny>>,
    scope: Option<&Bound<'_, PyAny>>,
    wait: Option<&Bound<'_, PyAny>>,
    cancel: Option<&Bound<'_, CancelWait>>,
) -> PyResult<Vec<Job>> {
    let wait = match wait {
        Some(w) => args::wait(w, "wait")?,
        None => Some(Duration::ZERO),
    };
    let cancel = cancel.map(|c| c.get().inner.clone());
    let mut opts = LeaseOptions {
        scopes: args::scopes(scope)?,
        kinds: args::kinds(kinds)?,
        wait: None,
        cancel: cancel.clone(),
    };
    // None: no end (waits until a job comes, a cancel or a close).
    let end = wait.and_then(|w| Instant::now().checked_add(w));
    loop {
        let left = end.map_or(Duration::MAX, |e| {
            e.saturating_duration_since(Instant::now())
        });
        let slice = left.min(WAIT_SLICE);
        opts.wait = (!slice.is_zero()).then_some(slice);
        let o = &opts;
        let jobs = task::run(py, || store.lease_many(worker_id, max, o))?;
        let done = !jobs.is_empty()
            || left <= WAIT_SLICE
            || cancel.as_ref().is_some_and(|c| c.is_cancelled());
        if done {
            return Ok(jobs.into_iter().map(Job::new).collect());
        }
        // Runs Python signal handlers (KeyboardInterrupt) on the main thread.
        py.check_signals()?;
    }
}
