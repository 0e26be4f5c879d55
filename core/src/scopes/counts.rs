//! The in-memory per-scope counts and their pages (see `scopes.rs`).

use std::cmp::{Ordering as Cmp, Reverse};
use std::collections::{BTreeMap, BinaryHeap};
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Mutex, RwLock};

use super::ranking::Ranking;
use super::{cursor, parse_cursor, prefix_range, RankKey, ScopePage, StatsQuery};
use crate::error::{Error, Result};
use crate::ids::Scope;
use crate::limits::{MAX_SCOPE_LIMIT, SCOPE_SCAN_BUDGET};
use crate::state::{PerState, State, StateCounts};

#[derive(Debug, Default)]
struct Entry {
    counts: [AtomicI64; State::COUNT],
    /// Changed since the ranking last read it (and listed in `dirty`).
    dirty: AtomicBool,
}

impl Entry {
    fn load(&self) -> PerState<i64> {
        PerState(std::array::from_fn(|i| {
            self.counts[i].load(Ordering::Relaxed)
        }))
    }
}

/// Exact counts per state for each scope, ordered by scope. A transition
/// adds under the read lock (atomics per entry) and marks the scope dirty
/// for the ranking (a flag; the list of dirty scopes is locked only when a
/// scope turns dirty); only a scope's first appearance takes the write lock.
#[derive(Debug, Default)]
pub(crate) struct ScopeCounts {
    map: RwLock<BTreeMap<Scope, Entry>>,
    dirty: Mutex<Vec<Scope>>,
    ranking: Mutex<Ranking>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl ScopeCounts {
    pub fn add(&self, scope: &Scope, delta: &PerState<i64>) {
        {
            let r = self.map.read().unwrap_or_else(|p| p.into_inner());
            if let Some(e) = r.get(scope) {
                self.bump(scope, e, delta);
                return;
            }
        }
        let mut w = self.map.write().unwrap_or_else(|p| p.into_inner());
        let e = w.entry(*scope).or_default();
        self.bump(scope, e, delta);
    }

    fn bump(&self, scope: &Scope, e: &Entry, delta: &PerState<i64>) {
        for (a, d) in e.counts.iter().zip(delta.0) {
            if d != 0 {
                a.fetch_add(d, Ordering::Relaxed);
            }
        }
        // Release: the ranking's swap back (acquire) then sees these adds.
        if !e.dirty.swap(true, Ordering::AcqRel) {
            lock(&self.dirty).push(*scope);
        }
    }

    pub fn clear(&self) {
        let mut w = self.map.write().unwrap_or_else(|p| p.into_inner());
        w.clear();
        lock(&self.dirty).clear();
        lock(&self.ranking).clear();
    }

    /// Drop the scopes whose counts are all zero (the reaper's pass), so
    /// memory follows the scopes with jobs. Exact: an absent scope counts
    /// zero and its next delta recreates it under the write lock. A swept
    /// scope still listed dirty leaves the ranking when it is next read.
    pub fn sweep(&self) {
        let mut w = self.map.write().unwrap_or_else(|p| p.into_inner());
        w.retain(|_, e| !e.load().is_zero());
    }

    /// Scopes held in memory (for metrics).
    pub fn len(&self) -> usize {
        self.map.read().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// The scopes with a non-zero count in any of `states`.
    pub fn keys_with(&self, states: &[State]) -> Vec<Scope> {
        let r = self.map.read().unwrap_or_else(|p| p.into_inner());
        r.iter()
            .filter(|(_, e)| {
                states
                    .iter()
                    .any(|st| e.counts[st.index()].load(Ordering::Relaxed) != 0)
            })
            .map(|(s, _)| *s)
            .collect()
    }

    /// Whether `scope` has a job in `state`.
    pub fn has(&self, scope: &Scope, state: State) -> bool {
        let r = self.map.read().unwrap_or_else(|p| p.into_inner());
        r.get(scope)
            .is_some_and(|e| e.counts[state.index()].load(Ordering::Relaxed) != 0)
    }

    /// The sum over every scope.
    pub fn total(&self) -> PerState<i64> {
        let r = self.map.read().unwrap_or_else(|p| p.into_inner());
        let mut t = PerState::<i64>::default();
        for e in r.values() {
            t.add(&e.load());
        }
        t
    }

    /// Every scope with a non-zero count (for the consistency check).
    pub fn all(&self) -> BTreeMap<Scope, PerState<i64>> {
        let r = self.map.read().unwrap_or_else(|p| p.into_inner());
        r.iter()
            .map(|(s, e)| (*s, e.load()))
            .filter(|(_, a)| !a.is_zero())
            .collect()
    }

    /// One page of `q`. Scopes with no jobs are never listed.
    pub fn page(&self, q: &StatsQuery) -> Result<ScopePage> {
        if q.scope_limit > MAX_SCOPE_LIMIT {
            return Err(Error::invalid(format!(
                "scope_limit {} is over the maximum {MAX_SCOPE_LIMIT}",
                q.scope_limit
            )));
        }
        let after = q
            .scopes_after
            .as_deref()
            .map(|c| parse_cursor(q.scope_order, c))
            .transpose()?;
        let range = q.scope_prefix.as_deref().map(prefix_range).transpose()?;
        if q.scope_limit == 0 {
            return Ok(ScopePage {
                scopes: BTreeMap::new(),
                next: None,
            });
        }
        let Some(state) = q.scope_order.state() else {
            return Ok(self.by_name(q, after.map(|(_, s)| s), range));
        };
        let after: Option<RankKey> = after.map(|(n, s)| (Reverse(n), s));
        let (rows, next) = match range {
            None => self.ranked(q, after),
            Some((lo, hi)) => self.top_in(q.scope_limit, state, after, lo, hi),
        };
        Ok(ScopePage {
            scopes: rows
                .iter()
                .map(|(s, a)| (*s, StateCounts::from_per_state(a)))
                .collect(),
            next: next.map(|(Reverse(n), s)| cursor(q.scope_order, n, &s)),
        })
    }

    /// The name order: a range read from the cursor.
    fn by_name(
        &self,
        q: &StatsQuery,
        after: Option<Scope>,
        range: Option<(Scope, Scope)>,
    ) -> ScopePage {
        let (lo, hi) = range.unwrap_or((Scope::from_bytes([0; 16]), Scope::from_bytes([0xff; 16])));
        let mut scopes = BTreeMap::new();
        let from = match after {
            Some(s) if s >= hi => return ScopePage { scopes, next: None },
            Some(s) if s >= lo => Bound::Excluded(s),
            _ => Bound::Included(lo),
        };
        let r = self.map.read().unwrap_or_else(|p| p.into_inner());
        let mut last: Option<Scope> = None;
        for (seen, (s, e)) in r.range((from, Bound::Included(hi))).enumerate() {
            let full = scopes.len() == q.scope_limit || seen == SCOPE_SCAN_BUDGET;
            if let (Some(l), true) = (last, full) {
                // More follow: resume after the last one examined.
                return ScopePage {
                    scopes,
                    next: Some(cursor(q.scope_order, 0, &l)),
                };
            }
            last = Some(*s);
            let a = e.load();
            if !a.is_zero() {
                scopes.insert(*s, StateCounts::from_per_state(&a));
            }
        }
        ScopePage { scopes, next: None }
    }

    /// A count order over every scope: the ranking, brought up to date
    /// with the scopes that changed since it last looked.
    fn ranked(
        &self,
        q: &StatsQuery,
        after: Option<RankKey>,
    ) -> (Vec<(Scope, PerState<i64>)>, Option<RankKey>) {
        let mut rk = lock(&self.ranking);
        let dirty = std::mem::take(&mut *lock(&self.dirty));
        if !dirty.is_empty() {
            let r = self.map.read().unwrap_or_else(|p| p.into_inner());
            for s in dirty {
                match r.get(&s) {
                    Some(e) => {
                        // Clear first: an add after this marks it dirty again.
                        e.dirty.swap(false, Ordering::AcqRel);
                        rk.update(s, &e.load());
                    }
                    // Swept (all zero): out of the ranking too.
                    None => rk.update(s, &PerState::default()),
                }
            }
        }
        rk.page(q.scope_order, after, q.scope_limit)
    }

    /// A count order within `lo..=hi` (a prefix): one pass with a heap of
    /// `limit` entries whose top is the worst kept.
    fn top_in(
        &self,
        limit: usize,
        state: State,
        after: Option<RankKey>,
        lo: Scope,
        hi: Scope,
    ) -> (Vec<(Scope, PerState<i64>)>, Option<RankKey>) {
        let mut heap: BinaryHeap<(RankKey, [i64; State::COUNT])> = BinaryHeap::new();
        let mut more = false;
        let r = self.map.read().unwrap_or_else(|p| p.into_inner());
        for (s, e) in r.range(lo..=hi) {
            let a = e.load();
            if a.is_zero() {
                continue;
            }
            let key = (Reverse(a[state]), *s);
            if after.is_some_and(|c| key.cmp(&c) != Cmp::Greater) {
                continue;
            }
            if heap.len() < limit {
                heap.push((key, a.0));
            } else {
                more = true;
                if heap.peek().is_some_and(|(worst, _)| key < *worst) {
                    heap.pop();
                    heap.push((key, a.0));
                }
            }
        }
        drop(r);
        let next = if more {
            heap.peek().map(|(k, _)| *k)
        } else {
            None
        };
        let rows = heap
            .into_sorted_vec()
            .into_iter()
            .map(|(k, a)| (k.1, PerState(a)))
            .collect();
        (rows, next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scopes::ranked;
    use crate::scopes::ScopeOrder;

    fn sc(i: u128) -> Scope {
        Scope::from_bytes(i.to_be_bytes())
    }

    fn counts(pending: i64, dead: i64) -> PerState<i64> {
        let mut a = PerState::<i64>::default();
        a[State::Pending] = pending;
        a[State::Dead] = dead;
        a
    }

    fn walk(c: &ScopeCounts, order: ScopeOrder, limit: usize) -> Vec<Scope> {
        let mut q = StatsQuery {
            scope_order: order,
            scope_limit: limit,
            ..StatsQuery::default()
        };
        let mut out = Vec::new();
        loop {
            let p = c.page(&q).unwrap();
            out.extend(ranked(order, &p.scopes).into_iter().map(|(s, _)| s));
            match p.next {
                Some(n) => q.scopes_after = Some(n),
                None => return out,
            }
        }
    }

    #[test]
    fn every_order_pages_through_every_non_empty_scope_once() {
        let c = ScopeCounts::default();
        for i in 0..1000u128 {
            c.add(&sc(i), &counts((i % 7) as i64, (i % 3) as i64));
        }
        let live: Vec<Scope> = (0..1000u128)
            .filter(|i| i % 7 != 0 || i % 3 != 0)
            .map(sc)
            .collect();
        assert_eq!(walk(&c, ScopeOrder::Name, 33), live);
        let mut by_pending = live.clone();
        by_pending.sort_by_key(|s| (Reverse(u128::from_be_bytes(*s.as_bytes()) % 7), *s));
        assert_eq!(walk(&c, ScopeOrder::Pending, 33), by_pending);
        assert_eq!(walk(&c, ScopeOrder::Dead, 1000).len(), live.len());
    }

    #[test]
    fn a_prefix_selects_the_scopes_whose_text_starts_with_it() {
        let c = ScopeCounts::default();
        let a: Scope = "3fa20000-0000-0000-0000-000000000001".parse().unwrap();
        let b: Scope = "3fa2ffff-0000-0000-0000-000000000000".parse().unwrap();
        let other: Scope = "3fb00000-0000-0000-0000-000000000000".parse().unwrap();
        for s in [a, b, other] {
            c.add(&s, &counts(1, 0));
        }
        let q = StatsQuery {
            scope_prefix: Some("3FA2".into()),
            ..StatsQuery::default()
        };
        let p = c.page(&q).unwrap();
        assert_eq!(p.scopes.keys().copied().collect::<Vec<_>>(), vec![a, b]);
        assert!(p.next.is_none());
        for bad in [
            "3fa2g",
            "3fa200000",
            "3fa20000-0000-0000-0000-0000000000000",
        ] {
            let q = StatsQuery {
                scope_prefix: Some(bad.into()),
                ..StatsQuery::default()
            };
            assert!(c.page(&q).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_cursor_of_another_order_and_an_oversized_limit_are_refused() {
        let c = ScopeCounts::default();
        c.add(&sc(1), &counts(1, 0));
        let q = StatsQuery {
            scope_order: ScopeOrder::Pending,
            scopes_after: Some(sc(1).to_string()),
            ..StatsQuery::default()
        };
        assert!(c.page(&q).is_err());
        let q = StatsQuery {
            scope_limit: MAX_SCOPE_LIMIT + 1,
            ..StatsQuery::default()
        };
        assert!(c.page(&q).is_err());
    }

    #[test]
    fn the_name_order_skips_empty_scopes_within_its_budget() {
        let c = ScopeCounts::default();
        for i in 0..(SCOPE_SCAN_BUDGET as u128 + 10) {
            c.add(&sc(i), &counts(1, 0));
            c.add(&sc(i), &counts(-1, 0));
        }
        let live = sc(SCOPE_SCAN_BUDGET as u128 + 5);
        c.add(&live, &counts(2, 0));
        let q = StatsQuery {
            scope_order: ScopeOrder::Name,
            ..StatsQuery::default()
        };
        let first = c.page(&q).unwrap();
        assert!(first.scopes.is_empty());
        assert!(first.next.is_some(), "a short page with a cursor");
        assert_eq!(walk(&c, ScopeOrder::Name, 10), vec![live]);
    }

    #[test]
    fn the_ranking_follows_changes_after_it_was_read() {
        let c = ScopeCounts::default();
        for i in 0..10u128 {
            c.add(&sc(i), &counts(i as i64 + 1, 0));
        }
        assert_eq!(walk(&c, ScopeOrder::Pending, 3)[..3], [sc(9), sc(8), sc(7)]);
        // sc(0) overtakes; sc(9) empties (and leaves); sc(5) goes dead.
        c.add(&sc(0), &counts(100, 0));
        c.add(&sc(9), &counts(-10, 0));
        c.add(&sc(5), &counts(-6, 1));
        let got = walk(&c, ScopeOrder::Pending, 4);
        assert_eq!(got[..3], [sc(0), sc(8), sc(7)]);
        assert_eq!(got.len(), 9, "{got:?}");
        assert_eq!(walk(&c, ScopeOrder::Dead, 1)[0], sc(5));
        let q = StatsQuery {
            scope_limit: 1,
            ..StatsQuery::default()
        };
        let top = c.page(&q).unwrap();
        assert_eq!(top.scopes[&sc(0)].pending, 101);
        assert!(top.next.is_some());
    }
}
