//! Lease: ready work inline, a waiting lease on the blocking pool, a
//! cancelled or abandoned wait giving back what it leased.

use std::time::Duration;

use telha_jobs::{CancelWait, Job, LeaseOptions, Queue, Result};
use telha_jobs_proto::convert as cv;
use telha_jobs_proto::v1 as pb;
use tonic::Status;

use crate::service::{
    bad, check_worker, closing_status, until_closing, JobsService, INLINE_MAX_ITEMS,
};

/// Cancels a wait when the handler's future is dropped (the client went
/// away or cancelled the call).
struct CancelOnDrop(CancelWait);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

/// Lease, and give back at once whatever was leased after the wait was
/// cancelled (its caller is gone or the server is closing).
pub(crate) fn lease_or_give_back(
    q: &Queue,
    worker: &str,
    max: usize,
    options: &LeaseOptions,
    cancel: &CancelWait,
) -> Result<Vec<Job>> {
    let jobs = q.lease_many(worker, max, options)?;
    if cancel.is_cancelled() && !jobs.is_empty() {
        for j in &jobs {
            let _ = q.release(&j.token());
        }
        return Ok(Vec::new());
    }
    Ok(jobs)
}

impl JobsService {
    pub(crate) async fn lease(&self, r: pb::LeaseRequest) -> Result<pb::LeaseResponse, Status> {
        if self.shared.is_closing() {
            return Err(closing_status());
        }
        check_worker(&r.worker_id)?;
        let (scopes, kinds) = cv::filter_from_pb(&r.scopes, &r.kinds).map_err(bad)?;
        // `max` is the core's to check (1 to limits::MAX_BATCH), with the
        // same message as an embedded queue.
        let cancel = CancelWait::new();
        let guard = CancelOnDrop(cancel.clone());
        let wait = Duration::from_millis(r.wait_ms).min(self.shared.max_wait);
        let options = LeaseOptions {
            scopes,
            kinds,
            wait: Some(wait),
            cancel: Some(cancel.clone()),
        };
        let (worker, max) = (r.worker_id, r.max as usize);
        // Work that is ready is leased inline (no hand-off); only a lease
        // that has to wait goes to the blocking pool.
        if max <= INLINE_MAX_ITEMS {
            let now = LeaseOptions {
                wait: None,
                cancel: None,
                ..options.clone()
            };
            let w = worker.clone();
            let jobs = self
                .shared
                .quick(move |q| q.lease_many(&w, max, &now))
                .await?;
            if !jobs.is_empty() || wait.is_zero() {
                drop(guard);
                return Ok(pb::LeaseResponse {
                    jobs: jobs.into_iter().map(cv::job_to_pb).collect(),
                });
            }
        }
        let q = self.shared.queue()?;
        let c2 = cancel.clone();
        let mut task = tokio::task::spawn_blocking(move || {
            lease_or_give_back(&q, &worker, max, &options, &c2)
        });
        let mut closing = self.shared.closing.clone();
        let jobs = tokio::select! {
            r = &mut task => r,
            _ = until_closing(&mut closing) => { cancel.cancel(); task.await }
        };
        drop(guard);
        let jobs = jobs
            .map_err(|e| Status::internal(format!("server task failed: {e}")))?
            .map_err(|e| self.shared.status(&e))?;
        Ok(pb::LeaseResponse {
            jobs: jobs.into_iter().map(cv::job_to_pb).collect(),
        })
    }
}
