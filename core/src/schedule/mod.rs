//! Schedules: durable cron and interval jobs, exactly one job per slot.
//!
//! A [`Schedule`] lives in the store (the `schedules` column family, one
//! row per name). The engine's scheduler thread enqueues each due slot's
//! job in the same atomic batch that advances the schedule's cursor (the
//! instant up to which every slot has been dealt with), so a crash at any
//! moment yields each slot at most once and a restart yields it exactly
//! once; the job also carries an idempotency key made of the schedule's
//! name and its slot. A clock stepped backwards never re-enqueues a slot
//! (the cursor only moves forward); stepped forwards, or after downtime,
//! the missed slots are handled by the schedule's [`CatchUp`] policy.
//!
//! The operations are [`crate::Queue`] methods (`schedule_put`, …);
//! [`next_times`] evaluates a spec without a store.

#[cfg(feature = "rocksdb")]
mod queue;
pub(crate) mod record;
pub mod spec;

use std::collections::BTreeMap;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::ids::{JobId, Scope};
use crate::payload::Encoding;

pub use spec::{next_times, time_zone, Spec, MAX_NEXT_TIMES, MAX_SPEC_LEN, MIN_INTERVAL};

/// The longest schedule name, in bytes.
pub const MAX_NAME_LEN: usize = 200;

/// The default [`Schedule::max_catch_up`] of the `all` policy.
pub const DEFAULT_MAX_CATCH_UP: u32 = 100;

/// The largest [`Schedule::max_catch_up`].
pub const MAX_CATCH_UP_LIMIT: u32 = 10_000;

/// A slot is on time when it is at most this late (the `skip` policy
/// still runs it): the scheduler's own wake-up lag stays far below it.
pub const ON_TIME: Duration = Duration::from_secs(60);

/// The most missed slots a catch-up counts one by one (a cron spec's are
/// walked); past it, [`ScheduleInfo::skipped`] grows by this much.
pub const COUNT_CAP: u64 = 1_000_000;

/// What a schedule does with slots that passed while nothing ran them
/// (downtime, a clock stepped forward). The latest due slot that is on
/// time (at most [`ON_TIME`] late) is always run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
#[non_exhaustive]
pub enum CatchUp {
    /// Missed slots are not run; the next slot on time is.
    Skip,
    /// One job for all the missed slots (the latest one's, its record
    /// saying how many it stands for). The default.
    #[default]
    One,
    /// A job for every missed slot, the latest [`Schedule::max_catch_up`]
    /// of them; older ones are skipped.
    All,
}

impl CatchUp {
    /// Every policy.
    pub const ALL: [CatchUp; 3] = [CatchUp::Skip, CatchUp::One, CatchUp::All];

    /// `"skip"`, `"one"` or `"all"`.
    pub fn name(self) -> &'static str {
        match self {
            CatchUp::Skip => "skip",
            CatchUp::One => "one",
            CatchUp::All => "all",
        }
    }

    /// The policy named `s`; `InvalidArgument` for another name.
    pub fn parse(s: &str) -> Result<CatchUp> {
        CatchUp::ALL
            .into_iter()
            .find(|c| c.name() == s)
            .ok_or_else(|| {
                Error::invalid(format!(
                    "catch_up must be \"skip\", \"one\" or \"all\", got {s:?}"
                ))
            })
    }

    pub(crate) fn code(self) -> u64 {
        match self {
            CatchUp::Skip => 0,
            CatchUp::One => 1,
            CatchUp::All => 2,
        }
    }

    pub(crate) fn from_code(c: u64) -> Option<CatchUp> {
        CatchUp::ALL.into_iter().find(|p| p.code() == c)
    }
}

impl std::fmt::Display for CatchUp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A schedule as its owner writes it ([`crate::Queue::schedule_put`]).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Schedule {
    /// Unique within the store (1 to [`MAX_NAME_LEN`] bytes, no control
    /// characters).
    pub name: String,
    /// `"0 3 * * *"` (5 fields), `"*/10 * * * * *"` (6, seconds first),
    /// `"@daily"`, or `"every 5m"` (see [`spec`]).
    pub spec: String,
    /// The IANA time zone a cron spec is read in (`None`: UTC).
    pub timezone: Option<String>,
    /// An interval's grid: slots at `anchor + k × interval` (ms since the
    /// epoch; `None`: the epoch).
    pub anchor: Option<u64>,
    /// The kind of each job.
    pub kind: String,
    /// The payload of each job.
    pub payload: Vec<u8>,
    /// How the payload was made.
    pub encoding: Encoding,
    /// The scope of each job (`None`: the system scope).
    pub scope: Option<Scope>,
    /// The priority of each job (`None`: the default).
    pub priority: Option<u8>,
    /// Each job's `max_attempts` (`None`: its kind's or the store's).
    pub max_attempts: Option<u32>,
    /// Each job expires this long after its slot if no worker started it.
    pub expires_in: Option<Duration>,
    /// What happens to missed slots.
    pub catch_up: CatchUp,
    /// The most jobs the `all` policy enqueues for missed slots at once
    /// (`None`: [`DEFAULT_MAX_CATCH_UP`]; at most [`MAX_CATCH_UP_LIMIT`]).
    pub max_catch_up: Option<u32>,
    /// A paused schedule enqueues nothing; the slots that pass while it is
    /// paused are not caught up when it resumes.
    pub paused: bool,
    /// The tags of each job (see [`crate::EnqueueOptions::tags`]): at most
    /// 16, each 1 to 64 bytes without control characters; duplicates are
    /// removed when the schedule is put.
    pub tags: Vec<String>,
    /// The metadata of each job (see [`crate::EnqueueOptions::metadata`]):
    /// at most 4 KiB.
    pub metadata: BTreeMap<String, String>,
}

impl Schedule {
    /// A schedule named `name` enqueueing a `kind` job (empty payload) on
    /// `spec`; the rest default.
    pub fn new(name: impl Into<String>, spec: impl Into<String>, kind: impl Into<String>) -> Self {
        Schedule {
            name: name.into(),
            spec: spec.into(),
            kind: kind.into(),
            ..Schedule::default()
        }
    }

    /// Add tag `t` to each job (see [`Schedule::tags`]).
    pub fn tag(mut self, t: impl Into<String>) -> Self {
        self.tags.push(t.into());
        self
    }

    /// Set metadata `key` to `value` on each job (see [`Schedule::metadata`]).
    pub fn meta(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }

    /// Check everything but the job's fit to the store's limits (the
    /// engine checks those): the name, the spec with its zone and anchor,
    /// the kind, the tags and metadata, the numbers. Answers the parsed
    /// spec.
    pub fn validate(&self) -> Result<Spec> {
        validate_name(&self.name)?;
        crate::job::validate_kind(&self.kind)?;
        crate::tags::normalize_tags(&self.tags)?;
        crate::tags::validate_metadata(&self.metadata)?;
        if self.max_attempts == Some(0) {
            return Err(Error::invalid("max_attempts must be at least 1"));
        }
        if let Some(d) = self.expires_in {
            if d.is_zero() {
                return Err(Error::invalid("expires_in must be over zero, got 0"));
            }
            crate::limits::check_duration("expires_in", d)?;
        }
        if let Some(n) = self.max_catch_up {
            if n == 0 || n > MAX_CATCH_UP_LIMIT {
                return Err(Error::invalid(format!(
                    "max_catch_up must be 1 to {MAX_CATCH_UP_LIMIT}, got {n}"
                )));
            }
        }
        let spec = Spec::parse(&self.spec, self.timezone.as_deref(), self.anchor)?;
        Ok(spec)
    }

    /// The effective catch-up maximum.
    pub fn catch_up_limit(&self) -> u32 {
        self.max_catch_up.unwrap_or(DEFAULT_MAX_CATCH_UP)
    }
}

/// Check a schedule name: 1 to [`MAX_NAME_LEN`] bytes, no control
/// characters.
pub fn validate_name(name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(Error::invalid("schedule name is empty"));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(Error::invalid(format!(
            "schedule name is {} bytes, over the limit of {MAX_NAME_LEN}",
            name.len()
        )));
    }
    if name.chars().any(char::is_control) {
        return Err(Error::invalid(format!(
            "schedule name {name:?} holds a control character"
        )));
    }
    Ok(())
}

/// A schedule as the store holds it: what was put, and what it has done.
#[derive(Debug, Clone, PartialEq)]
pub struct ScheduleInfo {
    /// What was put (with `paused` as it is now).
    pub schedule: Schedule,
    /// When it was created, ms since the epoch.
    pub created_at: u64,
    /// When it was last put, paused or resumed.
    pub updated_at: u64,
    /// Every slot at or before this instant has been dealt with (enqueued
    /// or skipped); only later slots will be.
    pub cursor: u64,
    /// The latest slot a job was enqueued for.
    pub last_slot: Option<u64>,
    /// That job.
    pub last_job: Option<JobId>,
    /// When that job was enqueued (its lag is this minus `last_slot`).
    pub last_fired_at: Option<u64>,
    /// The next slot it will enqueue (`None`: never again).
    pub next_slot: Option<u64>,
    /// Jobs enqueued so far.
    pub enqueued: u64,
    /// Slots that got no job of their own (catch-up).
    pub skipped: u64,
    /// Why the latest slot could not be enqueued, if it could not (the
    /// store's limits changed since the schedule was put); cleared by the
    /// next slot enqueued.
    pub last_error: Option<String>,
}

/// A job's schedule: which one enqueued it, for which slot.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ScheduleRef {
    /// The schedule's name.
    pub name: String,
    /// The slot, ms since the epoch.
    pub slot: u64,
    /// How many earlier missed slots this job stands for (the `one`
    /// catch-up policy); 0 for a slot run on its own.
    pub missed: u64,
}

/// What one pass of the scheduler did ([`crate::Queue::run_schedules`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RunReport {
    /// Schedules that had due slots.
    pub schedules: u64,
    /// Jobs enqueued.
    pub enqueued: u64,
    /// Slots skipped by catch-up.
    pub skipped: u64,
    /// Slots whose job could not be enqueued (see
    /// [`ScheduleInfo::last_error`]).
    pub failed: u64,
}

/// The idempotency key of a schedule's job for `slot`.
pub fn idempotency_key(name: &str, slot: u64) -> String {
    format!("schedule:{name}:{slot}")
}
