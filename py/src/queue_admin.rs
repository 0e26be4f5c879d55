//! `Queue`'s operator and watching methods (a second `#[pymethods]` block,
//! pyo3's `multiple-pymethods`): subscribe, list, reap, purge, stats,
//! serve, schedules, limits, metrics. The job lifecycle is in queue.rs.

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::queue::Queue;
use crate::schedule::{self, ScheduleInfo};
use crate::{admin, args, task};

#[pymethods]
impl Queue {
    /// The transitions committed from now on, in commit order, as a
    /// `Subscription` of `Event`s (see events.rs): filtered by `kinds`,
    /// `scopes`, `transitions`; `buffer` (1 to 1,000,000, default 10,000)
    /// events held for a slow reader, the rest counted in `Event.missed`.
    #[pyo3(signature = (kinds=None, scopes=None, transitions=None, buffer=None))]
    fn subscribe(
        &self,
        py: Python<'_>,
        kinds: Option<&Bound<'_, PyAny>>,
        scopes: Option<&Bound<'_, PyAny>>,
        transitions: Option<&Bound<'_, PyAny>>,
        buffer: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<crate::events::Subscription> {
        task::guard(py, "subscribe", || {
            let o = crate::events::options(py, kinds, scopes, transitions, buffer)?;
            crate::events::open(py, &*self.store, o)
        })
    }

    /// Up to `limit` jobs (1 to `limits.MAX_LIST_LIMIT`, 10,000; default
    /// 100) in key order (scope, state, priority, time), filtered by state,
    /// scope and kind (`"ingest:*"` works). Returns a `JobList`: a list of
    /// `JobInfo` with `.next` (pass as `after` for the next page; None at
    /// the end) and `.corrupt` (rows skipped because they do not decode).
    /// A page shorter than `limit` has no `next`, except when one call read
    /// its bound of rows first. `after`: a JobInfo, a cursor, or a job id.
    /// `schedule`: only the jobs that schedule enqueued; `parent` (a job
    /// or id): only the follow-ups its completion enqueued; `tag`: only the
    /// jobs carrying it, read from the tag index (by scope, state and
    /// enqueue order, O(page)).
    #[pyo3(signature = (*, state=None, scope=None, kind=None, limit=None, after=None, schedule=None,
        parent=None, tag=None),
        text_signature = "($self, *, state=None, scope=None, kind=None, limit=100, after=None, \
        schedule=None, parent=None, tag=None)")]
    #[allow(clippy::too_many_arguments)]
    fn list(
        &self,
        py: Python<'_>,
        state: Option<&Bound<'_, PyAny>>,
        scope: Option<&Bound<'_, PyAny>>,
        kind: Option<&Bound<'_, PyAny>>,
        limit: Option<&Bound<'_, PyAny>>,
        after: Option<&Bound<'_, PyAny>>,
        schedule: Option<&Bound<'_, PyAny>>,
        parent: Option<&Bound<'_, PyAny>>,
        tag: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        task::guard(py, "list", || {
            let q = &*self.store;
            let mut query = admin::list_query(py, q, state, scope, kind, limit, after)?;
            query.schedule = schedule.map(|s| args::text(s, "schedule")).transpose()?;
            query.parent = parent.map(args::job_ref).transpose()?;
            query.tag = tag.map(|t| args::text(t, "tag")).transpose()?;
            let page = task::run(py, || q.list_full(&query))?;
            admin::list_answer(py, page)
        })
    }

    /// How many jobs carry `tag`, per state (`scope`: only that scope):
    /// a dict of the six states' counts, read from the tag
    /// index (O(jobs carrying the tag)).
    #[pyo3(signature = (tag, *, scope=None))]
    fn count_tag<'py>(
        &self,
        py: Python<'py>,
        tag: &Bound<'py, PyAny>,
        scope: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        task::guard(py, "count_tag", || {
            let tag = args::text(tag, "tag")?;
            let scope = scope.map(args::scope).transpose()?;
            let q = &*self.store;
            let c = task::run(py, || q.count_tag(&tag, scope))?;
            admin::counts_dict(py, &c)
        })
    }

    /// Look `text` up exactly (no full-text matching) as a job id, an
    /// idempotency key and a tag, each from its own index (O(page), never a
    /// scan): a `FindResult` with `by_id`, `by_key` (in `scope`, else the
    /// system scope: keys are per scope), `by_tag` (the first `limit` jobs
    /// carrying the tag, a `JobList` with `.next` for `list(tag=text,
    /// after=...)`) and `matched`. `scope` also limits the id and the tag.
    /// `InvalidArgumentError` for an empty text, one over 512 bytes or with
    /// a control character, or a limit outside 1 to 10,000.
    #[pyo3(signature = (text, *, scope=None, limit=None),
        text_signature = "($self, text, *, scope=None, limit=50)")]
    fn find(
        &self,
        py: Python<'_>,
        text: &Bound<'_, PyAny>,
        scope: Option<&Bound<'_, PyAny>>,
        limit: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        task::guard(py, "find", || {
            let limit = match limit {
                Some(l) => usize::try_from(args::count(l, "limit")?).unwrap_or(usize::MAX),
                None => telha_jobs::find::DEFAULT_FIND_LIMIT,
            };
            let query = telha_jobs::FindQuery {
                text: args::text(text, "text")?,
                scope: scope.map(args::scope).transpose()?,
                limit,
            };
            let q = &*self.store;
            let r = task::run(py, || q.find(&query))?;
            admin::find_answer(py, r)
        })
    }

    /// Write a consistent copy of the live store to the directory `dir`
    /// (`Queue::backup`: a RocksDB checkpoint plus the format marker, SST
    /// files hard-linked where the filesystem allows) that opens as a
    /// store; other threads' calls go on meanwhile. `dir` must not exist,
    /// or be empty. On a queue from `connect`, `dir` is on the server's
    /// filesystem. Returns `{"path", "bytes", "files", "took" (seconds),
    /// "sequence"}`.
    fn backup<'py>(&self, py: Python<'py>, dir: PathBuf) -> PyResult<Bound<'py, PyDict>> {
        task::guard(py, "backup", || {
            let q = &*self.store;
            let b = task::run(py, || q.backup(&dir))?;
            let d = PyDict::new(py);
            d.set_item("path", b.path.to_string_lossy())?;
            d.set_item("bytes", b.bytes)?;
            d.set_item("files", b.files)?;
            d.set_item("took", b.took.as_secs_f64())?;
            d.set_item("sequence", b.sequence)?;
            Ok(d)
        })
    }

    /// Run one reaper pass now: expired leases back to pending (or dead),
    /// old completed jobs pruned. Returns the counts.
    fn reap<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        task::guard(py, "reap", || {
            let q = &*self.store;
            let r = task::run(py, || q.reap())?;
            admin::reap_answer(py, &r)
        })
    }

    /// Operator action: delete `state` ("completed" or "dead") jobs that got
    /// there before `before` (seconds since the epoch or a datetime, at
    /// most `limits.MAX_INSTANT`). Returns how many.
    fn purge(
        &self,
        py: Python<'_>,
        state: &Bound<'_, PyAny>,
        before: &Bound<'_, PyAny>,
    ) -> PyResult<usize> {
        task::guard(py, "purge", || {
            let st = args::state(state)?;
            let cutoff = args::instant_ms(before, "before")?;
            let q = &*self.store;
            Ok(task::run(py, || q.purge(st, cutoff))?.purged)
        })
    }

    /// Exact counts: `{"total": {state: n}, "by_kind": {kind: {state: n}},
    /// "by_scope": {scope: {state: n}}, "scope_order", "scopes_next",
    /// "paused": {"kinds": [...], "scopes": [...]}, "oldest_ready_ms":
    /// {kind: ms}}`. The totals and
    /// per-kind counts are whole; `by_scope` is one page, in its order:
    /// `scope_order` "pending" (default), "leased" or "dead" (the most
    /// first) or "name"; at most `scope_limit` (default 100, 0 for none);
    /// `scopes_after`: the previous answer's `scopes_next` (None at the
    /// end); `scope_prefix`: only scopes whose id starts with it.
    /// `oldest_ready=True` fills `"oldest_ready_ms"`: per kind with a due
    /// job, how long its oldest one has been ready (exact, from the band
    /// heads; O(scopes with ready work), so off by default).
    #[pyo3(signature = (*, scope_order=None, scope_limit=None, scopes_after=None, scope_prefix=None,
        oldest_ready=None),
        text_signature = "($self, *, scope_order='pending', scope_limit=100, scopes_after=None, \
        scope_prefix=None, oldest_ready=False)")]
    fn stats<'py>(
        &self,
        py: Python<'py>,
        scope_order: Option<&Bound<'py, PyAny>>,
        scope_limit: Option<&Bound<'py, PyAny>>,
        scopes_after: Option<&Bound<'py, PyAny>>,
        scope_prefix: Option<&Bound<'py, PyAny>>,
        oldest_ready: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        task::guard(py, "stats", || {
            let q = &*self.store;
            let query = admin::stats_query(
                py,
                scope_order,
                scope_limit,
                scopes_after,
                scope_prefix,
                oldest_ready,
            )?;
            let s = task::run(py, || q.stats_with(&query))?;
            admin::stats_answer(py, &s)
        })
    }

    /// Serve this (embedded) queue to other processes over gRPC, from this
    /// process: workers reach it with `telha_jobs.connect(server.url)`.
    /// `listen` is `host:port` (port 0 picks a free one); a non-loopback
    /// address needs a `token`. `tls_cert` / `tls_key`: PEM files, both or
    /// neither. `metrics_listen`: also serve Prometheus text on
    /// `http://<addr>/metrics`. `ui`: the operator web page there too
    /// (default address 127.0.0.1:7451; `server.ui_url`), `ui_read_only`
    /// refusing its actions. Returns the running `Server`.
    #[pyo3(signature = (listen="127.0.0.1:7450", *, token=None, tls_cert=None, tls_key=None,
        metrics_listen=None, ui=false, ui_read_only=false))]
    #[allow(clippy::too_many_arguments)]
    fn serve(
        &self,
        py: Python<'_>,
        listen: &str,
        token: Option<String>,
        tls_cert: Option<PathBuf>,
        tls_key: Option<PathBuf>,
        metrics_listen: Option<String>,
        ui: bool,
        ui_read_only: bool,
    ) -> PyResult<crate::remote::Server> {
        task::guard(py, "serve", || {
            let q = self.local(py, "serve")?;
            let tls = crate::remote::tls(py, tls_cert, tls_key)?;
            let http = (metrics_listen, ui, ui_read_only);
            crate::remote::serve(py, q.clone(), listen, token, tls, http)
        })
    }

    /// Create or replace the schedule `name`: a `kind` job (with `payload`,
    /// as `enqueue` takes it) for every slot of `spec`, exactly one per slot
    /// (see schedule.rs for the keywords and their checks).
    #[pyo3(signature = (name, spec, *, kind, **options),
        text_signature = "($self, name, spec, *, kind, payload=None, timezone=None, anchor=None, \
        scope=None, priority=None, max_attempts=None, expires_in=None, catch_up='one', \
        max_catch_up=None, paused=False, tags=None, metadata=None)")]
    fn schedule_put(
        &self,
        py: Python<'_>,
        name: &Bound<'_, PyAny>,
        spec: &Bound<'_, PyAny>,
        kind: &Bound<'_, PyAny>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<ScheduleInfo> {
        task::guard(py, "schedule_put", || {
            let s = schedule::build(py, name, spec, kind, options)?;
            schedule::put(py, &*self.store, s)
        })
    }

    /// The schedule `name`; `NotFoundError` when there is none.
    fn schedule_get(&self, py: Python<'_>, name: &Bound<'_, PyAny>) -> PyResult<ScheduleInfo> {
        task::guard(py, "schedule_get", || {
            schedule::one(py, &*self.store, "get", name)
        })
    }

    /// Every schedule, by name.
    fn schedule_list(&self, py: Python<'_>) -> PyResult<Vec<ScheduleInfo>> {
        task::guard(py, "schedule_list", || schedule::list(py, &*self.store))
    }

    /// Delete the schedule `name` (its jobs stay); `NotFoundError`.
    fn schedule_delete(&self, py: Python<'_>, name: &Bound<'_, PyAny>) -> PyResult<()> {
        task::guard(py, "schedule_delete", || {
            schedule::delete(py, &*self.store, name)
        })
    }

    /// Pause the schedule `name`: it enqueues nothing until resumed.
    fn schedule_pause(&self, py: Python<'_>, name: &Bound<'_, PyAny>) -> PyResult<ScheduleInfo> {
        task::guard(py, "schedule_pause", || {
            schedule::one(py, &*self.store, "pause", name)
        })
    }

    /// Resume it; the slots that passed while paused are not caught up.
    fn schedule_resume(&self, py: Python<'_>, name: &Bound<'_, PyAny>) -> PyResult<ScheduleInfo> {
        task::guard(py, "schedule_resume", || {
            schedule::one(py, &*self.store, "resume", name)
        })
    }

    /// One scheduler pass now: every due slot enqueued (or skipped by its
    /// catch-up policy). How slots fire when `reaper_interval=0`.
    fn run_schedules(&self, py: Python<'_>) -> PyResult<schedule::RunReport> {
        task::guard(py, "run_schedules", || schedule::run(py, &*self.store))
    }

    /// Set (or replace) the flow-control limit on `target` (`"kind:embed"`,
    /// `"kind:ingest:*"`, `"scope:<uuid>"`, `"scope:*"` (each scope),
    /// `"scope:<uuid or *>/kind:<pattern>"`, `"key:<key>"`, `"key:*"` (each
    /// job key)): `concurrency` leased at once, `rate` leases a second (with
    /// `burst`), a scope's `weight`; `ordered` (a key target with
    /// concurrency 1 only): a key's jobs lease one at a time in enqueue
    /// order. Durable.
    #[pyo3(signature = (target, *, concurrency=None, rate=None, burst=None, weight=None, ordered=false))]
    #[allow(clippy::too_many_arguments)]
    fn set_limit(
        &self,
        py: Python<'_>,
        target: &Bound<'_, PyAny>,
        concurrency: Option<&Bound<'_, PyAny>>,
        rate: Option<&Bound<'_, PyAny>>,
        burst: Option<&Bound<'_, PyAny>>,
        weight: Option<&Bound<'_, PyAny>>,
        ordered: bool,
    ) -> PyResult<()> {
        task::guard(py, "set_limit", || {
            let s = &*self.store;
            crate::flow::set_limit(py, s, target, concurrency, rate, burst, weight, ordered)
        })
    }

    /// Remove the limit on `target`; whether there was one.
    fn remove_limit(&self, py: Python<'_>, target: &Bound<'_, PyAny>) -> PyResult<bool> {
        task::guard(py, "remove_limit", || {
            crate::flow::remove_limit(py, &*self.store, target)
        })
    }

    /// Every limit with its use now, as `LimitInfo`s sorted by target.
    fn limits<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyList>> {
        task::guard(py, "limits", || crate::flow::limits(py, &*self.store))
    }

    /// Prometheus text exposition of the queue's metrics.
    fn metrics(&self, py: Python<'_>) -> PyResult<String> {
        task::guard(py, "metrics", || {
            let q = &*self.store;
            task::run(py, || q.metrics())
        })
    }
}
