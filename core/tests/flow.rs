//! Flow control (issue 20): caps exact under contention against an outside
//! ledger, a rate limit on the injectable clock, weighted fairness over
//! large backlogs, and follow-up jobs committed with their parent.

#[path = "common/mod.rs"]
mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use common::*;
use telha_jobs::{
    Completion, EnqueueOptions, ErrorKind, JobId, LeaseOptions, Limit, LimitTarget, ListQuery,
    NewJob, Scope, State,
};

fn scope(n: u16) -> Scope {
    let mut b = [0u8; 16];
    b[0] = 0x01;
    b[14..].copy_from_slice(&n.to_be_bytes());
    Scope::from_bytes(b)
}

fn kind(k: &str) -> LimitTarget {
    LimitTarget::Kind(k.parse().unwrap())
}

fn enqueue_in(s: &TestStore, k: &str, sc: Scope, n: usize) {
    let jobs: Vec<NewJob> = (0..n)
        .map(|_| {
            NewJob::new(k, b"x".to_vec()).with(EnqueueOptions {
                scope: Some(sc),
                ..EnqueueOptions::default()
            })
        })
        .collect();
    for chunk in jobs.chunks(10_000) {
        s.q.enqueue_many(chunk.to_vec()).unwrap();
    }
}

/// What is leased now, by scope and by kind, as the workers saw it.
#[derive(Default)]
struct Ledger {
    now: Mutex<(HashMap<Scope, u32>, HashMap<String, u32>)>,
    max: Mutex<(u32, u32)>,
    violations: Mutex<Vec<String>>,
}

#[test]
fn caps_hold_exactly_under_contention() {
    let s = TestStore::new();
    s.q.set_limit(&LimitTarget::EachScope, Limit::concurrency(2))
        .unwrap();
    s.q.set_limit(&kind("embed"), Limit::concurrency(10))
        .unwrap();
    // 50,000 jobs in 20 scopes, two kinds: only "embed" has the kind cap.
    for i in 0..20u16 {
        enqueue_in(&s, "embed", scope(i), 1500);
        enqueue_in(&s, "ingest", scope(i), 1000);
    }
    let ledger = Ledger::default();
    let done = AtomicUsize::new(0);
    let completions: Mutex<HashMap<JobId, u32>> = Mutex::new(HashMap::new());
    std::thread::scope(|t| {
        for w in 0..8 {
            let (q, ledger, done, completions) = (&s.q, &ledger, &done, &completions);
            t.spawn(move || {
                let worker = format!("w{w}");
                let opts = LeaseOptions::default();
                let mut idle = 0;
                while idle < 200 {
                    let jobs = q.lease_many(&worker, 3, &opts).unwrap();
                    if jobs.is_empty() {
                        idle += 1;
                        std::thread::yield_now();
                        continue;
                    }
                    idle = 0;
                    for job in &jobs {
                        let mut n = ledger.now.lock().unwrap();
                        let sc = n.0.entry(job.scope).or_default();
                        *sc += 1;
                        let sc = *sc;
                        let kd = n.1.entry(job.kind.clone()).or_default();
                        *kd += 1;
                        let kd = *kd;
                        let mut m = ledger.max.lock().unwrap();
                        m.0 = m.0.max(sc);
                        if job.kind == "embed" {
                            m.1 = m.1.max(kd);
                        }
                        if sc > 2 || (job.kind == "embed" && kd > 10) {
                            ledger.violations.lock().unwrap().push(format!(
                                "{sc} leased in scope {} and {kd} of {}",
                                job.scope, job.kind
                            ));
                        }
                    }
                    // The handler's work, so leases overlap.
                    let t = std::time::Instant::now();
                    while t.elapsed() < Duration::from_micros(30) {
                        std::hint::spin_loop();
                    }
                    for job in &jobs {
                        {
                            // Settle: the ledger forgets it first, then the queue.
                            let mut n = ledger.now.lock().unwrap();
                            *n.0.get_mut(&job.scope).unwrap() -= 1;
                            *n.1.get_mut(&job.kind).unwrap() -= 1;
                        }
                        q.complete(&job.token(), None).unwrap();
                        *completions.lock().unwrap().entry(job.id).or_default() += 1;
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    let v = ledger.violations.lock().unwrap();
    assert!(
        v.is_empty(),
        "{} violations, first {:?}",
        v.len(),
        v.first()
    );
    assert_eq!(done.load(Ordering::Relaxed), 50_000);
    let c = completions.lock().unwrap();
    assert_eq!(c.len(), 50_000);
    assert!(c.values().all(|n| *n == 1));
    let m = ledger.max.lock().unwrap();
    assert_eq!(m.0, 2, "the scope cap was reached, not only kept");
    assert!(m.1 > 2, "leases of many scopes overlapped: {m:?}");
    let st = s.q.stats().unwrap();
    assert_eq!(st.total.completed, 50_000);
    let limits = s.q.limits().unwrap();
    assert!(limits.iter().all(|l| l.leased == 0), "{limits:?}");
    assert!(
        limits.iter().all(|l| l.throttled_concurrency > 0),
        "{limits:?}"
    );
    assert_consistent(&s.q);
}

#[test]
fn a_rate_limit_leases_at_its_rate_on_the_clock() {
    let s = TestStore::new();
    s.q.set_limit(&kind("embed"), Limit::rate(50.0, 10))
        .unwrap();
    for _ in 0..1000 {
        s.enqueue("embed");
    }
    s.enqueue("other");
    let start = s.now();
    let drain = |s: &TestStore| {
        let mut n = 0;
        while s
            .q
            .lease_next("w", &LeaseOptions::default().kind("embed").unwrap())
            .unwrap()
            .is_some()
        {
            n += 1;
        }
        n
    };
    assert_eq!(drain(&s), 10, "the burst goes at once");
    assert!(
        s.lease("w").is_some_and(|j| j.kind == "other"),
        "other kinds are not held"
    );
    let mut leased = 10;
    let mut steps = 0;
    while leased < 1000 {
        s.advance(Duration::from_millis(20));
        steps += 1;
        let got = drain(&s);
        assert_eq!(got, 1, "one token every 20 ms (step {steps})");
        leased += got;
    }
    // 990 more at 50/s: 19.8 s of the clock.
    assert_eq!(s.now() - start, 19_800);
    let l = &s.q.limits().unwrap()[0];
    assert_eq!(l.leased, 1000, "every lease is still held");
    assert!(l.throttled_rate >= 990);
}

#[test]
fn a_waiting_poller_sleeps_until_the_next_token() {
    let s = TestStore::new();
    s.q.set_limit(&kind("embed"), Limit::rate(1.0, 1)).unwrap();
    s.enqueue("embed");
    s.enqueue("embed");
    assert!(s.lease("w").is_some());
    // The clock does not move: a wait must not spin (it sleeps until the
    // token is due by the clock) and answers nothing.
    let opts = LeaseOptions {
        wait: Some(Duration::from_millis(300)),
        ..LeaseOptions::default()
    };
    let t = std::time::Instant::now();
    assert!(s.q.lease_next("w", &opts).unwrap().is_none());
    assert!(t.elapsed() >= Duration::from_millis(290));
    s.advance(Duration::from_secs(1));
    assert!(s.q.lease_next("w", &opts).unwrap().is_some());
}

#[test]
fn weights_split_leases_in_proportion() {
    let s = TestStore::new();
    let (a, b, c) = (scope(1), scope(2), scope(3));
    for (sc, w) in [(a, 1), (b, 2), (c, 3)] {
        s.q.set_limit(&LimitTarget::Scope(sc), Limit::weight(w))
            .unwrap();
        enqueue_in(&s, "embed", sc, 100_000);
    }
    let mut got: HashMap<Scope, u64> = HashMap::new();
    for _ in 0..60_000 {
        let j = s.must_lease("w");
        *got.entry(j.scope).or_default() += 1;
    }
    for (sc, share) in [(a, 1.0), (b, 2.0), (c, 3.0)] {
        let want = 60_000.0 * share / 6.0;
        let n = got[&sc] as f64;
        assert!(
            (n - want).abs() / want <= 0.02,
            "scope {sc}: {n} leases, want {want}"
        );
    }
    // Batches keep the proportion too.
    let mut got: HashMap<Scope, u64> = HashMap::new();
    for _ in 0..100 {
        for j in s.q.lease_many("w", 60, &LeaseOptions::default()).unwrap() {
            *got.entry(j.scope).or_default() += 1;
        }
    }
    assert_eq!((got[&a], got[&b], got[&c]), (1000, 2000, 3000));
}

#[test]
fn a_small_scope_is_served_within_one_round_beside_a_huge_backlog() {
    let s = TestStore::new();
    let (big, small) = (scope(7), scope(8));
    enqueue_in(&s, "embed", big, 1_000_000);
    for _ in 0..10 {
        assert_eq!(s.must_lease("w").scope, big);
    }
    s.enqueue_with(
        "embed",
        EnqueueOptions {
            scope: Some(small),
            ..EnqueueOptions::default()
        },
    );
    let next: Vec<Scope> = (0..2).map(|_| s.must_lease("w").scope).collect();
    assert!(next.contains(&small), "{next:?}");
}

#[test]
fn a_capped_scope_leaves_the_active_set_and_comes_back_on_settle() {
    let s = TestStore::new();
    let (a, b) = (scope(1), scope(2));
    s.q.set_limit(&LimitTarget::Scope(a), Limit::concurrency(1))
        .unwrap();
    enqueue_in(&s, "embed", a, 3);
    enqueue_in(&s, "embed", b, 3);
    let first =
        s.q.lease_next("w", &LeaseOptions::default().scope(a))
            .unwrap()
            .unwrap();
    assert!(s
        .q
        .lease_next("w", &LeaseOptions::default().scope(a))
        .unwrap()
        .is_none());
    let rest: Vec<_> = (0..3).map(|_| s.must_lease("w")).collect();
    assert!(rest.iter().all(|j| j.scope == b));
    assert!(s.lease("w").is_none());
    // The settle frees the slot; the reaper's expiry does too.
    s.q.complete(&first.token(), None).unwrap();
    let again = s.must_lease("w");
    assert_eq!(again.scope, a);
    s.advance(Duration::from_secs(301));
    assert_eq!(s.q.reap().unwrap().expired, 4);
    assert_eq!(s.must_lease("w").scope, a);
    assert_consistent(&s.q);
}

#[test]
fn limits_survive_a_reopen_and_count_recovered_leases() {
    let mut s = TestStore::new();
    let t = LimitTarget::ScopeKind(scope(1), "embed".parse().unwrap());
    enqueue_in(&s, "embed", scope(1), 5);
    let _held: Vec<_> = (0..3).map(|_| s.must_lease("w")).collect();
    s.q.set_limit(&t, Limit::concurrency(3)).unwrap();
    assert!(s.lease("w").is_none(), "a cap counts the leases that exist");
    s.reopen();
    let l = s.q.limits().unwrap();
    assert_eq!((l.len(), l[0].leased, l[0].held), (1, 3, 1));
    assert!(s.lease("w").is_none());
    s.q.set_limit(&t, Limit::concurrency(4)).unwrap();
    assert!(s.lease("w").is_some());
    assert!(s.q.remove_limit(&t).unwrap());
    assert!(!s.q.remove_limit(&t).unwrap());
    assert!(s.lease("w").is_some());
    assert!(s.q.limits().unwrap().is_empty());
    expect_err(
        s.q.set_limit(&kind("embed"), Limit::weight(2)),
        ErrorKind::InvalidArgument,
    );
    assert_consistent(&s.q);
}

#[test]
fn follow_ups_exist_only_when_their_parent_completes() {
    let s = TestStore::new();
    let p = s.enqueue("ingest");
    let job = s.must_lease("w");
    let child = |k: &str| NewJob::new(k, b"c".to_vec());
    // A bad follow-up refuses the whole completion.
    let bad = Completion::new(job.token(), None).then(vec![child("embed"), child("BAD")]);
    expect_err(s.q.complete_with(bad), ErrorKind::InvalidArgument);
    assert_eq!(s.get(&p).state, State::Leased);
    let ok = Completion::new(job.token(), None).then(vec![child("embed"), child("cascade")]);
    s.q.complete_with(ok.clone()).unwrap();
    let kids =
        s.q.list(&ListQuery {
            parent: Some(p),
            ..ListQuery::default()
        })
        .unwrap()
        .jobs;
    assert_eq!(kids.len(), 2);
    assert!(kids
        .iter()
        .all(|k| k.parent == Some(p) && k.state == State::Pending));
    assert!(s.transitions(&kids[0].id).contains(&"enqueued".to_string()));
    // A repeated completion (a retry) answers as the first, and changes
    // and enqueues nothing.
    s.q.complete_with(ok).unwrap();
    assert_eq!(s.q.stats().unwrap().total.pending, 2);
    // A cancel request turns the completion into a cancel: no children.
    let q2 = s.enqueue("solo");
    let j2 =
        s.q.lease_next("w", &LeaseOptions::default().kind("solo").unwrap())
            .unwrap()
            .unwrap();
    s.q.cancel(&q2, "stop").unwrap();
    let c = Completion::new(j2.token(), None).then(vec![child("embed")]);
    expect_err(s.q.complete_with(c), ErrorKind::Cancelled);
    let none =
        s.q.list(&ListQuery {
            parent: Some(q2),
            ..ListQuery::default()
        })
        .unwrap();
    assert!(none.jobs.is_empty());
    assert_consistent(&s.q);
}

#[test]
fn complete_many_commits_each_items_follow_ups_with_it() {
    let s = TestStore::new();
    let a = s.enqueue("ingest");
    let b = s.enqueue("ingest");
    let (ja, jb) = (s.must_lease("w"), s.must_lease("w"));
    let keyed = NewJob::new("embed", b"k".to_vec()).with(EnqueueOptions {
        idempotency_key: Some("once".into()),
        ..EnqueueOptions::default()
    });
    let out =
        s.q.complete_many(vec![
            Completion::new(ja.token(), None)
                .then(vec![keyed.clone(), NewJob::new("embed", b"a".to_vec())]),
            Completion::new(jb.token(), None).then(vec![keyed, NewJob::new("BAD", b"".to_vec())]),
        ])
        .unwrap()
        .into_iter();
    let mut out = out;
    assert!(out.next().unwrap().is_ok());
    expect_err(out.next().unwrap(), ErrorKind::InvalidArgument);
    assert_eq!(s.get(&a).state, State::Completed);
    assert_eq!(
        s.get(&b).state,
        State::Leased,
        "a refused item changes nothing"
    );
    let kids =
        s.q.list(&ListQuery {
            parent: Some(a),
            ..ListQuery::default()
        })
        .unwrap()
        .jobs;
    assert_eq!(kids.len(), 2);
    // The idempotency key names the job the first parent created.
    let c = Completion::new(jb.token(), None).then(vec![NewJob::new("embed", b"k".to_vec()).with(
        EnqueueOptions {
            idempotency_key: Some("once".into()),
            ..EnqueueOptions::default()
        },
    )]);
    s.q.complete_with(c).unwrap();
    let kids_b =
        s.q.list(&ListQuery {
            parent: Some(b),
            ..ListQuery::default()
        })
        .unwrap()
        .jobs;
    assert!(kids_b.is_empty(), "the key's job exists: none is created");
    assert_consistent(&s.q);
}
