//! Retention: the reaper's pruning of completed, dead and cancelled jobs,
//! in bounded passes that resume past the tombstones they leave.

use std::collections::{HashMap, HashSet};

use rocksdb::ReadOptions;

use crate::error::Result;
use crate::event::Event;
use crate::job::{Scope, State};
use crate::store::codec;
use crate::store::keys::{self, JobKey};
use crate::store::{self as st};

use super::transition::Tx;
use super::Engine;

impl Engine {
    /// Delete finished jobs older than their state's retention
    /// (`completed_retention`, `dead_retention`, `cancelled_retention`), at
    /// most `budget` rows in all, completed first.
    pub fn prune_finished(
        &self,
        now: u64,
        budget: usize,
    ) -> Result<(usize, Vec<crate::job::CorruptRecord>)> {
        let mut pruned = 0;
        let mut corrupt = Vec::new();
        for (state, retention) in [
            (State::Completed, self.cfg.completed_retention),
            (State::Dead, self.cfg.dead_retention),
            (State::Cancelled, self.cfg.cancelled_retention),
        ] {
            let Some(retention) = retention else { continue };
            if pruned >= budget {
                break;
            }
            let (n, c) = self.prune_state(state, retention, now, budget - pruned)?;
            pruned += n;
            corrupt.extend(c);
        }
        Ok((pruned, corrupt))
    }

    /// Delete up to `budget` jobs in `state` that got there before
    /// `now - retention`.
    fn prune_state(
        &self,
        state: State,
        retention: std::time::Duration,
        now: u64,
        budget: usize,
    ) -> Result<(usize, Vec<crate::job::CorruptRecord>)> {
        let cutoff = now.saturating_sub(crate::limits::ms(retention));
        let _maintenance = self.maintenance.lock().unwrap_or_else(|p| p.into_inner());
        // Dead rows are also moved by an operator retry, which holds one
        // job lock: hold them all for the pass (the lock order's step 2).
        let _locks = (state == State::Dead).then(|| self.all_job_locks());
        let jobs_cf = self.cf(st::CF_JOBS)?;
        let mut pruned = 0usize;
        let mut corrupt = Vec::new();
        let mut resume: HashMap<(Scope, State, u8), keys::Pos> = HashMap::new();
        let mut tx = Tx::new(self);
        'scopes: for scope in self.scopes_with(&[state]) {
            let sp = keys::job_state_prefix(&scope, state);
            let mut ro = ReadOptions::default();
            ro.set_iterate_lower_bound(sp.to_vec());
            if let Some(end) = keys::prefix_end(&sp) {
                ro.set_iterate_upper_bound(end);
            }
            let mut it = self.db().raw_iterator_cf_opt(jobs_cf, ro);
            it.seek(sp);
            let mut positioned: HashSet<u8> = HashSet::new();
            while let Some(k) = it.key() {
                let key = match JobKey::decode(k) {
                    Ok(key) => key,
                    Err(e) => {
                        corrupt.push(self.report_corrupt(k, None, &e));
                        it.next();
                        continue;
                    }
                };
                let band = keys::job_band_prefix(&scope, state, key.priority);
                if positioned.insert(key.priority) {
                    // Resume this band where the last pass stopped (past its tombstones).
                    let resume = self
                        .prune_cursors
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .get(&(scope, state, key.priority))
                        .copied();
                    if let Some(pos) = resume.filter(|p| *p > key.pos()) {
                        let mut target = band.to_vec();
                        target.extend_from_slice(&pos.encode());
                        it.seek(target);
                        continue;
                    }
                }
                if key.ts > cutoff {
                    match keys::prefix_end(&band) {
                        Some(n) => {
                            it.seek(n);
                            continue;
                        }
                        None => break,
                    }
                }
                let rec = match it.value().map(codec::decode) {
                    Some(Ok(r)) => r,
                    Some(Err(e)) => {
                        // Kept (nothing is deleted that cannot be read) and
                        // reported; later passes resume past it.
                        corrupt.push(self.report_corrupt(k, Some(key.id), &e));
                        resume.insert((scope, state, key.priority), key.pos().successor());
                        it.next();
                        continue;
                    }
                    None => break,
                };
                tx.stage(Event::Pruned, Some(&key), None, &rec)?;
                resume.insert((scope, state, key.priority), key.pos().successor());
                pruned += 1;
                if tx.len() >= 1000 {
                    self.commit_prune(std::mem::replace(&mut tx, Tx::new(self)), &mut resume)?;
                }
                if pruned >= budget {
                    break 'scopes;
                }
                it.next();
            }
            it.status()?;
        }
        if !tx.is_empty() {
            self.commit_prune(tx, &mut resume)?;
        } else {
            // Only skipped (corrupt) rows are left to step over.
            self.prune_cursors
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .extend(resume.drain());
        }
        Ok((pruned, corrupt))
    }

    /// Commit one pruning batch; only then move the resume cursors past its
    /// rows (a failed write leaves them to the next pass).
    fn commit_prune(
        &self,
        tx: Tx<'_>,
        resume: &mut HashMap<(Scope, State, u8), keys::Pos>,
    ) -> Result<()> {
        tx.commit()?;
        self.prune_cursors
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(resume.drain());
        Ok(())
    }
}
