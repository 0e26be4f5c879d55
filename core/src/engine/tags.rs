//! The tag index (issue 42): `list` by tag, `count_tag`, and its part of
//! `check`.
//!
//! Rows live in the `meta` family under `tag/`: `len tag scope state id`,
//! empty values, written by `Tx::stage` in the batch of every move that
//! changes a tagged job's state (and deleted with the job: prune, purge,
//! delete). Within one tag they sort by scope, then state, then id (ids
//! are UUIDv7: enqueue order).

use std::collections::HashSet;

use rocksdb::ReadOptions;

use crate::error::{Error, Result};
use crate::ids::Scope;
use crate::job::{ListPage, ListQuery, State, StateCounts};
use crate::limits::LIST_SCAN_BUDGET;
use crate::state::PerState;
use crate::store::codec::{self, JobRecord};
use crate::store::keys::{self, JobKey, TagKey};
use crate::store::{self as st};

use super::admin::{wanted, CheckReport};
use super::Engine;

/// The length of a tag-list cursor: scope 16 + state 1 + id 16.
const TAG_CURSOR_LEN: usize = 33;

/// A tag list's cursor as the 33 bytes after the tag's prefix: its own
/// (`next`), or a job's `JobInfo::cursor` (a jobs key, which holds the
/// scope, state and id), so "after this job" works in a tag list too.
fn tag_cursor(c: &str) -> Result<Vec<u8>> {
    let bad = || Error::invalid(format!("malformed tag list cursor {c:?}"));
    let b = keys::unhex(c).ok_or_else(bad)?;
    match b.len() {
        TAG_CURSOR_LEN => Ok(b),
        keys::JOB_KEY_LEN => {
            let k = JobKey::decode(&b).map_err(|_| bad())?;
            let mut t = Vec::with_capacity(TAG_CURSOR_LEN);
            t.extend_from_slice(k.scope.as_bytes());
            t.push(k.state.byte());
            t.extend_from_slice(k.id.as_bytes());
            Ok(t)
        }
        _ => Err(bad()),
    }
}

impl Engine {
    /// `list` with a tag: read the tag's index rows (from the scope and
    /// state asked, when asked), then each job's row, at one snapshot.
    /// O(page + rows the other filters skip), whatever the store holds.
    pub(super) fn list_tagged(&self, q: &ListQuery, tag: &str) -> Result<ListPage> {
        crate::tags::validate_tag(tag)?;
        let base = keys::tag_prefix(tag);
        let mut prefix = base.clone();
        if let Some(s) = q.scope {
            prefix.extend_from_slice(s.as_bytes());
            if let Some(state) = q.state {
                prefix.push(state.byte());
            }
        }
        let start = match &q.after {
            Some(c) => {
                let mut k = base.clone();
                k.extend_from_slice(&tag_cursor(c)?);
                k.push(0); // strictly after the cursor
                k.max(prefix.clone())
            }
            None => prefix.clone(),
        };
        let mut page = ListPage {
            jobs: Vec::new(),
            next: None,
            corrupt: Vec::new(),
        };
        let Ok(meta) = self.cf(st::CF_META) else {
            return Ok(page); // a format-1 store opened read-only: no tags
        };
        let snap = self.db().snapshot();
        let mut ro = ReadOptions::default();
        if let Some(end) = keys::prefix_end(&prefix) {
            ro.set_iterate_upper_bound(end);
        }
        let mut it = snap.raw_iterator_cf_opt(meta, ro);
        it.seek(&start);
        let (ids, jobs) = (self.cf(st::CF_IDS)?, self.cf(st::CF_JOBS)?);
        let mut scanned = 0usize;
        let mut last: Option<Vec<u8>> = None;
        while let Some(k) = it.key() {
            if page.jobs.len() >= q.limit || scanned >= LIST_SCAN_BUDGET {
                page.next = last.as_deref().map(|k| keys::hex(&k[base.len()..]));
                break;
            }
            scanned += 1;
            let row = match TagKey::decode(k) {
                Ok(r) => r,
                Err(e) => {
                    page.corrupt.push(self.report_corrupt(k, None, &e));
                    last = Some(k.to_vec());
                    it.next();
                    continue;
                }
            };
            if let Some(want) = q.state {
                if row.state != want {
                    // Skip to this scope's rows of the wanted state, or
                    // the next scope's.
                    let mut next = base.clone();
                    next.extend_from_slice(row.scope.as_bytes());
                    if row.state < want {
                        next.push(want.byte());
                    } else {
                        match keys::prefix_end(&next) {
                            Some(n) => next = n,
                            None => break,
                        }
                    }
                    it.seek(next);
                    continue;
                }
            }
            last = Some(k.to_vec());
            let found = match snap.get_pinned_cf(ids, row.id.as_bytes())? {
                Some(v) => Some(JobKey::decode(&v)?),
                None => None,
            };
            let rec = match found {
                Some(jk) if jk.state == row.state && jk.scope == row.scope => snap
                    .get_pinned_cf(jobs, jk.encode())?
                    .map(|v| codec::decode(&v).map(|r| (jk, r))),
                _ => None,
            };
            match rec {
                Some(Ok((jk, rec))) => {
                    if wanted(q, &rec) {
                        match self.info(&jk, rec) {
                            Ok(info) => page.jobs.push(info),
                            Err(e) => page.corrupt.push(self.report_corrupt(k, Some(row.id), &e)),
                        }
                    }
                }
                Some(Err(e)) => page.corrupt.push(self.report_corrupt(k, Some(row.id), &e)),
                None => {
                    let e = Error::Corruption(format!(
                        "tag index row {tag:?} names {} job {}, which is not there",
                        row.state, row.id
                    ));
                    page.corrupt.push(self.report_corrupt(k, Some(row.id), &e));
                }
            }
            it.next();
        }
        it.status()?;
        Ok(page)
    }

    /// How many jobs carry `tag`, per state (in `scope`, or in every
    /// scope): a walk of the tag's index rows, O(jobs carrying the tag),
    /// nothing else read.
    pub fn count_tag(&self, tag: &str, scope: Option<Scope>) -> Result<StateCounts> {
        crate::tags::validate_tag(tag)?;
        let mut counts: PerState<i64> = PerState::default();
        let Ok(meta) = self.cf(st::CF_META) else {
            return Ok(StateCounts::default());
        };
        let mut prefix = keys::tag_prefix(tag);
        let at = prefix.len() + 16;
        if let Some(s) = scope {
            prefix.extend_from_slice(s.as_bytes());
        }
        let mut ro = ReadOptions::default();
        if let Some(end) = keys::prefix_end(&prefix) {
            ro.set_iterate_upper_bound(end);
        }
        let mut it = self.db().raw_iterator_cf_opt(meta, ro);
        it.seek(&prefix);
        while let Some(k) = it.key() {
            if let Some(s) = k.get(at).copied().and_then(State::from_byte) {
                counts[s] += 1;
            }
            it.next();
        }
        it.status()?;
        Ok(StateCounts::from_per_state(&counts))
    }

    /// The tag index row each job with tags should have (collected by the
    /// check's scan of the jobs).
    pub(super) fn expected_tag_rows(key: &JobKey, rec: &JobRecord, into: &mut HashSet<Vec<u8>>) {
        for t in &rec.ext.tags {
            into.insert(keys::tag_key(t, &key.scope, key.state, &key.id));
        }
    }

    /// `check`'s part: every `tag/` row is one `expected` holds, and every
    /// expected row is there.
    pub(super) fn check_tags(
        &self,
        snap: &rocksdb::Snapshot<'_>,
        mut expected: HashSet<Vec<u8>>,
        r: &mut CheckReport,
    ) -> Result<()> {
        let Ok(meta) = self.cf(st::CF_META) else {
            return Ok(());
        };
        let mut ro = ReadOptions::default();
        if let Some(end) = keys::prefix_end(keys::TAG_INDEX_PREFIX) {
            ro.set_iterate_upper_bound(end);
        }
        let mut it = snap.raw_iterator_cf_opt(meta, ro);
        it.seek(keys::TAG_INDEX_PREFIX);
        while let Some(k) = it.key() {
            if !expected.remove(k) {
                let what = match TagKey::decode(k) {
                    Ok(t) => format!(
                        "tag index row {:?} names {} job {} in scope {}, which has no such row and tag",
                        t.tag, t.state, t.id, t.scope
                    ),
                    Err(e) => e.to_string(),
                };
                r.problems.push(what);
            }
            it.next();
        }
        it.status()?;
        for k in &expected {
            if let Ok(t) = TagKey::decode(k) {
                r.problems.push(format!(
                    "{} job {} is missing from the tag index under {:?}",
                    t.state, t.id, t.tag
                ));
            }
        }
        Ok(())
    }
}
