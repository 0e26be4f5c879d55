//! The `Find` RPC (issue 42): a text looked up as a job id, an
//! idempotency key and a tag.

use telha_jobs_proto::find as cv;
use telha_jobs_proto::v1 as pb;
use tonic::Status;

use crate::service::{bad, JobsService};

impl JobsService {
    pub(crate) async fn find_rpc(&self, r: pb::FindRequest) -> Result<pb::FindResponse, Status> {
        let q = cv::find_from_pb(r).map_err(bad)?;
        let found = self.shared.run(move |s| s.find(&q)).await?;
        Ok(cv::found_to_pb(found))
    }
}
