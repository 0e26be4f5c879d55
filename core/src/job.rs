//! What the operations take and return.
//!
//! The vocabulary this builds on lives in its own modules and is
//! re-exported here and at the crate root: ids and scopes ([`crate::ids`]),
//! kinds ([`crate::kind`]), states ([`crate::state`]), events
//! ([`crate::event`]) and limits ([`crate::limits`]).

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::error::{Error, Result};
pub use crate::event::{Event, LogEntry};
pub use crate::ids::{JobId, Scope};
pub use crate::kind::{family, validate_kind, KindPattern};
pub use crate::limits::{
    validate_worker_id, MAX_IDEMPOTENCY_KEY_LEN, MAX_KIND_LEN, MAX_WORKER_ID_LEN,
};
pub use crate::list::{CorruptRecord, ListPage, ListQuery};
use crate::payload::Encoding;
pub use crate::state::{PerState, State, StateCounts};
pub use crate::unique_states::UniqueStates;

/// Options of one enqueue. All optional; see the field docs for defaults.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EnqueueOptions {
    /// Tenant scope; default the system (nil) scope.
    pub scope: Option<Scope>,
    /// 0 most urgent … 255 least; default 128.
    pub priority: Option<u8>,
    /// Not leasable before this time (ms since the epoch).
    pub run_at: Option<u64>,
    /// Not leasable before now + delay. `run_at` wins when both are set.
    pub delay: Option<Duration>,
    /// A repeated key in the same scope returns the existing job while its record exists.
    pub idempotency_key: Option<String>,
    /// Per-job attempt ceiling (over the per-kind and global ones).
    pub max_attempts: Option<u32>,
    /// How the payload was made, so every front end hands it back as it
    /// was given (default [`Encoding::Unknown`]: read by looking).
    pub encoding: Encoding,
    /// Never leased at or after this time (ms since the epoch): a job still
    /// waiting then goes dead, "expired before start". Must be in the
    /// future at enqueue. Wins over `expires_in`.
    pub expires_at: Option<u64>,
    /// `expires_at` as now + this, read on the queue's clock (over zero).
    pub expires_in: Option<Duration>,
    /// This job's backoff base (over zero, whole ms), over its kind's and
    /// the global one: its schedule is `base' = b`, `cap' = max(cap, b)`
    /// (the kind's factor and jitter apply).
    pub backoff_base: Option<Duration>,
    /// A window on the idempotency key (which it needs): a repeat of the
    /// key within this long of the enqueue that opened the window answers
    /// that job (`created: false`); after it, a new job opens a new window.
    /// Over zero; the window outlives the job's record.
    pub unique_for: Option<Duration>,
    /// Which states of the window's job hold the window (default
    /// [`UniqueStates::Any`]); only with `unique_for`.
    pub unique_states: Option<UniqueStates>,
    /// Tags to find the job by (`list` with [`ListQuery::tag`],
    /// `Queue::count_tag`): at most 16, each 1 to 64 bytes without control
    /// characters; duplicates are removed ([`crate::tags`]).
    pub tags: Vec<String>,
    /// Metadata kept with the job and returned with it, never indexed: at
    /// most 4 KiB ([`crate::tags::MAX_METADATA_BYTES`]).
    pub metadata: BTreeMap<String, String>,
    /// Debounce on the idempotency key (which it needs; over zero): the
    /// job runs this long after the latest enqueue of the key. While the
    /// key's job is pending, a repeat replaces its payload (and encoding)
    /// and moves its run time to now + this (`Enqueued::debounced`); once
    /// it was leased or finished, a repeat makes a new job. The run time
    /// is now + this; not with `run_at`, `delay` or `unique_for`.
    pub debounce: Option<Duration>,
    /// The longest a debounced job waits: its run time never moves past
    /// its first enqueue + this (at least `debounce`; only with it).
    /// Without it a steady stream of repeats postpones the job for as
    /// long as it lasts.
    pub debounce_max: Option<Duration>,
    /// Fan-in (issue 43): wait for these jobs (its *children*) to finish
    /// before becoming pending. The job is created `waiting` while any of
    /// them is unfinished; one already finished counts as done whatever
    /// its outcome; an unknown id is `NotFound` (nothing written). At most
    /// [`crate::fanin::MAX_AFTER`]; duplicates count once. Only on
    /// `enqueue`, `enqueue_many` and `enqueue_group` (not a follow-up, a
    /// schedule, or with `debounce`).
    pub after: Vec<JobId>,
    /// What a child that did not complete does to this job (default
    /// [`crate::fanin::ChildDeadPolicy::Fail`]); only with `after` or as a
    /// group's parent.
    pub on_child_dead: Option<crate::fanin::ChildDeadPolicy>,
    /// The job key (issue 43: flow control by key, e.g. a customer id):
    /// 1 to [`crate::flow::MAX_KEY_LEN`] bytes of UTF-8 without control
    /// characters. Limits on `key:<k>` and `key:*` count the key's leased
    /// jobs (keys are per scope); `ordered` ones lease them in enqueue order.
    pub key: Option<String>,
}

impl EnqueueOptions {
    /// Enqueue into tenant scope `s`. A `system:*` kind may only go to
    /// [`Scope::SYSTEM`].
    pub fn scope(mut self, s: Scope) -> Self {
        self.scope = Some(s);
        self
    }
    /// Priority `p`: 0 most urgent … 255 least (default 128).
    pub fn priority(mut self, p: u8) -> Self {
        self.priority = Some(p);
        self
    }
    /// Not leasable before `ms`, in ms since the Unix epoch. Wins over `delay`.
    pub fn run_at(mut self, ms: u64) -> Self {
        self.run_at = Some(ms);
        self
    }
    /// Not leasable before now + `d`, read on the queue's clock.
    pub fn delay(mut self, d: Duration) -> Self {
        self.delay = Some(d);
        self
    }
    /// Deduplicate on `k` (1 to 512 bytes) within the scope: while a job
    /// enqueued with `k` still exists (until it is pruned), a repeat returns
    /// that job's id with `created: false` and enqueues nothing.
    pub fn idempotency_key(mut self, k: impl Into<String>) -> Self {
        self.idempotency_key = Some(k.into());
        self
    }
    /// Dead after `n` failed attempts (`n` ≥ 1; 0 is `InvalidArgument` at
    /// enqueue), over the per-kind and global `max_attempts`.
    pub fn max_attempts(mut self, n: u32) -> Self {
        self.max_attempts = Some(n);
        self
    }
    /// Record how the payload was made ([`Encoding::Bytes`] for a caller's
    /// own bytes, [`Encoding::Value`] for [`crate::payload::encode`]d values).
    pub fn encoding(mut self, e: Encoding) -> Self {
        self.encoding = e;
        self
    }
    /// Never start at or after `ms` (ms since the epoch): see
    /// [`EnqueueOptions::expires_at`].
    pub fn expires_at(mut self, ms: u64) -> Self {
        self.expires_at = Some(ms);
        self
    }
    /// Never start once `d` has passed from now.
    pub fn expires_in(mut self, d: Duration) -> Self {
        self.expires_in = Some(d);
        self
    }
    /// Retry this job on a schedule starting at `d` (see
    /// [`EnqueueOptions::backoff_base`]); zero is `InvalidArgument`.
    pub fn backoff_base(mut self, d: Duration) -> Self {
        self.backoff_base = Some(d);
        self
    }
    /// A unique window of `d` on the idempotency key (see
    /// [`EnqueueOptions::unique_for`]).
    pub fn unique_for(mut self, d: Duration) -> Self {
        self.unique_for = Some(d);
        self
    }
    /// Which states hold the window (see [`UniqueStates`]).
    pub fn unique_states(mut self, s: UniqueStates) -> Self {
        self.unique_states = Some(s);
        self
    }
    /// Wait for `ids` to finish first (see [`EnqueueOptions::after`]).
    pub fn after(mut self, ids: impl IntoIterator<Item = JobId>) -> Self {
        self.after.extend(ids);
        self
    }
    /// The fan-in policy (see [`EnqueueOptions::on_child_dead`]).
    pub fn on_child_dead(mut self, p: crate::fanin::ChildDeadPolicy) -> Self {
        self.on_child_dead = Some(p);
        self
    }
    /// Give the job key `k` (see [`EnqueueOptions::key`]).
    pub fn key(mut self, k: impl Into<String>) -> Self {
        self.key = Some(k.into());
        self
    }
    /// Add tag `t` (see [`EnqueueOptions::tags`]).
    pub fn tag(mut self, t: impl Into<String>) -> Self {
        self.tags.push(t.into());
        self
    }
    /// Set metadata `key` to `value` (see [`EnqueueOptions::metadata`]).
    pub fn meta(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }
    /// `InvalidArgument` naming the field unless `debounce` and
    /// `debounce_max` are usable with the other options at `now` (what
    /// enqueue checks; for a front end that checks before it opens a store).
    #[cfg(feature = "rocksdb")]
    pub fn check_debounce(&self, now: u64) -> Result<()> {
        crate::engine::debounce::check(self, now)
    }
    /// Debounce the key's job by `d` (see [`EnqueueOptions::debounce`]).
    pub fn debounce(mut self, d: Duration) -> Self {
        self.debounce = Some(d);
        self
    }
    /// Never past the first enqueue + `d` (see
    /// [`EnqueueOptions::debounce_max`]).
    pub fn debounce_max(mut self, d: Duration) -> Self {
        self.debounce_max = Some(d);
        self
    }
}

/// One job for [`crate::Queue::enqueue_many`].
#[derive(Debug, Clone, PartialEq)]
pub struct NewJob {
    /// The kind: 1–64 bytes of lowercase ASCII letters, digits and `_ - . :`.
    pub kind: String,
    /// Opaque bytes, at most `max_payload_bytes`; moved into the store as is.
    pub payload: Vec<u8>,
    /// Scope, priority, run-at, idempotency key, attempt ceiling.
    pub options: EnqueueOptions,
}

impl NewJob {
    /// A job of `kind` with `payload` and default options.
    pub fn new(kind: impl Into<String>, payload: impl Into<Vec<u8>>) -> Self {
        NewJob {
            kind: kind.into(),
            payload: payload.into(),
            options: EnqueueOptions::default(),
        }
    }
    /// The same job with `options` (replacing the current ones).
    pub fn with(mut self, options: EnqueueOptions) -> Self {
        self.options = options;
        self
    }
}

/// What an enqueue did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Enqueued {
    /// The new job's id, or the existing job's when `created` is false.
    pub id: JobId,
    /// False when an idempotency key matched an existing job.
    pub created: bool,
    /// True when a `debounce` enqueue updated the key's pending job (its
    /// payload and run time); `created` is then false.
    pub debounced: bool,
}

impl Enqueued {
    /// The answer naming an existing job (`created` and `debounced` false).
    pub fn existing(id: JobId) -> Self {
        Enqueued {
            id,
            created: false,
            debounced: false,
        }
    }
}

/// Which jobs a poller takes, and how long it waits for one.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LeaseOptions {
    /// Scopes to take from; empty means every scope, round-robin.
    pub scopes: Vec<Scope>,
    /// Kinds to take (exact or `family:*`); empty means every kind.
    pub kinds: Vec<KindPattern>,
    /// Block up to this long for work (woken by enqueue, not by polling).
    pub wait: Option<Duration>,
    /// Ends the wait early when cancelled (from any thread).
    #[cfg(feature = "rocksdb")]
    pub cancel: Option<crate::cancel::CancelWait>,
}

impl LeaseOptions {
    /// Also take from scope `s` (once any scope is named, only named scopes
    /// are polled).
    pub fn scope(mut self, s: Scope) -> Self {
        self.scopes.push(s);
        self
    }
    /// Add a kind pattern (`"embed"` or `"ingest:*"`); `InvalidArgument`
    /// when it is not a valid kind or family.
    pub fn kind(mut self, pattern: &str) -> Result<Self> {
        self.kinds.push(pattern.parse()?);
        Ok(self)
    }
    /// Block up to `d` (real time, not the queue's clock) when no job is
    /// ready; `Duration::ZERO` does not wait.
    pub fn wait(mut self, d: Duration) -> Self {
        self.wait = Some(d);
        self
    }
    /// End the wait early when `c` is cancelled: the call then returns what
    /// it has (usually nothing), not an error.
    #[cfg(feature = "rocksdb")]
    pub fn cancel(mut self, c: crate::cancel::CancelWait) -> Self {
        self.cancel = Some(c);
        self
    }
}

/// The proof of a lease: the job id and the lease generation it was granted
/// under. Every settle call checks the generation; a stale one is `Aborted`.
/// Its text form (`Display` / `FromStr`) is `<job id>:<generation>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LeaseToken {
    /// The leased job.
    pub id: JobId,
    /// The generation this lease was granted under; every lease of the job
    /// bumps it, which fences out the holders of older leases.
    pub generation: u64,
}

impl fmt::Display for LeaseToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.id, self.generation)
    }
}

impl FromStr for LeaseToken {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let (id, g) = s
            .rsplit_once(':')
            .ok_or_else(|| Error::invalid(format!("malformed lease token {s:?}")))?;
        Ok(LeaseToken {
            id: id.parse()?,
            generation: g
                .parse()
                .map_err(|_| Error::invalid(format!("malformed lease token {s:?}")))?,
        })
    }
}

/// A leased job, as a worker sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// The job's id.
    pub id: JobId,
    /// The job's kind.
    pub kind: String,
    /// The tenant scope it was enqueued into.
    pub scope: Scope,
    /// The payload as enqueued (a copy the worker owns).
    pub payload: Vec<u8>,
    /// Failed attempts so far (this lease is attempt `attempts + 1`).
    pub attempts: u32,
    /// The effective ceiling (per job > per kind > global): when this lease
    /// is attempt `max_attempts`, a failure or expiry makes the job dead.
    pub max_attempts: u32,
    /// The lease generation; see [`Job::token`].
    pub generation: u64,
    /// Lease deadline, ms since the epoch, on the clock of the store's
    /// owner (for a remote queue, the server's).
    pub deadline: u64,
    /// The lease TTL this lease was granted with, in ms: heartbeat well
    /// within it (`deadline - now` is wrong when the clocks differ).
    pub lease_ttl_ms: u64,
    /// How the payload was made.
    pub payload_encoding: Encoding,
    /// 0 most urgent … 255 least.
    pub priority: u8,
    /// The worker the lease was granted to.
    pub worker_id: String,
    /// The kind's run-time limit in ms (`timeout`), when it has one: a
    /// Worker aborts a handler that runs longer and fails the job
    /// retryably.
    pub timeout_ms: Option<u64>,
    /// The schedule and slot that enqueued it, if a schedule did: which
    /// run of a timetable this lease is.
    pub schedule: Option<crate::schedule::ScheduleRef>,
    /// The job whose completion enqueued it (`Completion::then`), if one did.
    pub parent: Option<JobId>,
    /// Its tags, as enqueued (duplicates removed).
    pub tags: Vec<String>,
    /// Its metadata, as enqueued.
    pub metadata: BTreeMap<String, String>,
    /// Its job key, as enqueued (see [`EnqueueOptions::key`]).
    pub key: Option<String>,
}

impl Job {
    /// The lease token to pass to `extend`, `complete`, `fail` and `release`.
    pub fn token(&self) -> LeaseToken {
        LeaseToken {
            id: self.id,
            generation: self.generation,
        }
    }
}

/// Everything known about a job (for `get`, `list`, operators).
#[derive(Debug, Clone, PartialEq)]
pub struct JobInfo {
    /// The job's id.
    pub id: JobId,
    /// The tenant scope.
    pub scope: Scope,
    /// The job's kind.
    pub kind: String,
    /// The current state.
    pub state: State,
    /// 0 most urgent … 255 least.
    pub priority: u8,
    /// The state's timestamp: ready-at (pending), deadline (leased),
    /// retry-at (failed), or when it got there (completed, dead); ms since
    /// the epoch.
    pub state_ts: u64,
    /// Failed attempts so far (an operator `retry` resets it to 0).
    pub attempts: u32,
    /// The effective ceiling: the job's own `max_attempts` if it has one;
    /// else, once an attempt has failed, the ceiling that decided it (what
    /// the owner's config said then, recorded with the job); else the
    /// per-kind, then global `max_attempts` of this handle's config.
    pub max_attempts: u32,
    /// How many times the job has been leased (the current or last lease's
    /// generation).
    pub generation: u64,
    /// The worker of the current or last lease; `None` before the first
    /// lease and after a `retry`.
    pub worker_id: Option<String>,
    /// The lease deadline (ms since the epoch) while leased, else `None`.
    pub lease_deadline: Option<u64>,
    /// The payload as enqueued.
    pub payload: Vec<u8>,
    /// What `complete` was given, if anything.
    pub result: Option<Vec<u8>>,
    /// The reason of the latest failure or lease expiry (at most 4096 bytes).
    pub last_error: Option<String>,
    /// The idempotency key it was enqueued with.
    pub idempotency_key: Option<String>,
    /// When it was enqueued, ms since the epoch.
    pub created_at: u64,
    /// The event log, oldest first: one folded `attempt` entry per
    /// attempt whose own entries no longer fit (at most 1,000), then the
    /// newest entries in full (at most 64).
    pub events: Vec<LogEntry>,
    /// How many entries were dropped (not folded) to keep the log bounded.
    pub dropped_events: u32,
    /// How the payload was made.
    pub payload_encoding: Encoding,
    /// How the result was made.
    pub result_encoding: Encoding,
    /// This job's place in `list` order: pass it as [`ListQuery::after`]
    /// to list what comes after it.
    pub cursor: String,
    /// The reason of a cancel requested while the job is leased (its
    /// holder's next settle, or the lease's expiry, makes it cancelled).
    pub cancel_requested: Option<String>,
    /// Snoozes so far.
    pub snoozes: u32,
    /// When the job expires if it has not started (ms since the epoch).
    pub expires_at: Option<u64>,
    /// Whether its kind or its scope is paused right now.
    pub paused: bool,
    /// The latest progress its current or last lease reported with a
    /// heartbeat (payload convention bytes; at most
    /// [`crate::limits::MAX_PROGRESS_BYTES`]).
    pub progress: Option<Vec<u8>>,
    /// The schedule and slot that enqueued it, if a schedule did.
    pub schedule: Option<crate::schedule::ScheduleRef>,
    /// The job whose completion enqueued it (`Completion::then`), if one did.
    pub parent: Option<JobId>,
    /// Its tags, as enqueued (duplicates removed).
    pub tags: Vec<String>,
    /// Its metadata, as enqueued.
    pub metadata: BTreeMap<String, String>,
    /// A fan-in parent's children (enqueued with `after` or as a group's
    /// parent): unfinished, total, policy.
    pub fan_in: Option<crate::fanin::FanInInfo>,
    /// Its job key, as enqueued (see [`EnqueueOptions::key`]).
    pub key: Option<String>,
}

/// One completion for [`crate::Queue::complete_many`].
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    /// The lease being completed.
    pub token: LeaseToken,
    /// The result to keep with the job, if any (at most `max_payload_bytes`).
    pub result: Option<Vec<u8>>,
    /// How the result was made.
    pub encoding: Encoding,
    /// Follow-up jobs, enqueued in the same atomic batch as the
    /// completion: they exist if and only if the job completed (none when
    /// the completion is refused, or when a cancel request turns it into a
    /// cancel). Each records this job as its `parent`. At most
    /// [`crate::limits::MAX_BATCH`]; an idempotency key that names an
    /// existing job answers that job and creates none.
    pub then: Vec<NewJob>,
}

impl From<(LeaseToken, Option<Vec<u8>>)> for Completion {
    fn from((token, result): (LeaseToken, Option<Vec<u8>>)) -> Self {
        Completion::new(token, result)
    }
}

impl Completion {
    /// Complete `token` with `result` (its encoding not recorded).
    pub fn new(token: LeaseToken, result: Option<Vec<u8>>) -> Self {
        Completion {
            token,
            result,
            encoding: Encoding::Unknown,
            then: Vec::new(),
        }
    }

    /// The same completion with follow-up jobs (see [`Completion::then`]);
    /// with the `otel` feature each carries the current trace context.
    pub fn then(mut self, mut jobs: Vec<NewJob>) -> Self {
        crate::trace_context::inject_current_all(&mut jobs);
        self.then = jobs;
        self
    }
}

/// Exact counts, kept in the same batches as the moves (never a scan).
/// The totals and per-kind counts are whole; the per-scope counts are one
/// page ([`StatsQuery`](crate::StatsQuery); by default the 100 scopes with
/// the most pending jobs).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stats {
    /// Counts per kind; kinds with no jobs left are omitted.
    pub by_kind: std::collections::BTreeMap<String, StateCounts>,
    /// Counts per scope (tenant) for this page's scopes; scopes with no jobs
    /// left are omitted. [`Stats::scopes_ranked`] gives them in the page's
    /// order.
    pub by_scope: std::collections::BTreeMap<crate::ids::Scope, StateCounts>,
    /// More scopes follow: pass this as `StatsQuery::scopes_after` (same
    /// order) for the next page. `None`: this page is the last.
    pub scopes_next: Option<String>,
    /// The order the page was picked by.
    pub scope_order: crate::scopes::ScopeOrder,
    /// Counts over every kind.
    pub total: StateCounts,
    /// What is paused (kinds and scopes).
    pub paused: crate::control::Paused,
    /// Per kind with a job due now (pending or failed, past its run-at or
    /// retry time), how long its oldest such job has been ready, ms: read
    /// from the band heads when the stats were taken, never a scan, and
    /// only when [`StatsQuery::oldest_ready`](crate::StatsQuery) asked
    /// (empty otherwise). Kinds with nothing due are omitted. The ready backlog of a kind is its
    /// `pending + failed` in [`by_kind`](Self::by_kind).
    pub oldest_ready_ms: std::collections::BTreeMap<String, u64>,
}

impl Stats {
    /// This page's scopes in its order: for a count order the most first
    /// (ties by scope), for the name order by scope.
    pub fn scopes_ranked(&self) -> Vec<(crate::ids::Scope, StateCounts)> {
        crate::scopes::ranked(self.scope_order, &self.by_scope)
    }
}

/// What one reaper pass did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReapReport {
    /// Expired leases moved back to pending (with backoff).
    pub expired: usize,
    /// Expired leases that had no attempts left and went dead.
    pub dead: usize,
    /// Completed, dead and cancelled jobs pruned past their retention.
    pub pruned: usize,
    /// Jobs that expired before they started (moved to dead).
    pub expired_unstarted: usize,
    /// Records skipped because they did not decode.
    pub corrupt: Vec<CorruptRecord>,
}

/// What a `purge` deleted.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PurgeReport {
    /// Jobs deleted.
    pub purged: usize,
    /// Rows in range that did not decode (kept, not deleted).
    pub corrupt: Vec<CorruptRecord>,
}
