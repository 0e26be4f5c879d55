//! What `list` takes and returns.

use crate::ids::JobId;
use crate::job::{JobInfo, KindPattern, Scope, State};

/// A record that did not decode, as reported by `list` and `reap`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorruptRecord {
    /// The row key, hex.
    pub key: String,
    /// The job's id, when the key decoded far enough to tell.
    pub id: Option<JobId>,
    /// Why it did not decode.
    pub error: String,
}

/// A `list` query. `after` is the `next` cursor of the previous page.
#[derive(Debug, Clone, PartialEq)]
pub struct ListQuery {
    /// Only jobs in this state.
    pub state: Option<State>,
    /// Only jobs of this scope.
    pub scope: Option<Scope>,
    /// Only jobs whose kind matches. Filtered as rows are read, so a rare
    /// kind can give short pages (see [`ListPage::next`]).
    pub kind: Option<KindPattern>,
    /// Only jobs enqueued by the schedule of this name. Filtered as rows
    /// are read, like `kind`.
    pub schedule: Option<String>,
    /// Only follow-up jobs of this parent (see [`Completion::then`]).
    /// Filtered as rows are read, like `kind`.
    pub parent: Option<JobId>,
    /// Only jobs carrying this tag, read from the tag index: the page
    /// costs its rows (plus those the other filters skip), whatever the
    /// store holds. Its cursors are the tag index's, not the jobs
    /// family's: pass them back only with the same tag.
    pub tag: Option<String>,
    /// Only the unfinished jobs (pending, leased, failed, waiting) enqueued
    /// with this job key ([`crate::EnqueueOptions::key`]), read from the
    /// key index (`jkey/`), which holds unfinished jobs only: in scope,
    /// then enqueue order, O(page) at any store size (plus one seek per
    /// scope without `scope`). A finished state with it is
    /// `InvalidArgument`, and so is a `tag` beside it. Its cursors are the
    /// key index's: pass them back only with the same key.
    pub key: Option<String>,
    /// The most jobs per page: 1 to [`crate::limits::MAX_LIST_LIMIT`]
    /// (default 100).
    pub limit: usize,
    /// The previous page's `next`; `None` starts at the beginning.
    pub after: Option<String>,
}

impl Default for ListQuery {
    fn default() -> Self {
        ListQuery {
            state: None,
            scope: None,
            kind: None,
            schedule: None,
            parent: None,
            tag: None,
            key: None,
            limit: 100,
            after: None,
        }
    }
}

/// One page of `list`.
#[derive(Debug, Clone, PartialEq)]
pub struct ListPage {
    /// The matching jobs, in key order (scope, state, priority, time);
    /// with a tag, in tag-index order (scope, state, id: enqueue order).
    pub jobs: Vec<JobInfo>,
    /// Pass as `after` for the next page; `None` at the end. A page can hold
    /// fewer than `limit` jobs and still have a `next`: one call reads at
    /// most 100,000 rows.
    pub next: Option<String>,
    /// Rows on this page's range that did not decode (skipped).
    pub corrupt: Vec<CorruptRecord>,
}
