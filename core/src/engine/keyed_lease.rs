//! The engine's side of flow control by job key (`keyed.rs`): handing
//! parked rows back to their band groups, claiming them there, loading the
//! key index at open, and its part of `check`.

use std::collections::BTreeSet;

use rocksdb::ReadOptions;

use crate::control::Paused;
use crate::error::Result;
use crate::ids::Scope;
use crate::job::{JobId, LeaseOptions};
use crate::kind::KindPattern;
use crate::store::keys::{self, JobKey};
use crate::store::{self as st};

use super::admin::CheckReport;
use super::bands::BandGroup;
use super::keyed::Back;
use super::lease::Got;
use super::limiter::Reserve;
use super::Engine;

impl Engine {
    /// Hand parked rows back to their band groups (pollers take them
    /// before the bands' heads). Takes group locks: never call it holding one.
    pub(super) fn unpark(&self, rows: Vec<Back>) {
        if rows.is_empty() {
            return;
        }
        for (scope, key, p) in rows {
            let group = self.bands.scope(scope).group(p.prio);
            super::bands::lock(&group)
                .unparked
                .insert((p.pos, p.state), (p.kind, key));
            self.bands.activate(scope);
        }
        self.notifier.bump();
    }

    /// Before a poll: rows the key gate set aside, and rate holds that are over.
    pub(super) fn key_poll(&self, now: u64) {
        let rows = self.keys.take_deferred();
        self.unpark(rows);
        if self.keys.active() {
            let rows = self.keys.end_due(now);
            self.unpark(rows);
        }
    }

    /// Claim the first handed-back row of this group a poller with `opts`
    /// takes (`None`: there is none). A row whose job moved meanwhile is
    /// dropped, and its key may hand back another.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn claim_unparked(
        &self,
        g: &mut BandGroup,
        scope: Scope,
        prio: u8,
        opts: &LeaseOptions,
        paused: &Paused,
        blocked: &[KindPattern],
        now: u64,
    ) -> Result<Option<Got>> {
        let jobs_cf = self.cf(st::CF_JOBS)?;
        loop {
            let pick = g
                .unparked
                .iter()
                .find(|((pos, state), (kind, _))| {
                    !g.claimed.contains(&(*state, *pos))
                        && super::claim::wanted(opts, paused, kind)
                        && !super::claim::is_blocked(blocked, kind)
                })
                .map(|(k, v)| (*k, v.clone()));
            let Some(((pos, state), (kind, key))) = pick else {
                return Ok(None);
            };
            let jk = JobKey::at(scope, state, prio, pos);
            let Some(v) = self.db().get_cf(jobs_cf, jk.encode())? else {
                g.unparked.remove(&(pos, state));
                self.keys.stale(&(scope, key), now);
                continue;
            };
            let reserved = if self.limiter.active() {
                match self.limiter.reserve(scope, Some(&kind), now, &self.bands) {
                    Reserve::Refused => return Ok(Some(Got::Held)),
                    Reserve::Granted(_) => Some(Some(kind)),
                }
            } else {
                None
            };
            g.unparked.remove(&(pos, state));
            g.claimed.insert((state, pos));
            return Ok(Some(Got::Claim((jk, Some(v), None), reserved)));
        }
    }

    /// At open, after the leases are loaded: the unfinished keyed jobs
    /// from the key index, and the leased ones.
    pub(super) fn load_keys(&self) -> Result<()> {
        let live = self.read_key_index(None)?;
        let leased = self.leases.snapshot_keys();
        self.keys.load(live.into_iter().collect(), leased);
        Ok(())
    }

    /// The key index's rows (at `snap`, else now); malformed ones reported.
    fn read_key_index(
        &self,
        snap: Option<&rocksdb::Snapshot<'_>>,
    ) -> Result<BTreeSet<(Scope, String, JobId)>> {
        let mut out = BTreeSet::new();
        let Ok(meta) = self.cf(st::CF_META) else {
            return Ok(out); // a format-1 store opened read-only
        };
        let mut ro = ReadOptions::default();
        if let Some(end) = keys::prefix_end(keys::JOB_KEY_INDEX_PREFIX) {
            ro.set_iterate_upper_bound(end);
        }
        let mut it = match snap {
            Some(s) => s.raw_iterator_cf_opt(meta, ro),
            None => self.db().raw_iterator_cf_opt(meta, ro),
        };
        it.seek(keys::JOB_KEY_INDEX_PREFIX);
        while let Some(k) = it.key() {
            match keys::decode_job_key_row(k) {
                Ok(row) => {
                    out.insert(row);
                }
                Err(e) => {
                    self.report_corrupt(k, None, &e);
                }
            }
            it.next();
        }
        it.status()?;
        Ok(out)
    }

    /// `check`'s part: the key index holds exactly the unfinished keyed
    /// jobs (`expected`, from the rows), and memory agrees with it (on a
    /// quiet store), as does the leased count per key.
    pub(super) fn check_keys(
        &self,
        snap: &rocksdb::Snapshot<'_>,
        expected: BTreeSet<(Scope, String, JobId)>,
        leased: BTreeSet<(Scope, String, u32)>,
        r: &mut CheckReport,
    ) -> Result<()> {
        let disk = self.read_key_index(Some(snap))?;
        for (s, k, id) in disk.difference(&expected) {
            r.problems.push(format!(
                "key index row {k:?} names job {id} in scope {s}, which is not an unfinished job with that key"
            ));
        }
        for (s, k, id) in expected.difference(&disk) {
            r.problems.push(format!(
                "unfinished job {id} in scope {s} with key {k:?} has no key index row"
            ));
        }
        let mem = self.keys.live_rows();
        if mem != disk {
            r.problems.push(format!(
                "the in-memory key sets ({} jobs) differ from the key index ({} rows)",
                mem.len(),
                disk.len()
            ));
        }
        let counted = self.keys.leased_counts();
        if counted != leased {
            r.problems.push(format!(
                "leased jobs per key counted in memory {counted:?} differ from the leased rows {leased:?}"
            ));
        }
        Ok(())
    }
}

impl super::transition::Tx<'_> {
    /// The key index (`jkey/` in `meta`): a keyed job's row is there
    /// while it is unfinished; its key's slots free when it leaves leased.
    pub(super) fn stage_key(
        &mut self,
        fs: Option<crate::job::State>,
        ts: Option<crate::job::State>,
        at: Option<&JobKey>,
        jk: &str,
    ) -> Result<()> {
        let Some(at) = at else { return Ok(()) };
        let live = |s: Option<crate::job::State>| s.is_some_and(|s| !s.is_terminal());
        if live(fs) != live(ts) {
            let row = keys::job_key_row(&at.scope, jk, &at.id);
            let meta = self.e.cf(st::CF_META)?;
            if live(ts) {
                self.batch.put_cf(meta, row, []);
            } else {
                self.batch.delete_cf(meta, row);
            }
            self.p
                .key_live
                .push((at.scope, jk.to_string(), at.id, live(ts)));
        }
        if fs == Some(crate::job::State::Leased) && ts != fs {
            self.p.key_unleased.push((at.scope, jk.to_string()));
        }
        Ok(())
    }
}
