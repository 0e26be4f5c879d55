//! `find` (issue 42): a text answered exactly as a job id, an idempotency
//! key (per scope) and a tag, side by side; bad input refused.

use super::*;
use telha_jobs::{FindQuery, FindResult};

fn find(s: &TestStore, text: &str, scope: Option<Scope>, limit: usize) -> FindResult {
    let q = FindQuery {
        text: text.into(),
        scope,
        limit,
    };
    s.q.find(&q).unwrap()
}

fn ids(r: &FindResult) -> Vec<JobId> {
    r.by_tag.jobs.iter().map(|j| j.id).collect()
}

#[test]
fn a_text_is_an_id_a_key_and_a_tag_side_by_side() {
    let s = TestStore::new();
    let keyed = s.enqueue_with(
        "mail",
        EnqueueOptions::default()
            .idempotency_key("order-4711")
            .tag("mail"),
    );
    let t1 = s.enqueue_with("ship", EnqueueOptions::default().tag("order-4711"));
    let t2 = s.enqueue_with(
        "ship",
        EnqueueOptions::default().tag("order-4711").scope(scope(2)),
    );
    let keyed2 = s.enqueue_with(
        "mail",
        EnqueueOptions::default()
            .idempotency_key("order-4711")
            .scope(scope(2)),
    );
    s.enqueue_with("other", EnqueueOptions::default().tag("order-4712"));

    // Every scope: the key in the system scope, the tag everywhere.
    let r = find(&s, "order-4711", None, 50);
    assert_eq!(r.matched(), ["key", "tag"]);
    assert_eq!(r.by_key.as_ref().map(|j| j.id), Some(keyed));
    assert!(r.by_id.is_none());
    let mut want = vec![t1, t2];
    want.sort_by_key(|id| s.get(id).scope);
    assert_eq!(ids(&r), want);
    assert!(r.by_tag.next.is_none());

    // One scope: its key's job, its tagged jobs.
    let r = find(&s, "order-4711", Some(scope(2)), 50);
    assert_eq!(r.by_key.as_ref().map(|j| j.id), Some(keyed2));
    assert_eq!(ids(&r), [t2]);

    // An id: that job, in its scope only.
    let r = find(&s, &t2.to_string(), None, 50);
    assert_eq!(r.matched(), ["id"]);
    assert_eq!(r.by_id.as_ref().map(|j| j.id), Some(t2));
    assert_eq!(r.by_id.unwrap().tags, ["order-4711"]);
    assert!(find(&s, &t2.to_string(), Some(scope(2)), 50)
        .by_id
        .is_some());
    assert!(find(&s, &t2.to_string(), Some(scope(3)), 50).is_empty());
    // A well-formed id of no job, a text that is nothing: nothing.
    assert!(find(&s, &JobId::from_bytes([7; 16]).to_string(), None, 50).is_empty());
    assert!(
        find(&s, "order-47", None, 50).is_empty(),
        "exact, not a prefix"
    );
    assert!(find(&s, "ORDER-4711", None, 50).is_empty(), "exact case");
    assert!(find(&s, "mail", None, 50).matched() == ["tag"]);
}

#[test]
fn the_tag_page_has_a_cursor_that_list_continues() {
    let s = TestStore::new();
    let all: Vec<JobId> = (0..5)
        .map(|_| s.enqueue_with("k", EnqueueOptions::default().tag("upload-7")))
        .collect();
    let r = find(&s, "upload-7", None, 2);
    assert_eq!(ids(&r), all[..2]);
    let next = r.by_tag.next.clone().expect("a cursor");
    let rest =
        s.q.list(&ListQuery {
            tag: Some("upload-7".into()),
            after: Some(next),
            ..ListQuery::default()
        })
        .unwrap();
    let rest: Vec<JobId> = rest.jobs.iter().map(|j| j.id).collect();
    assert_eq!(rest, all[2..]);
    // The tag's jobs in every state are found.
    let j = s.must_lease("w");
    s.q.complete(&j.token(), None).unwrap();
    let r = find(&s, "upload-7", None, 50);
    assert_eq!(r.by_tag.jobs[0].state, State::Completed);
    assert_eq!(r.by_tag.jobs.len(), 5);
}

#[test]
fn a_deleted_job_is_found_no_more() {
    let s = TestStore::new();
    let id = s.enqueue_with(
        "k",
        EnqueueOptions::default()
            .idempotency_key("req-1")
            .tag("req-1"),
    );
    assert_eq!(find(&s, "req-1", None, 50).matched(), ["key", "tag"]);
    s.q.delete(&id).unwrap();
    assert!(find(&s, "req-1", None, 50).is_empty());
    assert!(find(&s, &id.to_string(), None, 50).is_empty());
    assert_consistent(&s.q);
}

#[test]
fn a_text_longer_than_a_tag_is_still_a_key() {
    let s = TestStore::new();
    let key = "k".repeat(300);
    let id = s.enqueue_with("k", EnqueueOptions::default().idempotency_key(key.clone()));
    let r = find(&s, &key, None, 50);
    assert_eq!(r.matched(), ["key"]);
    assert_eq!(r.by_key.unwrap().id, id);
    let longest = "k".repeat(512);
    assert!(find(&s, &longest, None, 50).is_empty());
}

#[test]
fn bad_input_is_refused_naming_the_limit() {
    let s = TestStore::new();
    let q = |text: &str, limit: usize| FindQuery {
        text: text.into(),
        scope: None,
        limit,
    };
    let e = expect_err(s.q.find(&q("", 50)), ErrorKind::InvalidArgument);
    assert!(e.to_string().contains("1 to 512 bytes"), "{e}");
    let e = expect_err(
        s.q.find(&q(&"x".repeat(513), 50)),
        ErrorKind::InvalidArgument,
    );
    assert!(e.to_string().contains("got 513 bytes"), "{e}");
    let e = expect_err(s.q.find(&q("a\nb", 50)), ErrorKind::InvalidArgument);
    assert!(e.to_string().contains("control character U+000A"), "{e}");
    let e = expect_err(s.q.find(&q("a", 0)), ErrorKind::InvalidArgument);
    assert!(e.to_string().contains("find limit must be 1 to"), "{e}");
    let e = expect_err(s.q.find(&q("a", 10_001)), ErrorKind::InvalidArgument);
    assert!(e.to_string().contains("find limit"), "{e}");
    assert_eq!(FindQuery::new("a").limit, 50);
}
