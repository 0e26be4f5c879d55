//! `Queue`: the Python handle over `telha_jobs::Queue`. Each method converts
//! its arguments to owned Rust values, releases the GIL around the core
//! call, and maps the error through `errors::to_py`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};
use telha_jobs::{
    Config, EnqueueOptions, JobStore, KindConfig, LeaseOptions, ListQuery, NewJob, State,
};

use crate::args;
use crate::errors::{invalid, type_error, IntoPyResult};
use crate::job::{Job, JobInfo};
use crate::payload::{self, type_name};

/// How long one blocking slice of a lease wait lasts: between slices the
/// GIL is taken back to run signal handlers, so Ctrl-C ends a long wait.
const WAIT_SLICE: Duration = Duration::from_millis(100);

/// Ends the wait of the `lease_next` / `lease_many` calls it is passed to,
/// from any thread (a worker stopping). Once cancelled it stays cancelled.
#[pyclass(frozen, module = "telha_jobs", name = "CancelWait")]
#[derive(Default)]
pub struct CancelWait {
    inner: telha_jobs::CancelWait,
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

/// A durable job queue: an embedded store directory (opened, or created),
/// or a client of a `telha serve` server (`telha_jobs.connect`). Both are
/// one `JobStore`, so every method behaves the same either way.
#[pyclass(frozen, module = "telha_jobs", name = "Queue")]
pub struct Queue {
    store: Arc<dyn JobStore>,
}

/// Per-kind override keys accepted in `kinds={...}`.
const KIND_KEYS: [&str; 5] = [
    "lease_ttl",
    "max_attempts",
    "backoff_base",
    "backoff_factor",
    "backoff_cap",
];

fn kind_config(
    py: Python<'_>,
    kind: &str,
    d: &Bound<'_, PyAny>,
    base: &mut KindConfig,
) -> PyResult<()> {
    let d = d.cast::<PyDict>().map_err(|_| {
        type_error(format!(
            "kinds[{kind:?}] must be a dict of overrides, got {}",
            type_name(d)
        ))
    })?;
    for (k, v) in d.iter() {
        let key: String = k
            .extract()
            .map_err(|_| type_error("kinds override keys must be str"))?;
        let what = format!("kinds[{kind:?}][{key:?}]");
        match key.as_str() {
            "lease_ttl" => base.lease_ttl = Some(args::duration(&v, &what)?),
            "backoff_base" => base.backoff_base = Some(args::duration(&v, &what)?),
            "backoff_cap" => base.backoff_cap = Some(args::duration(&v, &what)?),
            "max_attempts" => {
                base.max_attempts = Some(args::int_in(&v, &what, 1, u32::MAX as i64)? as u32)
            }
            "backoff_factor" => {
                base.backoff_factor = Some(
                    v.extract::<f64>()
                        .map_err(|_| type_error(format!("{what} must be a number")))?,
                )
            }
            _ => {
                return Err(invalid(
                    py,
                    format!(
                        "unknown per-kind setting {key:?} for {kind:?}; one of {}",
                        KIND_KEYS.join(", ")
                    ),
                ))
            }
        }
    }
    Ok(())
}

fn state_arg(obj: &Bound<'_, PyAny>) -> PyResult<State> {
    let s = obj
        .cast::<PyString>()
        .map_err(|_| type_error(format!("state must be a str, got {}", type_name(obj))))?;
    s.to_cow()?.parse().py_err(obj.py())
}

#[allow(clippy::too_many_arguments)]
fn enqueue_options(
    scope: Option<&Bound<'_, PyAny>>,
    priority: Option<&Bound<'_, PyAny>>,
    delay: Option<&Bound<'_, PyAny>>,
    run_at: Option<&Bound<'_, PyAny>>,
    idempotency_key: Option<&Bound<'_, PyAny>>,
    max_attempts: Option<&Bound<'_, PyAny>>,
) -> PyResult<EnqueueOptions> {
    let mut o = EnqueueOptions::default();
    if let Some(s) = scope {
        o.scope = Some(args::scope(s)?);
    }
    if let Some(p) = priority {
        o.priority = Some(args::int_in(p, "priority", 0, 255)? as u8);
    }
    if let Some(d) = delay {
        o.delay = Some(args::duration(d, "delay")?);
    }
    if let Some(r) = run_at {
        o.run_at = Some(args::instant_ms(r, "run_at")?);
    }
    if let Some(k) = idempotency_key {
        let s = k.cast::<PyString>().map_err(|_| {
            type_error(format!(
                "idempotency_key must be a str, got {}",
                type_name(k)
            ))
        })?;
        o.idempotency_key = Some(s.to_cow()?.into_owned());
    }
    if let Some(m) = max_attempts {
        o.max_attempts = Some(args::int_in(m, "max_attempts", 1, u32::MAX as i64)? as u32);
    }
    Ok(o)
}

/// One `enqueue_many` item: `(kind, payload)` or a dict with `kind`,
/// `payload` and the enqueue keywords.
fn new_job(item: &Bound<'_, PyAny>, i: usize) -> PyResult<NewJob> {
    let py = item.py();
    if let Ok(t) = item.cast::<PyTuple>() {
        if t.len() != 2 {
            return Err(type_error(format!(
                "enqueue_many item {i}: a tuple must be (kind, payload), got {} elements",
                t.len()
            )));
        }
        let kind: String = t
            .get_item(0)?
            .extract()
            .map_err(|_| type_error(format!("enqueue_many item {i}: kind must be a str")))?;
        let payload = payload::to_bytes(&t.get_item(1)?, "payload")?;
        return Ok(NewJob::new(kind, payload));
    }
    let Ok(d) = item.cast::<PyDict>() else {
        return Err(type_error(format!(
            "enqueue_many item {i} must be a (kind, payload) tuple or a dict, got {}",
            type_name(item)
        )));
    };
    const KEYS: [&str; 8] = [
        "kind",
        "payload",
        "scope",
        "priority",
        "delay",
        "run_at",
        "idempotency_key",
        "max_attempts",
    ];
    for k in d.keys() {
        let ks: String = k.extract().unwrap_or_default();
        if !KEYS.contains(&ks.as_str()) {
            return Err(invalid(
                py,
                format!(
                    "enqueue_many item {i}: unknown key {k}; one of {}",
                    KEYS.join(", ")
                ),
            ));
        }
    }
    let get = |k: &str| -> PyResult<Option<Bound<'_, PyAny>>> {
        Ok(d.get_item(k)?.filter(|v| !v.is_none()))
    };
    let kind: String = match d.get_item("kind")? {
        Some(k) => k
            .extract()
            .map_err(|_| type_error(format!("enqueue_many item {i}: kind must be a str")))?,
        None => {
            return Err(invalid(
                py,
                format!("enqueue_many item {i} has no \"kind\""),
            ))
        }
    };
    let payload = match d.get_item("payload")? {
        Some(p) => payload::to_bytes(&p, "payload")?,
        None => payload::to_bytes(&py.None().into_bound(py), "payload")?,
    };
    let options = enqueue_options(
        get("scope")?.as_ref(),
        get("priority")?.as_ref(),
        get("delay")?.as_ref(),
        get("run_at")?.as_ref(),
        get("idempotency_key")?.as_ref(),
        get("max_attempts")?.as_ref(),
    )?;
    Ok(NewJob::new(kind, payload).with(options))
}

fn counts_dict<'py>(py: Python<'py>, c: &telha_jobs::StateCounts) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for s in State::ALL {
        d.set_item(s.as_str(), c.get(s))?;
    }
    Ok(d)
}

impl Queue {
    pub(crate) fn from_store(store: Arc<dyn JobStore>) -> Self {
        Queue { store }
    }

    #[allow(clippy::too_many_arguments)]
    fn lease(
        &self,
        py: Python<'_>,
        worker_id: &str,
        max: usize,
        kinds: Option<&Bound<'_, PyAny>>,
        scope: Option<&Bound<'_, PyAny>>,
        wait: &Bound<'_, PyAny>,
        cancel: Option<&Bound<'_, CancelWait>>,
    ) -> PyResult<Vec<Job>> {
        let wait = args::duration(wait, "wait")?;
        let cancel = cancel.map(|c| c.get().inner.clone());
        let mut opts = LeaseOptions {
            scopes: args::scopes(scope)?,
            kinds: args::kinds(kinds)?,
            wait: None,
            cancel: cancel.clone(),
        };
        let end = Instant::now() + wait;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            let slice = left.min(WAIT_SLICE);
            opts.wait = (!slice.is_zero()).then_some(slice);
            let q = &*self.store;
            let o = &opts;
            let jobs = py.detach(|| q.lease_many(worker_id, max, o)).py_err(py)?;
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
}

#[pymethods]
impl Queue {
    /// Open (or create) the store at `path` (default: `$TELHA_DB`, else
    /// `./telha-data`). Settings not given here come from `config_file`
    /// (else `$TELHA_JOBS_CONFIG`), then `TELHA_JOBS_*` variables, then
    /// the defaults: lease_ttl 300 s, reaper_interval 30 s, max_attempts 5,
    /// backoff 10 s × 4 up to 3600 s, completed_retention 86400 s
    /// (`math.inf`: keep forever), sync_writes False.
    #[new]
    #[pyo3(signature = (path=None, *, lease_ttl=None, reaper_interval=None, max_attempts=None,
        backoff_base=None, backoff_factor=None, backoff_cap=None, completed_retention=None,
        sync_writes=None, kinds=None, config_file=None, max_payload_bytes=None))]
    #[allow(clippy::too_many_arguments)]
    fn py_new(
        py: Python<'_>,
        path: Option<PathBuf>,
        lease_ttl: Option<&Bound<'_, PyAny>>,
        reaper_interval: Option<&Bound<'_, PyAny>>,
        max_attempts: Option<&Bound<'_, PyAny>>,
        backoff_base: Option<&Bound<'_, PyAny>>,
        backoff_factor: Option<f64>,
        backoff_cap: Option<&Bound<'_, PyAny>>,
        completed_retention: Option<&Bound<'_, PyAny>>,
        sync_writes: Option<bool>,
        kinds: Option<&Bound<'_, PyDict>>,
        config_file: Option<PathBuf>,
        max_payload_bytes: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let path = path.unwrap_or_else(telha_jobs::default_store_path);
        let mut c: Config = py
            .detach(|| Config::load(config_file.as_deref()))
            .py_err(py)?;
        if let Some(v) = lease_ttl {
            c.lease_ttl = args::duration(v, "lease_ttl")?;
        }
        if let Some(v) = reaper_interval {
            c.reaper_interval = args::duration(v, "reaper_interval")?;
        }
        if let Some(v) = max_attempts {
            c.max_attempts = args::int_in(v, "max_attempts", 1, u32::MAX as i64)? as u32;
        }
        if let Some(v) = backoff_base {
            c.backoff.base = args::duration(v, "backoff_base")?;
        }
        if let Some(v) = backoff_factor {
            c.backoff.factor = v;
        }
        if let Some(v) = backoff_cap {
            c.backoff.cap = args::duration(v, "backoff_cap")?;
        }
        if let Some(v) = completed_retention {
            let keep_forever = v.extract::<f64>().is_ok_and(|f| f == f64::INFINITY);
            c.completed_retention = if keep_forever {
                None
            } else {
                Some(args::duration(v, "completed_retention")?)
            };
        }
        if let Some(v) = sync_writes {
            c.sync_writes = v;
        }
        if let Some(v) = max_payload_bytes {
            c.max_payload_bytes = args::int_in(v, "max_payload_bytes", 1, i64::MAX)? as usize;
        }
        if let Some(k) = kinds {
            for (kind, over) in k.iter() {
                let kind: String = kind
                    .extract()
                    .map_err(|_| type_error("kinds must map str kinds to dicts"))?;
                let entry = c.kinds.entry(kind.clone()).or_default();
                kind_config(py, &kind, &over, entry)?;
            }
        }
        let q = py.detach(|| telha_jobs::Queue::open(&path, c)).py_err(py)?;
        Ok(Queue::from_store(Arc::new(q)))
    }

    /// The store directory (absolute) of an embedded queue; None for a
    /// remote one (see `location`).
    #[getter]
    fn path(&self, py: Python<'_>) -> PyResult<Option<String>> {
        match self.store.as_local() {
            Some(q) => Ok(Some(q.path().py_err(py)?.display().to_string())),
            None => Ok(None),
        }
    }

    /// Where the jobs live: the store directory of an embedded queue, the
    /// server URL of a remote one.
    #[getter]
    fn location(&self, py: Python<'_>) -> PyResult<String> {
        self.store.location().py_err(py)
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
    fn close(&self, py: Python<'_>) {
        let q = &*self.store;
        py.detach(|| q.close())
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, PyTuple>) -> bool {
        self.close(py);
        false
    }

    fn __repr__(&self) -> String {
        match (self.store.location(), self.store.as_local().is_some()) {
            (Ok(p), true) => format!("Queue('{p}')"),
            (Ok(u), false) => format!("telha_jobs.connect('{u}')"),
            (Err(_), _) => "Queue(<closed>)".to_string(),
        }
    }

    /// Enqueue one job; returns its id (the existing job's id when
    /// `idempotency_key` matched one in the same scope). `bytes` payloads
    /// are stored as they are; other values by the msgpack convention.
    // Omitted and None mean the same (priority 128, no delay, ...); the text
    // signature shows the effective defaults.
    #[pyo3(signature = (kind, payload=None, *, scope=None, priority=None, delay=None, run_at=None,
        idempotency_key=None, max_attempts=None),
        text_signature = "($self, kind, payload=None, *, scope=None, priority=128, delay=None, \
            run_at=None, idempotency_key=None, max_attempts=None)")]
    #[allow(clippy::too_many_arguments)]
    fn enqueue(
        &self,
        py: Python<'_>,
        kind: &str,
        payload: Option<&Bound<'_, PyAny>>,
        scope: Option<&Bound<'_, PyAny>>,
        priority: Option<&Bound<'_, PyAny>>,
        delay: Option<&Bound<'_, PyAny>>,
        run_at: Option<&Bound<'_, PyAny>>,
        idempotency_key: Option<&Bound<'_, PyAny>>,
        max_attempts: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<String> {
        let bytes = match payload {
            Some(p) => payload::to_bytes(p, "payload")?,
            None => payload::to_bytes(&py.None().into_bound(py), "payload")?,
        };
        let opts = enqueue_options(
            scope,
            priority,
            delay,
            run_at,
            idempotency_key,
            max_attempts,
        )?;
        let q = &*self.store;
        let e = py.detach(|| q.enqueue(kind, &bytes, opts)).py_err(py)?;
        Ok(e.id.to_string())
    }

    /// Enqueue many jobs in one atomic batch (all or none); returns their
    /// ids in order. Each item is `(kind, payload)` or a dict with `kind`,
    /// `payload` and any `enqueue` keyword.
    fn enqueue_many(&self, py: Python<'_>, items: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
        if items.is_instance_of::<PyString>() || items.is_instance_of::<PyDict>() {
            return Err(type_error(format!(
                "enqueue_many takes a list of (kind, payload) tuples or dicts, got {}",
                type_name(items)
            )));
        }
        let jobs = items
            .try_iter()
            .map_err(|_| {
                type_error(format!(
                    "enqueue_many takes a list of (kind, payload) tuples or dicts, got {}",
                    type_name(items)
                ))
            })?
            .enumerate()
            .map(|(i, it)| new_job(&it?, i))
            .collect::<PyResult<Vec<_>>>()?;
        if jobs.is_empty() {
            return Ok(vec![]);
        }
        let q = &*self.store;
        let done = py.detach(|| q.enqueue_many(jobs)).py_err(py)?;
        Ok(done.iter().map(|e| e.id.to_string()).collect())
    }

    /// Lease the most urgent ready job, waiting up to `wait` seconds for one;
    /// None when there is none. `kinds`: a kind, a family (`"ingest:*"`) or
    /// a list; `scope`: a scope or a list (default: every scope, in turn).
    /// The GIL is released while it waits, and Ctrl-C ends the wait.
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
        let zero = 0.0f64.into_pyobject(py)?.into_any();
        let wait = wait.unwrap_or(&zero);
        Ok(self
            .lease(py, worker_id, 1, kinds, scope, wait, cancel)?
            .pop())
    }

    /// Lease up to `max` (1 to 10,000) ready jobs in one call, waiting up to
    /// `wait` seconds for the first; [] when there is none.
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
        let max = args::int_in(max, "max", 1, 10_000)? as usize;
        let zero = 0.0f64.into_pyobject(py)?.into_any();
        let wait = wait.unwrap_or(&zero);
        self.lease(py, worker_id, max, kinds, scope, wait, cancel)
    }

    /// Renew leases (a heartbeat): one bool per job, False when that lease
    /// is lost (stop working on it).
    fn extend(
        &self,
        py: Python<'_>,
        jobs: &Bound<'_, PyAny>,
        worker_id: &str,
    ) -> PyResult<Vec<bool>> {
        if jobs.cast::<Job>().is_ok() {
            return Err(type_error(
                "extend takes a list of jobs; wrap one job as [job]",
            ));
        }
        let tokens = jobs
            .try_iter()
            .map_err(|_| {
                type_error(format!(
                    "extend takes a list of jobs, got {}",
                    type_name(jobs)
                ))
            })?
            .map(|j| args::token(&j?))
            .collect::<PyResult<Vec<_>>>()?;
        let q = &*self.store;
        let res = py.detach(|| q.extend(&tokens, worker_id)).py_err(py)?;
        res.into_iter()
            .map(|r| match r {
                Ok(_) => Ok(true),
                Err(e)
                    if matches!(
                        e.kind(),
                        telha_jobs::ErrorKind::Aborted | telha_jobs::ErrorKind::NotFound
                    ) =>
                {
                    Ok(false)
                }
                Err(e) => Err(crate::errors::to_py(py, e)),
            })
            .collect()
    }

    /// Complete a leased job, with an optional result (bytes, or a value
    /// encoded like payloads). `LeaseLostError` when the lease is stale.
    #[pyo3(signature = (job, result=None))]
    fn complete(
        &self,
        py: Python<'_>,
        job: &Bound<'_, PyAny>,
        result: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let t = args::token(job)?;
        let r = result.map(|r| payload::to_bytes(r, "result")).transpose()?;
        let q = &*self.store;
        py.detach(|| q.complete(&t, r.as_deref())).py_err(py)
    }

    /// Complete many leased jobs in one call and one atomic write (over a
    /// remote queue: one round trip). `results`: None, or one result per
    /// job. Returns one entry per job: None when it was completed, else the
    /// exception saying why not (`LeaseLostError` for a stale lease, `NotFoundError`,
    /// `InvalidArgumentError` for an oversized result); the others still
    /// complete. `QueueClosedError` / `StorageError` raise, and then none did.
    #[pyo3(signature = (jobs, results=None))]
    fn complete_many(
        &self,
        py: Python<'_>,
        jobs: &Bound<'_, PyAny>,
        results: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<Option<Py<PyAny>>>> {
        if jobs.cast::<Job>().is_ok() || jobs.is_instance_of::<PyString>() {
            return Err(type_error(
                "complete_many takes a list of jobs; wrap one job as [job]",
            ));
        }
        let not_a_list = || {
            type_error(format!(
                "complete_many takes a list of jobs, got {}",
                type_name(jobs)
            ))
        };
        let tokens = jobs
            .try_iter()
            .map_err(|_| not_a_list())?
            .map(|j| args::token(&j?))
            .collect::<PyResult<Vec<_>>>()?;
        let results: Vec<Option<Vec<u8>>> = match results {
            None => vec![None; tokens.len()],
            Some(r) => {
                let r = r
                    .try_iter()
                    .map_err(|_| type_error("results must be a list, one result per job"))?
                    .enumerate()
                    .map(|(i, v)| {
                        let v = v?;
                        payload::to_bytes(&v, &format!("results[{i}]")).map(Some)
                    })
                    .collect::<PyResult<Vec<_>>>()?;
                if r.len() != tokens.len() {
                    return Err(invalid(
                        py,
                        format!("results has {} entries for {} jobs", r.len(), tokens.len()),
                    ));
                }
                r
            }
        };
        if tokens.is_empty() {
            return Ok(vec![]);
        }
        let q = &*self.store;
        let items = tokens.into_iter().zip(results).map(Into::into).collect();
        let answers = py.detach(|| q.complete_many(items)).py_err(py)?;
        Ok(answers
            .into_iter()
            .map(|a| {
                a.err()
                    .map(|e| crate::errors::to_py(py, e).into_value(py).into_any())
            })
            .collect())
    }

    /// Fail a leased job: retried after backoff, or dead when not
    /// `retryable` or out of attempts. `LeaseLostError` when the lease is stale.
    #[pyo3(signature = (job, reason, *, retryable=true))]
    fn fail(
        &self,
        py: Python<'_>,
        job: &Bound<'_, PyAny>,
        reason: &str,
        retryable: bool,
    ) -> PyResult<()> {
        let t = args::token(job)?;
        let q = &*self.store;
        py.detach(|| q.fail(&t, reason, retryable)).py_err(py)
    }

    /// Hand a leased job back to pending without spending an attempt.
    fn release(&self, py: Python<'_>, job: &Bound<'_, PyAny>) -> PyResult<()> {
        let t = args::token(job)?;
        let q = &*self.store;
        py.detach(|| q.release(&t)).py_err(py)
    }

    /// Operator action: a dead or failed job back to pending, attempts reset.
    fn retry(&self, py: Python<'_>, job_id: &Bound<'_, PyAny>) -> PyResult<()> {
        let id = args::job_id(job_id)?;
        let q = &*self.store;
        py.detach(|| q.retry(&id)).py_err(py)
    }

    /// A job with its event log, or None when there is no such job.
    fn get(&self, py: Python<'_>, job_id: &Bound<'_, PyAny>) -> PyResult<Option<JobInfo>> {
        let id = args::job_id(job_id)?;
        let q = &*self.store;
        Ok(py.detach(|| q.get(&id)).py_err(py)?.map(JobInfo::new))
    }

    /// Up to `limit` (1 to 10,000) jobs in key order (scope, state,
    /// priority, time), filtered by state, scope and kind (`"ingest:*"`
    /// works). `after`: the last JobInfo of the previous page, or its id.
    #[pyo3(signature = (*, state=None, scope=None, kind=None, limit=None, after=None),
        text_signature = "($self, *, state=None, scope=None, kind=None, limit=100, after=None)")]
    fn list(
        &self,
        py: Python<'_>,
        state: Option<&Bound<'_, PyAny>>,
        scope: Option<&Bound<'_, PyAny>>,
        kind: Option<&Bound<'_, PyAny>>,
        limit: Option<&Bound<'_, PyAny>>,
        after: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<JobInfo>> {
        let limit = match limit {
            Some(l) => args::int_in(l, "limit", 1, 10_000)? as usize,
            None => 100,
        };
        let kind = match kind {
            Some(k) => {
                let s = k
                    .cast::<PyString>()
                    .map_err(|_| type_error(format!("kind must be a str, got {}", type_name(k))))?;
                Some(s.to_cow()?.parse().py_err(py)?)
            }
            None => None,
        };
        let after = match after {
            None => None,
            Some(a) => match a.cast::<JobInfo>() {
                Ok(info) => Some(info.get().cursor()),
                Err(_) => {
                    let id = args::job_id(a)?;
                    let q = &*self.store;
                    match py.detach(|| q.get(&id)).py_err(py)? {
                        Some(info) => Some(JobInfo::new(info).cursor()),
                        None => {
                            return Err(crate::errors::to_py(
                                py,
                                telha_jobs::Error::NotFound(format!("no job {id} to list after")),
                            ))
                        }
                    }
                }
            },
        };
        let mut query = ListQuery {
            state: state.map(state_arg).transpose()?,
            scope: scope.map(args::scope).transpose()?,
            kind,
            limit,
            after,
        };
        let q = &*self.store;
        let jobs = py.detach(|| {
            // One core call reads a bounded number of rows; keep going until
            // the page is full or the range ends, so a short page means the end.
            let mut out = Vec::new();
            loop {
                query.limit = limit - out.len();
                let page = q.list(&query)?;
                out.extend(page.jobs);
                match page.next {
                    Some(n) if out.len() < limit => query.after = Some(n),
                    _ => return Ok::<_, telha_jobs::Error>(out),
                }
            }
        });
        Ok(jobs.py_err(py)?.into_iter().map(JobInfo::new).collect())
    }

    /// Run one reaper pass now: expired leases back to pending (or dead),
    /// old completed jobs pruned. Returns the counts.
    fn reap<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let q = &*self.store;
        let r = py.detach(|| q.reap()).py_err(py)?;
        let d = PyDict::new(py);
        d.set_item("expired", r.expired)?;
        d.set_item("dead", r.dead)?;
        d.set_item("pruned", r.pruned)?;
        d.set_item("corrupt", r.corrupt.len())?;
        Ok(d)
    }

    /// Operator action: delete `state` ("completed" or "dead") jobs that got
    /// there before `before` (seconds since the epoch). Returns how many.
    fn purge(
        &self,
        py: Python<'_>,
        state: &Bound<'_, PyAny>,
        before: &Bound<'_, PyAny>,
    ) -> PyResult<usize> {
        let st = state_arg(state)?;
        let cutoff = args::instant_ms(before, "before")?;
        let q = &*self.store;
        Ok(py.detach(|| q.purge(st, cutoff)).py_err(py)?.purged)
    }

    /// Exact counts: `{"total": {state: n}, "by_kind": {kind: {state: n}}}`.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let q = &*self.store;
        let s = py.detach(|| q.stats()).py_err(py)?;
        let by_kind = PyDict::new(py);
        for (k, c) in &s.by_kind {
            by_kind.set_item(k, counts_dict(py, c)?)?;
        }
        let d = PyDict::new(py);
        d.set_item("total", counts_dict(py, &s.total)?)?;
        d.set_item("by_kind", by_kind)?;
        Ok(d)
    }

    /// Serve this (embedded) queue to other processes over gRPC, from this
    /// process: workers reach it with `telha_jobs.connect(server.url)`.
    /// `listen` is `host:port` (port 0 picks a free one); a non-loopback
    /// address needs a `token`. `tls_cert` / `tls_key`: PEM files, both or
    /// neither. `metrics_listen`: also serve Prometheus text on
    /// `http://<addr>/metrics`. Returns the running `Server`.
    #[pyo3(signature = (listen="127.0.0.1:7450", *, token=None, tls_cert=None, tls_key=None,
        metrics_listen=None))]
    #[allow(clippy::too_many_arguments)]
    fn serve(
        &self,
        py: Python<'_>,
        listen: &str,
        token: Option<String>,
        tls_cert: Option<PathBuf>,
        tls_key: Option<PathBuf>,
        metrics_listen: Option<String>,
    ) -> PyResult<crate::remote::Server> {
        let Some(q) = self.store.as_local() else {
            let at = self.store.location().unwrap_or_default();
            return Err(invalid(
                py,
                format!("serve needs an embedded queue; this one is a client of {at}"),
            ));
        };
        crate::remote::serve(
            py,
            q.clone(),
            listen,
            token,
            tls_cert,
            tls_key,
            metrics_listen,
        )
    }

    /// Prometheus text exposition of the queue's metrics.
    fn metrics(&self, py: Python<'_>) -> PyResult<String> {
        let q = &*self.store;
        py.detach(|| q.metrics()).py_err(py)
    }
}
