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

use std::collections::BTreeMap;

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use crate::job::State;

pub(crate) use super::scopes::Bands;
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
///
/// One exception: the claim that empties a band *parks* its iterator
/// ([`BandIter::park`]) rather than dropping it, because a band drained one
/// job at a time (enqueue, lease, complete) gets its next row right away,
/// and refreshing a kept iterator costs 300 instructions where creating
/// and dropping one cost 5,800 (callgrind, a lifecycle was 4 % cheaper). At
/// most [`MAX_PARKED`] per engine are parked; a parked iterator is dropped
/// like any other by the reaper pass and when its scope is forgotten, and
/// unparked when its band is read again.
pub(crate) struct BandIter {
    pub it: rocksdb::DBRawIteratorWithThreadMode<'static, rocksdb::DB>,
    /// The engine's count of parked iterators, while this one is parked.
    parked: Option<Arc<AtomicUsize>>,
}

/// How many iterators of emptied bands an engine keeps (see [`BandIter`]).
pub(crate) const MAX_PARKED: usize = 8;

impl BandIter {
    pub fn new(it: rocksdb::DBRawIteratorWithThreadMode<'static, rocksdb::DB>) -> Self {
        BandIter { it, parked: None }
    }

    /// Keep this iterator for an emptied band, counted in `count`: false
    /// (drop it) when [`MAX_PARKED`] are parked already.
    pub fn park(&mut self, count: &Arc<AtomicUsize>) -> bool {
        if self.parked.is_some() {
            return true;
        }
        if count.fetch_add(1, Ordering::AcqRel) >= MAX_PARKED {
            count.fetch_sub(1, Ordering::AcqRel);
            return false;
        }
        self.parked = Some(count.clone());
        true
    }

    /// The band is read again: no longer counted as parked.
    pub fn unpark(&mut self) {
        if let Some(c) = self.parked.take() {
            c.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

impl Drop for BandIter {
    fn drop(&mut self) {
        self.unpark();
    }
}

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
    /// Ready rows handed back by the key gate (`keyed.rs`): a poller
    /// stepped past them while their job key was held back, and their key
    /// has a free slot now. Taken before the bands' heads. Each holds the
    /// job's kind and job key.
    pub unparked: BTreeMap<(Pos, State), (String, String)>,
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
            unparked: BTreeMap::new(),
        }
    }

    pub fn clear_iterators(&mut self) {
        self.pending_it = None;
        self.failed_it = None;
        self.kind_its.clear();
    }

    /// The earliest time anything in this group may be due, for waiters.
    pub fn next_ts(&self) -> u64 {
        if !self.unparked.is_empty() {
            return 0;
        }
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

    /// Nothing here a poller could find: every band empty and nothing
    /// claimed, and no other thread holding a group (see
    /// [`Bands::forget_idle`], which holds the scope set's write lock, so
    /// it only tries the group locks). Kind cursors are not looked at: with
    /// the pending and failed bands empty there is no kind-index row.
    pub fn is_idle(&self) -> bool {
        let Ok(prios) = self.prios.try_read() else {
            return false;
        };
        prios.values().all(|g| {
            Arc::strong_count(g) == 1
                && g.try_lock().is_ok_and(|g| {
                    g.pending == Cursor::EMPTY
                        && g.failed == Cursor::EMPTY
                        && g.claimed.is_empty()
                        && g.unparked.is_empty()
                })
        })
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
}
