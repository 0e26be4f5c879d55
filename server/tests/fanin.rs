//! Fan-in (issue 43) through gRPC by `RemoteQueue`: `after` and
//! `on_child_dead` on `NewJob`, `JobInfo.fan_in`, the `waiting` state and
//! count, `EnqueueGroup` and `ResultsOfChildren`, and the errors.

mod common;

use telha_jobs::{
    ChildDeadPolicy, EnqueueOptions, ErrorKind, JobId, JobStore, LeaseOptions, ListQuery, NewJob,
    State,
};

#[test]
fn fan_in_round_trips_through_remote_queue() {
    let s = common::served();
    let c = s.client();
    let kids: Vec<JobId> = c
        .enqueue_many(vec![
            NewJob::new("page", b"1".to_vec()),
            NewJob::new("page", b"2".to_vec()),
        ])
        .unwrap()
        .into_iter()
        .map(|e| e.id)
        .collect();
    let p = c
        .enqueue(
            "index",
            b"doc",
            EnqueueOptions::default()
                .after(kids.clone())
                .on_child_dead(ChildDeadPolicy::Ignore),
        )
        .unwrap();
    let info = c.get(&p.id).unwrap().unwrap();
    assert_eq!(info.state, State::Waiting);
    let f = info.fan_in.unwrap();
    assert_eq!(
        (f.unfinished, f.total, f.policy),
        (2, 2, ChildDeadPolicy::Ignore)
    );
    assert_eq!(info, s.queue.get(&p.id).unwrap().unwrap());
    assert_eq!(c.stats().unwrap().total.waiting, 1);
    let waiting = c
        .list(&ListQuery {
            state: Some(State::Waiting),
            ..ListQuery::default()
        })
        .unwrap();
    assert_eq!(waiting.jobs.len(), 1);

    let pages = LeaseOptions::default().kind("page").unwrap();
    for j in c.lease_many("w", 10, &pages).unwrap() {
        c.complete(&j.token(), Some(b"ok")).unwrap();
    }
    assert_eq!(c.get(&p.id).unwrap().unwrap().state, State::Pending);
    let page = c.results_of_children(&p.id, None, 1).unwrap();
    assert_eq!(page.children.len(), 1);
    assert_eq!(page.children[0].state, Some(State::Completed));
    assert_eq!(page.children[0].result.as_deref(), Some(&b"ok"[..]));
    let rest = c
        .results_of_children(&p.id, page.next.as_deref(), 10)
        .unwrap();
    assert_eq!(rest.children.len(), 1);
    assert!(rest.next.is_none());

    let (ks, gp) = c
        .enqueue_group(
            vec![NewJob::new("page", b"g".to_vec())],
            NewJob::new("index", b"group".to_vec()),
        )
        .unwrap();
    assert_eq!(ks.len(), 1);
    assert_eq!(c.get(&gp.id).unwrap().unwrap().state, State::Waiting);
    assert_eq!(
        c.cancel(&gp.id, "no").unwrap(),
        telha_jobs::CancelOutcome::Cancelled
    );

    let ghost = JobId::from_bytes([5; 16]);
    let e = c
        .enqueue("index", b"", EnqueueOptions::default().after([ghost]))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    let e = c
        .enqueue_group(vec![], NewJob::new("index", b"".to_vec()))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    let e = c.results_of_children(&ghost, None, 10).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert!(s.queue.check().unwrap().problems.is_empty());
}
