//! Flow-control limits, durable in the `meta` column family
//! (`limit/<target label>` → `Limit::encode`), enforced in memory by the
//! [`super::limiter::Limiter`].
//!
//! Also the follow-up jobs of a completion (`Completion::then`), staged
//! into the completion's batch.
//!
//! Setting or removing a limit takes `pause_gate` exclusively, as a pause
//! does: no claim is between its check and its commit while the rules
//! change, so a new cap counts exactly the leases that exist.

use rustc_hash::FxHashMap as HashMap;

use crate::error::{Error, Result};
use crate::flow::{Limit, LimitStatus, LimitTarget};
use crate::job::{JobId, NewJob, Scope};
use crate::limits;
use crate::store::{self as st};

use super::enqueue::Origin;
use super::transition::Tx;
use super::Engine;

const PREFIX: &[u8] = b"limit/";

impl Engine {
    /// The durable limits, by label order.
    fn read_limits(&self) -> Result<Vec<(LimitTarget, Limit)>> {
        let Ok(cf) = self.cf(st::CF_META) else {
            return Ok(Vec::new()); // a format-1 store opened read-only
        };
        let mut it = self.db().raw_iterator_cf(cf);
        it.seek(PREFIX);
        let mut out = Vec::new();
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            let Some(label) = k.strip_prefix(PREFIX) else {
                break;
            };
            let parsed = std::str::from_utf8(label)
                .map_err(|_| Error::Corruption("limit entry is not UTF-8".into()))
                .and_then(LimitTarget::parse)
                .and_then(|t| Ok((t, Limit::decode(v)?)));
            match parsed {
                Ok(tl) => out.push(tl),
                Err(e) => {
                    self.report_corrupt(k, None, &e);
                }
            }
            it.next();
        }
        it.status()?;
        Ok(out)
    }

    /// Read the durable limits (at open, after the leases are loaded).
    pub(super) fn load_limits(&self) -> Result<()> {
        for (key, e) in self.leases.snapshot_kinds() {
            self.limiter.note_leased(key.scope, &e);
        }
        self.load_keys()?;
        self.install_limits()?;
        Ok(())
    }

    /// Set (or replace) the limit on `target`.
    pub fn set_limit(&self, target: &LimitTarget, limit: Limit) -> Result<()> {
        limit.validate(target)?;
        let _gate = self.pause_gate.write().unwrap_or_else(|e| e.into_inner());
        let mut b = rocksdb::WriteBatch::default();
        b.put_cf(self.cf(st::CF_META)?, key(target), limit.encode());
        self.write(b)?;
        self.reinstall_limits()
    }

    /// Remove the limit on `target`; false when there was none.
    pub fn remove_limit(&self, target: &LimitTarget) -> Result<bool> {
        let _gate = self.pause_gate.write().unwrap_or_else(|e| e.into_inner());
        let cf = self.cf(st::CF_META)?;
        if self.db().get_pinned_cf(cf, key(target))?.is_none() {
            return Ok(false);
        }
        let mut b = rocksdb::WriteBatch::default();
        b.delete_cf(cf, key(target));
        self.write(b)?;
        self.reinstall_limits()?;
        Ok(true)
    }

    /// Give the durable rules to the limiter (kinds, scopes) and to the
    /// key gate (`key:` targets); parked rows the new rules let go are
    /// handed back.
    fn install_limits(&self) -> Result<()> {
        let (keyed, rules): (Vec<_>, Vec<_>) = self
            .read_limits()?
            .into_iter()
            .partition(|(t, _)| t.is_key());
        self.limiter.install(rules, self.now(), &self.bands);
        let back = self.keys.install(keyed, self.now());
        self.unpark(back);
        Ok(())
    }

    fn reinstall_limits(&self) -> Result<()> {
        self.install_limits()?;
        // A raised or removed limit may free work a poller waits for.
        self.notifier.bump_always();
        Ok(())
    }

    /// `InvalidArgument` for more follow-up jobs than a batch takes.
    pub(super) fn check_then(then: &[NewJob]) -> Result<()> {
        if then.len() > limits::MAX_BATCH {
            return Err(Error::invalid(format!(
                "a completion takes at most {} follow-up jobs, got {}",
                limits::MAX_BATCH,
                then.len()
            )));
        }
        Ok(())
    }

    /// Stage the follow-up jobs of `parent`, which this batch completes.
    pub(super) fn stage_then(
        &self,
        tx: &mut Tx<'_>,
        parent: JobId,
        then: Vec<NewJob>,
        now: u64,
        in_batch: &mut HashMap<(Scope, String), JobId>,
    ) -> Result<()> {
        for j in then {
            self.stage_new(tx, j, now, in_batch, Origin::Parent(parent))?;
        }
        Ok(())
    }

    /// Every limit with its use now.
    pub fn limits(&self) -> Vec<LimitStatus> {
        let now = self.now();
        let mut all = self.limiter.status(now);
        all.extend(self.keys.status(now));
        all.sort_by_key(|s| s.target.label());
        all
    }
}

fn key(t: &LimitTarget) -> Vec<u8> {
    let mut k = PREFIX.to_vec();
    k.extend_from_slice(t.label().as_bytes());
    k
}
