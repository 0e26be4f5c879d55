//! Rebuilding the in-memory state at open: counters, band cursors, leases.
//! Each is a skip-scan: one seek per band, so the cost is the number of bands
//! plus the leased rows, not the number of jobs.

use crate::error::Result;
use crate::job::{Scope, State};
use crate::store::codec;
use crate::store::keys::{self, JobKey, KindKey};
use crate::store::{self as st};

use super::bands::{self, Cursor};
use super::Engine;

impl Engine {
    pub(super) fn recover(&self) -> Result<()> {
        self.load_counters()?;
        // Before the scan activates scopes: paused ones stay inactive.
        self.load_pauses()?;
        self.scan_jobs()?;
        self.scan_kind_index()?;
        // After the leases are loaded: the limits count them.
        self.load_limits()?;
        self.load_schedules()?;
        // Slice 1's tag rows (with a state) become this layout's, once.
        self.upgrade_tag_index()?;
        self.load_fan()?;
        Ok(())
    }

    fn load_counters(&self) -> Result<()> {
        let cf = self.cf(st::CF_COUNTERS)?;
        let mut it = self.db().raw_iterator_cf(cf);
        it.seek_to_first();
        let mut marked = false;
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            if k == st::SCOPE_COUNTERS_MARKER {
                marked = true;
                it.next();
                continue;
            }
            let scope = st::scope_of_counter_key(k);
            match (scope, std::str::from_utf8(k), st::decode_counters(v)) {
                (Some(s), _, Some(c)) => self.load_scope_counter(&s, &c),
                (None, Ok(kind), Some(c)) => self.counts.add(kind, &c),
                _ => {
                    let err = crate::Error::Corruption("malformed counters row".into());
                    self.report_corrupt(k, None, &err);
                }
            }
            it.next();
        }
        it.status()?;
        self.check_scope_counters(marked)
    }

    /// Find every scope, the head of every pending and failed band, and load
    /// the leased rows.
    fn scan_jobs(&self) -> Result<()> {
        let cf = self.cf(st::CF_JOBS)?;
        let mut it = self.db().raw_iterator_cf(cf);
        it.seek_to_first();
        while let Some(k) = it.key() {
            let key = match JobKey::decode(k) {
                Ok(key) => key,
                Err(e) => {
                    self.report_corrupt(k, None, &e);
                    it.next();
                    continue;
                }
            };
            match key.state {
                State::Leased => {
                    match it.value().map(codec::decode) {
                        Some(Ok(rec)) => self.leases.insert(key, rec),
                        Some(Err(e)) => {
                            self.report_corrupt(k, Some(key.id), &e);
                        }
                        None => {}
                    }
                    it.next();
                    continue;
                }
                State::Pending | State::Failed => {
                    // Band state only for scopes with ready work (a scope
                    // with only finished rows needs none).
                    self.bands.activate(key.scope);
                    let g = self.bands.scope(key.scope).group(key.priority);
                    let mut g = bands::lock(&g);
                    let c = Cursor {
                        from: key.pos(),
                        next_ts: key.ts,
                    };
                    if key.state == State::Pending {
                        g.pending = c;
                    } else {
                        g.failed = c;
                    }
                }
                State::Completed | State::Dead | State::Cancelled | State::Waiting => {}
            }
            // Jump to the next (scope, state, priority) band.
            match keys::prefix_end(&keys::job_band_prefix(&key.scope, key.state, key.priority)) {
                Some(next) => it.seek(next),
                None => break,
            }
        }
        it.status()?;
        Ok(())
    }

    fn scan_kind_index(&self) -> Result<()> {
        let cf = self.cf(st::CF_KINDS)?;
        let mut it = self.db().raw_iterator_cf(cf);
        it.seek_to_first();
        while let Some(k) = it.key() {
            let kk = match KindKey::decode(k) {
                Ok(kk) => kk,
                Err(e) => {
                    self.report_corrupt(k, None, &e);
                    it.next();
                    continue;
                }
            };
            let g = self.bands.scope(kk.scope).group(kk.priority);
            bands::lock(&g).kinds.insert(
                kk.kind.clone(),
                Cursor {
                    from: kk.pos,
                    next_ts: kk.pos.ts,
                },
            );
            match keys::prefix_end(&keys::kind_band_prefix(&kk.scope, &kk.kind, kk.priority)) {
                Some(next) => it.seek(next),
                None => break,
            }
        }
        it.status()?;
        Ok(())
    }

    /// The scopes with a job in one of `states`, from the exact counters
    /// (band state is only held for scopes with work: see
    /// `Bands::forget_idle`).
    pub fn scopes_with(&self, states: &[State]) -> Vec<Scope> {
        self.counts.scopes_with(states)
    }

    /// The reaper pass's sweep of per-scope memory: band state of idle
    /// scopes, kind cursors of kinds a busy group no longer has, counters
    /// of scopes without jobs, pruning cursors of bands with no row left in
    /// their state.
    pub(crate) fn forget_idle(&self) -> Result<()> {
        let forgotten = self.bands.forget_idle();
        self.tidy_kind_cursors()?;
        self.counts.sweep();
        let stale: Vec<(Scope, State, u8)> = {
            let c = self.prune_cursors.lock().unwrap_or_else(|p| p.into_inner());
            c.keys().copied().collect()
        };
        let stale: Vec<_> = stale
            .into_iter()
            .filter(|(s, st, _)| !self.counts.has(s, *st))
            .collect();
        if !stale.is_empty() {
            let mut c = self.prune_cursors.lock().unwrap_or_else(|p| p.into_inner());
            for k in stale {
                c.remove(&k);
            }
        }
        crate::heap::forgotten(forgotten);
        Ok(())
    }
}
