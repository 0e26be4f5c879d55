//! The fan-in RPCs (issue 43): `EnqueueGroup`, `ResultsOfChildren`.

use telha_jobs_proto::fanin as cv;
use telha_jobs_proto::v1 as pb;
use tonic::Status;

use crate::service::{bad, JobsService};

impl JobsService {
    pub(crate) async fn enqueue_group_rpc(
        &self,
        r: pb::EnqueueGroupRequest,
    ) -> Result<pb::EnqueueGroupResponse, Status> {
        let (children, parent) = cv::group_from_pb(r).map_err(bad)?;
        let (c, p) = self
            .shared
            .run(move |q| q.enqueue_group(children, parent))
            .await?;
        Ok(cv::group_answer_to_pb(&c, &p))
    }

    pub(crate) async fn results_of_children_rpc(
        &self,
        r: pb::ResultsOfChildrenRequest,
    ) -> Result<pb::ResultsOfChildrenResponse, Status> {
        let (parent, cursor, limit) = cv::children_request_from_pb(r).map_err(bad)?;
        let page = self
            .shared
            .run(move |q| q.results_of_children(&parent, cursor.as_deref(), limit))
            .await?;
        Ok(cv::children_to_pb(page))
    }
}
