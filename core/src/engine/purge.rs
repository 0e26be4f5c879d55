//! Operator purge: delete completed, dead or cancelled jobs that got there before a
//! cutoff, with their id, idempotency and counter entries.

use rocksdb::ReadOptions;

use crate::error::{Error, Result};
use crate::event::Event;
use crate::job::{PurgeReport, State};
use crate::store::codec;
use crate::store::keys::{self, JobKey};
use crate::store::{self as st};

use super::transition::Tx;
use super::Engine;

/// Rows per committed batch.
const PURGE_BATCH: usize = 1000;

impl Engine {
    pub fn purge(&self, state: State, cutoff: u64) -> Result<PurgeReport> {
        if !state.is_terminal() {
            return Err(Error::invalid(format!(
                "purge takes completed, dead or cancelled jobs, not {state}"
            )));
        }
        // Completed rows are also deleted by the pruning pass; dead rows are
        // also moved by an operator retry. Hold both kinds of lock per batch.
        let _maintenance = self.maintenance.lock().unwrap_or_else(|p| p.into_inner());
        let mut report = PurgeReport::default();
        for scope in self.scopes_with(&[state]) {
            let mut from = keys::job_state_prefix(&scope, state).to_vec();
            loop {
                let _locks = (state == State::Dead).then(|| self.all_job_locks());
                let (done, next) = self.purge_batch(state, &scope, &from, cutoff, &mut report)?;
                if done {
                    break;
                }
                from = next;
            }
        }
        Ok(report)
    }

    /// Delete up to [`PURGE_BATCH`] rows from `from` on; `(true, _)` when the
    /// scope's state range is exhausted, else where to resume.
    fn purge_batch(
        &self,
        state: State,
        scope: &crate::job::Scope,
        from: &[u8],
        cutoff: u64,
        report: &mut PurgeReport,
    ) -> Result<(bool, Vec<u8>)> {
        let jobs_cf = self.cf(st::CF_JOBS)?;
        let sp = keys::job_state_prefix(scope, state);
        let mut ro = ReadOptions::default();
        ro.set_iterate_lower_bound(sp.to_vec());
        if let Some(end) = keys::prefix_end(&sp) {
            ro.set_iterate_upper_bound(end);
        }
        let mut it = self.db().raw_iterator_cf_opt(jobs_cf, ro);
        it.seek(from);
        let mut tx = Tx::new(self);
        let mut n = 0usize;
        let mut done = true;
        let mut resume = Vec::new();
        while let Some(k) = it.key() {
            if n >= PURGE_BATCH {
                done = false;
                resume = k.to_vec();
                break;
            }
            let key = match JobKey::decode(k) {
                Ok(key) => key,
                Err(e) => {
                    report.corrupt.push(self.report_corrupt(k, None, &e));
                    it.next();
                    continue;
                }
            };
            if key.ts >= cutoff {
                // Rows are in time order within a priority band: skip the rest of it.
                match keys::prefix_end(&keys::job_band_prefix(scope, state, key.priority)) {
                    Some(next) => {
                        it.seek(next);
                        continue;
                    }
                    None => break,
                }
            }
            let rec = match it.value().map(codec::decode) {
                Some(Ok(r)) => r,
                Some(Err(e)) => {
                    // Nothing is deleted that cannot be read.
                    report
                        .corrupt
                        .push(self.report_corrupt(k, Some(key.id), &e));
                    it.next();
                    continue;
                }
                None => break,
            };
            tx.stage(Event::Purged, Some(&key), None, &rec)?;
            n += 1;
            it.next();
        }
        it.status()?;
        tx.commit()?;
        report.purged += n;
        Ok((done, resume))
    }
}
