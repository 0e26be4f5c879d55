//! Settling leases: extend, complete, fail, release, and the reaper's expiry.
//! Every one checks the lease generation under the lease entry's lock and
//! moves the row in one batch; a stale token is `Aborted` and changes nothing.

use std::collections::{btree_map, BTreeMap};

use rocksdb::WriteBatch;

use crate::error::{Error, Result};
use crate::job::{validate_worker_id, JobId, LeaseToken, State};
use crate::metrics::{delta, Transition};
use crate::store::codec::{self, JobRecord};
use crate::store::keys::{self, JobKey};
use crate::store::{self as st};

use super::leases::{self, Entry, LeaseEntry};
use super::Engine;

/// Where a settled lease goes.
enum Outcome {
    Completed(Option<Vec<u8>>),
    /// Failed by the worker (`retryable`) or expired (reaper).
    Failed {
        reason: String,
        retryable: bool,
        expired: bool,
    },
    Released,
}

impl Engine {
    /// The live lease entry for `token`, or why there is none.
    fn entry_for(&self, token: &LeaseToken) -> Result<Entry> {
        match self.leases.get(&token.id) {
            Some(e) => Ok(e),
            None => Err(self.not_leased(&token.id)?),
        }
    }

    /// The error for a token whose job holds no lease: `NotFound` when the
    /// job does not exist, `Aborted` when it has moved on.
    fn not_leased(&self, id: &JobId) -> Result<Error> {
        Ok(match self.key_of(id)? {
            None => Error::NotFound(format!("no job {id}")),
            Some(k) => Error::Aborted(format!("job {id} is {} and holds no lease", k.state)),
        })
    }

    fn check_token(e: &LeaseEntry, token: &LeaseToken) -> Result<()> {
        if !e.live {
            return Err(Error::Aborted(format!(
                "job {} is no longer leased",
                token.id
            )));
        }
        if e.record.generation != token.generation {
            return Err(Error::Aborted(format!(
                "lease generation {} of job {} is stale; the job is at generation {} (worker {})",
                token.generation,
                token.id,
                e.record.generation,
                e.record.worker_id.as_deref().unwrap_or("?")
            )));
        }
        Ok(())
    }

    /// `InvalidArgument` when a result is over `max_payload_bytes`.
    fn check_result(&self, result: Option<&Vec<u8>>) -> Result<()> {
        match result {
            Some(r) if r.len() > self.cfg.max_payload_bytes => Err(Error::invalid(format!(
                "result of {} bytes is over the limit of {} bytes (max_payload_bytes)",
                r.len(),
                self.cfg.max_payload_bytes
            ))),
            _ => Ok(()),
        }
    }

    pub fn complete(&self, token: &LeaseToken, result: Option<Vec<u8>>) -> Result<()> {
        self.check_result(result.as_ref())?;
        self.settle(token, Outcome::Completed(result))
    }

    /// Complete many leased jobs in one atomic batch. Per item, in order:
    /// `Ok`, or why that item changed nothing (`Aborted`, `NotFound`, or
    /// `InvalidArgument` for an oversized result; a job named twice answers
    /// `Aborted` the second time, as a second `complete` would). The outer
    /// error (a failed write) means nothing was completed.
    pub fn complete_many(
        &self,
        mut items: Vec<(LeaseToken, Option<Vec<u8>>)>,
    ) -> Result<Vec<Result<()>>> {
        let mut answers: Vec<Option<Result<()>>> = (0..items.len()).map(|_| None).collect();
        // Each job once, in id order (the lock order `extend` uses).
        let mut by_job: BTreeMap<JobId, usize> = BTreeMap::new();
        for (i, (t, r)) in items.iter().enumerate() {
            if let Err(e) = self.check_result(r.as_ref()) {
                answers[i] = Some(Err(e));
            } else if let btree_map::Entry::Vacant(v) = by_job.entry(t.id) {
                v.insert(i);
            } else {
                answers[i] = Some(Err(Error::Aborted(format!(
                    "job {} is named twice in one complete_many; the first completes it",
                    t.id
                ))));
            }
        }
        let mut held: Vec<(Entry, usize)> = Vec::with_capacity(by_job.len());
        for (id, i) in by_job {
            match self.leases.get(&id) {
                Some(e) => held.push((e, i)),
                None => answers[i] = Some(Err(self.not_leased(&id)?)),
            }
        }
        let mut guards: Vec<_> = held.iter().map(|(e, i)| (leases::lock(e), *i)).collect();
        let now = self.now();
        let mut batch = WriteBatch::default();
        let mut moved = Vec::new();
        for (gi, (g, i)) in guards.iter().enumerate() {
            if let Err(e) = Self::check_token(g, &items[*i].0) {
                answers[*i] = Some(Err(e));
                continue;
            }
            let result = items[*i].1.take();
            let (new, rec, t) = self.settled(g, Outcome::Completed(result), now, &mut batch)?;
            moved.push((gi, new, rec, t));
        }
        if !moved.is_empty() {
            self.write(batch)?;
        }
        for (gi, ..) in &moved {
            guards[*gi].0.live = false;
        }
        drop(guards);
        for (gi, new, rec, t) in moved {
            let (entry, i) = &held[gi];
            self.leases.remove(&items[*i].0.id, entry);
            self.after_settle(&new, &rec, t);
            answers[*i] = Some(Ok(()));
        }
        Ok(answers
            .into_iter()
            .map(|a| a.unwrap_or_else(|| Err(Error::Storage("complete_many: no answer".into()))))
            .collect())
    }

    pub fn fail(&self, token: &LeaseToken, reason: &str, retryable: bool) -> Result<()> {
        self.settle(
            token,
            Outcome::Failed {
                reason: reason.to_string(),
                retryable,
                expired: false,
            },
        )
    }

    pub fn release(&self, token: &LeaseToken) -> Result<()> {
        self.settle(token, Outcome::Released)
    }

    fn settle(&self, token: &LeaseToken, outcome: Outcome) -> Result<()> {
        let entry = self.entry_for(token)?;
        let mut e = leases::lock(&entry);
        Self::check_token(&e, token)?;
        let now = self.now();
        let mut batch = WriteBatch::default();
        let (new_key, rec, t) = self.settled(&e, outcome, now, &mut batch)?;
        self.write(batch)?;
        e.live = false;
        drop(e);
        self.leases.remove(&token.id, &entry);
        self.after_settle(&new_key, &rec, t);
        Ok(())
    }

    /// Build the move of a leased job into its next state.
    fn settled(
        &self,
        e: &LeaseEntry,
        outcome: Outcome,
        now: u64,
        batch: &mut WriteBatch,
    ) -> Result<(JobKey, JobRecord, Transition)> {
        let mut rec = e.record.clone();
        let worker = rec.worker_id.clone().unwrap_or_default();
        rec.lease_deadline = None;
        let (state, ts, t) = match outcome {
            Outcome::Completed(result) => {
                rec.result = result;
                rec.log(now, "completed", worker);
                (State::Completed, now, Transition::Completed)
            }
            Outcome::Released => {
                rec.log(now, "released", worker);
                // Back to its place in line: a graceful hand-back is not a retry.
                (State::Pending, rec.ready_at.min(now), Transition::Released)
            }
            Outcome::Failed {
                reason,
                retryable,
                expired,
            } => {
                rec.attempts = rec.attempts.saturating_add(1);
                let max = self.cfg.max_attempts_for(&rec.kind, rec.max_attempts);
                let mut reason = reason;
                codec::truncate_utf8(&mut reason, codec::MAX_DETAIL_LEN);
                rec.last_error = Some(reason.clone());
                let what = if expired { "lease_expired" } else { "failed" };
                let detail = format!("{worker}: {reason} (attempt {} of {max})", rec.attempts);
                rec.log(now, what, detail);
                if !retryable || rec.attempts >= max {
                    let why = if retryable {
                        "attempts exhausted"
                    } else {
                        "not retryable"
                    };
                    rec.log(now, "dead", why);
                    (State::Dead, now, Transition::Dead)
                } else {
                    let wait = self.cfg.backoff_delay(&rec.kind, rec.attempts).as_millis() as u64;
                    let at = now.saturating_add(wait);
                    rec.ready_at = at;
                    if expired {
                        // The reaper returns expired leases to pending (spec §3).
                        (State::Pending, at, Transition::LeaseExpired)
                    } else {
                        (State::Failed, at, Transition::Failed)
                    }
                }
            }
        };
        let new = JobKey { state, ts, ..e.key };
        let nk = new.encode();
        batch.delete_cf(self.cf(st::CF_JOBS)?, e.key.encode());
        batch.put_cf(self.cf(st::CF_JOBS)?, nk, codec::encode(&rec)?);
        batch.put_cf(self.cf(st::CF_IDS)?, new.id.as_bytes(), nk);
        if matches!(state, State::Pending | State::Failed) {
            batch.put_cf(
                self.cf(st::CF_KINDS)?,
                keys::kind_key(&new.scope, &rec.kind, new.priority, new.pos()),
                [state.byte()],
            );
        }
        batch.merge_cf(
            self.cf(st::CF_COUNTERS)?,
            rec.kind.as_bytes(),
            st::encode_counters(&delta(Some(State::Leased), Some(state))),
        );
        Ok((new, rec, t))
    }

    fn after_settle(&self, new: &JobKey, rec: &JobRecord, t: Transition) {
        self.counts
            .add(&rec.kind, &delta(Some(State::Leased), Some(new.state)));
        self.metrics.count(t, 1);
        if matches!(new.state, State::Pending | State::Failed) {
            self.note_ready_row(new, &rec.kind);
        }
    }

    /// Renew each lease whose generation and worker still match. Per token:
    /// the new deadline, or `Aborted` (lease lost) / `NotFound`. A token that
    /// appears twice gets the same answer twice.
    pub fn extend(&self, tokens: &[LeaseToken], worker: &str) -> Result<Vec<Result<u64>>> {
        validate_worker_id(worker)?;
        let now = self.now();
        // Each job once, in id order, so overlapping extends cannot deadlock.
        let mut by_job: BTreeMap<JobId, Vec<usize>> = BTreeMap::new();
        for (i, t) in tokens.iter().enumerate() {
            by_job.entry(t.id).or_default().push(i);
        }
        let mut answers: Vec<Option<Result<u64>>> = (0..tokens.len()).map(|_| None).collect();
        let mut held: Vec<(Entry, Vec<usize>)> = Vec::new();
        for (id, idx) in by_job {
            match self.leases.get(&id) {
                Some(e) => held.push((e, idx)),
                None => {
                    for i in idx {
                        answers[i] = Some(Err(self.not_leased(&id)?));
                    }
                }
            }
        }
        let mut guards: Vec<_> = held.iter().map(|(e, idx)| (leases::lock(e), idx)).collect();
        let mut batch = WriteBatch::default();
        let mut moved = Vec::new();
        let jobs_cf = self.cf(st::CF_JOBS)?;
        let ids_cf = self.cf(st::CF_IDS)?;
        for (gi, (g, idx)) in guards.iter().enumerate() {
            let mut renew = Vec::new();
            for &i in idx.iter() {
                let token = &tokens[i];
                let verdict = Self::check_token(g, token).and_then(|()| {
                    if g.record.worker_id.as_deref() == Some(worker) {
                        Ok(())
                    } else {
                        Err(Error::Aborted(format!(
                            "job {} is leased by worker {:?}, not {worker:?}",
                            token.id,
                            g.record.worker_id.as_deref().unwrap_or("")
                        )))
                    }
                });
                match verdict {
                    Ok(()) => renew.push(i),
                    Err(err) => answers[i] = Some(Err(err)),
                }
            }
            if renew.is_empty() {
                continue;
            }
            let ttl = self.cfg.lease_ttl_for(&g.record.kind).as_millis() as u64;
            let deadline = now.saturating_add(ttl).max(g.key.ts);
            if deadline == g.key.ts {
                for i in renew {
                    answers[i] = Some(Ok(deadline));
                }
                continue;
            }
            let mut rec = g.record.clone();
            rec.lease_deadline = Some(deadline);
            let new = JobKey {
                ts: deadline,
                ..g.key
            };
            batch.delete_cf(jobs_cf, g.key.encode());
            batch.put_cf(jobs_cf, new.encode(), codec::encode(&rec)?);
            batch.put_cf(ids_cf, new.id.as_bytes(), new.encode());
            moved.push((gi, new, rec, renew));
        }
        if !moved.is_empty() {
            self.write(batch)?;
            self.metrics.count(Transition::Extended, moved.len() as u64);
        }
        for (gi, new, rec, renew) in moved {
            let g = &mut guards[gi].0;
            g.key = new;
            g.record = rec;
            for i in renew {
                answers[i] = Some(Ok(new.ts));
            }
        }
        drop(guards);
        Ok(answers
            .into_iter()
            .map(|a| {
                a.unwrap_or_else(|| Err(Error::Storage("extend left a token unanswered".into())))
            })
            .collect())
    }

    /// The reaper's half: every lease past its deadline goes back to pending
    /// with backoff, or dead when out of attempts. Returns (expired, dead).
    pub fn expire_leases(&self, now: u64) -> Result<(usize, usize)> {
        let (mut expired, mut dead) = (0, 0);
        for id in self.leases.expired(now) {
            let Some(entry) = self.leases.get(&id) else {
                continue;
            };
            let mut e = leases::lock(&entry);
            if !e.live || e.key.ts > now {
                continue; // settled or extended since the scan
            }
            let outcome = Outcome::Failed {
                reason: "lease expired".to_string(),
                retryable: true,
                expired: true,
            };
            let mut batch = WriteBatch::default();
            let (new, rec, t) = self.settled(&e, outcome, now, &mut batch)?;
            self.write(batch)?;
            e.live = false;
            drop(e);
            self.leases.remove(&id, &entry);
            if new.state == State::Dead {
                self.metrics.count(Transition::LeaseExpired, 1);
                dead += 1;
            } else {
                expired += 1;
            }
            self.after_settle(&new, &rec, t);
        }
        Ok((expired, dead))
    }
}
