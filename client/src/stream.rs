//! [`JobStream`]: the client side of `PollJobs`, and its graceful stop
//! (`StopPoll`, then read the stream to its end and give back what came).

use std::time::{Duration, Instant};

use telha_jobs::{Error, Job, JobStore, Result};
use telha_jobs_proto::convert as cv;
use telha_jobs_proto::v1 as pb;

use crate::retry::{classify, Failed, RetryReason};
use crate::{Client, RemoteQueue, REQUEST_TIMEOUT_DEFAULT};

/// The PollJobs response header naming the stream for `StopPoll`.
pub(crate) const STREAM_HEADER: &str = "telha-poll-stream";

/// A stream's id and the connection it is on (for `StopPoll`).
pub(crate) type StopHandle = (String, Client);

/// Leases pushed by the server (see [`RemoteQueue::poll_jobs`]).
///
/// [`JobStream::close`] (or [`JobStream::close_release`]) ends it
/// gracefully: the server stops leasing for it and ends the stream after
/// what it already sent, and the jobs that arrive meanwhile are handed
/// back, so no lease is left with nobody. Dropping a stream that was not
/// closed closes it the same way (releasing those jobs) when the drop runs
/// outside an async context; inside one it just ends the stream: the
/// server then gives back what it had not yet written to the connection,
/// and a lease written just before the drop stays leased until its TTL.
pub struct JobStream {
    queue: RemoteQueue,
    /// To open the stream again after a lost connection.
    req: pb::PollJobsRequest,
    inner: Option<tonic::Streaming<pb::PollJobsResponse>>,
    /// The stream's id and the connection it is on (for `StopPoll`);
    /// `None` from a server without `StopPoll`.
    stop: Option<StopHandle>,
}

impl std::fmt::Debug for JobStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobStream")
            .field("url", &self.queue.url())
            .field("ended", &self.inner.is_none())
            .field("stream_id", &self.stop.as_ref().map(|s| &s.0))
            .finish()
    }
}

impl JobStream {
    pub(crate) fn new(
        queue: RemoteQueue,
        req: pb::PollJobsRequest,
        s: tonic::Streaming<pb::PollJobsResponse>,
        stop: Option<StopHandle>,
    ) -> Self {
        JobStream {
            queue,
            req,
            inner: Some(s),
            stop,
        }
    }

    /// Open the stream again (on the next server of the list, or the same
    /// one back up), within the request timeout; the reason is counted.
    fn resume(&mut self, why: &Error) -> Result<()> {
        self.queue.inner.retries.count(RetryReason::Resume);
        tracing::debug!(url = %self.queue.url(), "telha client reopening PollJobs: {why}");
        let (s, stop) = self.queue.open_poll(&self.req)?;
        self.inner = Some(s);
        self.stop = stop;
        Ok(())
    }

    /// The next batch of leases, waiting up to `timeout` (`None`: until one
    /// comes). `Ok(Some(empty))` when the timeout passed, `Ok(None)` once
    /// the server ended the stream (it is shutting down) or the stream was
    /// closed.
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

    /// End the stream gracefully, within the request timeout: ask the
    /// server to stop leasing for it (`StopPoll`), read the stream to its
    /// end, and answer the leases that arrived meanwhile: the caller holds
    /// them and must run or release them ([`JobStream::close_release`]
    /// releases them). Nothing is left leased by nobody, unless the
    /// timeout passes first (then the stream is dropped, as by a server
    /// without `StopPoll`: what it wrote just before stays leased until
    /// its TTL). Closing a closed stream answers nothing; `next_batch`
    /// then answers `Ok(None)`.
    ///
    /// Errors: `Closed` when the client was closed (the stream is dropped).
    pub fn close(&mut self) -> Result<Vec<Job>> {
        let Some(mut s) = self.inner.take() else {
            return Ok(Vec::new());
        };
        let Some((id, mut c)) = self.stop.take() else {
            return Ok(Vec::new());
        };
        let limit = self
            .queue
            .inner
            .request_timeout
            .unwrap_or(REQUEST_TIMEOUT_DEFAULT);
        let mut got = Vec::new();
        self.queue.block(async {
            let _ = tokio::time::timeout(limit, async {
                let stopped = c.stop_poll(pb::StopPollRequest { stream_id: id }).await;
                if !stopped.is_ok_and(|r| r.into_inner().found) {
                    // Not stopped (an unknown stream: ended, or the server
                    // does not know StopPoll): take what already came.
                    while let Ok(Ok(Some(m))) =
                        tokio::time::timeout(Duration::ZERO, s.message()).await
                    {
                        got.extend(m.jobs);
                    }
                    return;
                }
                while let Ok(Some(m)) = s.message().await {
                    got.extend(m.jobs);
                }
            })
            .await;
        })?;
        Ok(got
            .into_iter()
            .filter_map(|j| cv::job_from_pb(j).ok())
            .collect())
    }

    /// [`JobStream::close`], releasing (no attempt spent) every lease that
    /// arrived meanwhile; answers how many were released.
    pub fn close_release(&mut self) -> Result<usize> {
        let jobs = self.close()?;
        let mut n = 0;
        for j in &jobs {
            // Best effort: one that cannot be released is reaped.
            if self.queue.release(&j.token()).is_ok() {
                n += 1;
            }
        }
        Ok(n)
    }
}

impl Drop for JobStream {
    fn drop(&mut self) {
        // Best effort, and only where blocking is allowed (not inside an
        // async context: there the stream is just dropped).
        if self.inner.is_some()
            && self.stop.is_some()
            && tokio::runtime::Handle::try_current().is_err()
        {
            let _ = self.close_release();
        }
    }
}

/// What the Rust `Worker` leases ahead through on a remote queue.
impl telha_jobs::worker::LeaseFeed for JobStream {
    fn next_batch(&mut self, timeout: Option<Duration>) -> Result<Option<Vec<Job>>> {
        JobStream::next_batch(self, timeout)
    }

    fn close(&mut self) -> Result<Vec<Job>> {
        JobStream::close(self)
    }
}
