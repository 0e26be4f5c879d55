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
    kind: String,
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
        let mut cands = Vec::new();
        for (scope, sb) in self.bands.all() {
            for (prio, group) in sb.groups() {
                let g = bands::lock(&group);
                for (kind, c) in &g.kinds {
                    if c.maybe_ready(now) {
                        cands.push(Candidate {
                            bound: c.from.ts.max(c.next_ts),
                            kind: kind.clone(),
                            scope,
                            prio,
                            group: group.clone(),
                        });
                    }
                }
            }
        }
        cands.sort_unstable_by(|a, b| a.kind.cmp(&b.kind).then(a.bound.cmp(&b.bound)));
        let cf = self.cf(st::CF_KINDS)?;
        let mut out: BTreeMap<String, u64> = BTreeMap::new();
        for c in &cands {
            let best = out.get(&c.kind).copied();
            if best.is_some_and(|b| b <= c.bound) {
                continue;
            }
            let mut g = bands::lock(&c.group);
            let g = &mut *g;
            let Some(cursor) = g.kinds.get_mut(&c.kind) else {
                continue;
            };
            let prefix = keys::kind_band_prefix(&c.scope, &c.kind, c.prio);
            // A kept iterator is kept (refreshed); a new one is dropped.
            let mut slot = g.kind_its.remove(c.kind.as_str());
            let kept = slot.is_some();
            let found = self.peek(cf, &prefix, None, cursor, &mut slot, now, &g.claimed);
            if let (true, Some(it)) = (kept, slot) {
                g.kind_its.insert(c.kind.clone(), it);
            }
            if let Some((pos, _)) = found? {
                if best.is_none_or(|b| pos.ts < b) {
                    out.insert(c.kind.clone(), pos.ts);
                }
            }
        }
        Ok(out)
    }
}
