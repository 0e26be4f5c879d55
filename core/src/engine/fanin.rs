//! Fan-in (issue 43): parents waiting on children, woken in the batch of
//! the last child's settle.
//!
//! Rows (`meta`): `fanc/ child parent` while `parent` waits and `child`
//! has not finished; `fanp/ parent child` for every child a parent named,
//! until the parent is deleted. In memory: the `fanc/` rows as a map
//! child → parents ([`FanMap`]), rebuilt at open.
//!
//! Two locks make it exact:
//! - **the gate** (a reader–writer gate on atomics): every commit that
//!   finishes a job (a move from pending, leased, failed or waiting to
//!   completed, dead, cancelled or gone) holds it shared from its look at
//!   the map to the end of its write; an enqueue with `after` holds it
//!   exclusively from reading its children's states to registering them
//!   in the map after its commit. So a child finishes either before the
//!   parent reads it (the parent counts it as done) or after the parent
//!   is in the map (its settle wakes the parent).
//! - **the map's mutex**, taken only by a commit that finishes a child
//!   some parent waits on (or moves a waiting parent), held across that
//!   commit's write: the parents' records, rewritten by their children's
//!   settles, are so read and written by one batch at a time.

use std::cell::Cell;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use rustc_hash::FxHashMap as HashMap;

use crate::error::{Error, Result};
use crate::event::Event;
use crate::fanin::{ChildDeadPolicy, MAX_AFTER};
use crate::job::{JobId, NewJob, State};
use crate::store::codec::{FanIn as RecFan, JobRecord};
use crate::store::keys::{self, JobKey};
use crate::store::{self as st};

use super::transition::Tx;
use super::Engine;

/// Waiting parents by child: the `fanc/` rows in memory.
#[derive(Default)]
pub(crate) struct FanMap {
    by_child: HashMap<JobId, Vec<JobId>>,
    /// The latest row and record of waiting parents a settle has read:
    /// only batches holding this map's lock move a waiting parent, so a
    /// child's settle need not read its parent back from the store.
    parents: HashMap<JobId, (JobKey, JobRecord)>,
}

impl FanMap {
    fn parents_of(&self, child: &JobId) -> &[JobId] {
        self.by_child.get(child).map_or(&[], Vec::as_slice)
    }

    fn waits(&self, child: &JobId, parent: &JobId) -> bool {
        self.parents_of(child).contains(parent)
    }
}

/// The fan-in state of an engine.
#[derive(Default)]
pub(crate) struct FanState {
    readers: AtomicUsize,
    writing: AtomicBool,
    writer: Mutex<()>,
    map: Mutex<FanMap>,
    /// `fanc/` rows in the map: 0 lets a finishing commit skip the map.
    waited: AtomicUsize,
    /// Children of `cancel_rest` parents to cancel after their parent's
    /// batch (by the next reaper pass: not under the settle's locks).
    to_cancel: Mutex<Vec<(JobId, String)>>,
}

thread_local! {
    /// Gate reads this thread holds (a commit inside a commit reads again
    /// without waiting on a writer that waits on it).
    static HELD: Cell<usize> = const { Cell::new(0) };
}

/// The gate held shared.
pub(crate) struct GateRead<'e>(&'e FanState);

impl Drop for GateRead<'_> {
    fn drop(&mut self) {
        HELD.with(|h| h.set(h.get() - 1));
        self.0.readers.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The gate held exclusively.
pub(crate) struct GateWrite<'e>(&'e FanState, #[allow(dead_code)] MutexGuard<'e, ()>);

impl Drop for GateWrite<'_> {
    fn drop(&mut self) {
        self.0.writing.store(false, Ordering::SeqCst);
    }
}

fn pause(spins: &mut u32) {
    *spins += 1;
    if *spins < 64 {
        std::thread::yield_now();
    } else {
        std::thread::sleep(std::time::Duration::from_micros(50));
    }
}

impl FanState {
    pub(crate) fn read(&self) -> GateRead<'_> {
        if HELD.with(Cell::get) == 0 {
            let mut spins = 0;
            loop {
                self.readers.fetch_add(1, Ordering::SeqCst);
                if !self.writing.load(Ordering::SeqCst) {
                    break;
                }
                self.readers.fetch_sub(1, Ordering::SeqCst);
                while self.writing.load(Ordering::SeqCst) {
                    pause(&mut spins);
                }
            }
        } else {
            self.readers.fetch_add(1, Ordering::SeqCst);
        }
        HELD.with(|h| h.set(h.get() + 1));
        GateRead(self)
    }

    pub(super) fn write(&self) -> Result<GateWrite<'_>> {
        if HELD.with(Cell::get) != 0 {
            return Err(Error::Storage(
                "internal error: an enqueue with after inside a commit".into(),
            ));
        }
        let g = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        self.writing.store(true, Ordering::SeqCst);
        let mut spins = 0;
        while self.readers.load(Ordering::SeqCst) != 0 {
            pause(&mut spins);
        }
        Ok(GateWrite(self, g))
    }

    pub(crate) fn lock_map(&self) -> MutexGuard<'_, FanMap> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether any parent waits (a finishing commit looks no further when
    /// none does; exact under the gate).
    pub(crate) fn any_waited(&self) -> bool {
        self.waited.load(Ordering::SeqCst) != 0
    }

    fn add(&self, map: &mut FanMap, pairs: &[(JobId, JobId)]) {
        for (c, p) in pairs {
            let v = map.by_child.entry(*c).or_default();
            if !v.contains(p) {
                v.push(*p);
                self.waited.fetch_add(1, Ordering::SeqCst);
            }
        }
    }

    /// Forget `fanc/` rows a commit deleted.
    pub(crate) fn remove(&self, map: &mut FanMap, pairs: &[(JobId, JobId)]) {
        for (c, p) in pairs {
            if let Some(v) = map.by_child.get_mut(c) {
                if let Some(i) = v.iter().position(|x| x == p) {
                    v.swap_remove(i);
                    self.waited.fetch_sub(1, Ordering::SeqCst);
                }
                if v.is_empty() {
                    map.by_child.remove(c);
                }
            }
        }
    }

    pub(crate) fn queue_cancels(&self, ids: Vec<(JobId, String)>) {
        if !ids.is_empty() {
            self.to_cancel
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .extend(ids);
        }
    }

    /// Every `fanc/` pair in memory (for `check`).
    pub(crate) fn pairs(&self) -> HashSet<(JobId, JobId)> {
        let m = self.lock_map();
        m.by_child
            .iter()
            .flat_map(|(c, ps)| ps.iter().map(move |p| (*c, *p)))
            .collect()
    }
}

/// A job a commit finished (or a waiting parent it moved out of waiting).
#[derive(Clone)]
pub(crate) struct Finished {
    pub id: JobId,
    pub to: Option<State>,
    pub error: Option<String>,
    /// It was a waiting fan-in parent: its own `fanc/` rows go.
    pub waiting_parent: bool,
}

/// What an enqueue with `after` holds: the gate, exclusively, until its
/// children are registered.
pub(crate) struct AfterGuard<'e> {
    _gate: GateWrite<'e>,
    /// `fanc/` pairs (child, parent) to register after the commit.
    pairs: Vec<(JobId, JobId)>,
    /// Jobs new in this batch (a group's children).
    pub fresh: HashSet<JobId>,
}

impl<'e> AfterGuard<'e> {
    pub(super) fn new(gate: GateWrite<'e>) -> Self {
        AfterGuard {
            _gate: gate,
            pairs: Vec::new(),
            fresh: HashSet::new(),
        }
    }

    /// Whether the batch makes a job wait (a `waiting` row: what a build
    /// before fan-in would mishandle, so the store's marker is raised
    /// before the batch is written; see `store/format.rs`).
    pub(super) fn waits(&self) -> bool {
        !self.pairs.is_empty()
    }
}

impl Engine {
    /// Check an enqueue's fan-in options (`InvalidArgument`).
    pub(super) fn check_after(&self, j: &NewJob) -> Result<()> {
        let o = &j.options;
        if o.after.len() > MAX_AFTER {
            return Err(Error::invalid(format!(
                "after names {} jobs, over the limit of {MAX_AFTER}",
                o.after.len()
            )));
        }
        if !o.after.is_empty() && o.debounce.is_some() {
            return Err(Error::invalid(
                "after and debounce cannot be combined (a debounced job is rewritten while pending)",
            ));
        }
        if o.after.is_empty() && o.on_child_dead.is_some() {
            return Err(Error::invalid(
                "on_child_dead is only for a job with after (or a group's parent)",
            ));
        }
        Ok(())
    }

    /// Hold the gate exclusively in `tx` when a job of its batch waits on
    /// others: from reading their children to registering them.
    pub(super) fn guard_after<'e>(&'e self, tx: &mut Tx<'e>, jobs: &[NewJob]) -> Result<()> {
        if jobs.iter().any(|j| !j.options.after.is_empty()) {
            tx.after = Some(AfterGuard::new(self.fan.write()?));
        }
        Ok(())
    }

    /// Load the `fanc/` rows into memory (at open).
    pub(super) fn load_fan(&self) -> Result<()> {
        // A format-1 store opened read-only has no meta family.
        let Ok(meta) = self.cf(st::CF_META) else {
            return Ok(());
        };
        let mut it = self.db().raw_iterator_cf(meta);
        it.seek(keys::FAN_CHILD_PREFIX);
        let mut pairs = Vec::new();
        while let Some(k) = it.key() {
            if !k.starts_with(keys::FAN_CHILD_PREFIX) {
                break;
            }
            if let Some(p) = keys::decode_fan_key(k) {
                pairs.push(p);
            }
            it.next();
        }
        it.status()?;
        let mut m = self.fan.lock_map();
        self.fan.add(&mut m, &pairs);
        Ok(())
    }

    /// Cancel the children `cancel_rest` parents left (the reaper's pass).
    pub(crate) fn cancel_fan_rest(&self) -> Result<usize> {
        let ids =
            std::mem::take(&mut *self.fan.to_cancel.lock().unwrap_or_else(|p| p.into_inner()));
        let n = ids.len();
        for (id, why) in ids {
            match self.cancel(&id, &why) {
                Ok(_) => {}
                Err(Error::NotFound(_)) | Err(Error::WrongState(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(n)
    }
}

impl<'e> Tx<'e> {
    /// The `i`th job this transaction finished, if there is one.
    fn finished_at(&self, i: usize) -> Option<Finished> {
        self.p.finished.get(i).cloned()
    }

    /// Hold the fan-in gate and map from now to the commit: a move of a
    /// waiting parent by an operator (cancel, delete) reads the parent's
    /// row under them, as the children's settles do.
    pub(super) fn hold_fan(&mut self) {
        if self.fan_gate.is_none() {
            self.fan_gate = Some(self.e.fan.read());
        }
        if self.fan_map.is_none() {
            self.fan_map = Some(self.e.fan.lock_map());
        }
    }

    /// Delete a deleted parent's `fanp/` rows.
    pub(super) fn delete_fan_rows(&mut self, parent: &JobId) -> Result<()> {
        let meta = self.e.cf(st::CF_META)?;
        let prefix = keys::fan_parent_prefix(parent);
        let mut it = self.e.db().raw_iterator_cf(meta);
        it.seek(prefix);
        while let Some(k) = it.key() {
            if !k.starts_with(&prefix) {
                break;
            }
            self.batch.delete_cf(meta, k);
            it.next();
        }
        it.status()?;
        Ok(())
    }

    /// Stage new job `id`'s fan-in rows: `fanp/` for every child, `fanc/`
    /// for each unfinished one. Answers how many children it has and how
    /// many are unfinished. An unknown id is `NotFound`; a job already
    /// finished counts as done.
    pub(super) fn stage_after(&mut self, id: JobId, after: &[JobId]) -> Result<(u64, u64)> {
        let e = self.e;
        let meta = e.cf(st::CF_META)?;
        let Some(guard) = self.after.as_mut() else {
            return Err(Error::invalid(
                "after is for enqueue, enqueue_many and enqueue_group, not a follow-up or a schedule",
            ));
        };
        let mut seen = HashSet::with_capacity(after.len());
        let (mut total, mut unfinished) = (0u64, 0u64);
        for c in after {
            if !seen.insert(*c) {
                continue;
            }
            total += 1;
            let open = if guard.fresh.contains(c) {
                true
            } else {
                match e.key_of(c)? {
                    None => {
                        return Err(Error::NotFound(format!(
                            "after names job {c}, which does not exist"
                        )))
                    }
                    Some(k) => !k.state.is_terminal(),
                }
            };
            self.batch.put_cf(meta, keys::fan_parent_key(&id, c), []);
            if open {
                unfinished += 1;
                self.batch.put_cf(meta, keys::fan_child_key(c, &id), []);
                guard.pairs.push((*c, id));
            }
        }
        Ok((total, unfinished))
    }

    /// Before the write of a batch that finishes jobs: take the gate, and
    /// stage the moves of their waiting parents. Answers the `fanc/` rows
    /// deleted, which memory forgets after the write.
    pub(super) fn stage_fan_in(&mut self) -> Result<FanStaged> {
        if self.p.finished.is_empty() || self.after.is_some() {
            return Ok(FanStaged::default());
        }
        // Under the gate, the map says exactly which parents wait.
        if self.fan_gate.is_none() {
            self.fan_gate = Some(self.e.fan.read());
        }
        if self.fan_map.is_none() && self.e.fan.any_waited() {
            self.fan_map = Some(self.e.fan.lock_map());
        }
        let Some(map) = self.fan_map.take() else {
            return Ok(FanStaged::default());
        };
        let staged = stage_parents(self, &map);
        self.fan_map = Some(map);
        staged
    }
}

/// After a commit's write: memory learns the fan-in rows it deleted and
/// registered, then the locks go (the map's before the gate).
pub(super) fn committed(
    e: &Engine,
    map: Option<MutexGuard<'_, FanMap>>,
    gate: Option<GateRead<'_>>,
    after: Option<AfterGuard<'_>>,
    staged: FanStaged,
) {
    if let Some(mut m) = map {
        e.fan.remove(&mut m, &staged.removed);
        for p in &staged.left {
            m.parents.remove(p);
        }
        for (p, (k, rec)) in staged.parents {
            if k.state == State::Waiting {
                m.parents.insert(p, (k, rec));
            } else {
                m.parents.remove(&p);
            }
        }
    }
    drop(gate);
    if let Some(a) = after {
        if !a.pairs.is_empty() {
            let mut m = e.fan.lock_map();
            e.fan.add(&mut m, &a.pairs);
        }
    }
}

/// What a finishing commit stages for the parents of the jobs it
/// finished (called by `Tx::commit` under the gate and the map's lock).
fn stage_parents(tx: &mut Tx<'_>, map: &FanMap) -> Result<FanStaged> {
    let e = tx.e;
    let now = e.now();
    let mut removed: Vec<(JobId, JobId)> = Vec::new();
    let mut removed_set: HashSet<(JobId, JobId)> = HashSet::new();
    let mut left: Vec<JobId> = Vec::new();
    let gone = |set: &HashSet<(JobId, JobId)>, c: &JobId, p: &JobId| set.contains(&(*c, *p));
    // The latest staged (key, record) of each parent this batch moved.
    let mut cache: HashMap<JobId, (JobKey, JobRecord)> = HashMap::default();
    let mut cancel_rest: HashSet<JobId> = HashSet::new();
    let mut cancels: Vec<(JobId, String)> = Vec::new();
    let mut i = 0;
    while let Some(f) = tx.finished_at(i) {
        i += 1;
        if f.waiting_parent {
            // Its children no longer wake it.
            let prefix = keys::fan_parent_prefix(&f.id);
            let mut it = e.db().raw_iterator_cf(e.cf(st::CF_META)?);
            it.seek(prefix);
            let mut open = Vec::new();
            while let Some(k) = it.key() {
                if !k.starts_with(&prefix) {
                    break;
                }
                if let Some((_, c)) = keys::decode_fan_key(k) {
                    if map.waits(&c, &f.id) && !gone(&removed_set, &c, &f.id) {
                        open.push(c);
                    }
                }
                it.next();
            }
            it.status()?;
            left.push(f.id);
            for c in open {
                tx.delete_raw(st::CF_META, &keys::fan_child_key(&c, &f.id))?;
                removed.push((c, f.id));
                removed_set.insert((c, f.id));
                if cancel_rest.contains(&f.id) {
                    cancels.push((
                        c,
                        format!("its parent {} was cancelled (cancel_rest)", f.id),
                    ));
                }
            }
        }
        let parents: Vec<JobId> = map
            .parents_of(&f.id)
            .iter()
            .filter(|p| !gone(&removed_set, &f.id, p))
            .copied()
            .collect();
        for p in parents {
            tx.delete_raw(st::CF_META, &keys::fan_child_key(&f.id, &p))?;
            removed.push((f.id, p));
            removed_set.insert((f.id, p));
            let (pk, mut rec) = match cache.remove(&p).or_else(|| map.parents.get(&p).cloned()) {
                Some(x) => x,
                None => {
                    let Some(k) = e.key_of(&p)? else { continue };
                    let Some(r) = e.record_at(&k)? else { continue };
                    (k, r)
                }
            };
            let Some(mut fan) = rec.ext.fan_in.filter(|_| pk.state == State::Waiting) else {
                cache.insert(p, (pk, rec));
                continue;
            };
            fan.unfinished = fan.unfinished.saturating_sub(1);
            let completed = f.to == Some(State::Completed);
            let how = f.to.map_or("deleted", State::as_str);
            let to;
            if !completed && fan.policy != ChildDeadPolicy::Ignore {
                let why = match &f.error {
                    Some(err) => format!("child {} {how}: {err}", f.id),
                    None => format!("child {} {how}", f.id),
                };
                let (event, state) = if fan.policy == ChildDeadPolicy::CancelRest {
                    cancel_rest.insert(p);
                    (Event::Cancelled, State::Cancelled)
                } else {
                    rec.last_error = Some(why.clone());
                    (Event::Dead, State::Dead)
                };
                rec.ext.fan_in = Some(fan);
                rec.log(now, event, why);
                to = JobKey {
                    state,
                    ts: now,
                    ..pk
                };
                tx.stage(event, Some(&pk), Some(&to), &rec)?;
            } else if fan.unfinished == 0 {
                rec.ext.fan_in = Some(fan);
                rec.log(
                    now,
                    Event::ChildrenDone,
                    format!("all {} children finished", fan.total),
                );
                to = JobKey {
                    state: State::Pending,
                    ts: now.max(rec.ready_at),
                    ..pk
                };
                tx.stage(Event::ChildrenDone, Some(&pk), Some(&to), &rec)?;
            } else {
                rec.ext.fan_in = Some(fan);
                to = pk;
                tx.stage(Event::ChildSettled, Some(&pk), Some(&to), &rec)?;
            }
            cache.insert(p, (to, rec));
        }
    }
    e.fan.queue_cancels(cancels);
    Ok(FanStaged {
        removed,
        left,
        parents: cache,
    })
}

/// What a finishing commit staged, for memory after its write.
#[derive(Default)]
pub(super) struct FanStaged {
    /// `fanc/` rows deleted.
    removed: Vec<(JobId, JobId)>,
    /// Parents that left waiting by a move of their own (cancel, delete).
    left: Vec<JobId>,
    /// Each parent's row and record as the batch leaves it.
    parents: HashMap<JobId, (JobKey, JobRecord)>,
}

/// The fan-in record of a new parent.
pub(super) fn record_fan(total: u64, unfinished: u64, policy: Option<ChildDeadPolicy>) -> RecFan {
    RecFan {
        unfinished,
        total,
        policy: policy.unwrap_or_default(),
    }
}
