//! Job control on a `NativeQueue` (issue 16): cancel, cancelMany, delete,
//! promote, reschedule, setPriority (issue 44), snooze, pause, resume and paused. Every one goes through the core's
//! `JobStore`, so an embedded queue and a client of a server answer alike.
//! `fail` with a retry delay is in `queue.rs` beside `fail`.

use napi::bindgen_prelude::{AsyncTask, Env, Undefined};
use napi_derive::napi;

use telha_jobs::{CancelFilter, JobId, KindPattern, PauseTarget, Scope, State};

use crate::args::{self, setting_ms};
use crate::errors::Failure;
use crate::queue::NativeQueue;
use crate::task::{guard, Op};

/// Filters of `cancelMany`, as lib/telha.js passes them.
#[napi(object)]
pub struct NativeCancelFilter {
    pub kind: Option<String>,
    pub scope: Option<String>,
    pub state: Option<String>,
    pub reason: Option<String>,
    pub tag: Option<String>,
}

/// What `cancelMany` did.
#[napi(object, object_from_js = false)]
pub struct CancelReport {
    /// Jobs cancelled at once (pending, scheduled, failed).
    pub cancelled: f64,
    /// Leased jobs that got a cancel request (their holder's next settle,
    /// or the lease's expiry, makes them cancelled).
    pub requested: f64,
    /// Rows that matched but did not decode (kept, untouched).
    pub corrupt: f64,
}

/// What is paused (`paused()`, `stats().paused`).
#[napi(object, object_from_js = false)]
pub struct Paused {
    /// Paused kinds and families (`ingest:*`), sorted.
    pub kinds: Vec<String>,
    /// Paused scopes, sorted.
    pub scopes: Vec<String>,
}

impl Paused {
    pub fn from_core(p: telha_jobs::Paused) -> Self {
        Paused {
            kinds: p.kinds.iter().map(|k| k.to_string()).collect(),
            scopes: p.scopes.iter().map(|s| s.to_string()).collect(),
        }
    }
}

/// A pause target from exactly one of a kind (or family) and a scope.
fn pause_target(kind: Option<String>, scope: Option<String>) -> Result<PauseTarget, Failure> {
    match (kind, scope) {
        (Some(k), None) => Ok(PauseTarget::Kind(k.parse::<KindPattern>()?)),
        (None, Some(s)) => Ok(PauseTarget::Scope(s.parse::<Scope>()?)),
        _ => Err(Failure::Invalid(
            "name exactly one of kind (an exact kind or family:*) and scope".into(),
        )),
    }
}

#[napi]
impl NativeQueue {
    /// Cancel a job: `cancelled` when it was pending, scheduled or failed
    /// (now cancelled), `requested` when it is leased (a durable request
    /// its holder learns at its next heartbeat).
    #[napi(ts_return_type = "Promise<'cancelled' | 'requested'>")]
    pub fn cancel(
        &self,
        env: Env,
        id: String,
        reason: String,
    ) -> napi::Result<AsyncTask<Op<String, String>>> {
        guard(&env, "cancel", || {
            let id = id.parse::<JobId>()?;
            let q = self.store().clone();
            Ok(Op::task(
                "cancel",
                move || Ok(q.cancel(&id, &reason)?.name().to_string()),
                |v| v,
            ))
        })
    }

    /// Cancel every unfinished job matching all the given filters, in
    /// bounded atomic batches.
    #[napi(ts_return_type = "Promise<CancelReport>")]
    pub fn cancel_many(
        &self,
        env: Env,
        filter: NativeCancelFilter,
    ) -> napi::Result<AsyncTask<Op<CancelReport, CancelReport>>> {
        guard(&env, "cancelMany", || {
            let f = CancelFilter {
                kind: filter.kind.map(|k| k.parse::<KindPattern>()).transpose()?,
                scope: filter.scope.map(|s| s.parse::<Scope>()).transpose()?,
                state: filter.state.map(|s| s.parse::<State>()).transpose()?,
                reason: filter.reason.unwrap_or_default(),
                tag: filter.tag,
            };
            let q = self.store().clone();
            Ok(Op::task(
                "cancelMany",
                move || {
                    let r = q.cancel_many(&f)?;
                    Ok(CancelReport {
                        cancelled: crate::job::count(r.cancelled),
                        requested: crate::job::count(r.requested),
                        corrupt: crate::job::count(r.corrupt),
                    })
                },
                |v| v,
            ))
        })
    }

    /// Remove a job that is not leased, with its index entries.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn delete(&self, env: Env, id: String) -> napi::Result<AsyncTask<Op<(), Undefined>>> {
        guard(&env, "delete", || {
            let id = id.parse::<JobId>()?;
            let q = self.store().clone();
            Ok(Op::task("delete", move || Ok(q.delete(&id)?), |_| ()))
        })
    }

    /// A delayed or retry-waiting job ready now (its state is kept); a job
    /// already due is left as it is.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn promote(&self, env: Env, id: String) -> napi::Result<AsyncTask<Op<(), Undefined>>> {
        guard(&env, "promote", || {
            let id = id.parse::<JobId>()?;
            let q = self.store().clone();
            Ok(Op::task("promote", move || Ok(q.promote(&id)?), |_| ()))
        })
    }

    /// A pending or failed job's new run time, `runAt` ms since the epoch.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn reschedule(
        &self,
        env: Env,
        id: String,
        run_at: f64,
    ) -> napi::Result<AsyncTask<Op<(), Undefined>>> {
        guard(&env, "reschedule", || {
            let id = id.parse::<JobId>()?;
            let at = args::instant_ms(run_at, "runAt")?;
            let q = self.store().clone();
            Ok(Op::task(
                "reschedule",
                move || Ok(q.reschedule(&id, at)?),
                |_| (),
            ))
        })
    }

    /// A pending or failed job's new priority, 0 (most urgent) to 255.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn set_priority(
        &self,
        env: Env,
        id: String,
        priority: f64,
    ) -> napi::Result<AsyncTask<Op<(), Undefined>>> {
        guard(&env, "setPriority", || {
            let id = id.parse::<JobId>()?;
            let p = args::priority(priority, "priority")?;
            let q = self.store().clone();
            Ok(Op::task(
                "setPriority",
                move || Ok(q.set_priority(&id, p)?),
                |_| (),
            ))
        })
    }

    /// Hand a leased job back until now + `delayMs` (at most the longest
    /// duration, 100 years) without spending an attempt (past the kind's
    /// `maxSnoozes` it counts as one).
    #[napi(ts_return_type = "Promise<void>")]
    pub fn snooze(
        &self,
        env: Env,
        id: String,
        generation: f64,
        delay: f64,
    ) -> napi::Result<AsyncTask<Op<(), Undefined>>> {
        guard(&env, "snooze", || {
            let t = args::token(&id, generation)?;
            let d = setting_ms(delay, "delayMs")?;
            let q = self.store().clone();
            Ok(Op::task("snooze", move || Ok(q.snooze(&t, d)?), |_| ()))
        })
    }

    /// Pause a kind, a family (`ingest:*`) or a scope: its jobs are not
    /// leased until `resume`. True when this changed anything.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn pause(
        &self,
        env: Env,
        kind: Option<String>,
        scope: Option<String>,
    ) -> napi::Result<AsyncTask<Op<bool, bool>>> {
        guard(&env, "pause", || {
            let t = pause_target(kind, scope)?;
            let q = self.store().clone();
            Ok(Op::task("pause", move || Ok(q.pause(&t)?), |v| v))
        })
    }

    /// Undo a `pause`. True when this changed anything.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn resume(
        &self,
        env: Env,
        kind: Option<String>,
        scope: Option<String>,
    ) -> napi::Result<AsyncTask<Op<bool, bool>>> {
        guard(&env, "resume", || {
            let t = pause_target(kind, scope)?;
            let q = self.store().clone();
            Ok(Op::task("resume", move || Ok(q.resume(&t)?), |v| v))
        })
    }

    /// What is paused.
    #[napi(ts_return_type = "Promise<Paused>")]
    pub fn paused(&self) -> AsyncTask<Op<Paused, Paused>> {
        let q = self.store().clone();
        Op::task("paused", move || Ok(Paused::from_core(q.paused()?)), |v| v)
    }
}
