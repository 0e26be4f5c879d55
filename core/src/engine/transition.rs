//! The state machine in one place: every row move the engine commits is
//! staged here, by rule, into one atomic batch, and what memory learns
//! after the commit is applied here too.
//!
//! A move takes a job from one row (or none: a new job) to another (or
//! none: a deleted job). [`Tx::stage`] checks the move against its
//! event's [`rule`], then writes, in the batch:
//!
//! | column family | from-row            | to-row                              |
//! |---------------|---------------------|-------------------------------------|
//! | `jobs`        | delete              | put the encoded record              |
//! | `ids`         | delete, if no to-row| put id → the to-row's key           |
//! | `kinds`       | delete, if ready    | put, if ready (pending or failed)   |
//! | `idem`        | delete, if it names this job (deletes only) | put (new jobs with a key) |
//! | `expiry`      | delete, if it was indexed | put, if pending, never leased and it has an expiry |
//! | `meta` `tag/` | delete, per tag, if no to-row | put, per tag, if no from-row |
//! | `meta` `jkey/` | delete, if it was unfinished and is no more | put, if it is unfinished and was not (keyed jobs) |
//! | `counters`    | one merge operand per kind and one per scope per batch: −1 from-state, +1 to-state |
//!
//! A move out of the leased state also frees the job's flow-control slots
//! (`limiter.rs`) once it has committed.
//! [`Tx::commit`] writes the batch once; only then does memory learn: the
//! in-memory counts, the transition metrics, the cursors of every band that
//! gained a ready row (so pollers see it; the scope becomes active), and
//! the notifier (waiting pollers wake). The in-memory leases are the
//! caller's: only the lease and settle paths know the generation they
//! hold, and they change them under the lease entry's lock.
//!
//! A new state is one arm in [`rule`] per event that reaches or leaves it.

use std::sync::Arc;

use rocksdb::WriteBatch;

use crate::error::{Error, Result};
use crate::event::Event;
use crate::job::State;
use crate::state::{counters_bytes, PerState};
use crate::store::codec::{self, JobRecord};
use crate::store::keys::{self, JobKey};
use crate::store::{self as st};

use crate::timings::{Outcome, Timing};

use super::hub::Staged;
use super::Engine;

/// Where an event may take a job from, and to. `None` is "no row": a job
/// being created (from) or deleted (to).
pub(crate) fn rule(event: Event) -> (&'static [Option<State>], &'static [Option<State>]) {
    use State::*;
    const LEASED: &[Option<State>] = &[Some(Leased)];
    const READY: &[Option<State>] = &[Some(Pending), Some(Failed)];
    const FINISHED: &[Option<State>] = &[Some(Completed), Some(Dead), Some(Cancelled)];
    const GONE: &[Option<State>] = &[None];
    match event {
        Event::Enqueued => (GONE, &[Some(Pending), Some(Waiting)]),
        Event::Leased => (READY, LEASED),
        Event::Extended => (LEASED, LEASED),
        Event::Completed => (LEASED, &[Some(Completed)]),
        Event::Failed => (LEASED, &[Some(Failed)]),
        // Out of attempts or not retryable, from a worker's failure or (on
        // the last attempt) from the reaper's expiry or a snooze past its cap.
        // A waiting parent also dies when a child did not complete and its
        // `on_child_dead` policy is `fail`.
        Event::Dead => (&[Some(Leased), Some(Waiting)], &[Some(Dead)]),
        Event::LeaseExpired => (LEASED, &[Some(Pending)]),
        Event::Released => (LEASED, &[Some(Pending)]),
        Event::Retried => (&[Some(Dead), Some(Failed)], &[Some(Pending)]),
        Event::Pruned => (FINISHED, GONE),
        Event::Purged => (FINISHED, GONE),
        Event::Cancelled => (
            &[Some(Pending), Some(Failed), Some(Leased), Some(Waiting)],
            &[Some(Cancelled)],
        ),
        Event::CancelRequested => (LEASED, LEASED),
        Event::Deleted => (
            &[
                Some(Pending),
                Some(Failed),
                Some(Completed),
                Some(Dead),
                Some(Cancelled),
                Some(Waiting),
            ],
            GONE,
        ),
        Event::Snoozed => (LEASED, &[Some(Pending)]),
        Event::Expired => (&[Some(Pending)], &[Some(Dead)]),
        Event::Progress => (LEASED, LEASED),
        // Operator steering keeps the state (`steer.rs` checks that).
        Event::Promoted | Event::Rescheduled | Event::Reprioritized => (READY, READY),
        // A debounce enqueue moves a pending job within pending.
        Event::Debounced => (&[Some(Pending)], &[Some(Pending)]),
        // Fan-in (`fanin.rs`): a child's settle moves its waiting parent.
        Event::ChildSettled => (&[Some(Waiting)], &[Some(Waiting)]),
        Event::ChildrenDone => (&[Some(Waiting)], &[Some(Pending)]),
    }
}

/// One transaction: moves staged into one batch, committed together.
pub(crate) struct Tx<'e> {
    pub(super) e: &'e Engine,
    pub(super) batch: WriteBatch,
    /// What the commit tells memory (vectors reused between transactions).
    pub(super) p: Parts,
    /// Events to count after the commit, by `Event::index`.
    counted: [u64; Event::ALL.len()],
    moves: usize,
    /// Writes staged outside a move (a schedule's row): the batch is
    /// written even when no job moved.
    extra: usize,
    /// The fan-in map, held when a parent moves in this batch (declared
    /// first: dropped before the gate).
    pub(super) fan_map: Option<std::sync::MutexGuard<'e, super::fanin::FanMap>>,
    /// The fan-in gate, held shared from the look at waiting parents to
    /// the end of the write (`fanin.rs`).
    pub(super) fan_gate: Option<super::fanin::GateRead<'e>>,
    /// An enqueue with `after`: the gate held exclusively, and the waits
    /// to register once the batch is written.
    pub(super) after: Option<super::fanin::AfterGuard<'e>>,
}

/// A transaction's vectors. A committed transaction leaves them, emptied,
/// to the next one on its thread ([`SPARE`]): a lifecycle's three
/// transactions allocated a dozen vectors before.
#[derive(Default)]
pub(super) struct Parts {
    /// Counter deltas per kind (few kinds per batch: a linear scan).
    counters: Vec<(String, PerState<i64>)>,
    /// Counter deltas per scope (few scopes per batch, likewise).
    scope_counters: Vec<(crate::ids::Scope, PerState<i64>)>,
    /// Rows that became ready, to note after the commit.
    ready: Vec<(JobKey, String)>,
    /// Reused buffer for record encoding.
    buf: Vec<u8>,
    /// Reused buffer for index keys (a tagged job's rows).
    key: Vec<u8>,
    /// The moves as events, when someone subscribes (`Hub::collecting`).
    staged: Vec<Staged>,
    /// Jobs this transaction made terminal or removed, for their watches.
    terminal: Vec<crate::job::JobId>,
    /// Jobs this transaction takes out of the leased state: their
    /// flow-control slots free after the commit.
    unleased: Vec<(crate::ids::Scope, String)>,
    /// Wait and run times to observe after the commit, each with the
    /// index of its kind in `counters` (no kind string of its own).
    timings: Vec<(usize, Timing)>,
    /// Jobs this transaction finishes: their waiting parents move too.
    pub(super) finished: Vec<super::fanin::Finished>,
    /// Keyed jobs that became unfinished (`true`) or finished (`false`).
    pub(super) key_live: Vec<(crate::ids::Scope, String, crate::job::JobId, bool)>,
    /// Keyed jobs taken out of the leased state: their keys' slots free.
    pub(super) key_unleased: Vec<(crate::ids::Scope, String)>,
}

/// Parts kept for reuse are at most this large (a 10,000-job batch's are
/// let go).
const SPARE_MAX_BYTES: usize = 64 << 10;

/// The bytes a batch of one move reserves (a lifecycle's are 300–500, a
/// new job with 4 tags about 700: 512 grew it, 1,024 still fits the
/// allocator's per-thread cache).
const BATCH_RESERVE: usize = 1024;

thread_local! {
    static SPARE: std::cell::Cell<Option<Parts>> = const { std::cell::Cell::new(None) };
}

impl Parts {
    fn take() -> Parts {
        SPARE.with(|s| s.take()).unwrap_or_default()
    }

    /// Empty these and keep them for this thread's next transaction.
    fn recycle(mut self) {
        if self.buf.capacity() > SPARE_MAX_BYTES
            || self.counters.capacity() * 64 > SPARE_MAX_BYTES
            || self.ready.capacity() * 64 > SPARE_MAX_BYTES
        {
            return;
        }
        self.counters.clear();
        self.scope_counters.clear();
        self.ready.clear();
        self.buf.clear();
        self.staged.clear();
        self.terminal.clear();
        self.unleased.clear();
        self.timings.clear();
        self.finished.clear();
        self.key_live.clear();
        self.key_unleased.clear();
        SPARE.with(|s| s.set(Some(self)));
    }
}

impl<'e> Tx<'e> {
    pub fn new(e: &'e Engine) -> Self {
        Tx {
            e,
            batch: WriteBatch::with_capacity_bytes(BATCH_RESERVE),
            p: Parts::take(),
            counted: [0; Event::ALL.len()],
            moves: 0,
            extra: 0,
            fan_map: None,
            fan_gate: None,
            after: None,
        }
    }

    /// How many moves are staged.
    pub fn len(&self) -> usize {
        self.moves
    }

    pub fn is_empty(&self) -> bool {
        self.moves == 0
    }

    /// Stage `event` for one job: from the row at `from` (`None` for a new
    /// job) to `to` (`None` to delete it). `rec` is the job's record as it
    /// must be written at `to` (for a delete, the record being deleted).
    pub fn stage(
        &mut self,
        event: Event,
        from: Option<&JobKey>,
        to: Option<&JobKey>,
        rec: &JobRecord,
    ) -> Result<()> {
        let (froms, tos) = rule(event);
        let (fs, ts) = (from.map(|k| k.state), to.map(|k| k.state));
        if !froms.contains(&fs) || !tos.contains(&ts) {
            return Err(Error::Storage(format!(
                "internal error: {event} cannot move a job from {fs:?} to {ts:?}"
            )));
        }
        let e = self.e;
        let jobs = e.cf(st::CF_JOBS)?;
        let kinds = e.cf(st::CF_KINDS)?;
        // A move within its row (a parent's count, a heartbeat) overwrites
        // it: no delete, and the id index already names it.
        let same_row = from.is_some() && from == to;
        if let Some(f) = from.filter(|_| !same_row) {
            self.batch.delete_cf(jobs, f.encode());
            if f.state.is_ready() {
                self.batch.delete_cf(
                    kinds,
                    keys::kind_key(&f.scope, &rec.kind, f.priority, f.pos()),
                );
            }
        }
        match to {
            Some(t) => {
                let tk = t.encode();
                let buf = &mut self.p.buf;
                buf.clear();
                buf.reserve(codec::encoded_len_hint(rec));
                codec::encode_into(rec, buf);
                self.batch.put_cf(jobs, tk, &*buf);
                if !same_row {
                    self.batch.put_cf(e.cf(st::CF_IDS)?, t.id.as_bytes(), tk);
                }
                if t.state.is_ready() {
                    self.batch.put_cf(
                        kinds,
                        keys::kind_key(&t.scope, &rec.kind, t.priority, t.pos()),
                        [t.state.byte()],
                    );
                    self.p.ready.push((*t, rec.kind.clone()));
                }
                if let (None, Some(ik)) = (from, &rec.idempotency_key) {
                    self.batch.put_cf(
                        e.cf(st::CF_IDEM)?,
                        keys::idem_key(&t.scope, ik),
                        t.id.as_bytes(),
                    );
                }
            }
            None => {
                let f = from.ok_or_else(|| Error::Storage("internal error: no row".into()))?;
                self.batch.delete_cf(e.cf(st::CF_IDS)?, f.id.as_bytes());
                if rec.ext.payload_len.is_some() {
                    self.batch
                        .delete_cf(e.cf(st::CF_PAYLOADS)?, f.id.as_bytes());
                }
                if let Some(ik) = &rec.idempotency_key {
                    // Only when it still names this job: a later job may
                    // have taken the key after this one's retention.
                    let idem = keys::idem_key(&f.scope, ik);
                    let points_here = e
                        .db()
                        .get_pinned_cf(e.cf(st::CF_IDEM)?, &idem)?
                        .is_some_and(|v| v.as_ref() == f.id.as_bytes());
                    if points_here {
                        self.batch.delete_cf(e.cf(st::CF_IDEM)?, idem);
                    }
                }
            }
        }
        if let (None, Some(f)) = (to, from) {
            if rec.ext.fan_in.is_some() {
                self.delete_fan_rows(&f.id)?;
            }
        }
        if let Some(f) = fs.filter(|f| !f.is_terminal()) {
            if ts.is_none_or(State::is_terminal) {
                self.p.finished.push(super::fanin::Finished {
                    id: from
                        .or(to)
                        .map(|k| k.id)
                        .unwrap_or_else(|| crate::job::JobId::from_bytes([0; 16])),
                    to: ts,
                    error: rec.last_error.clone(),
                    waiting_parent: f == State::Waiting && rec.ext.fan_in.is_some(),
                });
            }
        }
        if !rec.ext.tags.is_empty() {
            // The tag index: one row per tag, `tag scope id`, put when the
            // job is created and deleted with it. A move between two rows
            // of one scope (every move: the scope never changes) writes
            // none, so tags cost nothing per move.
            let moved_scope = from.zip(to).is_some_and(|(f, t)| f.scope != t.scope);
            if from.is_none() || to.is_none() || moved_scope {
                let meta = e.cf(st::CF_META)?;
                let k = &mut self.p.key;
                for tag in &rec.ext.tags {
                    if let Some(f) = from.filter(|_| to.is_none() || moved_scope) {
                        keys::tag_key_into(k, tag, &f.scope, &f.id);
                        self.batch.delete_cf(meta, &*k);
                    }
                    if let Some(t) = to.filter(|_| from.is_none() || moved_scope) {
                        keys::tag_key_into(k, tag, &t.scope, &t.id);
                        self.batch.put_cf(meta, &*k, []);
                    }
                }
            }
        }
        if let Some(at) = rec.ext.expires_at {
            // Indexed while the job is pending and was never leased (only
            // a lease bumps the generation, so the from-row's is one less).
            let from_gen = if event == Event::Leased {
                rec.generation.saturating_sub(1)
            } else {
                rec.generation
            };
            let had = fs == Some(State::Pending) && from_gen == 0;
            let has = ts == Some(State::Pending) && rec.generation == 0;
            if had != has {
                let id = from.or(to).map(|k| k.id);
                let k = keys::expiry_key(at, &id.unwrap_or(crate::job::JobId::from_bytes([0; 16])));
                if has {
                    self.batch.put_cf(e.cf(st::CF_EXPIRY)?, k, []);
                } else {
                    self.batch.delete_cf(e.cf(st::CF_EXPIRY)?, k);
                }
            }
        }
        if fs == Some(State::Leased) && ts != fs {
            if let Some(f) = from {
                self.p.unleased.push((f.scope, rec.kind.clone()));
            }
        }
        if let Some(jk) = &rec.ext.key {
            self.stage_key(fs, ts, from.or(to), jk)?;
        }
        if fs != ts {
            let d = PerState::delta(fs, ts);
            let at = match self.p.counters.iter().position(|(k, _)| *k == rec.kind) {
                Some(i) => {
                    self.p.counters[i].1.add(&d);
                    i
                }
                None => {
                    self.p.counters.push((rec.kind.clone(), d));
                    self.p.counters.len() - 1
                }
            };
            if let Some(t) = timing(event, from, rec) {
                self.p.timings.push((at, t));
            }
            if let Some(scope) = from.or(to).map(|k| k.scope) {
                match self.p.scope_counters.iter_mut().find(|(s, _)| *s == scope) {
                    Some((_, c)) => c.add(&d),
                    None => self.p.scope_counters.push((scope, d)),
                }
            }
        }
        let id = from.or(to).map(|k| k.id);
        if let Some(id) = id {
            if ts.is_none_or(State::is_terminal) && fs != ts {
                self.p.terminal.push(id);
            }
            if e.hub.collecting() {
                self.p.staged.push(staged(event, fs, id, from.or(to), rec));
            }
        }
        self.counted[event.index()] += 1;
        self.moves += 1;
        Ok(())
    }

    /// Stage the payload of a new job whose record says it lives in the
    /// payloads column family (written once; deleted with the job).
    pub fn put_payload(&mut self, id: &crate::job::JobId, payload: &[u8]) -> Result<()> {
        self.batch
            .put_cf(self.e.cf(st::CF_PAYLOADS)?, id.as_bytes(), payload);
        Ok(())
    }

    /// Stage a put of `value` at `key` in the column family `cf` beside
    /// the moves (a schedule's row, committed with the jobs it enqueued).
    pub fn put_raw(&mut self, cf: &str, key: &[u8], value: &[u8]) -> Result<()> {
        self.batch.put_cf(self.e.cf(cf)?, key, value);
        self.extra += 1;
        Ok(())
    }

    /// Stage a delete of `key` in the column family `cf` beside the moves.
    pub fn delete_raw(&mut self, cf: &str, key: &[u8]) -> Result<()> {
        self.batch.delete_cf(self.e.cf(cf)?, key);
        self.extra += 1;
        Ok(())
    }

    /// Count `event` once more after the commit without a move of its own
    /// (a lease that expires on its last attempt counts `lease_expired`
    /// beside its `dead`).
    pub fn also_count(&mut self, event: Event) {
        self.counted[event.index()] += 1;
    }

    /// Publish `event` for the job at `key` before the move staged next: a
    /// move whose log gains two entries (failed or lease_expired, then
    /// dead) shows subscribers both, in the log's order.
    pub fn also_publish(&mut self, event: Event, key: &JobKey, rec: &JobRecord) {
        if self.e.hub.collecting() {
            self.p
                .staged
                .push(staged(event, Some(key.state), key.id, Some(key), rec));
        }
    }

    /// Write every staged move in one atomic batch, then tell memory.
    /// Nothing is learnt when the write fails (the rows did not move).
    pub fn commit(mut self) -> Result<()> {
        if self.moves == 0 && self.extra == 0 {
            return Ok(());
        }
        let fan_removed = self.stage_fan_in()?;
        let counters_cf = self.e.cf(st::CF_COUNTERS)?;
        for (kind, d) in &self.p.counters {
            if !d.is_zero() {
                self.batch
                    .merge_cf(counters_cf, kind.as_bytes(), counters_bytes(d));
            }
        }
        for (scope, d) in &self.p.scope_counters {
            if !d.is_zero() {
                self.batch
                    .merge_cf(counters_cf, st::scope_counter_key(scope), counters_bytes(d));
            }
        }
        let Tx {
            e,
            batch,
            mut p,
            counted,
            fan_gate,
            fan_map,
            after,
            ..
        } = self;
        if after.as_ref().is_some_and(|g| g.waits()) {
            e.store.require_compat(st::format::WAITING_COMPAT)?;
        }
        if p.staged.is_empty() {
            e.write(batch)?;
        } else {
            let staged = std::mem::take(&mut p.staged);
            e.hub.commit_ordered(e.now(), staged, || e.write(batch))?;
        }
        super::fanin::committed(e, fan_map, fan_gate, after, fan_removed);
        for (kind, d) in &p.counters {
            e.counts.add(kind, d);
        }
        for (scope, d) in &p.scope_counters {
            e.counts.add_scope(scope, d);
        }
        if !p.unleased.is_empty() && e.limiter.unleased(&p.unleased, &e.bands) {
            // A slot freed: pollers held back by a cap look again.
            e.notifier.bump();
        }
        if !p.key_live.is_empty() || !p.key_unleased.is_empty() {
            let back = e.keys.committed(&p.key_live, &p.key_unleased, e.now());
            e.unpark(back);
        }
        for (ev, n) in Event::ALL.into_iter().zip(counted) {
            e.metrics.count(ev, n);
        }
        if !p.timings.is_empty() {
            let now = if p.timings.iter().any(|(_, t)| matches!(t, Timing::Run(..))) {
                e.now()
            } else {
                0
            };
            for &(at, t) in &p.timings {
                e.metrics.timings.observe(&p.counters[at].0, t, now);
            }
        }
        if !p.ready.is_empty() {
            e.note_ready_rows(p.ready.iter().map(|(k, kind)| (k, kind.as_str())));
        }
        if !p.terminal.is_empty() && e.hub.has_waiters() {
            e.hub.fire(&p.terminal);
        }
        p.recycle();
        Ok(())
    }
}

/// What a move tells the wait and run histograms: a lease, how long the
/// job waited since its ready instant (the from-row's time); a move out of
/// the leased state, when that lease began and how it ended.
fn timing(event: Event, from: Option<&JobKey>, rec: &JobRecord) -> Option<Timing> {
    let from = from?;
    if event == Event::Leased {
        let leased = rec.ext.leased_at?;
        return Some(Timing::Wait(leased.saturating_sub(from.ts)));
    }
    if from.state != State::Leased {
        return None;
    }
    Some(Timing::Run(rec.ext.leased_at?, Outcome::of(event)?))
}

/// A move as a subscriber sees it (see [`crate::watch::JobEvent::attempt`]).
fn staged(
    event: Event,
    from: Option<State>,
    id: crate::job::JobId,
    key: Option<&JobKey>,
    rec: &JobRecord,
) -> Staged {
    let of_lease = from == Some(State::Leased) || event == Event::Leased;
    let counted = matches!(event, Event::Failed | Event::Dead | Event::LeaseExpired);
    let attempt = if of_lease && !counted {
        rec.attempts.saturating_add(1)
    } else {
        rec.attempts
    };
    Staged {
        event,
        id,
        kind: Arc::from(rec.kind.as_str()),
        scope: key.map(|k| k.scope).unwrap_or_default(),
        attempt,
        worker_id: if of_lease {
            rec.worker_id.as_deref().map(Arc::from)
        } else {
            None
        },
        progress: if event == Event::Progress {
            rec.ext.progress.as_deref().map(Arc::from)
        } else {
            None
        },
    }
}

#[cfg(test)]
#[path = "transition_tests.rs"]
mod tests;
