//! The per-scope counters: kept by every batch beside the per-kind ones
//! (`Tx::stage`, `Tx::commit`), read at open, and rebuilt by one scan of
//! the job keys when they cannot be trusted:
//!
//! - the store predates them (no [`st::SCOPE_COUNTERS_MARKER`]);
//! - their per-state sums differ from the per-kind counters' sums: an older
//!   build, which keeps only the per-kind ones, moved jobs in between (a
//!   rollback and a roll-forward). A move by an older build that leaves
//!   every per-state sum unchanged (one job leased in scope A while another
//!   is released in scope B) is not caught here; `check` compares every
//!   scope's counters with a scan and names it.
//!
//! The rebuild is O(jobs) and happens at most once per upgrade; a read-only
//! open computes the counts in memory and writes nothing.

use std::collections::BTreeMap;

use crate::error::Result;
use crate::ids::Scope;
use crate::state::{encode_counters, PerState};
use crate::store::keys::JobKey;
use crate::store::{self as st};

use super::Engine;

impl Engine {
    /// A per-scope counters row read at open (`load_counters`).
    pub(super) fn load_scope_counter(&self, scope: &Scope, c: &PerState<i64>) {
        self.counts.add_scope(scope, c);
    }

    /// After the counters are loaded: rebuild the per-scope ones if they are
    /// missing or disagree with the per-kind ones.
    pub(super) fn check_scope_counters(&self, marked: bool) -> Result<()> {
        let (kinds, scopes) = self.counts.totals();
        if marked && kinds == scopes {
            return Ok(());
        }
        let counted = self.count_scopes()?;
        self.counts.clear_scopes();
        for (s, c) in &counted {
            self.counts.add_scope(s, c);
        }
        if self.read_only {
            return Ok(());
        }
        let cf = self.cf(st::CF_COUNTERS)?;
        let mut batch = rocksdb::WriteBatch::default();
        let mut it = self.db().raw_iterator_cf(cf);
        it.seek(st::SCOPE_COUNTER_PREFIX);
        while let Some(k) = it.key() {
            if !k.starts_with(&st::SCOPE_COUNTER_PREFIX) {
                break;
            }
            batch.delete_cf(cf, k);
            it.next();
        }
        it.status()?;
        for (s, c) in &counted {
            batch.merge_cf(cf, st::scope_counter_key(s), encode_counters(c));
        }
        batch.put_cf(cf, st::SCOPE_COUNTERS_MARKER, b"1");
        self.write(batch)
    }

    /// Jobs per scope and state, by a scan of the job keys.
    pub(super) fn count_scopes(&self) -> Result<BTreeMap<Scope, PerState<i64>>> {
        let mut out: BTreeMap<Scope, PerState<i64>> = BTreeMap::new();
        let mut it = self.db().raw_iterator_cf(self.cf(st::CF_JOBS)?);
        it.seek_to_first();
        while let Some(k) = it.key() {
            if let Ok(key) = JobKey::decode(k) {
                out.entry(key.scope).or_default()[key.state] += 1;
            }
            it.next();
        }
        it.status()?;
        Ok(out)
    }
}
