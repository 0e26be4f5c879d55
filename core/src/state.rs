//! A job's states, and the per-state arrays the counters and stats use.
//!
//! Adding a state is one enum arm here (with its stable byte and name), one
//! rule in `engine/transition.rs`, and nothing else: the per-state arrays
//! grow with [`State::COUNT`], and the counters value on disk is read at any
//! length (a value written before the state existed ends early, its missing
//! counts are zero), so old stores keep opening.

use std::fmt;
use std::ops::{Index, IndexMut};
use std::str::FromStr;

use crate::error::{Error, Result};

/// A job's state. The byte is part of the row key and never changes; a
/// state is never renumbered or reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum State {
    /// Waiting for a worker, leasable from its ready-at (the row key's time).
    ///
    /// In: `enqueue` (ready at once, or at its run-at / after its delay);
    /// the reaper, when a lease expired with attempts left (ready after the
    /// backoff); `release` (ready at its old ready-at, its place in line);
    /// an operator `retry` of a dead or failed job.
    /// Out: `lease_next` / `lease_many` (to leased).
    /// Stays: until a poller takes it; there is no timeout.
    Pending,
    /// Held by one worker until its lease deadline (the row key's time).
    ///
    /// In: a lease of a pending or failed job (generation + 1).
    /// Out: `complete` (to completed), `fail` (to failed or dead),
    /// `release` (to pending), the reaper once the deadline has passed (to
    /// pending with backoff, or dead when out of attempts). `extend` moves
    /// the deadline and keeps the state.
    /// Stays: at most the lease TTL past the last heartbeat, plus up to one
    /// reaper interval.
    Leased,
    /// Failed retryably by its worker; leasable again from its retry-at
    /// (the row key's time), directly from this state.
    ///
    /// In: `fail(retryable)` with attempts left.
    /// Out: a lease at or after retry-at (to leased); an operator `retry`
    /// (to pending, attempts reset).
    /// Stays: the backoff delay, then until a poller takes it.
    Failed,
    /// Done; its result is kept with it.
    ///
    /// In: `complete`.
    /// Out: pruned by the reaper once older than `completed_retention`
    /// (deleted), or an operator `purge`.
    /// Stays: `completed_retention` (default 24 h; or forever).
    Completed,
    /// Out of attempts, or failed as not retryable: the dead-letter state,
    /// with its whole event log.
    ///
    /// In: `fail(retryable = false)`, a failure or lease expiry on the last
    /// attempt.
    /// Out: an operator `retry` (to pending, attempts reset) or `purge`.
    /// Stays: `dead_retention` (default 7 days; or forever), then pruned
    /// by the reaper, unless an operator acts first.
    Dead,
    /// Taken back by a caller: it will not run (again).
    ///
    /// In: `cancel` of a pending, scheduled or failed job (at once); a
    /// leased job whose cancel was requested, when its holder settles it
    /// (whatever it submits) or its lease expires.
    /// Out: pruned by the reaper once older than `cancelled_retention`
    /// (deleted), an operator `purge` or `delete`.
    /// Stays: `cancelled_retention` (default 24 h; or forever).
    Cancelled,
    /// Enqueued with `after` (fan-in, issue 43): waits until every job it
    /// waits on (its children) has finished, then becomes pending.
    ///
    /// In: `enqueue` with `EnqueueOptions::after` naming an unfinished job.
    /// Out: the last child's settle, in that settle's batch (to pending,
    /// `children_done`); a child that did not complete, by the parent's
    /// `on_child_dead` policy (to dead or cancelled); `cancel` (to
    /// cancelled), `delete`.
    /// Stays: until its children finish; never leased, no timeout.
    Waiting,
}

impl State {
    /// How many states there are: the length of a [`PerState`] array.
    pub const COUNT: usize = 7;

    /// Every state, in the order of their stable bytes (pending 1 …
    /// waiting 7).
    pub const ALL: [State; State::COUNT] = [
        State::Pending,
        State::Leased,
        State::Failed,
        State::Completed,
        State::Dead,
        State::Cancelled,
        State::Waiting,
    ];

    /// The lowercase name (`"pending"`, …), which `str::parse` reads back.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Pending => "pending",
            State::Leased => "leased",
            State::Failed => "failed",
            State::Completed => "completed",
            State::Dead => "dead",
            State::Cancelled => "cancelled",
            State::Waiting => "waiting",
        }
    }

    /// The stable byte of this state in row keys (pending 1 … waiting 7).
    pub fn byte(self) -> u8 {
        match self {
            State::Pending => 1,
            State::Leased => 2,
            State::Failed => 3,
            State::Completed => 4,
            State::Dead => 5,
            State::Cancelled => 6,
            State::Waiting => 7,
        }
    }

    /// The state with this row-key byte, if it is one.
    pub fn from_byte(b: u8) -> Option<State> {
        State::ALL.into_iter().find(|s| s.byte() == b)
    }

    /// The position of this state in a [`PerState`] array.
    pub fn index(self) -> usize {
        self.byte() as usize - 1
    }

    /// Whether a job in this state is waiting to be leased (it has a row in
    /// the kind index and a band that pollers read).
    pub fn is_ready(self) -> bool {
        matches!(self, State::Pending | State::Failed)
    }

    /// Whether the job is finished (nothing moves it but an operator or
    /// retention).
    pub fn is_terminal(self) -> bool {
        matches!(self, State::Completed | State::Dead | State::Cancelled)
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
                let names: Vec<&str> = State::ALL.iter().map(|s| s.as_str()).collect();
                Error::invalid(format!("unknown state {s:?}; one of {}", names.join(", ")))
            })
    }
}

/// One value per [`State`], indexed by the state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PerState<T>(pub [T; State::COUNT]);

impl<T> Index<State> for PerState<T> {
    type Output = T;
    fn index(&self, s: State) -> &T {
        &self.0[s.index()]
    }
}

impl<T> IndexMut<State> for PerState<T> {
    fn index_mut(&mut self, s: State) -> &mut T {
        &mut self.0[s.index()]
    }
}

impl<T: Copy> PerState<T> {
    /// `(state, value)` for every state, in byte order.
    pub fn iter(&self) -> impl Iterator<Item = (State, T)> + '_ {
        State::ALL.into_iter().map(|s| (s, self[s]))
    }
}

impl PerState<i64> {
    /// The counter change of one job moving `from` → `to` (`None` when it
    /// is created or deleted).
    pub fn delta(from: Option<State>, to: Option<State>) -> Self {
        let mut d = PerState::default();
        if let Some(f) = from {
            d[f] -= 1;
        }
        if let Some(t) = to {
            d[t] += 1;
        }
        d
    }

    /// Element-wise add.
    pub fn add(&mut self, other: &PerState<i64>) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a = a.wrapping_add(b);
        }
    }

    /// True when every count is zero.
    pub fn is_zero(&self) -> bool {
        self.0.iter().all(|x| *x == 0)
    }
}

/// Job counts per state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
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
    /// Cancelled jobs not yet pruned.
    pub cancelled: u64,
    /// Jobs waiting for their children (fan-in).
    pub waiting: u64,
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
            State::Cancelled => self.cancelled,
            State::Waiting => self.waiting,
        }
    }

    fn slot(&mut self, s: State) -> &mut u64 {
        match s {
            State::Pending => &mut self.pending,
            State::Leased => &mut self.leased,
            State::Failed => &mut self.failed,
            State::Completed => &mut self.completed,
            State::Dead => &mut self.dead,
            State::Cancelled => &mut self.cancelled,
            State::Waiting => &mut self.waiting,
        }
    }

    /// The counts of a counters array (negative counts, which only a bug
    /// could make, read as zero).
    pub fn from_per_state(a: &PerState<i64>) -> Self {
        let mut c = StateCounts::default();
        for (s, v) in a.iter() {
            *c.slot(s) = v.max(0) as u64;
        }
        c
    }

    /// The sum over every state.
    pub fn total(&self) -> u64 {
        State::ALL.iter().map(|s| self.get(*s)).sum()
    }
}

/// The largest counters value read: 64 states (a value longer than this is
/// malformed, not a future format).
const MAX_COUNTER_STATES: usize = 64;

/// The counters value (or merge operand) of one kind: one i64 per state,
/// little-endian, in [`State::index`] order.
pub fn encode_counters(c: &PerState<i64>) -> Vec<u8> {
    counters_bytes(c).to_vec()
}

/// [`encode_counters`] without an allocation (every move writes two).
pub fn counters_bytes(c: &PerState<i64>) -> [u8; State::COUNT * 8] {
    let mut b = [0u8; State::COUNT * 8];
    for (out, v) in b.chunks_exact_mut(8).zip(c.0) {
        out.copy_from_slice(&v.to_le_bytes());
    }
    b
}

/// Every count of a counters value, however many states its writer knew
/// (`None` unless it is a whole number of i64s, 1 to 64 of them).
pub fn decode_counter_values(b: &[u8]) -> Option<Vec<i64>> {
    if b.is_empty() || !b.len().is_multiple_of(8) || b.len() > MAX_COUNTER_STATES * 8 {
        return None;
    }
    Some(
        b.chunks_exact(8)
            .map(|c| i64::from_le_bytes(c.try_into().unwrap_or_default()))
            .collect(),
    )
}

/// The counts of the states this build knows. A value written before a
/// state existed ends early (its count is zero); one written by a build that
/// knows more states has counts past [`State::COUNT`], ignored here.
pub fn decode_counters(b: &[u8]) -> Option<PerState<i64>> {
    let v = decode_counter_values(b)?;
    let mut c = PerState::default();
    for (slot, x) in c.0.iter_mut().zip(v) {
        *slot = x;
    }
    Some(c)
}

/// Element-wise add of counter values of any length (the merge operator of
/// the counters column family). The result is as long as the longest
/// input, so counts of states this build does not know survive. A
/// malformed value or operand is ignored rather than failing the read (a
/// failed merge would make the whole key unreadable).
pub fn merge_counter_values<'a>(
    existing: Option<&[u8]>,
    operands: impl IntoIterator<Item = &'a [u8]>,
) -> Vec<u8> {
    let mut acc: Vec<i64> = existing.and_then(decode_counter_values).unwrap_or_default();
    for op in operands {
        if let Some(d) = decode_counter_values(op) {
            if d.len() > acc.len() {
                acc.resize(d.len(), 0);
            }
            for (a, x) in acc.iter_mut().zip(d) {
                *a = a.wrapping_add(x);
            }
        }
    }
    if acc.is_empty() {
        acc.resize(State::COUNT, 0);
    }
    acc.iter().flat_map(|v| v.to_le_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_names_and_indexes_agree() {
        for (i, s) in State::ALL.iter().enumerate() {
            assert_eq!(s.index(), i);
            assert_eq!(State::from_byte(s.byte()), Some(*s));
            assert_eq!(s.as_str().parse::<State>().unwrap(), *s);
        }
        assert_eq!(State::from_byte(0), None);
        assert_eq!(State::from_byte(200), None);
    }

    #[test]
    fn counters_read_shorter_and_longer_values() {
        let mut c = PerState::default();
        c[State::Dead] = 7;
        c[State::Pending] = -2;
        assert_eq!(decode_counters(&encode_counters(&c)), Some(c));
        // Written before the last two states existed.
        let short: Vec<u8> = [4i64, 1, 2].iter().flat_map(|v| v.to_le_bytes()).collect();
        let d = decode_counters(&short).unwrap();
        assert_eq!(
            (d[State::Pending], d[State::Failed], d[State::Dead]),
            (4, 2, 0)
        );
        // Written by a build that knows one more state.
        let mut long = encode_counters(&c);
        long.extend_from_slice(&9i64.to_le_bytes());
        assert_eq!(decode_counters(&long), Some(c));
        for bad in [&b""[..], &[1, 2, 3][..], &[0u8; 8 * 65][..]] {
            assert_eq!(decode_counters(bad), None);
        }
    }

    #[test]
    fn merging_keeps_the_longest_vector() {
        let a: Vec<u8> = [1i64, 1].iter().flat_map(|v| v.to_le_bytes()).collect();
        let b: Vec<u8> = [1i64, 1, 1, 1, 1, 5, 0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let m = merge_counter_values(Some(&a), [&b[..], &[9u8][..]]);
        assert_eq!(decode_counter_values(&m), Some(vec![2, 2, 1, 1, 1, 5, 0]));
        let empty = merge_counter_values(None, []);
        assert_eq!(decode_counters(&empty), Some(PerState::default()));
    }
}
