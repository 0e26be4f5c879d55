//! The oldest ready job of each kind, read from the band heads: the gauge
//! autoscalers scale on (`telha_jobs_oldest_ready_seconds`).
//!
//! Every (scope, kind, priority) with a pending or failed row has a kind
//! cursor (see `bands.rs`), and a band's rows sort by (ready instant, id),
//! so a kind's oldest due job is the earliest of its bands' first due
//! unclaimed rows. A cursor bounds its band's head from below (no live row
//! sorts before `from`, none is due before `next_ts`), so bands are read
//! in the order of that bound and the reading stops once the earliest head
//! found is no later than the next bound: one seek per kind when the
//! cursors are exact (they are, but for rows deleted from the head by
//! cancel, delete or expiry), a seek per band at worst, never a scan of
//! jobs. The cursors themselves are read under each group's lock, one
//! group at a time: O(bands) memory reads.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap as HashMap;

use crate::error::Result;
use crate::ids::Scope;
use crate::store::keys;
use crate::store::{self as st};

use super::bands::{self, Group};
use super::Engine;

/// One kind band that may hold a due row: the lower bound of its head's
/// ready instant, and where it is.
struct Candidate {
    bound: u64,
    scope: Scope,
    prio: u8,
    group: Group,
}

impl Engine {
    /// Per kind with a job due at `now` (pending or failed, its run-at or
    /// retry time passed, not claimed by a lease in progress), the ready
    /// instant of its oldest such job (ms). Paused kinds and scopes count:
    /// their work is waiting too.
    pub(crate) fn oldest_ready(&self, now: u64) -> Result<BTreeMap<String, u64>> {
        // The bands that may hold a due row, by kind (a kind's string is
        // copied once, not per band: 100,000 scopes are 100,000 bands).
        let mut index: HashMap<String, usize> = HashMap::default();
        let mut by_kind: Vec<(String, Vec<Candidate>)> = Vec::new();
        for (scope, sb) in self.bands.all() {
            for (prio, group) in sb.groups() {
                let g = bands::lock(&group);
                for (kind, c) in &g.kinds {
                    if !c.maybe_ready(now) {
                        continue;
                    }
                    let i = match index.get(kind.as_str()) {
                        Some(i) => *i,
                        None => {
                            index.insert(kind.clone(), by_kind.len());
                            by_kind.push((kind.clone(), Vec::new()));
                            by_kind.len() - 1
                        }
                    };
                    by_kind[i].1.push(Candidate {
                        bound: c.from.ts.max(c.next_ts),
                        scope,
                        prio,
                        group: group.clone(),
                    });
                }
            }
        }
        let mut out = BTreeMap::new();
        for (kind, mut cands) in by_kind {
            // The band with the lowest bound first: when its head is at the
            // bound (its cursor is exact, the usual case) no other band can
            // hold an older row, and one seek answered for the kind.
            let Some(first) = (0..cands.len()).min_by_key(|i| cands[*i].bound) else {
                continue;
            };
            let head = self.head(&kind, &cands[first], now)?;
            if head.is_some_and(|t| t <= cands[first].bound) {
                out.insert(kind, head.unwrap_or_default());
                continue;
            }
            // Otherwise in bound order, until the earliest head found is no
            // later than the next band's bound.
            cands.swap_remove(first);
            cands.sort_unstable_by_key(|c| c.bound);
            let mut best = head;
            for c in &cands {
                if best.is_some_and(|b| b <= c.bound) {
                    break;
                }
                if let Some(t) = self.head(&kind, c, now)? {
                    best = Some(best.map_or(t, |b| b.min(t)));
                }
            }
            if let Some(b) = best {
                out.insert(kind, b);
            }
        }
        Ok(out)
    }

    /// The ready instant of the first due unclaimed row of one kind band.
    fn head(&self, kind: &str, c: &Candidate, now: u64) -> Result<Option<u64>> {
        let cf = self.cf(st::CF_KINDS)?;
        let mut g = bands::lock(&c.group);
        let g = &mut *g;
        let Some(cursor) = g.kinds.get_mut(kind) else {
            return Ok(None);
        };
        let prefix = keys::kind_band_prefix(&c.scope, kind, c.prio);
        // A kept iterator is kept (refreshed); a new one is dropped.
        let mut slot = g.kind_its.remove(kind);
        let kept = slot.is_some();
        let found = self.peek(cf, &prefix, None, cursor, &mut slot, now, &g.claimed);
        if let (true, Some(it)) = (kept, slot) {
            g.kind_its.insert(kind.to_string(), it);
        }
        Ok(found?.map(|(pos, _)| pos.ts))
    }
}
