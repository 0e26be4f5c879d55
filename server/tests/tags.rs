//! Tags and metadata (issue 42) through every server door: gRPC by
//! `RemoteQueue` (enqueue, lease, get, list by tag, CountTag) and the
//! operator API's `/api/v1/jobs?tag=`.

mod common;

use serde_json::json;
use telha_jobs::{
    EnqueueOptions, ErrorKind, JobStore, LeaseOptions, ListQuery, NewJob, Scope, State,
};
use telha_jobs_server::ServeOptions;

fn tagged(t: &str) -> EnqueueOptions {
    EnqueueOptions::default()
        .tag(t)
        .tag("all")
        .meta("trace", "00-abc-01")
}

#[test]
fn tags_and_metadata_round_trip_through_remote_queue() {
    let s = common::served();
    let c = s.client();
    let scope = Scope::from_bytes([9; 16]);
    let a = c
        .enqueue("embed", b"a", tagged("order-1").scope(scope))
        .unwrap();
    let many = c
        .enqueue_many(vec![
            NewJob::new("embed", b"b".to_vec()).with(tagged("order-1")),
            NewJob::new("embed", b"c".to_vec()).with(tagged("order-2")),
        ])
        .unwrap();
    let info = c.get(&a.id).unwrap().unwrap();
    assert_eq!(info.tags, ["order-1", "all"]);
    assert_eq!(info.metadata["trace"], "00-abc-01");
    assert_eq!(info, s.queue.get(&a.id).unwrap().unwrap());

    let job = c
        .lease_next("w", &LeaseOptions::default())
        .unwrap()
        .unwrap();
    assert_eq!(job.tags, ["order-1", "all"]);
    assert_eq!(job.metadata["trace"], "00-abc-01");

    let q = ListQuery {
        tag: Some("order-1".into()),
        ..ListQuery::default()
    };
    let mut ids: Vec<_> = c.list(&q).unwrap().jobs.iter().map(|j| j.id).collect();
    ids.sort();
    let mut want = vec![a.id, many[0].id];
    want.sort();
    assert_eq!(ids, want);
    let q = ListQuery {
        tag: Some("all".into()),
        state: Some(State::Pending),
        limit: 1,
        ..ListQuery::default()
    };
    let page = c.list(&q).unwrap();
    assert_eq!(page.jobs.len(), 1);
    assert!(page.next.is_some());

    let n = c.count_tag("all", None).unwrap();
    assert_eq!((n.pending, n.leased, n.total()), (2, 1, 3));
    assert_eq!(c.count_tag("order-1", Some(scope)).unwrap().total(), 1);
    assert_eq!(n, s.queue.count_tag("all", None).unwrap());

    // Bad input is InvalidArgument across the wire, and nothing written.
    let e = c
        .enqueue("embed", b"x", EnqueueOptions::default().tag("x".repeat(65)))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(e.to_string().contains("1 to 64 bytes"), "{e}");
    let e = c.count_tag("", None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert_eq!(s.queue.stats().unwrap().total.total(), 3);
}

#[test]
fn the_operator_api_lists_jobs_by_tag() {
    let (s, h) = common::ui(ServeOptions::default());
    let q = &s.queue;
    let a = q.enqueue("embed", b"{}", tagged("order-4711")).unwrap();
    q.enqueue("embed", b"{}", tagged("order-9")).unwrap();
    let r = h.get("/api/v1/jobs?tag=order-4711").json();
    let jobs = r["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0]["id"], json!(a.id.to_string()));
    assert_eq!(jobs[0]["tags"], json!(["order-4711", "all"]));
    assert_eq!(jobs[0]["metadata"], json!({"trace": "00-abc-01"}));
    assert_eq!(
        h.get("/api/v1/jobs?tag=all").json()["jobs"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let bad = h.get(&format!("/api/v1/jobs?tag={}", "x".repeat(65)));
    assert_eq!(bad.status, 400);
}
