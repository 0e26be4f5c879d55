//! The count orders' index: every scope with jobs, ordered by
//! `(count descending, scope)` for each of pending, leased and dead, with
//! the counts it was ranked by. A transition only marks its scope dirty
//! (`counts.rs`); a count-ordered page first re-ranks the dirty scopes, so
//! its cost follows what changed since the last one, not how many scopes
//! there are. About 200 bytes per scope with jobs; a scope whose jobs are
//! all gone leaves the index.

use std::cmp::Reverse;
use std::collections::BTreeSet;
use std::ops::Bound;

use rustc_hash::FxHashMap as HashMap;

use super::{RankKey, ScopeOrder};
use crate::ids::Scope;
use crate::state::{PerState, State};

/// The states a count order ranks by, in `Ranking::by`'s order.
const RANKED: [State; 3] = [State::Pending, State::Leased, State::Dead];

fn slot(order: ScopeOrder) -> Option<usize> {
    let st = order.state()?;
    RANKED.iter().position(|s| *s == st)
}

#[derive(Debug, Default)]
pub(super) struct Ranking {
    by: [BTreeSet<RankKey>; RANKED.len()],
    /// Each ranked scope's counts as last ranked.
    last: HashMap<Scope, [i64; State::COUNT]>,
}

impl Ranking {
    /// Rank `s` by its counts now (out of the index when all are zero).
    pub fn update(&mut self, s: Scope, a: &PerState<i64>) {
        if let Some(old) = self.last.remove(&s) {
            for (set, st) in self.by.iter_mut().zip(RANKED) {
                set.remove(&(Reverse(old[st.index()]), s));
            }
        }
        if a.is_zero() {
            return;
        }
        for (set, st) in self.by.iter_mut().zip(RANKED) {
            set.insert((Reverse(a[st]), s));
        }
        self.last.insert(s, a.0);
    }

    pub fn clear(&mut self) {
        *self = Ranking::default();
    }

    /// Up to `limit` scopes of `order` after `after` with their counts, and
    /// the key to resume after when more follow.
    pub fn page(
        &self,
        order: ScopeOrder,
        after: Option<RankKey>,
        limit: usize,
    ) -> (Vec<(Scope, PerState<i64>)>, Option<RankKey>) {
        let Some(i) = slot(order) else {
            return (Vec::new(), None);
        };
        let from = after.map_or(Bound::Unbounded, Bound::Excluded);
        let mut it = self.by[i].range((from, Bound::Unbounded));
        let keys: Vec<RankKey> = it.by_ref().take(limit).copied().collect();
        let next = match (it.next(), keys.last()) {
            (Some(_), Some(k)) => Some(*k),
            _ => None,
        };
        let rows = keys
            .iter()
            .map(|(_, s)| (*s, PerState(self.last.get(s).copied().unwrap_or_default())))
            .collect();
        (rows, next)
    }
}
