//! Flow control and follow-up jobs on the wire: limits, their status, and
//! a completion's `then`.

use telha_jobs::{Completion, Error, Limit, LimitStatus, LimitTarget, Result};

use crate::convert::{encoding_from_pb, encoding_to_pb, new_job_from_pb, new_job_to_pb};
use crate::v1 as pb;

/// The wire form of a limit's settings.
pub fn limit_to_pb(l: &Limit) -> pb::Limit {
    pb::Limit {
        concurrency: l.concurrency,
        rate: l.rate,
        burst: l.burst,
        weight: l.weight,
        ordered: l.ordered,
    }
}

/// A limit's settings from the wire (checked by the core's `set_limit`).
pub fn limit_from_pb(l: Option<pb::Limit>) -> Limit {
    let l = l.unwrap_or_default();
    Limit {
        concurrency: l.concurrency,
        rate: l.rate,
        burst: l.burst,
        weight: l.weight,
        ordered: l.ordered,
    }
}

/// The wire form of `set_limit`.
pub fn set_limit_to_pb(t: &LimitTarget, l: &Limit) -> pb::SetLimitRequest {
    pb::SetLimitRequest {
        target: t.label(),
        limit: Some(limit_to_pb(l)),
    }
}

/// `set_limit` from the wire: `InvalidArgument` for a bad target.
pub fn set_limit_from_pb(r: pb::SetLimitRequest) -> Result<(LimitTarget, Limit)> {
    Ok((LimitTarget::parse(&r.target)?, limit_from_pb(r.limit)))
}

/// The wire form of one limit's status.
pub fn limit_status_to_pb(s: &LimitStatus) -> pb::LimitStatus {
    pb::LimitStatus {
        target: s.target.label(),
        limit: Some(limit_to_pb(&s.limit)),
        leased: s.leased,
        held: s.held,
        throttled_concurrency: s.throttled_concurrency,
        throttled_rate: s.throttled_rate,
    }
}

/// One limit's status from the wire.
pub fn limit_status_from_pb(s: pb::LimitStatus) -> Result<LimitStatus> {
    let target = LimitTarget::parse(&s.target).map_err(|e| {
        Error::Storage(format!(
            "the server named a limit target this client cannot read: {e}"
        ))
    })?;
    Ok(LimitStatus {
        target,
        limit: limit_from_pb(s.limit),
        leased: s.leased,
        held: s.held,
        throttled_concurrency: s.throttled_concurrency,
        throttled_rate: s.throttled_rate,
    })
}

/// The wire form of a completion (its result and follow-up jobs).
pub fn complete_to_pb(c: Completion) -> pb::Complete {
    pb::Complete {
        result: c.result,
        result_encoding: encoding_to_pb(c.encoding),
        then: c.then.into_iter().map(new_job_to_pb).collect(),
    }
}

/// A completion from the wire, for `token`.
pub fn complete_from_pb(token: telha_jobs::LeaseToken, c: pb::Complete) -> Result<Completion> {
    Ok(Completion {
        token,
        result: c.result,
        encoding: encoding_from_pb(c.result_encoding),
        then: c
            .then
            .into_iter()
            .map(new_job_from_pb)
            .collect::<Result<_>>()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_and_completions_round_trip() {
        let t: LimitTarget = "scope:*/kind:embed".parse().unwrap();
        let l = Limit {
            concurrency: Some(2),
            rate: Some(0.5),
            burst: Some(3),
            weight: None,
            ordered: false,
        };
        assert_eq!(set_limit_from_pb(set_limit_to_pb(&t, &l)).unwrap(), (t, l));
        let k: LimitTarget = "key:*".parse().unwrap();
        let o = Limit {
            concurrency: Some(1),
            ordered: true,
            ..Limit::default()
        };
        assert_eq!(set_limit_from_pb(set_limit_to_pb(&k, &o)).unwrap(), (k, o));
        let bad = pb::SetLimitRequest {
            target: "tenant:x".into(),
            limit: None,
        };
        assert!(set_limit_from_pb(bad).is_err());
        let token = telha_jobs::LeaseToken {
            id: telha_jobs::JobId::from_bytes([7; 16]),
            generation: 3,
        };
        let c = Completion::new(token, Some(b"r".to_vec()))
            .then(vec![telha_jobs::NewJob::new("embed", b"p".to_vec())]);
        let back = complete_from_pb(token, complete_to_pb(c.clone())).unwrap();
        assert_eq!(back, c);
    }
}
