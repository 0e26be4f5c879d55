//! `find` through the server (issue 42): the `Find` RPC, for
//! `RemoteQueue`'s `JobStore` method.

use telha_jobs::{FindQuery, FindResult, Result};
use telha_jobs_proto::find as cv;

use crate::retry::Safe;
use crate::RemoteQueue;

impl RemoteQueue {
    /// `Find` (a read: sent again whenever the outcome is unknown).
    pub(crate) fn find_rpc(&self, query: &FindQuery) -> Result<FindResult> {
        let req = cv::find_to_pb(query);
        let r = self.call(Safe::Always, |mut c| {
            let r = req.clone();
            async move { c.find(r).await }
        })?;
        cv::found_from_pb(r)
    }
}
