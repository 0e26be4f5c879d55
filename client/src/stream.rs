//! [`JobStream`]: the client side of `PollJobs`.

use std::time::{Duration, Instant};

use telha_jobs::{Error, Job, Result};
use telha_jobs_proto::convert as cv;
use telha_jobs_proto::v1 as pb;

use crate::retry::{classify, Failed, RetryReason};
use crate::RemoteQueue;

/// Leases pushed by the server (see [`RemoteQueue::poll_jobs`]). Dropping
/// it ends the stream; the server then stops waiting for this worker and
/// gives back any job it leased but had not delivered.
pub struct JobStream {
    queue: RemoteQueue,
    /// To open the stream again after a lost connection.
    req: pb::PollJobsRequest,
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
    pub(crate) fn new(
        queue: RemoteQueue,
        req: pb::PollJobsRequest,
        s: tonic::Streaming<pb::PollJobsResponse>,
    ) -> Self {
        JobStream {
            queue,
            req,
            inner: Some(s),
        }
    }

    /// Open the stream again (on the next server of the list, or the same
    /// one back up), within the request timeout; the reason is counted.
    fn resume(&mut self, why: &Error) -> Result<()> {
        self.queue.inner.retries.count(RetryReason::Resume);
        tracing::debug!(url = %self.queue.url(), "telha client reopening PollJobs: {why}");
        self.inner = Some(self.queue.open_poll(&self.req)?);
        Ok(())
    }

    /// The next batch of leases, waiting up to `timeout` (`None`: until one
    /// comes). `Ok(Some(empty))` when the timeout passed, `Ok(None)` once
    /// the server ended the stream (it is shutting down).
    ///
    /// A lost connection (or, with a list of servers, a server that ended
    /// the stream) is not an error: the stream is opened again, on the next
    /// server of the list or the same one once it is back, and the wait
    /// goes on. Leases the lost stream had delivered stay
    /// valid; any it had not delivered expire on the server.
    ///
    /// Errors: as the server's lease (`Closed`, `Storage`), and
    /// `Unavailable` when the stream cannot be opened again within the
    /// request timeout.
    pub fn next_batch(&mut self, timeout: Option<Duration>) -> Result<Option<Vec<Job>>> {
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
        loop {
            let Some(mut s) = self.inner.take() else {
                return Ok(None);
            };
            let url = self.queue.url();
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            let (s, r) = self.queue.block(async move {
                let r = match left {
                    Some(t) => tokio::time::timeout(t, s.message()).await.ok(),
                    None => Some(s.message().await),
                };
                (s, r)
            })?;
            let lost = match r {
                None => {
                    self.inner = Some(s);
                    return Ok(Some(Vec::new()));
                }
                Some(Ok(Some(m))) => {
                    self.inner = Some(s);
                    return m
                        .jobs
                        .into_iter()
                        .map(cv::job_from_pb)
                        .collect::<Result<_>>()
                        .map(Some);
                }
                Some(Ok(None)) if self.queue.urls().len() > 1 => Error::Closed,
                Some(Ok(None)) => return Ok(None),
                Some(Err(st)) => match classify(&st, &url) {
                    Failed::Answer(e) => return Err(e),
                    Failed::Unavailable { err, hint } => {
                        if let Some(h) = hint {
                            self.queue.inner.endpoints.follow(&h);
                        }
                        err
                    }
                    Failed::Transport { err, .. } => {
                        let (i, _, _) = self.queue.inner.endpoints.current();
                        self.queue.inner.endpoints.rotate(i);
                        err
                    }
                },
            };
            self.resume(&lost)?;
        }
    }
}

/// What the Rust `Worker` leases ahead through on a remote queue.
impl telha_jobs::worker::LeaseFeed for JobStream {
    fn next_batch(&mut self, timeout: Option<Duration>) -> Result<Option<Vec<Job>>> {
        JobStream::next_batch(self, timeout)
    }
}
