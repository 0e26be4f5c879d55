//! The scope set: every scope this process holds band state for, in
//! round-robin order, and the subsets pollers visit.
//!
//! A poller with no scope filter walks the *active* scopes lazily from the
//! round-robin position ([`Rotation`]), one ordered-map step per scope, and
//! stops at the first that yields a job: a lease costs O(log active), not
//! O(active). Every scope a walk passes without a claim leaves the active
//! set, so passing it was paid for by the activation that put it there:
//!
//! - *inactive*: its pending and failed bands are empty (a poller saw them
//!   empty, or claimed their last row);
//! - *parked* until `t`: its earliest row is due at `t` (delayed or
//!   backing-off jobs only). The first poll at or after `t` makes it active
//!   again ([`Bands::wake_due`], one atomic load while nothing is due), and
//!   the earliest parked time is a waiting poller's wake-up;
//! - *paused* or *held* (a flow-control limit): out until resumed or freed.
//!
//! A scope becomes active when a pending or failed row is written to it
//! ([`Bands::activate`], after the row's cursor was lowered). The scope's
//! `epoch`, bumped by every activation, pause and hold before it looks at
//! the sets, keeps a poller from deactivating or parking a scope that
//! received work while it looked.

use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

use crate::job::Scope;

use super::bands::{lock, ScopeBands};

/// See the module comment.
#[derive(Debug)]
pub(crate) struct Bands {
    inner: RwLock<BandsInner>,
    /// The earliest parked time (`u64::MAX`: nothing parked), so that a
    /// poll checks for due scopes with one load.
    wake: AtomicU64,
    /// How many iterators of emptied bands are kept (`bands::BandIter::park`).
    pub parked_iters: Arc<AtomicUsize>,
}

impl Default for Bands {
    fn default() -> Self {
        Bands {
            inner: RwLock::default(),
            wake: AtomicU64::new(u64::MAX),
            parked_iters: Arc::default(),
        }
    }
}

#[derive(Debug, Default)]
struct BandsInner {
    /// Round-robin position → scope. Positions are handed out in first-seen
    /// order and never reused: a forgotten scope comes back at the end, as
    /// a new tenant would.
    order: HashMap<usize, Scope>,
    next_at: usize,
    map: HashMap<Scope, (usize, Arc<ScopeBands>)>,
    /// Scopes [`Bands::forget_idle`] looks at: new ones, and those a poller
    /// took out of the walk since its last pass.
    drained: HashSet<Scope>,
    /// Round-robin position → scope, for the scopes that may have ready work.
    active: BTreeMap<usize, Scope>,
    /// (due time, position) of the parked scopes, and each one's due time.
    parked: BTreeSet<(u64, usize)>,
    parked_at: HashMap<usize, u64>,
    /// Paused scopes: never active while paused, so pollers without a
    /// scope filter do not even look at them.
    paused: HashSet<Scope>,
    /// Scopes held back by a flow-control limit (at their cap, or out of
    /// tokens): inactive like paused ones until the limit frees them.
    held: HashSet<Scope>,
}

impl BandsInner {
    fn unpark(&mut self, at: usize) {
        if let Some(t) = self.parked_at.remove(&at) {
            self.parked.remove(&(t, at));
        }
    }

    /// Out of both visited sets (a pause or a hold).
    fn remove(&mut self, s: &Scope) {
        if let Some(at) = self.map.get(s).map(|(at, _)| *at) {
            self.active.remove(&at);
            self.unpark(at);
        }
    }

    fn earliest_parked(&self) -> u64 {
        self.parked.first().map_or(u64::MAX, |(t, _)| *t)
    }
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
        let at = w.next_at;
        w.next_at += 1;
        w.map.insert(s, (at, b.clone()));
        w.order.insert(at, s);
        w.drained.insert(s);
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
                Some((at, _)) if r.active.contains_key(at) => return,
                Some((at, _)) => *at,
                None => return,
            }
        };
        let mut w = self.write();
        w.unpark(at);
        w.active.insert(at, s);
    }

    /// `s` (at `at`) was seen empty by a poller that read `epoch` before it
    /// looked; deactivate it unless work arrived since.
    pub fn deactivate(&self, at: usize, sb: &ScopeBands, epoch: u64) {
        let mut w = self.write();
        if sb.epoch.load(Ordering::SeqCst) == epoch {
            if let Some(s) = w.active.remove(&at) {
                w.drained.insert(s);
            }
        }
    }

    /// `s` (at `at`) was seen with nothing due before `t` by a poller that
    /// read `epoch` before it looked: park it until `t` unless work arrived
    /// since.
    pub fn park(&self, at: usize, sb: &ScopeBands, epoch: u64, t: u64) {
        let mut w = self.write();
        if sb.epoch.load(Ordering::SeqCst) != epoch || w.active.remove(&at).is_none() {
            return;
        }
        w.parked.insert((t, at));
        w.parked_at.insert(at, t);
        self.wake.fetch_min(t, Ordering::SeqCst);
    }

    /// Make the scopes parked until `now` or earlier active again.
    pub fn wake_due(&self, now: u64) {
        if self.wake.load(Ordering::SeqCst) > now {
            return;
        }
        let mut w = self.write();
        while let Some(&(t, at)) = w.parked.first() {
            if t > now {
                break;
            }
            w.parked.pop_first();
            w.parked_at.remove(&at);
            if let Some(&s) = w.order.get(&at) {
                w.active.insert(at, s);
            }
        }
        self.wake.store(w.earliest_parked(), Ordering::SeqCst);
    }

    /// When the earliest parked scope is due (for a waiting poller).
    pub fn parked_until(&self) -> Option<u64> {
        Some(self.wake.load(Ordering::SeqCst)).filter(|t| *t != u64::MAX)
    }

    /// The first active scope at or after `from` and before `end`.
    fn next_active(&self, from: usize, end: usize) -> Option<(usize, Scope, Arc<ScopeBands>)> {
        if from >= end {
            return None;
        }
        let r = self.read();
        let (&at, &s) = r.active.range(from..end).next()?;
        Some((at, s, r.map[&s].1.clone()))
    }

    /// The active scopes from the first position at or after `start`,
    /// wrapping, looked up one at a time as the walk goes (a scope activated
    /// meanwhile ahead of the walk is visited too).
    pub fn rotation(&self, start: usize) -> Rotation<'_> {
        Rotation {
            bands: self,
            start,
            pos: start,
            wrapped: false,
        }
    }

    /// Pause `s`: it leaves the visited sets until [`Bands::resume`].
    pub fn pause(&self, s: Scope) {
        let sb = self.scope(s);
        let mut w = self.write();
        w.paused.insert(s);
        w.remove(&s);
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

    /// Hold `s` back (a limit is reached): it leaves the visited sets until
    /// [`Bands::unhold`], without a poller ever seeking in it.
    pub fn hold(&self, s: Scope) {
        let sb = self.scope(s);
        let mut w = self.write();
        w.held.insert(s);
        w.remove(&s);
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
        self.read().order.get(&at).copied()
    }

    /// (active, parked, held in memory) scope counts, for metrics.
    pub fn sizes(&self) -> (usize, usize, usize) {
        let r = self.read();
        (r.active.len(), r.parked.len(), r.map.len())
    }

    /// Forget the band state of every scope a poller has nothing to find
    /// in: out of the walk (not active, parked, paused or held), every band
    /// empty, nothing claimed, and no other thread holding its bands (a
    /// writer about to note a row holds its group). The next row written
    /// to it builds it afresh, which is exact: a forgotten band was empty,
    /// and an absent one is. Only the scopes deactivated or created since
    /// the last pass are looked at (and those still busy then); the write
    /// lock is taken per chunk, and group locks only by `try_lock` (the
    /// lock order puts groups above the scope set). Returns how many.
    pub fn forget_idle(&self) -> usize {
        let candidates: Vec<Scope> = std::mem::take(&mut self.write().drained)
            .into_iter()
            .collect();
        let mut forgotten = 0;
        for chunk in candidates.chunks(1024) {
            let mut w = self.write();
            for s in chunk {
                let Some((at, sb)) = w.map.get(s) else {
                    continue;
                };
                let at = *at;
                if w.active.contains_key(&at)
                    || w.parked_at.contains_key(&at)
                    || w.paused.contains(s)
                    || w.held.contains(s)
                {
                    // Back in the walk, or kept: a later deactivation
                    // (after the resume or the unhold) brings it back here.
                    continue;
                }
                if Arc::strong_count(sb) != 1 || !sb.is_idle() {
                    w.drained.insert(*s); // busy right now: next pass
                    continue;
                }
                w.map.remove(s);
                w.order.remove(&at);
                forgotten += 1;
            }
        }
        forgotten
    }

    /// Every scope held in memory, with its bands.
    pub fn all(&self) -> Vec<(Scope, Arc<ScopeBands>)> {
        self.read()
            .map
            .iter()
            .map(|(s, (_, b))| (*s, b.clone()))
            .collect()
    }

    /// Drop every cached iterator (reaper passes, and before the DB closes).
    pub fn clear_iterators(&self) {
        for (_, sb) in self.all() {
            for (_, g) in sb.groups() {
                lock(&g).clear_iterators();
            }
        }
    }
}

/// A lazy walk over the active scopes (see [`Bands::rotation`]): each step
/// is one ordered-map lookup under the scope-set's read lock, which is not
/// held between steps (a poller takes group locks, and the limiter may hold
/// or free scopes, while it walks).
pub(crate) struct Rotation<'a> {
    bands: &'a Bands,
    start: usize,
    pos: usize,
    wrapped: bool,
}

impl Iterator for Rotation<'_> {
    type Item = (usize, Scope, Arc<ScopeBands>);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let end = if self.wrapped { self.start } else { usize::MAX };
            match self.bands.next_active(self.pos, end) {
                Some(found) => {
                    self.pos = found.0 + 1;
                    return Some(found);
                }
                None if self.wrapped => return None,
                None => {
                    self.wrapped = true;
                    self.pos = 0;
                }
            }
        }
    }
}

#[cfg(test)]
impl Bands {
    /// The whole rotation from `start`, collected.
    pub fn rotated(&self, start: usize) -> Vec<(usize, Scope, Arc<ScopeBands>)> {
        self.rotation(start).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let order: Vec<Scope> = b.rotated(2).into_iter().map(|r| r.1).collect();
        assert_eq!(order, vec![s2, s1], "the walk wraps once");
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

    #[test]
    fn a_parked_scope_comes_back_when_due_or_when_work_arrives() {
        let b = Bands::default();
        let (s1, s2) = (Scope::from_bytes([1; 16]), Scope::from_bytes([2; 16]));
        b.activate(s1);
        b.activate(s2);
        let (sb1, sb2) = (b.scope(s1), b.scope(s2));
        b.park(0, &sb1, sb1.epoch.load(Ordering::SeqCst), 100);
        b.park(1, &sb2, sb2.epoch.load(Ordering::SeqCst), 200);
        assert!(b.rotated(0).is_empty());
        assert_eq!(b.parked_until(), Some(100));
        b.wake_due(99);
        assert!(b.rotated(0).is_empty(), "not due yet");
        b.wake_due(150);
        assert_eq!(b.rotated(0).len(), 1);
        assert_eq!(b.parked_until(), Some(200));
        b.activate(s2); // a row due now arrives
        assert_eq!(b.rotated(0).len(), 2);
        assert_eq!(b.parked_until(), Some(200), "a stale wake-up is harmless");
        b.wake_due(200);
        assert_eq!((b.rotated(0).len(), b.parked_until()), (2, None));
        // Work that arrives while a poller looks keeps the scope active.
        let seen = sb1.epoch.load(Ordering::SeqCst);
        b.activate(s1);
        b.park(0, &sb1, seen, 300);
        assert_eq!(b.rotated(0).len(), 2);
    }

    #[test]
    fn an_idle_scope_is_forgotten_and_comes_back_last_in_the_turn() {
        let b = Bands::default();
        let (s1, s2) = (Scope::from_bytes([1; 16]), Scope::from_bytes([2; 16]));
        b.activate(s1);
        b.activate(s2);
        b.pause(s2);
        let sb = b.scope(s1);
        b.deactivate(0, &sb, sb.epoch.load(Ordering::SeqCst));
        assert_eq!(b.forget_idle(), 0, "held by this test");
        drop(sb);
        // A band with a row noted is not idle.
        lock(&b.scope(s1).group(0)).pending = super::super::bands::Cursor {
            from: crate::store::keys::Pos::MAX,
            next_ts: 5,
        };
        assert_eq!(b.forget_idle(), 0);
        lock(&b.scope(s1).group(0)).pending = super::super::bands::Cursor::EMPTY;
        assert_eq!(b.forget_idle(), 1, "the paused one stays");
        assert_eq!(b.sizes(), (0, 0, 1));
        b.activate(s1);
        b.resume(s2);
        let order: Vec<Scope> = b.rotated(0).into_iter().map(|r| r.1).collect();
        assert_eq!(order, vec![s2, s1], "s1 is a new tenant now");
    }

    #[test]
    fn a_paused_scope_is_not_parked_or_woken() {
        let b = Bands::default();
        let s = Scope::from_bytes([1; 16]);
        b.activate(s);
        let sb = b.scope(s);
        b.park(0, &sb, sb.epoch.load(Ordering::SeqCst), 100);
        b.pause(s);
        b.wake_due(100);
        assert!(b.rotated(0).is_empty());
        b.resume(s);
        assert_eq!(b.rotated(0).len(), 1);
    }
}
