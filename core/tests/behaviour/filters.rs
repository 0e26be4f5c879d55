//! Kind filters and scope round-robin.

use super::*;

// ---------------------------------------------------------- kind filters

#[test]
fn an_exact_kind_filter_leases_only_that_kind() {
    let s = TestStore::new();
    let e = s.enqueue("embed");
    let p = s.enqueue("ingest:pdf");
    let job = lease_with(&s, &kinds(&["ingest:pdf"])).unwrap();
    assert_eq!((job.id, job.kind.as_str()), (p, "ingest:pdf"));
    assert!(lease_with(&s, &kinds(&["ingest:pdf"])).is_none());
    assert_eq!(s.get(&e).state, State::Pending);
    assert_eq!(s.must_lease("w").id, e);
}

#[test]
fn a_family_filter_leases_every_kind_of_the_family_and_nothing_else() {
    let s = TestStore::new();
    let embed = s.enqueue("embed");
    let pdf = s.enqueue("ingest:pdf");
    let cascade = s.enqueue("cascade");
    let html = s.enqueue("ingest:html");
    let f = kinds(&["ingest:*"]);
    assert_eq!(lease_with(&s, &f).unwrap().id, pdf);
    assert_eq!(lease_with(&s, &f).unwrap().id, html);
    assert!(lease_with(&s, &f).is_none());
    for id in [embed, cascade] {
        assert_eq!(s.get(&id).state, State::Pending);
    }
}

#[test]
fn a_kind_filter_keeps_priority_then_fifo_order_across_its_kinds() {
    let s = TestStore::new();
    let p = |n| EnqueueOptions::default().priority(n);
    let a = s.enqueue_with("ingest:pdf", p(128));
    let b = s.enqueue_with("ingest:html", p(128));
    let _e = s.enqueue_with("embed", p(0));
    let c = s.enqueue_with("ingest:pdf", p(128));
    let d = s.enqueue_with("ingest:html", p(0));
    let _x = s.enqueue_with("cascade", p(1));
    let f = kinds(&["ingest:*"]);
    let got: Vec<JobId> = std::iter::from_fn(|| lease_with(&s, &f).map(|j| j.id)).collect();
    assert_eq!(got, [d, a, b, c]);

    // A list of exact kinds behaves the same.
    let s = TestStore::new();
    let a = s.enqueue_with("cascade", p(50));
    let _b = s.enqueue_with("ingest:pdf", p(0));
    let c = s.enqueue_with("embed", p(50));
    let d = s.enqueue_with("embed", p(10));
    let f = kinds(&["embed", "cascade"]);
    let got: Vec<JobId> = std::iter::from_fn(|| lease_with(&s, &f).map(|j| j.id)).collect();
    assert_eq!(got, [d, a, c]);
}

#[test]
fn a_filtered_lease_on_a_queue_of_other_kinds_finds_nothing_and_takes_nothing() {
    let s = TestStore::new();
    let ids: Vec<JobId> = (0..5).map(|_| s.enqueue("embed")).collect();
    assert!(lease_with(&s, &kinds(&["ingest:*"])).is_none());
    assert!(lease_with(&s, &kinds(&["cascade", "embed:x"])).is_none());
    let stats = s.q.stats().unwrap();
    assert_eq!((stats.total.pending, stats.total.leased), (5, 0));
    for id in ids {
        assert_eq!(s.get(&id).state, State::Pending);
    }
}

// ------------------------------------------------------ scope round-robin

#[test]
fn pollers_without_a_scope_alternate_between_scopes_with_work() {
    let s = TestStore::new();
    for _ in 0..5 {
        s.enqueue_with("embed", EnqueueOptions::default().scope(scope(1)));
    }
    for _ in 0..5 {
        s.enqueue_with("embed", EnqueueOptions::default().scope(scope(2)));
    }
    let scopes: Vec<Scope> = (0..10).map(|_| s.must_lease("w").scope).collect();
    for pair in scopes.windows(2) {
        assert_ne!(
            pair[0], pair[1],
            "consecutive leases from one scope: {scopes:?}"
        );
    }
}

#[test]
fn a_large_backlog_in_one_scope_does_not_starve_a_small_one() {
    let s = TestStore::new();
    let big = scope(1);
    let small = scope(2);
    let jobs: Vec<NewJob> = (0..1000)
        .map(|i| {
            NewJob::new("embed", format!("{i}").into_bytes())
                .with(EnqueueOptions::default().scope(big))
        })
        .collect();
    s.q.enqueue_many(jobs).unwrap();
    for _ in 0..10 {
        s.enqueue_with("embed", EnqueueOptions::default().scope(small));
    }
    let first20: Vec<Scope> = (0..20).map(|_| s.must_lease("w").scope).collect();
    assert_eq!(first20.iter().filter(|s| **s == small).count(), 10);
}

#[test]
fn round_robin_serves_active_scopes_evenly_beside_idle_ones() {
    let s = TestStore::new();
    // A scope that had work once and is now idle.
    let idle = scope(1);
    s.enqueue_with("embed", EnqueueOptions::default().scope(idle));
    s.q.complete(&s.must_lease("w").token(), None).unwrap();
    let (big, small) = (scope(2), scope(3));
    for _ in 0..100 {
        s.enqueue_with("embed", EnqueueOptions::default().scope(big));
    }
    for _ in 0..10 {
        s.enqueue_with("embed", EnqueueOptions::default().scope(small));
    }
    let first20: Vec<Scope> = (0..20).map(|_| s.must_lease("w").scope).collect();
    let served_small = first20.iter().filter(|s| **s == small).count();
    assert_eq!(
        served_small, 10,
        "round-robin over the scopes that have ready work should give the small scope \
         every other lease; it got {served_small} of the first 20"
    );
}

#[test]
fn a_drained_scope_is_served_again_when_work_returns_and_a_delayed_one_at_its_run_at() {
    let s = TestStore::new();
    let (a, b) = (scope(1), scope(2));
    s.enqueue_with("embed", EnqueueOptions::default().scope(a));
    s.q.complete(&s.must_lease("w").token(), None).unwrap();
    // Scope a is drained (and no longer visited); a delayed job keeps b waiting.
    assert!(s
        .q
        .lease_next("w", &LeaseOptions::default())
        .unwrap()
        .is_none());
    let later = s.enqueue_with(
        "embed",
        EnqueueOptions::default()
            .scope(b)
            .delay(Duration::from_secs(5)),
    );
    assert!(s
        .q
        .lease_next("w", &LeaseOptions::default())
        .unwrap()
        .is_none());
    let again = s.enqueue_with("embed", EnqueueOptions::default().scope(a));
    assert_eq!(s.must_lease("w").id, again);
    s.clock.advance(Duration::from_secs(5));
    assert_eq!(s.must_lease("w").id, later);
    assert_consistent(&s.q);
}

#[test]
fn a_scoped_lease_takes_only_from_that_scope() {
    let s = TestStore::new();
    let a = s.enqueue_with("embed", EnqueueOptions::default().scope(scope(1)));
    let b = s.enqueue_with("embed", EnqueueOptions::default().scope(scope(2)));
    let nil = s.enqueue("embed");
    let only2 = LeaseOptions::default().scope(scope(2));
    let got = lease_with(&s, &only2).unwrap();
    assert_eq!((got.id, got.scope), (b, scope(2)));
    assert!(lease_with(&s, &only2).is_none());
    assert!(lease_with(&s, &LeaseOptions::default().scope(scope(9))).is_none());
    assert_eq!(s.get(&a).state, State::Pending);
    assert_eq!(s.get(&nil).state, State::Pending);
    let sys = lease_with(&s, &LeaseOptions::default().scope(Scope::SYSTEM)).unwrap();
    assert_eq!((sys.id, sys.scope), (nil, Scope::SYSTEM));
}

#[test]
fn system_kinds_live_only_in_the_nil_scope() {
    let s = TestStore::new();
    let e = expect_err(
        s.q.enqueue(
            "system:vacuum",
            b"",
            EnqueueOptions::default().scope(scope(1)),
        ),
        ErrorKind::InvalidArgument,
    );
    assert!(e.to_string().contains("system"), "{e}");
    assert_eq!(s.q.stats().unwrap().total.total(), 0);
    let a = s.enqueue("system:vacuum");
    let b = s.enqueue_with(
        "system:vacuum",
        EnqueueOptions::default().scope(Scope::SYSTEM),
    );
    assert_eq!(s.get(&a).scope, Scope::SYSTEM);
    assert_eq!(s.get(&b).scope, Scope::SYSTEM);
    // A non-system kind may use the nil scope too.
    s.enqueue("embed");
}
