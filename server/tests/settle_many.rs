//! `fail_many` and `release_many` through `RemoteQueue` (a `SubmitMany` of
//! one outcome) against an in-process server, and a raw `SubmitMany`
//! mixing complete, fail (with its own retry delay) and release outcomes:
//! each item answered on its own, in order.

mod common;

use std::time::Duration;

use telha_jobs::{ErrorKind, Failure, JobStore, LeaseOptions, NewJob, State};
use telha_jobs_proto::convert as cv;
use telha_jobs_proto::v1 as pb;
use telha_jobs_proto::v1::jobs_client::JobsClient;

#[test]
fn fail_many_and_release_many_answer_per_item_over_the_wire() {
    let s = common::served();
    let c = s.client();
    let jobs: Vec<NewJob> = (0..4).map(|i| NewJob::new("embed", vec![i])).collect();
    let ids: Vec<_> = c.enqueue_many(jobs).unwrap().iter().map(|e| e.id).collect();
    let leased = c.lease_many("w", 4, &LeaseOptions::default()).unwrap();
    let t: Vec<_> = leased.iter().map(|j| j.token()).collect();
    let stale = telha_jobs::LeaseToken {
        generation: t[1].generation + 1,
        ..t[1]
    };
    let answers = c
        .fail_many(vec![
            Failure::new(t[0], "boom").retry_in(Duration::from_secs(600)),
            Failure::new(stale, "late"),
            Failure::new(t[1], "bad").not_retryable(),
        ])
        .unwrap();
    let kinds: Vec<_> = answers
        .iter()
        .map(|a| a.as_ref().err().map(|e| e.kind()))
        .collect();
    assert_eq!(kinds, vec![None, Some(ErrorKind::Aborted), None]);
    let a = s.queue.get(&ids[0]).unwrap().unwrap();
    assert_eq!(a.state, State::Failed);
    assert!(
        a.state_ts >= a.events.last().unwrap().ts + 600_000,
        "its own retry delay, not the backoff's"
    );
    assert_eq!(s.queue.get(&ids[1]).unwrap().unwrap().state, State::Dead);
    // A repeated release (a retry after a lost reply) answers as the first.
    let answers = c.release_many(&[t[2], t[0], t[2]]).unwrap();
    let kinds: Vec<_> = answers
        .iter()
        .map(|a| a.as_ref().err().map(|e| e.kind()))
        .collect();
    assert_eq!(kinds, vec![None, Some(ErrorKind::Aborted), None]);
    assert_eq!(s.queue.get(&ids[2]).unwrap().unwrap().state, State::Pending);
    assert!(c.fail_many(Vec::new()).unwrap().is_empty());
    assert!(c.release_many(&[]).unwrap().is_empty());

    // One SubmitMany of the three outcomes.
    let again = c.lease_many("w", 1, &LeaseOptions::default()).unwrap();
    let item = |t: &telha_jobs::LeaseToken, o| pb::SubmitRequest {
        token: Some(cv::token_to_pb(t)),
        outcome: Some(o),
    };
    use pb::submit_request::Outcome;
    let req = pb::SubmitManyRequest {
        items: vec![
            item(&t[3], Outcome::Release(pb::GiveBack {})),
            item(
                &again[0].token(),
                Outcome::Fail(pb::Fail {
                    reason: "later".into(),
                    retryable: true,
                    retry_in_ms: Some(900_000),
                }),
            ),
            item(&t[0], Outcome::Complete(pb::Complete::default())),
        ],
    };
    let results = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let mut raw = JobsClient::connect(s.url.clone()).await.unwrap();
            raw.submit_many(req).await.unwrap().into_inner().results
        });
    let errs: Vec<_> = results
        .iter()
        .map(|r| r.error.as_ref().map(|e| e.kind))
        .collect();
    assert_eq!(errs[0], None);
    assert_eq!(errs[1], None);
    assert!(errs[2].is_some(), "a failed lease cannot complete");
    assert_eq!(s.queue.get(&ids[3]).unwrap().unwrap().state, State::Pending);
    let f = s.queue.get(&again[0].id).unwrap().unwrap();
    assert_eq!(f.state, State::Failed);
    assert!(f.state_ts >= f.events.last().unwrap().ts + 900_000);
    let r = s.queue.check().unwrap();
    assert!(r.problems.is_empty(), "{:?}", r.problems);
}
