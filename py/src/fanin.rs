//! Fan-in (issue 43) in Python: the `after=` and `on_child_dead=` enqueue
//! options, `Queue.enqueue_group` and `Queue.results_of_children` (a
//! fourth `#[pymethods]` block), `JobInfo.fan_in`. The answers are the
//! pure-Python `FanIn`, `ChildResult` and `ChildPage` of `_types.py`.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyList, PyString};
use telha_jobs::{ChildDeadPolicy, ChildPage, FanInInfo, JobId};

use crate::errors::{invalid, type_error};
use crate::payload::{self, type_name};
use crate::queue::Queue;
use crate::{args, job, task};

/// `after=`: a list (or any iterable) of job ids (str, UUID, or an
/// `Enqueued`). A lone str is refused: it would be read per character.
pub fn after(v: &Bound<'_, PyAny>) -> PyResult<Vec<JobId>> {
    let bad = || {
        type_error(format!(
            "after must be a list of job ids, got {}",
            type_name(v)
        ))
    };
    if v.is_instance_of::<PyString>() || args::is_uuid(v) {
        return Err(bad());
    }
    v.try_iter()
        .map_err(|_| bad())?
        .map(|id| args::job_id(&id?))
        .collect()
}

/// `on_child_dead=`: `"fail"`, `"cancel_rest"` or `"ignore"`.
pub fn policy(v: &Bound<'_, PyAny>) -> PyResult<ChildDeadPolicy> {
    let s = v.cast::<PyString>().map_err(|_| {
        type_error(format!(
            "on_child_dead must be \"fail\", \"cancel_rest\" or \"ignore\", got {}",
            type_name(v)
        ))
    })?;
    s.to_cow()?
        .parse()
        .map_err(|e: telha_jobs::Error| invalid(v.py(), e.to_string()))
}

static FAN_IN: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static CHILD: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static PAGE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// `JobInfo.fan_in`: `FanIn(unfinished, total, policy)`.
pub fn fan_in(py: Python<'_>, f: &FanInInfo) -> PyResult<Py<PyAny>> {
    let cls = FAN_IN.import(py, "telha_jobs._types", "FanIn")?;
    Ok(cls
        .call1((f.unfinished, f.total, f.policy.as_str()))?
        .unbind())
}

/// A `results_of_children` page as `ChildPage([ChildResult, ...], next)`.
fn page(py: Python<'_>, p: &ChildPage) -> PyResult<Py<PyAny>> {
    let child = CHILD.import(py, "telha_jobs._types", "ChildResult")?;
    let children = p
        .children
        .iter()
        .map(|c| {
            let raw = c.result.as_deref();
            let value = raw
                .map(|r| payload::from_bytes(py, r, c.result_encoding))
                .transpose()?;
            child.call1((
                c.id.to_string(),
                c.state.map(|s| s.as_str()),
                value,
                raw.map(|r| PyBytes::new(py, r)),
                c.result_encoding.as_str(),
                c.last_error.as_deref(),
            ))
        })
        .collect::<PyResult<Vec<_>>>()?;
    let cls = PAGE.import(py, "telha_jobs._types", "ChildPage")?;
    Ok(cls
        .call1((PyList::new(py, children)?, p.next.as_deref()))?
        .unbind())
}

#[pymethods]
impl Queue {
    /// Enqueue `children` (a list of `enqueue_many` items) and `parent`
    /// (one item: `(kind, payload)` or a dict with `kind`, `payload` and
    /// options, `on_child_dead` among them) in one atomic batch: all or
    /// none. The parent waits (state `"waiting"`) until every child has
    /// finished, then becomes pending. Returns `(children_ids, parent_id)`.
    fn enqueue_group(
        &self,
        py: Python<'_>,
        children: &Bound<'_, PyAny>,
        parent: &Bound<'_, PyAny>,
    ) -> PyResult<(Vec<Py<PyAny>>, Py<PyAny>)> {
        task::guard(py, "enqueue_group", || {
            let kids = args::items_of(children, "enqueue_group", "enqueue_group child")?;
            let parent = args::item_at(parent, "enqueue_group parent")?;
            let q = &*self.store;
            let (ids, p) = task::run(py, || q.enqueue_group(kids, parent))?;
            let ids = ids
                .iter()
                .map(|e| job::enqueued(py, e))
                .collect::<PyResult<Vec<_>>>()?;
            Ok((ids, job::enqueued(py, &p)?))
        })
    }

    /// A page of `parent`'s children (every job its `after` named, or its
    /// group's children), in enqueue order: `ChildPage`, a list of
    /// `ChildResult` (`id`, `state`, `result`, `raw_result`,
    /// `result_encoding`, `last_error`) with `.next`, the cursor of the
    /// next page (None after the last). `limit`: 1 to 1000.
    /// `NotFoundError` when `parent` does not exist.
    #[pyo3(signature = (parent, cursor=None, limit=100))]
    fn results_of_children(
        &self,
        py: Python<'_>,
        parent: &Bound<'_, PyAny>,
        cursor: Option<String>,
        limit: usize,
    ) -> PyResult<Py<PyAny>> {
        task::guard(py, "results_of_children", || {
            let id = args::job_ref(parent)?;
            let q = &*self.store;
            let p = task::run(py, || q.results_of_children(&id, cursor.as_deref(), limit))?;
            page(py, &p)
        })
    }
}
