//! `results_of_children`: a parent's children, paged, with their states
//! and results (what a parent's handler reads).

use crate::error::{Error, Result};
use crate::fanin::{ChildPage, ChildResult, MAX_CHILDREN_PAGE};
use crate::job::JobId;
use crate::store::keys::{self, JobKey};
use crate::store::{self as st};

use super::Engine;

impl Engine {
    /// A page of `parent`'s children with their states and results, in
    /// child id order from after `cursor`.
    pub fn results_of_children(
        &self,
        parent: &JobId,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<ChildPage> {
        if limit == 0 || limit > MAX_CHILDREN_PAGE {
            return Err(Error::invalid(format!(
                "children page limit must be 1 to {MAX_CHILDREN_PAGE}, got {limit}"
            )));
        }
        let after = cursor.map(crate::fanin::parse_cursor).transpose()?;
        if self.key_of(parent)?.is_none() {
            return Err(Error::NotFound(format!("job {parent} does not exist")));
        }
        let prefix = keys::fan_parent_prefix(parent);
        let snap = self.db().snapshot();
        let mut it = snap.raw_iterator_cf(self.cf(st::CF_META)?);
        match after {
            Some(c) => {
                let k = keys::fan_parent_key(parent, &c);
                it.seek(k);
                if it.key() == Some(&k[..]) {
                    it.next();
                }
            }
            None => it.seek(prefix),
        }
        let mut page = ChildPage::default();
        while let Some(k) = it.key() {
            if !k.starts_with(&prefix) {
                break;
            }
            if page.children.len() == limit {
                page.next = page.children.last().map(|c| keys::hex(c.id.as_bytes()));
                break;
            }
            let Some((_, c)) = keys::decode_fan_key(k) else {
                return Err(Error::Corruption(format!(
                    "fan-in row of job {parent} is {} bytes",
                    k.len()
                )));
            };
            page.children.push(self.child_result(&snap, &c)?);
            it.next();
        }
        it.status()?;
        Ok(page)
    }

    fn child_result(&self, snap: &rocksdb::Snapshot<'_>, c: &JobId) -> Result<ChildResult> {
        let gone = ChildResult::new(*c, None, None, Default::default(), None);
        let Some(k) = snap.get_pinned_cf(self.cf(st::CF_IDS)?, c.as_bytes())? else {
            return Ok(gone);
        };
        let key = JobKey::decode(&k)?;
        let Some(v) = snap.get_pinned_cf(self.cf(st::CF_JOBS)?, key.encode())? else {
            return Ok(gone);
        };
        let rec = crate::store::codec::decode(&v)?;
        Ok(ChildResult::new(
            *c,
            Some(key.state),
            rec.result,
            rec.ext.result_encoding,
            rec.last_error,
        ))
    }
}
