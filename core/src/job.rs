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
    pub fn from_bytes(b: [u8; 16]) -> Self {
        JobId(Uuid::from_bytes(b))
    }
    pub fn as_bytes(&self) -> &[u8; 16] {
        self.0.as_bytes()
    }
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

    pub fn from_uuid(u: Uuid) -> Self {
        Scope(u)
    }
    pub fn from_bytes(b: [u8; 16]) -> Self {
        Scope(Uuid::from_bytes(b))
    }
    pub fn as_bytes(&self) -> &[u8; 16] {
        self.0.as_bytes()
    }
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
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum KindPattern {
    Exact(String),
    /// Matches the kind equal to the family and every kind starting `family:`.
    Family(String),
}

impl KindPattern {
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
    Pending,
    Leased,
    Failed,
    Completed,
    Dead,
}

impl State {
    pub const ALL: [State; 5] = [
        State::Pending,
        State::Leased,
        State::Failed,
        State::Completed,
        State::Dead,
    ];

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
    pub fn scope(mut self, s: Scope) -> Self {
        self.scope = Some(s);
        self
    }
    pub fn priority(mut self, p: u8) -> Self {
        self.priority = Some(p);
        self
    }
    pub fn run_at(mut self, ms: u64) -> Self {
        self.run_at = Some(ms);
        self
    }
    pub fn delay(mut self, d: Duration) -> Self {
        self.delay = Some(d);
        self
    }
    pub fn idempotency_key(mut self, k: impl Into<String>) -> Self {
        self.idempotency_key = Some(k.into());
        self
    }
    pub fn max_attempts(mut self, n: u32) -> Self {
        self.max_attempts = Some(n);
        self
    }
}

/// One job for [`crate::Queue::enqueue_many`].
#[derive(Debug, Clone, PartialEq)]
pub struct NewJob {
    pub kind: String,
    pub payload: Vec<u8>,
    pub options: EnqueueOptions,
}

impl NewJob {
    pub fn new(kind: impl Into<String>, payload: impl Into<Vec<u8>>) -> Self {
        NewJob {
            kind: kind.into(),
            payload: payload.into(),
            options: EnqueueOptions::default(),
        }
    }
    pub fn with(mut self, options: EnqueueOptions) -> Self {
        self.options = options;
        self
    }
}

/// What an enqueue did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Enqueued {
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
}

impl LeaseOptions {
    pub fn scope(mut self, s: Scope) -> Self {
        self.scopes.push(s);
        self
    }
    /// Add a kind pattern (`"embed"` or `"ingest:*"`).
    pub fn kind(mut self, pattern: &str) -> Result<Self> {
        self.kinds.push(pattern.parse()?);
        Ok(self)
    }
    pub fn wait(mut self, d: Duration) -> Self {
        self.wait = Some(d);
        self
    }
}

/// The proof of a lease: the job id and the lease generation it was granted
/// under. Every settle call checks the generation; a stale one is `Aborted`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LeaseToken {
    pub id: JobId,
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
    pub id: JobId,
    pub kind: String,
    pub scope: Scope,
    pub payload: Vec<u8>,
    /// Failed attempts so far (this lease is attempt `attempts + 1`).
    pub attempts: u32,
    pub max_attempts: u32,
    pub generation: u64,
    /// Lease deadline, ms since the epoch.
    pub deadline: u64,
    pub priority: u8,
    pub worker_id: String,
}

impl Job {
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
    pub detail: String,
}

/// Everything known about a job (for `get`, `list`, operators).
#[derive(Debug, Clone, PartialEq)]
pub struct JobInfo {
    pub id: JobId,
    pub scope: Scope,
    pub kind: String,
    pub state: State,
    pub priority: u8,
    /// The state's timestamp: ready-at (pending), deadline (leased),
    /// retry-at (failed), or when it got there (completed, dead).
    pub state_ts: u64,
    pub attempts: u32,
    /// The effective ceiling (per job > per kind > global).
    pub max_attempts: u32,
    pub generation: u64,
    pub worker_id: Option<String>,
    pub lease_deadline: Option<u64>,
    pub payload: Vec<u8>,
    pub result: Option<Vec<u8>>,
    pub last_error: Option<String>,
    pub idempotency_key: Option<String>,
    pub created_at: u64,
    pub events: Vec<Event>,
    /// How many older events were dropped to keep the log bounded.
    pub dropped_events: u32,
}

/// A record that did not decode, as reported by `list` and `reap`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorruptRecord {
    /// The row key, hex.
    pub key: String,
    pub id: Option<JobId>,
    pub error: String,
}

/// A `list` query. `after` is the `next` cursor of the previous page.
#[derive(Debug, Clone, PartialEq)]
pub struct ListQuery {
    pub state: Option<State>,
    pub scope: Option<Scope>,
    pub kind: Option<KindPattern>,
    pub limit: usize,
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
    pub jobs: Vec<JobInfo>,
    /// Pass as `after` for the next page; `None` at the end.
    pub next: Option<String>,
    /// Rows on this page's range that did not decode (skipped).
    pub corrupt: Vec<CorruptRecord>,
}

/// Job counts per state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StateCounts {
    pub pending: u64,
    pub leased: u64,
    pub failed: u64,
    pub completed: u64,
    pub dead: u64,
}

impl StateCounts {
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
    pub fn total(&self) -> u64 {
        self.pending + self.leased + self.failed + self.completed + self.dead
    }
}

/// Exact counts, kept in the same batches as the moves (never a scan).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stats {
    pub by_kind: std::collections::BTreeMap<String, StateCounts>,
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
