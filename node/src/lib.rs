//! The Node binding of telha-jobs (npm package `telha-jobs`), built with
//! napi-rs. This crate is the native layer (`NativeQueue`, `CancelToken`,
//! the payload convention); `lib/telha.js` is the documented public API on
//! top of it (argument types, `AbortSignal`, the `Worker`).
//!
//! Layout, file for file the concerns of the Python crate (`py/src`):
//! `queue.rs` (the worker's calls), `admin.rs` (the operator's calls),
//! `control.rs` (job control: cancel, delete, snooze, pause),
//! `remote.rs` (connect and serve), `config.rs` (open options through the
//! core's key table), `args.rs` (JS arguments -> checked core values),
//! `job.rs` (what comes back), `batch.rs` (batches crossing in a few
//! values), `payload.rs` (JS values <-> `telha_jobs::payload`),
//! `errors.rs` (one table from `ErrorKind` to JS `code`s), `schedule.rs`
//! (schedules: put, get, list, pause, run, next times), `task.rs` (how
//! a call runs, and its panic boundary), `watch.rs` (waiting for a job) and
//! `events.rs` (subscriptions to committed transitions), `flow.rs` (limits
//! and follow-up jobs), `fanin.rs` (fan-in: `enqueueGroup`,
//! `resultsOfChildren`, `JobInfo.fanIn`).

#![deny(clippy::all)]

mod admin;
mod args;
mod batch;
mod config;
mod control;
mod errors;
mod events;
mod fanin;
mod find;
mod flow;
mod job;
mod now;
mod payload;
mod queue;
mod remote;
mod schedule;
mod settle_many;
mod stall;
pub use stall::{loop_declines, LoopDeclines};
mod stream;
mod task;
mod watch;

use napi::bindgen_prelude::{AsyncTask, Buffer, Env, Object, Unknown};
use napi::JsValue;
use napi_derive::napi;
use telha_jobs::{limits, Encoding};

use crate::task::{guard, on_thread, testing::PanicsWhenConverted, Guarded, Op};

/// The stable error codes, in the core's order: `INVALID_ARGUMENT`,
/// `NOT_FOUND`, `ABORTED`, `STORE_LOCKED`, `STORAGE`, `CORRUPTION`,
/// `CLOSED`, `UNSUPPORTED_FORMAT`, `CANCELLED`, `WRONG_STATE`, `UNAVAILABLE`.
#[napi]
pub fn error_codes() -> Vec<&'static str> {
    errors::all_codes()
}

/// The core's table of settable keys, each with its `Queue.open` option name.
#[napi]
pub fn config_keys(env: Env) -> napi::Result<Vec<config::ConfigKey>> {
    guard(&env, "configKeys", config::config_keys)
}

/// The limits the core enforces (`telha_jobs::limits`).
#[napi(object, object_from_js = false)]
pub struct Limits {
    /// The largest kind, in bytes.
    pub max_kind_len: u32,
    /// The largest idempotency key, in bytes.
    pub max_idempotency_key_len: u32,
    /// The largest worker id, in bytes.
    pub max_worker_id_len: u32,
    /// The most jobs one `leaseMany` takes (and any batch call sends over
    /// the network at once).
    pub max_batch: u32,
    /// The largest `list` page.
    pub max_list_limit: u32,
    /// The hard ceiling of `maxPayloadBytes`.
    pub max_payload_bytes_limit: u32,
    /// The largest progress report, in bytes (as stored: a value's
    /// payload-convention encoding).
    pub max_progress_bytes: u32,
    /// The latest time a job may be scheduled for, and any time the store
    /// holds: 9999-12-31T23:59:59.999Z, in ms since the epoch.
    pub max_instant_ms: f64,
    /// The longest duration a setting (or any duration option) may hold:
    /// 100 years, in ms.
    pub max_duration_ms: f64,
}

/// The core's limits.
#[napi]
pub fn limits() -> Limits {
    let n = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
    Limits {
        max_kind_len: n(limits::MAX_KIND_LEN),
        max_idempotency_key_len: n(limits::MAX_IDEMPOTENCY_KEY_LEN),
        max_worker_id_len: n(limits::MAX_WORKER_ID_LEN),
        max_batch: n(limits::MAX_BATCH),
        max_list_limit: n(limits::MAX_LIST_LIMIT),
        max_payload_bytes_limit: n(limits::MAX_PAYLOAD_BYTES_LIMIT),
        max_progress_bytes: n(limits::MAX_PROGRESS_BYTES),
        max_instant_ms: limits::MAX_INSTANT_MS as f64,
        max_duration_ms: limits::MAX_DURATION.as_millis() as f64,
    }
}

/// The next `n` (default 5, at most 1000) times `spec` fires after `after`
/// (ms since the epoch; default now), in ms since the epoch, without a
/// store: fewer when the spec stops firing. `INVALID_ARGUMENT` for a spec,
/// zone or anchor `schedulePut` would refuse.
#[napi]
pub fn schedule_next_times(
    env: Env,
    spec: String,
    timezone: Option<String>,
    anchor: Option<f64>,
    after: Option<f64>,
    n: Option<f64>,
) -> napi::Result<Vec<f64>> {
    guard(&env, "scheduleNextTimes", || {
        schedule::next_times_js(&spec, timezone.as_deref(), anchor, after, n)
    })
}

/// Encode a plain value with the cross-language payload convention (a
/// version byte, then msgpack): the bytes `enqueue` stores for it.
#[napi(ts_args_type = "value: unknown")]
pub fn encode_payload(env: Env, value: Unknown) -> napi::Result<Buffer> {
    guard(&env, "encodePayload", || {
        // SAFETY: live handles of this call.
        let (bytes, _) =
            unsafe { payload::bytes_from_js(env.raw(), value.raw(), || "value".into()) }?;
        Ok(Buffer::from(bytes))
    })
}

/// Decode payload bytes by looking at them: the value when they follow
/// the convention, else the same bytes as a `Buffer`.
#[napi(ts_return_type = "unknown")]
pub fn decode_payload(bytes: Buffer) -> Guarded<payload::Payload> {
    Guarded(
        "decodePayload",
        payload::Payload::new(bytes.to_vec(), Encoding::Unknown),
    )
}

/// A test hook, not API: panic inside one of the boundaries of a native
/// call (`call`: reading arguments; `task`: the core's work on the pool;
/// `convert`: turning an answer into JS values), to prove each turns the
/// panic into the typed `STORAGE` error. Anything else resolves.
#[napi(js_name = "__panicForTest", ts_return_type = "Promise<void>")]
pub fn panic_for_test(
    env: Env,
    at: String,
) -> napi::Result<AsyncTask<Op<bool, PanicsWhenConverted>>> {
    guard(&env, "__panicForTest", || {
        if at == "call" {
            panic!("a test panic while reading arguments");
        }
        Ok(Op::task(
            "__panicForTest",
            move || {
                if at == "task" {
                    panic!("a test panic in the core's work");
                }
                Ok(at == "convert")
            },
            PanicsWhenConverted,
        ))
    })
}

/// A test hook, not API: a lease-wait thread that panics (see
/// `__panicForTest`).
#[napi(js_name = "__panicOnThreadForTest", ts_return_type = "Promise<void>")]
pub fn panic_on_thread_for_test(env: &Env) -> napi::Result<Object<'_>> {
    on_thread(
        env,
        "__panicOnThreadForTest",
        "telha-test-panic",
        || -> Result<(), errors::Failure> { panic!("a test panic on a thread") },
        |_| (),
    )
}
