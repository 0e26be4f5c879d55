//! The job-control RPCs: cancel, cancel_many, delete, pause and resume,
//! promote, reschedule and set_priority, each one core call on the
//! blocking pool.

use telha_jobs_proto::convert as cv;
use telha_jobs_proto::v1 as pb;
use tonic::Status;

use crate::service::{bad, JobsService};

impl JobsService {
    pub(crate) async fn cancel_rpc(
        &self,
        r: pb::CancelRequest,
    ) -> Result<pb::CancelResponse, Status> {
        let id = cv::id_from_pb(&r.id).map_err(bad)?;
        let reason = r.reason;
        let outcome = self.shared.quick(move |q| q.cancel(&id, &reason)).await?;
        Ok(pb::CancelResponse {
            outcome: cv::cancel_outcome_to_pb(outcome) as i32,
        })
    }

    pub(crate) async fn cancel_many_rpc(
        &self,
        r: pb::CancelManyRequest,
    ) -> Result<pb::CancelManyResponse, Status> {
        let f = cv::cancel_filter_from_pb(r).map_err(bad)?;
        let rep = self.shared.run(move |q| q.cancel_many(&f)).await?;
        Ok(pb::CancelManyResponse {
            cancelled: rep.cancelled,
            requested: rep.requested,
            corrupt: rep.corrupt,
        })
    }

    pub(crate) async fn delete_rpc(
        &self,
        r: pb::DeleteRequest,
    ) -> Result<pb::DeleteResponse, Status> {
        let id = cv::id_from_pb(&r.id).map_err(bad)?;
        self.shared.quick(move |q| q.delete(&id)).await?;
        Ok(pb::DeleteResponse {})
    }

    pub(crate) async fn promote_rpc(
        &self,
        r: pb::PromoteRequest,
    ) -> Result<pb::PromoteResponse, Status> {
        let id = cv::id_from_pb(&r.id).map_err(bad)?;
        self.shared.quick(move |q| q.promote(&id)).await?;
        Ok(pb::PromoteResponse {})
    }

    pub(crate) async fn reschedule_rpc(
        &self,
        r: pb::RescheduleRequest,
    ) -> Result<pb::RescheduleResponse, Status> {
        let id = cv::id_from_pb(&r.id).map_err(bad)?;
        let at = r.run_at_ms;
        self.shared.quick(move |q| q.reschedule(&id, at)).await?;
        Ok(pb::RescheduleResponse {})
    }

    pub(crate) async fn set_priority_rpc(
        &self,
        r: pb::SetPriorityRequest,
    ) -> Result<pb::SetPriorityResponse, Status> {
        let id = cv::id_from_pb(&r.id).map_err(bad)?;
        let p = cv::priority_from_pb(r.priority).map_err(bad)?;
        self.shared.quick(move |q| q.set_priority(&id, p)).await?;
        Ok(pb::SetPriorityResponse {})
    }

    pub(crate) async fn pause_rpc(
        &self,
        r: pb::PauseRequest,
        on: bool,
    ) -> Result<pb::PauseResponse, Status> {
        let t = cv::pause_from_pb(&r).map_err(bad)?;
        let changed = self
            .shared
            .run(move |q| if on { q.pause(&t) } else { q.resume(&t) })
            .await?;
        Ok(pb::PauseResponse { changed })
    }

    pub(crate) async fn set_limit_rpc(
        &self,
        r: pb::SetLimitRequest,
    ) -> Result<pb::SetLimitResponse, Status> {
        let (t, l) = telha_jobs_proto::flow::set_limit_from_pb(r).map_err(bad)?;
        self.shared.run(move |q| q.set_limit(&t, l)).await?;
        Ok(pb::SetLimitResponse {})
    }

    pub(crate) async fn remove_limit_rpc(
        &self,
        r: pb::RemoveLimitRequest,
    ) -> Result<pb::RemoveLimitResponse, Status> {
        let t = telha_jobs::LimitTarget::parse(&r.target).map_err(bad)?;
        let removed = self.shared.run(move |q| q.remove_limit(&t)).await?;
        Ok(pb::RemoveLimitResponse { removed })
    }

    pub(crate) async fn limits_rpc(&self) -> Result<pb::LimitsResponse, Status> {
        let l = self.shared.quick(|q| q.limits()).await?;
        Ok(pb::LimitsResponse {
            limits: l
                .iter()
                .map(telha_jobs_proto::flow::limit_status_to_pb)
                .collect(),
        })
    }
}
