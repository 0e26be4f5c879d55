//! Claiming ready jobs across scopes: round robin over the active scopes
//! (weighted: a scope keeps its turn for its weight in claims), each
//! scope's groups most urgent first, flow-control limits taken per claim
//! (`lease.rs` finds and claims within one group, and commits the leases).

use rustc_hash::FxHashMap as HashMap;
use std::sync::Arc;

use crate::control::Paused;
use crate::error::Result;
use crate::job::{LeaseOptions, Scope};

use super::bands::{self, Cursor, ScopeBands};
use super::lease::{Claim, Got};
use super::Engine;

impl Engine {
    /// Claim up to `max` ready jobs, most urgent first within each scope.
    /// Scopes take turns; with weights a scope's turn is its weight in
    /// claims, and a batch goes round again while work is left.
    pub(super) fn claim(&self, opts: &LeaseOptions, max: usize) -> Result<Vec<Claim>> {
        let mut claims: Vec<Claim> = Vec::new();
        let paused = self.paused();
        let limited = self.limiter.active();
        let weighted = limited && opts.scopes.is_empty() && self.limiter.weighted();
        loop {
            let round_start = claims.len();
            self.claim_round(opts, max, &paused, limited, weighted, &mut claims)?;
            if !weighted || claims.len() >= max || claims.len() == round_start {
                return Ok(claims);
            }
        }
    }

    /// One visit of every scope `opts` polls (see [`Engine::claim`]).
    fn claim_round(
        &self,
        opts: &LeaseOptions,
        max: usize,
        paused: &Paused,
        limited: bool,
        weighted: bool,
        claims: &mut Vec<Claim>,
    ) -> Result<()> {
        use std::sync::atomic::Ordering::{Relaxed, SeqCst};
        'scopes: for (at, scope, sb) in self.scopes_for(opts) {
            let before = claims.len();
            let epoch = sb.epoch.load(SeqCst);
            if limited
                && self
                    .limiter
                    .scope_blocked(scope, self.now(), at.is_some(), &self.bands)
                    .is_some()
            {
                continue;
            }
            // This scope's share of the batch in this turn.
            let room = if weighted {
                let w = self.limiter.weight(&scope) as usize;
                let used = if at == Some(self.rr.load(Relaxed)) {
                    self.rr_used.load(Relaxed) as usize
                } else {
                    0
                };
                w.saturating_sub(used).max(1)
            } else {
                max
            };
            let stop = max.min(before.saturating_add(room));
            let mut empty = true;
            let mut held = false;
            // When the scope's earliest row is due, if this visit looks at
            // every band of it through the jobs CF (no kind filter).
            let mut soonest = (opts.kinds.is_empty()
                && paused.kinds.is_empty()
                && !(limited && self.limiter.needs_kind()))
            .then_some(u64::MAX);
            let mut now = 0;
            let groups = sb.groups();
            let last = groups.len().saturating_sub(1);
            for (i, (prio, group)) in groups.into_iter().enumerate() {
                let mut g = bands::lock(&group);
                // Read the clock under the lock: an enqueue that noted its row
                // before we locked read the clock before us, so its job is due.
                now = self.now();
                while claims.len() < stop {
                    match self.claim_in_group(&mut g, scope, prio, opts, paused, now) {
                        Ok(Got::Claim((key, value, kind), reserved)) => {
                            let scope_full = reserved.is_some() && self.bands.is_held(&scope);
                            claims.push(Claim {
                                group: group.clone(),
                                key,
                                value,
                                kind,
                                reserved,
                            });
                            if scope_full {
                                held = true;
                                break;
                            }
                        }
                        Ok(Got::Nothing) => break,
                        Ok(Got::Held) => {
                            held = true;
                            break;
                        }
                        Err(e) => {
                            drop(g);
                            self.unclaim(claims, &HashMap::default());
                            return Err(e);
                        }
                    }
                }
                empty &= g.pending == Cursor::EMPTY
                    && g.failed == Cursor::EMPTY
                    && g.unparked.is_empty();
                if let Some(t) = soonest.as_mut() {
                    *t = (*t).min(g.next_ts());
                }
                if claims.len() >= stop || held {
                    // The less urgent groups were not looked at.
                    empty &= i == last;
                    break;
                }
            }
            if let Some(at) = at {
                let got = claims.len() - before;
                if got > 0 {
                    if self.rr.swap(at, Relaxed) == at {
                        self.rr_used.fetch_add(got as u32, Relaxed);
                    } else {
                        self.rr_used.store(got as u32, Relaxed);
                    }
                }
                if empty && !held {
                    // Nothing pending or failed anywhere in it (it may have
                    // just given its last job): stop visiting it until a
                    // row is written to it again.
                    self.bands.deactivate(at, &sb, epoch);
                } else if let Some(t) = soonest.filter(|t| got == 0 && !held && *t > now) {
                    // Only delayed or backing-off work: not before then.
                    if t != u64::MAX {
                        self.bands.park(at, &sb, epoch, t);
                    }
                }
            }
            if claims.len() >= max {
                break 'scopes;
            }
        }
        Ok(())
    }
}

/// Whether a limit holds `kind` back (see `Limiter::blocked_kinds`).
pub(super) fn is_blocked(blocked: &[crate::kind::KindPattern], kind: &str) -> bool {
    blocked.iter().any(|p| p.matches(kind))
}

/// Whether a poller with `opts` takes jobs of `kind` now: it asked for
/// them (or for every kind) and they are not paused.
pub(super) fn wanted(opts: &LeaseOptions, paused: &Paused, kind: &str) -> bool {
    (opts.kinds.is_empty() || opts.kinds.iter().any(|p| p.matches(kind)))
        && !paused.kinds.iter().any(|p| p.matches(kind))
}

/// The scopes a poll visits (see [`Engine::scopes_for`]).
pub(super) enum ScopeWalk<'a> {
    Active(super::scopes::Rotation<'a>),
    Named(std::vec::IntoIter<(Scope, Arc<ScopeBands>)>),
}

impl Iterator for ScopeWalk<'_> {
    type Item = (Option<usize>, Scope, Arc<ScopeBands>);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            ScopeWalk::Active(r) => r.next().map(|(at, s, b)| (Some(at), s, b)),
            ScopeWalk::Named(v) => v.next().map(|(s, b)| (None, s, b)),
        }
    }
}
