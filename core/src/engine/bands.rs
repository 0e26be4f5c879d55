//! Ready-work discovery without walking tombstones.
//!
//! A *band* is one run of rows that sort by (ts, id): the pending or failed
//! rows of one (scope, priority) in the jobs CF, or the rows of one
//! (scope, kind, priority) in the kind index. Leases consume bands from the
//! head, which is exactly where RocksDB piles up tombstones. Each band keeps an
//! in-memory [`Cursor`]: no live row sorts before `from`, and no live row is due
//! before `next_ts`. Seeks start at the cursor (with iterator bounds set to the
//! band), so consumed heads are never walked again. This is exact because one
//! process owns the store: every writer of a band row lowers the cursor after
//! its commit ([`Cursor::note_insert`]).
//!
//! All bands of one (scope, priority) share one mutex, the [`BandGroup`]. It
//! is held only to seek and to claim, never across a write: a claimed job sits
//! in `claimed` until its move has committed, so two pollers, even one coming
//! through the kind index and one through the jobs CF, never take the same row.
//! Iterators are created under the lock, and claims are removed under the lock
//! after the commit, so a poller that no longer sees a claim also no longer
//! sees the row.

use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use crate::job::{Scope, State};
use crate::store::keys::Pos;

/// Where the live rows of a band begin, as far as this process knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cursor {
    pub from: Pos,
    pub next_ts: u64,
}

impl Cursor {
    /// The band is empty.
    pub const EMPTY: Cursor = Cursor {
        from: Pos::MAX,
        next_ts: u64::MAX,
    };

    /// A row was written at `pos` (after its commit): it must be seen again.
    pub fn note_insert(&mut self, pos: Pos) {
        if pos < self.from {
            self.from = pos;
        }
        if pos.ts < self.next_ts {
            self.next_ts = pos.ts;
        }
    }

    pub fn maybe_ready(&self, now: u64) -> bool {
        self.next_ts <= now
    }
}

/// A RocksDB iterator kept for a busy band and `refresh()`ed per lease,
/// which is cheaper than creating one (no allocation, and no rebuild while
/// the memtable/SST set is unchanged).
///
/// It borrows the engine's DB, so its lifetime is erased to `'static`. That
/// is sound because every `BandIter` lives in a `BandGroup` owned by the
/// engine, and `Engine::drop` clears them all ([`Bands::clear_iterators`])
/// before it closes the DB. A cached iterator pins the DB state it last saw
/// (memtables, SST files): it is dropped when its band goes idle or empty
/// and by every reaper pass, so nothing stays pinned for long.
pub(crate) struct BandIter(pub rocksdb::DBRawIteratorWithThreadMode<'static, rocksdb::DB>);

impl std::fmt::Debug for BandIter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BandIter")
    }
}

/// The bands of one (scope, priority), under one lock.
#[derive(Debug)]
pub(crate) struct BandGroup {
    pub pending: Cursor,
    pub failed: Cursor,
    /// Kind-index bands of this (scope, priority), by kind.
    pub kinds: HashMap<String, Cursor>,
    /// Rows (state, position) claimed by a poller whose move has not
    /// committed yet. Rows, not job ids: between a lease's commit and the
    /// release of its claim, the reaper can expire that lease and write the
    /// job a new pending row, which must not look claimed (pollers step past
    /// claimed rows and move the cursor beyond them, trusting the claimant
    /// to move the row or to note it again).
    pub claimed: HashSet<(State, Pos)>,
    /// Cached iterators of the busy bands.
    pub pending_it: Option<BandIter>,
    pub failed_it: Option<BandIter>,
    pub kind_its: HashMap<String, BandIter>,
}

impl BandGroup {
    fn new() -> Self {
        BandGroup {
            pending: Cursor::EMPTY,
            failed: Cursor::EMPTY,
            kinds: HashMap::default(),
            claimed: HashSet::default(),
            pending_it: None,
            failed_it: None,
            kind_its: HashMap::default(),
        }
    }

    pub fn clear_iterators(&mut self) {
        self.pending_it = None;
        self.failed_it = None;
        self.kind_its.clear();
    }

    /// The earliest time anything in this group may be due, for waiters.
    pub fn next_ts(&self) -> u64 {
        self.pending.next_ts.min(self.failed.next_ts)
    }

    pub fn kind_cursor(&mut self, kind: &str) -> &mut Cursor {
        if !self.kinds.contains_key(kind) {
            self.kinds.insert(kind.to_string(), Cursor::EMPTY);
        }
        self.kinds.get_mut(kind).expect("inserted above")
    }
}

pub(crate) type Group = Arc<Mutex<BandGroup>>;

/// Lock a group. A poisoned lock means a thread panicked while holding it;
/// the cursor data is still sound (every field is valid at every point).
pub(crate) fn lock(g: &Group) -> MutexGuard<'_, BandGroup> {
    g.lock().unwrap_or_else(|p| p.into_inner())
}

/// The groups of one scope, by priority (ascending = most urgent first).
#[derive(Debug, Default)]
pub(crate) struct ScopeBands {
    prios: RwLock<BTreeMap<u8, Group>>,
    /// Bumped by every activation (see [`Bands`]).
    pub epoch: AtomicU64,
}

impl ScopeBands {
    pub fn group(&self, prio: u8) -> Group {
        if let Some(g) = self
            .prios
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&prio)
        {
            return g.clone();
        }
        self.prios
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .entry(prio)
            .or_insert_with(|| Arc::new(Mutex::new(BandGroup::new())))
            .clone()
    }

    /// The groups, most urgent first.
    pub fn groups(&self) -> Vec<(u8, Group)> {
        self.prios
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|(p, g)| (*p, g.clone()))
            .collect()
    }
}

/// Every scope this process has seen, in first-seen order for round-robin,
/// and the subset that may have work (*active*), so that a poller with no
/// scope filter visits busy tenants only, however many idle ones exist.
///
/// A scope becomes active when a pending or failed row is written to it
/// ([`Bands::activate`], after the row's cursor was lowered) and inactive when
/// a poller finds its pending and failed bands empty. The scope's `epoch`,
/// bumped by every activation before it looks at the active set, keeps a
/// poller from deactivating a scope that received work while it looked.
#[derive(Debug, Default)]
pub(crate) struct Bands {
    inner: RwLock<BandsInner>,
}

#[derive(Debug, Default)]
struct BandsInner {
    order: Vec<Scope>,
    map: HashMap<Scope, (usize, Arc<ScopeBands>)>,
    active: BTreeSet<usize>,
    /// Paused scopes: never active while paused, so pollers without a
    /// scope filter do not even look at them.
    paused: HashSet<Scope>,
    /// Scopes held back by a flow-control limit (at their cap, or out of
    /// tokens): inactive like paused ones until the limit frees them.
    held: HashSet<Scope>,
}

impl Bands {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, BandsInner> {
        self.inner.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, BandsInner> {
        self.inner.write().unwrap_or_else(|p| p.into_inner())
    }

    pub fn scope(&self, s: Scope) -> Arc<ScopeBands> {
        if let Some((_, b)) = self.read().map.get(&s) {
            return b.clone();
        }
        let mut w = self.write();
        if let Some((_, b)) = w.map.get(&s) {
            return b.clone();
        }
        let b = Arc::new(ScopeBands::default());
        let at = w.order.len();
        w.map.insert(s, (at, b.clone()));
        w.order.push(s);
        b
    }

    pub fn get(&self, s: &Scope) -> Option<Arc<ScopeBands>> {
        self.read().map.get(s).map(|(_, b)| b.clone())
    }

    /// `s` may have work (call after lowering the cursor of the row written).
    pub fn activate(&self, s: Scope) {
        let sb = self.scope(s);
        sb.epoch.fetch_add(1, Ordering::SeqCst);
        let at = {
            let r = self.read();
            if r.paused.contains(&s) || r.held.contains(&s) {
                return;
            }
            match r.map.get(&s) {
                Some((at, _)) if r.active.contains(at) => return,
                Some((at, _)) => *at,
                None => return,
            }
        };
        self.write().active.insert(at);
    }

    /// `s` was seen empty by a poller that read `epoch` before it looked;
    /// deactivate it unless work arrived since.
    pub fn deactivate(&self, at: usize, sb: &ScopeBands, epoch: u64) {
        let mut w = self.write();
        if sb.epoch.load(Ordering::SeqCst) == epoch {
            w.active.remove(&at);
        }
    }

    /// The active scopes with their round-robin position, starting at the
    /// first position at or after `start` and wrapping.
    pub fn rotated(&self, start: usize) -> Vec<(usize, Scope, Arc<ScopeBands>)> {
        let r = self.read();
        let n = r.order.len();
        if n == 0 {
            return Vec::new();
        }
        let start = start % n;
        r.active
            .range(start..)
            .chain(r.active.range(..start))
            .map(|&at| {
                let s = r.order[at];
                (at, s, r.map[&s].1.clone())
            })
            .collect()
    }

    /// Pause `s`: it leaves the active set until [`Bands::resume`].
    pub fn pause(&self, s: Scope) {
        let sb = self.scope(s);
        let mut w = self.write();
        w.paused.insert(s);
        if let Some((at, _)) = w.map.get(&s).map(|(at, b)| (*at, b.clone())) {
            w.active.remove(&at);
        }
        drop(w);
        // A poller that read the epoch before the pause must not
        // reactivate it by mistake: deactivation compares epochs.
        sb.epoch.fetch_add(1, Ordering::SeqCst);
    }

    /// Resume `s`: active again (a poller deactivates it if it is empty).
    pub fn resume(&self, s: Scope) {
        self.write().paused.remove(&s);
        self.activate(s);
    }

    /// Hold `s` back (a limit is reached): it leaves the active set until
    /// [`Bands::unhold`], without a poller ever seeking in it.
    pub fn hold(&self, s: Scope) {
        let sb = self.scope(s);
        let mut w = self.write();
        w.held.insert(s);
        if let Some((at, _)) = w.map.get(&s).map(|(at, b)| (*at, b.clone())) {
            w.active.remove(&at);
        }
        drop(w);
        sb.epoch.fetch_add(1, Ordering::SeqCst);
    }

    /// End the hold of `s` (a slot or a token freed): active again.
    pub fn unhold(&self, s: Scope) {
        let was = self.write().held.remove(&s);
        if was {
            self.activate(s);
        }
    }

    /// Whether `s` is paused or held back.
    pub fn is_held(&self, s: &Scope) -> bool {
        let r = self.read();
        r.paused.contains(s) || r.held.contains(s)
    }

    /// The scope at round-robin position `at`.
    pub fn scope_at(&self, at: usize) -> Option<Scope> {
        self.read().order.get(at).copied()
    }

    pub fn scopes(&self) -> Vec<Scope> {
        self.read().order.clone()
    }

    /// Drop every cached iterator (reaper passes, and before the DB closes).
    pub fn clear_iterators(&self) {
        let all: Vec<Arc<ScopeBands>> = self.read().map.values().map(|(_, b)| b.clone()).collect();
        for sb in all {
            for (_, g) in sb.groups() {
                lock(&g).clear_iterators();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_insert_below_the_cursor_lowers_it() {
        let mut c = Cursor::EMPTY;
        let id = crate::job::JobId::from_bytes([1; 16]);
        c.note_insert(Pos { ts: 50, id });
        assert_eq!(c.next_ts, 50);
        c.note_insert(Pos { ts: 70, id });
        assert_eq!(c.from.ts, 50);
        c.note_insert(Pos { ts: 10, id });
        assert_eq!((c.from.ts, c.next_ts), (10, 10));
        assert!(c.maybe_ready(10) && !c.maybe_ready(9));
    }

    #[test]
    fn round_robin_rotates_over_active_scopes() {
        let b = Bands::default();
        let (s1, s2, idle) = (
            Scope::from_bytes([1; 16]),
            Scope::from_bytes([2; 16]),
            Scope::from_bytes([3; 16]),
        );
        b.scope(idle);
        b.activate(s1);
        b.activate(s2);
        b.activate(s1);
        let firsts: Vec<Scope> = (1..5).map(|i| b.rotated(i)[0].1).collect();
        assert_eq!(firsts, vec![s1, s2, s1, s1]);
        assert_eq!(b.rotated(0).len(), 2, "the idle scope is not visited");
    }

    #[test]
    fn a_scope_that_got_work_while_a_poller_looked_stays_active() {
        let b = Bands::default();
        let s = Scope::from_bytes([1; 16]);
        b.activate(s);
        let sb = b.scope(s);
        let seen = sb.epoch.load(Ordering::SeqCst);
        b.activate(s); // work arrives while the poller scans
        b.deactivate(0, &sb, seen);
        assert_eq!(b.rotated(0).len(), 1);
        let seen = sb.epoch.load(Ordering::SeqCst);
        b.deactivate(0, &sb, seen);
        assert!(b.rotated(0).is_empty());
    }
}
