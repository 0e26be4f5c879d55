//! Flow control and follow-up jobs from Python (as core/src/flow.rs):
//! `set_limit` / `remove_limit` / `limits` (answered as
//! `telha_jobs.LimitInfo`, a frozen dataclass in `_types.py`), and the
//! `then=` follow-ups of `complete` / `complete_many`, read as
//! `enqueue_many` items (args.rs). The `Queue` methods in queue.rs are one
//! line over these.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PyString, PyTuple, PyType};
use telha_jobs::{Completion, JobStore, Limit, LimitStatus, LimitTarget, NewJob};

use crate::errors::{invalid, type_error};
use crate::payload::type_name;
use crate::{args, task};

/// A limit target label (`"kind:embed"`, `"scope:*"`, ...), parsed by the core.
fn target(obj: &Bound<'_, PyAny>) -> PyResult<LimitTarget> {
    let s = obj.cast::<PyString>().map_err(|_| {
        type_error(format!(
            "target must be a str (\"kind:<kind>\", \"scope:<uuid>\", \"scope:*\", \
             \"scope:<uuid or *>/kind:<kind>\", \"key:<key>\", \"key:*\"), got {}",
            type_name(obj)
        ))
    })?;
    let s = s.to_cow()?;
    task::pure(obj.py(), || LimitTarget::parse(&s))
}

/// An optional count setting: an int >= 0, saturated at `u32::MAX` (the
/// core's range check then refuses it, naming the setting).
fn setting(obj: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Option<u32>> {
    match obj.filter(|o| !o.is_none()) {
        None => Ok(None),
        Some(o) => Ok(Some(
            u32::try_from(args::count(o, what)?).unwrap_or(u32::MAX),
        )),
    }
}

/// `Queue.set_limit`: the core checks the settings (`InvalidArgumentError`
/// naming the one out of range, or a limit that sets nothing, or `ordered`
/// off a key target with concurrency 1).
#[allow(clippy::too_many_arguments)]
pub fn set_limit(
    py: Python<'_>,
    q: &dyn JobStore,
    t: &Bound<'_, PyAny>,
    concurrency: Option<&Bound<'_, PyAny>>,
    rate: Option<&Bound<'_, PyAny>>,
    burst: Option<&Bound<'_, PyAny>>,
    weight: Option<&Bound<'_, PyAny>>,
    ordered: bool,
) -> PyResult<()> {
    let t = target(t)?;
    let limit = Limit {
        concurrency: setting(concurrency, "concurrency")?,
        rate: rate
            .filter(|r| !r.is_none())
            .map(|r| args::float(r, "rate"))
            .transpose()?,
        burst: setting(burst, "burst")?,
        weight: setting(weight, "weight")?,
        ordered,
    };
    task::run(py, || q.set_limit(&t, limit))
}

/// `Queue.remove_limit`: whether there was one.
pub fn remove_limit(py: Python<'_>, q: &dyn JobStore, t: &Bound<'_, PyAny>) -> PyResult<bool> {
    let t = target(t)?;
    task::run(py, || q.remove_limit(&t))
}

static LIMIT_INFO: PyOnceLock<Py<PyType>> = PyOnceLock::new();

fn info<'py>(cls: &Bound<'py, PyType>, l: &LimitStatus) -> PyResult<Bound<'py, PyAny>> {
    let kw = PyDict::new(cls.py());
    kw.set_item("target", l.target.label())?;
    kw.set_item("concurrency", l.limit.concurrency)?;
    kw.set_item("rate", l.limit.rate)?;
    kw.set_item("burst", l.limit.burst)?;
    kw.set_item("weight", l.limit.weight)?;
    kw.set_item("ordered", l.limit.ordered)?;
    kw.set_item("leased", l.leased)?;
    kw.set_item("held", l.held)?;
    kw.set_item("throttled_concurrency", l.throttled_concurrency)?;
    kw.set_item("throttled_rate", l.throttled_rate)?;
    cls.call((), Some(&kw))
}

/// `Queue.limits`: every limit as a `LimitInfo`, sorted by target label.
pub fn limits<'py>(py: Python<'py>, q: &dyn JobStore) -> PyResult<Bound<'py, PyList>> {
    let all = task::run(py, || q.limits())?;
    let cls = LIMIT_INFO.import(py, "telha_jobs._types", "LimitInfo")?;
    let rows = all
        .iter()
        .map(|l| info(cls, l))
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, rows)
}

/// `then=` of `complete`: None or a list of `enqueue_many` items.
pub fn then(obj: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Vec<NewJob>> {
    match obj.filter(|o| !o.is_none()) {
        None => Ok(vec![]),
        Some(o) => args::items_of(o, what, &format!("{what} item")),
    }
}

/// `Queue.complete`: the result and the follow-ups in one atomic batch.
pub fn complete(
    py: Python<'_>,
    q: &dyn JobStore,
    job: &Bound<'_, PyAny>,
    result: Option<&Bound<'_, PyAny>>,
    follow: Option<&Bound<'_, PyAny>>,
) -> PyResult<()> {
    let c = args::completion(args::token(job)?, result, "result")?.then(then(follow, "then")?);
    task::run(py, || q.complete_with(c))
}

/// `complete_many(then=...)`: one entry per job (None: no follow-ups), set
/// on the completions already built, in order.
pub fn then_many(items: &mut [Completion], follow: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    let Some(f) = follow.filter(|o| !o.is_none()) else {
        return Ok(());
    };
    if f.is_instance_of::<PyString>() || f.is_instance_of::<PyDict>() {
        return Err(type_error(
            "then must be a list, one list of follow-ups (or None) per job",
        ));
    }
    let per = f
        .try_iter()
        .map_err(|_| type_error("then must be a list, one list of follow-ups (or None) per job"))?
        .collect::<PyResult<Vec<_>>>()?;
    if per.len() != items.len() {
        return Err(invalid(
            f.py(),
            format!("then has {} entries for {} jobs", per.len(), items.len()),
        ));
    }
    for (i, (c, t)) in items.iter_mut().zip(&per).enumerate() {
        if t.is_instance_of::<PyTuple>() {
            return Err(type_error(format!(
                "then[{i}] must be a list of follow-ups (or None), got a tuple"
            )));
        }
        c.then = then(Some(t), &format!("then[{i}]"))?;
    }
    Ok(())
}
