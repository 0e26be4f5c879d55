//! lease_next / lease_many: find the most urgent ready job, claim it under its
//! band group's lock, move it to leased in one batch outside the lock.

use rustc_hash::FxHashMap as HashMap;
use std::time::{Duration, Instant};

use crate::control::Paused;
use crate::error::{Error, Result};
use crate::event::Event;
use crate::job::{validate_worker_id, Job, JobId, LeaseOptions, Scope, State};
use crate::limits::{self, MAX_BATCH as MAX_LEASE_BATCH};
use crate::store::codec;
use crate::store::keys::{self, JobKey, Pos};
use crate::store::{self as st};

use super::bands::{self, BandGroup, Cursor, Group};
use super::claim::{is_blocked, wanted, ScopeWalk};
use super::peek::past_claim;
use super::transition::Tx;
use super::Engine;

/// A claimed row: its key, its record bytes (jobs path) or kind (kind path).
pub(super) type Found = (JobKey, Option<Vec<u8>>, Option<String>);

/// A job claimed in memory, not yet moved on disk.
pub(super) struct Claim {
    pub group: Group,
    pub key: JobKey,
    /// The record bytes when found through the jobs CF.
    pub value: Option<Vec<u8>>,
    /// The kind when found through the kind index.
    pub kind: Option<String>,
    /// `Some(kind the limiter was told)` while the claim holds
    /// flow-control slots it must give back if it does not become a lease.
    pub reserved: Option<Option<String>>,
}

/// What one look into a (scope, priority) found.
pub(super) enum Got {
    Claim(Found, Option<Option<String>>),
    /// Nothing ready there (or nothing wanted).
    Nothing,
    /// Ready work, but a limit holds it back: stop looking in this scope.
    Held,
}

impl Engine {
    /// Lease up to `max` jobs, waiting up to `opts.wait` for the first.
    pub fn lease(
        &self,
        worker: &str,
        opts: &LeaseOptions,
        max: usize,
        is_closed: &dyn Fn() -> bool,
    ) -> Result<Vec<Job>> {
        validate_worker_id(worker)?;
        if max == 0 || max > MAX_LEASE_BATCH {
            return Err(Error::invalid(format!(
                "a lease batch takes 1 to {MAX_LEASE_BATCH} jobs, got {max}"
            )));
        }
        let Some(wait) = opts.wait.filter(|w| !w.is_zero()) else {
            return self.try_lease(worker, opts, max);
        };
        // A wait too long to represent ("forever") has no end.
        let end = Instant::now().checked_add(wait);
        let mut epoch = self.notifier.register();
        let _unregister = Unregister(self);
        loop {
            if is_closed() || self.shutting_down.load(std::sync::atomic::Ordering::SeqCst) {
                return Err(Error::Closed);
            }
            // A fence wakes the waiters (`Engine::fence`).
            self.check_fenced()?;
            let got = self.try_lease(worker, opts, max)?;
            if !got.is_empty() || opts.cancel.as_ref().is_some_and(|c| c.is_cancelled()) {
                return Ok(got);
            }
            let left = match end {
                Some(end) => end.saturating_duration_since(Instant::now()),
                None => Duration::from_secs(3600),
            };
            if left.is_zero() {
                return Ok(got);
            }
            // Delayed and backing-off jobs become due without an enqueue:
            // sleep no longer than until the earliest one.
            let now = self.now();
            let timeout = match self.next_due(opts) {
                Some(t) if t > now => left.min(Duration::from_millis(t - now)),
                Some(_) => left.min(Duration::from_millis(5)),
                None => left,
            };
            epoch = self.notifier.wait(epoch, timeout);
        }
    }

    /// The scopes to poll, in order, each with its round-robin position
    /// (`None` for scopes the caller named). Without names, a lazy walk of
    /// the active scopes: a poll that stops at the first scope with work
    /// looks at no other.
    pub(super) fn scopes_for(&self, opts: &LeaseOptions) -> ScopeWalk<'_> {
        if opts.scopes.is_empty() {
            // Scopes parked until a due time that has come are active again.
            self.bands.wake_due(self.now());
            // Round-robin over the active scopes: start just after the scope that was
            // served last, so idle scopes never hand their turn to a neighbour.
            let last = self.rr.load(std::sync::atomic::Ordering::Relaxed);
            // A weighted scope keeps its turn until it had its weight.
            let keep = self.limiter.weighted()
                && self.bands.scope_at(last).is_some_and(|s| {
                    self.rr_used.load(std::sync::atomic::Ordering::Relaxed)
                        < self.limiter.weight(&s)
                });
            let start = if keep { last } else { last.wrapping_add(1) };
            ScopeWalk::Active(self.bands.rotation(start))
        } else {
            ScopeWalk::Named(
                opts.scopes
                    .iter()
                    .filter(|s| !self.bands.is_held(s))
                    .filter_map(|s| self.bands.get(s).map(|b| (*s, b)))
                    .collect::<Vec<_>>()
                    .into_iter(),
            )
        }
    }

    /// The earliest known due time among the bands `opts` polls. Called
    /// after a poll found nothing, which left active only the scopes it
    /// could not rule out (work arrived meanwhile, or every ready kind is
    /// filtered, paused or limited): parked scopes answer with one load.
    fn next_due(&self, opts: &LeaseOptions) -> Option<u64> {
        let mut best: Option<u64> = match (self.limiter.wake_at(), self.keys.wake_at()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let paused = self.paused();
        let now = self.now();
        let note = |best: &mut Option<u64>, t: u64| {
            if t != u64::MAX {
                *best = Some(best.map_or(t, |b| b.min(t)));
            }
        };
        if opts.scopes.is_empty() {
            // A parked scope's time bounds every band in it (waking early
            // only costs a poll).
            note(&mut best, self.bands.parked_until().unwrap_or(u64::MAX));
        }
        for (_, scope, sb) in self.scopes_for(opts) {
            let blocked = if self.limiter.needs_kind() {
                self.limiter.blocked_kinds(scope, now).0
            } else {
                Vec::new()
            };
            for (_, g) in sb.groups() {
                let g = bands::lock(&g);
                let t = if opts.kinds.is_empty() && paused.kinds.is_empty() && blocked.is_empty() {
                    g.next_ts()
                } else {
                    g.kinds
                        .iter()
                        .filter(|(k, _)| wanted(opts, &paused, k) && !is_blocked(&blocked, k))
                        .map(|(_, c)| c.next_ts)
                        .min()
                        .unwrap_or(u64::MAX)
                };
                note(&mut best, t);
            }
            if best.is_some_and(|b| b <= now) {
                break; // due now: no other scope can say sooner
            }
        }
        best
    }

    fn try_lease(&self, worker: &str, opts: &LeaseOptions, max: usize) -> Result<Vec<Job>> {
        // Shared with other pollers; a pause waits for claims in flight.
        let _gate = self.pause_gate.read().unwrap_or_else(|e| e.into_inner());
        if self.limiter.active() {
            self.limiter.end_due_holds(self.now(), &self.bands);
        }
        self.key_poll(self.now());
        let mut jobs = Vec::new();
        // A claimed row that turns out corrupt is skipped (its cursor has
        // moved past it): go back for a replacement rather than answer short.
        loop {
            let want = max - jobs.len();
            let claims = self.claim(opts, want)?;
            if claims.is_empty() {
                return Ok(jobs);
            }
            let claimed = claims.len();
            let got = self.commit_leases(worker, claims, self.now())?;
            let short = got.len() < claimed;
            jobs.extend(got);
            if !short || jobs.len() >= max {
                return Ok(jobs);
            }
        }
    }

    /// Find and claim the most urgent ready job of one (scope, priority).
    pub(super) fn claim_in_group(
        &self,
        g: &mut BandGroup,
        scope: Scope,
        prio: u8,
        opts: &LeaseOptions,
        paused: &Paused,
        now: u64,
    ) -> Result<Got> {
        // Flow control: whether claims take slots, need the job's kind, and
        // which kinds a limit holds back in this scope now.
        let limited = self.limiter.active();
        let needs_kind = limited && self.limiter.needs_kind();
        let blocked = if needs_kind {
            self.limiter.blocked_kinds(scope, now).0
        } else {
            Vec::new()
        };
        if !g.unparked.is_empty() {
            if let Some(got) = self.claim_unparked(g, scope, prio, opts, paused, &blocked, now)? {
                return Ok(got);
            }
        }
        let BandGroup {
            pending,
            failed,
            kinds,
            claimed,
            pending_it,
            failed_it,
            kind_its,
            ..
        } = g;
        if opts.kinds.is_empty() && paused.kinds.is_empty() && blocked.is_empty() {
            let jobs_cf = self.cf(st::CF_JOBS)?;
            let mut best: Option<(State, Pos, Vec<u8>)> = None;
            for (state, cursor, slot) in [
                (State::Pending, &mut *pending, &mut *pending_it),
                (State::Failed, &mut *failed, &mut *failed_it),
            ] {
                if !cursor.maybe_ready(now) {
                    continue;
                }
                let prefix = keys::job_band_prefix(&scope, state, prio);
                let found = self.peek(jobs_cf, &prefix, Some(state), cursor, slot, now, claimed)?;
                if let Some((pos, v)) = found {
                    if best.as_ref().is_none_or(|b| pos < b.1) {
                        best = Some((state, pos, v));
                    }
                }
            }
            let Some((state, pos, v)) = best else {
                return Ok(Got::Nothing);
            };
            let reserved = if limited {
                let kind = if needs_kind {
                    codec::peek_kind(&v).or_else(|| codec::decode(&v).ok().map(|r| r.kind))
                } else {
                    None
                };
                match self
                    .limiter
                    .reserve(scope, kind.as_deref(), now, &self.bands)
                {
                    super::limiter::Reserve::Refused => return Ok(Got::Held),
                    super::limiter::Reserve::Granted(_) => Some(kind),
                }
            } else {
                None
            };
            let (cursor, slot) = if state == State::Pending {
                (&mut *pending, &mut *pending_it)
            } else {
                (&mut *failed, &mut *failed_it)
            };
            let prefix = keys::job_band_prefix(&scope, state, prio);
            *cursor = past_claim(slot, &prefix, pos, *cursor, &self.bands.parked_iters);
            claimed.insert((state, pos));
            if *pending == Cursor::EMPTY && *failed == Cursor::EMPTY {
                // Nothing ready left in this group, so no kind-index row:
                // its kind cursors are empty too (bounded memory).
                kinds.clear();
                kind_its.clear();
            }
            Ok(Got::Claim(
                (JobKey::at(scope, state, prio, pos), Some(v), None),
                reserved,
            ))
        } else {
            let kinds_cf = self.cf(st::CF_KINDS)?;
            // A kind-index entry that does not decode is reported and
            // stepped over (its cursor moves past it); then look again.
            loop {
                let mut best: Option<(String, Pos, Vec<u8>)> = None;
                for (kind, cursor) in kinds.iter_mut() {
                    if !cursor.maybe_ready(now)
                        || !wanted(opts, paused, kind)
                        || is_blocked(&blocked, kind)
                    {
                        continue;
                    }
                    let prefix = keys::kind_band_prefix(&scope, kind, prio);
                    let mut slot = kind_its.remove(kind.as_str());
                    let found = self.peek(kinds_cf, &prefix, None, cursor, &mut slot, now, claimed);
                    if let Some(it) = slot {
                        kind_its.insert(kind.clone(), it);
                    }
                    if let Some((pos, v)) = found? {
                        if best.as_ref().is_none_or(|b| pos < b.1) {
                            best = Some((kind.clone(), pos, v));
                        }
                    }
                }
                let Some((kind, pos, v)) = best else {
                    // Kind bands seen empty need no cursor (bounded memory
                    // under many kinds); a row written later notes one.
                    kinds.retain(|_, c| *c != Cursor::EMPTY);
                    return Ok(Got::Nothing);
                };
                let reserved = if limited {
                    match self.limiter.reserve(scope, Some(&kind), now, &self.bands) {
                        super::limiter::Reserve::Refused => return Ok(Got::Held),
                        super::limiter::Reserve::Granted(_) => Some(Some(kind.clone())),
                    }
                } else {
                    None
                };
                if let Some(c) = kinds.get_mut(&kind) {
                    let prefix = keys::kind_band_prefix(&scope, &kind, prio);
                    let mut slot = kind_its.remove(kind.as_str());
                    *c = past_claim(&mut slot, &prefix, pos, *c, &self.bands.parked_iters);
                    if let Some(it) = slot {
                        kind_its.insert(kind.clone(), it);
                    }
                }
                // Every ready row has a kind-index row: with every kind
                // band empty, the group's pending and failed bands are too
                // (so a scope drained by kind-filtered pollers leaves the
                // active set like any other).
                if kinds.values().all(|c| *c == Cursor::EMPTY) {
                    *pending = Cursor::EMPTY;
                    *failed = Cursor::EMPTY;
                    kinds.clear();
                    kind_its.clear();
                }
                let state = match v.first().and_then(|b| State::from_byte(*b)) {
                    Some(s @ (State::Pending | State::Failed)) => s,
                    _ => {
                        let k = keys::kind_key(&scope, &kind, prio, pos);
                        let e =
                            Error::Corruption(format!("kind-index entry with state bytes {v:?}"));
                        self.report_corrupt(&k, Some(pos.id), &e);
                        if let Some(r) = &reserved {
                            self.limiter.unreserve(scope, r.as_deref(), &self.bands);
                        }
                        continue;
                    }
                };
                claimed.insert((state, pos));
                return Ok(Got::Claim(
                    (JobKey::at(scope, state, prio, pos), None, Some(kind)),
                    reserved,
                ));
            }
        }
    }

    /// Give claims back after a failed commit (their rows are still there),
    /// with the flow-control slots they still hold.
    pub(super) fn unclaim(&self, claims: &[Claim], kinds: &HashMap<JobId, String>) {
        for c in claims {
            if let Some(r) = &c.reserved {
                self.limiter
                    .unreserve(c.key.scope, r.as_deref(), &self.bands);
            }
            let mut g = bands::lock(&c.group);
            g.claimed.remove(&(c.key.state, c.key.pos()));
            let pos = c.key.pos();
            match c.key.state {
                State::Failed => g.failed.note_insert(pos),
                _ => g.pending.note_insert(pos),
            }
            // A jobs-path claim may have emptied the group's kind cursors:
            // its kind comes from the record when the commit got no further.
            let kind = c
                .kind
                .clone()
                .or_else(|| kinds.get(&c.key.id).cloned())
                .or_else(|| {
                    let v = c.value.as_deref()?;
                    codec::peek_kind(v).or_else(|| codec::decode(v).ok().map(|r| r.kind))
                });
            if let Some(k) = kind {
                g.kind_cursor(&k).note_insert(pos);
            }
            drop(g);
            self.bands.activate(c.key.scope);
        }
        self.notifier.bump();
    }

    fn commit_leases(&self, worker: &str, mut claims: Vec<Claim>, now: u64) -> Result<Vec<Job>> {
        let jobs_cf = self.cf(st::CF_JOBS)?;
        let mut tx = Tx::new(self);
        let mut leased = Vec::with_capacity(claims.len());
        let mut kinds_of: HashMap<JobId, String> = HashMap::default();
        // Job keys whose slots this batch took (`keyed.rs`).
        let mut keyed: Vec<(Scope, String)> = Vec::new();
        // A failed commit gives back the claims (`unclaim`) and uncounts
        // the leases staged so far.
        let fail = |claims: &[Claim],
                    kinds_of: &HashMap<JobId, String>,
                    keyed: &[(Scope, String)],
                    e: Error| {
            for c in claims {
                if let Some(k) = kinds_of.get(&c.key.id) {
                    self.limiter.lease_failed(c.key.scope, k, None, &self.bands);
                }
            }
            for k in keyed {
                let back = self.keys.unreserve(k, now);
                self.unpark(back);
            }
            self.unclaim(claims, kinds_of);
            Err(e)
        };

        for i in 0..claims.len() {
            let c = &claims[i];
            let old = c.key.encode();
            let rec = match &c.value {
                Some(v) => codec::decode(v),
                None => match self.db().get_pinned_cf(jobs_cf, old) {
                    Ok(Some(v)) => codec::decode(&v),
                    Ok(None) => Err(Error::Corruption(format!(
                        "kind index names job {} but its row is missing",
                        c.key.id
                    ))),
                    Err(e) => return fail(&claims, &kinds_of, &keyed, e.into()),
                },
            };
            let rec = rec.and_then(|r| {
                // A payload kept outside the record is read now: the
                // worker needs it, the lease entry does not.
                let payload = self.payload_of(&c.key.id, &r)?;
                Ok((r, payload))
            });
            let (mut rec, payload) = match rec {
                Ok((r, p)) if c.kind.as_ref().is_none_or(|k| *k == r.kind) => (r, p),
                Ok((r, _)) => {
                    let e = Error::Corruption(format!(
                        "kind index says {:?}, record says {:?}",
                        c.kind, r.kind
                    ));
                    self.report_corrupt(&old, Some(c.key.id), &e);
                    self.give_back(&mut claims[i]);
                    continue;
                }
                Err(e) => {
                    self.report_corrupt(&old, Some(c.key.id), &e);
                    self.give_back(&mut claims[i]);
                    continue;
                }
            };
            if rec.generation == 0 && rec.ext.expires_at.is_some_and(|t| t <= now) {
                // Never leased and past its expiry: it goes dead instead.
                let key = c.key;
                self.give_back(&mut claims[i]);
                if let Err(e) = self.stage_expired(&mut tx, &key, &mut rec, now) {
                    return fail(&claims, &kinds_of, &keyed, e);
                }
                continue;
            }
            if let Some(k) = &rec.ext.key {
                // Flow control by key: take the key's slots, or park the
                // row under its key (the cursor is past it already).
                let row = super::keyed::Parked {
                    state: c.key.state,
                    prio: c.key.priority,
                    pos: c.key.pos(),
                    kind: rec.kind.clone(),
                };
                let k = (c.key.scope, k.clone());
                let id = c.key.id;
                if self.keys.reserve(&k, id, row, now) == super::keyed::KeyReserve::Parked {
                    self.give_back(&mut claims[i]);
                    continue;
                }
                let back = self.keys.more(&k, now);
                self.unpark(back);
                keyed.push(k);
            }
            self.limiter.note_leased(c.key.scope, &rec.kind);
            kinds_of.insert(c.key.id, rec.kind.clone());
            let ttl = limits::ms(self.cfg.lease_ttl_for(&rec.kind));
            let deadline = now.saturating_add(ttl).min(limits::MAX_INSTANT_MS);
            rec.generation += 1;
            rec.worker_id = Some(worker.to_string());
            rec.lease_deadline = Some(deadline);
            rec.ext.leased_at = Some(now);
            rec.ext.progress = None;
            let detail = if c.key.state == State::Failed {
                format!("{worker} (attempt {}, after failure)", rec.attempts + 1)
            } else {
                format!("{worker} (attempt {})", rec.attempts + 1)
            };
            rec.log(now, Event::Leased, detail);
            let new = JobKey {
                state: State::Leased,
                ts: deadline,
                ..c.key
            };
            if let Err(e) = tx.stage(Event::Leased, Some(&c.key), Some(&new), &rec) {
                return fail(&claims, &kinds_of, &keyed, e);
            }
            leased.push((new, rec, ttl, payload));
        }
        if let Err(e) = tx.commit() {
            return fail(&claims, &kinds_of, &keyed, e);
        }
        // Committed: publish the leases, then drop the claims (a poller that
        // no longer sees a claim must no longer see the row).
        let mut jobs = Vec::with_capacity(leased.len());
        for (key, rec, ttl, payload) in leased {
            let max_attempts = self.cfg.max_attempts_for(&rec.kind, rec.max_attempts);
            jobs.push(Job {
                id: key.id,
                kind: rec.kind.clone(),
                scope: key.scope,
                payload,
                attempts: rec.attempts,
                max_attempts,
                generation: rec.generation,
                deadline: key.ts,
                lease_ttl_ms: ttl,
                payload_encoding: rec.ext.payload_encoding,
                priority: key.priority,
                worker_id: worker.to_string(),
                timeout_ms: self.cfg.timeout_for(&rec.kind).map(limits::ms),
                schedule: rec.ext.schedule.clone(),
                parent: rec.ext.parent,
                tags: rec.ext.tags.to_vec(),
                metadata: rec.ext.metadata.clone(),
                key: rec.ext.key.clone(),
            });
            self.leases.insert(key, rec);
        }
        for c in &claims {
            bands::lock(&c.group)
                .claimed
                .remove(&(c.key.state, c.key.pos()));
        }
        Ok(jobs)
    }

    /// A claim that will not become a lease gives its flow-control slots back.
    fn give_back(&self, c: &mut Claim) {
        if let Some(r) = c.reserved.take() {
            self.limiter
                .unreserve(c.key.scope, r.as_deref(), &self.bands);
            self.notifier.bump();
        }
    }
}

struct Unregister<'a>(&'a Engine);

impl Drop for Unregister<'_> {
    fn drop(&mut self) {
        self.0.notifier.unregister();
    }
}
