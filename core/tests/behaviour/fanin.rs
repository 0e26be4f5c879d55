//! Fan-in (issue 43): a parent enqueued with `after` (or as a group's
//! parent) waits until its children finish, by its `on_child_dead` policy.

use super::*;
use telha_jobs::{ChildDeadPolicy, Completion};

fn pages() -> LeaseOptions {
    kinds(&["page"])
}

fn children(s: &TestStore, n: usize) -> Vec<JobId> {
    let jobs = (0..n)
        .map(|i| NewJob::new("page", format!("p{i}").into_bytes()))
        .collect();
    s.q.enqueue_many(jobs)
        .expect("children")
        .into_iter()
        .map(|e| e.id)
        .collect()
}

fn parent(s: &TestStore, after: &[JobId], p: Option<ChildDeadPolicy>) -> JobId {
    let mut o = EnqueueOptions::default().after(after.iter().copied());
    if let Some(p) = p {
        o = o.on_child_dead(p);
    }
    s.enqueue_with("index", o)
}

/// Lease the child `id` (pages only) and hand back its token.
fn lease_child(s: &TestStore, id: &JobId) -> LeaseToken {
    let jobs = s.q.lease_many("w", 1_000, &pages()).expect("lease");
    let mut found = None;
    for j in jobs {
        if j.id == *id {
            found = Some(j.token());
        } else {
            s.q.release(&j.token()).expect("release");
        }
    }
    found.unwrap_or_else(|| panic!("child {id} not leasable"))
}

fn complete(s: &TestStore, id: &JobId) {
    let t = lease_child(s, id);
    s.q.complete(&t, Some(format!("r-{id}").as_bytes()))
        .expect("complete");
}

#[test]
fn the_parent_waits_until_its_last_child_completes() {
    let s = TestStore::new();
    let kids = children(&s, 3);
    let p = parent(&s, &kids, None);
    let info = s.get(&p);
    assert_eq!(info.state, State::Waiting);
    let f = info.fan_in.expect("fan-in");
    assert_eq!(
        (f.unfinished, f.total, f.policy),
        (3, 3, ChildDeadPolicy::Fail)
    );
    assert_eq!(s.q.stats().unwrap().total.waiting, 1);
    // Never leased while waiting.
    assert!(lease_with(&s, &kinds(&["index"])).is_none());
    complete(&s, &kids[1]);
    complete(&s, &kids[0]);
    assert_eq!(s.get(&p).state, State::Waiting);
    assert_eq!(s.get(&p).fan_in.unwrap().unfinished, 1);
    assert_consistent(&s.q);
    complete(&s, &kids[2]);
    let info = s.get(&p);
    assert_eq!(info.state, State::Pending);
    assert_eq!(info.fan_in.unwrap().unfinished, 0);
    assert_eq!(count_events(&info, "children_done"), 1);
    assert_eq!(s.q.stats().unwrap().total.waiting, 0);
    let page = s.q.results_of_children(&p, None, 2).unwrap();
    assert_eq!(page.children.len(), 2);
    let rest =
        s.q.results_of_children(&p, page.next.as_deref(), 10)
            .unwrap();
    assert_eq!(rest.children.len(), 1);
    assert!(rest.next.is_none());
    let all: Vec<_> = page.children.iter().chain(&rest.children).collect();
    for (c, id) in all.iter().zip(&kids) {
        assert_eq!(c.id, *id);
        assert_eq!(c.state, Some(State::Completed));
        assert_eq!(c.result.as_deref(), Some(format!("r-{id}").as_bytes()));
    }
    let j = lease_with(&s, &kinds(&["index"])).expect("the parent runs");
    assert_eq!(j.id, p);
    assert_consistent(&s.q);
}

#[test]
fn fail_kills_the_parent_with_the_childs_id_and_error() {
    let s = TestStore::new();
    let kids = children(&s, 3);
    let p = parent(&s, &kids, None);
    complete(&s, &kids[0]);
    let t = lease_child(&s, &kids[1]);
    s.q.fail(&t, "page 1 unreadable", false).unwrap();
    let info = s.get(&p);
    assert_eq!(info.state, State::Dead);
    let err = info.last_error.unwrap();
    assert!(
        err.contains(&kids[1].to_string()) && err.contains("page 1 unreadable"),
        "{err}"
    );
    // The rest finish without touching it.
    complete(&s, &kids[2]);
    assert_eq!(s.get(&p).state, State::Dead);
    assert_consistent(&s.q);
}

#[test]
fn cancel_rest_cancels_the_parent_then_its_unfinished_children() {
    let s = TestStore::new();
    let kids = children(&s, 4);
    let p = parent(&s, &kids, Some(ChildDeadPolicy::CancelRest));
    complete(&s, &kids[0]);
    let t = lease_child(&s, &kids[1]);
    s.q.fail(&t, "boom", false).unwrap();
    assert_eq!(s.get(&p).state, State::Cancelled);
    s.q.reap().unwrap();
    assert_eq!(s.get(&kids[0]).state, State::Completed);
    assert_eq!(s.get(&kids[2]).state, State::Cancelled);
    assert_eq!(s.get(&kids[3]).state, State::Cancelled);
    assert_consistent(&s.q);
}

#[test]
fn ignore_runs_the_parent_after_every_child_whatever_the_outcome() {
    let s = TestStore::new();
    let kids = children(&s, 3);
    let p = parent(&s, &kids, Some(ChildDeadPolicy::Ignore));
    let t = lease_child(&s, &kids[0]);
    s.q.fail(&t, "boom", false).unwrap();
    s.q.cancel(&kids[1], "not needed").unwrap();
    assert_eq!(s.get(&p).state, State::Waiting);
    complete(&s, &kids[2]);
    assert_eq!(s.get(&p).state, State::Pending);
    let page = s.q.results_of_children(&p, None, 10).unwrap();
    let states: Vec<_> = page.children.iter().map(|c| c.state).collect();
    assert_eq!(
        states,
        vec![
            Some(State::Dead),
            Some(State::Cancelled),
            Some(State::Completed)
        ]
    );
    assert_eq!(page.children[0].last_error.as_deref(), Some("boom"));
    assert_consistent(&s.q);
}

#[test]
fn a_parent_cancelled_while_waiting_leaves_its_children_alone() {
    let s = TestStore::new();
    let kids = children(&s, 2);
    let p = parent(&s, &kids, None);
    s.q.cancel(&p, "changed my mind").unwrap();
    assert_eq!(s.get(&p).state, State::Cancelled);
    assert_consistent(&s.q);
    complete(&s, &kids[0]);
    complete(&s, &kids[1]);
    assert_eq!(s.get(&p).state, State::Cancelled);
    assert_eq!(s.get(&kids[1]).state, State::Completed);
    // Deleting a waiting parent works the same way.
    let kids = children(&s, 2);
    let p = parent(&s, &kids, None);
    s.q.delete(&p).unwrap();
    assert_consistent(&s.q);
    complete(&s, &kids[0]);
    assert_consistent(&s.q);
}

#[test]
fn cancel_many_cancels_waiting_parents_by_state_kind_and_tag() {
    use telha_jobs::CancelFilter;
    let s = TestStore::new();
    let kids = children(&s, 3);
    let by_state = parent(&s, &kids[..1], None);
    let by_kind = s.enqueue_with("report", EnqueueOptions::default().after([kids[1]]));
    let by_tag = s.enqueue_with(
        "index",
        EnqueueOptions::default().after([kids[2]]).tag("upload-7"),
    );
    let filter = |state, kind: Option<&str>, tag: Option<&str>| CancelFilter {
        state,
        kind: kind.map(|k| k.parse().unwrap()),
        tag: tag.map(str::to_string),
        reason: "operator".into(),
        ..CancelFilter::default()
    };
    // Waiting is one of the states a filter takes, and part of "all".
    let r =
        s.q.cancel_many(&filter(None, Some("report"), None))
            .unwrap();
    assert_eq!((r.cancelled, r.requested), (1, 0));
    assert_eq!(s.get(&by_kind).state, State::Cancelled);
    let r =
        s.q.cancel_many(&filter(None, None, Some("upload-7")))
            .unwrap();
    assert_eq!(r.cancelled, 1);
    assert_eq!(s.get(&by_tag).state, State::Cancelled);
    let r =
        s.q.cancel_many(&filter(Some(State::Waiting), None, None))
            .unwrap();
    assert_eq!(
        r.cancelled, 1,
        "only the waiting parent, not the pending pages"
    );
    assert_eq!(s.get(&by_state).state, State::Cancelled);
    for k in &kids {
        assert_eq!(s.get(k).state, State::Pending);
    }
    assert_eq!(s.q.stats().unwrap().total.waiting, 0);
    assert_consistent(&s.q);
    complete(&s, &kids[0]);
    assert_eq!(s.get(&by_state).state, State::Cancelled);
    assert_consistent(&s.q);
}

#[test]
fn finished_ids_count_as_done_and_unknown_ones_write_nothing() {
    let s = TestStore::new();
    let kids = children(&s, 2);
    complete(&s, &kids[0]);
    let t = lease_child(&s, &kids[1]);
    s.q.fail(&t, "x", false).unwrap();
    let p = parent(&s, &kids, None);
    assert_eq!(s.get(&p).state, State::Pending, "every child had finished");
    let before = s.q.stats().unwrap().total.total();
    let ghost = JobId::from_bytes([7; 16]);
    let o = EnqueueOptions::default().after([kids[0], ghost]);
    expect_err(s.q.enqueue("index", b"", o.clone()), ErrorKind::NotFound);
    expect_err(
        s.q.enqueue_many(vec![
            NewJob::new("index", b"a".to_vec()),
            NewJob::new("index", b"b".to_vec()).with(o),
        ]),
        ErrorKind::NotFound,
    );
    assert_eq!(s.q.stats().unwrap().total.total(), before);
    assert_consistent(&s.q);
}

#[test]
fn bad_fan_in_input_is_refused() {
    let s = TestStore::new();
    let kids = children(&s, 1);
    let o = EnqueueOptions::default().on_child_dead(ChildDeadPolicy::Ignore);
    expect_err(s.q.enqueue("index", b"", o), ErrorKind::InvalidArgument);
    let o = EnqueueOptions::default()
        .after(kids.clone())
        .idempotency_key("k")
        .debounce(Duration::from_secs(1));
    expect_err(s.q.enqueue("index", b"", o), ErrorKind::InvalidArgument);
    // A follow-up cannot wait (it is enqueued by a completion).
    let t = lease_child(&s, &kids[0]);
    let mut c = Completion::new(t, None);
    c.then = vec![
        NewJob::new("index", b"".to_vec()).with(EnqueueOptions::default().after(kids.clone()))
    ];
    expect_err(s.q.complete_with(c), ErrorKind::InvalidArgument);
    expect_err(
        s.q.enqueue_group(vec![], NewJob::new("index", b"".to_vec())),
        ErrorKind::InvalidArgument,
    );
    expect_err(
        s.q.results_of_children(&kids[0], Some("zz"), 10),
        ErrorKind::InvalidArgument,
    );
    expect_err(
        s.q.results_of_children(&JobId::from_bytes([3; 16]), None, 10),
        ErrorKind::NotFound,
    );
    assert_consistent(&s.q);
}

#[test]
fn a_group_is_one_batch_and_survives_a_reopen() {
    let mut s = TestStore::new();
    let kids: Vec<NewJob> = (0..3).map(|i| NewJob::new("page", vec![i])).collect();
    let (ks, p) =
        s.q.enqueue_group(kids, NewJob::new("index", b"doc".to_vec()))
            .unwrap();
    assert_eq!(s.get(&p.id).state, State::Waiting);
    complete(&s, &ks[0].id);
    s.reopen();
    assert_consistent(&s.q);
    complete(&s, &ks[1].id);
    assert_eq!(s.get(&p.id).state, State::Waiting);
    complete(&s, &ks[2].id);
    assert_eq!(s.get(&p.id).state, State::Pending);
    assert_consistent(&s.q);
}

#[test]
fn nested_parents_wake_in_turn_and_die_in_one_batch() {
    let s = TestStore::new();
    let kids = children(&s, 1);
    let mid = parent(&s, &kids, None);
    let top = parent(&s, &[mid], None);
    let t = lease_child(&s, &kids[0]);
    s.q.fail(&t, "deep", false).unwrap();
    assert_eq!(s.get(&mid).state, State::Dead);
    assert_eq!(s.get(&top).state, State::Dead, "in the same batch");
    assert_consistent(&s.q);
}

#[test]
fn ten_thousand_children_wake_the_parent_once() {
    let s = TestStore::new();
    let kids = children(&s, 10_000);
    let p = parent(&s, &kids, None);
    let mut done = 0;
    while done < kids.len() {
        assert_eq!(s.get(&p).state, State::Waiting);
        let batch = s.q.lease_many("w", 1_000, &pages()).unwrap();
        done += batch.len();
        let items = batch
            .iter()
            .map(|j| Completion::new(j.token(), None))
            .collect();
        for r in s.q.complete_many(items).unwrap() {
            r.unwrap();
        }
    }
    let info = s.get(&p);
    assert_eq!(info.state, State::Pending);
    assert_eq!(count_events(&info, "children_done"), 1);
    let mut n = 0;
    let mut cursor = None;
    loop {
        let page =
            s.q.results_of_children(&p, cursor.as_deref(), 1_000)
                .unwrap();
        n += page.children.len();
        match page.next {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    assert_eq!(n, 10_000);
    assert_consistent(&s.q);
}
