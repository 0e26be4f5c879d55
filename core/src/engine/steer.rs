//! Operator steering of waiting work: promote (ready now), reschedule (a
//! new run time), set_priority. Each moves the job's one ready row (its
//! jobs row and its kind-index row) within its state — pending stays
//! pending, failed (retry-waiting) stays failed — through [`Tx::stage`]
//! like every other move. The row is claimed first, exactly as a poller
//! claims it (`Engine::with_claimed`, as cancel does), so no poller leases
//! the job while it moves, and a leased job is never touched.
//!
//! A pending job's time is its ready-at: one in the future is what makes
//! it delayed. So a reschedule of a ready job into the future makes it
//! delayed, one into the past makes it ready (at that place in line).

use crate::error::{Error, Result};
use crate::event::Event;
use crate::job::{JobId, State};
use crate::limits::check_instant;
use crate::store::keys::JobKey;

use super::control::{back_off, ATTEMPTS};
use super::transition::Tx;
use super::Engine;

/// What a steering operation does to a ready row: its new priority and
/// time, or `None` when the row already is where it would go.
type Plan<'a> = &'a dyn Fn(&JobKey, u64) -> Option<(u8, u64)>;

impl Engine {
    /// A delayed pending job, or a failed one waiting for its retry, ready
    /// now (its time becomes now; its state is kept). A job already due
    /// is left as it is (`Ok`, nothing written).
    pub fn promote(&self, id: &JobId) -> Result<()> {
        self.steer(id, Event::Promoted, "promoted", &|key, now| {
            (key.ts > now).then_some((key.priority, now))
        })
    }

    /// A pending or failed job's time becomes `run_at` (ms since the
    /// epoch): in the future a ready job becomes delayed, in the past a
    /// delayed one becomes ready. The same time is `Ok`, nothing written.
    pub fn reschedule(&self, id: &JobId, run_at: u64) -> Result<()> {
        check_instant("run_at", run_at)?;
        self.steer(id, Event::Rescheduled, "rescheduled", &|key, _| {
            (key.ts != run_at).then_some((key.priority, run_at))
        })
    }

    /// A pending or failed job's priority becomes `priority` (0 most
    /// urgent); its time, so its place among equals, is kept. The same
    /// priority is `Ok`, nothing written.
    pub fn set_priority(&self, id: &JobId, priority: u8) -> Result<()> {
        self.steer(id, Event::Reprioritized, "reprioritized", &|key, _| {
            (key.priority != priority).then_some((priority, key.ts))
        })
    }

    /// Claim the ready row of `id`, move it where `plan` says within its
    /// state with `event` logged, commit, give the claim back. Looks again
    /// while a poller holds the row or it moves under the call.
    fn steer(&self, id: &JobId, event: Event, what: &str, plan: Plan<'_>) -> Result<()> {
        for attempt in 0..ATTEMPTS {
            let key = self
                .key_of(id)?
                .ok_or_else(|| Error::NotFound(format!("no job {id}")))?;
            if !matches!(key.state, State::Pending | State::Failed) {
                return Err(Error::WrongState(format!(
                    "job {id} is {}; only pending or failed (retry-waiting) jobs can be {what}",
                    key.state
                )));
            }
            let done = self.with_claimed(key, |mut rec| {
                let now = self.now();
                let Some((priority, ts)) = plan(&key, now) else {
                    return Ok(Some(rec.kind));
                };
                let to = JobKey {
                    priority,
                    ts,
                    ..key
                };
                rec.log(now, event, detail(event, &key, &to));
                let mut tx = Tx::new(self);
                tx.stage(event, Some(&key), Some(&to), &rec)?;
                tx.commit()?;
                Ok(None)
            })?;
            match done {
                Ok(None) => return Ok(()),
                Ok(Some(kind)) => {
                    // Nothing moved: pollers stepped past the claimed row.
                    self.note_ready_row(&key, &kind);
                    return Ok(());
                }
                Err(_) => back_off(attempt),
            }
        }
        Err(Error::Storage(format!(
            "job {id} kept moving while it was being {what}; try again"
        )))
    }
}

/// The event log's detail of a steering move.
fn detail(event: Event, from: &JobKey, to: &JobKey) -> String {
    match event {
        Event::Reprioritized => format!("priority {} (was {})", to.priority, from.priority),
        Event::Promoted => format!("ready now (was due at {} ms)", from.ts),
        _ => format!("due at {} ms (was {} ms)", to.ts, from.ts),
    }
}
