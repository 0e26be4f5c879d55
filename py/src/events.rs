//! Watching the queue from Python: `Queue.subscribe` → `Subscription`, a
//! blocking iterator of `Event`s (waits in slices with the GIL released,
//! signal handlers between them), with a non-blocking `try_next` and a
//! notify hook (through the notifier thread, notify.rs) that the asyncio
//! form (`AsyncQueue.subscribe`, telha_jobs/_aio_events.py) is built on.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyTuple};
use telha_jobs::{Encoding, Error, Event as Transition, EventFilter, JobStore, SubscribeOptions};

use crate::errors::{invalid, type_error};
use crate::job::secs;
use crate::payload::{self, type_name};
use crate::{args, notify, task};

/// How long one blocking slice of `next` lasts.
const WAIT_SLICE: Duration = Duration::from_millis(100);

/// One committed transition. Immutable.
#[pyclass(frozen, module = "telha_jobs", name = "Event")]
pub struct Event {
    inner: telha_jobs::JobEvent,
    progress: PyOnceLock<Py<PyAny>>,
}

impl Event {
    fn new(inner: telha_jobs::JobEvent) -> Self {
        Event {
            inner,
            progress: PyOnceLock::new(),
        }
    }
}

#[pymethods]
impl Event {
    /// This subscription's count: 1, 2, 3 … over every event that matched
    /// its filter since it began, in commit order, delivered or missed (so
    /// a gap is exactly `missed`).
    #[getter]
    fn seq(&self) -> u64 {
        self.inner.seq
    }
    /// When it was committed, in ms since the epoch (the owner's clock).
    #[getter]
    fn ts(&self) -> u64 {
        self.inner.ts
    }
    /// `ts` in seconds since the epoch, like `time.time()`.
    #[getter]
    fn time(&self) -> f64 {
        secs(self.inner.ts)
    }
    /// The job (a UUID string).
    #[getter]
    fn job_id(&self) -> String {
        self.inner.id.to_string()
    }
    /// The job's kind.
    #[getter]
    fn kind(&self) -> &str {
        &self.inner.kind
    }
    /// The job's scope (a UUID string).
    #[getter]
    fn scope(&self) -> String {
        self.inner.scope.to_string()
    }
    /// The transition: `"enqueued"`, `"leased"`, `"extended"`,
    /// `"progress"`, `"completed"`, `"failed"`, `"dead"`, ... (the names
    /// of a job's event log).
    #[getter]
    fn transition(&self) -> &'static str {
        self.inner.event.name()
    }
    /// For a lease's transition, that lease's attempt (from 1); for the
    /// others, the failed attempts so far.
    #[getter]
    fn attempt(&self) -> u32 {
        self.inner.attempt
    }
    /// The worker of the lease the transition belongs to, or None.
    #[getter]
    fn worker_id(&self) -> Option<&str> {
        self.inner.worker_id.as_deref()
    }
    /// A `progress` event's report, decoded by the payload convention (a
    /// value reported by a handler reads back as that value, other bytes
    /// as bytes); None for other events.
    #[getter]
    fn progress(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        task::guard(py, "progress", || {
            let Some(b) = self.inner.progress.as_deref() else {
                return Ok(None);
            };
            let v = self
                .progress
                .get_or_try_init(py, || payload::from_bytes(py, b, Encoding::Unknown))?;
            Ok(Some(v.clone_ref(py)))
        })
    }
    /// The report's bytes as stored, or None.
    #[getter]
    fn raw_progress<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        self.inner.progress.as_deref().map(|b| PyBytes::new(py, b))
    }
    /// How many events this subscription missed just before this one
    /// because its buffer was full (0 when none).
    #[getter]
    fn missed(&self) -> u64 {
        self.inner.missed
    }
    fn __repr__(&self) -> String {
        let e = &self.inner;
        format!(
            "Event(seq={}, job_id='{}', kind='{}', transition='{}', attempt={}, missed={})",
            e.seq,
            e.id,
            e.kind,
            e.event.name(),
            e.attempt,
            e.missed
        )
    }
}

/// `Queue.subscribe`'s options: `kinds` (a kind, a `"family:*"` or a
/// list), `scopes` (a scope or a list), `transitions` (an event name or a
/// list), `buffer` (1 to 1,000,000).
pub fn options(
    py: Python<'_>,
    kinds: Option<&Bound<'_, PyAny>>,
    scopes: Option<&Bound<'_, PyAny>>,
    transitions: Option<&Bound<'_, PyAny>>,
    buffer: Option<&Bound<'_, PyAny>>,
) -> PyResult<SubscribeOptions> {
    let mut filter = EventFilter {
        kinds: args::kinds(kinds.filter(|k| !k.is_none()))?,
        scopes: args::scopes(scopes.filter(|s| !s.is_none()))?,
        events: vec![],
    };
    if let Some(t) = transitions.filter(|t| !t.is_none()) {
        let names: Vec<String> = if let Ok(s) = t.extract::<String>() {
            vec![s]
        } else if t.is_instance_of::<pyo3::types::PyList>() || t.is_instance_of::<PyTuple>() {
            t.try_iter()?
                .map(|n| args::text(&n?, "transitions"))
                .collect::<PyResult<_>>()?
        } else {
            return Err(type_error(format!(
                "transitions must be a str or a list of str, got {}",
                type_name(t)
            )));
        };
        for n in names {
            let e = Transition::from_name(&n).ok_or_else(|| {
                let all: Vec<&str> = Transition::ALL.iter().map(|e| e.name()).collect();
                invalid(
                    py,
                    format!("unknown transition {n:?}; one of {}", all.join(", ")),
                )
            })?;
            filter.events.push(e);
        }
    }
    let mut o = SubscribeOptions {
        filter,
        ..SubscribeOptions::default()
    };
    if let Some(b) = buffer.filter(|b| !b.is_none()) {
        o.buffer = usize::try_from(args::count(b, "buffer")?).unwrap_or(usize::MAX);
    }
    task::pure(py, || o.validate())?;
    Ok(o)
}

/// A live stream of the transitions the queue commits (`Queue.subscribe`):
/// iterate it (blocking, the GIL released; Ctrl-C ends a wait), or call
/// `next(timeout)`. Iteration ends once it is closed (`close()`, the end of
/// a `with` block) or the queue closes; events buffered by then are
/// delivered first.
#[pyclass(frozen, module = "telha_jobs", name = "Subscription")]
pub struct Subscription {
    sub: telha_jobs::Subscription,
    /// A lost feed's error was raised once; later calls see the end.
    ended: AtomicBool,
}

/// `Queue.subscribe`'s body.
pub fn open(
    py: Python<'_>,
    store: &dyn JobStore,
    options: SubscribeOptions,
) -> PyResult<Subscription> {
    let sub = task::run(py, || store.subscribe(options))?;
    Ok(Subscription {
        sub,
        ended: AtomicBool::new(false),
    })
}

impl Subscription {
    /// What the core answered, as `Some(event)`, `None` (nothing yet) or
    /// the end (`Closed`, or a lost feed's `Storage` once, then `Closed`).
    fn answer(
        &self,
        py: Python<'_>,
        r: telha_jobs::Result<Option<telha_jobs::JobEvent>>,
    ) -> PyResult<Option<Event>> {
        if self.ended.load(Ordering::SeqCst) {
            return task::pure(py, || Err(Error::Closed));
        }
        match r {
            Ok(e) => Ok(e.map(Event::new)),
            Err(e) => {
                if !matches!(e, Error::Closed) {
                    self.ended.store(true, Ordering::SeqCst);
                }
                task::pure(py, || Err(e))
            }
        }
    }

    /// The next event within `timeout` (None: no limit), in slices.
    fn wait_next(&self, py: Python<'_>, timeout: Option<Duration>) -> PyResult<Option<Event>> {
        let end = timeout.and_then(|t| Instant::now().checked_add(t));
        loop {
            let left = end.map_or(Duration::MAX, |e| {
                e.saturating_duration_since(Instant::now())
            });
            let slice = left.min(WAIT_SLICE);
            let s = &self.sub;
            let r = task::run(py, || Ok(s.recv(Some(slice))))?;
            let got = self.answer(py, r)?;
            if got.is_some() || left <= WAIT_SLICE {
                return Ok(got);
            }
            py.check_signals()?;
        }
    }
}

#[pymethods]
impl Subscription {
    /// The next event, waiting up to `timeout` seconds (None or
    /// `math.inf`: no limit); None at the timeout. Once the subscription
    /// has ended and its buffer is drained: `QueueClosedError`
    /// (`StorageError` once first if a remote feed lost its connection).
    #[pyo3(signature = (timeout=None))]
    fn next(&self, py: Python<'_>, timeout: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Event>> {
        task::guard(py, "next", || {
            let t = args::timeout(timeout)?;
            self.wait_next(py, t)
        })
    }

    /// The next buffered event without waiting, or None (the end as for
    /// `next`).
    fn try_next(&self, py: Python<'_>) -> PyResult<Option<Event>> {
        task::guard(py, "try_next", || {
            let r = self.sub.try_recv();
            self.answer(py, r)
        })
    }

    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Event>> {
        task::guard(py, "__next__", || match self.wait_next(py, None) {
            Err(e) if closed(py, &e) => Ok(None),
            r => r,
        })
    }

    /// End the subscription (idempotent): events already buffered can
    /// still be read, then iteration stops.
    fn close(&self) {
        self.sub.close()
    }

    /// Whether it has ended (closed, or the queue closed); events may
    /// still be buffered.
    #[getter]
    fn closed(&self) -> bool {
        self.sub.is_closed() || self.ended.load(Ordering::SeqCst)
    }

    /// How many events are buffered now.
    #[getter]
    fn buffered(&self) -> usize {
        self.sub.buffered()
    }

    /// For asyncio: have `callback()` called on the notifier thread
    /// whenever an event arrives in an empty buffer, or the subscription
    /// ends. Replaces an earlier one.
    fn _set_notify(&self, callback: Py<PyAny>) {
        let cb = Arc::new(callback);
        self.sub
            .set_notify(Arc::new(move || notify::call_soon(cb.clone())));
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, _exc: &Bound<'_, PyTuple>) -> bool {
        self.sub.close();
        false
    }

    fn __repr__(&self) -> String {
        format!(
            "Subscription(buffered={}, closed={})",
            self.sub.buffered(),
            self.closed()
        )
    }
}

/// Whether `e` is the end of the stream (`QueueClosedError`).
fn closed(py: Python<'_>, e: &PyErr) -> bool {
    e.value(py)
        .getattr("code")
        .and_then(|c| c.extract::<String>())
        .is_ok_and(|c| c == "CLOSED")
}
