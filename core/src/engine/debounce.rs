//! Debounce (issue 44): `debounce` (with `debounce_max`) on a keyed
//! enqueue. The job runs `debounce` after the latest enqueue of its key:
//! while the key's job is pending, a repeat replaces its payload (and
//! payload encoding) and moves its one ready row to now + `debounce`, never
//! past the first enqueue + `debounce_max` (kept on the record, ext tag 15);
//! once the job was leased (leased, retry-waiting) or finished, a repeat
//! makes a new job that takes the key.
//!
//! The repeat runs under the key's idempotency stripe (held by
//! `enqueue_one` / `enqueue_many` from the check to the commit), so
//! concurrent producers of one key are serialised; the pending row is
//! claimed exactly as a poller claims it (as `steer.rs` does), so no poller
//! leases the job while its payload and row move, and the record, the
//! payload row and the ready-index move are one batch: the enqueue's.

use rustc_hash::FxHashMap as HashMap;

use crate::error::{Error, Result};
use crate::event::Event;
use crate::job::{EnqueueOptions, Enqueued, JobId, NewJob, Scope, State};
use crate::limits;
use crate::store::keys::JobKey;
use crate::store::{self as st};

use super::bands::{self, Group};
use super::control::{back_off, ATTEMPTS};
use super::enqueue::Origin;
use super::transition::Tx;
use super::Engine;

/// Ready rows an enqueue claimed to debounce them: given back after its
/// batch is written (or not).
pub(super) type Claims = Vec<(Group, JobKey, String)>;

/// `InvalidArgument` unless `debounce` / `debounce_max` are usable on a job
/// with these options at `now`, naming the field; `Ok` without them.
pub(crate) fn check(o: &EnqueueOptions, now: u64) -> Result<()> {
    let Some(d) = o.debounce else {
        if o.debounce_max.is_some() {
            return Err(Error::invalid(
                "debounce_max needs debounce (it bounds how far debounce moves the job)",
            ));
        }
        return Ok(());
    };
    if o.idempotency_key.is_none() {
        return Err(Error::invalid(
            "debounce needs an idempotency_key: the debounced job is the key's",
        ));
    }
    if d.as_millis() == 0 {
        return Err(Error::invalid(format!(
            "debounce must be at least 1ms, got {d:?}"
        )));
    }
    limits::check_duration("debounce", d)?;
    limits::instant_after("debounce", now, d)?;
    if let Some(m) = o.debounce_max {
        if m < d {
            return Err(Error::invalid(format!(
                "debounce_max ({}) must be at least debounce ({})",
                humantime::format_duration(m),
                humantime::format_duration(d)
            )));
        }
        limits::check_duration("debounce_max", m)?;
        limits::instant_after("debounce_max", now, m)?;
    }
    let clash = if o.unique_for.is_some() {
        Some("unique_for")
    } else if o.run_at.is_some() {
        Some("run_at")
    } else if o.delay.is_some() {
        Some("delay")
    } else {
        None
    };
    if let Some(other) = clash {
        return Err(Error::invalid(format!(
            "debounce cannot be combined with {other}: debounce sets the run time \
             (now + debounce) and the key's rule (one pending job, updated)"
        )));
    }
    Ok(())
}

impl Engine {
    /// Stage one caller's job (`enqueue_one`, `enqueue_many`): a debounce
    /// repeat updates the key's pending job (its claim goes to `claims`),
    /// anything else is [`Engine::stage_new`].
    pub(super) fn stage_caller(
        &self,
        tx: &mut Tx<'_>,
        j: NewJob,
        now: u64,
        in_batch: &mut HashMap<(Scope, String), JobId>,
        claims: &mut Claims,
    ) -> Result<Enqueued> {
        let (Some(d), Some(k)) = (j.options.debounce, j.options.idempotency_key.clone()) else {
            return self.stage_new(tx, j, now, in_batch, Origin::Caller);
        };
        let scope = j.options.scope.unwrap_or(Scope::SYSTEM);
        if in_batch.contains_key(&(scope, k.clone())) {
            return Err(Error::invalid(format!(
                "debounce: idempotency_key {k:?} is given twice in one enqueue_many; \
                 a batch debounces a key once"
            )));
        }
        for attempt in 0..ATTEMPTS {
            let Some(key) = self.pending_of_key(&scope, &k)? else {
                return self.stage_new(tx, j, now, in_batch, Origin::Caller);
            };
            let group = self.bands.scope(key.scope).group(key.priority);
            if !bands::lock(&group).claimed.insert((key.state, key.pos())) {
                back_off(attempt); // a poller is taking it: look again
                continue;
            }
            let rec = match self.record_at(&key) {
                Ok(Some(rec)) => rec,
                other => {
                    bands::lock(&group).claimed.remove(&(key.state, key.pos()));
                    other?;
                    back_off(attempt); // moved since it was read
                    continue;
                }
            };
            claims.push((group, key, rec.kind.clone()));
            let id = key.id;
            let mut ts = limits::instant_after("debounce", now, d)?;
            if let Some(until) = rec.ext.debounce_until {
                ts = ts.min(until);
            }
            let mut rec = rec;
            let payload = j.payload;
            if payload.len() > st::INLINE_PAYLOAD_MAX {
                tx.put_payload(&id, &payload)?;
                rec.ext.payload_len = Some(payload.len() as u64);
                rec.payload = Vec::new();
            } else {
                if rec.ext.payload_len.take().is_some() {
                    tx.delete_raw(st::CF_PAYLOADS, id.as_bytes())?;
                }
                rec.payload = payload;
            }
            rec.ext.payload_encoding = j.options.encoding;
            rec.ready_at = ts;
            rec.log(
                now,
                Event::Debounced,
                format!("payload replaced; due at {ts} ms (was {} ms)", key.ts),
            );
            let to = JobKey { ts, ..key };
            tx.stage(Event::Debounced, Some(&key), Some(&to), &rec)?;
            in_batch.insert((scope, k), id);
            return Ok(Enqueued {
                id,
                created: false,
                debounced: true,
            });
        }
        Err(Error::Storage(format!(
            "debounce: the job of idempotency_key {k:?} kept moving; try again"
        )))
    }

    /// The ready row of the job `(scope, key)` names, when it is pending.
    fn pending_of_key(&self, scope: &Scope, key: &str) -> Result<Option<JobKey>> {
        let Some(id) = self.idem_entry(scope, key)? else {
            return Ok(None);
        };
        Ok(self.key_of(&id)?.filter(|k| k.state == State::Pending))
    }

    /// Give back the claims of a debounce batch; when it was not written
    /// (`written` false) the rows did not move and pollers must see them
    /// again.
    pub(super) fn release_claims(&self, claims: Claims, written: bool) {
        for (group, key, _) in &claims {
            bands::lock(group).claimed.remove(&(key.state, key.pos()));
        }
        if !written {
            self.note_ready_rows(claims.iter().map(|(_, k, kind)| (k, kind.as_str())));
        }
    }
}

/// The latest run time of a new debounced job enqueued at `now`: now +
/// `debounce_max` when given (none without it, or without `debounce`).
pub(super) fn latest(o: &EnqueueOptions, now: u64) -> Result<Option<u64>> {
    match (o.debounce, o.debounce_max) {
        (Some(_), Some(m)) => limits::instant_after("debounce_max", now, m).map(Some),
        _ => Ok(None),
    }
}
