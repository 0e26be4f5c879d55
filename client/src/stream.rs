//! [`JobStream`]: the client side of `PollJobs`.

use std::time::Duration;

use telha_jobs::{Job, Result};
use telha_jobs_proto::convert as cv;
use telha_jobs_proto::v1 as pb;

use crate::deadline::from_status;
use crate::RemoteQueue;

/// Leases pushed by the server (see [`RemoteQueue::poll_jobs`]). Dropping
/// it ends the stream; the server then stops waiting for this worker and
/// gives back any job it leased but had not delivered.
pub struct JobStream {
    queue: RemoteQueue,
    inner: Option<tonic::Streaming<pb::PollJobsResponse>>,
}

impl std::fmt::Debug for JobStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobStream")
            .field("url", &self.queue.url())
            .field("ended", &self.inner.is_none())
            .finish()
    }
}

impl JobStream {
    pub(crate) fn new(queue: RemoteQueue, s: tonic::Streaming<pb::PollJobsResponse>) -> Self {
        JobStream {
            queue,
            inner: Some(s),
        }
    }

    /// The next batch of leases, waiting up to `timeout` (`None`: until one
    /// comes). `Ok(Some(empty))` when the timeout passed, `Ok(None)` once
    /// the server ended the stream (it is shutting down).
    ///
    /// Errors: as the server's lease (`Closed`, `Storage`), and
    /// `Unavailable` when the connection is lost or the server is closing.
    pub fn next_batch(&mut self, timeout: Option<Duration>) -> Result<Option<Vec<Job>>> {
        let Some(mut s) = self.inner.take() else {
            return Ok(None);
        };
        let url = self.queue.url().to_string();
        let (s, r) = self.queue.block(async move {
            let r = match timeout {
                Some(t) => tokio::time::timeout(t, s.message()).await.ok(),
                None => Some(s.message().await),
            };
            (s, r)
        })?;
        match r {
            None => {
                self.inner = Some(s);
                Ok(Some(Vec::new()))
            }
            Some(Ok(Some(m))) => {
                self.inner = Some(s);
                m.jobs
                    .into_iter()
                    .map(cv::job_from_pb)
                    .collect::<Result<_>>()
                    .map(Some)
            }
            Some(Ok(None)) => Ok(None),
            Some(Err(st)) => Err(from_status(&st, &url)),
        }
    }
}
