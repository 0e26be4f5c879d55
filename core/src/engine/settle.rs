//! Settling leases: complete, fail, release, snooze, and the reaper's expiry.
//! Every one checks the lease generation under the lease entry's lock and
//! moves the row in one batch; a stale token is `Aborted` and changes nothing,
//! unless it repeats the settle that ended its lease (`resettle`).

use crate::error::{Error, Result};
use crate::event::Event;
use rustc_hash::FxHashMap as HashMap;

use crate::job::{Completion, JobId, LeaseToken, NewJob, State};
use crate::limits;
use crate::payload::Encoding;
use crate::store::codec;
use crate::store::keys::JobKey;

use super::leases::{self, LeaseEntry};
use super::resettle::{SettleOp, OVER_SNOOZED};
use super::transition::Tx;
use super::Engine;

/// Where a settled lease goes.
pub(super) enum Outcome {
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

impl Outcome {
    /// A worker's failure (`fail`, `fail_many`); `InvalidArgument` for a
    /// `retry_in` over [`limits::MAX_DURATION`].
    pub(super) fn failure(f: crate::control::Failure) -> Result<Outcome> {
        let retry_in = match f.retry_in {
            Some(d) => Some(limits::ms(limits::check_duration("retry_in", d)?)),
            None => None,
        };
        Ok(Outcome::Failed {
            reason: f.reason,
            retryable: f.retryable,
            expired: false,
            retry_in,
        })
    }

    /// The call that asked for it (none for the reaper's expiry).
    pub(super) fn op(&self) -> Option<SettleOp> {
        match self {
            Outcome::Completed(..) => Some(SettleOp::Complete),
            Outcome::Failed { expired: true, .. } => None,
            Outcome::Failed { .. } => Some(SettleOp::Fail),
            Outcome::Released => Some(SettleOp::Release),
            Outcome::Snoozed(_) => Some(SettleOp::Snooze),
        }
    }
}

/// The answer to a settle whose job had a cancel request: the move was
/// made (the job is cancelled), and the holder learns why.
pub(super) fn cancelled_answer(reason: &str, id: &JobId) -> Error {
    Error::Cancelled(format!("job {id} was cancelled while leased: {reason}"))
}

impl Engine {
    /// The error for a token whose job holds no lease: `NotFound` when the
    /// job does not exist, `Aborted` when it has moved on.
    pub(super) fn not_leased(&self, id: &JobId) -> Result<Error> {
        Ok(match self.key_of(id)? {
            None => Error::NotFound(format!("no job {id}")),
            Some(k) => Error::Aborted(format!("job {id} is {} and holds no lease", k.state)),
        })
    }

    /// A token with no live lease: what an earlier settle of it by the
    /// same call answered (a retry), else `otherwise`.
    pub(super) fn settled_before(
        &self,
        token: &LeaseToken,
        op: Option<SettleOp>,
        otherwise: Error,
    ) -> Result<()> {
        if let (Some(op), Error::Aborted(_)) = (op, &otherwise) {
            if let Some(answer) = self.repeated_settle(token, op)? {
                return answer;
            }
        }
        Err(otherwise)
    }

    pub(super) fn check_token(e: &LeaseEntry, token: &LeaseToken) -> Result<()> {
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
    pub(super) fn check_result(&self, result: Option<&Vec<u8>>) -> Result<()> {
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

    pub fn fail(&self, f: crate::control::Failure) -> Result<()> {
        let token = f.token;
        self.settle(&token, Outcome::failure(f)?)
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
        let op = outcome.op();
        let Some(entry) = self.leases.get(&token.id) else {
            return self.settled_before(token, op, self.not_leased(&token.id)?);
        };
        let mut e = leases::lock(&entry);
        if let Err(stale) = Self::check_token(&e, token) {
            // Not live: a settle of this lease committed while we waited.
            if !e.live {
                drop(e);
                return self.settled_before(token, op, stale);
            }
            return Err(stale);
        }
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
    pub(super) fn stage_settle(
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
            let what = outcome
                .op()
                .map_or("its lease expired", SettleOp::cancelled_what);
            if let Outcome::Completed(result, encoding) = outcome {
                rec.result = result;
                rec.ext.result_encoding = encoding;
            }
            // The reason gives way to the suffix, which a repeated settle
            // reads (`resettle`).
            let suffix = format!(" ({worker}: {what})");
            let mut reason = reason;
            codec::truncate_utf8(&mut reason, codec::MAX_DETAIL_LEN - suffix.len());
            rec.log(now, Event::Cancelled, format!("{reason}{suffix}"));
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
                            "{OVER_SNOOZED} ({}) times",
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
                    let wait = retry_in.unwrap_or_else(|| self.retry_delay(&rec));
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

    /// The backoff before `rec`'s next attempt (its attempts already
    /// counted): the schedule of its kind (or its own base), spread by the
    /// kind's jitter with the engine's draw, in ms.
    fn retry_delay(&self, rec: &codec::JobRecord) -> u64 {
        let b = self.cfg.backoff_for_job(&rec.kind, rec.ext.backoff_base);
        let d = crate::backoff::delay(&b, rec.attempts);
        let j = self.cfg.backoff_jitter_for(&rec.kind);
        let d = if j > 0.0 {
            crate::backoff::jittered(d, j, self.jitter.unit())
        } else {
            d
        };
        limits::ms(d)
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
            if !e.live || e.expires_at() > now {
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
