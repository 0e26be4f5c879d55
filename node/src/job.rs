//! The objects JS receives: `Job` (a lease), `JobInfo` (everything about a
//! job), and the reports of `list`, `reap` and `stats`. Field names are the
//! Python package's, camelCased; times are ms since the epoch.

use std::collections::HashMap;

use napi_derive::napi;

use crate::payload::{value_to_js, Bytes, Payload};
use napi::bindgen_prelude::{ToNapiValue, TypeName};
use napi::{sys, ValueType};
use telha_jobs::payload::Value;

/// A leased job, as a worker sees it. Pass it back to `extend`, `complete`,
/// `fail` and `release`: its `id` and `generation` are the lease token.
///
/// (Declared for its TypeScript type: leases cross the boundary as a
/// [`LeasedBatch`], which lib/telha.js turns into these objects.)
#[napi(object, object_from_js = false)]
#[allow(dead_code)]
pub struct Job {
    /// The job's id (a UUIDv7 string).
    pub id: String,
    /// The job's kind, such as `ingest:pdf`.
    pub kind: String,
    /// The tenant scope (a UUID string; the nil UUID is the system scope).
    pub scope: String,
    /// The payload: the decoded value when it was enqueued as a plain value
    /// (the msgpack convention), else the stored bytes as a `Buffer`.
    #[napi(ts_type = "unknown")]
    pub payload: Payload,
    /// The stored payload bytes, always.
    #[napi(ts_type = "Buffer")]
    pub payload_bytes: Bytes,
    /// Failed attempts so far (this lease is attempt `attempts + 1`).
    pub attempts: u32,
    /// The effective ceiling: when this lease is attempt `maxAttempts`, a
    /// failure or expiry makes the job dead.
    pub max_attempts: u32,
    /// The lease generation: every lease bumps it, fencing out older holders.
    pub generation: i64,
    /// The lease deadline, ms since the epoch.
    pub deadline: i64,
    /// 0 most urgent … 255 least.
    pub priority: u32,
    /// The worker the lease was granted to.
    pub worker_id: String,
}

/// One entry of a job's event log.
#[napi(object, object_from_js = false)]
pub struct JobEvent {
    /// When, ms since the epoch.
    pub ts: i64,
    /// `enqueued`, `leased`, `completed`, `failed`, `dead`, `lease_expired`,
    /// `released` or `retried`.
    pub transition: String,
    /// The worker, the attempt, the failure reason, …
    pub detail: String,
}

/// Everything known about a job (`get`, `list`).
#[napi(object, object_from_js = false)]
pub struct JobInfo {
    /// The job's id.
    pub id: String,
    /// The tenant scope.
    pub scope: String,
    /// The job's kind.
    pub kind: String,
    /// `pending`, `leased`, `failed`, `completed` or `dead`.
    #[napi(ts_type = "'pending' | 'leased' | 'failed' | 'completed' | 'dead'")]
    pub state: String,
    /// 0 most urgent … 255 least.
    pub priority: u32,
    /// The state's time: ready-at (pending), deadline (leased), retry-at
    /// (failed), or when it got there (completed, dead); ms since the epoch.
    pub state_ts: i64,
    /// Failed attempts so far (an operator `retry` resets it).
    pub attempts: u32,
    /// The effective ceiling (per job > per kind > global).
    pub max_attempts: u32,
    /// How many times the job has been leased.
    pub generation: i64,
    /// The worker of the current or last lease.
    pub worker_id: Option<String>,
    /// The lease deadline while leased.
    pub lease_deadline: Option<i64>,
    /// The payload, decoded as in `Job.payload`.
    #[napi(ts_type = "unknown")]
    pub payload: Payload,
    /// The stored payload bytes.
    #[napi(ts_type = "Buffer")]
    pub payload_bytes: Bytes,
    /// What `complete` was given (decoded like the payload), or null.
    #[napi(ts_type = "unknown")]
    pub result: Option<Payload>,
    /// The stored result bytes, or null.
    #[napi(ts_type = "Buffer")]
    pub result_bytes: Option<Bytes>,
    /// The reason of the latest failure or lease expiry.
    pub last_error: Option<String>,
    /// The idempotency key it was enqueued with.
    pub idempotency_key: Option<String>,
    /// When it was enqueued, ms since the epoch.
    pub created_at: i64,
    /// The event log, oldest first (the newest 64 events).
    pub events: Vec<JobEvent>,
    /// How many older events were dropped to keep the log bounded.
    pub dropped_events: u32,
}

impl JobInfo {
    /// Convert a core record (call off the JS thread).
    pub fn from_core(j: telha_jobs::JobInfo) -> Self {
        JobInfo {
            id: j.id.to_string(),
            scope: j.scope.to_string(),
            kind: j.kind,
            state: j.state.as_str().to_string(),
            priority: j.priority as u32,
            state_ts: j.state_ts as i64,
            attempts: j.attempts,
            max_attempts: j.max_attempts,
            generation: j.generation as i64,
            worker_id: j.worker_id,
            lease_deadline: j.lease_deadline.map(|d| d as i64),
            payload_bytes: Bytes(j.payload.clone()),
            payload: Payload::new(j.payload),
            result_bytes: j.result.clone().map(Bytes),
            result: j.result.map(Payload::new),
            last_error: j.last_error,
            idempotency_key: j.idempotency_key,
            created_at: j.created_at as i64,
            events: j
                .events
                .into_iter()
                .map(|e| JobEvent {
                    ts: e.ts as i64,
                    transition: e.transition,
                    detail: e.detail,
                })
                .collect(),
            dropped_events: j.dropped_events,
        }
    }
}

/// A record that did not decode (skipped by `list` and `reap`).
#[napi(object, object_from_js = false)]
pub struct CorruptRecord {
    /// The row key, hex.
    pub key: String,
    /// The job's id, when the key told it.
    pub id: Option<String>,
    /// Why it did not decode.
    pub error: String,
}

impl CorruptRecord {
    pub fn from_core(c: telha_jobs::CorruptRecord) -> Self {
        CorruptRecord {
            key: c.key,
            id: c.id.map(|i| i.to_string()),
            error: c.error,
        }
    }
}

/// One page of `list`.
#[napi(object, object_from_js = false)]
pub struct ListPage {
    /// The matching jobs, in key order (scope, state, priority, time).
    pub jobs: Vec<JobInfo>,
    /// Pass as `after` for the next page; null at the end.
    pub next: Option<String>,
    /// Rows in this page's range that did not decode.
    pub corrupt: Vec<CorruptRecord>,
}

/// What one reaper pass did.
#[napi(object, object_from_js = false)]
pub struct ReapReport {
    /// Expired leases moved back to pending (with backoff).
    pub expired: u32,
    /// Expired leases with no attempts left, now dead.
    pub dead: u32,
    /// Completed jobs pruned past their retention.
    pub pruned: u32,
    /// Records skipped because they did not decode.
    pub corrupt: Vec<CorruptRecord>,
}

/// Job counts per state.
#[napi(object, object_from_js = false)]
pub struct StateCounts {
    pub pending: i64,
    pub leased: i64,
    pub failed: i64,
    pub completed: i64,
    pub dead: i64,
}

impl From<telha_jobs::StateCounts> for StateCounts {
    fn from(c: telha_jobs::StateCounts) -> Self {
        StateCounts {
            pending: c.pending as i64,
            leased: c.leased as i64,
            failed: c.failed as i64,
            completed: c.completed as i64,
            dead: c.dead as i64,
        }
    }
}

/// Exact counts (kept in the same batches as the moves; never a scan).
#[napi(object, object_from_js = false)]
pub struct Stats {
    /// Counts over every kind.
    pub total: StateCounts,
    /// Counts per kind; kinds with no jobs left are omitted.
    #[napi(ts_type = "Record<string, StateCounts>")]
    pub by_kind: HashMap<String, StateCounts>,
}

/// What an enqueue did.
#[napi(object, object_from_js = false)]
pub struct Enqueued {
    /// The job's id (the existing job's when `created` is false).
    pub id: String,
    /// False when the idempotency key matched an existing job.
    pub created: bool,
}

/// Leased jobs on their way to JS in a few values instead of a dozen napi
/// calls per job, all built off the JS thread: the ids joined with `,`;
/// the numeric fields in one `Float64Array`, [`LeasedBatch::FIELDS`] per job
/// (attempts, maxAttempts, generation, deadline, priority, payload length);
/// the text fields (kind, scope, workerId) as indices into `strings`, the
/// batch's distinct values (usually three); every payload in one `Buffer`;
/// and the decoded payloads by index (holes where a payload is not the
/// convention). lib/telha.js assembles the `Job` objects.
#[napi(object, object_from_js = false)]
pub struct LeasedBatch {
    pub ids: String,
    #[napi(ts_type = "Float64Array")]
    pub nums: Copied<f64>,
    #[napi(ts_type = "Uint32Array")]
    pub refs: Copied<u32>,
    pub strings: Vec<String>,
    #[napi(ts_type = "Buffer")]
    pub payloads: Bytes,
    #[napi(ts_type = "unknown[]")]
    pub decoded: Decoded,
}

impl LeasedBatch {
    /// Numbers per job in `nums`.
    pub const FIELDS: usize = 6;

    /// Build the batch (call off the JS thread).
    pub fn from_core(jobs: Vec<telha_jobs::Job>) -> Self {
        use std::fmt::Write;
        let mut ids = String::with_capacity(jobs.len() * 37);
        let mut nums = Vec::with_capacity(jobs.len() * Self::FIELDS);
        let mut refs = Vec::with_capacity(jobs.len() * 3);
        let mut strings: Vec<String> = Vec::new();
        let mut payloads = Vec::with_capacity(jobs.iter().map(|j| j.payload.len()).sum());
        let mut decoded = Vec::with_capacity(jobs.len());
        let mut scope = String::new();
        for (i, j) in jobs.into_iter().enumerate() {
            if i > 0 {
                ids.push(',');
            }
            let _ = write!(ids, "{}", j.id);
            nums.extend_from_slice(&[
                j.attempts as f64,
                j.max_attempts as f64,
                j.generation as f64,
                j.deadline as f64,
                j.priority as f64,
                j.payload.len() as f64,
            ]);
            scope.clear();
            let _ = write!(scope, "{}", j.scope);
            for s in [j.kind.as_str(), scope.as_str(), j.worker_id.as_str()] {
                // A batch has few distinct values: a linear search beats hashing.
                let at = match strings.iter().position(|t| t == s) {
                    Some(at) => at,
                    None => {
                        strings.push(s.to_string());
                        strings.len() - 1
                    }
                };
                refs.push(at as u32);
            }
            decoded.push(telha_jobs::payload::decode(&j.payload));
            payloads.extend_from_slice(&j.payload);
        }
        LeasedBatch {
            ids,
            nums: Copied(nums),
            refs: Copied(refs),
            strings,
            payloads: Bytes(payloads),
            decoded: Decoded(decoded),
        }
    }
}

/// Numbers on their way to JS as a typed array over a fresh copy (cheaper
/// than napi's external array buffers, which register a finalizer each).
pub struct Copied<T>(pub Vec<T>);

/// The element types [`Copied`] crosses as.
pub trait Element: Copy {
    const KIND: sys::napi_typedarray_type;
    const NAME: &'static str;
}

impl Element for f64 {
    const KIND: sys::napi_typedarray_type = sys::TypedarrayType::float64_array;
    const NAME: &'static str = "Float64Array";
}

impl Element for u32 {
    const KIND: sys::napi_typedarray_type = sys::TypedarrayType::uint32_array;
    const NAME: &'static str = "Uint32Array";
}

impl<T: Element> TypeName for Copied<T> {
    fn type_name() -> &'static str {
        T::NAME
    }
    fn value_type() -> ValueType {
        ValueType::Object
    }
}

impl<T: Element> ToNapiValue for Copied<T> {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        let bytes = std::mem::size_of_val(val.0.as_slice());
        let mut data = std::ptr::null_mut();
        let mut buffer = std::ptr::null_mut();
        napi::check_status!(
            unsafe { sys::napi_create_arraybuffer(env, bytes, &mut data, &mut buffer) },
            "creating an ArrayBuffer"
        )?;
        if bytes > 0 {
            // SAFETY: napi allocated `bytes` writable bytes at `data`.
            unsafe {
                std::ptr::copy_nonoverlapping(val.0.as_ptr().cast::<u8>(), data.cast(), bytes)
            };
        }
        let mut out = std::ptr::null_mut();
        napi::check_status!(
            unsafe { sys::napi_create_typedarray(env, T::KIND, val.0.len(), buffer, 0, &mut out) },
            "creating a typed array"
        )?;
        Ok(out)
    }
}

/// Decoded payloads by index; `None` leaves a hole.
pub struct Decoded(Vec<Option<Value>>);

impl TypeName for Decoded {
    fn type_name() -> &'static str {
        "unknown[]"
    }
    fn value_type() -> ValueType {
        ValueType::Object
    }
}

impl ToNapiValue for Decoded {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        let mut arr = std::ptr::null_mut();
        napi::check_status!(
            unsafe { sys::napi_create_array_with_length(env, val.0.len(), &mut arr) },
            "creating the decoded payloads"
        )?;
        for (i, v) in val.0.into_iter().enumerate() {
            if let Some(v) = v {
                let e = unsafe { value_to_js(env, v) }?;
                napi::check_status!(
                    unsafe { sys::napi_set_element(env, arr, i as u32, e) },
                    "setting a decoded payload"
                )?;
            }
        }
        Ok(arr)
    }
}
