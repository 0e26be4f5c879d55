//! `Queue`: the Python handle over a `telha_jobs::JobStore` (an embedded
//! queue, or a client of a server). Each method converts its arguments to
//! owned Rust values (args.rs, config.rs, admin.rs), runs the core call
//! with the GIL released and panics caught (task.rs), and converts the
//! answer (job.rs, payload.rs, admin.rs). The same files as node/src.

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use telha_jobs::limits::MAX_BATCH;
use telha_jobs::JobStore;
use telha_jobs_client::RemoteQueue;

use crate::errors::invalid;
use crate::job::{Job, JobInfo};
use crate::lease::{self, CancelWait};
use crate::{args, config, control, job, task};

/// A durable job queue: an embedded store directory (opened, or created),
/// or a client of a `telha serve` server (`telha_jobs.connect`). Both are
/// one `JobStore`, so every method behaves the same either way.
#[pyclass(frozen, module = "telha_jobs", name = "Queue")]
pub struct Queue {
    pub(crate) store: Arc<dyn JobStore>,
    /// The same client as `store` when this is a remote queue (its
    /// PollJobs stream is not part of `JobStore`).
    pub(crate) remote: Option<RemoteQueue>,
}

impl Queue {
    pub(crate) fn from_store(store: Arc<dyn JobStore>) -> Self {
        Queue {
            store,
            remote: None,
        }
    }

    pub(crate) fn from_remote(q: RemoteQueue) -> Self {
        Queue {
            store: Arc::new(q.clone()),
            remote: Some(q),
        }
    }

    /// The embedded queue, or `InvalidArgumentError` saying `what` needs one.
    pub(crate) fn local(&self, py: Python<'_>, what: &str) -> PyResult<&telha_jobs::Queue> {
        self.store.as_local().ok_or_else(|| {
            let at = self.store.location().unwrap_or_default();
            invalid(
                py,
                format!("{what} needs an embedded queue; this one is a client of {at}"),
            )
        })
    }
}

#[pymethods]
impl Queue {
    /// Open (or create) the store at `path` (default: `$TELHA_DB`, else
    /// `./telha-data`). Every key of `telha_jobs.config_keys()` is a
    /// keyword of the same name (durations in seconds or a timedelta;
    /// `completed_retention=False` or `math.inf` keeps completed jobs
    /// forever; counts int, factors float, flags bool); `kinds={kind:
    /// {setting: value}}` takes the per-kind keys. Settings not given here
    /// come from `config_file` (else `$TELHA_JOBS_CONFIG`), then the
    /// `TELHA_JOBS_*` variables, then the defaults. An unknown setting is
    /// `InvalidArgumentError` listing the valid ones; a wrong type `TypeError`.
    #[new]
    #[pyo3(signature = (path=None, *, config_file=None, kinds=None, **settings))]
    fn py_new(
        py: Python<'_>,
        path: Option<PathBuf>,
        config_file: Option<PathBuf>,
        kinds: Option<&Bound<'_, PyAny>>,
        settings: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        task::guard(py, "Queue", || {
            let path = path.unwrap_or_else(telha_jobs::default_store_path);
            let c = config::build(py, config_file, kinds, settings)?;
            let q = task::run(py, || telha_jobs::Queue::open(&path, c))?;
            Ok(Queue::from_store(Arc::new(q)))
        })
    }

    /// The settings in force, by key name (as `config_keys()` names them;
    /// durations in seconds, a retention that keeps forever as `math.inf`),
    /// and `"kinds"`: `{kind: {setting: value}}` for what each kind sets.
    /// The dict is valid input: `Queue(path, **q.settings())`. Embedded
    /// queues only (a server's settings are the server's).
    fn settings<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        task::guard(py, "settings", || {
            let q = self.local(py, "settings()")?;
            let c = task::run(py, || q.config())?;
            config::settings(py, &c)
        })
    }

    /// The store directory (absolute) of an embedded queue; None for a
    /// remote one (see `location`).
    #[getter]
    fn path(&self, py: Python<'_>) -> PyResult<Option<String>> {
        task::guard(py, "path", || match self.store.as_local() {
            Some(q) => Ok(Some(task::run(py, || q.path())?.display().to_string())),
            None => Ok(None),
        })
    }

    /// Where the jobs live: the store directory of an embedded queue, the
    /// server URL of a remote one.
    #[getter]
    fn location(&self, py: Python<'_>) -> PyResult<String> {
        task::guard(py, "location", || task::pure(py, || self.store.location()))
    }

    /// Whether this queue is a client of a server (`telha_jobs.connect`).
    #[getter]
    fn remote(&self) -> bool {
        self.store.as_local().is_none()
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.store.is_closed()
    }

    /// Close this handle: later calls raise `QueueClosedError`; waits in progress
    /// end. The store is released when no handle in the process holds it
    /// (a remote queue closes its connection; the server's store stays).
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        task::guard(py, "close", || {
            let q = &*self.store;
            task::run(py, || {
                q.close();
                Ok(())
            })
        })
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, PyTuple>) -> PyResult<bool> {
        task::guard(py, "__exit__", || {
            self.close(py)?;
            Ok(false)
        })
    }

    fn __repr__(&self) -> String {
        match (self.store.location(), self.store.as_local().is_some()) {
            (Ok(p), true) => format!("Queue('{p}')"),
            (Ok(u), false) => format!("telha_jobs.connect('{u}')"),
            (Err(_), _) => "Queue(<closed>)".to_string(),
        }
    }

    /// Enqueue one job. Returns its id as `Enqueued`, a `str` whose
    /// `.created` is False when `idempotency_key` matched an existing job in
    /// the same scope (the id is then that job's). `bytes` payloads are
    /// stored and read back as bytes; other values by the msgpack
    /// convention, read back as values. Options: `scope`, `priority`
    /// (0–255, default 128), `delay` (seconds or a timedelta), `run_at`
    /// (seconds since the epoch or a datetime, at most
    /// `limits.MAX_INSTANT`), `idempotency_key`, `max_attempts`,
    /// `expires_in` (seconds or a timedelta, > 0) or `expires_at` (as
    /// `run_at`; after it): a job not leased by then goes dead ("expired
    /// before start"); `backoff_base` (seconds or a timedelta, at least
    /// 1 ms): this job's retry schedule starts there, over its kind's;
    /// `unique_for` (seconds or a timedelta, with an `idempotency_key`): a
    /// repeat of the key within that long answers the job that opened the
    /// window (`created` False), after it a new job; `unique_states`
    /// (`"any"`, the default: whatever became of the job; `"active"`: only
    /// while it is pending, leased or waiting for a retry); `debounce`
    /// (seconds or a timedelta, with an `idempotency_key`): while the key's
    /// job is pending, a repeat replaces its payload and moves its run time
    /// to now + debounce (`debounced` True), once leased or finished a new
    /// job; `debounce_max` (at least `debounce`): never past the first
    /// enqueue + this; an unknown option is `InvalidArgumentError` listing
    /// them.
    #[pyo3(signature = (kind, payload=None, **options))]
    fn enqueue(
        &self,
        py: Python<'_>,
        kind: &Bound<'_, PyAny>,
        payload: Option<&Bound<'_, PyAny>>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        task::guard(py, "enqueue", || {
            let kind = args::text(kind, "kind")?;
            let opts = args::enqueue_options(options, "", &[])?;
            let job = args::new_job(kind, payload, opts, py)?;
            let q = &*self.store;
            let e = task::run(py, || {
                q.enqueue(&job.kind, &job.payload, job.options.clone())
            })?;
            job::enqueued(py, &e)
        })
    }

    /// Enqueue many jobs in one atomic batch (all or none); returns one
    /// `Enqueued` per item, in order. Each item is `(kind, payload)` or a
    /// dict with `kind`, `payload` and any `enqueue` option.
    fn enqueue_many(&self, py: Python<'_>, items: &Bound<'_, PyAny>) -> PyResult<Vec<Py<PyAny>>> {
        task::guard(py, "enqueue_many", || {
            let jobs = args::enqueue_items(items)?;
            if jobs.is_empty() {
                return Ok(vec![]);
            }
            let q = &*self.store;
            let done = task::run(py, || q.enqueue_many(jobs))?;
            done.iter().map(|e| job::enqueued(py, e)).collect()
        })
    }

    /// Lease the most urgent ready job, waiting up to `wait` seconds for one;
    /// None when there is none. `wait=math.inf` (or any wait over
    /// `limits.MAX_DURATION`) waits until a job comes, `cancel` or `close`.
    /// `kinds`: a kind, a family (`"ingest:*"`) or a list; `scope`: a scope
    /// or a list (default: every scope, in turn). The GIL is released while
    /// it waits, and Ctrl-C ends the wait.
    #[pyo3(signature = (worker_id, *, kinds=None, scope=None, wait=None, cancel=None),
        text_signature = "($self, worker_id, *, kinds=None, scope=None, wait=0.0, cancel=None)")]
    fn lease_next(
        &self,
        py: Python<'_>,
        worker_id: &str,
        kinds: Option<&Bound<'_, PyAny>>,
        scope: Option<&Bound<'_, PyAny>>,
        wait: Option<&Bound<'_, PyAny>>,
        cancel: Option<&Bound<'_, CancelWait>>,
    ) -> PyResult<Option<Job>> {
        task::guard(py, "lease_next", || {
            let q = &*self.store;
            Ok(lease::lease(q, py, worker_id, 1, kinds, scope, wait, cancel)?.pop())
        })
    }

    /// A remote queue's PollJobs stream (see stream.rs); the Workers that
    /// lease ahead use it. `InvalidArgumentError` on an embedded queue.
    /// `floor` (1 to `capacity`): the window follows the handlers (the
    /// server keeps between `floor` and `capacity` leases unsettled, by
    /// its settle rate); None: a fixed window of `capacity`.
    #[pyo3(signature = (worker_id, capacity, *, kinds=None, scope=None, floor=None))]
    fn _poll_jobs(
        &self,
        py: Python<'_>,
        worker_id: &str,
        capacity: &Bound<'_, PyAny>,
        kinds: Option<&Bound<'_, PyAny>>,
        scope: Option<&Bound<'_, PyAny>>,
        floor: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<crate::stream::JobStream> {
        task::guard(py, "_poll_jobs", || {
            let Some(r) = &self.remote else {
                return Err(invalid(py, "_poll_jobs needs a remote queue (connect())"));
            };
            crate::stream::open(py, r, worker_id, capacity, kinds, scope, floor)
        })
    }

    /// Lease up to `max` (1 to `limits.MAX_BATCH`, 10,000) ready jobs in one
    /// call, waiting up to `wait` seconds for the first (as `lease_next`);
    /// [] when there is none.
    #[pyo3(signature = (worker_id, max, *, kinds=None, scope=None, wait=None, cancel=None),
        text_signature = "($self, worker_id, max, *, kinds=None, scope=None, wait=0.0, cancel=None)")]
    #[allow(clippy::too_many_arguments)]
    fn lease_many(
        &self,
        py: Python<'_>,
        worker_id: &str,
        max: &Bound<'_, PyAny>,
        kinds: Option<&Bound<'_, PyAny>>,
        scope: Option<&Bound<'_, PyAny>>,
        wait: Option<&Bound<'_, PyAny>>,
        cancel: Option<&Bound<'_, CancelWait>>,
    ) -> PyResult<Vec<Job>> {
        task::guard(py, "lease_many", || {
            let max = args::int_in(max, "max", 1, MAX_BATCH as u64)? as usize;
            lease::lease(&*self.store, py, worker_id, max, kinds, scope, wait, cancel)
        })
    }

    /// Renew leases (a heartbeat), each for its lease TTL again: one bool
    /// per job, False when that lease is lost or cancelled (stop working on
    /// it; `extend_answers` tells the two apart). `progress`: a list aligned
    /// with `jobs` (None: no report for that job), each value encoded like
    /// a payload (bytes as they are), at most `limits.MAX_PROGRESS_BYTES`;
    /// the latest report is on the job (`JobInfo.progress`) and in events.
    #[pyo3(signature = (jobs, worker_id, progress=None))]
    fn extend(
        &self,
        py: Python<'_>,
        jobs: &Bound<'_, PyAny>,
        worker_id: &str,
        progress: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<bool>> {
        task::guard(py, "extend", || {
            let q = &*self.store;
            let a = control::extend_answers(py, q, jobs, worker_id, progress, "extend")?;
            Ok(a.into_iter().map(|a| a == "renewed").collect())
        })
    }

    /// `extend` with one answer per job: `"renewed"`, `"lost"` (stale:
    /// reaped, settled, leased again, or held past the kind's
    /// `max_lease_total`) or `"cancelled"` (a cancel was requested: stop;
    /// whatever you then submit records the job cancelled).
    #[pyo3(signature = (jobs, worker_id, progress=None))]
    fn extend_answers(
        &self,
        py: Python<'_>,
        jobs: &Bound<'_, PyAny>,
        worker_id: &str,
        progress: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<&'static str>> {
        task::guard(py, "extend_answers", || {
            let q = &*self.store;
            control::extend_answers(py, q, jobs, worker_id, progress, "extend_answers")
        })
    }

    /// Complete a leased job, with an optional result (`bytes` kept as
    /// bytes, another value encoded like payloads and read back as that
    /// value). `then`: follow-up jobs (`enqueue_many` items) enqueued in the
    /// same atomic batch, each with `parent` this job; none if the
    /// completion is refused or becomes a cancel. `LeaseLostError` when the
    /// lease is stale. Repeated with the same job after it took effect (a
    /// retry), it answers as the first call did and changes nothing.
    #[pyo3(signature = (job, result=None, *, then=None))]
    fn complete(
        &self,
        py: Python<'_>,
        job: &Bound<'_, PyAny>,
        result: Option<&Bound<'_, PyAny>>,
        then: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        task::guard(py, "complete", || {
            crate::flow::complete(py, &*self.store, job, result, then)
        })
    }

    /// Complete many leased jobs in one call and one atomic write (over a
    /// remote queue: one round trip). `results`: None, or one result per
    /// job. Returns one entry per job: None when it was completed, else the
    /// exception saying why not (`LeaseLostError` for a stale lease, `NotFoundError`,
    /// `InvalidArgumentError` for an oversized result); the others still
    /// complete. `QueueClosedError` / `StorageError` raise, and then none did.
    /// `then`: None, or one list of follow-ups (or None) per job.
    #[pyo3(signature = (jobs, results=None, *, then=None))]
    fn complete_many(
        &self,
        py: Python<'_>,
        jobs: &Bound<'_, PyAny>,
        results: Option<&Bound<'_, PyAny>>,
        then: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<Option<Py<PyAny>>>> {
        task::guard(py, "complete_many", || {
            control::complete_many(py, &*self.store, jobs, results, then)
        })
    }

    /// Fail a leased job: retried after backoff (or after `retry_in`
    /// seconds / a timedelta, the handler's own delay, when given; still an
    /// attempt spent), or dead when not `retryable` or out of attempts.
    /// `LeaseLostError` when the lease is stale, `CancelledError` when a
    /// cancel was requested (the job is then recorded cancelled).
    #[pyo3(signature = (job, reason, *, retryable=true, retry_in=None))]
    fn fail(
        &self,
        py: Python<'_>,
        job: &Bound<'_, PyAny>,
        reason: &str,
        retryable: bool,
        retry_in: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        task::guard(py, "fail", || {
            control::fail(py, &*self.store, job, reason, retryable, retry_in)
        })
    }

    /// Hand a leased job back to pending without spending an attempt.
    fn release(&self, py: Python<'_>, job: &Bound<'_, PyAny>) -> PyResult<()> {
        task::guard(py, "release", || {
            let t = args::token(job)?;
            let q = &*self.store;
            task::run(py, || q.release(&t))
        })
    }

    /// Snooze a leased job: pending again `delay` seconds (or a timedelta)
    /// from now, no attempt spent (`JobInfo.snoozes` counts it; past the
    /// kind's `max_snoozes` it counts as a failed attempt).
    fn snooze(
        &self,
        py: Python<'_>,
        job: &Bound<'_, PyAny>,
        delay: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        task::guard(py, "snooze", || {
            control::snooze(py, &*self.store, job, delay)
        })
    }

    /// Cancel a job: `"cancelled"` when it was pending, scheduled or
    /// failed (terminal now); `"requested"` when it is leased (its holder's
    /// next heartbeat answers cancelled, and whatever it submits records
    /// the job cancelled). `WrongStateError` for a completed, dead or
    /// cancelled job; `NotFoundError` for an unknown one.
    #[pyo3(signature = (job_id, reason=""))]
    fn cancel(
        &self,
        py: Python<'_>,
        job_id: &Bound<'_, PyAny>,
        reason: &str,
    ) -> PyResult<&'static str> {
        task::guard(py, "cancel", || {
            control::cancel(py, &*self.store, job_id, reason)
        })
    }

    /// Cancel every job matching `kind` (exact or `"family:*"`), `scope`
    /// and `state` ("pending", "failed" or "leased"; default all three), in
    /// bounded atomic batches: `{"cancelled": n, "requested": n,
    /// "corrupt": n}`. `tag`: only jobs carrying it, walked through the
    /// tag index (O(jobs carrying the tag)).
    #[pyo3(signature = (*, kind=None, scope=None, state=None, reason="", tag=None))]
    #[allow(clippy::too_many_arguments)]
    fn cancel_many<'py>(
        &self,
        py: Python<'py>,
        kind: Option<&Bound<'_, PyAny>>,
        scope: Option<&Bound<'_, PyAny>>,
        state: Option<&Bound<'_, PyAny>>,
        reason: &str,
        tag: Option<String>,
    ) -> PyResult<Bound<'py, PyDict>> {
        task::guard(py, "cancel_many", || {
            control::cancel_many(py, &*self.store, kind, scope, state, reason, tag)
        })
    }

    /// Delete a job that is not leased, with its index entries.
    /// `WrongStateError` for a leased job (cancel it first).
    fn delete(&self, py: Python<'_>, job_id: &Bound<'_, PyAny>) -> PyResult<()> {
        task::guard(py, "delete", || control::delete(py, &*self.store, job_id))
    }

    /// Make a delayed or retry-waiting job ready now (its state is kept);
    /// a job already due is left as it is. `WrongStateError` when leased
    /// or finished.
    fn promote(&self, py: Python<'_>, job_id: &Bound<'_, PyAny>) -> PyResult<()> {
        task::guard(py, "promote", || control::promote(py, &*self.store, job_id))
    }

    /// A pending or failed job's new run time (seconds since the epoch or
    /// a datetime): in the future a ready job becomes delayed.
    fn reschedule(
        &self,
        py: Python<'_>,
        job_id: &Bound<'_, PyAny>,
        run_at: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        task::guard(py, "reschedule", || {
            control::reschedule(py, &*self.store, job_id, run_at)
        })
    }

    /// A pending or failed job's new priority, 0 (most urgent) to 255.
    fn set_priority(
        &self,
        py: Python<'_>,
        job_id: &Bound<'_, PyAny>,
        priority: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        task::guard(py, "set_priority", || {
            control::set_priority(py, &*self.store, job_id, priority)
        })
    }

    /// Pause leasing of a kind (exact or `"family:*"`) or a scope, durably:
    /// `pause(kind="embed")`, `pause(scope=uuid)` or `pause("kind:embed")`.
    /// Running leases carry on. Returns whether it was not paused already.
    #[pyo3(signature = (target=None, *, kind=None, scope=None))]
    fn pause(
        &self,
        py: Python<'_>,
        target: Option<&Bound<'_, PyAny>>,
        kind: Option<&Bound<'_, PyAny>>,
        scope: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        task::guard(py, "pause", || {
            let t = control::target(py, target, kind, scope)?;
            control::pause(py, &*self.store, t, true)
        })
    }

    /// Undo `pause` (the same arguments); waiting pollers wake. Returns
    /// whether it was paused.
    #[pyo3(signature = (target=None, *, kind=None, scope=None))]
    fn resume(
        &self,
        py: Python<'_>,
        target: Option<&Bound<'_, PyAny>>,
        kind: Option<&Bound<'_, PyAny>>,
        scope: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        task::guard(py, "resume", || {
            let t = control::target(py, target, kind, scope)?;
            control::pause(py, &*self.store, t, false)
        })
    }

    /// What is paused: `{"kinds": [pattern, ...], "scopes": [uuid, ...]}`.
    fn paused<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        task::guard(py, "paused", || control::paused(py, &*self.store))
    }

    /// Operator action: a dead or failed job back to pending, attempts reset.
    fn retry(&self, py: Python<'_>, job_id: &Bound<'_, PyAny>) -> PyResult<()> {
        task::guard(py, "retry", || {
            let id = args::job_id(job_id)?;
            let q = &*self.store;
            task::run(py, || q.retry(&id))
        })
    }

    /// A job with its event log, or None when there is no such job.
    fn get(&self, py: Python<'_>, job_id: &Bound<'_, PyAny>) -> PyResult<Option<JobInfo>> {
        task::guard(py, "get", || {
            let id = args::job_id(job_id)?;
            let q = &*self.store;
            Ok(task::run(py, || q.get(&id))?.map(JobInfo::new))
        })
    }

    /// Wait for a job (a `Job`, `JobInfo` or id) to be terminal and return
    /// it (completed with its result, dead with its `last_error`,
    /// cancelled), at once if it is; else the job as it is when `timeout`
    /// seconds ran out (None: no limit). Woken by the transition itself.
    /// The GIL is released while it waits, and Ctrl-C ends it.
    /// `NotFoundError` for no such job (or one deleted meanwhile).
    #[pyo3(signature = (job, timeout=None))]
    fn wait(
        &self,
        py: Python<'_>,
        job: &Bound<'_, PyAny>,
        timeout: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<JobInfo> {
        task::guard(py, "wait", || {
            let (id, t) = (args::job_ref(job)?, args::timeout(timeout)?);
            crate::watch::wait(py, &*self.store, id, t)
        })
    }

    /// `enqueue` (the same options), then `wait` for that job.
    #[pyo3(signature = (kind, payload=None, timeout=None, **options))]
    fn enqueue_and_wait(
        &self,
        py: Python<'_>,
        kind: &Bound<'_, PyAny>,
        payload: Option<&Bound<'_, PyAny>>,
        timeout: Option<&Bound<'_, PyAny>>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<JobInfo> {
        task::guard(py, "enqueue_and_wait", || {
            crate::watch::enqueue_and_wait(py, &*self.store, kind, payload, timeout, options)
        })
    }

    /// A `JobWaiter` for `job` (asyncio's `wait` is built on it).
    fn _watch(&self, py: Python<'_>, job: &Bound<'_, PyAny>) -> PyResult<crate::watch::JobWaiter> {
        task::guard(py, "_watch", || {
            crate::watch::JobWaiter::open(py, &self.store, args::job_ref(job)?)
        })
    }
}
