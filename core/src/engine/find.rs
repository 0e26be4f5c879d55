//! `find` (issue 42): one text looked up as a job id (the `ids` family),
//! an idempotency key (`idem`, per scope) and a tag (the tag index's
//! first page). Each is a point read or one page: O(page), whatever the
//! store holds.

use crate::error::{Error, Result};
use crate::find::{validate_text, FindQuery, FindResult};
use crate::ids::{JobId, Scope};
use crate::job::{ListPage, ListQuery};
use crate::limits::MAX_LIST_LIMIT;
use crate::tags::MAX_TAG_LEN;

use super::Engine;

impl Engine {
    /// See [`crate::Queue::find`].
    pub fn find(&self, q: &FindQuery) -> Result<FindResult> {
        validate_text(&q.text)?;
        if q.limit == 0 || q.limit > MAX_LIST_LIMIT {
            return Err(Error::invalid(format!(
                "find limit must be 1 to {MAX_LIST_LIMIT}, got {}",
                q.limit
            )));
        }
        let in_scope = |s: &Scope| q.scope.is_none_or(|want| want == *s);
        let by_id = match q.text.parse::<JobId>() {
            Ok(id) => self.get(&id)?.filter(|j| in_scope(&j.scope)),
            Err(_) => None,
        };
        let key_scope = q.scope.unwrap_or(Scope::SYSTEM);
        let by_key = match self.idem_entry(&key_scope, &q.text)? {
            // The entry can outlive its job's record for a moment (a
            // prune between the two reads): then nothing matched.
            Some(id) => self.get(&id)?.filter(|j| j.scope == key_scope),
            None => None,
        };
        let by_tag = if q.text.len() <= MAX_TAG_LEN {
            let lq = ListQuery {
                scope: q.scope,
                tag: Some(q.text.clone()),
                limit: q.limit,
                ..ListQuery::default()
            };
            self.list_tagged(&lq, &q.text)?
        } else {
            ListPage {
                jobs: Vec::new(),
                next: None,
                corrupt: Vec::new(),
            }
        };
        Ok(FindResult {
            by_id,
            by_key,
            by_tag,
        })
    }
}
