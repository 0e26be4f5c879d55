//! Job keys (issue 43) at the server's doors: the operator API shows a
//! job's key and key limits; the gRPC client refuses a job key and an
//! ordered limit (not in the wire format yet) rather than drop them, and
//! sets a plain `key:*` limit.

mod common;

use serde_json::json;
use telha_jobs::{EnqueueOptions, ErrorKind, JobStore, Limit, LimitTarget, NewJob};
use telha_jobs_server::ServeOptions;

#[test]
fn the_operator_api_shows_a_jobs_key_and_key_limits() {
    let (s, h) = common::ui(ServeOptions::default());
    let q = &s.queue;
    q.set_limit(&LimitTarget::EachKey, Limit::ordered())
        .unwrap();
    let a = q
        .enqueue("embed", b"{}", EnqueueOptions::default().key("customer-7"))
        .unwrap();
    let r = h.get(&format!("/api/v1/jobs/{}", a.id)).json();
    assert_eq!(r["key"], json!("customer-7"), "{r}");
    let plain = q
        .enqueue("embed", b"{}", EnqueueOptions::default())
        .unwrap();
    let r = h.get(&format!("/api/v1/jobs/{}", plain.id)).json();
    assert_eq!(r["key"], json!(null), "{r}");
    assert_eq!(q.limits().unwrap()[0].target.label(), "key:*");
}

#[test]
fn the_remote_client_refuses_what_the_wire_cannot_carry() {
    let s = common::served();
    let c = s.client();
    let e = c
        .enqueue("embed", b"x", EnqueueOptions::default().key("k"))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    let e = c
        .enqueue_many(vec![
            NewJob::new("embed", b"x".to_vec()).with(EnqueueOptions::default().key("k"))
        ])
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert_eq!(s.queue.stats().unwrap().total.total(), 0, "nothing written");
    let e = c
        .set_limit(&LimitTarget::EachKey, Limit::ordered())
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    c.set_limit(&LimitTarget::EachKey, Limit::concurrency(2))
        .unwrap();
    let l = s.queue.limits().unwrap();
    assert_eq!(
        (l[0].target.label(), l[0].limit.concurrency),
        ("key:*".into(), Some(2))
    );
}
