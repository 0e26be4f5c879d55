//! Job control from Python (as node/src's): cancel, cancel_many, delete,
//! snooze, fail with a retry delay, pause / resume / paused, and extend's
//! three answers. Each function reads its arguments into owned core values,
//! runs the `JobStore` call through task.rs and converts the answer; the
//! `Queue` methods in queue.rs are one line over these.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use telha_jobs::{CancelFilter, ErrorKind, Failure, JobStore, PauseTarget};

use crate::errors::{invalid, to_py, type_error};
use crate::payload::type_name;
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
) -> PyResult<Bound<'py, PyDict>> {
    let f = CancelFilter {
        kind: filter(kind, "kind")?,
        scope: scope
            .filter(|s| !s.is_none())
            .map(args::scope)
            .transpose()?,
        state: filter(state, "state")?,
        reason: reason.to_string(),
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
/// `"cancelled"` (a cancel was requested: stop and settle).
pub fn extend_answers(
    py: Python<'_>,
    q: &dyn JobStore,
    jobs: &Bound<'_, PyAny>,
    worker_id: &str,
    what: &str,
) -> PyResult<Vec<&'static str>> {
    let tokens = args::tokens(jobs, what)?;
    let res = task::run(py, || q.extend(&tokens, worker_id))?;
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
