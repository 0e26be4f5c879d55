//! `telha_jobs._native`: the PyO3 module under the `telha_jobs` package.
//!
//! Files by concern, named as node/src's: config.rs (open settings through
//! the core's key table), args.rs (argument conversion and range checks,
//! enqueue options and items), queue.rs (the `Queue` class), lease.rs
//! (`CancelWait`, the sliced lease wait), control.rs (job control: cancel,
//! delete, snooze, retry-in, pause, extend's answers), admin.rs (the
//! operator calls' queries and answers: list, stats, reap), job.rs (`Job`,
//! `JobInfo`, the `Enqueued` answer), payload.rs (the payload convention
//! and encodings), errors.rs (error kinds → exception classes), remote.rs
//! (`connect`, `Server`), schedule.rs (the schedule calls' arguments and
//! answers: `ScheduleInfo`, `RunReport`, `ScheduleRef`, and the store-free
//! `schedule_next_times`), stream.rs (a remote queue's PollJobs stream),
//! watch.rs (`wait`, `JobWaiter`), events.rs (`subscribe`: `Subscription`,
//! `Event`), notify.rs (the notifier thread that hands commits to asyncio),
//! flow.rs (limits: set_limit, remove_limit, limits; complete's `then`),
//! otel.rs (the trace context added to a new job's metadata),
//! task.rs (running a call: the GIL released around the core, panics
//! caught), carry.rs (`_complete_then_lease`, the AsyncWorker's one call
//! per batch). node/src/batch.rs (batched napi values) has no
//! Python counterpart. The Worker and asyncio layers are pure Python.

mod admin;
mod args;
mod carry;
mod config;
mod control;
mod errors;
mod events;
mod flow;
mod job;
mod lease;
mod notify;
mod otel;
mod payload;
mod queue;
mod queue_admin;
mod queue_settle;
mod remote;
mod schedule;
mod stream;
mod task;
mod watch;

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use telha_jobs::limits;

/// The embedded default store: `$TELHA_DB` when set, else `./telha-data`.
#[pyfunction]
fn default_store_path() -> String {
    telha_jobs::default_store_path().display().to_string()
}

/// Encode a value by the cross-language payload convention (version byte
/// 0x01, then msgpack); what `enqueue` stores for a non-bytes payload.
#[pyfunction]
fn encode_payload<'py>(value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    let py = value.py();
    task::guard(py, "encode_payload", || {
        let v = payload::to_value(value, "value", 0)?;
        let b = task::pure(py, || telha_jobs::payload::encode(&v))?;
        Ok(PyBytes::new(py, &b))
    })
}

/// Decode stored bytes by looking at them (as for a row that recorded no
/// encoding): the value when they follow the convention, else the bytes.
#[pyfunction]
fn decode_payload(py: Python<'_>, data: &[u8]) -> PyResult<Py<PyAny>> {
    task::guard(py, "decode_payload", || {
        payload::from_bytes(py, data, telha_jobs::Encoding::Unknown)
    })
}

/// The core's limits, as `telha_jobs.limits` re-exports them (times in
/// seconds as well as the core's milliseconds).
fn add_limits(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("MAX_KIND_LEN", limits::MAX_KIND_LEN)?;
    m.add("MAX_IDEMPOTENCY_KEY_LEN", limits::MAX_IDEMPOTENCY_KEY_LEN)?;
    m.add("MAX_WORKER_ID_LEN", limits::MAX_WORKER_ID_LEN)?;
    m.add("MAX_BATCH", limits::MAX_BATCH)?;
    m.add("MAX_LIST_LIMIT", limits::MAX_LIST_LIMIT)?;
    m.add("LIST_SCAN_BUDGET", limits::LIST_SCAN_BUDGET)?;
    m.add("MAX_PAYLOAD_BYTES_LIMIT", limits::MAX_PAYLOAD_BYTES_LIMIT)?;
    m.add("MAX_INSTANT_MS", limits::MAX_INSTANT_MS)?;
    m.add("MAX_INSTANT", limits::MAX_INSTANT_MS as f64 / 1000.0)?;
    m.add("MAX_DURATION", limits::MAX_DURATION.as_secs_f64())?;
    m.add("PRIORITY_DEFAULT", telha_jobs::config::PRIORITY_DEFAULT)?;
    m.add("MAX_PROGRESS_BYTES", limits::MAX_PROGRESS_BYTES)?;
    m.add(
        "DEFAULT_EVENT_BUFFER",
        telha_jobs::watch::DEFAULT_EVENT_BUFFER,
    )?;
    m.add("MAX_EVENT_BUFFER", telha_jobs::watch::MAX_EVENT_BUFFER)?;
    m.add("MAX_SCHEDULE_NAME_LEN", telha_jobs::schedule::MAX_NAME_LEN)?;
    m.add("MAX_NEXT_TIMES", telha_jobs::schedule::MAX_NEXT_TIMES)?;
    m.add(
        "MAX_CATCH_UP_LIMIT",
        telha_jobs::schedule::MAX_CATCH_UP_LIMIT,
    )?;
    m.add(
        "DEFAULT_MAX_CATCH_UP",
        telha_jobs::schedule::DEFAULT_MAX_CATCH_UP,
    )?;
    Ok(())
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<queue::Queue>()?;
    m.add_class::<lease::CancelWait>()?;
    m.add_class::<job::Job>()?;
    m.add_class::<job::JobInfo>()?;
    m.add_class::<config::ConfigKey>()?;
    m.add_class::<remote::Server>()?;
    m.add_class::<stream::JobStream>()?;
    m.add_class::<watch::JobWaiter>()?;
    m.add_class::<events::Event>()?;
    m.add_class::<events::Subscription>()?;
    m.add_class::<schedule::ScheduleInfo>()?;
    m.add_class::<schedule::RunReport>()?;
    m.add_class::<schedule::ScheduleRef>()?;
    m.add_function(wrap_pyfunction!(schedule::schedule_next_times, m)?)?;
    m.add_function(wrap_pyfunction!(control::encode_progress, m)?)?;
    m.add_function(wrap_pyfunction!(carry::complete_then_lease, m)?)?;
    let shutdown = wrap_pyfunction!(notify::shutdown, m)?;
    m.py()
        .import("atexit")?
        .call_method1("register", (&shutdown,))?;
    m.add_function(shutdown)?;
    m.add_function(wrap_pyfunction!(remote::connect, m)?)?;
    m.add_function(wrap_pyfunction!(config::config_keys, m)?)?;
    m.add_function(wrap_pyfunction!(default_store_path, m)?)?;
    m.add_function(wrap_pyfunction!(encode_payload, m)?)?;
    m.add_function(wrap_pyfunction!(decode_payload, m)?)?;
    m.add_function(wrap_pyfunction!(task::panic_for_tests, m)?)?;
    m.add_function(wrap_pyfunction!(task::call_cost, m)?)?;
    add_limits(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
