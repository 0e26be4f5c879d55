//! Schedules on a `NativeQueue` (issue 17): `schedulePut`, `scheduleGet`,
//! `scheduleList`, `scheduleDelete`, `schedulePause`, `scheduleResume` and
//! `runSchedules`, each one call of the core's `JobStore` (so an embedded
//! queue and a client of a server answer alike), and the store-free
//! `scheduleNextTimes`. The objects they answer (`ScheduleInfo`,
//! `RunReport`) and a job's `ScheduleRef` are here too.
//!
//! Numbers are range-checked like every other (`args.rs`): `anchor` and
//! `after` are instants, `expiresInMs` a duration, `priority`,
//! `maxAttempts`, `maxCatchUp` and `n` integers in their ranges; the rest
//! (the spec, the zone, the name, the kind, the catch-up policy) is the
//! core's to refuse, as `INVALID_ARGUMENT`.

use std::time::{SystemTime, UNIX_EPOCH};

use napi::bindgen_prelude::{AsyncTask, Env, Undefined, Unknown};
use napi::JsValue;
use napi_derive::napi;

use telha_jobs::schedule::{next_times, MAX_CATCH_UP_LIMIT, MAX_NEXT_TIMES};
use telha_jobs::{CatchUp, Schedule, Scope};

use crate::args::{instant_ms, priority, setting_ms, table_count, whole};
use crate::errors::Failure;
use crate::job::{count, encoding, time};
use crate::payload::{self, Bytes, OrNull, Payload};
use crate::queue::NativeQueue;
use crate::task::{guard, Op};

/// A schedule as lib/telha.js passes it to `schedulePut` (types checked
/// there; `anchor` already a number; the payload crosses beside it).
#[napi(object)]
pub struct NativeScheduleOptions {
    pub name: String,
    pub spec: String,
    pub kind: String,
    pub timezone: Option<String>,
    pub anchor: Option<f64>,
    pub scope: Option<String>,
    pub priority: Option<f64>,
    pub max_attempts: Option<f64>,
    pub expires_in_ms: Option<f64>,
    pub catch_up: Option<String>,
    pub max_catch_up: Option<f64>,
    pub paused: Option<bool>,
    pub tags: Option<Vec<String>>,
    pub metadata: Option<std::collections::HashMap<String, String>>,
}

/// The core's schedule of `o`, with `payload`'s bytes and encoding.
fn schedule_of(
    o: NativeScheduleOptions,
    (payload, encoding): (Vec<u8>, telha_jobs::Encoding),
) -> Result<Schedule, Failure> {
    let mut s = Schedule::new(o.name, o.spec, o.kind);
    s.timezone = o.timezone;
    s.anchor = o.anchor.map(|t| instant_ms(t, "anchor")).transpose()?;
    s.payload = payload;
    s.encoding = encoding;
    s.scope = o.scope.map(|x| x.parse::<Scope>()).transpose()?;
    s.priority = o.priority.map(|p| priority(p, "priority")).transpose()?;
    s.max_attempts = o
        .max_attempts
        .map(|n| Ok::<_, Failure>(table_count(n, "maxAttempts", "max_attempts")? as u32))
        .transpose()?;
    s.expires_in = o
        .expires_in_ms
        .map(|d| setting_ms(d, "expiresInMs"))
        .transpose()?;
    if let Some(c) = o.catch_up {
        s.catch_up = CatchUp::parse(&c)?;
    }
    s.max_catch_up = o
        .max_catch_up
        .map(|n| Ok::<_, Failure>(whole(n, "maxCatchUp", 1, MAX_CATCH_UP_LIMIT as u64)? as u32))
        .transpose()?;
    s.paused = o.paused.unwrap_or(false);
    s.tags = o.tags.unwrap_or_default();
    s.metadata = o.metadata.unwrap_or_default().into_iter().collect();
    Ok(s)
}

/// Which schedule enqueued a job, for which slot (`Job.schedule`,
/// `JobInfo.schedule`).
#[napi(object, object_from_js = false)]
pub struct ScheduleRef {
    /// The schedule's name.
    pub name: String,
    /// The slot the job was enqueued for, ms since the epoch.
    pub slot: f64,
    /// How many earlier missed slots this job stands for (the `'one'`
    /// catch-up policy); 0 for a slot run on its own.
    pub missed: f64,
}

impl ScheduleRef {
    pub fn from_core(r: telha_jobs::ScheduleRef) -> Self {
        ScheduleRef {
            name: r.name,
            slot: time(r.slot),
            missed: count(r.missed),
        }
    }
}

/// A schedule as the store holds it: what was put, and what it has done
/// (`schedulePut`, `scheduleGet`, `scheduleList`, `schedulePause`,
/// `scheduleResume`). Times are ms since the epoch; unset fields are null.
#[napi(object, object_from_js = false)]
pub struct ScheduleInfo {
    /// Unique within the store (1 to 200 bytes).
    pub name: String,
    /// The spec: `'0 3 * * *'`, `'*/10 * * * * *'` (seconds first),
    /// `'@daily'` or `'every 5m'`.
    pub spec: String,
    /// The IANA time zone a cron spec is read in; null: UTC.
    #[napi(ts_type = "string | null")]
    pub timezone: OrNull<String>,
    /// An interval's grid: slots at `anchor + k × interval`; null: the epoch.
    #[napi(ts_type = "number | null")]
    pub anchor: OrNull<f64>,
    /// The kind of each job.
    pub kind: String,
    /// The payload of each job, read as in `JobInfo.payload`.
    #[napi(ts_type = "unknown")]
    pub payload: Payload,
    /// The stored payload bytes.
    #[napi(ts_type = "Buffer")]
    pub payload_bytes: Bytes,
    /// How the payload was given (`'bytes'`, `'value'`, `'unknown'`).
    #[napi(ts_type = "'unknown' | 'bytes' | 'value'")]
    pub payload_encoding: String,
    /// The scope of each job; null: the system scope.
    #[napi(ts_type = "string | null")]
    pub scope: OrNull<String>,
    /// The priority of each job; null: the default.
    #[napi(ts_type = "number | null")]
    pub priority: OrNull<u32>,
    /// Each job's attempt ceiling; null: its kind's or the store's.
    #[napi(ts_type = "number | null")]
    pub max_attempts: OrNull<u32>,
    /// Each job expires this long after its slot if no worker started it
    /// (ms); null: never.
    #[napi(ts_type = "number | null")]
    pub expires_in_ms: OrNull<f64>,
    /// What happens to slots missed while nothing ran the scheduler.
    #[napi(ts_type = "'skip' | 'one' | 'all'")]
    pub catch_up: String,
    /// The most jobs `'all'` enqueues for missed slots at once; null: 100.
    #[napi(ts_type = "number | null")]
    pub max_catch_up: OrNull<u32>,
    /// A paused schedule enqueues nothing (and does not catch up on resume).
    pub paused: bool,
    /// The tags of each job (duplicates removed).
    pub tags: Vec<String>,
    /// The metadata of each job.
    pub metadata: std::collections::HashMap<String, String>,
    /// When it was created.
    pub created_at: f64,
    /// When it was last put, paused or resumed.
    pub updated_at: f64,
    /// Every slot at or before this instant has been dealt with.
    pub cursor: f64,
    /// The latest slot a job was enqueued for, or null.
    #[napi(ts_type = "number | null")]
    pub last_slot: OrNull<f64>,
    /// That job's id, or null.
    #[napi(ts_type = "string | null")]
    pub last_job: OrNull<String>,
    /// When that job was enqueued, or null.
    #[napi(ts_type = "number | null")]
    pub last_fired_at: OrNull<f64>,
    /// The next slot it will enqueue (kept while paused); null: never again.
    #[napi(ts_type = "number | null")]
    pub next_slot: OrNull<f64>,
    /// Jobs enqueued so far.
    pub enqueued: f64,
    /// Slots that got no job of their own (catch-up).
    pub skipped: f64,
    /// Why the latest slot could not be enqueued, or null.
    #[napi(ts_type = "string | null")]
    pub last_error: OrNull<String>,
}

impl ScheduleInfo {
    /// Convert a core record (call off the JS thread).
    pub fn from_core(i: telha_jobs::ScheduleInfo) -> Self {
        let s = i.schedule;
        ScheduleInfo {
            name: s.name,
            spec: s.spec,
            timezone: OrNull(s.timezone),
            anchor: OrNull(s.anchor.map(time)),
            kind: s.kind,
            payload_bytes: Bytes(s.payload.clone()),
            payload: Payload::new(s.payload, s.encoding),
            payload_encoding: encoding(s.encoding),
            scope: OrNull(s.scope.map(|x| x.to_string())),
            priority: OrNull(s.priority.map(u32::from)),
            max_attempts: OrNull(s.max_attempts),
            expires_in_ms: OrNull(
                s.expires_in
                    .map(|d| count(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))),
            ),
            catch_up: s.catch_up.name().to_string(),
            max_catch_up: OrNull(s.max_catch_up),
            paused: s.paused,
            tags: s.tags,
            metadata: s.metadata.into_iter().collect(),
            created_at: time(i.created_at),
            updated_at: time(i.updated_at),
            cursor: time(i.cursor),
            last_slot: OrNull(i.last_slot.map(time)),
            last_job: OrNull(i.last_job.map(|j| j.to_string())),
            last_fired_at: OrNull(i.last_fired_at.map(time)),
            next_slot: OrNull(i.next_slot.map(time)),
            enqueued: count(i.enqueued),
            skipped: count(i.skipped),
            last_error: OrNull(i.last_error),
        }
    }
}

/// What one scheduler pass did (`runSchedules`).
#[napi(object, object_from_js = false)]
pub struct RunReport {
    /// Schedules that had due slots.
    pub schedules: f64,
    /// Jobs enqueued.
    pub enqueued: f64,
    /// Slots skipped by catch-up.
    pub skipped: f64,
    /// Slots whose job could not be enqueued (see `ScheduleInfo.lastError`).
    pub failed: f64,
}

type Info = Op<telha_jobs::ScheduleInfo, ScheduleInfo>;

#[napi]
impl NativeQueue {
    /// Create or replace the schedule `options.name`; `payload` is each
    /// job's payload (the enqueue convention).
    #[napi(
        ts_args_type = "options: NativeScheduleOptions, payload: unknown",
        ts_return_type = "Promise<ScheduleInfo>"
    )]
    pub fn schedule_put(
        &self,
        env: Env,
        options: NativeScheduleOptions,
        payload: Unknown,
    ) -> napi::Result<AsyncTask<Info>> {
        guard(&env, "schedulePut", || {
            // SAFETY: live handles of this call.
            let bytes =
                unsafe { payload::bytes_from_js(env.raw(), payload.raw(), || "payload".into()) }?;
            let s = schedule_of(options, bytes)?;
            let q = self.store().clone();
            Ok(Op::task(
                "schedulePut",
                move || Ok(q.schedule_put(&s)?),
                ScheduleInfo::from_core,
            ))
        })
    }

    /// The schedule `name`; `NOT_FOUND` when there is none.
    #[napi(ts_return_type = "Promise<ScheduleInfo>")]
    pub fn schedule_get(&self, name: String) -> AsyncTask<Info> {
        let q = self.store().clone();
        Op::task(
            "scheduleGet",
            move || Ok(q.schedule_get(&name)?),
            ScheduleInfo::from_core,
        )
    }

    /// Every schedule, by name.
    #[napi(ts_return_type = "Promise<ScheduleInfo[]>")]
    pub fn schedule_list(&self) -> AsyncTask<Op<Vec<telha_jobs::ScheduleInfo>, Vec<ScheduleInfo>>> {
        let q = self.store().clone();
        Op::task(
            "scheduleList",
            move || Ok(q.schedule_list()?),
            |v| v.into_iter().map(ScheduleInfo::from_core).collect(),
        )
    }

    /// Remove the schedule `name` (its jobs stay); `NOT_FOUND` when there
    /// is none.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn schedule_delete(&self, name: String) -> AsyncTask<Op<(), Undefined>> {
        let q = self.store().clone();
        Op::task(
            "scheduleDelete",
            move || Ok(q.schedule_delete(&name)?),
            |_| (),
        )
    }

    /// Pause the schedule `name` (idempotent); `NOT_FOUND` when there is none.
    #[napi(ts_return_type = "Promise<ScheduleInfo>")]
    pub fn schedule_pause(&self, name: String) -> AsyncTask<Info> {
        let q = self.store().clone();
        Op::task(
            "schedulePause",
            move || Ok(q.schedule_pause(&name)?),
            ScheduleInfo::from_core,
        )
    }

    /// Resume the schedule `name` from now (no catch-up of the paused
    /// time); `NOT_FOUND` when there is none.
    #[napi(ts_return_type = "Promise<ScheduleInfo>")]
    pub fn schedule_resume(&self, name: String) -> AsyncTask<Info> {
        let q = self.store().clone();
        Op::task(
            "scheduleResume",
            move || Ok(q.schedule_resume(&name)?),
            ScheduleInfo::from_core,
        )
    }

    /// One scheduler pass now: enqueue every due slot.
    #[napi(ts_return_type = "Promise<RunReport>")]
    pub fn run_schedules(&self) -> AsyncTask<Op<RunReport, RunReport>> {
        let q = self.store().clone();
        Op::task(
            "runSchedules",
            move || {
                let r = q.run_schedules()?;
                Ok(RunReport {
                    schedules: count(r.schedules),
                    enqueued: count(r.enqueued),
                    skipped: count(r.skipped),
                    failed: count(r.failed),
                })
            },
            |v| v,
        )
    }
}

/// `scheduleNextTimes` (lib.rs): the next `n` (default 5) times `spec`
/// fires after `after` (default now), in ms since the epoch.
pub fn next_times_js(
    spec: &str,
    timezone: Option<&str>,
    anchor: Option<f64>,
    after: Option<f64>,
    n: Option<f64>,
) -> Result<Vec<f64>, Failure> {
    let anchor = anchor.map(|t| instant_ms(t, "anchor")).transpose()?;
    let after = match after {
        Some(t) => instant_ms(t, "after")?,
        None => SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
            .unwrap_or(0),
    };
    let n = match n {
        Some(n) => whole(n, "n", 0, MAX_NEXT_TIMES as u64)? as usize,
        None => 5,
    };
    let times = next_times(spec, timezone, anchor, after, n)?;
    Ok(times.into_iter().map(time).collect())
}
