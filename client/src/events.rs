//! Waits and event streams over gRPC: `WaitJob` long polls and the
//! `WatchEvents` stream, fed into the core's [`JobWatch`] and
//! [`Subscription`] so front ends handle a remote queue's exactly as an
//! embedded one's.

use std::time::{Duration, Instant};

use telha_jobs::watch::{EventSink, WatchSink};
use telha_jobs::{Error, JobId, JobInfo, JobWatch, Result, SubscribeOptions, Subscription};
use telha_jobs_proto::convert as cv;
use telha_jobs_proto::events as ev;
use telha_jobs_proto::v1 as pb;
use tokio::sync::oneshot;

use crate::deadline::{from_status, long_poll, within};
use crate::retry::Safe;
use crate::RemoteQueue;

/// The longest wait one `WaitJob` call asks for (the server caps it there).
const WAIT_CALL: Duration = Duration::from_secs(60);

/// How often a background feed looks whether its reader is gone.
const GONE_CHECK: Duration = Duration::from_secs(1);

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// One `WaitJob` long poll, repeated after a lost connection (for what is
/// left of its wait): the job and whether it is terminal.
async fn wait_call(q: &RemoteQueue, id: JobId, wait: Duration) -> Result<(JobInfo, bool)> {
    let start = Instant::now();
    let limit = long_poll(q.inner.request_timeout, wait);
    let r = q
        .retried(Safe::Always, limit, |mut c| {
            let req = pb::WaitJobRequest {
                id: id.as_bytes().to_vec(),
                timeout_ms: ms(wait.saturating_sub(start.elapsed())),
            };
            async move { c.wait_job(req).await }
        })
        .await
        .result?;
    let job = r
        .job
        .ok_or_else(|| Error::Storage("server answered a wait without the job".into()))?;
    Ok((cv::job_info_from_pb(job)?, r.done))
}

impl RemoteQueue {
    /// `JobStore::wait` over the network: `WaitJob` calls (60 s at most
    /// each) until the job is terminal or `timeout` has passed.
    pub(crate) fn wait_remote(&self, id: &JobId, timeout: Duration) -> Result<JobInfo> {
        let deadline = Instant::now().checked_add(timeout);
        loop {
            let left = deadline.map_or(WAIT_CALL, |d| d.saturating_duration_since(Instant::now()));
            let wait = left.min(WAIT_CALL);
            self.check_open()?;
            let (job, done) = self.block(wait_call(self, *id, wait))??;
            // Until the caller's own clock says the time is up: the
            // server's timer may end a call a fraction of a ms early.
            if done || deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(job);
            }
        }
    }

    /// `JobStore::watch` over the network: one `WaitJob` at once (so an
    /// unknown id is `NotFound` here), then long polls in the background
    /// until the job is terminal; dropping the watch stops them.
    pub(crate) fn watch_remote(&self, id: &JobId) -> Result<JobWatch> {
        let (w, sink) = JobWatch::channel(*id);
        self.check_open()?;
        let id = *id;
        let (job, done) = self.block(wait_call(self, id, Duration::ZERO))??;
        if done {
            sink.fire(Some(Ok(job)));
            return Ok(w);
        }
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        w.on_drop(Box::new(move || drop(stop_tx)));
        let feed = self.clone();
        self.spawn(async move { watch_feed(feed, id, sink, stop_rx).await })?;
        Ok(w)
    }

    /// `JobStore::subscribe` over the network: a `WatchEvents` stream fed
    /// into a local subscription of the same buffer size (the server's
    /// missed counts carried over, the local ones added).
    pub(crate) fn subscribe_remote(&self, options: SubscribeOptions) -> Result<Subscription> {
        let req = ev::subscribe_to_pb(&options);
        let (sub, sink) = Subscription::channel(options)?;
        let mut c = self.client()?;
        let url = self.url();
        let limit = self.inner.request_timeout;
        let streaming = self.block(async move {
            within(&url, limit, async {
                c.watch_events(req)
                    .await
                    .map(tonic::Response::into_inner)
                    .map_err(|s| from_status(&s, &url))
            })
            .await
        })??;
        let mut closed = self.closed_rx();
        let url = self.url();
        self.spawn(async move {
            tokio::select! {
                () = events_feed(streaming, &sink, &url) => {}
                _ = closed.wait_for(|c| *c) => sink.end(None),
            }
        })?;
        Ok(sub)
    }
}

async fn watch_feed(q: RemoteQueue, id: JobId, sink: WatchSink, mut stop: oneshot::Receiver<()>) {
    let mut closed = q.closed_rx();
    loop {
        if q.check_open().is_err() {
            return sink.fire(Some(Err(Error::Closed)));
        }
        tokio::select! {
            r = wait_call(&q, id, WAIT_CALL) => match r {
                Ok((_, false)) => continue,
                Ok((job, true)) => return sink.fire(Some(Ok(job))),
                Err(e) => return sink.fire(Some(Err(e))),
            },
            _ = &mut stop => return,
            _ = closed.wait_for(|c| *c) => return sink.fire(Some(Err(Error::Closed))),
        }
    }
}

async fn events_feed(
    mut s: tonic::Streaming<pb::WatchEventsResponse>,
    sink: &EventSink,
    url: &str,
) {
    loop {
        let m = tokio::select! {
            m = s.message() => m,
            () = tokio::time::sleep(GONE_CHECK) => {
                if sink.is_gone() {
                    return;
                }
                continue;
            }
        };
        match m {
            Ok(Some(m)) => {
                for e in m.events {
                    match ev::event_from_pb(e) {
                        Ok(e) => {
                            if !sink.push(e) {
                                return;
                            }
                        }
                        Err(e) => return sink.end(Some(format!("{url}: {e}"))),
                    }
                }
            }
            Ok(None) => return sink.end(None),
            // The subscription wraps the message in its own `Storage`.
            Err(st) => {
                return sink.end(Some(match from_status(&st, url) {
                    Error::Storage(m) => m,
                    e => e.to_string(),
                }))
            }
        }
    }
}
