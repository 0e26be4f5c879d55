//! Fan-in on the wire (issue 43): `EnqueueGroup` and `ResultsOfChildren`.

use telha_jobs::{ChildPage, ChildResult, Enqueued, JobId, NewJob, Result};

use crate::convert::{
    encoding_from_pb, encoding_to_pb, enqueued_from_pb, enqueued_to_pb, id_from_pb, invalid,
    new_job_from_pb, state_from_pb, state_to_pb,
};
use crate::v1 as pb;

/// The wire form of a group.
pub fn group_to_pb(children: Vec<NewJob>, parent: NewJob) -> pb::EnqueueGroupRequest {
    pb::EnqueueGroupRequest {
        children: children
            .into_iter()
            .map(crate::convert::new_job_to_pb)
            .collect(),
        parent: Some(crate::convert::new_job_to_pb(parent)),
    }
}

/// A group from the wire.
pub fn group_from_pb(r: pb::EnqueueGroupRequest) -> Result<(Vec<NewJob>, NewJob)> {
    let parent = r
        .parent
        .ok_or_else(|| invalid("a group needs a parent".into()))?;
    let children = r
        .children
        .into_iter()
        .map(new_job_from_pb)
        .collect::<Result<_>>()?;
    Ok((children, new_job_from_pb(parent)?))
}

/// The wire form of a group's answer.
pub fn group_answer_to_pb(children: &[Enqueued], parent: &Enqueued) -> pb::EnqueueGroupResponse {
    pb::EnqueueGroupResponse {
        children: children.iter().map(enqueued_to_pb).collect(),
        parent: Some(enqueued_to_pb(parent)),
    }
}

/// A group's answer from the wire.
pub fn group_answer_from_pb(r: pb::EnqueueGroupResponse) -> Result<(Vec<Enqueued>, Enqueued)> {
    let parent = r
        .parent
        .as_ref()
        .ok_or_else(|| invalid("a group answer without its parent".into()))?;
    let children = r
        .children
        .iter()
        .map(enqueued_from_pb)
        .collect::<Result<_>>()?;
    Ok((children, enqueued_from_pb(parent)?))
}

/// The wire form of a `results_of_children` call.
pub fn children_request_to_pb(
    parent: &JobId,
    cursor: Option<&str>,
    limit: usize,
) -> pb::ResultsOfChildrenRequest {
    pb::ResultsOfChildrenRequest {
        parent: parent.as_bytes().to_vec(),
        cursor: cursor.map(str::to_string),
        limit: u32::try_from(limit).unwrap_or(u32::MAX),
    }
}

/// A `results_of_children` call from the wire.
pub fn children_request_from_pb(
    r: pb::ResultsOfChildrenRequest,
) -> Result<(JobId, Option<String>, usize)> {
    Ok((id_from_pb(&r.parent)?, r.cursor, r.limit as usize))
}

/// The wire form of a page of children.
pub fn children_to_pb(p: ChildPage) -> pb::ResultsOfChildrenResponse {
    pb::ResultsOfChildrenResponse {
        children: p
            .children
            .into_iter()
            .map(|c| pb::ChildResult {
                id: c.id.as_bytes().to_vec(),
                state: c.state.map_or(pb::JobState::Unspecified, state_to_pb) as i32,
                result: c.result,
                result_encoding: encoding_to_pb(c.result_encoding),
                last_error: c.last_error,
            })
            .collect(),
        next: p.next,
    }
}

/// A page of children from the wire.
pub fn children_from_pb(r: pb::ResultsOfChildrenResponse) -> Result<ChildPage> {
    let children = r
        .children
        .into_iter()
        .map(|c| {
            let state = match c.state {
                0 => None,
                s => Some(state_from_pb(s)?),
            };
            Ok(ChildResult::new(
                id_from_pb(&c.id)?,
                state,
                c.result,
                encoding_from_pb(c.result_encoding),
                c.last_error,
            ))
        })
        .collect::<Result<_>>()?;
    Ok(ChildPage::new(children, r.next))
}
