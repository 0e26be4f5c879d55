//! Job keys (issue 43) at the server's doors: the operator API shows a
//! job's key and key limits; gRPC (`RemoteQueue`) carries a job key on
//! enqueue, lease and get, `ordered` on a limit and a key on list, and
//! its flow control holds over the wire.

mod common;

use serde_json::json;
use telha_jobs::{EnqueueOptions, ErrorKind, JobStore, LeaseOptions, Limit, LimitTarget, NewJob};
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
fn job_keys_and_ordered_limits_round_trip_through_remote_queue() {
    let s = common::served();
    let c = s.client();
    let a = c
        .enqueue("embed", b"a", EnqueueOptions::default().key("customer-7"))
        .unwrap();
    let many = c
        .enqueue_many(vec![
            NewJob::new("embed", b"b".to_vec()).with(EnqueueOptions::default().key("customer-8")),
            NewJob::new("embed", b"c".to_vec()),
        ])
        .unwrap();
    let info = c.get(&a.id).unwrap().unwrap();
    assert_eq!(info.key.as_deref(), Some("customer-7"));
    assert_eq!(info, s.queue.get(&a.id).unwrap().unwrap());
    let b = c.get(&many[0].id).unwrap().unwrap();
    assert_eq!(b.key.as_deref(), Some("customer-8"));
    assert_eq!(c.get(&many[1].id).unwrap().unwrap().key, None);
    let job = c
        .lease_next("w", &LeaseOptions::default())
        .unwrap()
        .unwrap();
    assert_eq!((job.id, job.key.as_deref()), (a.id, Some("customer-7")));
    // List by key over the wire (ListRequest.key): the key index's
    // unfinished jobs, the same page as the core's.
    let by_key = |k: &str| telha_jobs::ListQuery {
        key: Some(k.into()),
        ..telha_jobs::ListQuery::default()
    };
    let page = c.list(&by_key("customer-8")).unwrap();
    assert_eq!(page.jobs.iter().map(|j| j.id).collect::<Vec<_>>(), [b.id]);
    assert_eq!(page, s.queue.list(&by_key("customer-8")).unwrap());
    let leased = c.list(&by_key("customer-7")).unwrap();
    assert_eq!(leased.jobs[0].state, telha_jobs::State::Leased);
    let e = c
        .list(&telha_jobs::ListQuery {
            state: Some(telha_jobs::State::Completed),
            ..by_key("customer-7")
        })
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");

    c.set_limit(&LimitTarget::EachKey, Limit::ordered())
        .unwrap();
    let l = c.limits().unwrap();
    assert_eq!(l.len(), 1);
    assert_eq!(l[0].target.label(), "key:*");
    assert!(l[0].limit.ordered, "{l:?}");
    assert_eq!(l[0].limit.concurrency, Some(1));
    assert_eq!(l, s.queue.limits().unwrap());

    // Bad input is InvalidArgument across the wire, and nothing written.
    let before = s.queue.stats().unwrap().total.total();
    for bad in [String::new(), "k".repeat(129), "a\nb".into()] {
        let e = c
            .enqueue("embed", b"x", EnqueueOptions::default().key(bad.clone()))
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{bad:?}: {e}");
        assert!(e.to_string().contains("job key"), "{e}");
    }
    let e = c
        .set_limit(&LimitTarget::parse("kind:embed").unwrap(), Limit::ordered())
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(e.to_string().contains("ordered"), "{e}");
    assert_eq!(s.queue.stats().unwrap().total.total(), before);
    assert_eq!(s.queue.limits().unwrap().len(), 1);
}

#[test]
fn key_caps_and_ordered_keys_hold_over_the_wire() {
    let s = common::served();
    let c = s.client();
    c.set_limit(&LimitTarget::EachKey, Limit::concurrency(1))
        .unwrap();
    let k = |key: &str| EnqueueOptions::default().key(key);
    let a1 = c.enqueue("embed", b"a1", k("a")).unwrap().id;
    let a2 = c.enqueue("embed", b"a2", k("a")).unwrap().id;
    let b1 = c.enqueue("embed", b"b1", k("b")).unwrap().id;
    let got = c.lease_many("w", 3, &LeaseOptions::default()).unwrap();
    let ids: Vec<_> = got.iter().map(|j| j.id).collect();
    assert_eq!(ids, [a1, b1], "a's second job is held back while a runs");
    assert!(c
        .lease_next("w", &LeaseOptions::default())
        .unwrap()
        .is_none());
    c.complete(&got[0].token(), None).unwrap();
    let next = c
        .lease_next("w", &LeaseOptions::default())
        .unwrap()
        .unwrap();
    assert_eq!((next.id, next.key.as_deref()), (a2, Some("a")));
    c.complete(&next.token(), None).unwrap();
    c.complete(&got[1].token(), None).unwrap();

    // Ordered: key o's jobs lease one at a time, in enqueue order, even
    // when a later one has a higher priority.
    c.set_limit(&LimitTarget::parse("key:o").unwrap(), Limit::ordered())
        .unwrap();
    let o: Vec<_> = (0..4u8)
        .map(|i| {
            let opts = k("o").priority(10 * i);
            c.enqueue("embed", &[i], opts).unwrap().id
        })
        .collect();
    for want in o {
        let j = c.lease_many("w", 4, &LeaseOptions::default()).unwrap();
        assert_eq!(j.iter().map(|j| j.id).collect::<Vec<_>>(), [want]);
        c.complete(&j[0].token(), None).unwrap();
    }
}
