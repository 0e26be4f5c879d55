//! The objects JS receives: `Job` (a lease), `JobInfo` (everything about a
//! job), and the reports of `list`, `reap` and `stats`. Field names are the
//! Python package's, camelCased. Times are ms since the epoch, every one a
//! safe integer: the core stores none after `MAX_INSTANT_MS`
//! (9999-12-31T23:59:59.999Z), and a row written before that limit with a
//! later time reads as that maximum ([`time`]), never as a wrapped number.

use std::collections::HashMap;

use napi_derive::napi;
use telha_jobs::limits::MAX_INSTANT_MS;
use telha_jobs::Encoding;

use crate::args::MAX_SAFE;
use crate::control::Paused;
use crate::fanin::FanIn;
use crate::payload::{Bytes, OrNull, Payload};
use crate::schedule::ScheduleRef;

/// A stored time for JS: at most [`MAX_INSTANT_MS`], exact in a double.
pub fn time(t: u64) -> f64 {
    t.min(MAX_INSTANT_MS) as f64
}

/// A counter for JS (a generation, a count): at most 2^53 - 1.
pub fn count(n: u64) -> f64 {
    n.min(MAX_SAFE) as f64
}

/// The encoding's name: `unknown`, `bytes` or `value`.
pub fn encoding(e: telha_jobs::Encoding) -> String {
    e.as_str().to_string()
}

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
    /// The payload as it was enqueued: a `Buffer` for bytes, the value for
    /// a plain value (the msgpack convention); for a job enqueued without
    /// its encoding recorded (`payloadEncoding` `'unknown'`: C, Rust, or
    /// before the encoding was kept) the decoded value when the bytes
    /// follow the convention, else the bytes.
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
    /// How the payload was enqueued: `'bytes'` (a Buffer), `'value'` (a
    /// plain value) or `'unknown'` (not recorded).
    #[napi(ts_type = "'unknown' | 'bytes' | 'value'")]
    pub payload_encoding: String,
    /// The lease generation: every lease bumps it, fencing out older holders.
    pub generation: f64,
    /// The lease deadline, ms since the epoch, on the clock of the store's
    /// owner (for a remote queue, the server's).
    pub deadline: f64,
    /// The TTL this lease was granted with, in ms: heartbeat well within
    /// it (the Worker sends one every third of it).
    pub lease_ttl_ms: f64,
    /// 0 most urgent … 255 least.
    pub priority: u32,
    /// The worker the lease was granted to.
    pub worker_id: String,
    /// The kind's run-time limit (`timeoutMs`), or null (lib/telha.js sets
    /// it on every job): the Worker aborts
    /// a handler running longer (its signal's reason has code `TIMEOUT`)
    /// and fails the job retryably.
    #[napi(ts_type = "number | null")]
    pub timeout_ms: f64,
    /// The schedule that enqueued it and for which slot, or null for a job
    /// enqueued by a call.
    #[napi(ts_type = "ScheduleRef | null")]
    pub schedule: OrNull<ScheduleRef>,
    /// The id of the job whose completion enqueued it (`complete(job,
    /// result, { then })`), or null.
    #[napi(ts_type = "string | null")]
    pub parent: OrNull<String>,
    /// Its tags, as enqueued (duplicates removed; `list({ tag })` and
    /// `countTag(tag)` find it by them).
    pub tags: Vec<String>,
    /// Its metadata (string to string), as enqueued; never indexed.
    #[napi(ts_type = "Record<string, string>")]
    pub metadata: std::collections::HashMap<String, String>,
    /// Its job key (flow control by key: `key:<k>` / `key:*` limits), or null.
    #[napi(ts_type = "string | null")]
    pub key: OrNull<String>,
}

/// One entry of a job's event log.
#[napi(object, object_from_js = false)]
pub struct JobEvent {
    /// When, ms since the epoch.
    pub ts: f64,
    /// `enqueued`, `leased`, `completed`, `failed`, `dead`, `lease_expired`,
    /// `released`, `retried`, `cancelled`, `cancel_requested`, `snoozed`
    /// or `expired`; `attempt` for an older attempt folded into
    /// one entry (its detail sums it up).
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
    /// `pending`, `leased`, `failed`, `completed`, `dead`, `cancelled` or
    /// `waiting` (a fan-in parent whose children have not all finished).
    #[napi(
        ts_type = "'pending' | 'leased' | 'failed' | 'completed' | 'dead' | 'cancelled' | 'waiting'"
    )]
    pub state: String,
    /// 0 most urgent … 255 least.
    pub priority: u32,
    /// The state's time: ready-at (pending), deadline (leased), retry-at
    /// (failed), or when it got there (completed, dead, cancelled); ms
    /// since the epoch.
    pub state_ts: f64,
    /// Failed attempts so far (an operator `retry` resets it).
    pub attempts: u32,
    /// The effective ceiling (per job > per kind > global).
    pub max_attempts: u32,
    /// How many times the job has been leased.
    pub generation: f64,
    /// The worker of the current or last lease.
    pub worker_id: Option<String>,
    /// The lease deadline while leased.
    pub lease_deadline: Option<f64>,
    /// The payload, read as in `Job.payload`.
    #[napi(ts_type = "unknown")]
    pub payload: Payload,
    /// The stored payload bytes.
    #[napi(ts_type = "Buffer")]
    pub payload_bytes: Bytes,
    /// How the payload was enqueued (`'bytes'`, `'value'`, `'unknown'`).
    #[napi(ts_type = "'unknown' | 'bytes' | 'value'")]
    pub payload_encoding: String,
    /// What `complete` was given (read like the payload: a `Buffer` stays a
    /// `Buffer`), or null.
    #[napi(ts_type = "unknown")]
    pub result: Option<Payload>,
    /// The stored result bytes, or null.
    #[napi(ts_type = "Buffer")]
    pub result_bytes: Option<Bytes>,
    /// How the result was given (`'unknown'` when there is none or it was
    /// not recorded).
    #[napi(ts_type = "'unknown' | 'bytes' | 'value'")]
    pub result_encoding: String,
    /// The reason of the latest failure or lease expiry.
    pub last_error: Option<String>,
    /// The idempotency key it was enqueued with.
    pub idempotency_key: Option<String>,
    /// When it was enqueued, ms since the epoch.
    pub created_at: f64,
    /// The event log, oldest first: one folded `attempt` entry per older
    /// attempt whose own entries no longer fit, then the newest entries in
    /// full.
    pub events: Vec<JobEvent>,
    /// How many entries were dropped (not folded) to keep the log bounded.
    pub dropped_events: u32,
    /// This job's place in `list` order: pass it as `after` to list what
    /// comes after it.
    pub cursor: String,
    /// The reason of a cancel requested while the job is leased (its
    /// holder's next settle, or the lease's expiry, makes it cancelled);
    /// absent otherwise.
    pub cancel_requested: Option<String>,
    /// Snoozes so far.
    pub snoozes: u32,
    /// When the job expires if it has not started (ms since the epoch);
    /// absent when it has no expiry.
    pub expires_at: Option<f64>,
    /// Whether its kind or its scope is paused right now.
    pub paused: bool,
    /// The latest progress its current or last lease reported with a
    /// heartbeat (`extend(jobs, workerId, { progress })`, a Worker's
    /// `ctx.progress(value)`), decoded by looking at it (a value reads back
    /// as that value, other bytes as a `Buffer`); null when none (a new
    /// lease clears it).
    #[napi(ts_type = "unknown")]
    pub progress: OrNull<Payload>,
    /// The stored progress bytes, or null.
    #[napi(ts_type = "Buffer | null")]
    pub progress_bytes: OrNull<Bytes>,
    /// The schedule that enqueued it and for which slot (`list({ schedule
    /// })` filters by its name), or null for a job enqueued by a call.
    #[napi(ts_type = "ScheduleRef | null")]
    pub schedule: OrNull<ScheduleRef>,
    /// The id of the job whose completion enqueued it (`list({ parent })`
    /// lists a job's follow-ups), or null.
    #[napi(ts_type = "string | null")]
    pub parent: OrNull<String>,
    /// Its tags, as enqueued (duplicates removed; `list({ tag })` and
    /// `countTag(tag)` find it by them).
    pub tags: Vec<String>,
    /// Its metadata (string to string), as enqueued; never indexed.
    #[napi(ts_type = "Record<string, string>")]
    pub metadata: std::collections::HashMap<String, String>,
    /// A fan-in parent's children (enqueued with `after` or by
    /// `enqueueGroup`), or null.
    #[napi(ts_type = "FanIn | null")]
    pub fan_in: OrNull<FanIn>,
    /// Its job key (flow control by key: `key:<k>` / `key:*` limits), or null.
    #[napi(ts_type = "string | null")]
    pub key: OrNull<String>,
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
            state_ts: time(j.state_ts),
            attempts: j.attempts,
            max_attempts: j.max_attempts,
            generation: count(j.generation),
            worker_id: j.worker_id,
            lease_deadline: j.lease_deadline.map(time),
            payload_bytes: Bytes(j.payload.clone()),
            payload: Payload::new(j.payload, j.payload_encoding),
            payload_encoding: encoding(j.payload_encoding),
            result_bytes: j.result.clone().map(Bytes),
            result: j.result.map(|r| Payload::new(r, j.result_encoding)),
            result_encoding: encoding(j.result_encoding),
            last_error: j.last_error,
            idempotency_key: j.idempotency_key,
            created_at: time(j.created_at),
            events: j
                .events
                .into_iter()
                .map(|e| JobEvent {
                    ts: time(e.ts),
                    transition: e.transition,
                    detail: e.detail,
                })
                .collect(),
            dropped_events: j.dropped_events,
            cursor: j.cursor,
            cancel_requested: j.cancel_requested,
            snoozes: j.snoozes,
            expires_at: j.expires_at.map(time),
            paused: j.paused,
            progress_bytes: OrNull(j.progress.clone().map(Bytes)),
            progress: OrNull(j.progress.map(|p| Payload::new(p, Encoding::Unknown))),
            schedule: OrNull(j.schedule.map(ScheduleRef::from_core)),
            parent: OrNull(j.parent.map(|p| p.to_string())),
            tags: j.tags,
            metadata: j.metadata.into_iter().collect(),
            fan_in: OrNull(j.fan_in.as_ref().map(FanIn::from_core)),
            key: OrNull(j.key),
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
    /// Pass as `after` for the next page; null at the end (a page shorter
    /// than `limit` with a `next` stopped after a million rows read).
    #[napi(ts_type = "string | null")]
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
    /// Completed, dead and cancelled jobs pruned past their retention.
    pub pruned: u32,
    /// Jobs that expired before they started (now dead).
    pub expired_unstarted: u32,
    /// Records skipped because they did not decode.
    pub corrupt: Vec<CorruptRecord>,
}

/// Job counts per state.
#[napi(object, object_from_js = false)]
pub struct StateCounts {
    pub pending: f64,
    pub leased: f64,
    pub failed: f64,
    pub completed: f64,
    pub dead: f64,
    pub cancelled: f64,
    /// Fan-in parents waiting on their children.
    pub waiting: f64,
}

impl From<telha_jobs::StateCounts> for StateCounts {
    fn from(c: telha_jobs::StateCounts) -> Self {
        StateCounts {
            pending: count(c.pending),
            leased: count(c.leased),
            failed: count(c.failed),
            completed: count(c.completed),
            dead: count(c.dead),
            cancelled: count(c.cancelled),
            waiting: count(c.waiting),
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
    /// Counts per scope (its UUID) of this page; scopes with no jobs left
    /// are omitted. (The JS wrapper rebuilds it from `scopes`, in order.)
    #[napi(ts_type = "Record<string, StateCounts>")]
    pub by_scope: HashMap<String, StateCounts>,
    /// The same page in its order: the most first, or by scope id.
    pub scopes: Vec<ScopeCounts>,
    /// The order the page was picked by: pending, leased, dead or name.
    pub scope_order: String,
    /// More scopes follow: pass as `scopesAfter`; null on the last page.
    pub scopes_next: Option<String>,
    /// What is paused (kinds and families, scopes).
    pub paused: Paused,
    /// Per kind with a job due now, how long its oldest such job has been
    /// ready, ms (exact, from the band heads); filled only when asked with
    /// `oldestReady: true`, empty otherwise.
    #[napi(ts_type = "Record<string, number>")]
    pub oldest_ready_ms: HashMap<String, f64>,
}

/// One scope's counts in `stats().scopes`.
#[napi(object, object_from_js = false)]
pub struct ScopeCounts {
    /// The scope's UUID.
    pub scope: String,
    /// Its counts.
    pub counts: StateCounts,
}

/// What an enqueue did.
#[napi(object, object_from_js = false)]
pub struct Enqueued {
    /// The job's id (the existing job's when `created` is false).
    pub id: String,
    /// False when the idempotency key matched an existing job.
    pub created: bool,
    /// True when a `debounceMs` enqueue updated the key's pending job (its
    /// payload and run time).
    pub debounced: bool,
}
