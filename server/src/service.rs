//! The `Jobs` service: each RPC checks what the wire cannot say (the core's
//! bounds, from `telha_jobs::limits`), runs its core call on the blocking
//! pool and maps the answer (see the ARCHITECTURE "gRPC server and client"
//! section for the RPC ↔ core table). `PollJobs` is in `poll.rs`, `Lease`
//! in `lease.rs`, the settling RPCs' bodies in `settle.rs`, the job-control
//! ones in `control.rs`, the schedule RPCs in `schedules.rs`, fan-in's in
//! `fanin.rs`.

use std::pin::Pin;
use std::sync::Arc;

use telha_jobs::Result;
use telha_jobs_proto::convert as cv;
use telha_jobs_proto::v1 as pb;
use telha_jobs_proto::v1::jobs_server::Jobs;
use tokio_stream::Stream;
use tonic::{Request, Response, Status};

pub(crate) use crate::shared::{
    bad, check_batch, check_worker, closing_status, invalid, now_ms, until_closing, Shared,
    INLINE_MAX_ITEMS,
};

pub(crate) struct JobsService {
    pub(crate) shared: Arc<Shared>,
}

impl JobsService {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        JobsService { shared }
    }

    fn done<T>(&self, method: &'static str, r: Result<T, Status>) -> Result<Response<T>, Status> {
        let code = match &r {
            Ok(_) => tonic::Code::Ok,
            Err(s) => s.code(),
        };
        self.shared.stats.record(method, code);
        r.map(Response::new)
    }
}

type PollStream = Pin<Box<dyn Stream<Item = Result<pb::PollJobsResponse, Status>> + Send>>;

#[tonic::async_trait]
impl Jobs for JobsService {
    async fn enqueue(
        &self,
        req: Request<pb::EnqueueRequest>,
    ) -> Result<Response<pb::EnqueueResponse>, Status> {
        let r = async {
            let job = req
                .into_inner()
                .job
                .ok_or_else(|| invalid("enqueue needs a job"))?;
            let job = cv::new_job_from_pb(job).map_err(bad)?;
            let e = self
                .shared
                .quick(move |q| q.enqueue(&job.kind, &job.payload, job.options))
                .await?;
            Ok(pb::EnqueueResponse {
                enqueued: Some(cv::enqueued_to_pb(&e)),
            })
        }
        .await;
        self.done("Enqueue", r)
    }

    async fn enqueue_many(
        &self,
        req: Request<pb::EnqueueManyRequest>,
    ) -> Result<Response<pb::EnqueueManyResponse>, Status> {
        let r = async {
            let jobs = req.into_inner().jobs;
            check_batch("enqueue", jobs.len())?;
            let jobs = jobs
                .into_iter()
                .map(cv::new_job_from_pb)
                .collect::<Result<Vec<_>>>()
                .map_err(bad)?;
            let e = if jobs.len() <= INLINE_MAX_ITEMS {
                self.shared.quick(move |q| q.enqueue_many(jobs)).await?
            } else {
                self.shared.run(move |q| q.enqueue_many(jobs)).await?
            };
            Ok(pb::EnqueueManyResponse {
                enqueued: e.iter().map(cv::enqueued_to_pb).collect(),
            })
        }
        .await;
        self.done("EnqueueMany", r)
    }

    async fn lease(
        &self,
        req: Request<pb::LeaseRequest>,
    ) -> Result<Response<pb::LeaseResponse>, Status> {
        let r = JobsService::lease(self, req.into_inner()).await;
        self.done("Lease", r)
    }

    type PollJobsStream = PollStream;

    async fn poll_jobs(
        &self,
        req: Request<pb::PollJobsRequest>,
    ) -> Result<Response<Self::PollJobsStream>, Status> {
        let r = self.poll(req.into_inner());
        let code = r.as_ref().map_or_else(Status::code, |_| tonic::Code::Ok);
        self.shared.stats.record("PollJobs", code);
        let (s, id) = r?;
        let mut resp = Response::new(Box::pin(s) as PollStream);
        if let Ok(v) = id.parse() {
            resp.metadata_mut().insert(crate::poll::STREAM_HEADER, v);
        }
        Ok(resp)
    }

    async fn stop_poll(
        &self,
        req: Request<pb::StopPollRequest>,
    ) -> Result<Response<pb::StopPollResponse>, Status> {
        let found = self.shared.stop_poll(&req.into_inner().stream_id);
        self.done("StopPoll", Ok(pb::StopPollResponse { found }))
    }

    async fn heartbeat(
        &self,
        req: Request<pb::HeartbeatRequest>,
    ) -> Result<Response<pb::HeartbeatResponse>, Status> {
        let r = JobsService::heartbeat(self, req.into_inner()).await;
        self.done("Heartbeat", r)
    }

    async fn submit(
        &self,
        req: Request<pb::SubmitRequest>,
    ) -> Result<Response<pb::SubmitResponse>, Status> {
        let r = self
            .submit_one(req.into_inner())
            .await
            .map(|()| pb::SubmitResponse {});
        self.done("Submit", r)
    }

    async fn submit_many(
        &self,
        req: Request<pb::SubmitManyRequest>,
    ) -> Result<Response<pb::SubmitManyResponse>, Status> {
        let r = JobsService::submit_many(self, req.into_inner()).await;
        self.done("SubmitMany", r)
    }

    async fn release(
        &self,
        req: Request<pb::ReleaseRequest>,
    ) -> Result<Response<pb::ReleaseResponse>, Status> {
        let r = async {
            let r = req.into_inner();
            let token = cv::token_from_pb(r.token.as_ref()).map_err(bad)?;
            let delay = r.delay_ms.map(std::time::Duration::from_millis);
            let res = self
                .shared
                .quick(move |q| match delay {
                    None => q.release(&token),
                    Some(d) => q.snooze(&token, d),
                })
                .await;
            self.after_settle(&token, &res);
            res.map(|()| pb::ReleaseResponse {})
        }
        .await;
        self.done("Release", r)
    }

    async fn retry(
        &self,
        req: Request<pb::RetryRequest>,
    ) -> Result<Response<pb::RetryResponse>, Status> {
        let r = async {
            let id = cv::id_from_pb(&req.into_inner().id).map_err(bad)?;
            self.shared.quick(move |q| q.retry(&id)).await?;
            Ok(pb::RetryResponse {})
        }
        .await;
        self.done("Retry", r)
    }

    async fn get(&self, req: Request<pb::GetRequest>) -> Result<Response<pb::GetResponse>, Status> {
        let r = async {
            let id = cv::id_from_pb(&req.into_inner().id).map_err(bad)?;
            let j = self.shared.quick(move |q| q.get(&id)).await?;
            Ok(pb::GetResponse {
                job: j.map(cv::job_info_to_pb),
            })
        }
        .await;
        self.done("Get", r)
    }

    async fn list(
        &self,
        req: Request<pb::ListRequest>,
    ) -> Result<Response<pb::ListResponse>, Status> {
        let r = async {
            let q = cv::list_query_from_pb(req.into_inner()).map_err(bad)?;
            let page = self.shared.run(move |s| s.list(&q)).await?;
            Ok(cv::list_page_to_pb(page))
        }
        .await;
        self.done("List", r)
    }

    async fn backup(
        &self,
        req: Request<pb::BackupRequest>,
    ) -> Result<Response<pb::BackupResponse>, Status> {
        let r = crate::backup::backup(&self.shared, req).await;
        self.done("Backup", r)
    }

    async fn count_tag(
        &self,
        req: Request<pb::CountTagRequest>,
    ) -> Result<Response<pb::CountTagResponse>, Status> {
        let r = async {
            let (tag, scope) = cv::count_tag_from_pb(req.into_inner()).map_err(bad)?;
            let c = self.shared.run(move |s| s.count_tag(&tag, scope)).await?;
            Ok(pb::CountTagResponse {
                counts: Some(cv::counts_to_pb(&c)),
            })
        }
        .await;
        self.done("CountTag", r)
    }

    async fn stats(
        &self,
        req: Request<pb::StatsRequest>,
    ) -> Result<Response<pb::StatsResponse>, Status> {
        let r = async {
            let q = cv::stats_query_from_pb(req.get_ref()).map_err(bad)?;
            let s = self.shared.run(move |s| s.stats_with(&q)).await?;
            Ok(cv::stats_to_pb(&s))
        }
        .await;
        self.done("Stats", r)
    }

    async fn metrics(
        &self,
        _req: Request<pb::MetricsRequest>,
    ) -> Result<Response<pb::MetricsResponse>, Status> {
        let extra = self.shared.source.extra_metrics();
        let r = self.shared.run(|q| q.metrics()).await.map(|mut t| {
            t.push_str(&self.shared.stats.prometheus());
            t.push_str(&extra);
            pb::MetricsResponse { text: t }
        });
        self.done("Metrics", r)
    }

    async fn reap(
        &self,
        _req: Request<pb::ReapRequest>,
    ) -> Result<Response<pb::ReapResponse>, Status> {
        let r = self.shared.run(|q| q.reap()).await.map(cv::reap_to_pb);
        self.done("Reap", r)
    }

    async fn purge(
        &self,
        req: Request<pb::PurgeRequest>,
    ) -> Result<Response<pb::PurgeResponse>, Status> {
        let r = async {
            let p = req.into_inner();
            let state = cv::state_from_pb(p.state).map_err(bad)?;
            let cutoff = p.cutoff_ms;
            let rep = self.shared.run(move |q| q.purge(state, cutoff)).await?;
            Ok(cv::purge_to_pb(rep))
        }
        .await;
        self.done("Purge", r)
    }

    async fn cancel(
        &self,
        req: Request<pb::CancelRequest>,
    ) -> Result<Response<pb::CancelResponse>, Status> {
        let r = self.cancel_rpc(req.into_inner()).await;
        self.done("Cancel", r)
    }

    async fn cancel_many(
        &self,
        req: Request<pb::CancelManyRequest>,
    ) -> Result<Response<pb::CancelManyResponse>, Status> {
        let r = self.cancel_many_rpc(req.into_inner()).await;
        self.done("CancelMany", r)
    }

    async fn delete(
        &self,
        req: Request<pb::DeleteRequest>,
    ) -> Result<Response<pb::DeleteResponse>, Status> {
        let r = self.delete_rpc(req.into_inner()).await;
        self.done("Delete", r)
    }

    async fn promote(
        &self,
        req: Request<pb::PromoteRequest>,
    ) -> Result<Response<pb::PromoteResponse>, Status> {
        let r = self.promote_rpc(req.into_inner()).await;
        self.done("Promote", r)
    }

    async fn reschedule(
        &self,
        req: Request<pb::RescheduleRequest>,
    ) -> Result<Response<pb::RescheduleResponse>, Status> {
        let r = self.reschedule_rpc(req.into_inner()).await;
        self.done("Reschedule", r)
    }

    async fn set_priority(
        &self,
        req: Request<pb::SetPriorityRequest>,
    ) -> Result<Response<pb::SetPriorityResponse>, Status> {
        let r = self.set_priority_rpc(req.into_inner()).await;
        self.done("SetPriority", r)
    }

    async fn pause(
        &self,
        req: Request<pb::PauseRequest>,
    ) -> Result<Response<pb::PauseResponse>, Status> {
        let r = self.pause_rpc(req.into_inner(), true).await;
        self.done("Pause", r)
    }

    async fn resume(
        &self,
        req: Request<pb::PauseRequest>,
    ) -> Result<Response<pb::PauseResponse>, Status> {
        let r = self.pause_rpc(req.into_inner(), false).await;
        self.done("Resume", r)
    }

    async fn wait_job(
        &self,
        req: Request<pb::WaitJobRequest>,
    ) -> Result<Response<pb::WaitJobResponse>, Status> {
        let r = JobsService::wait_job(self, req.into_inner()).await;
        self.done("WaitJob", r)
    }

    type WatchEventsStream = crate::events::EventStream;

    async fn watch_events(
        &self,
        req: Request<pb::WatchEventsRequest>,
    ) -> Result<Response<Self::WatchEventsStream>, Status> {
        let r = JobsService::watch_events(self, req.get_ref());
        self.done("WatchEvents", r)
    }

    async fn paused(
        &self,
        _req: Request<pb::PausedRequest>,
    ) -> Result<Response<pb::PausedResponse>, Status> {
        let r = self
            .shared
            .run(|q| q.paused())
            .await
            .map(|p| cv::paused_to_pb(&p));
        self.done("Paused", r)
    }

    // Schedules: the bodies are in schedules.rs.

    async fn schedule_put(
        &self,
        req: Request<pb::SchedulePutRequest>,
    ) -> Result<Response<pb::ScheduleResponse>, Status> {
        let r = self.schedule_put_rpc(req.into_inner()).await;
        self.done("SchedulePut", r)
    }

    async fn schedule_get(
        &self,
        req: Request<pb::ScheduleGetRequest>,
    ) -> Result<Response<pb::ScheduleResponse>, Status> {
        let r = self.schedule_get_rpc(req.into_inner()).await;
        self.done("ScheduleGet", r)
    }

    async fn schedule_list(
        &self,
        _req: Request<pb::ScheduleListRequest>,
    ) -> Result<Response<pb::ScheduleListResponse>, Status> {
        let r = self.schedule_list_rpc().await;
        self.done("ScheduleList", r)
    }

    async fn schedule_delete(
        &self,
        req: Request<pb::ScheduleDeleteRequest>,
    ) -> Result<Response<pb::ScheduleDeleteResponse>, Status> {
        let r = self.schedule_delete_rpc(req.into_inner()).await;
        self.done("ScheduleDelete", r)
    }

    async fn schedule_pause(
        &self,
        req: Request<pb::SchedulePauseRequest>,
    ) -> Result<Response<pb::ScheduleResponse>, Status> {
        let r = self.schedule_pause_rpc(req.into_inner(), true).await;
        self.done("SchedulePause", r)
    }

    async fn schedule_resume(
        &self,
        req: Request<pb::SchedulePauseRequest>,
    ) -> Result<Response<pb::ScheduleResponse>, Status> {
        let r = self.schedule_pause_rpc(req.into_inner(), false).await;
        self.done("ScheduleResume", r)
    }

    async fn enqueue_group(
        &self,
        req: Request<pb::EnqueueGroupRequest>,
    ) -> Result<Response<pb::EnqueueGroupResponse>, Status> {
        let r = self.enqueue_group_rpc(req.into_inner()).await;
        self.done("EnqueueGroup", r)
    }

    async fn results_of_children(
        &self,
        req: Request<pb::ResultsOfChildrenRequest>,
    ) -> Result<Response<pb::ResultsOfChildrenResponse>, Status> {
        let r = self.results_of_children_rpc(req.into_inner()).await;
        self.done("ResultsOfChildren", r)
    }

    async fn find(
        &self,
        req: Request<pb::FindRequest>,
    ) -> Result<Response<pb::FindResponse>, Status> {
        let r = self.find_rpc(req.into_inner()).await;
        self.done("Find", r)
    }

    async fn run_schedules(
        &self,
        _req: Request<pb::RunSchedulesRequest>,
    ) -> Result<Response<pb::RunSchedulesResponse>, Status> {
        let r = self.run_schedules_rpc().await;
        self.done("RunSchedules", r)
    }

    async fn set_limit(
        &self,
        req: Request<pb::SetLimitRequest>,
    ) -> Result<Response<pb::SetLimitResponse>, Status> {
        let r = self.set_limit_rpc(req.into_inner()).await;
        self.done("SetLimit", r)
    }

    async fn remove_limit(
        &self,
        req: Request<pb::RemoveLimitRequest>,
    ) -> Result<Response<pb::RemoveLimitResponse>, Status> {
        let r = self.remove_limit_rpc(req.into_inner()).await;
        self.done("RemoveLimit", r)
    }

    async fn limits(
        &self,
        _req: Request<pb::LimitsRequest>,
    ) -> Result<Response<pb::LimitsResponse>, Status> {
        let r = self.limits_rpc().await;
        self.done("Limits", r)
    }

    async fn schedule_next_times(
        &self,
        req: Request<pb::ScheduleNextTimesRequest>,
    ) -> Result<Response<pb::ScheduleNextTimesResponse>, Status> {
        let r = self.schedule_next_times_rpc(req.into_inner()).await;
        self.done("ScheduleNextTimes", r)
    }
}
