//! Schedules over gRPC: the bodies of [`JobStore`]'s `schedule_*` methods
//! (one RPC each) and [`RemoteQueue::schedule_next_times`], which needs no
//! store.
//!
//! [`JobStore`]: telha_jobs::JobStore

use telha_jobs::{Result, RunReport, Schedule, ScheduleInfo};
use telha_jobs_proto::schedules as sc;
use telha_jobs_proto::v1 as pb;

use crate::retry::Safe;
use crate::RemoteQueue;

impl RemoteQueue {
    /// The next `n` (at most [`telha_jobs::schedule::MAX_NEXT_TIMES`])
    /// times `spec` fires after `after_ms` (`None`: the server's clock),
    /// computed by the server: the same answer as
    /// [`telha_jobs::schedule::next_times`]. Fewer than `n` when the spec
    /// stops firing.
    ///
    /// Errors: `InvalidArgument` for a spec, zone or anchor the core
    /// refuses, or `n` over the limit; `Closed`; `Storage`.
    pub fn schedule_next_times(
        &self,
        spec: &str,
        timezone: Option<&str>,
        anchor: Option<u64>,
        after_ms: Option<u64>,
        n: usize,
    ) -> Result<Vec<u64>> {
        let req = pb::ScheduleNextTimesRequest {
            spec: spec.to_string(),
            timezone: timezone.map(str::to_string),
            anchor_ms: anchor,
            after_ms,
            n: u32::try_from(n).unwrap_or(u32::MAX),
        };
        let r = self.call(Safe::Always, |mut c| {
            let r = req.clone();
            async move { c.schedule_next_times(r).await }
        })?;
        Ok(r.times_ms)
    }

    pub(crate) fn schedule_put_remote(&self, s: &Schedule) -> Result<ScheduleInfo> {
        let req = pb::SchedulePutRequest {
            schedule: Some(sc::schedule_to_pb(s)),
        };
        let r = self.call(Safe::Always, |mut c| {
            let r = req.clone();
            async move { c.schedule_put(r).await }
        })?;
        sc::schedule_response_from_pb(r)
    }

    pub(crate) fn schedule_get_remote(&self, name: &str) -> Result<ScheduleInfo> {
        let req = pb::ScheduleGetRequest { name: name.into() };
        let r = self.call(Safe::Always, |mut c| {
            let r = req.clone();
            async move { c.schedule_get(r).await }
        })?;
        sc::schedule_response_from_pb(r)
    }

    pub(crate) fn schedule_list_remote(&self) -> Result<Vec<ScheduleInfo>> {
        let r = self.call(Safe::Always, |mut c| async move {
            c.schedule_list(pb::ScheduleListRequest {}).await
        })?;
        r.schedules
            .into_iter()
            .map(sc::schedule_info_from_pb)
            .collect()
    }

    pub(crate) fn schedule_delete_remote(&self, name: &str) -> Result<()> {
        let req = pb::ScheduleDeleteRequest { name: name.into() };
        let o = self.call_repeat(Safe::Always, self.inner.request_timeout, |mut c| {
            let r = req.clone();
            async move { c.schedule_delete(r).await }
        });
        match o.result {
            // The repeat of a delete that took effect finds no schedule.
            Err(e) if o.repeated && e.kind() == telha_jobs::ErrorKind::NotFound => Ok(()),
            r => r.map(drop),
        }
    }

    pub(crate) fn schedule_pause_remote(&self, name: &str, on: bool) -> Result<ScheduleInfo> {
        let req = pb::SchedulePauseRequest { name: name.into() };
        let r = self.call(Safe::Always, |mut c| {
            let r = req.clone();
            async move {
                if on {
                    c.schedule_pause(r).await
                } else {
                    c.schedule_resume(r).await
                }
            }
        })?;
        sc::schedule_response_from_pb(r)
    }

    pub(crate) fn run_schedules_remote(&self) -> Result<RunReport> {
        let r = self.call(Safe::Always, |mut c| async move {
            c.run_schedules(pb::RunSchedulesRequest {}).await
        })?;
        Ok(sc::run_report_from_pb(r.report))
    }
}
