//! `find` (issue 42) through every server door: the `Find` RPC by
//! `RemoteQueue`, and the operator API's `/api/v1/find` (the page's
//! search box).

mod common;

use serde_json::json;
use telha_jobs::{EnqueueOptions, ErrorKind, FindQuery, JobStore, ListQuery, Scope};
use telha_jobs_server::ServeOptions;

#[test]
fn find_round_trips_through_remote_queue() {
    let s = common::served();
    let c = s.client();
    let scope = Scope::from_bytes([9; 16]);
    let keyed = c
        .enqueue(
            "mail",
            b"a",
            EnqueueOptions::default().idempotency_key("order-4711"),
        )
        .unwrap();
    let tagged: Vec<_> = (0..3)
        .map(|_| {
            c.enqueue(
                "ship",
                b"b",
                EnqueueOptions::default().tag("order-4711").scope(scope),
            )
            .unwrap()
            .id
        })
        .collect();

    let mut q = FindQuery::new("order-4711");
    q.limit = 2;
    let r = c.find(&q).unwrap();
    assert_eq!(r, s.queue.find(&q).unwrap(), "the same answer as the store");
    assert_eq!(r.matched(), ["key", "tag"]);
    assert_eq!(r.by_key.as_ref().unwrap().id, keyed.id);
    let page: Vec<_> = r.by_tag.jobs.iter().map(|j| j.id).collect();
    assert_eq!(page, tagged[..2]);
    // The cursor continues in List by tag.
    let rest = c
        .list(&ListQuery {
            tag: Some("order-4711".into()),
            after: r.by_tag.next.clone(),
            ..ListQuery::default()
        })
        .unwrap();
    assert_eq!(rest.jobs.len(), 1);
    assert_eq!(rest.jobs[0].id, tagged[2]);

    let r = c.find(&FindQuery::new(tagged[0].to_string())).unwrap();
    assert_eq!(r.matched(), ["id"]);
    assert_eq!(r.by_id.unwrap().tags, ["order-4711"]);
    // In the tagged jobs' scope: the key (in the system scope) is not there.
    let mut q = FindQuery::new("order-4711");
    q.scope = Some(scope);
    assert_eq!(c.find(&q).unwrap().matched(), ["tag"]);

    for (text, limit, says) in [
        ("", 50, "1 to 512 bytes"),
        ("a\u{1b}b", 50, "control character U+001B"),
        ("a", 0, "find limit"),
    ] {
        let e = c
            .find(&FindQuery {
                text: text.into(),
                scope: None,
                limit,
            })
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
        assert!(e.to_string().contains(says), "{e}");
    }
    let e = c.find(&FindQuery::new("x".repeat(513))).unwrap_err();
    assert!(e.to_string().contains("got 513 bytes"), "{e}");
}

#[test]
fn the_operator_api_finds_what_the_search_box_asks() {
    let (s, h) = common::ui(ServeOptions::default());
    let q = &s.queue;
    let a = q
        .enqueue(
            "embed",
            b"{}",
            EnqueueOptions::default()
                .idempotency_key("upload 7")
                .tag("upload 7"),
        )
        .unwrap();
    let b = q
        .enqueue("embed", b"{}", EnqueueOptions::default().tag("upload 7"))
        .unwrap();
    let r = h.get("/api/v1/find?text=upload%207").json();
    assert_eq!(r["text"], json!("upload 7"));
    assert_eq!(r["matched"], json!(["key", "tag"]));
    assert_eq!(r["by_id"], json!(null));
    assert_eq!(r["by_key"]["id"], json!(a.id.to_string()));
    let ids: Vec<_> = r["by_tag"]["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["id"].clone())
        .collect();
    assert_eq!(ids, [json!(a.id.to_string()), json!(b.id.to_string())]);
    assert_eq!(r["by_tag"]["next"], json!(null));
    assert_eq!(r["by_tag"]["jobs"][0]["tags"], json!(["upload 7"]));

    let r = h.get(&format!("/api/v1/find?text={}", b.id)).json();
    assert_eq!(r["matched"], json!(["id"]));
    assert_eq!(r["by_id"]["id"], json!(b.id.to_string()));
    let r = h.get("/api/v1/find?text=upload%207&limit=1").json();
    assert_eq!(r["by_tag"]["jobs"].as_array().unwrap().len(), 1);
    assert!(r["by_tag"]["next"].is_string());
    let other = "00000000-0000-0000-0000-00000000000b";
    let r = h
        .get(&format!("/api/v1/find?text=upload%207&scope={other}"))
        .json();
    assert_eq!(r["matched"], json!([]));

    for bad in [
        "/api/v1/find",
        "/api/v1/find?text=a%0Ab",
        "/api/v1/find?text=a&limit=0",
        "/api/v1/find?text=a&scope=nope",
        "/api/v1/find?text=a&tag=b",
    ] {
        assert_eq!(h.get(bad).status, 400, "{bad}");
    }
    let long = h.get(&format!("/api/v1/find?text={}", "x".repeat(513)));
    assert_eq!(long.status, 400);
    assert!(String::from_utf8_lossy(&long.body).contains("1 to 512 bytes"));
}
