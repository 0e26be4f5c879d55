//! `WaitJob` (a unary long poll woken on the server by the job's own
//! transition) and `WatchEvents` (a server stream of the engine's
//! committed transitions, through the core's bounded subscription).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use telha_jobs::{Error, Subscription};
use telha_jobs_proto::convert as cv;
use telha_jobs_proto::events as ev;
use telha_jobs_proto::status::to_status;
use telha_jobs_proto::v1 as pb;
use tokio::sync::oneshot;
use tokio_stream::Stream;
use tonic::Status;

use crate::service::{bad, until_closing, JobsService};

/// The longest one `WaitJob` call waits (a client that wants longer calls
/// again).
pub(crate) const MAX_WAIT_JOB: Duration = Duration::from_secs(60);

/// Events sent in one `WatchEventsResponse` at most.
const EVENTS_PER_MESSAGE: usize = 512;

impl JobsService {
    pub(crate) async fn wait_job(
        &self,
        r: pb::WaitJobRequest,
    ) -> Result<pb::WaitJobResponse, Status> {
        if self.shared.is_closing() {
            return Err(to_status(&Error::Closed));
        }
        let id = cv::id_from_pb(&r.id).map_err(bad)?;
        let timeout = Duration::from_millis(r.timeout_ms).min(MAX_WAIT_JOB);
        let w = self
            .shared
            .queue()?
            .watch(&id)
            .map_err(|e| self.shared.status(&e))?;
        let mut closing = self.shared.closing.clone();
        tokio::select! {
            () = std::future::poll_fn(|cx| w.poll_done(cx)) => {}
            () = tokio::time::sleep(timeout) => {}
            () = until_closing(&mut closing) => {}
        }
        let job = self
            .shared
            .quick(move |q| q.get(&id))
            .await?
            .ok_or_else(|| to_status(&Error::NotFound(format!("no job {id}"))))?;
        Ok(pb::WaitJobResponse {
            done: job.state.is_terminal(),
            job: Some(cv::job_info_to_pb(job)),
        })
    }

    pub(crate) fn watch_events(&self, r: &pb::WatchEventsRequest) -> Result<EventStream, Status> {
        if self.shared.is_closing() {
            return Err(to_status(&Error::Closed));
        }
        let options = ev::subscribe_from_pb(r).map_err(bad)?;
        let sub = Arc::new(
            self.shared
                .queue()?
                .subscribe(options)
                .map_err(|e| self.shared.status(&e))?,
        );
        // End the stream when the server starts closing (or stop watching
        // once the stream is gone).
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let mut closing = self.shared.closing.clone();
        let weak = Arc::downgrade(&sub);
        tokio::spawn(async move {
            tokio::select! {
                () = until_closing(&mut closing) => {
                    if let Some(s) = weak.upgrade() {
                        s.close();
                    }
                }
                _ = stop_rx => {}
            }
        });
        Ok(EventStream {
            sub,
            _stop: stop_tx,
        })
    }
}

/// A `WatchEvents` response stream: the subscription's events, batched as
/// they are buffered; ends when the subscription does.
pub(crate) struct EventStream {
    sub: Arc<Subscription>,
    _stop: oneshot::Sender<()>,
}

impl Stream for EventStream {
    type Item = Result<pb::WatchEventsResponse, Status>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        match self.sub.poll_recv(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Err(Error::Closed)) => Poll::Ready(None),
            Poll::Ready(Err(e)) => Poll::Ready(Some(Err(to_status(&e)))),
            Poll::Ready(Ok(first)) => {
                let mut events = vec![ev::event_to_pb(&first)];
                if let Ok(more) = self.sub.drain(EVENTS_PER_MESSAGE - 1) {
                    events.extend(more.iter().map(ev::event_to_pb));
                }
                Poll::Ready(Some(Ok(pb::WatchEventsResponse { events })))
            }
        }
    }
}
