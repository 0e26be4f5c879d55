//! `Find` on the wire (issue 42): a text looked up as a job id, an
//! idempotency key and a tag.

use telha_jobs::{FindQuery, FindResult, ListPage, Result};

use crate::convert::{
    corrupt_from_pb, corrupt_to_pb, job_info_from_pb, job_info_to_pb, scope_from_pb,
};
use crate::v1 as pb;

/// The wire form of a `find` query.
pub fn find_to_pb(q: &FindQuery) -> pb::FindRequest {
    pb::FindRequest {
        text: q.text.clone(),
        scope: q.scope.map(|s| s.as_bytes().to_vec()),
        limit: u32::try_from(q.limit).unwrap_or(u32::MAX),
    }
}

/// A `find` query from the wire (the core checks the text and the limit).
pub fn find_from_pb(r: pb::FindRequest) -> Result<FindQuery> {
    Ok(FindQuery {
        text: r.text,
        scope: r.scope.as_deref().map(scope_from_pb).transpose()?,
        limit: r.limit as usize,
    })
}

/// The wire form of what `find` found.
pub fn found_to_pb(r: FindResult) -> pb::FindResponse {
    pb::FindResponse {
        by_id: r.by_id.map(job_info_to_pb),
        by_key: r.by_key.map(job_info_to_pb),
        by_tag: r.by_tag.jobs.into_iter().map(job_info_to_pb).collect(),
        by_tag_next: r.by_tag.next,
        by_tag_corrupt: r.by_tag.corrupt.into_iter().map(corrupt_to_pb).collect(),
    }
}

/// What `find` found, from the wire.
pub fn found_from_pb(r: pb::FindResponse) -> Result<FindResult> {
    Ok(FindResult {
        by_id: r.by_id.map(job_info_from_pb).transpose()?,
        by_key: r.by_key.map(job_info_from_pb).transpose()?,
        by_tag: ListPage {
            jobs: r
                .by_tag
                .into_iter()
                .map(job_info_from_pb)
                .collect::<Result<_>>()?,
            next: r.by_tag_next,
            corrupt: r
                .by_tag_corrupt
                .into_iter()
                .map(corrupt_from_pb)
                .collect::<Result<_>>()?,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_round_trips_and_a_bad_scope_is_refused() {
        let mut q = FindQuery::new("order-4711");
        q.scope = Some(telha_jobs::Scope::from_bytes([3; 16]));
        q.limit = 7;
        assert_eq!(find_from_pb(find_to_pb(&q)).unwrap(), q);
        let mut bad = find_to_pb(&q);
        bad.scope = Some(vec![1; 15]);
        let e = find_from_pb(bad).unwrap_err();
        assert_eq!(e.kind(), telha_jobs::ErrorKind::InvalidArgument);
        let empty = found_from_pb(pb::FindResponse::default()).unwrap();
        assert!(empty.is_empty() && empty.by_tag.next.is_none());
    }
}
