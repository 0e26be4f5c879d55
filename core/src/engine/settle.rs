//! Settling leases: extend, complete, fail, release, and the reaper's expiry.
//! Every one checks the lease generation under the lease entry's lock and
//! moves the row in one batch; a stale token is `Aborted` and changes nothing.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::event::Event;
use rustc_hash::FxHashMap as HashMap;

use crate::job::{validate_worker_id, Completion, JobId, LeaseToken, NewJob, Scope, State};
use crate::limits;
use crate::payload::Encoding;
use crate::store::codec;
use crate::store::keys::JobKey;

use super::leases::{self, Entry, LeaseEntry};
use super::transition::Tx;
use super::Engine;

/// Where a settled lease goes.
enum Outcome {
    Completed(Option<Vec<u8>>, Encoding),
    /// Failed by the worker (`retryable`, with its own retry delay in ms
    /// or the backoff schedule's) or expired (reaper).
    Failed {
        reason: String,
        retryable: bool,
        expired: bool,
        retry_in: Option<u64>,
    },
    Released,
    /// Released until now + this many ms without spending an attempt
    /// (while the kind's `max_snoozes` allows).
    Snoozed(u64),
}

/// The answer to a settle whose job had a cancel request: the move was
/// made (the job is cancelled), and the holder learns why.
fn cancelled_answer(reason: &str, id: &JobId) -> Error {
    Error::Cancelled(format!("job {id} was cancelled while leased: {reason}"))
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

    pub fn complete(&self, c: Completion) -> Result<()> {
        self.check_result(c.result.as_ref())?;
        Self::check_then(&c.then)?;
        // Idempotency stripes before the lease entry (the lock order).
        let _stripes = self.prepare_new(&c.then)?;
        self.settle_then(&c.token, Outcome::Completed(c.result, c.encoding), c.then)
    }

    /// Complete many leased jobs in one atomic batch. Per item, in order:
    /// `Ok`, or why that item changed nothing (`Aborted`, `NotFound`, or
    /// `InvalidArgument` for an oversized result). Each token is checked on
    /// its own: when a job is named more than once, the first item holding
    /// its live lease completes it and every other item answers `Aborted`
    /// (a stale generation as such, a repeat of the live token as a second
    /// `complete` would). The outer error (a failed write) means nothing
    /// was completed.
    pub fn complete_many(&self, mut items: Vec<Completion>) -> Result<Vec<Result<()>>> {
        let mut answers: Vec<Option<Result<()>>> = (0..items.len()).map(|_| None).collect();
        // Each job once, in id order (the lock order `extend` uses), with
        // every item that names it.
        let mut by_job: BTreeMap<JobId, Vec<usize>> = BTreeMap::new();
        for (i, c) in items.iter().enumerate() {
            let ok = self.check_result(c.result.as_ref()).and_then(|()| {
                Self::check_then(&c.then)?;
                self.check_new(&c.then)
            });
            match ok {
                Err(e) => answers[i] = Some(Err(e)),
                Ok(()) => by_job.entry(c.token.id).or_default().push(i),
            }
        }
        // Every follow-up's idempotency stripe, before the lease entries.
        let stripes = self.stripes_of(
            by_job
                .values()
                .flatten()
                .flat_map(|&i| items[i].then.iter()),
        );
        let _stripes = self.idem_guards(stripes);
        let mut held: Vec<(Entry, Vec<usize>)> = Vec::with_capacity(by_job.len());
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
        let now = self.now();
        let mut tx = Tx::new(self);
        let mut moved = Vec::new();
        let mut in_batch: HashMap<(Scope, String), JobId> = HashMap::default();
        for (gi, (g, idx)) in guards.iter().enumerate() {
            let mut winner = None;
            for &i in idx.iter() {
                let verdict = match (Self::check_token(g, &items[i].token), winner) {
                    (Ok(()), None) => {
                        winner = Some(i);
                        continue;
                    }
                    (Ok(()), Some(_)) => Err(Error::Aborted(format!(
                        "job {} is named twice in one complete_many; the first completes it",
                        items[i].token.id
                    ))),
                    (Err(e), _) => Err(e),
                };
                answers[i] = Some(verdict);
            }
            let Some(i) = winner else { continue };
            let result = items[i].result.take();
            let outcome = Outcome::Completed(result, items[i].encoding);
            let cancel = g.record.ext.cancel_requested.clone();
            if self.stage_settle(&mut tx, g, outcome, now)? == State::Completed {
                let then = std::mem::take(&mut items[i].then);
                self.stage_then(&mut tx, items[i].token.id, then, now, &mut in_batch)?;
            }
            moved.push((gi, i, cancel));
        }
        tx.commit()?;
        for (gi, _, _) in &moved {
            guards[*gi].0.live = false;
        }
        drop(guards);
        for (gi, i, cancel) in moved {
            let (entry, _) = &held[gi];
            let id = items[i].token.id;
            self.leases.remove(&id, entry);
            answers[i] = Some(match cancel {
                Some(reason) => Err(cancelled_answer(&reason, &id)),
                None => Ok(()),
            });
        }
        Ok(answers
            .into_iter()
            .map(|a| a.unwrap_or_else(|| Err(Error::Storage("complete_many: no answer".into()))))
            .collect())
    }

    pub fn fail(&self, f: crate::control::Failure) -> Result<()> {
        let retry_in = match f.retry_in {
            Some(d) => Some(limits::ms(limits::check_duration("retry_in", d)?)),
            None => None,
        };
        self.settle(
            &f.token,
            Outcome::Failed {
                reason: f.reason,
                retryable: f.retryable,
                expired: false,
                retry_in,
            },
        )
    }

    pub fn release(&self, token: &LeaseToken) -> Result<()> {
        self.settle(token, Outcome::Released)
    }

    /// Hand a leased job back until now + `delay` without spending an
    /// attempt (past the kind's `max_snoozes`, the snooze counts as a
    /// failed attempt with that delay).
    pub fn snooze(&self, token: &LeaseToken, delay: std::time::Duration) -> Result<()> {
        let ms = limits::ms(limits::check_duration("snooze delay", delay)?);
        self.settle(token, Outcome::Snoozed(ms))
    }

    fn settle(&self, token: &LeaseToken, outcome: Outcome) -> Result<()> {
        self.settle_then(token, outcome, Vec::new())
    }

    /// Settle `token`; when the job completes, `then` is enqueued in the
    /// same batch (the caller validated it and holds its stripes).
    fn settle_then(&self, token: &LeaseToken, outcome: Outcome, then: Vec<NewJob>) -> Result<()> {
        let entry = self.entry_for(token)?;
        let mut e = leases::lock(&entry);
        Self::check_token(&e, token)?;
        let now = self.now();
        let mut tx = Tx::new(self);
        let cancel = e.record.ext.cancel_requested.clone();
        if self.stage_settle(&mut tx, &e, outcome, now)? == State::Completed && !then.is_empty() {
            let mut in_batch = HashMap::default();
            self.stage_then(&mut tx, token.id, then, now, &mut in_batch)?;
        }
        tx.commit()?;
        e.live = false;
        drop(e);
        self.leases.remove(&token.id, &entry);
        match cancel {
            Some(reason) => Err(cancelled_answer(&reason, &token.id)),
            None => Ok(()),
        }
    }

    /// Stage the move of a leased job into its next state. Returns that
    /// state.
    fn stage_settle(
        &self,
        tx: &mut Tx<'_>,
        e: &LeaseEntry,
        outcome: Outcome,
        now: u64,
    ) -> Result<State> {
        let mut rec = e.record.clone();
        let worker = rec.worker_id.clone().unwrap_or_default();
        rec.lease_deadline = None;
        if let Some(reason) = rec.ext.cancel_requested.take() {
            // Whatever the holder submits, or the lease expiring, records
            // the cancel; a completion's result is kept with it.
            let what = match outcome {
                Outcome::Completed(result, encoding) => {
                    rec.result = result;
                    rec.ext.result_encoding = encoding;
                    "it completed"
                }
                Outcome::Failed { expired: true, .. } => "its lease expired",
                Outcome::Failed { .. } => "it failed",
                Outcome::Released => "it was released",
                Outcome::Snoozed(_) => "it was snoozed",
            };
            rec.log(
                now,
                Event::Cancelled,
                format!("{reason} ({worker}: {what})"),
            );
            let new = JobKey {
                state: State::Cancelled,
                ts: now,
                ..e.key
            };
            tx.stage(Event::Cancelled, Some(&e.key), Some(&new), &rec)?;
            return Ok(State::Cancelled);
        }
        let outcome = match outcome {
            Outcome::Snoozed(ms) => {
                rec.ext.snoozes = rec.ext.snoozes.saturating_add(1);
                if rec.ext.snoozes > self.cfg.max_snoozes_for(&rec.kind) {
                    Outcome::Failed {
                        reason: format!(
                            "snoozed more than max_snoozes ({}) times",
                            self.cfg.max_snoozes_for(&rec.kind)
                        ),
                        retryable: true,
                        expired: false,
                        retry_in: Some(ms),
                    }
                } else {
                    let at = now.saturating_add(ms).min(limits::MAX_INSTANT_MS);
                    rec.ready_at = at;
                    rec.log(now, Event::Snoozed, format!("{worker}: for {ms} ms"));
                    let new = JobKey {
                        state: State::Pending,
                        ts: at,
                        ..e.key
                    };
                    tx.stage(Event::Snoozed, Some(&e.key), Some(&new), &rec)?;
                    return Ok(State::Pending);
                }
            }
            o => o,
        };
        let (event, state, ts) = match outcome {
            Outcome::Completed(result, encoding) => {
                rec.result = result;
                rec.ext.result_encoding = encoding;
                rec.log(now, Event::Completed, worker);
                (Event::Completed, State::Completed, now)
            }
            Outcome::Released => {
                rec.log(now, Event::Released, worker);
                // Back to its place in line: a graceful hand-back is not a retry.
                (Event::Released, State::Pending, rec.ready_at.min(now))
            }
            Outcome::Snoozed(_) => {
                return Err(Error::Storage(
                    "internal error: a snooze reached the failure arm".into(),
                ))
            }
            Outcome::Failed {
                reason,
                retryable,
                expired,
                retry_in,
            } => {
                rec.attempts = rec.attempts.saturating_add(1);
                let max = self.cfg.max_attempts_for(&rec.kind, rec.max_attempts);
                rec.ext.ceiling = Some(max);
                let mut reason = reason;
                codec::truncate_utf8(&mut reason, codec::MAX_DETAIL_LEN);
                rec.last_error = Some(reason.clone());
                let what = if expired {
                    Event::LeaseExpired
                } else {
                    Event::Failed
                };
                let detail = format!("{worker}: {reason} (attempt {} of {max})", rec.attempts);
                rec.log(now, what, detail);
                if !retryable || rec.attempts >= max {
                    let why = if retryable {
                        "attempts exhausted"
                    } else {
                        "not retryable"
                    };
                    rec.log(now, Event::Dead, why);
                    tx.also_publish(what, &e.key, &rec);
                    if expired {
                        tx.also_count(Event::LeaseExpired);
                    }
                    (Event::Dead, State::Dead, now)
                } else {
                    let wait = retry_in.unwrap_or_else(|| {
                        limits::ms(self.cfg.backoff_delay(&rec.kind, rec.attempts))
                    });
                    let at = now.saturating_add(wait).min(limits::MAX_INSTANT_MS);
                    rec.ready_at = at;
                    if expired {
                        // The reaper returns expired leases to pending.
                        (Event::LeaseExpired, State::Pending, at)
                    } else {
                        (Event::Failed, State::Failed, at)
                    }
                }
            }
        };
        let new = JobKey { state, ts, ..e.key };
        tx.stage(event, Some(&e.key), Some(&new), &rec)?;
        Ok(state)
    }

    /// Renew each lease whose generation and worker still match. Per token:
    /// the new deadline, or `Aborted` (lease lost) / `NotFound`. A token that
    /// appears twice gets the same answer twice.
    pub fn extend(&self, tokens: &[LeaseToken], worker: &str) -> Result<Vec<Result<u64>>> {
        self.heartbeat(tokens, &[], worker)
    }

    /// [`Engine::extend`], each token with an optional progress report
    /// (`progress[i]` for `tokens[i]`; shorter, or empty bytes, means
    /// none). A renewal that
    /// carries progress writes it into the record in the same write (an
    /// `progress` move instead of `extended`), even when the deadline does
    /// not move. A report over `MAX_PROGRESS_BYTES`, or more reports than
    /// tokens, is `InvalidArgument` for the whole call (nothing renewed).
    pub fn heartbeat(
        &self,
        tokens: &[LeaseToken],
        progress: &[Option<Vec<u8>>],
        worker: &str,
    ) -> Result<Vec<Result<u64>>> {
        validate_worker_id(worker)?;
        validate_progress(tokens.len(), progress)?;
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
        let mut tx = Tx::new(self);
        let mut moved = Vec::new();
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
            let report = renew.iter().rev().find_map(|&i| {
                progress
                    .get(i)
                    .and_then(Option::as_ref)
                    .filter(|p| !p.is_empty())
            });
            if renew.is_empty() {
                continue;
            }
            if let Some(reason) = &g.record.ext.cancel_requested {
                // Not renewed: the holder stops, and a holder that does
                // not loses the job at its deadline all the same.
                for i in renew {
                    answers[i] = Some(Err(cancelled_answer(reason, &tokens[i].id)));
                }
                continue;
            }
            let ttl = limits::ms(self.cfg.lease_ttl_for(&g.record.kind));
            let mut deadline = now.saturating_add(ttl).min(limits::MAX_INSTANT_MS);
            if let (Some(max), Some(at)) = (
                self.cfg.max_lease_total_for(&g.record.kind),
                g.record.ext.leased_at,
            ) {
                let end = at.saturating_add(limits::ms(max));
                if now >= end {
                    for i in renew {
                        answers[i] = Some(Err(Error::Aborted(format!(
                            "job {} has been leased for {} ms, past max_lease_total ({} ms): not renewed",
                            tokens[i].id,
                            now - at,
                            limits::ms(max)
                        ))));
                    }
                    continue;
                }
                deadline = deadline.min(end);
            }
            let deadline = deadline.max(g.key.ts);
            if deadline == g.key.ts && report.is_none() {
                for i in renew {
                    answers[i] = Some(Ok(deadline));
                }
                continue;
            }
            let mut rec = g.record.clone();
            rec.lease_deadline = Some(deadline);
            let event = match report {
                Some(p) => {
                    rec.ext.progress = Some(p.clone());
                    Event::Progress
                }
                None => Event::Extended,
            };
            let new = JobKey {
                ts: deadline,
                ..g.key
            };
            tx.stage(event, Some(&g.key), Some(&new), &rec)?;
            moved.push((gi, new, rec, renew));
        }
        tx.commit()?;
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
                retry_in: None,
            };
            let mut tx = Tx::new(self);
            let state = self.stage_settle(&mut tx, &e, outcome, now)?;
            tx.commit()?;
            e.live = false;
            drop(e);
            self.leases.remove(&id, &entry);
            if state == State::Dead {
                dead += 1;
            } else if state == State::Cancelled {
                // Counted by its `cancelled` event; not an expiry.
            } else {
                expired += 1;
            }
        }
        Ok((expired, dead))
    }
}

/// Progress reports are checked before any lease is touched, so a bad one
/// renews nothing (a Worker checks each report when its handler makes it).
fn validate_progress(tokens: usize, progress: &[Option<Vec<u8>>]) -> Result<()> {
    if progress.len() > tokens {
        return Err(Error::invalid(format!(
            "{} progress reports for {tokens} leases; at most one per lease",
            progress.len()
        )));
    }
    for (i, p) in progress.iter().enumerate() {
        if let Some(p) = p.as_ref().filter(|p| p.len() > limits::MAX_PROGRESS_BYTES) {
            return Err(Error::invalid(format!(
                "progress for lease {i} is {} bytes; at most {} (a small number, string or map)",
                p.len(),
                limits::MAX_PROGRESS_BYTES
            )));
        }
    }
    Ok(())
}
