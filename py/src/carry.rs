//! `_complete_then_lease`: the asyncio `AsyncWorker`'s one store call per
//! batch of handlers that finish without waiting — the last batch's
//! completions sent, then the next batch leased (no waiting), with the GIL
//! released once around both. Not a new store operation: the two calls
//! `complete_many` and `lease_many` make, back to back, so the pool thread
//! running it needs the GIL only to read its arguments and to build its
//! answer (the loop runs a batch of handlers meanwhile, holding the GIL).

use pyo3::prelude::*;
use telha_jobs::limits::MAX_BATCH;
use telha_jobs::{JobStore, LeaseOptions};

use crate::errors::to_py;
use crate::job::Job;
use crate::queue::Queue;
use crate::{args, control, task};

/// Complete `jobs` (as `Queue.complete_many(jobs, results, then=then)`),
/// then lease up to `max` ready jobs (as `Queue.lease_many(worker_id, max,
/// kinds=kinds, scope=scope)`, no wait). Answers `(completed, leased)`:
/// `completed` is `complete_many`'s list, or the exception that call
/// raised as a whole (nothing was completed; a result that does not
/// encode is one); `leased` is the list of jobs, or the exception the
/// lease raised. Both calls are made whatever the other answered.
#[pyfunction]
#[pyo3(name = "_complete_then_lease",
    signature = (queue, jobs, results, then, worker_id, max, *, kinds=None, scope=None))]
#[allow(clippy::too_many_arguments)]
pub fn complete_then_lease(
    py: Python<'_>,
    queue: &Bound<'_, Queue>,
    jobs: &Bound<'_, PyAny>,
    results: Option<&Bound<'_, PyAny>>,
    then: Option<&Bound<'_, PyAny>>,
    worker_id: &str,
    max: &Bound<'_, PyAny>,
    kinds: Option<&Bound<'_, PyAny>>,
    scope: Option<&Bound<'_, PyAny>>,
) -> PyResult<(Py<PyAny>, Py<PyAny>)> {
    task::guard(py, "_complete_then_lease", || {
        let max = args::int_in(max, "max", 1, MAX_BATCH as u64)? as usize;
        let opts = LeaseOptions {
            scopes: args::scopes(scope)?,
            kinds: args::kinds(kinds)?,
            wait: None,
            cancel: None,
        };
        let items = control::completions(py, jobs, results, then);
        let q: &dyn JobStore = &*queue.get().store;
        let lease = || q.lease_many(worker_id, max, &opts);
        let (done, leased) = match items {
            Ok(items) if items.is_empty() => (Ok(vec![]), task::run_two(py, || Ok(()), lease).1),
            Ok(items) => task::run_two(py, || q.complete_many(items), lease),
            Err(e) => {
                let leased = task::run_two(py, || Ok(()), lease).1;
                let refused = e.into_value(py).into_any();
                return Ok((refused, leased_answer(py, leased)?));
            }
        };
        let done = match done {
            Ok(answers) => control::completion_answers(py, answers)
                .into_pyobject(py)?
                .into_any()
                .unbind(),
            Err(e) => to_py(py, e).into_value(py).into_any(),
        };
        Ok((done, leased_answer(py, leased)?))
    })
}

/// The lease part's answer: the jobs, or the exception it met.
fn leased_answer(
    py: Python<'_>,
    leased: telha_jobs::Result<Vec<telha_jobs::Job>>,
) -> PyResult<Py<PyAny>> {
    Ok(match leased {
        Ok(jobs) => jobs
            .into_iter()
            .map(Job::new)
            .collect::<Vec<_>>()
            .into_pyobject(py)?
            .into_any()
            .unbind(),
        Err(e) => to_py(py, e).into_value(py).into_any(),
    })
}
