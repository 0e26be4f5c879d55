//! Operator-facing operations: get, list, retry, retention pruning, and the
//! full consistency check used by tests and the crash harness.

use std::collections::{BTreeMap, HashMap, HashSet};

use rocksdb::ReadOptions;

use crate::error::{Error, Result};
use crate::event::Event;
use crate::job::{JobId, JobInfo, ListPage, ListQuery, Scope, State};
use crate::limits::{LIST_SCAN_BUDGET, MAX_LIST_LIMIT};
use crate::state::PerState;
use crate::store::codec::{self, JobRecord};
use crate::store::keys::{self, JobKey, KindKey};
use crate::store::{self as st};

use super::bands;
use super::transition::Tx;
use super::Engine;

/// What [`Queue::check`](crate::Queue::check) found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CheckReport {
    /// Rows in the jobs column family.
    pub jobs: u64,
    /// Counts per kind and state from the full scan.
    pub scanned: BTreeMap<String, PerState<i64>>,
    /// Every disagreement between the rows, the indexes and the counters.
    pub problems: Vec<String>,
    /// The store's format (its marker; format 1 has none).
    pub format: Option<crate::store::format::StoreFormat>,
}

impl Engine {
    /// Everything about the job at `key`; `Corruption` when its payload,
    /// kept outside the record, cannot be read.
    pub fn info(&self, key: &JobKey, mut rec: JobRecord) -> Result<JobInfo> {
        if rec.ext.payload_len.is_some() {
            rec.payload = self.payload_of(&key.id, &rec)?;
        }
        // The job's own ceiling, else the one that decided its latest
        // failure (as the owner's config said), else this handle's config.
        let max_attempts = match (rec.max_attempts, rec.ext.ceiling) {
            (Some(n), _) | (None, Some(n)) => n,
            (None, None) => self.cfg.max_attempts_for(&rec.kind, None),
        };
        let events = rec.events();
        Ok(JobInfo {
            id: key.id,
            scope: key.scope,
            kind: rec.kind,
            state: key.state,
            priority: key.priority,
            state_ts: key.ts,
            attempts: rec.attempts,
            max_attempts,
            generation: rec.generation,
            worker_id: rec.worker_id,
            lease_deadline: rec.lease_deadline,
            payload: rec.payload,
            result: rec.result,
            last_error: rec.last_error,
            idempotency_key: rec.idempotency_key,
            created_at: rec.created_at,
            events,
            dropped_events: rec.dropped_events,
            payload_encoding: rec.ext.payload_encoding,
            result_encoding: rec.ext.result_encoding,
            cursor: keys::hex(&key.encode()),
        })
    }

    pub fn get(&self, id: &JobId) -> Result<Option<JobInfo>> {
        // The index and the row are two reads: a move or a prune can commit
        // between them. When the row is gone, read the index again; only an
        // index that still names the same missing row is corruption.
        let mut key = self.key_of(id)?;
        for _ in 0..16 {
            let Some(k) = key else {
                return Ok(None);
            };
            if let Some(rec) = self.record_at(&k)? {
                return self.info(&k, rec).map(Some);
            }
            key = self.key_of(id)?;
            if key == Some(k) {
                break;
            }
        }
        Err(Error::Corruption(format!(
            "the id index points job {id} at a row that does not exist"
        )))
    }

    pub fn list(&self, q: &ListQuery) -> Result<ListPage> {
        if q.limit == 0 || q.limit > MAX_LIST_LIMIT {
            return Err(Error::invalid(format!(
                "list limit must be 1 to {MAX_LIST_LIMIT}, got {}",
                q.limit
            )));
        }
        let prefix: Vec<u8> = match (q.scope, q.state) {
            (Some(s), Some(st)) => keys::job_state_prefix(&s, st).to_vec(),
            (Some(s), None) => s.as_bytes().to_vec(),
            (None, _) => Vec::new(),
        };
        let start = match &q.after {
            Some(c) => {
                let k = keys::unhex(c)
                    .filter(|k| k.len() == keys::JOB_KEY_LEN)
                    .ok_or_else(|| Error::invalid(format!("malformed list cursor {c:?}")))?;
                let mut k = k;
                k.push(0); // strictly after the cursor
                k.max(prefix.clone())
            }
            None => prefix.clone(),
        };
        let mut ro = ReadOptions::default();
        if let Some(end) = keys::prefix_end(&prefix) {
            ro.set_iterate_upper_bound(end);
        }
        let mut it = self.db().raw_iterator_cf_opt(self.cf(st::CF_JOBS)?, ro);
        it.seek(&start);
        let mut page = ListPage {
            jobs: Vec::new(),
            next: None,
            corrupt: Vec::new(),
        };
        let mut scanned = 0usize;
        let mut last_read: Option<Vec<u8>> = None;
        while let Some(k) = it.key() {
            if page.jobs.len() >= q.limit || scanned >= LIST_SCAN_BUDGET {
                // Resume strictly after the last row this page read.
                page.next = last_read.as_deref().map(keys::hex);
                break;
            }
            last_read = Some(k.to_vec());
            scanned += 1;
            let key = match JobKey::decode(k) {
                Ok(key) => key,
                Err(e) => {
                    page.corrupt.push(self.report_corrupt(k, None, &e));
                    it.next();
                    continue;
                }
            };
            if let Some(want) = q.state {
                if key.state != want {
                    // Skip-scan to this scope's rows of the wanted state, or the next scope.
                    let next = if key.state < want {
                        keys::job_state_prefix(&key.scope, want).to_vec()
                    } else {
                        match keys::prefix_end(key.scope.as_bytes()) {
                            Some(n) => n,
                            None => break,
                        }
                    };
                    it.seek(next);
                    continue;
                }
            }
            match it.value().map(codec::decode) {
                Some(Ok(rec)) if q.kind.as_ref().is_none_or(|p| p.matches(&rec.kind)) => {
                    match self.info(&key, rec) {
                        Ok(info) => page.jobs.push(info),
                        Err(e) => page.corrupt.push(self.report_corrupt(k, Some(key.id), &e)),
                    }
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => page.corrupt.push(self.report_corrupt(k, Some(key.id), &e)),
                None => {}
            }
            it.next();
        }
        it.status()?;
        Ok(page)
    }

    /// Dead (or failed) → pending with attempts reset; an operator action.
    pub fn retry(&self, id: &JobId) -> Result<()> {
        let key = self
            .key_of(id)?
            .ok_or_else(|| Error::NotFound(format!("no job {id}")))?;
        match key.state {
            State::Dead => {
                let _g = self.job_lock(id);
                let key = self
                    .key_of(id)?
                    .ok_or_else(|| Error::NotFound(format!("no job {id}")))?;
                if key.state != State::Dead {
                    return Err(not_retryable(id, key.state));
                }
                self.retry_row(key)
            }
            State::Failed => {
                // A failed row can be leased at any moment: claim it like a poller.
                let group = self.bands.scope(key.scope).group(key.priority);
                {
                    let mut g = bands::lock(&group);
                    if !g.claimed.insert((State::Failed, key.pos())) {
                        return Err(not_retryable(id, State::Leased));
                    }
                }
                let res = match self.key_of(id)? {
                    Some(now_key) if now_key == key => self.retry_row(key),
                    Some(other) => Err(not_retryable(id, other.state)),
                    None => Err(Error::NotFound(format!("no job {id}"))),
                };
                bands::lock(&group)
                    .claimed
                    .remove(&(State::Failed, key.pos()));
                if res.is_err() {
                    // The row may still be there: make sure pollers see it.
                    if let Ok(Some(rec)) = self.record_at(&key) {
                        self.note_ready_row(&key, &rec.kind);
                    }
                }
                res
            }
            other => Err(not_retryable(id, other)),
        }
    }

    fn retry_row(&self, key: JobKey) -> Result<()> {
        let mut rec = self
            .record_at(&key)?
            .ok_or_else(|| Error::Corruption(format!("job {} has no row", key.id)))?;
        let now = self.now();
        let before = rec.attempts;
        rec.attempts = 0;
        rec.ready_at = now;
        rec.worker_id = None;
        rec.log(
            now,
            Event::Retried,
            format!("operator retry from {} after {before} attempts", key.state),
        );
        let new = JobKey {
            state: State::Pending,
            ts: now,
            ..key
        };
        let mut tx = Tx::new(self);
        tx.stage(Event::Retried, Some(&key), Some(&new), &rec)?;
        tx.commit()
    }

    /// Delete completed jobs older than the retention, at most `budget` rows.
    pub fn prune_completed(
        &self,
        now: u64,
        budget: usize,
    ) -> Result<(usize, Vec<crate::job::CorruptRecord>)> {
        let Some(retention) = self.cfg.completed_retention else {
            return Ok((0, Vec::new()));
        };
        let cutoff = now.saturating_sub(crate::limits::ms(retention));
        let _maintenance = self.maintenance.lock().unwrap_or_else(|p| p.into_inner());
        let jobs_cf = self.cf(st::CF_JOBS)?;
        let mut pruned = 0usize;
        let mut corrupt = Vec::new();
        let mut resume: HashMap<(Scope, u8), keys::Pos> = HashMap::new();
        let mut tx = Tx::new(self);
        'scopes: for scope in self.scopes() {
            let sp = keys::job_state_prefix(&scope, State::Completed);
            let mut ro = ReadOptions::default();
            ro.set_iterate_lower_bound(sp.to_vec());
            if let Some(end) = keys::prefix_end(&sp) {
                ro.set_iterate_upper_bound(end);
            }
            let mut it = self.db().raw_iterator_cf_opt(jobs_cf, ro);
            it.seek(sp);
            let mut positioned: HashSet<u8> = HashSet::new();
            while let Some(k) = it.key() {
                let key = match JobKey::decode(k) {
                    Ok(key) => key,
                    Err(e) => {
                        corrupt.push(self.report_corrupt(k, None, &e));
                        it.next();
                        continue;
                    }
                };
                let band = keys::job_band_prefix(&scope, State::Completed, key.priority);
                if positioned.insert(key.priority) {
                    // Resume this band where the last pass stopped (past its tombstones).
                    let resume = self
                        .prune_cursors
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .get(&(scope, key.priority))
                        .copied();
                    if let Some(pos) = resume.filter(|p| *p > key.pos()) {
                        let mut target = band.to_vec();
                        target.extend_from_slice(&pos.encode());
                        it.seek(target);
                        continue;
                    }
                }
                if key.ts > cutoff {
                    match keys::prefix_end(&band) {
                        Some(n) => {
                            it.seek(n);
                            continue;
                        }
                        None => break,
                    }
                }
                let rec = match it.value().map(codec::decode) {
                    Some(Ok(r)) => r,
                    Some(Err(e)) => {
                        // Kept (nothing is deleted that cannot be read) and
                        // reported; later passes resume past it.
                        corrupt.push(self.report_corrupt(k, Some(key.id), &e));
                        resume.insert((scope, key.priority), key.pos().successor());
                        it.next();
                        continue;
                    }
                    None => break,
                };
                tx.stage(Event::Pruned, Some(&key), None, &rec)?;
                resume.insert((scope, key.priority), key.pos().successor());
                pruned += 1;
                if tx.len() >= 1000 {
                    self.commit_prune(std::mem::replace(&mut tx, Tx::new(self)), &mut resume)?;
                }
                if pruned >= budget {
                    break 'scopes;
                }
                it.next();
            }
            it.status()?;
        }
        if !tx.is_empty() {
            self.commit_prune(tx, &mut resume)?;
        } else {
            // Only skipped (corrupt) rows are left to step over.
            self.prune_cursors
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .extend(resume.drain());
        }
        Ok((pruned, corrupt))
    }

    /// Commit one pruning batch; only then move the resume cursors past its
    /// rows (a failed write leaves them to the next pass).
    fn commit_prune(&self, tx: Tx<'_>, resume: &mut HashMap<(Scope, u8), keys::Pos>) -> Result<()> {
        tx.commit()?;
        self.prune_cursors
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(resume.drain());
        Ok(())
    }

    /// A full scan that cross-checks rows, the id, kind and idempotency
    /// indexes, the counters (disk and memory) and the in-memory leases.
    /// O(store size): for tests, the crash harness and operators. The disk
    /// checks read one snapshot and are exact on a live store; the
    /// comparisons with memory (leases, counts) are exact on a quiet one.
    pub fn check(&self) -> Result<CheckReport> {
        let mut r = CheckReport {
            format: self.format,
            ..CheckReport::default()
        };
        // Every disk read goes through one snapshot: rows, indexes and
        // counters are written together in one batch per move, so they agree
        // exactly at any snapshot, also while workers and the reaper run.
        let snap = self.db().snapshot();
        let mut seen: HashMap<JobId, JobKey> = HashMap::new();
        let mut records: HashMap<JobId, (String, Option<String>)> = HashMap::new();
        let mut external: HashSet<JobId> = HashSet::new();
        let leased_mem: HashMap<JobId, (JobKey, u64)> = self
            .leases
            .snapshot()
            .into_iter()
            .map(|(id, k, g)| (id, (k, g)))
            .collect();

        let mut it = snap.raw_iterator_cf(self.cf(st::CF_JOBS)?);
        it.seek_to_first();
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            r.jobs += 1;
            let key = match JobKey::decode(k) {
                Ok(key) => key,
                Err(e) => {
                    r.problems.push(format!("jobs row: {e}"));
                    it.next();
                    continue;
                }
            };
            let rec = match codec::decode(v) {
                Ok(rec) => rec,
                Err(e) => {
                    r.problems.push(format!("job {}: {e}", key.id));
                    it.next();
                    continue;
                }
            };
            if let Some(prev) = seen.insert(key.id, key) {
                r.problems.push(format!(
                    "job {} has two rows: {} and {}",
                    key.id, prev.state, key.state
                ));
            }
            r.scanned.entry(rec.kind.clone()).or_default()[key.state] += 1;
            match snap.get_pinned_cf(self.cf(st::CF_IDS)?, key.id.as_bytes())? {
                Some(ik) if ik.as_ref() == key.encode() => {}
                Some(_) => r
                    .problems
                    .push(format!("id index of job {} points elsewhere", key.id)),
                None => r
                    .problems
                    .push(format!("job {} missing from the id index", key.id)),
            }
            if matches!(key.state, State::Pending | State::Failed) {
                let kk = keys::kind_key(&key.scope, &rec.kind, key.priority, key.pos());
                match snap.get_pinned_cf(self.cf(st::CF_KINDS)?, kk)? {
                    Some(s) if s.as_ref() == [key.state.byte()] => {}
                    _ => r.problems.push(format!(
                        "{} job {} missing from the kind index",
                        key.state, key.id
                    )),
                }
            }
            if key.state == State::Leased {
                match leased_mem.get(&key.id) {
                    Some((mk, g)) if *mk == key && *g == rec.generation => {}
                    _ => r.problems.push(format!(
                        "leased job {} disagrees with the in-memory lease",
                        key.id
                    )),
                }
            }
            if let Some(len) = rec.ext.payload_len {
                let found = match self.cf(st::CF_PAYLOADS) {
                    Ok(cf) => snap.get_pinned_cf(cf, key.id.as_bytes())?,
                    Err(_) => None, // a format-1 store opened read-only
                };
                match found {
                    Some(p) if p.len() as u64 == len => {}
                    Some(p) => r.problems.push(format!(
                        "payload of job {} is {} bytes, its record says {len}",
                        key.id,
                        p.len()
                    )),
                    None => r
                        .problems
                        .push(format!("payload of job {} is missing", key.id)),
                }
                external.insert(key.id);
            }
            records.insert(key.id, (rec.kind, rec.idempotency_key));
            it.next();
        }
        it.status()?;

        // A format-1 store opened read-only has no payloads family.
        let payloads = self.cf(st::CF_PAYLOADS).ok();
        let mut it = payloads.map(|cf| snap.raw_iterator_cf(cf));
        if let Some(it) = it.as_mut() {
            it.seek_to_first();
        }
        while let Some(k) = it.as_ref().and_then(|it| it.key()) {
            let ok = <[u8; 16]>::try_from(k)
                .ok()
                .is_some_and(|b| external.contains(&JobId::from_bytes(b)));
            if !ok {
                r.problems.push(format!(
                    "payload entry {} names no job keeping its payload there",
                    keys::hex(k)
                ));
            }
            if let Some(it) = it.as_mut() {
                it.next();
            }
        }
        if let Some(it) = it.as_ref() {
            it.status()?;
        }

        for (id, (k, _)) in &leased_mem {
            if seen.get(id) != Some(k) {
                r.problems
                    .push(format!("in-memory lease of {id} has no leased row"));
            }
        }

        let mut it = snap.raw_iterator_cf(self.cf(st::CF_KINDS)?);
        it.seek_to_first();
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            match KindKey::decode(k) {
                Ok(kk) => {
                    let ok = seen.get(&kk.pos.id).is_some_and(|jk| {
                        jk.pos() == kk.pos
                            && jk.scope == kk.scope
                            && jk.priority == kk.priority
                            && v == [jk.state.byte()]
                    }) && records
                        .get(&kk.pos.id)
                        .is_some_and(|(kind, _)| *kind == kk.kind);
                    if !ok {
                        r.problems
                            .push(format!("stale kind-index entry for job {}", kk.pos.id));
                    }
                }
                Err(e) => r.problems.push(format!("kind index: {e}")),
            }
            it.next();
        }
        it.status()?;

        let mut it = snap.raw_iterator_cf(self.cf(st::CF_IDS)?);
        it.seek_to_first();
        let mut ids = 0u64;
        while let Some(k) = it.key() {
            ids += 1;
            let ok = <[u8; 16]>::try_from(k)
                .ok()
                .is_some_and(|b| seen.contains_key(&JobId::from_bytes(b)));
            if !ok {
                r.problems
                    .push(format!("id index entry {} names no job", keys::hex(k)));
            }
            it.next();
        }
        it.status()?;
        if ids != seen.len() as u64 {
            r.problems
                .push(format!("{ids} id index entries for {} jobs", seen.len()));
        }

        let mut it = snap.raw_iterator_cf(self.cf(st::CF_IDEM)?);
        it.seek_to_first();
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            let ok = <[u8; 16]>::try_from(v).ok().is_some_and(|b| {
                let id = JobId::from_bytes(b);
                records
                    .get(&id)
                    .is_some_and(|(_, ik)| ik.as_deref().map(|s| s.as_bytes()) == k.get(16..))
            });
            if !ok {
                r.problems.push(format!(
                    "idempotency entry {} names no job with that key",
                    keys::hex(k)
                ));
            }
            it.next();
        }
        it.status()?;

        let mut disk: BTreeMap<String, PerState<i64>> = BTreeMap::new();
        let mut it = snap.raw_iterator_cf(self.cf(st::CF_COUNTERS)?);
        it.seek_to_first();
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            if let (Ok(kind), Some(c)) = (std::str::from_utf8(k), st::decode_counters(v)) {
                if !c.is_zero() {
                    disk.insert(kind.to_string(), c);
                }
            } else {
                r.problems
                    .push(format!("malformed counters row {}", keys::hex(k)));
            }
            it.next();
        }
        it.status()?;
        if disk != r.scanned {
            r.problems.push(format!(
                "counters on disk {disk:?} differ from a full scan {:?}",
                r.scanned
            ));
        }
        let mem = self.counts.stats();
        for (kind, c) in &r.scanned {
            let m = mem.by_kind.get(kind).copied().unwrap_or_default();
            let want = crate::job::StateCounts::from_per_state(c);
            if m != want {
                r.problems.push(format!(
                    "in-memory counts of {kind} {m:?} differ from a full scan {want:?}"
                ));
            }
        }
        for kind in mem.by_kind.keys() {
            if !r.scanned.contains_key(kind) {
                r.problems
                    .push(format!("in-memory counts for {kind}, which has no jobs"));
            }
        }
        Ok(r)
    }
}

fn not_retryable(id: &JobId, state: State) -> Error {
    Error::invalid(format!(
        "job {id} is {state}; only dead or failed jobs can be retried"
    ))
}
