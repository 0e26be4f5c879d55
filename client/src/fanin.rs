//! Fan-in through the server (issue 43): `EnqueueGroup` and
//! `ResultsOfChildren`, for `RemoteQueue`'s `JobStore` methods.

use telha_jobs::{ChildPage, Enqueued, JobId, NewJob, Result};
use telha_jobs_proto::fanin as cv;

use crate::retry::Safe;
use crate::RemoteQueue;

impl RemoteQueue {
    /// `EnqueueGroup`: sent again only when it never reached a server (a
    /// repeat would enqueue a second group).
    pub(crate) fn group_rpc(
        &self,
        mut children: Vec<NewJob>,
        mut parent: NewJob,
    ) -> Result<(Vec<Enqueued>, Enqueued)> {
        telha_jobs::trace_context::inject_current_all(&mut children);
        telha_jobs::trace_context::inject_current(&mut parent.options.metadata);
        let req = cv::group_to_pb(children, parent);
        let r = self.call(Safe::IfNotSent, |mut c| {
            let r = req.clone();
            async move { c.enqueue_group(r).await }
        })?;
        cv::group_answer_from_pb(r)
    }

    /// `ResultsOfChildren` (a read: sent again whenever the outcome is
    /// unknown).
    pub(crate) fn children_rpc(
        &self,
        parent: &JobId,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<ChildPage> {
        let req = cv::children_request_to_pb(parent, cursor, limit);
        let r = self.call(Safe::Always, |mut c| {
            let r = req.clone();
            async move { c.results_of_children(r).await }
        })?;
        cv::children_from_pb(r)
    }
}
