//! Scheduling order and idempotent enqueues.

use super::*;

// ------------------------------------------------------------ scheduling

#[test]
fn a_delayed_job_is_leased_at_its_run_at_and_not_before() {
    let s = TestStore::new();
    let t0 = s.now();
    let delayed = s.enqueue_with(
        "embed",
        EnqueueOptions::default().delay(Duration::from_secs(60)),
    );
    let at = s.enqueue_with("embed", EnqueueOptions::default().run_at(t0 + 120_000));
    assert_eq!(s.get(&delayed).state_ts, t0 + 60_000);
    assert_eq!(s.get(&at).state_ts, t0 + 120_000);

    assert!(s.lease("w").is_none());
    s.set_now(t0 + 60_000 - 1);
    assert!(s.lease("w").is_none());
    s.set_now(t0 + 60_000);
    assert_eq!(s.must_lease("w").id, delayed);
    s.set_now(t0 + 120_000 - 1);
    assert!(s.lease("w").is_none());
    s.set_now(t0 + 120_000);
    assert_eq!(s.must_lease("w").id, at);
}

#[test]
fn run_at_wins_over_delay_and_a_past_run_at_is_ready_now() {
    let s = TestStore::new();
    let t0 = s.now();
    let both = s.enqueue_with(
        "embed",
        EnqueueOptions::default().delay(HOUR).run_at(t0 + 5_000),
    );
    assert_eq!(s.get(&both).state_ts, t0 + 5_000);
    let past = s.enqueue_with("embed", EnqueueOptions::default().run_at(t0 - 5_000));
    assert_eq!(s.must_lease("w").id, past);
    assert!(s.lease("w").is_none());
    s.advance(Duration::from_secs(5));
    assert_eq!(s.must_lease("w").id, both);
}

#[test]
fn the_most_urgent_priority_is_leased_first_regardless_of_enqueue_order() {
    let s = TestStore::new();
    let low = s.enqueue_with("embed", EnqueueOptions::default().priority(255));
    let mid = s.enqueue("embed"); // default 128
    let high = s.enqueue_with("embed", EnqueueOptions::default().priority(0));
    let mid2 = s.enqueue_with("embed", EnqueueOptions::default().priority(128));
    assert_eq!(s.get(&mid).priority, 128);
    let order: Vec<JobId> = (0..4).map(|_| s.must_lease("w").id).collect();
    assert_eq!(order, [high, mid, mid2, low]);
}

#[test]
fn jobs_of_one_priority_are_leased_in_enqueue_order() {
    let s = TestStore::new();
    // All at the same clock millisecond: the order comes from the ids.
    let ids: Vec<JobId> = (0..50).map(|_| s.enqueue("embed")).collect();
    let leased: Vec<JobId> = (0..50).map(|_| s.must_lease("w").id).collect();
    assert_eq!(leased, ids);
    assert!(s.lease("w").is_none());
}

#[test]
fn a_delayed_urgent_job_does_not_block_ready_less_urgent_work() {
    let s = TestStore::new();
    let urgent = s.enqueue_with("embed", EnqueueOptions::default().priority(0).delay(HOUR));
    let lazy = s.enqueue_with("embed", EnqueueOptions::default().priority(200));
    assert_eq!(s.must_lease("w").id, lazy);
    assert!(s.lease("w").is_none());
    s.advance(HOUR);
    assert_eq!(s.must_lease("w").id, urgent);
}

// ----------------------------------------------------------- idempotency

#[test]
fn a_repeated_idempotency_key_in_a_scope_returns_the_existing_job() {
    let s = TestStore::new();
    let opts = EnqueueOptions::default().idempotency_key("doc-42");
    let first = s.q.enqueue("embed", b"a", opts.clone()).unwrap();
    assert!(first.created);
    let again = s.q.enqueue("embed", b"b", opts.clone()).unwrap();
    assert_eq!((again.id, again.created), (first.id, false));
    assert_eq!(s.get(&first.id).payload, b"a", "the first payload stays");
    assert_eq!(s.q.stats().unwrap().total.total(), 1);

    // While the job exists, in any state, the key keeps answering it.
    let job = s.must_lease("w");
    assert_eq!(
        s.q.enqueue("embed", b"c", opts.clone()).unwrap().id,
        first.id
    );
    s.q.complete(&job.token(), None).unwrap();
    let done = s.q.enqueue("embed", b"d", opts).unwrap();
    assert_eq!((done.id, done.created), (first.id, false));
    assert_consistent(&s.q);
}

#[test]
fn the_same_idempotency_key_in_another_scope_is_another_job() {
    let s = TestStore::new();
    let k = EnqueueOptions::default().idempotency_key("doc-42");
    let nil = s.q.enqueue("embed", b"", k.clone()).unwrap();
    let a =
        s.q.enqueue("embed", b"", k.clone().scope(scope(1)))
            .unwrap();
    let b =
        s.q.enqueue("embed", b"", k.clone().scope(scope(2)))
            .unwrap();
    assert!(nil.created && a.created && b.created);
    let ids: HashSet<JobId> = [nil.id, a.id, b.id].into();
    assert_eq!(ids.len(), 3);
    let a2 = s.q.enqueue("embed", b"", k.scope(scope(1))).unwrap();
    assert_eq!((a2.id, a2.created), (a.id, false));
}

#[test]
fn a_duplicate_key_inside_one_enqueue_many_maps_to_the_first_job() {
    let s = TestStore::new();
    let pre =
        s.q.enqueue(
            "embed",
            b"",
            EnqueueOptions::default().idempotency_key("old"),
        )
        .unwrap();
    let key = |k: &str| EnqueueOptions::default().idempotency_key(k);
    let out =
        s.q.enqueue_many(vec![
            NewJob::new("embed", b"1".to_vec()).with(key("x")),
            NewJob::new("embed", b"2".to_vec()),
            NewJob::new("embed", b"3".to_vec()).with(key("x")),
            NewJob::new("embed", b"4".to_vec()).with(key("old")),
        ])
        .unwrap();
    assert_eq!(out.len(), 4);
    assert!(out[0].created && out[1].created);
    assert_eq!((out[2].id, out[2].created), (out[0].id, false));
    assert_eq!((out[3].id, out[3].created), (pre.id, false));
    assert_eq!(s.q.stats().unwrap().total.pending, 3);
    assert_eq!(s.get(&out[0].id).payload, b"1");
    assert_consistent(&s.q);
}

#[test]
fn an_idempotency_key_creates_a_new_job_once_the_old_one_is_pruned() {
    let s = TestStore::new();
    let opts = EnqueueOptions::default().idempotency_key("nightly");
    let first = s.q.enqueue("system:vacuum", b"", opts.clone()).unwrap();
    let job = s.must_lease("w");
    s.q.complete(&job.token(), None).unwrap();
    s.advance(Duration::from_secs(24 * 3600) + SEC);
    assert_eq!(s.q.reap().unwrap().pruned, 1);
    assert!(s.q.get(&first.id).unwrap().is_none());
    let second = s.q.enqueue("system:vacuum", b"", opts.clone()).unwrap();
    assert!(second.created);
    assert_ne!(second.id, first.id);
    let third = s.q.enqueue("system:vacuum", b"", opts).unwrap();
    assert_eq!((third.id, third.created), (second.id, false));
    assert_consistent(&s.q);
}
