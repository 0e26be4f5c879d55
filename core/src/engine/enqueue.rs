//! enqueue and enqueue_many: one atomic batch for any number of jobs.

use std::collections::BTreeSet;

use rustc_hash::FxHashMap as HashMap;
use std::sync::MutexGuard;

use crate::config::PRIORITY_DEFAULT;
use crate::error::{Error, Result};
use crate::event::Event;
use crate::job::{family, validate_kind, Enqueued, JobId, NewJob, Scope, State};
use crate::limits;
use crate::store::codec::{Ext, JobRecord, Tags};
use crate::store::keys::{self, JobKey};
use crate::store::{self as st};

use super::debounce::Claims;
use super::transition::Tx;
use super::Engine;

/// Who enqueues a new job: the caller, a schedule's slot, or a parent's
/// completion (`Completion::then`).
pub(super) enum Origin {
    Caller,
    Schedule(crate::schedule::ScheduleRef),
    Parent(JobId),
}

impl Engine {
    /// Check new jobs as `enqueue_many` does (kind, payload, options,
    /// times), and lock the idempotency stripes their keys need.
    pub(super) fn prepare_new(&self, jobs: &[NewJob]) -> Result<Vec<MutexGuard<'_, ()>>> {
        self.check_new(jobs)?;
        Ok(self.idem_guards(self.stripes_of(jobs.iter())))
    }

    /// Check new jobs as `enqueue_many` does: kind, payload, options, times.
    pub(super) fn check_new(&self, jobs: &[NewJob]) -> Result<()> {
        let now = self.now();
        for j in jobs {
            self.validate_new(j)?;
            self.check_after(j)?;
            super::debounce::check(&j.options, now)?;
            let ready = Self::ready_at(j, now)?;
            Self::expires_at(j, now, ready)?;
        }
        Ok(())
    }

    /// The idempotency stripes of the new jobs that carry a key.
    pub(super) fn stripes_of<'j>(&self, jobs: impl Iterator<Item = &'j NewJob>) -> BTreeSet<usize> {
        jobs.filter_map(|j| {
            let k = j.options.idempotency_key.as_ref()?;
            Some(self.idem_stripe(&j.options.scope.unwrap_or(Scope::SYSTEM), k))
        })
        .collect()
    }

    pub fn validate_new(&self, j: &NewJob) -> Result<()> {
        validate_kind(&j.kind)?;
        let scope = j.options.scope.unwrap_or(Scope::SYSTEM);
        if family(&j.kind) == "system" && !scope.is_system() {
            return Err(Error::invalid(format!(
                "kind {:?} is a system kind; system kinds live only in the system (nil) scope, not {scope}",
                j.kind
            )));
        }
        if j.payload.len() > self.cfg.max_payload_bytes {
            return Err(Error::invalid(format!(
                "payload of {} bytes is over the limit of {} bytes (max_payload_bytes)",
                j.payload.len(),
                self.cfg.max_payload_bytes
            )));
        }
        if let Some(k) = &j.options.idempotency_key {
            limits::validate_idempotency_key(k)?;
        }
        if j.options.max_attempts == Some(0) {
            return Err(Error::invalid("max_attempts must be at least 1"));
        }
        if let Some(b) = j.options.backoff_base {
            if b.as_millis() == 0 {
                return Err(Error::invalid(format!(
                    "backoff_base must be at least 1ms, got {b:?}"
                )));
            }
            limits::check_duration("backoff_base", b)?;
        }
        if let Some(t) = j.options.run_at {
            limits::check_instant("run_at", t)?;
        }
        crate::tags::check_tags(&j.options.tags)?;
        crate::tags::validate_metadata(&j.options.metadata)?;
        if let Some(k) = &j.options.key {
            crate::flow::validate_key(k)?;
        }
        Ok(())
    }

    /// When a new job becomes ready: its run-at, else now + its delay,
    /// else now; `InvalidArgument` past the latest supported time.
    pub(super) fn ready_at(j: &NewJob, now: u64) -> Result<u64> {
        match (j.options.run_at, j.options.delay, j.options.debounce) {
            (Some(t), _, _) => limits::check_instant("run_at", t),
            (None, Some(d), _) => limits::instant_after("delay", now, d),
            (None, None, Some(d)) => limits::instant_after("debounce", now, d),
            (None, None, None) => Ok(now),
        }
    }

    /// When a new job expires unstarted: its expires-at, else now + its
    /// expires-in. `InvalidArgument` when that is not after now, is not
    /// after the job becomes ready (it could never run), or passes the
    /// latest supported time.
    pub(super) fn expires_at(j: &NewJob, now: u64, ready_at: u64) -> Result<Option<u64>> {
        let at = match (j.options.expires_at, j.options.expires_in) {
            (Some(t), _) => limits::check_instant("expires_at", t)?,
            (None, Some(d)) if d.is_zero() => {
                return Err(Error::invalid("expires_in must be over zero, got 0"))
            }
            (None, Some(d)) => limits::instant_after("expires_in", now, d)?,
            (None, None) => return Ok(None),
        };
        if at <= now {
            return Err(Error::invalid(format!(
                "expires_at {at} is not in the future (now is {now}); a job that expired cannot be enqueued"
            )));
        }
        if at <= ready_at {
            return Err(Error::invalid(format!(
                "expires_at {at} is not after the job's run-at {ready_at}: it could never start"
            )));
        }
        Ok(Some(at))
    }

    pub fn enqueue_many(&self, jobs: Vec<NewJob>) -> Result<Vec<Enqueued>> {
        // Idempotent enqueues of one (scope, key) serialise on a stripe lock
        // held from the check to the commit.
        let _guards = self.prepare_new(&jobs)?;
        let now = self.now();
        let mut tx = Tx::new(self);
        self.guard_after(&mut tx, &jobs)?;
        let mut out = Vec::with_capacity(jobs.len());
        let mut in_batch: HashMap<(Scope, String), JobId> = HashMap::default();
        let mut claims = Claims::new();
        let staged = jobs.into_iter().try_for_each(|j| {
            out.push(self.stage_caller(&mut tx, j, now, &mut in_batch, &mut claims)?);
            Ok(())
        });
        let res = staged.and_then(|()| tx.commit());
        self.release_claims(claims, res.is_ok());
        res.map(|()| out)
    }

    /// [`Engine::enqueue_many`] of one job, without the vectors.
    pub fn enqueue_one(&self, job: NewJob) -> Result<Enqueued> {
        let _guards = self.prepare_new(std::slice::from_ref(&job))?;
        let now = self.now();
        let mut tx = Tx::new(self);
        self.guard_after(&mut tx, std::slice::from_ref(&job))?;
        let mut in_batch: HashMap<(Scope, String), JobId> = HashMap::default();
        let mut claims = Claims::new();
        let res = self
            .stage_caller(&mut tx, job, now, &mut in_batch, &mut claims)
            .and_then(|out| tx.commit().map(|()| out));
        self.release_claims(claims, res.is_ok());
        res
    }

    /// Stage one new job (validated by the caller, whose idempotency
    /// stripes are held) into `tx`: an idempotency hit in the store or
    /// earlier in the batch answers `created: false` and stages nothing.
    pub(super) fn stage_new(
        &self,
        tx: &mut Tx<'_>,
        mut j: NewJob,
        now: u64,
        in_batch: &mut HashMap<(Scope, String), JobId>,
        origin: Origin,
    ) -> Result<Enqueued> {
        let (schedule, parent) = match origin {
            Origin::Caller => (None, None),
            Origin::Schedule(r) => (Some(r), None),
            Origin::Parent(id) => (None, Some(id)),
        };
        if j.options.debounce.is_some() && (schedule.is_some() || parent.is_some()) {
            return Err(Error::invalid(
                "debounce is for enqueue and enqueue_many, not a follow-up or a schedule",
            ));
        }
        super::debounce::check(&j.options, now)?;
        let scope = j.options.scope.unwrap_or(Scope::SYSTEM);
        super::unique::check(
            j.options.unique_for,
            j.options.unique_states,
            j.options.idempotency_key.as_ref(),
            now,
        )?;
        let mut old_window = None;
        if let Some(k) = &j.options.idempotency_key {
            if let Some(id) = in_batch.get(&(scope, k.clone())) {
                return Ok(Enqueued {
                    id: *id,
                    created: false,
                    debounced: false,
                });
            }
            if j.options.unique_for.is_some() {
                // The window, not the record, decides (issue 44).
                let (hit, w) = self.window_match(&scope, k, now)?;
                if let Some(id) = hit {
                    return Ok(Enqueued::existing(id));
                }
                old_window = w;
            } else if j.options.debounce.is_some() {
                // stage_caller found no pending job: a new one takes the key.
            } else if let Some(id) = self.idempotent_match(&scope, k)? {
                return Ok(Enqueued::existing(id));
            }
        }
        let id = JobId::new_v7();
        let ready_at = Self::ready_at(&j, now)?;
        let expires_at = Self::expires_at(&j, now, ready_at)?;
        let after = std::mem::take(&mut j.options.after);
        let fan_in = if after.is_empty() {
            None
        } else {
            let (total, unfinished) = tx.stage_after(id, &after)?;
            Some(super::fanin::record_fan(
                total,
                unfinished,
                j.options.on_child_dead,
            ))
        };
        // A job waiting on unfinished children waits (its row's time is
        // its enqueue); it becomes pending at its ready-at or later.
        let waiting = fan_in.is_some_and(|f| f.unfinished > 0);
        let key = JobKey {
            scope,
            state: if waiting {
                State::Waiting
            } else {
                State::Pending
            },
            priority: j.options.priority.unwrap_or(PRIORITY_DEFAULT),
            ts: if waiting { now } else { ready_at },
            id,
        };
        let debounce_until = super::debounce::latest(&j.options, now)?;
        let external = j.payload.len() > st::INLINE_PAYLOAD_MAX;
        let (payload, outside) = if external {
            (Vec::new(), Some(j.payload))
        } else {
            (j.payload, None)
        };
        let detail = match (&schedule, ready_at > now) {
            (Some(s), _) if s.missed > 0 => format!(
                "schedule {:?}, slot {} (and {} missed before it)",
                s.name, s.slot, s.missed
            ),
            (Some(s), _) => format!("schedule {:?}, slot {}", s.name, s.slot),
            (None, true) => format!("run at {ready_at}"),
            (None, false) => String::new(),
        };
        let detail = match parent {
            Some(p) if detail.is_empty() => format!("follow-up of job {p}"),
            Some(p) => format!("follow-up of job {p}, {detail}"),
            None => detail,
        };
        let detail = match fan_in {
            Some(f) if detail.is_empty() => {
                format!("waiting for {} of {} jobs", f.unfinished, f.total)
            }
            Some(f) => format!("waiting for {} of {} jobs, {detail}", f.unfinished, f.total),
            None => detail,
        };
        let mut rec = JobRecord {
            kind: j.kind,
            payload,
            max_attempts: j.options.max_attempts,
            idempotency_key: j.options.idempotency_key,
            created_at: now,
            ready_at,
            ext: Ext {
                payload_encoding: j.options.encoding,
                payload_len: outside.as_ref().map(|p| p.len() as u64),
                expires_at,
                schedule,
                parent,
                backoff_base: j.options.backoff_base,
                // Checked by `validate_new`; duplicates dropped here.
                tags: Tags::new(&j.options.tags),
                metadata: j.options.metadata,
                debounce_until,
                fan_in,
                key: j.options.key,
                ..Ext::default()
            },
            ..JobRecord::default()
        };
        if let (Some(d), Some(k)) = (j.options.unique_for, &rec.idempotency_key) {
            let states = j.options.unique_states.unwrap_or_default();
            self.stage_window(tx, &scope, k, id, now, d, states, old_window)?;
        }
        rec.log(now, Event::Enqueued, detail);
        tx.stage(Event::Enqueued, None, Some(&key), &rec)?;
        if let Some(p) = &outside {
            tx.put_payload(&id, p)?;
        }
        if let Some(k) = rec.idempotency_key {
            in_batch.insert((scope, k), id);
        }
        Ok(Enqueued {
            id,
            created: true,
            debounced: false,
        })
    }

    /// Lock the idempotency stripes `stripes`, in index order.
    pub(super) fn idem_guards(&self, stripes: BTreeSet<usize>) -> Vec<MutexGuard<'_, ()>> {
        stripes
            .into_iter()
            .map(|i| self.idem_locks[i].lock().unwrap_or_else(|p| p.into_inner()))
            .collect()
    }

    pub(super) fn idem_stripe(&self, scope: &Scope, key: &str) -> usize {
        use std::hash::{Hash, Hasher};
        let mut h = rustc_hash::FxHasher::default();
        scope.hash(&mut h);
        key.hash(&mut h);
        (h.finish() as usize) % self.idem_locks.len()
    }

    /// The job an idempotency key points at, if its record still exists.
    fn idempotent_match(&self, scope: &Scope, key: &str) -> Result<Option<JobId>> {
        let Some(id) = self.idem_entry(scope, key)? else {
            return Ok(None);
        };
        Ok(self.key_of(&id)?.map(|_| id))
    }

    /// The id an idempotency key's entry holds (its record may be gone).
    pub(super) fn idem_entry(&self, scope: &Scope, key: &str) -> Result<Option<JobId>> {
        let v = self
            .db()
            .get_pinned_cf(self.cf(st::CF_IDEM)?, keys::idem_key(scope, key))?;
        let Some(v) = v else { return Ok(None) };
        let bytes: [u8; 16] = v.as_ref().try_into().map_err(|_| {
            Error::Corruption(format!(
                "idempotency entry for {key:?} is {} bytes",
                v.len()
            ))
        })?;
        Ok(Some(JobId::from_bytes(bytes)))
    }
}
