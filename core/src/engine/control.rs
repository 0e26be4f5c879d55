//! Job control: cancel (one job, or by filter), delete, expiry before
//! start. Each move goes through [`Tx::stage`] like every other; a pending
//! or failed row is claimed first, exactly as a poller claims it, so no
//! poller leases a job while it is being cancelled or deleted.

use rocksdb::ReadOptions;

use crate::control::{CancelFilter, CancelOutcome, CancelReport};
use crate::error::{Error, Result};
use crate::event::Event;
use crate::job::{JobId, Scope, State};
use crate::store::codec::{self, JobRecord, MAX_DETAIL_LEN};
use crate::store::keys::{self, JobKey};
use crate::store::{self as st};

use super::bands::{self, Group};
use super::leases;
use super::transition::Tx;
use super::Engine;

/// Rows per committed batch of `cancel_many` and the expiry pass.
pub(super) const BATCH: usize = 1000;

/// How often a single-job operation looks again at a job that moved under
/// it (a poller leasing it, a settle) before it gives up.
pub(super) const ATTEMPTS: usize = 1000;

/// Between two tries of a cancel or delete whose row moved or was claimed:
/// a yield at first, then 1 ms, so the tries outlast a poller's claim held
/// across a synced commit (several ms with `sync_writes`), which 1,000 bare
/// yields did not (the crash harness saw `Storage: kept moving`).
pub(super) fn back_off(attempt: usize) {
    if attempt < 50 {
        std::thread::yield_now();
    } else {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// Why a claimed-row operation did not apply.
pub(super) enum Missed {
    /// A poller holds the row's claim right now, or the row moved since it
    /// was read: look again.
    Moved,
}

impl Engine {
    /// Claim the ready row at `key` the way a poller does, run `f` on its
    /// current record, and give the claim back. `Err(Missed::Moved)` when a
    /// poller has it claimed or the row is gone. When `f` did not move the
    /// row, it is noted again (pollers step past claimed rows).
    pub(super) fn with_claimed<T>(
        &self,
        key: JobKey,
        f: impl FnOnce(JobRecord) -> Result<T>,
    ) -> Result<std::result::Result<T, Missed>> {
        let group = self.bands.scope(key.scope).group(key.priority);
        if !bands::lock(&group).claimed.insert((key.state, key.pos())) {
            return Ok(Err(Missed::Moved));
        }
        let res = match self.record_at(&key) {
            Ok(Some(rec)) => {
                let kind = rec.kind.clone();
                let r = f(rec);
                Some((r, kind))
            }
            Ok(None) => None,
            Err(e) => Some((Err(e), String::new())),
        };
        bands::lock(&group).claimed.remove(&(key.state, key.pos()));
        match res {
            None => Ok(Err(Missed::Moved)),
            Some((Ok(v), _)) => Ok(Ok(v)),
            Some((Err(e), kind)) => {
                if !kind.is_empty() {
                    self.note_ready_row(&key, &kind);
                }
                Err(e)
            }
        }
    }

    /// Cancel job `id`: at once when it is pending or failed; with a
    /// durable request when it is leased. `WrongState` when it is finished.
    pub fn cancel(&self, id: &JobId, reason: &str) -> Result<CancelOutcome> {
        let mut reason = reason.to_string();
        codec::truncate_utf8(&mut reason, MAX_DETAIL_LEN);
        for attempt in 0..ATTEMPTS {
            let key = self
                .key_of(id)?
                .ok_or_else(|| Error::NotFound(format!("no job {id}")))?;
            match key.state {
                State::Pending | State::Failed => {
                    let done = self.with_claimed(key, |rec| {
                        let mut tx = Tx::new(self);
                        self.stage_cancel(&mut tx, &key, rec, &reason)?;
                        tx.commit()
                    })?;
                    if done.is_ok() {
                        return Ok(CancelOutcome::Cancelled);
                    }
                }
                State::Leased => {
                    if let Some(outcome) = self.request_cancel(id, &reason)? {
                        return Ok(outcome);
                    }
                }
                State::Waiting => {
                    // Children's settles move a waiting parent under the
                    // fan-in map's lock: read and move it under it too.
                    let mut tx = Tx::new(self);
                    tx.hold_fan();
                    if self.key_of(id)? == Some(key) {
                        if let Some(rec) = self.record_at(&key)? {
                            self.stage_cancel(&mut tx, &key, rec, &reason)?;
                            tx.commit()?;
                            return Ok(CancelOutcome::Cancelled);
                        }
                    }
                }
                other => {
                    return Err(Error::WrongState(format!(
                        "job {id} is {other}; only pending, failed, leased and waiting jobs can be cancelled"
                    )))
                }
            }
            back_off(attempt);
        }
        Err(Error::Storage(format!(
            "job {id} kept moving while it was being cancelled; try again"
        )))
    }

    /// Stage the move of the ready row at `key` to cancelled.
    fn stage_cancel(
        &self,
        tx: &mut Tx<'_>,
        key: &JobKey,
        mut rec: JobRecord,
        reason: &str,
    ) -> Result<()> {
        let now = self.now();
        rec.log(now, Event::Cancelled, reason);
        let to = JobKey {
            state: State::Cancelled,
            ts: now,
            ..*key
        };
        tx.stage(Event::Cancelled, Some(key), Some(&to), &rec)
    }

    /// Put a cancel request on the leased job `id`. `None` when it holds no
    /// live lease right now (it is moving: look again).
    fn request_cancel(&self, id: &JobId, reason: &str) -> Result<Option<CancelOutcome>> {
        let Some(entry) = self.leases.get(id) else {
            return Ok(None);
        };
        let mut e = leases::lock(&entry);
        if !e.live {
            return Ok(None);
        }
        if e.record.ext.cancel_requested.is_some() {
            return Ok(Some(CancelOutcome::Requested));
        }
        let mut rec = e.record.clone();
        rec.ext.cancel_requested = Some(reason.to_string());
        rec.log(self.now(), Event::CancelRequested, reason);
        let mut tx = Tx::new(self);
        tx.stage(Event::CancelRequested, Some(&e.key), Some(&e.key), &rec)?;
        tx.commit()?;
        e.record = rec;
        Ok(Some(CancelOutcome::Requested))
    }

    /// Cancel every job matching `f` that is not finished, in batches of
    /// [`BATCH`] rows, each one atomic.
    pub fn cancel_many(&self, f: &CancelFilter) -> Result<CancelReport> {
        let states: &[State] = match f.state {
            None => &[State::Pending, State::Failed, State::Leased, State::Waiting],
            Some(State::Pending) => &[State::Pending],
            Some(State::Failed) => &[State::Failed],
            Some(State::Leased) => &[State::Leased],
            Some(State::Waiting) => &[State::Waiting],
            Some(other) => {
                return Err(Error::invalid(format!(
                    "cancel_many takes pending, failed, leased or waiting jobs, not {other}"
                )))
            }
        };
        let mut reason = f.reason.clone();
        codec::truncate_utf8(&mut reason, MAX_DETAIL_LEN);
        if let Some(tag) = &f.tag {
            return self.cancel_tagged(tag, f, states, &reason);
        }
        let scopes = match f.scope {
            Some(s) => vec![s],
            None => self.scopes_with(states),
        };
        let mut report = CancelReport::default();
        for scope in scopes {
            for &state in states {
                self.cancel_range(scope, state, f, &reason, &mut report)?;
            }
        }
        Ok(report)
    }

    /// `cancel_many` over one (scope, state) range.
    fn cancel_range(
        &self,
        scope: Scope,
        state: State,
        f: &CancelFilter,
        reason: &str,
        report: &mut CancelReport,
    ) -> Result<()> {
        let prefix = keys::job_state_prefix(&scope, state);
        let mut from = prefix.to_vec();
        loop {
            let (rows, next) = self.read_batch(&prefix, &from, f, report)?;
            // A leased job gets a request; a waiting one moves under the
            // fan-in map's lock (`cancel`): one at a time, like a leased one.
            if matches!(state, State::Leased | State::Waiting) {
                for key in &rows {
                    match self.cancel(&key.id, reason) {
                        Ok(CancelOutcome::Requested) => report.requested += 1,
                        Ok(_) => report.cancelled += 1,
                        // Settled since the read: nothing left to cancel.
                        Err(e) if e.kind() == crate::ErrorKind::WrongState => {}
                        Err(Error::NotFound(_)) => {}
                        Err(e) => return Err(e),
                    }
                }
            } else {
                self.cancel_ready_batch(&rows, reason, report)?;
            }
            match next {
                Some(n) => from = n,
                None => return Ok(()),
            }
        }
    }

    /// Up to [`BATCH`] keys from `from` on inside `prefix` whose kind
    /// matches, and where to resume.
    fn read_batch(
        &self,
        prefix: &[u8],
        from: &[u8],
        f: &CancelFilter,
        report: &mut CancelReport,
    ) -> Result<(Vec<JobKey>, Option<Vec<u8>>)> {
        let mut ro = ReadOptions::default();
        if let Some(end) = keys::prefix_end(prefix) {
            ro.set_iterate_upper_bound(end);
        }
        let mut it = self.db().raw_iterator_cf_opt(self.cf(st::CF_JOBS)?, ro);
        it.seek(from);
        let mut rows = Vec::new();
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            if rows.len() >= BATCH {
                return Ok((rows, Some(k.to_vec())));
            }
            let key = match JobKey::decode(k) {
                Ok(key) => key,
                Err(e) => {
                    self.report_corrupt(k, None, &e);
                    report.corrupt += 1;
                    it.next();
                    continue;
                }
            };
            match &f.kind {
                None => rows.push(key),
                Some(p) => match codec::decode(v) {
                    Ok(rec) if p.matches(&rec.kind) => rows.push(key),
                    Ok(_) => {}
                    Err(e) => {
                        self.report_corrupt(k, Some(key.id), &e);
                        report.corrupt += 1;
                    }
                },
            }
            it.next();
        }
        it.status()?;
        Ok((rows, None))
    }

    /// Cancel ready rows in one batch: claim each (a row a poller holds is
    /// left to [`Engine::cancel`], which waits for its lease), stage, commit,
    /// give the claims back.
    pub(super) fn cancel_ready_batch(
        &self,
        rows: &[JobKey],
        reason: &str,
        report: &mut CancelReport,
    ) -> Result<()> {
        let mut claimed: Vec<(Group, JobKey)> = Vec::with_capacity(rows.len());
        let mut busy: Vec<JobId> = Vec::new();
        for key in rows {
            let group = self.bands.scope(key.scope).group(key.priority);
            if bands::lock(&group).claimed.insert((key.state, key.pos())) {
                claimed.push((group, *key));
            } else {
                busy.push(key.id);
            }
        }
        let mut tx = Tx::new(self);
        let mut kinds = Vec::new();
        let staged = (|| -> Result<()> {
            for (_, key) in &claimed {
                match self.record_at(key) {
                    Ok(Some(rec)) => {
                        kinds.push((*key, rec.kind.clone()));
                        self.stage_cancel(&mut tx, key, rec, reason)?;
                    }
                    Ok(None) => {}
                    Err(e) if e.kind() == crate::ErrorKind::Corruption => {
                        self.report_corrupt(&key.encode(), Some(key.id), &e);
                        report.corrupt += 1;
                    }
                    Err(e) => return Err(e),
                }
            }
            Ok(())
        })();
        let n = tx.len() as u64;
        let res = staged.and_then(|()| tx.commit());
        for (group, key) in &claimed {
            bands::lock(group).claimed.remove(&(key.state, key.pos()));
        }
        if let Err(e) = res {
            // Nothing moved: pollers must see the rows again.
            self.note_ready_rows(kinds.iter().map(|(k, kind)| (k, kind.as_str())));
            return Err(e);
        }
        report.cancelled += n;
        for id in busy {
            match self.cancel(&id, reason) {
                Ok(CancelOutcome::Requested) => report.requested += 1,
                Ok(_) => report.cancelled += 1,
                Err(e) if e.kind() == crate::ErrorKind::WrongState => {}
                Err(Error::NotFound(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Delete job `id` and its index entries. `WrongState` when it is
    /// leased (cancel it first).
    pub fn delete(&self, id: &JobId) -> Result<()> {
        for attempt in 0..ATTEMPTS {
            let key = self
                .key_of(id)?
                .ok_or_else(|| Error::NotFound(format!("no job {id}")))?;
            match key.state {
                State::Leased => {
                    return Err(Error::WrongState(format!(
                        "job {id} is leased; cancel it first (its holder settles it, or its lease expires, as cancelled), then delete it"
                    )))
                }
                State::Pending | State::Failed => {
                    let done = self.with_claimed(key, |rec| {
                        let mut tx = Tx::new(self);
                        tx.stage(Event::Deleted, Some(&key), None, &rec)?;
                        tx.commit()
                    })?;
                    if done.is_ok() {
                        return Ok(());
                    }
                }
                State::Waiting => {
                    let mut tx = Tx::new(self);
                    tx.hold_fan();
                    if self.key_of(id)? == Some(key) {
                        if let Some(rec) = self.record_at(&key)? {
                            tx.stage(Event::Deleted, Some(&key), None, &rec)?;
                            return tx.commit();
                        }
                    }
                }
                _ => {
                    // Finished rows move by pruning and purging (the
                    // maintenance lock) and an operator retry (a job lock).
                    let _m = self.maintenance.lock().unwrap_or_else(|p| p.into_inner());
                    let _g = self.job_lock(id);
                    if self.key_of(id)? == Some(key) {
                        let rec = self.record_at(&key)?.ok_or_else(|| {
                            Error::Corruption(format!("the id index names job {id}'s missing row"))
                        })?;
                        let mut tx = Tx::new(self);
                        tx.stage(Event::Deleted, Some(&key), None, &rec)?;
                        return tx.commit();
                    }
                }
            }
            back_off(attempt);
        }
        Err(Error::Storage(format!(
            "job {id} kept moving while it was being deleted; try again"
        )))
    }

    /// Stage the move of a pending, never-leased job past its expiry to
    /// dead.
    pub(super) fn stage_expired(
        &self,
        tx: &mut Tx<'_>,
        key: &JobKey,
        rec: &mut JobRecord,
        now: u64,
    ) -> Result<()> {
        let at = rec.ext.expires_at.unwrap_or(now);
        rec.last_error = Some("expired before start".into());
        rec.log(
            now,
            Event::Expired,
            format!("expired before start (at {at})"),
        );
        let to = JobKey {
            state: State::Dead,
            ts: now,
            ..*key
        };
        tx.stage(Event::Expired, Some(key), Some(&to), rec)
    }

    /// The reaper's half of expiry: jobs never leased whose expiry has
    /// passed go dead, at most `budget`. One seek when none is due.
    /// Returns how many expired.
    pub fn expire_unstarted(&self, now: u64, budget: usize) -> Result<usize> {
        let cf = self.cf(st::CF_EXPIRY)?;
        let mut expired = 0;
        while expired < budget {
            let mut ro = ReadOptions::default();
            ro.set_iterate_upper_bound(keys::expiry_key(
                now.saturating_add(1),
                &JobId::from_bytes([0; 16]),
            ));
            let mut it = self.db().raw_iterator_cf_opt(cf, ro);
            it.seek_to_first();
            let mut due = Vec::new();
            let mut stale = Vec::new();
            while let Some(k) = it.key() {
                if due.len() + stale.len() >= BATCH.min(budget - expired) {
                    break;
                }
                match keys::decode_expiry_key(k) {
                    Some((at, id)) => due.push((at, id, k.to_vec())),
                    None => stale.push(k.to_vec()),
                }
                it.next();
            }
            it.status()?;
            drop(it);
            if due.is_empty() && stale.is_empty() {
                break;
            }
            let (n, more_stale, busy) = self.expire_batch(&due, now)?;
            stale.extend(more_stale);
            // Every move that leaves the index deletes its entry in the same
            // batch: an entry read before such a move is gone now. Only one
            // still there is stale.
            let mut still = Vec::new();
            for k in stale {
                if self.db().get_pinned_cf(cf, &k)?.is_some() {
                    still.push(k);
                }
            }
            let stale = still;
            if !stale.is_empty() {
                // Entries that name no expiring job (never written by this
                // build; a hand-edited store): dropped, and reported.
                let mut b = rocksdb::WriteBatch::default();
                for k in &stale {
                    let e = Error::Corruption("stale expiry index entry".into());
                    self.report_corrupt(k, None, &e);
                    b.delete_cf(cf, k);
                }
                self.write(b)?;
            }
            expired += n;
            if busy || n == 0 && stale.is_empty() {
                // What is left is held by pollers, which expire it
                // themselves when they lease it.
                break;
            }
        }
        Ok(expired)
    }

    /// Expire the jobs of one batch of due expiry entries. Returns (expired,
    /// stale entries, whether some were held by pollers).
    fn expire_batch(
        &self,
        due: &[(u64, JobId, Vec<u8>)],
        now: u64,
    ) -> Result<(usize, Vec<Vec<u8>>, bool)> {
        let mut stale = Vec::new();
        let mut claimed: Vec<(Group, JobKey, u64, &[u8])> = Vec::new();
        let mut busy = false;
        for (at, id, k) in due {
            match self.key_of(id)? {
                Some(key) if key.state == State::Pending => {
                    let group = self.bands.scope(key.scope).group(key.priority);
                    if bands::lock(&group).claimed.insert((key.state, key.pos())) {
                        claimed.push((group, key, *at, k));
                    } else {
                        busy = true;
                    }
                }
                _ => stale.push(k.clone()),
            }
        }
        let mut tx = Tx::new(self);
        let mut unmoved = Vec::new();
        let mut moved = Vec::new();
        let staged = (|| -> Result<()> {
            for (_, key, at, k) in &claimed {
                match self.record_at(key)? {
                    Some(mut rec) if rec.generation == 0 && rec.ext.expires_at == Some(*at) => {
                        moved.push((*key, rec.kind.clone()));
                        self.stage_expired(&mut tx, key, &mut rec, now)?;
                    }
                    Some(rec) => {
                        unmoved.push((*key, rec.kind));
                        stale.push(k.to_vec());
                    }
                    None => stale.push(k.to_vec()),
                }
            }
            Ok(())
        })();
        let n = tx.len();
        let res = staged.and_then(|()| tx.commit());
        for (group, key, _, _) in &claimed {
            bands::lock(group).claimed.remove(&(key.state, key.pos()));
        }
        match res {
            Ok(()) => {
                // Rows claimed and left where they were: pollers must see
                // them again (they stepped past the claims).
                if !unmoved.is_empty() {
                    self.note_ready_rows(unmoved.iter().map(|(k, kind)| (k, kind.as_str())));
                }
                Ok((n, stale, busy))
            }
            Err(e) => {
                let all = unmoved.iter().chain(moved.iter());
                self.note_ready_rows(all.map(|(k, kind)| (k, kind.as_str())));
                Err(e)
            }
        }
    }
}
