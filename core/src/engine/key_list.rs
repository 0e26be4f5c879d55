//! `list` by job key (`ListQuery::key`): a walk of the key index.
//!
//! The index (`meta`, `jkey/ scope(16) len(1) key id(16)`, see
//! [`keys::job_key_row`]) holds one row per *unfinished* keyed job, kept in
//! the batch of every move that starts or finishes one. Within a scope a
//! key's rows sort by id (UUIDv7: enqueue order). Without a scope the walk
//! seeks to the key's rows in each scope that has keyed jobs, so a page
//! costs its rows plus one seek per such scope, never a walk of other
//! jobs. Each job's state is read from `ids` at the walk's snapshot, its
//! record from `jobs`, as `list` by tag does.

use rocksdb::ReadOptions;

use crate::error::{Error, Result};
use crate::ids::{JobId, Scope};
use crate::job::{ListPage, ListQuery};
use crate::limits::LIST_SCAN_BUDGET;
use crate::store::codec;
use crate::store::keys::{self, JobKey, JOB_KEY_INDEX_PREFIX};
use crate::store::{self as st};

use super::admin::wanted;
use super::Engine;

/// A key list's cursor, `scope(16) id(16)`: its own `next`, or a job's
/// `JobInfo::cursor` (a jobs key, which holds both).
fn key_cursor(c: &str) -> Result<(Scope, JobId)> {
    let bad = || Error::invalid(format!("malformed key list cursor {c:?}"));
    let b = keys::unhex(c).ok_or_else(bad)?;
    match b.len() {
        32 => Ok((
            Scope::from_bytes(b[..16].try_into().map_err(|_| bad())?),
            JobId::from_bytes(b[16..].try_into().map_err(|_| bad())?),
        )),
        keys::JOB_KEY_LEN => {
            let k = JobKey::decode(&b).map_err(|_| bad())?;
            Ok((k.scope, k.id))
        }
        _ => Err(bad()),
    }
}

/// The start of `key`'s rows in `scope`: `jkey/ scope len key`.
fn key_prefix(scope: &Scope, key: &str) -> Vec<u8> {
    let mut p = Vec::with_capacity(JOB_KEY_INDEX_PREFIX.len() + 17 + key.len());
    p.extend_from_slice(JOB_KEY_INDEX_PREFIX);
    p.extend_from_slice(scope.as_bytes());
    p.push(key.len() as u8);
    p.extend_from_slice(key.as_bytes());
    p
}

impl Engine {
    /// `list` with a job key: the key's unfinished jobs from the key index
    /// (in the scope asked, or in every scope), in scope then enqueue
    /// order; the other filters (state, kind, schedule, parent) skip rows.
    pub(super) fn list_keyed(&self, q: &ListQuery, key: &str) -> Result<ListPage> {
        crate::flow::validate_key(key)?;
        if q.tag.is_some() {
            return Err(Error::invalid(
                "list takes a tag or a job key, not both (each is read from its own index)",
            ));
        }
        if let Some(s) = q.state.filter(|s| s.is_terminal()) {
            return Err(Error::invalid(format!(
                "list by job key reads the key index, which holds unfinished jobs only \
                 (pending, leased, failed, waiting); state {s} cannot match"
            )));
        }
        let after = q.after.as_deref().map(key_cursor).transpose()?;
        let mut page = ListPage {
            jobs: Vec::new(),
            next: None,
            corrupt: Vec::new(),
        };
        let Ok(meta) = self.cf(st::CF_META) else {
            return Ok(page); // a format-1 store opened read-only: no keys
        };
        let ids = self.cf(st::CF_IDS)?;
        let jobs = self.cf(st::CF_JOBS)?;
        let snap = self.db().snapshot();
        let bound: Vec<u8> = match q.scope {
            Some(s) => key_prefix(&s, key),
            None => JOB_KEY_INDEX_PREFIX.to_vec(),
        };
        let mut ro = ReadOptions::default();
        if let Some(end) = keys::prefix_end(&bound) {
            ro.set_iterate_upper_bound(end);
        }
        let mut it = snap.raw_iterator_cf_opt(meta, ro);
        match after {
            Some((s, id)) => {
                let mut k = key_prefix(&s, key);
                k.extend_from_slice(id.as_bytes());
                k.push(0); // strictly after the cursor
                it.seek(k.max(bound.clone()));
            }
            None if q.scope.is_some() => it.seek(&bound),
            None => it.seek(JOB_KEY_INDEX_PREFIX),
        }
        let mut read = 0usize;
        let mut last: Option<(Scope, JobId)> = None;
        while let Some(k) = it.key() {
            if page.jobs.len() >= q.limit || read >= LIST_SCAN_BUDGET {
                page.next = last.map(|(s, id)| {
                    let mut c = s.as_bytes().to_vec();
                    c.extend_from_slice(id.as_bytes());
                    keys::hex(&c)
                });
                break;
            }
            read += 1;
            let (scope, row_key, id) = match keys::decode_job_key_row(k) {
                Ok(r) => r,
                Err(e) => {
                    page.corrupt.push(self.report_corrupt(k, None, &e));
                    it.next();
                    continue;
                }
            };
            if row_key != key {
                // Another key's rows: seek to this key's in this scope, or
                // (past them) to the next scope's.
                let here = key_prefix(&scope, key);
                if k < here.as_slice() {
                    it.seek(&here);
                } else {
                    match keys::prefix_end(&k[..JOB_KEY_INDEX_PREFIX.len() + 16]) {
                        Some(n) => it.seek(n),
                        None => break,
                    }
                }
                continue;
            }
            last = Some((scope, id));
            let row = k.to_vec();
            it.next();
            let jk = match snap.get_pinned_cf(ids, id.as_bytes())? {
                Some(v) => match JobKey::decode(&v) {
                    Ok(jk) if jk.scope == scope => jk,
                    Ok(jk) => {
                        let e = Error::Corruption(format!(
                            "key index row {key:?} names job {id} in scope {scope}, which is in scope {}",
                            jk.scope
                        ));
                        page.corrupt.push(self.report_corrupt(&row, Some(id), &e));
                        continue;
                    }
                    Err(e) => {
                        page.corrupt.push(self.report_corrupt(&row, Some(id), &e));
                        continue;
                    }
                },
                None => {
                    let e = Error::Corruption(format!(
                        "key index row {key:?} names job {id}, which is not there"
                    ));
                    page.corrupt.push(self.report_corrupt(&row, Some(id), &e));
                    continue;
                }
            };
            if q.state.is_some_and(|s| s != jk.state) {
                continue;
            }
            match snap
                .get_pinned_cf(jobs, jk.encode())?
                .map(|v| codec::decode(&v))
            {
                Some(Ok(rec)) if rec.ext.key.as_deref() != Some(key) => {
                    let e = Error::Corruption(format!(
                        "key index row {key:?} names job {id}, which does not carry that key"
                    ));
                    page.corrupt.push(self.report_corrupt(&row, Some(id), &e));
                }
                Some(Ok(rec)) => {
                    if wanted(q, &rec) {
                        match self.info(&jk, rec) {
                            Ok(info) => page.jobs.push(info),
                            Err(e) => page.corrupt.push(self.report_corrupt(&row, Some(id), &e)),
                        }
                    }
                }
                Some(Err(e)) => page.corrupt.push(self.report_corrupt(&row, Some(id), &e)),
                None => {
                    let e = Error::Corruption(format!(
                        "key index row {key:?}: job {id} has no row at its ids entry"
                    ));
                    page.corrupt.push(self.report_corrupt(&row, Some(id), &e));
                }
            }
        }
        it.status()?;
        Ok(page)
    }
}
