//! The operator's calls (as node/src/admin.rs): `Queue.list`'s query from
//! Python, its page through the core's one paging rule
//! (`JobStore::list_full`: a full page across short core pages, bounded
//! reads, every call's corrupt rows collected) answered as
//! `telha_jobs.JobList`: a `list` of `JobInfo` with `.next` (the cursor to
//! pass as `after` for the next page, or None at the end) and `.corrupt`;
//! and the answers of `stats` and `reap` as dicts.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PyString, PyType};
use telha_jobs::limits::{MAX_LIST_LIMIT, MAX_SCOPE_LIMIT};
use telha_jobs::{
    JobStore, ListPage, ListQuery, Paused, ReapReport, State, StateCounts, Stats, StatsQuery,
};

use crate::args;
use crate::errors::type_error;
use crate::job::JobInfo;
use crate::payload::type_name;
use crate::task;

/// The page size when `limit` is not given.
pub const LIMIT_DEFAULT: usize = 100;

/// The query of `list(state=, scope=, kind=, limit=, after=)`. `after` is a
/// `JobInfo` (its cursor), a cursor string (`JobInfo.cursor`,
/// `JobList.next`) or a job id (str or UUID: the cursor of that job, looked
/// up; `NotFoundError` when there is none).
pub fn list_query(
    py: Python<'_>,
    store: &dyn JobStore,
    state: Option<&Bound<'_, PyAny>>,
    scope: Option<&Bound<'_, PyAny>>,
    kind: Option<&Bound<'_, PyAny>>,
    limit: Option<&Bound<'_, PyAny>>,
    after: Option<&Bound<'_, PyAny>>,
) -> PyResult<ListQuery> {
    let limit = match limit {
        Some(l) => args::int_in(l, "limit", 1, MAX_LIST_LIMIT as u64)? as usize,
        None => LIMIT_DEFAULT,
    };
    let kind = match kind {
        Some(k) => Some(args::parse(py, &args::text(k, "kind")?)?),
        None => None,
    };
    Ok(ListQuery {
        state: state.map(args::state).transpose()?,
        scope: scope.map(args::scope).transpose()?,
        kind,
        schedule: None,
        parent: None,
        tag: None,
        key: None,
        limit,
        after: after.map(|a| cursor(py, store, a)).transpose()?,
    })
}

fn cursor(py: Python<'_>, store: &dyn JobStore, after: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(info) = after.cast::<JobInfo>() {
        return Ok(info.get().cursor().to_owned());
    }
    let text = if args::is_uuid(after) {
        after.str()?.to_string()
    } else if let Ok(s) = after.cast::<PyString>() {
        s.to_cow()?.into_owned()
    } else {
        return Err(type_error(format!(
            "after must be a JobInfo, its cursor or a job id, got {}",
            type_name(after)
        )));
    };
    let Ok(id) = text.parse::<telha_jobs::JobId>() else {
        return Ok(text); // a cursor: the core checks it
    };
    match task::run(py, || store.get(&id))? {
        Some(info) => Ok(info.cursor),
        None => Err(crate::errors::to_py(
            py,
            telha_jobs::Error::NotFound(format!("no job {id} to list after")),
        )),
    }
}

static JOB_LIST: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static CORRUPT_RECORD: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// The page as `telha_jobs.JobList(jobs, next, corrupt)`.
pub fn list_answer(py: Python<'_>, page: ListPage) -> PyResult<Py<PyAny>> {
    let record = CORRUPT_RECORD.import(py, "telha_jobs._types", "CorruptRecord")?;
    let corrupt = page
        .corrupt
        .into_iter()
        .map(|c| record.call1((c.key, c.id.map(|i| i.to_string()), c.error)))
        .collect::<PyResult<Vec<_>>>()?;
    let jobs = page
        .jobs
        .into_iter()
        .map(|j| Bound::new(py, JobInfo::new(j)))
        .collect::<PyResult<Vec<_>>>()?;
    let cls = JOB_LIST.import(py, "telha_jobs._types", "JobList")?;
    let out = cls.call1((PyList::new(py, jobs)?, page.next, PyList::new(py, corrupt)?))?;
    Ok(out.unbind())
}

static FIND_RESULT: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// What `find` found as `telha_jobs.FindResult(by_id, by_key, by_tag,
/// matched)` (`by_tag` a `JobList`).
pub fn find_answer(py: Python<'_>, r: telha_jobs::FindResult) -> PyResult<Py<PyAny>> {
    let matched = pyo3::types::PyTuple::new(py, r.matched())?;
    let one = |j: Option<telha_jobs::JobInfo>| -> PyResult<Py<PyAny>> {
        match j {
            Some(j) => Ok(Bound::new(py, JobInfo::new(j))?.into_any().unbind()),
            None => Ok(py.None()),
        }
    };
    let by_id = one(r.by_id)?;
    let by_key = one(r.by_key)?;
    let by_tag = list_answer(py, r.by_tag)?;
    let cls = FIND_RESULT.import(py, "telha_jobs._types", "FindResult")?;
    Ok(cls.call1((by_id, by_key, by_tag, matched))?.unbind())
}

pub fn counts_dict<'py>(py: Python<'py>, c: &StateCounts) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for s in State::ALL {
        d.set_item(s.as_str(), c.get(s))?;
    }
    Ok(d)
}

/// `paused()` (and `stats()["paused"]`): `{"kinds": [pattern, ...],
/// "scopes": [uuid, ...]}`, each sorted.
pub fn paused_answer<'py>(py: Python<'py>, p: &Paused) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let kinds: Vec<String> = p.kinds.iter().map(|k| k.to_string()).collect();
    let scopes: Vec<String> = p.scopes.iter().map(|s| s.to_string()).collect();
    d.set_item("kinds", kinds)?;
    d.set_item("scopes", scopes)?;
    Ok(d)
}

/// `stats(scope_order=, scope_limit=, scopes_after=, scope_prefix=,
/// oldest_ready=)`.
pub fn stats_query(
    py: Python<'_>,
    order: Option<&Bound<'_, PyAny>>,
    limit: Option<&Bound<'_, PyAny>>,
    after: Option<&Bound<'_, PyAny>>,
    prefix: Option<&Bound<'_, PyAny>>,
    oldest_ready: Option<&Bound<'_, PyAny>>,
) -> PyResult<StatsQuery> {
    fn given<'a, 'py>(o: Option<&'a Bound<'py, PyAny>>) -> Option<&'a Bound<'py, PyAny>> {
        o.filter(|v| !v.is_none())
    }
    let mut q = StatsQuery::default();
    if let Some(o) = given(order) {
        q.scope_order = args::parse(py, &args::text(o, "scope_order")?)?;
    }
    if let Some(l) = given(limit) {
        q.scope_limit = args::int_in(l, "scope_limit", 0, MAX_SCOPE_LIMIT as u64)? as usize;
    }
    q.scopes_after = given(after)
        .map(|a| args::text(a, "scopes_after"))
        .transpose()?;
    q.scope_prefix = given(prefix)
        .map(|p| args::text(p, "scope_prefix"))
        .transpose()?;
    if let Some(o) = given(oldest_ready) {
        q.oldest_ready = args::flag(o, "oldest_ready")?;
    }
    Ok(q)
}

/// `stats()`: `{"total": {state: n}, "by_kind": {kind: {state: n}},
/// "by_scope": {scope uuid: {state: n}} (one page, in its order),
/// "scope_order": str, "scopes_next": str | None, "paused": {"kinds": [...],
/// "scopes": [...]}, "oldest_ready_ms": {kind: ms}}` (the last filled only
/// when asked with `oldest_ready=True`; kinds with nothing due omitted).
pub fn stats_answer<'py>(py: Python<'py>, s: &Stats) -> PyResult<Bound<'py, PyDict>> {
    let by_kind = PyDict::new(py);
    for (k, c) in &s.by_kind {
        by_kind.set_item(k, counts_dict(py, c)?)?;
    }
    let by_scope = PyDict::new(py);
    for (sc, c) in &s.scopes_ranked() {
        by_scope.set_item(sc.to_string(), counts_dict(py, c)?)?;
    }
    let d = PyDict::new(py);
    d.set_item("total", counts_dict(py, &s.total)?)?;
    d.set_item("by_kind", by_kind)?;
    d.set_item("by_scope", by_scope)?;
    d.set_item("scope_order", s.scope_order.as_str())?;
    d.set_item("scopes_next", s.scopes_next.as_deref())?;
    d.set_item("paused", paused_answer(py, &s.paused)?)?;
    let oldest = PyDict::new(py);
    for (k, ms) in &s.oldest_ready_ms {
        oldest.set_item(k, ms)?;
    }
    d.set_item("oldest_ready_ms", oldest)?;
    Ok(d)
}

/// `reap()`: the counts of one reaper pass.
pub fn reap_answer<'py>(py: Python<'py>, r: &ReapReport) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("expired", r.expired)?;
    d.set_item("dead", r.dead)?;
    d.set_item("pruned", r.pruned)?;
    d.set_item("expired_unstarted", r.expired_unstarted)?;
    d.set_item("corrupt", r.corrupt.len())?;
    Ok(d)
}
