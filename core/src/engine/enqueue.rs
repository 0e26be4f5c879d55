//! enqueue and enqueue_many: one atomic batch for any number of jobs.

use std::collections::BTreeSet;

use rustc_hash::FxHashMap as HashMap;
use std::sync::MutexGuard;

use rocksdb::WriteBatch;

use crate::config::PRIORITY_DEFAULT;
use crate::error::{Error, Result};
use crate::job::{
    family, validate_kind, Enqueued, JobId, NewJob, Scope, State, MAX_IDEMPOTENCY_KEY_LEN,
};
use crate::metrics::{delta, Transition};
use crate::store::codec::{self, JobRecord};
use crate::store::keys::{self, JobKey};
use crate::store::{self as st};

use super::Engine;

impl Engine {
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
            if k.is_empty() || k.len() > MAX_IDEMPOTENCY_KEY_LEN {
                return Err(Error::invalid(format!(
                    "idempotency key must be 1 to {MAX_IDEMPOTENCY_KEY_LEN} bytes, got {}",
                    k.len()
                )));
            }
        }
        if j.options.max_attempts == Some(0) {
            return Err(Error::invalid("max_attempts must be at least 1"));
        }
        Ok(())
    }

    pub fn enqueue_many(&self, jobs: Vec<NewJob>) -> Result<Vec<Enqueued>> {
        for j in &jobs {
            self.validate_new(j)?;
        }
        let now = self.now();

        // Idempotent enqueues of one (scope, key) serialise on a stripe lock
        // held from the check to the commit.
        let stripes: BTreeSet<usize> = jobs
            .iter()
            .filter_map(|j| {
                let k = j.options.idempotency_key.as_ref()?;
                Some(self.idem_stripe(&j.options.scope.unwrap_or(Scope::SYSTEM), k))
            })
            .collect();
        let _guards: Vec<MutexGuard<'_, ()>> = stripes
            .into_iter()
            .map(|i| self.idem_locks[i].lock().unwrap_or_else(|p| p.into_inner()))
            .collect();

        let jobs_cf = self.cf(st::CF_JOBS)?;
        let ids_cf = self.cf(st::CF_IDS)?;
        let kinds_cf = self.cf(st::CF_KINDS)?;
        let idem_cf = self.cf(st::CF_IDEM)?;
        let counters_cf = self.cf(st::CF_COUNTERS)?;

        let mut batch = WriteBatch::default();
        let mut out = Vec::with_capacity(jobs.len());
        let mut written: Vec<(JobKey, String)> = Vec::with_capacity(jobs.len());
        let mut in_batch: HashMap<(Scope, String), JobId> = HashMap::default();
        let mut per_kind: HashMap<String, i64> = HashMap::default();

        for j in jobs {
            let scope = j.options.scope.unwrap_or(Scope::SYSTEM);
            if let Some(k) = &j.options.idempotency_key {
                if let Some(id) = in_batch.get(&(scope, k.clone())) {
                    out.push(Enqueued {
                        id: *id,
                        created: false,
                    });
                    continue;
                }
                if let Some(id) = self.idempotent_match(&scope, k)? {
                    out.push(Enqueued { id, created: false });
                    continue;
                }
            }
            let id = JobId::new_v7();
            let ready_at = match (j.options.run_at, j.options.delay) {
                (Some(t), _) => t,
                (None, Some(d)) => now.saturating_add(d.as_millis() as u64),
                (None, None) => now,
            };
            let key = JobKey {
                scope,
                state: State::Pending,
                priority: j.options.priority.unwrap_or(PRIORITY_DEFAULT),
                ts: ready_at,
                id,
            };
            let mut rec = JobRecord {
                kind: j.kind,
                payload: j.payload,
                attempts: 0,
                max_attempts: j.options.max_attempts,
                worker_id: None,
                lease_deadline: None,
                generation: 0,
                idempotency_key: j.options.idempotency_key,
                created_at: now,
                ready_at,
                result: None,
                last_error: None,
                events: Vec::new(),
                dropped_events: 0,
            };
            let detail = if ready_at > now {
                format!("run at {ready_at}")
            } else {
                String::new()
            };
            rec.log(now, "enqueued", detail);
            let kb = key.encode();
            batch.put_cf(jobs_cf, kb, codec::encode(&rec)?);
            batch.put_cf(ids_cf, id.as_bytes(), kb);
            batch.put_cf(
                kinds_cf,
                keys::kind_key(&scope, &rec.kind, key.priority, key.pos()),
                [State::Pending.byte()],
            );
            if let Some(k) = &rec.idempotency_key {
                batch.put_cf(idem_cf, keys::idem_key(&scope, k), id.as_bytes());
                in_batch.insert((scope, k.clone()), id);
            }
            *per_kind.entry(rec.kind.clone()).or_default() += 1;
            out.push(Enqueued { id, created: true });
            written.push((key, rec.kind));
        }
        if written.is_empty() {
            return Ok(out);
        }
        for (kind, n) in &per_kind {
            let mut d = [0i64; 5];
            d[State::Pending.index()] = *n;
            batch.merge_cf(counters_cf, kind.as_bytes(), st::encode_counters(&d));
        }
        self.write(batch)?;

        for (kind, n) in &per_kind {
            let mut d = delta(None, Some(State::Pending));
            d[State::Pending.index()] = *n;
            self.counts.add(kind, &d);
        }
        self.metrics
            .count(Transition::Enqueued, written.len() as u64);
        self.note_ready_rows(written.iter().map(|(key, kind)| (key, kind.as_str())));
        Ok(out)
    }

    fn idem_stripe(&self, scope: &Scope, key: &str) -> usize {
        use std::hash::{Hash, Hasher};
        let mut h = rustc_hash::FxHasher::default();
        scope.hash(&mut h);
        key.hash(&mut h);
        (h.finish() as usize) % self.idem_locks.len()
    }

    /// The job an idempotency key points at, if its record still exists.
    fn idempotent_match(&self, scope: &Scope, key: &str) -> Result<Option<JobId>> {
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
        let id = JobId::from_bytes(bytes);
        Ok(self.key_of(&id)?.map(|_| id))
    }
}
