//! Job control from Python (as node/src's): cancel, cancel_many, delete,
//! promote, reschedule, set_priority, snooze, fail with a retry delay, pause / resume / paused, extend's three
//! answers (with progress reports), and complete_many's answers. Each
//! function reads its arguments into owned core values, runs the `JobStore`
//! call through task.rs and converts the answer; the `Queue` methods in
//! queue.rs are one line over these.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};
use telha_jobs::limits::MAX_PROGRESS_BYTES;
use telha_jobs::{CancelFilter, Completion, ErrorKind, Failure, JobStore, PauseTarget};

use crate::errors::{invalid, to_py, type_error};
use crate::payload::{self, type_name};
use crate::{admin, args, task};

/// `Queue.cancel`: `"cancelled"` (it was pending, scheduled or failed) or
/// `"requested"` (leased: its holder is told at its next heartbeat).
pub fn cancel(
    py: Python<'_>,
    q: &dyn JobStore,
    job_id: &Bound<'_, PyAny>,
    reason: &str,
) -> PyResult<&'static str> {
    let id = args::job_id(job_id)?;
    Ok(task::run(py, || q.cancel(&id, reason))?.name())
}

/// An optional text filter of `cancel_many`, parsed by the core (kind
/// syntax, scope UUID, state name).
fn filter<T>(obj: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Option<T>>
where
    T: std::str::FromStr<Err = telha_jobs::Error>,
{
    match obj.filter(|o| !o.is_none()) {
        None => Ok(None),
        Some(o) => {
            let s = args::text(o, what)?;
            args::parse(o.py(), &s).map(Some)
        }
    }
}

/// `Queue.cancel_many`: `{"cancelled": n, "requested": n, "corrupt": n}`.
pub fn cancel_many<'py>(
    py: Python<'py>,
    q: &dyn JobStore,
    kind: Option<&Bound<'_, PyAny>>,
    scope: Option<&Bound<'_, PyAny>>,
    state: Option<&Bound<'_, PyAny>>,
    reason: &str,
    tag: Option<String>,
) -> PyResult<Bound<'py, PyDict>> {
    let f = CancelFilter {
        kind: filter(kind, "kind")?,
        scope: scope
            .filter(|s| !s.is_none())
            .map(args::scope)
            .transpose()?,
        state: filter(state, "state")?,
        reason: reason.to_string(),
        tag,
    };
    let r = task::run(py, || q.cancel_many(&f))?;
    let d = PyDict::new(py);
    d.set_item("cancelled", r.cancelled)?;
    d.set_item("requested", r.requested)?;
    d.set_item("corrupt", r.corrupt)?;
    Ok(d)
}

/// `Queue.delete`.
pub fn delete(py: Python<'_>, q: &dyn JobStore, job_id: &Bound<'_, PyAny>) -> PyResult<()> {
    let id = args::job_id(job_id)?;
    task::run(py, || q.delete(&id))
}

/// `Queue.promote`: a delayed or retry-waiting job ready now.
pub fn promote(py: Python<'_>, q: &dyn JobStore, job_id: &Bound<'_, PyAny>) -> PyResult<()> {
    let id = args::job_id(job_id)?;
    task::run(py, || q.promote(&id))
}

/// `Queue.reschedule`: `run_at` seconds since the epoch or a datetime.
pub fn reschedule(
    py: Python<'_>,
    q: &dyn JobStore,
    job_id: &Bound<'_, PyAny>,
    run_at: &Bound<'_, PyAny>,
) -> PyResult<()> {
    let id = args::job_id(job_id)?;
    let at = args::instant_ms(run_at, "run_at")?;
    task::run(py, || q.reschedule(&id, at))
}

/// `Queue.set_priority`: an int 0 to 255.
pub fn set_priority(
    py: Python<'_>,
    q: &dyn JobStore,
    job_id: &Bound<'_, PyAny>,
    priority: &Bound<'_, PyAny>,
) -> PyResult<()> {
    let id = args::job_id(job_id)?;
    let p = args::int_in(priority, "priority", 0, u8::MAX.into())? as u8;
    task::run(py, || q.set_priority(&id, p))
}

/// `Queue.snooze`: `delay` seconds or a timedelta, finite and >= 0.
pub fn snooze(
    py: Python<'_>,
    q: &dyn JobStore,
    job: &Bound<'_, PyAny>,
    delay: &Bound<'_, PyAny>,
) -> PyResult<()> {
    let t = args::token(job)?;
    let d = args::delay(delay, "delay")?;
    task::run(py, || q.snooze(&t, d))
}

/// `Queue.fail`, with the handler's retry delay when `retry_in` is given.
pub fn fail(
    py: Python<'_>,
    q: &dyn JobStore,
    job: &Bound<'_, PyAny>,
    reason: &str,
    retryable: bool,
    retry_in: Option<&Bound<'_, PyAny>>,
) -> PyResult<()> {
    let mut f = Failure::new(args::token(job)?, reason);
    f.retryable = retryable;
    if let Some(r) = retry_in.filter(|r| !r.is_none()) {
        f.retry_in = Some(args::delay(r, "retry_in")?);
    }
    task::run(py, || q.fail_with(f))
}

/// What `pause` / `resume` name: exactly one of `kind` (an exact kind or a
/// family, `"ingest:*"`) and `scope` (a scope UUID); or a label
/// `"kind:<pattern>"` / `"scope:<uuid>"` as the first argument.
pub fn target<'py>(
    py: Python<'py>,
    label: Option<&Bound<'py, PyAny>>,
    kind: Option<&Bound<'py, PyAny>>,
    scope: Option<&Bound<'py, PyAny>>,
) -> PyResult<PauseTarget> {
    fn given<'py>(o: Option<&Bound<'py, PyAny>>) -> Option<Bound<'py, PyAny>> {
        o.filter(|o| !o.is_none()).cloned()
    }
    match (given(label), given(kind), given(scope)) {
        (Some(l), None, None) => {
            let s = l.cast::<PyString>().map_err(|_| {
                type_error(format!(
                    "target must be a str (\"kind:<kind>\" or \"scope:<uuid>\"), got {}",
                    type_name(&l)
                ))
            })?;
            let s = s.to_cow()?;
            task::pure(py, || PauseTarget::parse(&s))
        }
        (None, Some(k), None) => {
            let k = args::text(&k, "kind")?;
            Ok(PauseTarget::Kind(args::parse(py, &k)?))
        }
        (None, None, Some(s)) => Ok(PauseTarget::Scope(args::scope(&s)?)),
        _ => Err(invalid(
            py,
            "name exactly one of kind=<kind or family:*>, scope=<uuid> \
             (or a target \"kind:...\" / \"scope:...\")",
        )),
    }
}

/// `Queue.pause` (`on`) / `Queue.resume`: whether anything changed.
pub fn pause(py: Python<'_>, q: &dyn JobStore, t: PauseTarget, on: bool) -> PyResult<bool> {
    task::run(py, || if on { q.pause(&t) } else { q.resume(&t) })
}

/// `Queue.paused`: `{"kinds": [...], "scopes": [...]}`, sorted.
pub fn paused<'py>(py: Python<'py>, q: &dyn JobStore) -> PyResult<Bound<'py, PyDict>> {
    let p = task::run(py, || q.paused())?;
    admin::paused_answer(py, &p)
}

/// One answer per token of a heartbeat: `"renewed"`, `"lost"` (the lease
/// is stale: reaped, settled, leased again, past `max_lease_total`) or
/// `"cancelled"` (a cancel was requested: stop and settle). `progress`: a
/// list aligned with `jobs` (None: no report for that job), sent through
/// `JobStore::heartbeat`.
pub fn extend_answers(
    py: Python<'_>,
    q: &dyn JobStore,
    jobs: &Bound<'_, PyAny>,
    worker_id: &str,
    progress: Option<&Bound<'_, PyAny>>,
    what: &str,
) -> PyResult<Vec<&'static str>> {
    let tokens = args::tokens(jobs, what)?;
    let reports = match progress.filter(|p| !p.is_none()) {
        Some(p) => Some(reports(p)?),
        None => None,
    };
    let res = task::run(py, || match &reports {
        Some(r) => q.heartbeat(&tokens, r, worker_id),
        None => q.extend(&tokens, worker_id),
    })?;
    res.into_iter()
        .map(|r| match r {
            Ok(_) => Ok("renewed"),
            Err(e) => match e.kind() {
                ErrorKind::Cancelled => Ok("cancelled"),
                ErrorKind::Aborted | ErrorKind::NotFound => Ok("lost"),
                _ => Err(to_py(py, e)),
            },
        })
        .collect()
}

/// `extend(progress=...)`: one report per job, each encoded by the payload
/// convention (bytes as they are); None is no report. The core checks the
/// sizes and the count for the whole call.
fn reports(p: &Bound<'_, PyAny>) -> PyResult<Vec<Option<Vec<u8>>>> {
    if !(p.is_instance_of::<PyList>() || p.is_instance_of::<PyTuple>()) {
        return Err(type_error(format!(
            "progress must be a list aligned with jobs (None: no report), got {}",
            type_name(p)
        )));
    }
    p.try_iter()?
        .enumerate()
        .map(|(i, v)| {
            let v = v?;
            if v.is_none() {
                return Ok(None);
            }
            Ok(Some(payload::to_bytes(&v, &format!("progress[{i}]"))?.0))
        })
        .collect()
}

/// A progress report as a heartbeat carries it (`Lease.progress` encodes
/// at once with this): bytes as they are, another value by the payload
/// convention; `InvalidArgumentError` over `limits.MAX_PROGRESS_BYTES`.
#[pyfunction]
#[pyo3(name = "_encode_progress")]
pub fn encode_progress<'py>(value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    let py = value.py();
    task::guard(py, "encode_progress", || {
        let (b, _) = payload::to_bytes(value, "progress")?;
        if b.len() > MAX_PROGRESS_BYTES {
            return Err(invalid(
                py,
                format!(
                    "progress of {} bytes is over limits.MAX_PROGRESS_BYTES ({MAX_PROGRESS_BYTES}): \
                     report a small number, string or dict",
                    b.len()
                ),
            ));
        }
        Ok(PyBytes::new(py, &b))
    })
}

/// `Queue.complete_many`: one entry per job, None when it was completed,
/// else the exception saying why not.
pub fn complete_many(
    py: Python<'_>,
    q: &dyn JobStore,
    jobs: &Bound<'_, PyAny>,
    results: Option<&Bound<'_, PyAny>>,
    then: Option<&Bound<'_, PyAny>>,
) -> PyResult<Vec<Option<Py<PyAny>>>> {
    let items = completions(py, jobs, results, then)?;
    if items.is_empty() {
        return Ok(vec![]);
    }
    let answers = task::run(py, || q.complete_many(items))?;
    Ok(completion_answers(py, answers))
}

/// `complete_many`'s arguments read into the core's completions.
pub fn completions(
    py: Python<'_>,
    jobs: &Bound<'_, PyAny>,
    results: Option<&Bound<'_, PyAny>>,
    then: Option<&Bound<'_, PyAny>>,
) -> PyResult<Vec<Completion>> {
    let tokens = args::tokens(jobs, "complete_many")?;
    let mut items: Vec<Completion> = match results {
        None => tokens
            .into_iter()
            .map(|t| Completion::new(t, None))
            .collect(),
        Some(r) => {
            let r = r
                .try_iter()
                .map_err(|_| type_error("results must be a list, one result per job"))?
                .collect::<PyResult<Vec<_>>>()?;
            if r.len() != tokens.len() {
                return Err(invalid(
                    py,
                    format!("results has {} entries for {} jobs", r.len(), tokens.len()),
                ));
            }
            tokens
                .into_iter()
                .zip(&r)
                .enumerate()
                .map(|(i, (t, v))| args::completion(t, Some(v), &format!("results[{i}]")))
                .collect::<PyResult<_>>()?
        }
    };
    crate::flow::then_many(&mut items, then)?;
    Ok(items)
}

/// The core's per-job answers of a `complete_many` as Python's: None, or
/// the exception saying why not.
pub fn completion_answers(
    py: Python<'_>,
    answers: Vec<telha_jobs::Result<()>>,
) -> Vec<Option<Py<PyAny>>> {
    answers
        .into_iter()
        .map(|a| a.err().map(|e| to_py(py, e).into_value(py).into_any()))
        .collect()
}
