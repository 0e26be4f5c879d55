//! Fan-in on the [`Queue`] (issue 43): `enqueue_group` and
//! `results_of_children`. `EnqueueOptions::after` rides `enqueue`.

use crate::error::Result;
use crate::fanin::ChildPage;
use crate::job::{Enqueued, JobId, NewJob};
use crate::queue::Queue;

impl Queue {
    /// Enqueue `children` and `parent` in one atomic batch: all or none.
    /// The parent waits (state `waiting`) until every child has finished,
    /// then becomes pending in the batch of the last child's settle; its
    /// `on_child_dead` policy says what a child that did not complete does
    /// to it. Answers the children in input order, then the parent.
    ///
    /// Errors: `InvalidArgument` for no child or over
    /// [`crate::limits::MAX_BATCH`], a parent with an idempotency key,
    /// `unique_for` or `debounce`, and whatever `enqueue_many` refuses;
    /// `NotFound` when an `after` of the parent names no job; `Storage`;
    /// `Closed`.
    pub fn enqueue_group(
        &self,
        mut children: Vec<NewJob>,
        mut parent: NewJob,
    ) -> Result<(Vec<Enqueued>, Enqueued)> {
        crate::trace_context::inject_current_all(&mut children);
        crate::trace_context::inject_current(&mut parent.options.metadata);
        self.writable()?.enqueue_group(children, parent)
    }

    /// A page of `parent`'s children (every job its `after` named, or its
    /// group's children), in enqueue order, with each one's state, result
    /// and last error: what a parent's handler reads. A child pruned,
    /// purged or deleted since has no state. `cursor` is a page's `next`.
    ///
    /// Errors: `InvalidArgument` for a limit of 0 or over
    /// [`crate::fanin::MAX_CHILDREN_PAGE`] or a malformed cursor;
    /// `NotFound` when `parent` does not exist; `Storage`; `Closed`.
    pub fn results_of_children(
        &self,
        parent: &JobId,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<ChildPage> {
        self.engine()?.results_of_children(parent, cursor, limit)
    }
}
