//! The tag index (issue 42): `list` by tag, `count_tag`, its part of
//! `check`, and the open's upgrade of slice 1's layout.
//!
//! Rows live in the `meta` family under `tag/`: `len tag scope id`, empty
//! values, put by `Tx::stage` in the batch that creates a tagged job and
//! deleted in the one that removes it (prune, purge, delete); no move in
//! between touches them. Within one tag they sort by scope, then id (ids
//! are UUIDv7: enqueue order). The job's state is read from `ids` at the
//! same snapshot, so a row never says a state the job has left.

use std::collections::HashSet;

use rocksdb::{ReadOptions, WriteBatch};

use crate::error::{Error, Result};
use crate::ids::Scope;
use crate::job::{ListPage, ListQuery, StateCounts};
use crate::limits::LIST_SCAN_BUDGET;
use crate::state::PerState;
use crate::store::codec::{self, JobRecord};
use crate::store::keys::{self, JobKey, TagKey, TAG_ROW_TAIL};
use crate::store::{self as st};

use super::admin::{wanted, CheckReport};
use super::Engine;

/// The `meta` row that says the tag index has this build's layout
/// (`tag scope id`); without it, the open rebuilds the index.
pub(crate) const TAG_LAYOUT_KEY: &[u8] = b"tag-layout";
/// Its value: layout 2 (slice 1's rows held the state: layout 1).
const TAG_LAYOUT: &[u8] = b"2";
/// Rows per batch of the rebuild.
const REBUILD_BATCH: usize = 10_000;

/// A tag list's cursor as the 32 bytes after the tag's prefix: its own
/// (`next`), or a job's `JobInfo::cursor` (a jobs key, which holds the
/// scope and id), so "after this job" works in a tag list too.
pub(super) fn tag_cursor(c: &str) -> Result<Vec<u8>> {
    let bad = || Error::invalid(format!("malformed tag list cursor {c:?}"));
    let b = keys::unhex(c).ok_or_else(bad)?;
    match b.len() {
        TAG_ROW_TAIL => Ok(b),
        keys::JOB_KEY_LEN => {
            let k = JobKey::decode(&b).map_err(|_| bad())?;
            let mut t = Vec::with_capacity(TAG_ROW_TAIL);
            t.extend_from_slice(k.scope.as_bytes());
            t.extend_from_slice(k.id.as_bytes());
            Ok(t)
        }
        _ => Err(bad()),
    }
}

/// One row of a tag walk: the row's key, and the job's row it names at
/// the walk's snapshot (`Err`: the row is malformed, or names no job).
pub(super) type TagHit = (
    Vec<u8>,
    std::result::Result<JobKey, (Option<crate::job::JobId>, Error)>,
);

impl Engine {
    /// Walk `tag`'s rows (in `scope`, when given) strictly after `after`
    /// (a cursor's 32 bytes) at `snap`, calling `each` with every row and
    /// the job's key it names, until `each` answers false (it did not take
    /// that row: the walk resumes there) or `budget` rows were taken.
    /// Answers the last row taken (the resume point, 32 bytes) and whether
    /// the walk stopped before the end.
    pub(super) fn walk_tag(
        &self,
        snap: &rocksdb::Snapshot<'_>,
        tag: &str,
        scope: Option<Scope>,
        after: Option<&[u8]>,
        budget: usize,
        mut each: impl FnMut(TagHit) -> Result<bool>,
    ) -> Result<(Option<Vec<u8>>, bool)> {
        let base = keys::tag_prefix(tag);
        let mut prefix = base.clone();
        if let Some(s) = scope {
            prefix.extend_from_slice(s.as_bytes());
        }
        let start = match after {
            Some(c) => {
                let mut k = base.clone();
                k.extend_from_slice(c);
                k.push(0); // strictly after the cursor
                k.max(prefix.clone())
            }
            None => prefix.clone(),
        };
        let Ok(meta) = self.cf(st::CF_META) else {
            return Ok((None, false)); // a format-1 store opened read-only: no tags
        };
        let ids = self.cf(st::CF_IDS)?;
        let mut ro = ReadOptions::default();
        if let Some(end) = keys::prefix_end(&prefix) {
            ro.set_iterate_upper_bound(end);
        }
        let mut it = snap.raw_iterator_cf_opt(meta, ro);
        it.seek(&start);
        let mut last = None;
        let mut read = 0usize;
        while let Some(k) = it.key() {
            if read >= budget {
                return Ok((last, true));
            }
            read += 1;
            let hit = match TagKey::decode(k) {
                Err(e) => Err((None, e)),
                Ok(row) => match snap.get_pinned_cf(ids, row.id.as_bytes())? {
                    Some(v) => match JobKey::decode(&v) {
                        Ok(jk) if jk.scope == row.scope => Ok(jk),
                        Ok(jk) => Err((
                            Some(row.id),
                            Error::Corruption(format!(
                                "tag index row {tag:?} names job {} in scope {}, which is in scope {}",
                                row.id, row.scope, jk.scope
                            )),
                        )),
                        Err(e) => Err((Some(row.id), e)),
                    },
                    None => Err((
                        Some(row.id),
                        Error::Corruption(format!(
                            "tag index row {tag:?} names job {}, which is not there",
                            row.id
                        )),
                    )),
                },
            };
            if !each((k.to_vec(), hit))? {
                return Ok((last, true));
            }
            last = Some(k[base.len()..].to_vec());
            it.next();
        }
        it.status()?;
        Ok((last, false))
    }

    /// `list` with a tag: walk the tag's index rows (in the scope asked),
    /// read each job's key from `ids` and its row, at one snapshot. A
    /// state filter skips the tag's jobs in other states: O(page + jobs of
    /// the tag the filters skip), never a walk of other jobs.
    pub(super) fn list_tagged(&self, q: &ListQuery, tag: &str) -> Result<ListPage> {
        crate::tags::validate_tag(tag)?;
        let after = q.after.as_deref().map(tag_cursor).transpose()?;
        let mut page = ListPage {
            jobs: Vec::new(),
            next: None,
            corrupt: Vec::new(),
        };
        let snap = self.db().snapshot();
        let jobs = self.cf(st::CF_JOBS)?;
        let limit = q.limit;
        let (last, stopped) = self.walk_tag(
            &snap,
            tag,
            q.scope,
            after.as_deref(),
            LIST_SCAN_BUDGET,
            |(k, hit)| {
                if page.jobs.len() >= limit {
                    return Ok(false);
                }
                let jk = match hit {
                    Ok(jk) => jk,
                    Err((id, e)) => {
                        page.corrupt.push(self.report_corrupt(&k, id, &e));
                        return Ok(true);
                    }
                };
                if q.state.is_some_and(|s| s != jk.state) {
                    return Ok(true);
                }
                match snap
                    .get_pinned_cf(jobs, jk.encode())?
                    .map(|v| codec::decode(&v))
                {
                    Some(Ok(rec)) if !rec.ext.tags.iter().any(|t| t == tag) => {
                        let e = Error::Corruption(format!(
                            "tag index row {tag:?} names job {}, which does not carry that tag",
                            jk.id
                        ));
                        page.corrupt.push(self.report_corrupt(&k, Some(jk.id), &e));
                    }
                    Some(Ok(rec)) => {
                        if wanted(q, &rec) {
                            match self.info(&jk, rec) {
                                Ok(info) => page.jobs.push(info),
                                Err(e) => {
                                    page.corrupt.push(self.report_corrupt(&k, Some(jk.id), &e))
                                }
                            }
                        }
                    }
                    Some(Err(e)) => page.corrupt.push(self.report_corrupt(&k, Some(jk.id), &e)),
                    None => {
                        let e = Error::Corruption(format!(
                            "tag index row {tag:?}: job {} has no row at its ids entry",
                            jk.id
                        ));
                        page.corrupt.push(self.report_corrupt(&k, Some(jk.id), &e));
                    }
                }
                Ok(true)
            },
        )?;
        if stopped {
            page.next = last.as_deref().map(keys::hex);
        }
        Ok(page)
    }

    /// How many jobs carry `tag`, per state (in `scope`, or in every
    /// scope): a walk of the tag's index rows with each job's `ids` entry
    /// read at one snapshot, O(jobs carrying the tag), nothing else read.
    pub fn count_tag(&self, tag: &str, scope: Option<Scope>) -> Result<StateCounts> {
        crate::tags::validate_tag(tag)?;
        let mut counts: PerState<i64> = PerState::default();
        let snap = self.db().snapshot();
        self.walk_tag(&snap, tag, scope, None, usize::MAX, |(_, hit)| {
            if let Ok(jk) = hit {
                counts[jk.state] += 1;
            }
            Ok(true)
        })?;
        Ok(StateCounts::from_per_state(&counts))
    }

    /// The tag index rows each job with tags should have (collected by
    /// the check's scan of the jobs).
    pub(super) fn expected_tag_rows(key: &JobKey, rec: &JobRecord, into: &mut HashSet<Vec<u8>>) {
        for t in &rec.ext.tags {
            into.insert(keys::tag_key(t, &key.scope, &key.id));
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
                        "tag index row {:?} names job {} in scope {}, which has no such row and tag",
                        t.tag, t.id, t.scope
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
                    "job {} is missing from the tag index under {:?}",
                    t.id, t.tag
                ));
            }
        }
        Ok(())
    }

    /// At open: when the `meta` row [`TAG_LAYOUT_KEY`] does not say this
    /// build's layout, rebuild the tag index from the jobs' records (rows
    /// of slice 1's layout, which held the state, are deleted). A store
    /// without any tag row only gets the marker: O(1). A read-only open
    /// changes nothing. The marker is written last, so a crash part-way
    /// rebuilds again at the next open.
    pub(super) fn upgrade_tag_index(&self) -> Result<()> {
        if self.read_only {
            return Ok(());
        }
        let Ok(meta) = self.cf(st::CF_META) else {
            return Ok(());
        };
        if self
            .db()
            .get_pinned_cf(meta, TAG_LAYOUT_KEY)?
            .is_some_and(|v| v.as_ref() == TAG_LAYOUT)
        {
            return Ok(());
        }
        let mut batch = WriteBatch::default();
        let mut rows = 0usize;
        let mut ro = ReadOptions::default();
        if let Some(end) = keys::prefix_end(keys::TAG_INDEX_PREFIX) {
            ro.set_iterate_upper_bound(end);
        }
        let mut it = self.db().raw_iterator_cf_opt(meta, ro);
        it.seek(keys::TAG_INDEX_PREFIX);
        while let Some(k) = it.key() {
            batch.delete_cf(meta, k);
            rows += 1;
            if batch.len() >= REBUILD_BATCH {
                self.write(std::mem::take(&mut batch))?;
            }
            it.next();
        }
        it.status()?;
        drop(it);
        if rows > 0 {
            let mut it = self.db().raw_iterator_cf(self.cf(st::CF_JOBS)?);
            it.seek_to_first();
            while let (Some(k), Some(v)) = (it.key(), it.value()) {
                if let (Ok(jk), Ok(rec)) = (JobKey::decode(k), codec::decode(v)) {
                    for t in &rec.ext.tags {
                        batch.put_cf(meta, keys::tag_key(t, &jk.scope, &jk.id), []);
                    }
                }
                if batch.len() >= REBUILD_BATCH {
                    self.write(std::mem::take(&mut batch))?;
                }
                it.next();
            }
            it.status()?;
        }
        batch.put_cf(meta, TAG_LAYOUT_KEY, TAG_LAYOUT);
        self.write(batch)
    }
}
