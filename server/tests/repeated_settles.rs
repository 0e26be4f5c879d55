//! A settle repeated over gRPC (what a client sends again after a lost
//! reply) answers as the first did, `complete_many` items included; the
//! server maps the core's answer. The single settles are also in the
//! conformance cases this server runs (084–088); the C API has no
//! `complete_many`, so its repeats are here.

mod common;

use telha_jobs::{CancelOutcome, Completion, EnqueueOptions, ErrorKind, JobStore, LeaseOptions};
use telha_jobs::{LeaseToken, ListQuery, NewJob, State};

#[test]
fn a_repeated_complete_many_answers_each_item_as_the_first_call_did() {
    let s = common::served();
    let c = s.client();
    let opts = LeaseOptions::default();
    let ids: Vec<_> = (0..3)
        .map(|_| {
            c.enqueue("embed", b"p", EnqueueOptions::default())
                .unwrap()
                .id
        })
        .collect();
    let jobs: Vec<_> = (0..3)
        .map(|_| c.lease_next("w", &opts).unwrap().unwrap())
        .collect();
    assert_eq!(c.cancel(&ids[2], "stop").unwrap(), CancelOutcome::Requested);
    let batch = || {
        vec![
            Completion::new(jobs[0].token(), Some(b"r0".to_vec()))
                .then(vec![NewJob::new("child", b"of 0".to_vec())]),
            Completion::new(jobs[1].token(), Some(b"r1".to_vec())),
            Completion::new(jobs[1].token(), Some(b"again".to_vec())),
            Completion::new(jobs[2].token(), None),
            Completion::new(
                LeaseToken {
                    id: ids[1],
                    generation: jobs[1].generation + 1,
                },
                None,
            ),
        ]
    };
    let kinds = |a: &[telha_jobs::Result<()>]| -> Vec<Option<ErrorKind>> {
        a.iter()
            .map(|r| r.as_ref().err().map(|e| e.kind()))
            .collect()
    };
    let want = vec![
        None,
        None,
        None,
        Some(ErrorKind::Cancelled),
        Some(ErrorKind::Aborted),
    ];
    let first = c.complete_many(batch()).unwrap();
    assert_eq!(kinds(&first), want);
    let before: Vec<_> = ids.iter().map(|id| c.get(id).unwrap().unwrap()).collect();
    let again = c.complete_many(batch()).unwrap();
    assert_eq!(kinds(&again), want);
    assert_eq!(
        again[3].as_ref().unwrap_err().to_string(),
        first[3].as_ref().unwrap_err().to_string()
    );
    let after: Vec<_> = ids.iter().map(|id| c.get(id).unwrap().unwrap()).collect();
    assert_eq!(after, before, "a repeat changes nothing");
    assert_eq!(after[0].result.as_deref(), Some(&b"r0"[..]));
    assert_eq!(after[1].result.as_deref(), Some(&b"r1"[..]));
    assert_eq!(after[2].state, State::Cancelled);
    let kids = c
        .list(&ListQuery {
            parent: Some(ids[0]),
            ..ListQuery::default()
        })
        .unwrap()
        .jobs;
    assert_eq!(kids.len(), 1, "follow-ups enqueued once");
    // The single calls, through the same server.
    c.complete(&jobs[0].token(), None).unwrap();
    let e = c.complete(&jobs[2].token(), None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Cancelled);
    assert_eq!(
        c.fail(&jobs[0].token(), "late", true).unwrap_err().kind(),
        ErrorKind::Aborted
    );
    assert!(s.queue.check().unwrap().problems.is_empty());
}
