//! Settles that are safe to retry. A `complete`, `fail`, `release` or
//! `snooze` repeated with the token of a lease it already settled answers
//! what the first call answered (success, or `Cancelled` when the settle
//! recorded a cancel request) and changes nothing: a client whose
//! connection dropped after sending cannot tell whether its call took
//! effect, and sends it again (docs/ARCHITECTURE.md "Repeated settles").
//!
//! The answer comes from the record alone, on the path that finds no live
//! lease (the hot path pays nothing). Only a lease bumps the generation and
//! a settle keeps it, so a record still at the token's generation was last
//! leased by that token; its state and last log entry then say how the
//! lease ended. The rule: the job sits in the call's outcome state, and its
//! last entry is that outcome by the lease's worker:
//!
//! | call       | state            | last entry(ies)                         |
//! |------------|------------------|-----------------------------------------|
//! | `complete` | completed        | `completed`                             |
//! | `fail`     | failed / dead    | `failed` (then `dead`)                  |
//! | `release`  | pending          | `released`                              |
//! | `snooze`   | pending          | `snoozed`; past `max_snoozes`, as `fail`|
//! | any        | cancelled        | `cancel_requested`, `cancelled` by it   |
//!
//! Anything else (a newer generation, a lease the reaper expired, a job an
//! operator moved since, another kind of settle) gives no answer, and the
//! caller answers `Aborted` as before; a job that is gone answers
//! `NotFound` before this is asked.

use crate::error::Result;
use crate::event::Event;
use crate::job::{LeaseToken, State};

use super::Engine;

/// Which settle a caller made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SettleOp {
    Complete,
    Fail,
    Release,
    Snooze,
}

impl SettleOp {
    /// What the `cancelled` entry says the holder did, when its settle
    /// recorded a cancel request (`stage_settle` writes it).
    pub(super) fn cancelled_what(self) -> &'static str {
        match self {
            SettleOp::Complete => "it completed",
            SettleOp::Fail => "it failed",
            SettleOp::Release => "it was released",
            SettleOp::Snooze => "it was snoozed",
        }
    }
}

/// The reason `stage_settle` gives a snooze past the kind's `max_snoozes`
/// (it is logged as a failure).
pub(super) const OVER_SNOOZED: &str = "snoozed more than max_snoozes";

impl Engine {
    /// When `token`'s lease was already settled by a call of kind `op`,
    /// what that call answered; `None` when the record does not say so.
    pub(super) fn repeated_settle(
        &self,
        token: &LeaseToken,
        op: SettleOp,
    ) -> Result<Option<Result<()>>> {
        let Some(key) = self.key_of(&token.id)? else {
            return Ok(None);
        };
        let Some(rec) = self.record_at(&key)? else {
            return Ok(None);
        };
        // Generation 0 was never leased; a newer one was leased since.
        if token.generation == 0 || rec.generation != token.generation {
            return Ok(None);
        }
        let Some(worker) = rec.worker_id.as_deref() else {
            return Ok(None);
        };
        let n = rec.events.len();
        let entry = |back: usize| -> Option<(&str, &str)> {
            let (_, t, d) = rec.events.get(n.checked_sub(back)?)?;
            Some((t.as_str(), d.as_str()))
        };
        let Some((last, detail)) = entry(1) else {
            return Ok(None);
        };
        // `{worker}: {reason} (attempt a of m)`, by this lease's holder.
        let failed_by_holder = |d: &str| -> Option<SettleOp> {
            let reason = d.strip_prefix(worker)?.strip_prefix(": ")?;
            Some(if reason.starts_with(&format!("{OVER_SNOOZED} (")) {
                SettleOp::Snooze
            } else {
                SettleOp::Fail
            })
        };
        let done = match (key.state, last) {
            (State::Completed, t) if t == Event::Completed.name() => {
                (detail == worker).then_some(SettleOp::Complete)
            }
            (State::Pending, t) if t == Event::Released.name() => {
                (detail == worker).then_some(SettleOp::Release)
            }
            (State::Pending, t) if t == Event::Snoozed.name() => detail
                .strip_prefix(worker)
                .filter(|d| d.starts_with(": "))
                .map(|_| SettleOp::Snooze),
            (State::Failed, t) if t == Event::Failed.name() => failed_by_holder(detail),
            (State::Dead, t) if t == Event::Dead.name() => match entry(2) {
                Some((t, d)) if t == Event::Failed.name() => failed_by_holder(d),
                _ => None,
            },
            (State::Cancelled, t) if t == Event::Cancelled.name() => {
                // A settle that recorded the request; an operator's cancel
                // of a job already handed back follows that settle's entry.
                let Some((t, reason)) = entry(2) else {
                    return Ok(None);
                };
                if t != Event::CancelRequested.name() {
                    return Ok(None);
                }
                let what = format!(" ({worker}: {})", op.cancelled_what());
                if !detail.ends_with(&what) {
                    return Ok(None);
                }
                return Ok(Some(Err(super::settle::cancelled_answer(
                    reason, &token.id,
                ))));
            }
            _ => None,
        };
        Ok((done == Some(op)).then_some(Ok(())))
    }
}
