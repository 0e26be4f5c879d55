//! Schedules in the engine: the table in memory (rows by name, and the
//! due index by next slot), the operations that change it, and the firing
//! pass that enqueues due slots in the same batch that advances each
//! schedule's cursor.
//!
//! Lock order: `schedules` (the table) sits right below `maintenance`: a
//! firing pass holds it, then its jobs' idempotency stripes, then what a
//! commit takes. Puts, deletes, pauses hold it for their one write.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use rustc_hash::FxHashMap as HashMap;

use crate::error::{Error, Result};
use crate::job::{EnqueueOptions, NewJob};
use crate::schedule::record::{self, ScheduleRecord};
use crate::schedule::{
    self as sc, CatchUp, RunReport, Schedule, ScheduleInfo, ScheduleRef, Spec, COUNT_CAP, ON_TIME,
};
use crate::store::{self as st};

use super::transition::Tx;
use super::Engine;

/// How many schedules one firing batch commits at most.
const FIRE_BATCH: usize = 256;

struct Row {
    rec: ScheduleRecord,
    spec: Spec,
    /// The next slot it enqueues (`None`: never again, or paused).
    next: Option<u64>,
}

impl Row {
    fn new(rec: ScheduleRecord, spec: Spec) -> Row {
        let next = spec.next_after(rec.cursor);
        Row { rec, spec, next }
    }

    fn info(&self) -> ScheduleInfo {
        self.rec.info(self.next)
    }

    /// In the due index while not paused and it has a next slot.
    fn due_at(&self) -> Option<u64> {
        self.next.filter(|_| !self.rec.schedule.paused)
    }
}

#[derive(Default)]
struct Table {
    rows: BTreeMap<String, Row>,
    due: BTreeSet<(u64, String)>,
}

impl Table {
    fn insert(&mut self, name: String, row: Row) {
        self.remove(&name);
        if let Some(at) = row.due_at() {
            self.due.insert((at, name.clone()));
        }
        self.rows.insert(name, row);
    }

    fn remove(&mut self, name: &str) -> Option<Row> {
        let row = self.rows.remove(name)?;
        if let Some(at) = row.due_at() {
            self.due.remove(&(at, name.to_string()));
        }
        Some(row)
    }
}

/// Wakes the scheduler thread (a put, a resume, shutdown).
#[derive(Debug, Default)]
pub(crate) struct Wake {
    state: Mutex<(bool, bool)>, // (stop, kicked)
    cv: Condvar,
}

impl Wake {
    pub fn kick(&self) {
        let mut g = self.state.lock().unwrap_or_else(|p| p.into_inner());
        g.1 = true;
        self.cv.notify_all();
    }

    pub fn stop(&self) {
        let mut g = self.state.lock().unwrap_or_else(|p| p.into_inner());
        g.0 = true;
        self.cv.notify_all();
    }

    /// Sleep until kicked, stopped or `timeout`; true when stopped.
    pub fn wait(&self, timeout: Duration) -> bool {
        let g = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let (mut g, _) = self
            .cv
            .wait_timeout_while(g, timeout, |(stop, kicked)| !*stop && !*kicked)
            .unwrap_or_else(|p| p.into_inner());
        g.1 = false;
        g.0
    }
}

/// The engine's schedules.
#[derive(Default)]
pub(crate) struct Schedules {
    table: Mutex<Table>,
    pub wake: Arc<Wake>,
}

impl Schedules {
    fn lock(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// What a firing pass does for one schedule.
struct Plan {
    /// (slot, missed slots it stands for), oldest first.
    jobs: Vec<(u64, u64)>,
    skipped: u64,
}

fn plan(row: &Row, now: u64) -> Plan {
    let (spec, cursor) = (&row.spec, row.rec.cursor);
    let Some(latest) = spec.latest_at_or_before(cursor, now) else {
        return Plan {
            jobs: Vec::new(),
            skipped: 0,
        };
    };
    let count = spec.count_between(cursor, now, COUNT_CAP).max(1);
    let on_time = now - latest <= ON_TIME.as_millis() as u64;
    let s = &row.rec.schedule;
    match s.catch_up {
        CatchUp::Skip if on_time => Plan {
            jobs: vec![(latest, 0)],
            skipped: count - 1,
        },
        CatchUp::Skip => Plan {
            jobs: Vec::new(),
            skipped: count,
        },
        CatchUp::All => {
            let k = count.min(u64::from(s.catch_up_limit()));
            let mut slots = vec![latest];
            while (slots.len() as u64) < k {
                let before = slots[slots.len() - 1] - 1;
                match spec.latest_at_or_before(cursor, before) {
                    Some(t) => slots.push(t),
                    None => break,
                }
            }
            slots.reverse();
            let n = slots.len() as u64;
            Plan {
                jobs: slots.into_iter().map(|t| (t, 0)).collect(),
                skipped: count.saturating_sub(n),
            }
        }
        // `One`, and any later policy this build reads as `One`.
        _ => Plan {
            jobs: vec![(latest, count - 1)],
            skipped: count - 1,
        },
    }
}

/// The job a schedule enqueues for `slot`.
fn new_job(s: &Schedule, slot: u64) -> Result<NewJob> {
    let expires_at = match s.expires_in {
        Some(d) => Some(crate::limits::instant_after("expires_in", slot, d)?),
        None => None,
    };
    Ok(NewJob {
        kind: s.kind.clone(),
        payload: s.payload.clone(),
        options: EnqueueOptions {
            scope: s.scope,
            priority: s.priority,
            max_attempts: s.max_attempts,
            idempotency_key: Some(sc::idempotency_key(&s.name, slot)),
            encoding: s.encoding,
            expires_at,
            tags: s.tags.clone(),
            metadata: s.metadata.clone(),
            ..EnqueueOptions::default()
        },
    })
}

impl Engine {
    fn writable(&self) -> Result<()> {
        if self.read_only {
            return Err(Error::invalid("the store is open read-only"));
        }
        if self.shutting_down.load(Ordering::SeqCst) {
            return Err(Error::Closed);
        }
        Ok(())
    }

    /// Read every schedule row into memory (at open). A row that does not
    /// decode is reported and left out; a store without the family (an
    /// older store opened read-only) has none.
    pub(super) fn load_schedules(&self) -> Result<()> {
        let Ok(cf) = self.cf(st::CF_SCHEDULES) else {
            return Ok(());
        };
        let mut t = self.schedules.lock();
        let mut it = self.db().raw_iterator_cf(cf);
        it.seek_to_first();
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            let row = record::decode(k, v).and_then(|rec| {
                let s = &rec.schedule;
                let spec = Spec::parse(&s.spec, s.timezone.as_deref(), s.anchor)
                    .map_err(|e| Error::Corruption(format!("schedule {:?}: {e}", s.name)))?;
                Ok(Row::new(rec, spec))
            });
            match row {
                Ok(row) => t.insert(row.rec.schedule.name.clone(), row),
                Err(e) => {
                    self.report_corrupt(k, None, &e);
                }
            }
            it.next();
        }
        it.status()?;
        Ok(())
    }

    /// Create or replace the schedule `s.name`. An update keeps what the
    /// schedule has done (its cursor: no slot is enqueued twice) unless its
    /// spec, zone or anchor changed, when it starts afresh from now.
    pub fn schedule_put(&self, mut s: Schedule) -> Result<ScheduleInfo> {
        self.writable()?;
        let spec = s.validate()?;
        s.tags = crate::tags::normalize_tags(&s.tags)?;
        // The job must fit this store's rules now, not fail at fire time.
        let mut probe = new_job(&s, crate::limits::MAX_INSTANT_MS / 2)?;
        probe.options.expires_at = None;
        self.validate_new(&probe)?;
        let now = self.now();
        if spec.next_after(now).is_none() {
            return Err(Error::invalid(format!(
                "schedule spec {:?} never fires after now",
                s.spec
            )));
        }
        let mut t = self.schedules.lock();
        let rec = match t.rows.get(&s.name) {
            None => ScheduleRecord {
                schedule: s,
                created_at: now,
                updated_at: now,
                cursor: now,
                ..ScheduleRecord::default()
            },
            Some(old) => {
                let o = &old.rec;
                let respec = o.schedule.spec.trim() != s.spec.trim()
                    || o.schedule.timezone != s.timezone
                    || o.schedule.anchor != s.anchor;
                let resumed = o.schedule.paused && !s.paused;
                let mut rec = ScheduleRecord {
                    schedule: s,
                    updated_at: now,
                    ..o.clone()
                };
                if respec {
                    rec.cursor = rec.cursor.max(now);
                    rec.last_slot = None;
                    rec.last_job = None;
                    rec.last_fired_at = None;
                } else if resumed {
                    rec.cursor = rec.cursor.max(now);
                }
                rec
            }
        };
        let info = self.write_schedule(&mut t, rec, spec)?;
        drop(t);
        self.schedules.wake.kick();
        Ok(info)
    }

    fn write_schedule(
        &self,
        t: &mut Table,
        rec: ScheduleRecord,
        spec: Spec,
    ) -> Result<ScheduleInfo> {
        let mut b = rocksdb::WriteBatch::default();
        b.put_cf(
            self.cf(st::CF_SCHEDULES)?,
            rec.schedule.name.as_bytes(),
            record::encode(&rec),
        );
        self.write(b)?;
        let name = rec.schedule.name.clone();
        let row = Row::new(rec, spec);
        let info = row.info();
        t.insert(name, row);
        Ok(info)
    }

    pub fn schedule_get(&self, name: &str) -> Result<ScheduleInfo> {
        sc::validate_name(name)?;
        self.schedules
            .lock()
            .rows
            .get(name)
            .map(Row::info)
            .ok_or_else(|| Error::NotFound(format!("no schedule {name:?}")))
    }

    /// Every schedule, by name.
    pub fn schedule_list(&self) -> Vec<ScheduleInfo> {
        self.schedules.lock().rows.values().map(Row::info).collect()
    }

    /// Delete the schedule `name` (the jobs it enqueued stay).
    pub fn schedule_delete(&self, name: &str) -> Result<()> {
        self.writable()?;
        sc::validate_name(name)?;
        let mut t = self.schedules.lock();
        if !t.rows.contains_key(name) {
            return Err(Error::NotFound(format!("no schedule {name:?}")));
        }
        let mut b = rocksdb::WriteBatch::default();
        b.delete_cf(self.cf(st::CF_SCHEDULES)?, name.as_bytes());
        self.write(b)?;
        t.remove(name);
        Ok(())
    }

    /// Pause or resume `name`. A resume does not catch up the slots that
    /// passed while it was paused: its cursor moves to now.
    pub fn schedule_set_paused(&self, name: &str, paused: bool) -> Result<ScheduleInfo> {
        self.writable()?;
        sc::validate_name(name)?;
        let now = self.now();
        let mut t = self.schedules.lock();
        let row = t
            .rows
            .get(name)
            .ok_or_else(|| Error::NotFound(format!("no schedule {name:?}")))?;
        if row.rec.schedule.paused == paused {
            return Ok(row.info());
        }
        let mut rec = row.rec.clone();
        let spec = row.spec.clone();
        rec.schedule.paused = paused;
        rec.updated_at = now;
        if !paused {
            rec.cursor = rec.cursor.max(now);
        }
        let info = self.write_schedule(&mut t, rec, spec)?;
        drop(t);
        self.schedules.wake.kick();
        Ok(info)
    }

    /// When the earliest due slot falls (the scheduler thread sleeps until then).
    pub fn next_schedule_due(&self) -> Option<u64> {
        self.schedules.lock().due.first().map(|(at, _)| *at)
    }

    /// One firing pass at the clock's now: every due slot of every
    /// schedule is enqueued (or skipped, by its catch-up policy) in
    /// batches of schedules, each batch one atomic write of the jobs and
    /// the schedules' advanced rows.
    pub fn run_schedules(&self) -> Result<RunReport> {
        self.writable()?;
        let now = self.now();
        let mut t = self.schedules.lock();
        let mut report = RunReport::default();
        loop {
            let names: Vec<String> = t
                .due
                .iter()
                .take_while(|(at, _)| *at <= now)
                .take(FIRE_BATCH)
                .map(|(_, n)| n.clone())
                .collect();
            if names.is_empty() {
                break;
            }
            let mut staged: Vec<(ScheduleRecord, Vec<NewJob>, Vec<ScheduleRef>)> = Vec::new();
            for name in &names {
                let row = &t.rows[name];
                let p = plan(row, now);
                let mut rec = row.rec.clone();
                let (mut jobs, mut refs) = (Vec::new(), Vec::new());
                for (slot, missed) in p.jobs {
                    let job = new_job(&rec.schedule, slot).and_then(|j| {
                        self.validate_new(&j)?;
                        Ok(j)
                    });
                    match job {
                        // A slot whose job expired before it could be enqueued
                        // (caught up late): nothing to run.
                        Ok(j) if j.options.expires_at.is_some_and(|x| x <= now) => {
                            rec.skipped += 1;
                            report.skipped += 1;
                        }
                        Ok(j) => {
                            jobs.push(j);
                            refs.push(ScheduleRef {
                                name: name.clone(),
                                slot,
                                missed,
                            });
                        }
                        Err(e) => {
                            rec.last_error = Some(format!("slot {slot}: {e}"));
                            report.failed += 1;
                        }
                    }
                }
                rec.skipped += p.skipped;
                report.skipped += p.skipped;
                rec.cursor = rec.cursor.max(now);
                staged.push((rec, jobs, refs));
            }
            let stripes: BTreeSet<usize> = staged
                .iter()
                .flat_map(|(_, jobs, _)| jobs)
                .filter_map(|j| {
                    let k = j.options.idempotency_key.as_ref()?;
                    Some(self.idem_stripe(&j.options.scope.unwrap_or_default(), k))
                })
                .collect();
            let guards = self.idem_guards(stripes);
            let mut tx = Tx::new(self);
            let mut in_batch = HashMap::default();
            for (rec, jobs, refs) in &mut staged {
                for (j, r) in std::mem::take(jobs).into_iter().zip(std::mem::take(refs)) {
                    let slot = r.slot;
                    let enq = self.stage_new(
                        &mut tx,
                        j,
                        now,
                        &mut in_batch,
                        super::enqueue::Origin::Schedule(r),
                    )?;
                    if enq.created {
                        rec.enqueued += 1;
                        report.enqueued += 1;
                    }
                    rec.last_slot = Some(slot);
                    rec.last_job = Some(enq.id);
                    rec.last_fired_at = Some(now);
                    rec.last_error = None;
                }
                tx.put_raw(
                    st::CF_SCHEDULES,
                    rec.schedule.name.as_bytes(),
                    &record::encode(rec),
                )?;
            }
            tx.commit()?;
            drop(guards);
            report.schedules += staged.len() as u64;
            for (rec, _, _) in staged {
                let name = rec.schedule.name.clone();
                let spec = t.rows[&name].spec.clone();
                t.insert(name, Row::new(rec, spec));
            }
        }
        self.metrics.schedule_passes.fetch_add(1, Ordering::Relaxed);
        Ok(report)
    }

    /// The schedules' metrics: how many, and per schedule the last fire's
    /// lag, the jobs enqueued and the slots skipped.
    pub fn render_schedules(&self, o: &mut String) {
        let t = self.schedules.lock();
        crate::metrics::render_schedules(
            o,
            t.rows.values().map(|r| {
                let x = &r.rec;
                (
                    x.schedule.name.as_str(),
                    x.last_fired_at
                        .zip(x.last_slot)
                        .map(|(f, s)| f.saturating_sub(s)),
                    x.enqueued,
                    x.skipped,
                )
            }),
            t.rows.len(),
        );
    }
}
