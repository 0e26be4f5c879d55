//! Operator actions through the server, for `RemoteQueue`'s `JobStore`
//! methods: cancel (one job or a filter), delete, retry, promote,
//! reschedule, set_priority, pause / resume / paused, and flow-control
//! limits. Each is one RPC; a repeat after a lost reply is safe (the ones
//! that can find their own effect on a repeat say how they answer).

use telha_jobs::{
    CancelFilter, CancelOutcome, CancelReport, ErrorKind, JobId, JobStore, Limit, LimitStatus,
    LimitTarget, PauseTarget, Paused, Result, State,
};
use telha_jobs_proto::convert as cv;
use telha_jobs_proto::v1 as pb;

use crate::retry::Safe;
use crate::RemoteQueue;

impl RemoteQueue {
    pub(crate) fn cancel_rpc(&self, id: &JobId, reason: &str) -> Result<CancelOutcome> {
        let req = pb::CancelRequest {
            id: id.as_bytes().to_vec(),
            reason: reason.to_string(),
        };
        let o = self.call_repeat(Safe::Always, self.inner.request_timeout, |mut c| {
            let r = req.clone();
            async move { c.cancel(r).await }
        });
        match o.result {
            Ok(r) => cv::cancel_outcome_from_pb(r.outcome),
            // The repeat of a cancel that took effect finds the job cancelled.
            Err(e) if o.repeated && e.kind() == ErrorKind::WrongState => match self.get(id)? {
                Some(j) if j.state == State::Cancelled => Ok(CancelOutcome::Cancelled),
                _ => Err(e),
            },
            Err(e) => Err(e),
        }
    }

    pub(crate) fn cancel_many_rpc(&self, filter: &CancelFilter) -> Result<CancelReport> {
        let req = cv::cancel_filter_to_pb(filter);
        let r = self.call(Safe::Always, |mut c| {
            let r = req.clone();
            async move { c.cancel_many(r).await }
        })?;
        Ok(CancelReport {
            cancelled: r.cancelled,
            requested: r.requested,
            corrupt: r.corrupt,
        })
    }

    pub(crate) fn delete_rpc(&self, id: &JobId) -> Result<()> {
        let req = pb::DeleteRequest {
            id: id.as_bytes().to_vec(),
        };
        let o = self.call_repeat(Safe::Always, self.inner.request_timeout, |mut c| {
            let r = req.clone();
            async move { c.delete(r).await }
        });
        match o.result {
            // The repeat of a delete that took effect finds no job.
            Err(e) if o.repeated && e.kind() == ErrorKind::NotFound => Ok(()),
            r => r.map(drop),
        }
    }

    pub(crate) fn promote_rpc(&self, id: &JobId) -> Result<()> {
        let req = pb::PromoteRequest {
            id: id.as_bytes().to_vec(),
        };
        // A repeat of a promote that took effect finds the job due: Ok.
        self.call(Safe::Always, |mut c| {
            let r = req.clone();
            async move { c.promote(r).await }
        })
        .map(drop)
    }

    pub(crate) fn reschedule_rpc(&self, id: &JobId, run_at: u64) -> Result<()> {
        let req = pb::RescheduleRequest {
            id: id.as_bytes().to_vec(),
            run_at_ms: run_at,
        };
        self.call(Safe::Always, |mut c| {
            let r = req.clone();
            async move { c.reschedule(r).await }
        })
        .map(drop)
    }

    pub(crate) fn set_priority_rpc(&self, id: &JobId, priority: u8) -> Result<()> {
        let req = pb::SetPriorityRequest {
            id: id.as_bytes().to_vec(),
            priority: u32::from(priority),
        };
        self.call(Safe::Always, |mut c| {
            let r = req.clone();
            async move { c.set_priority(r).await }
        })
        .map(drop)
    }

    pub(crate) fn pause_rpc(&self, target: &PauseTarget) -> Result<bool> {
        let req = cv::pause_to_pb(target);
        Ok(self
            .call(Safe::Always, |mut c| {
                let r = req.clone();
                async move { c.pause(r).await }
            })?
            .changed)
    }

    pub(crate) fn resume_rpc(&self, target: &PauseTarget) -> Result<bool> {
        let req = cv::pause_to_pb(target);
        Ok(self
            .call(Safe::Always, |mut c| {
                let r = req.clone();
                async move { c.resume(r).await }
            })?
            .changed)
    }

    pub(crate) fn paused_rpc(&self) -> Result<Paused> {
        let r = self.call(Safe::Always, |mut c| async move {
            c.paused(pb::PausedRequest {}).await
        })?;
        cv::paused_from_pb(&r.kinds, &r.scopes)
    }

    pub(crate) fn set_limit_rpc(&self, target: &LimitTarget, limit: Limit) -> Result<()> {
        let req = telha_jobs_proto::flow::set_limit_to_pb(target, &limit);
        self.call(Safe::Always, |mut c| {
            let r = req.clone();
            async move { c.set_limit(r).await }
        })?;
        Ok(())
    }

    pub(crate) fn remove_limit_rpc(&self, target: &LimitTarget) -> Result<bool> {
        let req = pb::RemoveLimitRequest {
            target: target.label(),
        };
        Ok(self
            .call(Safe::Always, |mut c| {
                let r = req.clone();
                async move { c.remove_limit(r).await }
            })?
            .removed)
    }

    pub(crate) fn limits_rpc(&self) -> Result<Vec<LimitStatus>> {
        let r = self.call(Safe::Always, |mut c| async move {
            c.limits(pb::LimitsRequest {}).await
        })?;
        r.limits
            .into_iter()
            .map(telha_jobs_proto::flow::limit_status_from_pb)
            .collect()
    }

    pub(crate) fn retry_rpc(&self, id: &JobId) -> Result<()> {
        let req = pb::RetryRequest {
            id: id.as_bytes().to_vec(),
        };
        let o = self.call_repeat(Safe::Always, self.inner.request_timeout, |mut c| {
            let r = req.clone();
            async move { c.retry(r).await }
        });
        match o.result {
            // The repeat of a retry that took effect finds the job pending
            // again (or already leased or done by then).
            Err(e) if o.repeated && e.kind() == ErrorKind::WrongState => match self.get(id)? {
                Some(j) if matches!(j.state, State::Pending | State::Leased | State::Completed) => {
                    Ok(())
                }
                _ => Err(e),
            },
            r => r.map(drop),
        }
    }
}
