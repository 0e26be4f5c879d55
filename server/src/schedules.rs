//! The schedule RPCs: each decodes its request (what the wire cannot say:
//! a catch-up number, a scope's 16 bytes, a priority ≤ 255), makes one core
//! call and maps the answer. The schedule itself is the core's to check,
//! so a bad spec or zone is answered with the embedded queue's message.

use telha_jobs::schedule::next_times;
use telha_jobs_proto::schedules as sc;
use telha_jobs_proto::v1 as pb;
use tonic::Status;

use crate::service::{bad, invalid, now_ms, JobsService};

fn answer(i: &telha_jobs::ScheduleInfo) -> pb::ScheduleResponse {
    pb::ScheduleResponse {
        schedule: Some(sc::schedule_info_to_pb(i)),
    }
}

impl JobsService {
    pub(crate) async fn schedule_put_rpc(
        &self,
        r: pb::SchedulePutRequest,
    ) -> Result<pb::ScheduleResponse, Status> {
        let s = r
            .schedule
            .ok_or_else(|| invalid("schedule_put needs a schedule"))?;
        let s = sc::schedule_from_pb(s).map_err(bad)?;
        let i = self.shared.quick(move |q| q.schedule_put(&s)).await?;
        Ok(answer(&i))
    }

    pub(crate) async fn schedule_get_rpc(
        &self,
        r: pb::ScheduleGetRequest,
    ) -> Result<pb::ScheduleResponse, Status> {
        let i = self.shared.quick(move |q| q.schedule_get(&r.name)).await?;
        Ok(answer(&i))
    }

    pub(crate) async fn schedule_list_rpc(&self) -> Result<pb::ScheduleListResponse, Status> {
        let all = self.shared.run(|q| q.schedule_list()).await?;
        Ok(pb::ScheduleListResponse {
            schedules: all.iter().map(sc::schedule_info_to_pb).collect(),
        })
    }

    pub(crate) async fn schedule_delete_rpc(
        &self,
        r: pb::ScheduleDeleteRequest,
    ) -> Result<pb::ScheduleDeleteResponse, Status> {
        self.shared
            .quick(move |q| q.schedule_delete(&r.name))
            .await?;
        Ok(pb::ScheduleDeleteResponse {})
    }

    pub(crate) async fn schedule_pause_rpc(
        &self,
        r: pb::SchedulePauseRequest,
        on: bool,
    ) -> Result<pb::ScheduleResponse, Status> {
        let i = self
            .shared
            .quick(move |q| {
                if on {
                    q.schedule_pause(&r.name)
                } else {
                    q.schedule_resume(&r.name)
                }
            })
            .await?;
        Ok(answer(&i))
    }

    pub(crate) async fn run_schedules_rpc(&self) -> Result<pb::RunSchedulesResponse, Status> {
        // A pass may enqueue up to max_catch_up jobs per schedule: the
        // blocking pool, never inline.
        let r = self.shared.run(|q| q.run_schedules()).await?;
        Ok(pb::RunSchedulesResponse {
            report: Some(sc::run_report_to_pb(r)),
        })
    }

    pub(crate) async fn schedule_next_times_rpc(
        &self,
        r: pb::ScheduleNextTimesRequest,
    ) -> Result<pb::ScheduleNextTimesResponse, Status> {
        // Store-free, but a sparse cron walked 1,000 times is real work:
        // off the async workers.
        let after = r.after_ms.unwrap_or_else(now_ms);
        let times = self
            .shared
            .run(move |_| {
                next_times(
                    &r.spec,
                    r.timezone.as_deref(),
                    r.anchor_ms,
                    after,
                    r.n as usize,
                )
            })
            .await?;
        Ok(pb::ScheduleNextTimesResponse { times_ms: times })
    }
}
