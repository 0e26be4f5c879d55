//! The public vocabulary: ids, scopes, kinds, states, and what the operations
//! take and return.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use uuid::Uuid;

use crate::error::{Error, Result};

/// A job's id: a UUIDv7 (time-ordered). Its text form is the canonical UUID string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JobId(pub(crate) Uuid);

impl JobId {
    /// A UUIDv7 (RFC 9562, method 3): 48 bits of Unix ms, then a counter
    /// seeded at random each millisecond, so ids are unique and strictly
    /// increasing within the process (FIFO within a millisecond) without a
    /// getrandom call per id.
    pub(crate) fn new_v7() -> Self {
        use std::sync::Mutex;
        static STATE: Mutex<(u64, u128)> = Mutex::new((0, 0));
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        let mut st = STATE.lock().unwrap_or_else(|p| p.into_inner());
        // 74 bits of counter below the timestamp (the version and variant
        // bits are cut out of them when the id is assembled).
        let counter = if now > st.0 {
            st.0 = now;
            seed() & ((1u128 << 73) - 1) // top bit clear: room to count up
        } else {
            st.1.wrapping_add(1)
        };
        st.1 = counter;
        let ms = st.0 as u128 & ((1 << 48) - 1);
        drop(st);
        let rand_a = (counter >> 62) & 0xFFF;
        let rand_b = counter & ((1u128 << 62) - 1);
        let v = (ms << 80) | (0x7 << 76) | (rand_a << 64) | (0b10 << 62) | rand_b;
        JobId(Uuid::from_u128(v))
    }
    /// The id with these 16 bytes (big-endian UUID layout, as in row keys).
    /// Any bytes are accepted; whether such a job exists is up to the store.
    pub fn from_bytes(b: [u8; 16]) -> Self {
        JobId(Uuid::from_bytes(b))
    }
    /// The 16 bytes, as stored in row keys.
    pub fn as_bytes(&self) -> &[u8; 16] {
        self.0.as_bytes()
    }
    /// The id as a [`Uuid`].
    pub fn as_uuid(&self) -> Uuid {
        self.0
    }
}

/// 128 bits of per-process randomness, refreshed cheaply (std's hasher keys
/// come from the OS once; a counter makes each call differ).
fn seed() -> u128 {
    use std::hash::BuildHasher;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::OnceLock;
    static KEYS: OnceLock<std::collections::hash_map::RandomState> = OnceLock::new();
    static N: AtomicU64 = AtomicU64::new(0);
    let k = KEYS.get_or_init(std::collections::hash_map::RandomState::new);
    let n = N.fetch_add(1, Ordering::Relaxed);
    ((k.hash_one(n) as u128) << 64) | k.hash_one(!n) as u128
}

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.hyphenated().fmt(f)
    }
}

impl FromStr for JobId {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Uuid::parse_str(s.trim())
            .map(JobId)
            .map_err(|e| Error::invalid(format!("malformed job id {s:?}: {e}")))
    }
}

/// A tenant scope: a 16-byte UUID. The nil UUID is the system scope, the only
/// home of `system:*` kinds and the default when an enqueue names no scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Scope(pub(crate) Uuid);

impl Scope {
    /// The system scope (nil UUID).
    pub const SYSTEM: Scope = Scope(Uuid::nil());

    /// The scope of tenant `u`; the nil UUID is [`Scope::SYSTEM`].
    pub fn from_uuid(u: Uuid) -> Self {
        Scope(u)
    }
    /// The scope with these 16 bytes (big-endian UUID layout, as in row keys).
    pub fn from_bytes(b: [u8; 16]) -> Self {
        Scope(Uuid::from_bytes(b))
    }
    /// The 16 bytes, as stored in row keys.
    pub fn as_bytes(&self) -> &[u8; 16] {
        self.0.as_bytes()
    }
    /// True for the system (nil) scope, the only home of `system:*` kinds.
    pub fn is_system(&self) -> bool {
        self.0.is_nil()
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.hyphenated().fmt(f)
    }
}

impl FromStr for Scope {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Uuid::parse_str(s.trim())
            .map(Scope)
            .map_err(|e| Error::invalid(format!("malformed scope {s:?}: {e}")))
    }
}

/// The largest kind, in bytes.
pub const MAX_KIND_LEN: usize = 64;
/// The largest idempotency key, in bytes.
pub const MAX_IDEMPOTENCY_KEY_LEN: usize = 512;
/// The largest worker id, in bytes.
pub const MAX_WORKER_ID_LEN: usize = 256;

/// Check a kind: 1–64 bytes of lowercase ASCII letters, digits and `_ - . :`.
pub fn validate_kind(kind: &str) -> Result<()> {
    if kind.is_empty() || kind.len() > MAX_KIND_LEN {
        return Err(Error::invalid(format!(
            "kind must be 1 to {MAX_KIND_LEN} bytes, got {} ({kind:?})",
            kind.len()
        )));
    }
    if let Some(c) = kind
        .chars()
        .find(|c| !matches!(c, 'a'..='z' | '0'..='9' | '_' | '-' | '.' | ':'))
    {
        return Err(Error::invalid(format!(
            "kind {kind:?} has {c:?}; kinds use lowercase ASCII letters, digits and _ - . :"
        )));
    }
    Ok(())
}

/// The part of a kind before its first `:` (the whole kind when it has none).
pub fn family(kind: &str) -> &str {
    kind.split(':').next().unwrap_or(kind)
}

pub(crate) fn validate_worker_id(w: &str) -> Result<()> {
    if w.is_empty() || w.len() > MAX_WORKER_ID_LEN {
        return Err(Error::invalid(format!(
            "worker id must be 1 to {MAX_WORKER_ID_LEN} bytes, got {}",
            w.len()
        )));
    }
    Ok(())
}

/// One element of a kind filter: an exact kind, or a family (`ingest:*`).
/// Build it with `str::parse`, which validates the kind syntax
/// (`InvalidArgument` otherwise); the variants themselves are not checked.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum KindPattern {
    /// Matches this kind only.
    Exact(String),
    /// Matches the kind equal to the family and every kind starting `family:`.
    Family(String),
}

impl KindPattern {
    /// Whether a job of `kind` is selected by this pattern.
    pub fn matches(&self, kind: &str) -> bool {
        match self {
            KindPattern::Exact(k) => k == kind,
            KindPattern::Family(f) => family(kind) == f,
        }
    }
}

impl FromStr for KindPattern {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        if let Some(f) = s.strip_suffix(":*") {
            validate_kind(f)?;
            if f.contains(':') {
                return Err(Error::invalid(format!(
                    "kind pattern {s:?}: a family is the part before the first ':'"
                )));
            }
            Ok(KindPattern::Family(f.to_string()))
        } else {
            validate_kind(s)?;
            Ok(KindPattern::Exact(s.to_string()))
        }
    }
}

impl fmt::Display for KindPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KindPattern::Exact(k) => f.write_str(k),
            KindPattern::Family(fam) => write!(f, "{fam}:*"),
        }
    }
}

/// A job's state. The byte is part of the row key and never changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum State {
    /// Waiting for a worker; leasable from its ready-at.
    Pending,
    /// Held by a worker until its lease deadline.
    Leased,
    /// Failed retryably; leasable again from its retry-at.
    Failed,
    /// Done; pruned once older than `completed_retention`.
    Completed,
    /// Out of attempts or failed as not retryable; kept until an operator
    /// `retry`.
    Dead,
}

impl State {
    /// Every state, in the order of their stable bytes (pending 1 … dead 5).
    pub const ALL: [State; 5] = [
        State::Pending,
        State::Leased,
        State::Failed,
        State::Completed,
        State::Dead,
    ];

    /// The lowercase name (`"pending"`, …), which `str::parse` reads back.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Pending => "pending",
            State::Leased => "leased",
            State::Failed => "failed",
            State::Completed => "completed",
            State::Dead => "dead",
        }
    }

    pub(crate) fn byte(self) -> u8 {
        match self {
            State::Pending => 1,
            State::Leased => 2,
            State::Failed => 3,
            State::Completed => 4,
            State::Dead => 5,
        }
    }

    pub(crate) fn from_byte(b: u8) -> Option<State> {
        Some(match b {
            1 => State::Pending,
            2 => State::Leased,
            3 => State::Failed,
            4 => State::Completed,
            5 => State::Dead,
            _ => return None,
        })
    }

    pub(crate) fn index(self) -> usize {
        self.byte() as usize - 1
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for State {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        State::ALL
            .into_iter()
            .find(|st| st.as_str() == s)
            .ok_or_else(|| {
                Error::invalid(format!(
                    "unknown state {s:?}; one of pending, leased, failed, completed, dead"
                ))
            })
    }
}

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
    /// Lease deadline, ms since the epoch.
    pub deadline: u64,
    /// 0 most urgent … 255 least.
    pub priority: u8,
    /// The worker the lease was granted to.
    pub worker_id: String,
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

/// One entry of a job's event log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// ms since the epoch.
    pub ts: u64,
    /// `enqueued`, `leased`, `completed`, `failed`, `dead`, `lease_expired`,
    /// `released`, `retried`.
    pub transition: String,
    /// Free text such as the worker, the attempt or the failure reason
    /// (at most 4096 bytes).
    pub detail: String,
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
    /// The effective ceiling (per job > per kind > global).
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
    /// The event log, oldest first: at most the newest 64 events.
    pub events: Vec<Event>,
    /// How many older events were dropped to keep the log bounded.
    pub dropped_events: u32,
}

/// A record that did not decode, as reported by `list` and `reap`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorruptRecord {
    /// The row key, hex.
    pub key: String,
    /// The job's id, when the key decoded far enough to tell.
    pub id: Option<JobId>,
    /// Why it did not decode.
    pub error: String,
}

/// A `list` query. `after` is the `next` cursor of the previous page.
#[derive(Debug, Clone, PartialEq)]
pub struct ListQuery {
    /// Only jobs in this state.
    pub state: Option<State>,
    /// Only jobs of this scope.
    pub scope: Option<Scope>,
    /// Only jobs whose kind matches. Filtered as rows are read, so a rare
    /// kind can give short pages (see [`ListPage::next`]).
    pub kind: Option<KindPattern>,
    /// The most jobs per page: 1 to 10,000 (default 100).
    pub limit: usize,
    /// The previous page's `next`; `None` starts at the beginning.
    pub after: Option<String>,
}

impl Default for ListQuery {
    fn default() -> Self {
        ListQuery {
            state: None,
            scope: None,
            kind: None,
            limit: 100,
            after: None,
        }
    }
}

/// One page of `list`.
#[derive(Debug, Clone, PartialEq)]
pub struct ListPage {
    /// The matching jobs, in key order (scope, state, priority, time).
    pub jobs: Vec<JobInfo>,
    /// Pass as `after` for the next page; `None` at the end. A page can hold
    /// fewer than `limit` jobs and still have a `next`: one call reads at
    /// most 100,000 rows.
    pub next: Option<String>,
    /// Rows on this page's range that did not decode (skipped).
    pub corrupt: Vec<CorruptRecord>,
}

/// Job counts per state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StateCounts {
    /// Jobs waiting to be leased (including delayed ones).
    pub pending: u64,
    /// Jobs held by a worker.
    pub leased: u64,
    /// Jobs failed retryably, leasable again from their retry-at.
    pub failed: u64,
    /// Completed jobs not yet pruned.
    pub completed: u64,
    /// Dead-lettered jobs.
    pub dead: u64,
}

impl StateCounts {
    /// The count for state `s`.
    pub fn get(&self, s: State) -> u64 {
        match s {
            State::Pending => self.pending,
            State::Leased => self.leased,
            State::Failed => self.failed,
            State::Completed => self.completed,
            State::Dead => self.dead,
        }
    }
    pub(crate) fn from_array(a: [i64; 5]) -> Self {
        let g = |s: State| a[s.index()].max(0) as u64;
        StateCounts {
            pending: g(State::Pending),
            leased: g(State::Leased),
            failed: g(State::Failed),
            completed: g(State::Completed),
            dead: g(State::Dead),
        }
    }
    /// The sum over every state.
    pub fn total(&self) -> u64 {
        self.pending + self.leased + self.failed + self.completed + self.dead
    }
}

/// Exact counts, kept in the same batches as the moves (never a scan).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stats {
    /// Counts per kind; kinds with no jobs left are omitted.
    pub by_kind: std::collections::BTreeMap<String, StateCounts>,
    /// Counts over every kind.
    pub total: StateCounts,
}

/// What one reaper pass did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReapReport {
    /// Expired leases moved back to pending (with backoff).
    pub expired: usize,
    /// Expired leases that had no attempts left and went dead.
    pub dead: usize,
    /// Completed jobs pruned past their retention.
    pub pruned: usize,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_ids_are_v7_unique_and_increasing() {
        let ids: Vec<JobId> = (0..10_000).map(|_| JobId::new_v7()).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        assert!(ids.iter().all(|i| i.0.get_version_num() == 7));
        assert!(ids
            .iter()
            .all(|i| i.0.get_variant() == uuid::Variant::RFC4122));
        let ms = ids[0].0.get_timestamp().unwrap().to_unix();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap();
        assert!(now.as_secs().abs_diff(ms.0) < 5);
    }
}
