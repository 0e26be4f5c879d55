//! Operator-facing operations: get, list, retry, retention pruning, and the
//! full consistency check used by tests and the crash harness.

use std::collections::BTreeMap;

use rocksdb::ReadOptions;

use crate::error::{Error, Result};
use crate::event::Event;
use crate::job::{JobId, JobInfo, ListPage, ListQuery, State};
use crate::limits::{LIST_SCAN_BUDGET, MAX_LIST_LIMIT};
use crate::state::PerState;
use crate::store::codec::{self, JobRecord};
use crate::store::keys::{self, JobKey};
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
        let paused = self.paused().covers(&rec.kind, &key.scope);
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
            paused,
            cancel_requested: rec.ext.cancel_requested,
            snoozes: rec.ext.snoozes,
            expires_at: rec.ext.expires_at,
            progress: rec.ext.progress,
            schedule: rec.ext.schedule,
            parent: rec.ext.parent,
            tags: rec.ext.tags.to_vec(),
            metadata: rec.ext.metadata,
            fan_in: rec
                .ext
                .fan_in
                .map(|f| crate::fanin::FanInInfo::new(f.unfinished, f.total, f.policy)),
            key: rec.ext.key,
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
        if let Some(name) = &q.schedule {
            crate::schedule::validate_name(name)?;
        }
        if let Some(key) = &q.key {
            return self.list_keyed(q, key);
        }
        if let Some(tag) = &q.tag {
            return self.list_tagged(q, tag);
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
                Some(Ok(rec)) if wanted(q, &rec) => match self.info(&key, rec) {
                    Ok(info) => page.jobs.push(info),
                    Err(e) => page.corrupt.push(self.report_corrupt(k, Some(key.id), &e)),
                },
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
        // The operator decided it runs: an expiry no longer applies.
        rec.ext.expires_at = None;
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
}

/// Whether `rec` passes the filters `list` applies to the rows it reads.
pub(super) fn wanted(q: &ListQuery, rec: &JobRecord) -> bool {
    q.kind.as_ref().is_none_or(|p| p.matches(&rec.kind))
        && q.schedule
            .as_ref()
            .is_none_or(|n| rec.ext.schedule.as_ref().is_some_and(|s| s.name == *n))
        && q.parent.is_none_or(|p| rec.ext.parent == Some(p))
}

fn not_retryable(id: &JobId, state: State) -> Error {
    Error::invalid(format!(
        "job {id} is {state}; only dead or failed jobs can be retried"
    ))
}
