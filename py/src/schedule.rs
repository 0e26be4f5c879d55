//! Schedules (as node/src/schedule.rs): the bodies of the `Queue` methods
//! `schedule_put`, `schedule_get`, `schedule_list`, `schedule_delete`,
//! `schedule_pause`, `schedule_resume` and `run_schedules` (queue.rs holds
//! their short `#[pymethods]` entries), each one call of the core's
//! `JobStore` with the GIL released, so an embedded queue and a client of a
//! server answer alike; the store-free `schedule_next_times`; and the
//! answers: `ScheduleInfo`, `RunReport`, and a job's `ScheduleRef`.
//!
//! Numbers are range-checked as every other is (args.rs): `anchor` and
//! `after` are instants, `expires_in` a duration, `priority`,
//! `max_attempts`, `max_catch_up` and `n` integers in their ranges; the
//! payload is converted as `enqueue`'s (payload.rs). The rest (the spec,
//! the zone, the name, the kind, the catch-up policy's name) is the core's
//! to refuse, as `InvalidArgumentError`.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyString};
use telha_jobs::schedule::{next_times, MAX_CATCH_UP_LIMIT, MAX_NEXT_TIMES};
use telha_jobs::{CatchUp, Clock, JobStore, Schedule, SystemClock};

use crate::errors::{invalid, type_error};
use crate::job::secs;
use crate::payload::{self, type_name};
use crate::{args, task};

/// The keywords of `schedule_put` besides `name`, `spec` and `kind`.
pub const PUT_OPTIONS: [&str; 12] = [
    "payload",
    "timezone",
    "anchor",
    "scope",
    "priority",
    "max_attempts",
    "expires_in",
    "catch_up",
    "max_catch_up",
    "paused",
    "tags",
    "metadata",
];

/// The schedule `schedule_put` was given; an option that is None is not
/// given, an unknown one `InvalidArgumentError` listing them.
pub fn build(
    py: Python<'_>,
    name: &Bound<'_, PyAny>,
    spec: &Bound<'_, PyAny>,
    kind: &Bound<'_, PyAny>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<Schedule> {
    let mut s = Schedule::new(
        args::text(name, "name")?,
        args::text(spec, "spec")?,
        args::text(kind, "kind")?,
    );
    let mut payload = None;
    for (k, v) in options.into_iter().flat_map(|d| d.iter()) {
        let key = k
            .cast::<PyString>()
            .map_err(|_| type_error(format!("option names must be str, got {}", type_name(&k))))?
            .to_cow()?
            .into_owned();
        if v.is_none() {
            continue;
        }
        let v = &v;
        match key.as_str() {
            "payload" => payload = Some(v.clone()),
            "timezone" => s.timezone = Some(args::text(v, "timezone")?),
            "anchor" => s.anchor = Some(args::instant_ms(v, "anchor")?),
            "scope" => s.scope = Some(args::scope(v)?),
            "priority" => s.priority = Some(args::int_in(v, "priority", 0, u8::MAX.into())? as u8),
            "max_attempts" => {
                s.max_attempts = Some(args::int_in(v, "max_attempts", 1, u32::MAX.into())? as u32)
            }
            "expires_in" => s.expires_in = Some(args::duration(v, "expires_in")?),
            "catch_up" => {
                let c = args::text(v, "catch_up")?;
                s.catch_up = task::pure(py, || CatchUp::parse(&c))?;
            }
            "max_catch_up" => {
                let most = MAX_CATCH_UP_LIMIT.into();
                s.max_catch_up = Some(args::int_in(v, "max_catch_up", 1, most)? as u32)
            }
            "paused" => s.paused = args::flag(v, "paused")?,
            "tags" => s.tags = args::tags(v)?,
            "metadata" => s.metadata = args::metadata(v)?,
            _ => {
                return Err(invalid(
                    py,
                    format!(
                        "unknown option {key:?}; one of kind, {}",
                        PUT_OPTIONS.join(", ")
                    ),
                ))
            }
        }
    }
    let none = py.None().into_bound(py);
    (s.payload, s.encoding) = payload::to_bytes(payload.as_ref().unwrap_or(&none), "payload")?;
    Ok(s)
}

/// `Queue.schedule_put` (after [`build`]).
pub fn put(py: Python<'_>, store: &dyn JobStore, s: Schedule) -> PyResult<ScheduleInfo> {
    Ok(ScheduleInfo::new(task::run(py, || store.schedule_put(&s))?))
}

/// `Queue.schedule_get`, `_pause` or `_resume` (`op`: `"get"`, `"pause"`,
/// `"resume"`): the schedule named `name` as it is then.
pub fn one(
    py: Python<'_>,
    store: &dyn JobStore,
    op: &str,
    name: &Bound<'_, PyAny>,
) -> PyResult<ScheduleInfo> {
    let name = args::text(name, "name")?;
    let info = match op {
        "get" => task::run(py, || store.schedule_get(&name)),
        "pause" => task::run(py, || store.schedule_pause(&name)),
        "resume" => task::run(py, || store.schedule_resume(&name)),
        _ => return Err(invalid(py, format!("no schedule operation {op:?}"))),
    }?;
    Ok(ScheduleInfo::new(info))
}

/// `Queue.schedule_delete`.
pub fn delete(py: Python<'_>, store: &dyn JobStore, name: &Bound<'_, PyAny>) -> PyResult<()> {
    let name = args::text(name, "name")?;
    task::run(py, || store.schedule_delete(&name))
}

/// `Queue.schedule_list`: every schedule, by name.
pub fn list(py: Python<'_>, store: &dyn JobStore) -> PyResult<Vec<ScheduleInfo>> {
    let all = task::run(py, || store.schedule_list())?;
    Ok(all.into_iter().map(ScheduleInfo::new).collect())
}

/// `Queue.run_schedules`: one scheduler pass now.
pub fn run(py: Python<'_>, store: &dyn JobStore) -> PyResult<RunReport> {
    Ok(RunReport(task::run(py, || store.run_schedules())?))
}

/// The next `n` times (default 5, at most 1,000) `spec` fires after
/// `after` (seconds since the epoch or a datetime; default now), in
/// seconds since the epoch, without a store: fewer when the spec stops
/// firing. `timezone` (IANA, cron specs only) and `anchor` (an instant,
/// interval specs only) as for `Queue.schedule_put`, which refuses the same
/// specs with the same `InvalidArgumentError`.
#[pyfunction]
#[pyo3(signature = (spec, *, timezone=None, anchor=None, after=None, n=None),
    text_signature = "(spec, *, timezone=None, anchor=None, after=None, n=5)")]
pub fn schedule_next_times(
    py: Python<'_>,
    spec: &Bound<'_, PyAny>,
    timezone: Option<&Bound<'_, PyAny>>,
    anchor: Option<&Bound<'_, PyAny>>,
    after: Option<&Bound<'_, PyAny>>,
    n: Option<&Bound<'_, PyAny>>,
) -> PyResult<Vec<f64>> {
    task::guard(py, "schedule_next_times", || {
        let spec = args::text(spec, "spec")?;
        let zone = timezone.map(|z| args::text(z, "timezone")).transpose()?;
        let anchor = anchor.map(|a| args::instant_ms(a, "anchor")).transpose()?;
        let after = match after {
            Some(a) => args::instant_ms(a, "after")?,
            None => SystemClock.now_ms(),
        };
        let n = match n {
            Some(n) => args::int_in(n, "n", 0, MAX_NEXT_TIMES as u64)? as usize,
            None => 5,
        };
        // A rare cron spec walks far: off the GIL, like a store call.
        let times = task::run(py, || next_times(&spec, zone.as_deref(), anchor, after, n))?;
        Ok(times.into_iter().map(secs).collect())
    })
}

/// Which schedule enqueued a job, for which slot (`Job.schedule`,
/// `JobInfo.schedule`). Immutable.
#[pyclass(frozen, module = "telha_jobs", name = "ScheduleRef")]
pub struct ScheduleRef(telha_jobs::ScheduleRef);

impl ScheduleRef {
    /// A job's `schedule` attribute: None when no schedule enqueued it.
    pub fn new(r: &Option<telha_jobs::ScheduleRef>) -> Option<Self> {
        r.clone().map(ScheduleRef)
    }
}

#[pymethods]
impl ScheduleRef {
    /// The schedule's name.
    #[getter]
    fn name(&self) -> &str {
        &self.0.name
    }
    /// The slot the job was enqueued for, seconds since the epoch.
    #[getter]
    fn slot(&self) -> f64 {
        secs(self.0.slot)
    }
    /// How many earlier missed slots this job stands for (the `"one"`
    /// catch-up policy); 0 for a slot run on its own.
    #[getter]
    fn missed(&self) -> u64 {
        self.0.missed
    }
    fn __repr__(&self) -> String {
        format!(
            "ScheduleRef(name={:?}, slot={}, missed={})",
            self.0.name,
            secs(self.0.slot),
            self.0.missed
        )
    }
}

/// What one scheduler pass did (`Queue.run_schedules`). Immutable.
#[pyclass(frozen, module = "telha_jobs", name = "RunReport")]
pub struct RunReport(telha_jobs::RunReport);

#[pymethods]
impl RunReport {
    /// Schedules that had due slots.
    #[getter]
    fn schedules(&self) -> u64 {
        self.0.schedules
    }
    /// Jobs enqueued.
    #[getter]
    fn enqueued(&self) -> u64 {
        self.0.enqueued
    }
    /// Slots skipped by catch-up.
    #[getter]
    fn skipped(&self) -> u64 {
        self.0.skipped
    }
    /// Slots whose job could not be enqueued (see `ScheduleInfo.last_error`).
    #[getter]
    fn failed(&self) -> u64 {
        self.0.failed
    }
    fn __repr__(&self) -> String {
        let r = &self.0;
        format!(
            "RunReport(schedules={}, enqueued={}, skipped={}, failed={})",
            r.schedules, r.enqueued, r.skipped, r.failed
        )
    }
}

/// A schedule as the store holds it: what was put, and what it has done
/// (`schedule_put`, `schedule_get`, `schedule_list`, `schedule_pause`,
/// `schedule_resume`). Times are float seconds since the epoch, like
/// `JobInfo`'s; unset fields are None. Immutable.
#[pyclass(frozen, module = "telha_jobs", name = "ScheduleInfo")]
pub struct ScheduleInfo {
    inner: telha_jobs::ScheduleInfo,
    payload: PyOnceLock<Py<PyAny>>,
}

impl ScheduleInfo {
    pub fn new(inner: telha_jobs::ScheduleInfo) -> Self {
        ScheduleInfo {
            inner,
            payload: PyOnceLock::new(),
        }
    }

    fn s(&self) -> &Schedule {
        &self.inner.schedule
    }
}

#[pymethods]
impl ScheduleInfo {
    /// Unique within the store (1 to `limits.MAX_SCHEDULE_NAME_LEN` bytes).
    #[getter]
    fn name(&self) -> &str {
        &self.s().name
    }
    /// `"0 3 * * *"`, `"*/10 * * * * *"` (seconds first), `"@daily"` or
    /// `"every 5m"`.
    #[getter]
    fn spec(&self) -> &str {
        &self.s().spec
    }
    /// The IANA time zone a cron spec is read in; None: UTC.
    #[getter]
    fn timezone(&self) -> Option<&str> {
        self.s().timezone.as_deref()
    }
    /// An interval's grid: slots at `anchor + k × interval` (seconds since
    /// the epoch); None: the epoch.
    #[getter]
    fn anchor(&self) -> Option<f64> {
        self.s().anchor.map(secs)
    }
    /// The kind of each job.
    #[getter]
    fn kind(&self) -> &str {
        &self.s().kind
    }
    /// The payload of each job as it was given, read as `JobInfo.payload`.
    #[getter]
    fn payload(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        task::guard(py, "payload", || {
            let (b, e) = (&self.s().payload, self.s().encoding);
            let v = self
                .payload
                .get_or_try_init(py, || payload::from_bytes(py, b, e))?;
            Ok(v.clone_ref(py))
        })
    }
    /// How the payload was written: `"bytes"`, `"value"` or `"unknown"`.
    #[getter]
    fn payload_encoding(&self) -> &'static str {
        self.s().encoding.as_str()
    }
    /// The payload bytes exactly as stored.
    #[getter]
    fn raw_payload<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.s().payload)
    }
    /// The scope of each job (a UUID string); None: the system scope.
    #[getter]
    fn scope(&self) -> Option<String> {
        self.s().scope.map(|x| x.to_string())
    }
    /// The priority of each job; None: the default.
    #[getter]
    fn priority(&self) -> Option<u8> {
        self.s().priority
    }
    /// Each job's attempt ceiling; None: its kind's or the store's.
    #[getter]
    fn max_attempts(&self) -> Option<u32> {
        self.s().max_attempts
    }
    /// Each job expires this long (seconds) after its slot if no worker
    /// started it; None: never.
    #[getter]
    fn expires_in(&self) -> Option<f64> {
        self.s().expires_in.map(|d| d.as_secs_f64())
    }
    /// What happens to slots missed while nothing ran the scheduler:
    /// `"skip"`, `"one"` or `"all"`.
    #[getter]
    fn catch_up(&self) -> &'static str {
        self.s().catch_up.name()
    }
    /// The most jobs `"all"` enqueues for missed slots at once; None:
    /// `limits.DEFAULT_MAX_CATCH_UP`.
    #[getter]
    fn max_catch_up(&self) -> Option<u32> {
        self.s().max_catch_up
    }
    /// Each job's tags (a list of str, duplicates removed).
    #[getter]
    fn tags(&self) -> Vec<String> {
        self.s().tags.clone()
    }
    /// Each job's metadata (a dict of str to str).
    #[getter]
    fn metadata(&self) -> std::collections::BTreeMap<String, String> {
        self.s().metadata.clone()
    }
    /// A paused schedule enqueues nothing (and does not catch up on resume).
    #[getter]
    fn paused(&self) -> bool {
        self.s().paused
    }
    /// When it was created.
    #[getter]
    fn created_at(&self) -> f64 {
        secs(self.inner.created_at)
    }
    /// When it was last put, paused or resumed.
    #[getter]
    fn updated_at(&self) -> f64 {
        secs(self.inner.updated_at)
    }
    /// Every slot at or before this instant has been dealt with (enqueued
    /// or skipped); only later ones will be.
    #[getter]
    fn cursor(&self) -> f64 {
        secs(self.inner.cursor)
    }
    /// The latest slot a job was enqueued for, or None.
    #[getter]
    fn last_slot(&self) -> Option<f64> {
        self.inner.last_slot.map(secs)
    }
    /// That job's id, or None.
    #[getter]
    fn last_job(&self) -> Option<String> {
        self.inner.last_job.map(|j| j.to_string())
    }
    /// When that job was enqueued, or None.
    #[getter]
    fn last_fired_at(&self) -> Option<f64> {
        self.inner.last_fired_at.map(secs)
    }
    /// The next slot it will enqueue; None: never again, or paused.
    #[getter]
    fn next_slot(&self) -> Option<f64> {
        self.inner.next_slot.map(secs)
    }
    /// Jobs enqueued so far.
    #[getter]
    fn enqueued(&self) -> u64 {
        self.inner.enqueued
    }
    /// Slots that got no job of their own (catch-up).
    #[getter]
    fn skipped(&self) -> u64 {
        self.inner.skipped
    }
    /// Why the latest slot could not be enqueued, or None.
    #[getter]
    fn last_error(&self) -> Option<&str> {
        self.inner.last_error.as_deref()
    }
    fn __repr__(&self) -> String {
        let s = self.s();
        format!(
            "ScheduleInfo(name={:?}, spec={:?}, kind={:?}, paused={}, enqueued={})",
            s.name,
            s.spec,
            s.kind,
            if s.paused { "True" } else { "False" },
            self.inner.enqueued
        )
    }
}
