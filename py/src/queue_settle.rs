//! `Queue.fail_many` and `Queue.release_many` (a third `#[pymethods]`
//! block): the batch forms of `fail` and `release`, each one atomic write
//! (over a remote queue: one round trip), answered per job as
//! `complete_many` is.

use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};
use telha_jobs::Failure;

use crate::errors::{invalid, to_py, type_error};
use crate::payload::type_name;
use crate::queue::Queue;
use crate::{args, task};

/// `obj` for each of `n` jobs: a list or tuple gives one entry per job (its
/// length must be `n`), anything else is every job's.
fn per_job<'py>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
    n: usize,
    what: &str,
) -> PyResult<Vec<Bound<'py, PyAny>>> {
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        let v = obj.try_iter()?.collect::<PyResult<Vec<_>>>()?;
        if v.len() != n {
            return Err(invalid(
                py,
                format!("{what} has {} entries for {n} jobs", v.len()),
            ));
        }
        return Ok(v);
    }
    Ok(vec![obj.clone(); n])
}

/// One answer per job: None when it was settled, else the exception.
fn answers(py: Python<'_>, a: Vec<telha_jobs::Result<()>>) -> Vec<Option<Py<PyAny>>> {
    a.into_iter()
        .map(|a| a.err().map(|e| to_py(py, e).into_value(py).into_any()))
        .collect()
}

#[pymethods]
impl Queue {
    /// Fail many leased jobs in one call and one atomic write (over a
    /// remote queue: one round trip), each as `fail` would. `reasons`: one
    /// str for every job, or a list of one per job; `retryable` a bool or a
    /// list of one per job; `retry_in` None (the backoff schedule's delay),
    /// seconds or a timedelta, or a list of one (or None) per job. Returns
    /// one entry per job: None when it was failed, else the exception
    /// saying why not (`LeaseLostError`, `NotFoundError`,
    /// `InvalidArgumentError` for a `retry_in` over 100 years,
    /// `CancelledError`: recorded cancelled); the others still fail.
    /// `QueueClosedError` / `StorageError` raise, and then none did.
    #[pyo3(signature = (jobs, reasons, *, retryable=None, retry_in=None))]
    fn fail_many(
        &self,
        py: Python<'_>,
        jobs: &Bound<'_, PyAny>,
        reasons: &Bound<'_, PyAny>,
        retryable: Option<&Bound<'_, PyAny>>,
        retry_in: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<Option<Py<PyAny>>>> {
        task::guard(py, "fail_many", || {
            let tokens = args::tokens(jobs, "fail_many")?;
            let n = tokens.len();
            let reasons = per_job(py, reasons, n, "reasons")?;
            let retryable = match retryable.filter(|r| !r.is_none()) {
                Some(r) => per_job(py, r, n, "retryable")?,
                None => vec![pyo3::types::PyBool::new(py, true).to_owned().into_any(); n],
            };
            let retry_in = match retry_in.filter(|r| !r.is_none()) {
                Some(r) => per_job(py, r, n, "retry_in")?,
                None => vec![py.None().into_bound(py); n],
            };
            let mut items = Vec::with_capacity(n);
            for (i, t) in tokens.into_iter().enumerate() {
                let reason = reasons[i].cast::<PyString>().map_err(|_| {
                    type_error(format!(
                        "reasons[{i}] must be a str, got {}",
                        type_name(&reasons[i])
                    ))
                })?;
                let mut f = Failure::new(t, reason.to_cow()?);
                f.retryable = retryable[i].extract::<bool>().map_err(|_| {
                    type_error(format!(
                        "retryable must be a bool or a list of bools, got {}",
                        type_name(&retryable[i])
                    ))
                })?;
                if !retry_in[i].is_none() {
                    f.retry_in = Some(args::delay(&retry_in[i], &format!("retry_in[{i}]"))?);
                }
                items.push(f);
            }
            if items.is_empty() {
                return Ok(vec![]);
            }
            let q = &*self.store;
            Ok(answers(py, task::run(py, || q.fail_many(items))?))
        })
    }

    /// Release many leased jobs in one call and one atomic write (over a
    /// remote queue: one round trip), each as `release` would: pending
    /// again at its old place in line, no attempt spent. Returns one entry
    /// per job: None when it was released, else the exception saying why
    /// not (`LeaseLostError`, `NotFoundError`, `CancelledError`: recorded
    /// cancelled). `QueueClosedError` / `StorageError` raise, and then none
    /// was released.
    fn release_many(
        &self,
        py: Python<'_>,
        jobs: &Bound<'_, PyAny>,
    ) -> PyResult<Vec<Option<Py<PyAny>>>> {
        task::guard(py, "release_many", || {
            let tokens = args::tokens(jobs, "release_many")?;
            if tokens.is_empty() {
                return Ok(vec![]);
            }
            let q = &*self.store;
            Ok(answers(py, task::run(py, || q.release_many(&tokens))?))
        })
    }
}
