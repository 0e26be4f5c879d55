//! `Job` (a lease in hand) and `JobInfo` (everything known about a job).
//! Times are float seconds since the epoch, like `time.time()`.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyBytes;
use telha_jobs::Enqueued;

use crate::{payload, task};

pub fn secs(ms: u64) -> f64 {
    ms as f64 / 1000.0
}

/// A leased job: pass it to `complete`, `fail`, `release` or `extend`.
/// Immutable; its lease token is `(id, generation)`.
#[pyclass(frozen, module = "telha_jobs", name = "Job")]
pub struct Job {
    pub(crate) inner: telha_jobs::Job,
    payload: PyOnceLock<Py<PyAny>>,
}

impl Job {
    pub fn new(inner: telha_jobs::Job) -> Self {
        Job {
            inner,
            payload: PyOnceLock::new(),
        }
    }
}

#[pymethods]
impl Job {
    /// The job id (a UUIDv7 string).
    #[getter]
    fn id(&self) -> String {
        self.inner.id.to_string()
    }
    /// The job's kind.
    #[getter]
    fn kind(&self) -> &str {
        &self.inner.kind
    }
    /// The tenant scope (a UUID string; the nil UUID is the system scope).
    #[getter]
    fn scope(&self) -> String {
        self.inner.scope.to_string()
    }
    /// The payload as it was given: `bytes` for bytes (a Node `Buffer`
    /// too), the value for a value (a dict enqueued from Python, Node or C
    /// by the msgpack convention). A job written without a record of its
    /// encoding (an older store, C or Rust callers) reads as a value when
    /// its bytes follow the convention, else as bytes. Decoded once.
    #[getter]
    fn payload(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        task::guard(py, "payload", || {
            let (b, e) = (&self.inner.payload, self.inner.payload_encoding);
            let v = self
                .payload
                .get_or_try_init(py, || payload::from_bytes(py, b, e))?;
            Ok(v.clone_ref(py))
        })
    }
    /// How the payload was written: `"bytes"`, `"value"`, or `"unknown"`
    /// (not recorded: read by looking at the bytes).
    #[getter]
    fn payload_encoding(&self) -> &'static str {
        self.inner.payload_encoding.as_str()
    }
    /// The payload bytes exactly as stored.
    #[getter]
    fn raw_payload<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.inner.payload)
    }
    /// Failed attempts before this lease (this lease is attempt `attempts + 1`).
    #[getter]
    fn attempts(&self) -> u32 {
        self.inner.attempts
    }
    /// The effective attempt ceiling (per job > per kind > global).
    #[getter]
    fn max_attempts(&self) -> u32 {
        self.inner.max_attempts
    }
    /// The lease generation: fences out holders of older leases.
    #[getter]
    fn generation(&self) -> u64 {
        self.inner.generation
    }
    /// The lease deadline, seconds since the epoch by the clock of the
    /// store that granted it (a server's, over `connect`), as granted
    /// (`extend` moves the real one). Schedule heartbeats from `lease_ttl`.
    #[getter]
    fn deadline(&self) -> f64 {
        secs(self.inner.deadline)
    }
    /// The TTL the lease was granted with, in seconds: it lasts this long
    /// from the grant, and each `extend` renews it for as long again.
    #[getter]
    fn lease_ttl(&self) -> f64 {
        secs(self.inner.lease_ttl_ms)
    }
    /// 0 most urgent … 255 least.
    #[getter]
    fn priority(&self) -> u8 {
        self.inner.priority
    }
    /// The worker the lease was granted to.
    #[getter]
    fn worker_id(&self) -> &str {
        &self.inner.worker_id
    }
    /// The kind's run-time limit (its `timeout` setting) in seconds, or
    /// None: a Worker fails a handler still running after this long
    /// ("timed out after ...", retryably) and tells it the lease is lost.
    #[getter]
    fn timeout(&self) -> Option<f64> {
        self.inner.timeout_ms.map(secs)
    }
    /// The schedule and slot that enqueued it (`ScheduleRef`), or None.
    #[getter]
    fn schedule(&self) -> Option<crate::schedule::ScheduleRef> {
        crate::schedule::ScheduleRef::new(&self.inner.schedule)
    }
    /// The id of the job whose completion enqueued it (`complete(...,
    /// then=[...])`), or None.
    #[getter]
    fn parent(&self) -> Option<String> {
        self.inner.parent.map(|p| p.to_string())
    }
    /// Its tags (a list of str, duplicates removed), as enqueued.
    #[getter]
    fn tags(&self) -> Vec<String> {
        self.inner.tags.clone()
    }
    /// Its metadata (a dict of str to str), as enqueued.
    #[getter]
    fn metadata(&self) -> std::collections::BTreeMap<String, String> {
        self.inner.metadata.clone()
    }
    /// Its job key (flow control by key, issue 43), or None.
    #[getter]
    fn key(&self) -> Option<String> {
        self.inner.key.clone()
    }
    /// The lease token as text, `"<id>:<generation>"`.
    #[getter]
    fn token(&self) -> String {
        self.inner.token().to_string()
    }
    fn __repr__(&self) -> String {
        format!(
            "Job(id='{}', kind='{}', attempts={}, generation={})",
            self.inner.id, self.inner.kind, self.inner.attempts, self.inner.generation
        )
    }
}

/// Everything known about a job, from `get` and `list`. Immutable.
#[pyclass(frozen, module = "telha_jobs", name = "JobInfo")]
pub struct JobInfo {
    pub(crate) inner: telha_jobs::JobInfo,
    payload: PyOnceLock<Py<PyAny>>,
}

impl JobInfo {
    pub fn new(inner: telha_jobs::JobInfo) -> Self {
        JobInfo {
            inner,
            payload: PyOnceLock::new(),
        }
    }

    /// The `list` cursor that resumes strictly after this job's row.
    pub fn cursor(&self) -> &str {
        &self.inner.cursor
    }
}

#[pymethods]
impl JobInfo {
    /// The job id (a UUIDv7 string).
    #[getter]
    fn id(&self) -> String {
        self.inner.id.to_string()
    }
    /// The job's kind.
    #[getter]
    fn kind(&self) -> &str {
        &self.inner.kind
    }
    /// The tenant scope (a UUID string).
    #[getter]
    fn scope(&self) -> String {
        self.inner.scope.to_string()
    }
    /// `"pending"`, `"leased"`, `"completed"`, `"failed"`, `"dead"`,
    /// `"cancelled"` or `"waiting"` (a fan-in parent before its children
    /// finished).
    #[getter]
    fn state(&self) -> &'static str {
        self.inner.state.as_str()
    }
    /// The payload as it was given, as for `Job.payload`.
    #[getter]
    fn payload(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        task::guard(py, "payload", || {
            let (b, e) = (&self.inner.payload, self.inner.payload_encoding);
            let v = self
                .payload
                .get_or_try_init(py, || payload::from_bytes(py, b, e))?;
            Ok(v.clone_ref(py))
        })
    }
    /// How the payload was written: `"bytes"`, `"value"` or `"unknown"`.
    #[getter]
    fn payload_encoding(&self) -> &'static str {
        self.inner.payload_encoding.as_str()
    }
    /// The payload bytes exactly as stored.
    #[getter]
    fn raw_payload<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.inner.payload)
    }
    /// What `complete` was given, as it was given (`bytes` as bytes, a
    /// value as the value; like the payload), or None.
    #[getter]
    fn result(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        task::guard(py, "result", || {
            let e = self.inner.result_encoding;
            self.inner
                .result
                .as_deref()
                .map(|r| payload::from_bytes(py, r, e))
                .transpose()
        })
    }
    /// How the result was written: `"bytes"`, `"value"` or `"unknown"`
    /// (also when there is no result).
    #[getter]
    fn result_encoding(&self) -> &'static str {
        self.inner.result_encoding.as_str()
    }
    /// Pass as `list(after=...)` to list the jobs after this one (the
    /// JobInfo itself works too).
    #[getter(cursor)]
    fn py_cursor(&self) -> &str {
        self.cursor()
    }
    /// The result bytes exactly as stored, or None.
    #[getter]
    fn raw_result<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        self.inner.result.as_deref().map(|r| PyBytes::new(py, r))
    }
    /// Failed attempts so far (an operator `retry` resets it).
    #[getter]
    fn attempts(&self) -> u32 {
        self.inner.attempts
    }
    /// The effective attempt ceiling (per job > per kind > global).
    #[getter]
    fn max_attempts(&self) -> u32 {
        self.inner.max_attempts
    }
    /// How many times the job has been leased.
    #[getter]
    fn generation(&self) -> u64 {
        self.inner.generation
    }
    /// The lease deadline while leased (seconds since the epoch), else None.
    #[getter]
    fn deadline(&self) -> Option<f64> {
        self.inner.lease_deadline.map(secs)
    }
    /// 0 most urgent … 255 least.
    #[getter]
    fn priority(&self) -> u8 {
        self.inner.priority
    }
    /// The worker of the current or last lease, or None.
    #[getter]
    fn worker_id(&self) -> Option<&str> {
        self.inner.worker_id.as_deref()
    }
    /// The reason of the latest failure or lease expiry, or None.
    #[getter]
    fn last_error(&self) -> Option<&str> {
        self.inner.last_error.as_deref()
    }
    /// The idempotency key it was enqueued with, or None.
    #[getter]
    fn idempotency_key(&self) -> Option<&str> {
        self.inner.idempotency_key.as_deref()
    }
    /// When it was enqueued, seconds since the epoch.
    #[getter]
    fn created_at(&self) -> f64 {
        secs(self.inner.created_at)
    }
    /// The time of its state: ready-at (pending), deadline (leased),
    /// retry-at (failed), or when it got there (completed, dead).
    #[getter]
    fn state_at(&self) -> f64 {
        secs(self.inner.state_ts)
    }
    /// The event log, oldest first: `(timestamp, transition, detail)`. A
    /// long log folds its middle attempts into `"attempt"` entries, so every
    /// attempt is accounted for.
    #[getter]
    fn events(&self) -> Vec<(f64, String, String)> {
        self.inner
            .events
            .iter()
            .map(|e| (secs(e.ts), e.transition.clone(), e.detail.clone()))
            .collect()
    }
    /// The reason of a cancel requested while the job is leased (the holder
    /// is told at its next heartbeat), else None.
    #[getter]
    fn cancel_requested(&self) -> Option<&str> {
        self.inner.cancel_requested.as_deref()
    }
    /// How many times a handler snoozed it (`snooze`, `raise Snooze`).
    #[getter]
    fn snoozes(&self) -> u32 {
        self.inner.snoozes
    }
    /// When it expires if it has not started (seconds since the epoch:
    /// `enqueue(expires_at=... | expires_in=...)`), else None.
    #[getter]
    fn expires_at(&self) -> Option<f64> {
        self.inner.expires_at.map(secs)
    }
    /// Whether its kind (or family) or its scope is paused.
    #[getter]
    fn paused(&self) -> bool {
        self.inner.paused
    }
    /// The latest progress its current or last lease reported (with a
    /// heartbeat: `extend(progress=...)`, `current_lease().progress(...)`),
    /// decoded by the payload convention, or None; a new lease clears it.
    #[getter]
    fn progress(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        task::guard(py, "progress", || {
            self.inner
                .progress
                .as_deref()
                .map(|p| payload::from_bytes(py, p, telha_jobs::Encoding::Unknown))
                .transpose()
        })
    }
    /// The latest progress report's bytes as stored, or None.
    #[getter]
    fn raw_progress<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        self.inner.progress.as_deref().map(|p| PyBytes::new(py, p))
    }
    /// The schedule and slot that enqueued it (`ScheduleRef`), or None.
    #[getter]
    fn schedule(&self) -> Option<crate::schedule::ScheduleRef> {
        crate::schedule::ScheduleRef::new(&self.inner.schedule)
    }
    /// The id of the job whose completion enqueued it, or None.
    #[getter]
    fn parent(&self) -> Option<String> {
        self.inner.parent.map(|p| p.to_string())
    }
    /// Its tags (a list of str, duplicates removed), as enqueued.
    #[getter]
    fn tags(&self) -> Vec<String> {
        self.inner.tags.clone()
    }
    /// Its metadata (a dict of str to str), as enqueued.
    #[getter]
    fn metadata(&self) -> std::collections::BTreeMap<String, String> {
        self.inner.metadata.clone()
    }
    /// Its job key (flow control by key, issue 43), or None.
    #[getter]
    fn key(&self) -> Option<String> {
        self.inner.key.clone()
    }
    /// A fan-in parent's children (`FanIn(unfinished, total, policy)`:
    /// enqueued with `after=` or by `enqueue_group`), else None.
    #[getter]
    fn fan_in(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        task::guard(py, "fan_in", || {
            self.inner
                .fan_in
                .as_ref()
                .map(|f| crate::fanin::fan_in(py, f))
                .transpose()
        })
    }
    /// How many older events were dropped to keep the log bounded.
    #[getter]
    fn dropped_events(&self) -> u32 {
        self.inner.dropped_events
    }
    fn __repr__(&self) -> String {
        format!(
            "JobInfo(id='{}', kind='{}', state='{}', attempts={})",
            self.inner.id, self.inner.kind, self.inner.state, self.inner.attempts
        )
    }
}

static ENQUEUED: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// `enqueue`'s answer as `telha_jobs.Enqueued(id, created)`: a `str`, the
/// job id, with `.created` False when an idempotency key matched an
/// existing job.
pub fn enqueued(py: Python<'_>, e: &Enqueued) -> PyResult<Py<PyAny>> {
    // `_created` is `str.__new__` bound to Enqueued: no Python frame
    // (Enqueued's own `__new__` cost 2.4 us against 1.0 us); `created`
    // defaults to True on the class and is set only when False.
    let new = ENQUEUED.import(py, "telha_jobs._types", "_created")?;
    let id = new.call1((e.id.to_string(),))?;
    if !e.created {
        id.setattr("created", false)?;
    }
    if e.debounced {
        id.setattr("debounced", true)?;
    }
    Ok(id.unbind())
}
