//! Flow control by job key (issue 43): `key:*` caps exact under
//! contention against an outside ledger, `ordered` keys leased in enqueue
//! order one at a time (a retried failure holding its key), the rules and
//! key sets kept through a reopen, and bad input refused.

#[path = "common/mod.rs"]
mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use common::*;
use telha_jobs::{
    EnqueueOptions, ErrorKind, JobId, LeaseOptions, Limit, LimitTarget, ListQuery, NewJob, Scope,
};

fn keyed(k: &str) -> EnqueueOptions {
    EnqueueOptions::default().key(k)
}

#[test]
fn each_key_cap_holds_exactly_under_contention() {
    let s = TestStore::new();
    s.q.set_limit(&LimitTarget::EachKey, Limit::concurrency(2))
        .unwrap();
    // 50,000 jobs in 1,000 keys: runs of 10 jobs of one key, each key's
    // five runs spread over the backlog (so pollers meet a key's jobs
    // side by side, and a key would go over its cap without the limit).
    let jobs: Vec<NewJob> = (0..50_000)
        .map(|i| {
            let k = format!("k{}", (i / 10) % 1000);
            NewJob::new("embed", b"x".to_vec()).with(keyed(&k))
        })
        .collect();
    for chunk in jobs.chunks(10_000) {
        s.q.enqueue_many(chunk.to_vec()).unwrap();
    }
    let ledger: Mutex<HashMap<String, u32>> = Mutex::new(HashMap::new());
    let violations: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let max = AtomicUsize::new(0);
    let overlap = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    std::thread::scope(|t| {
        for w in 0..8 {
            let (q, ledger, violations, max, overlap, done) =
                (&s.q, &ledger, &violations, &max, &overlap, &done);
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
                        let k = job.key.clone().expect("a keyed job");
                        let mut l = ledger.lock().unwrap();
                        let n = l.entry(k.clone()).or_default();
                        *n += 1;
                        let n = *n;
                        max.fetch_max(n as usize, Ordering::Relaxed);
                        let busy = l.values().filter(|v| **v > 0).count();
                        overlap.fetch_max(busy, Ordering::Relaxed);
                        if n > 2 {
                            violations
                                .lock()
                                .unwrap()
                                .push(format!("{n} leased of key {k}"));
                        }
                    }
                    let t0 = std::time::Instant::now();
                    while t0.elapsed() < Duration::from_micros(30) {
                        std::hint::spin_loop();
                    }
                    for job in &jobs {
                        // Settle: the ledger forgets it first, then the queue.
                        *ledger
                            .lock()
                            .unwrap()
                            .get_mut(job.key.as_ref().unwrap())
                            .unwrap() -= 1;
                        q.complete(&job.token(), None).unwrap();
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    let v = violations.lock().unwrap();
    assert!(
        v.is_empty(),
        "{} violations, first {:?}",
        v.len(),
        v.first()
    );
    assert_eq!(done.load(Ordering::Relaxed), 50_000);
    assert_eq!(max.load(Ordering::Relaxed), 2, "the key cap was reached");
    assert!(overlap.load(Ordering::Relaxed) > 2, "many keys ran at once");
    assert_eq!(s.q.stats().unwrap().total.completed, 50_000);
    let limits = s.q.limits().unwrap();
    assert!(limits.iter().all(|l| l.leased == 0), "{limits:?}");
    assert_consistent(&s.q);
}

#[test]
fn ordered_keys_lease_in_enqueue_order_one_at_a_time() {
    let mut s = TestStore::new();
    s.q.set_limit(&LimitTarget::EachKey, Limit::ordered())
        .unwrap();
    // Key "a": five jobs, the third at a more urgent priority (it still
    // waits for its turn); key "b" runs beside it.
    let mut a: Vec<JobId> = Vec::new();
    for i in 0..5u8 {
        let o = keyed("a").priority(if i == 2 { 0 } else { 128 });
        a.push(s.enqueue_with("work", o));
    }
    let b1 = s.enqueue_with("work", keyed("b"));
    let plain = s.enqueue("work");
    let opts = LeaseOptions::default();
    let first = s.q.lease_many("w", 10, &opts).unwrap();
    let mut ids: Vec<JobId> = first.iter().map(|j| j.id).collect();
    ids.sort();
    let mut want = vec![a[0], b1, plain];
    want.sort();
    assert_eq!(
        ids, want,
        "one per ordered key, the oldest; the plain job too"
    );
    assert!(s.lease("w").is_none(), "a's next waits for a[0]");
    let a0 = first.iter().find(|j| j.id == a[0]).unwrap();
    // A retryable failure holds the key until the job ends.
    s.q.fail(&a0.token(), "boom", true).unwrap();
    assert!(s.lease("w").is_none(), "a[0] is retrying: its key is held");
    s.advance(Duration::from_secs(3600));
    let again = s.must_lease("w");
    assert_eq!(again.id, a[0], "the retried job goes first");
    s.q.complete(&again.token(), None).unwrap();
    // Reopen: the rule and the key's jobs come back.
    s.reopen();
    assert_consistent(&s.q);
    for want in &a[1..] {
        let j = s.must_lease("w");
        assert_eq!(j.id, *want, "in enqueue order");
        assert_eq!(j.key.as_deref(), Some("a"));
        assert!(s.lease("w").is_none(), "never two of one key at once");
        s.q.complete(&j.token(), None).unwrap();
    }
    assert_eq!(s.get(&a[4]).key.as_deref(), Some("a"));
    assert_consistent(&s.q);
}

#[test]
fn a_key_cap_frees_with_settles_and_cancels_and_survives_reopen() {
    let mut s = TestStore::new();
    let t = LimitTarget::Key("cust-1".into());
    s.q.set_limit(&t, Limit::concurrency(1)).unwrap();
    let ids: Vec<JobId> = (0..4)
        .map(|_| s.enqueue_with("k", keyed("cust-1")))
        .collect();
    let other = s.enqueue_with("k", keyed("cust-2"));
    let j1 = s.must_lease("w");
    let j2 = s.must_lease("w");
    assert_eq!((j1.id, j2.id), (ids[0], other));
    assert!(s.lease("w").is_none(), "cust-1 is at its cap");
    // A parked job cancelled meanwhile is skipped when its key frees.
    s.q.cancel(&ids[1], "no longer needed").unwrap();
    s.reopen();
    assert!(
        s.lease("w").is_none(),
        "the lease held over the reopen counts"
    );
    let l = s.q.limits().unwrap();
    assert_eq!(l.len(), 1);
    assert_eq!(l[0].leased, 1);
    s.q.complete(&j1.token(), None).unwrap();
    let j3 = s.must_lease("w");
    assert_eq!(j3.id, ids[2]);
    s.q.remove_limit(&t).unwrap();
    let j4 = s.must_lease("w");
    assert_eq!(j4.id, ids[3], "without the limit the key runs freely");
    assert_consistent(&s.q);
}

#[test]
fn bad_keys_and_bad_ordered_limits_are_refused_and_nothing_is_written() {
    let s = TestStore::new();
    for bad in [String::new(), "k".repeat(129), "a\nb".into()] {
        let e = expect_err(
            s.q.enqueue("k", b"", keyed(&bad)),
            ErrorKind::InvalidArgument,
        );
        assert!(e.to_string().contains("key"), "{e}");
    }
    assert_eq!(s.q.stats().unwrap().total.pending, 0, "nothing written");
    s.enqueue_with("k", keyed(&"k".repeat(128)));
    let two = Limit {
        concurrency: Some(2),
        ..Limit::ordered()
    };
    expect_err(
        s.q.set_limit(&LimitTarget::EachKey, two),
        ErrorKind::InvalidArgument,
    );
    expect_err(
        s.q.set_limit(&LimitTarget::Kind("k".parse().unwrap()), Limit::ordered()),
        ErrorKind::InvalidArgument,
    );
    assert!(s.q.limits().unwrap().is_empty());
    expect_err("key:".parse::<LimitTarget>(), ErrorKind::InvalidArgument);
}

#[test]
fn list_by_key_pages_the_keys_unfinished_jobs_in_every_scope() {
    let s = TestStore::new();
    let (a, b) = (Scope::from_bytes([1; 16]), Scope::from_bytes([2; 16]));
    let mut want = Vec::new();
    // Other keys (shorter, longer, same length) on both sides of "cust-7".
    for (scope, key) in [
        (b, "cust-7"),
        (a, "aa"),
        (a, "cust-7"),
        (a, "cust-70"),
        (b, "cust-8"),
        (a, "cust-7"),
        (b, "zz"),
        (b, "cust-7"),
    ] {
        let id = s.enqueue_with("k", keyed(key).scope(scope));
        if key == "cust-7" {
            want.push((scope, id));
        }
    }
    s.enqueue_with("k", EnqueueOptions::default());
    // Scope order, then enqueue order within a scope.
    want.sort();
    let ids = |q: ListQuery| -> (Vec<JobId>, Option<String>) {
        let p = s.q.list(&q).unwrap();
        assert!(p.corrupt.is_empty());
        (p.jobs.iter().map(|j| j.id).collect(), p.next)
    };
    let all: Vec<JobId> = want.iter().map(|w| w.1).collect();
    let key = |k: &str| ListQuery {
        key: Some(k.into()),
        ..ListQuery::default()
    };
    assert_eq!(ids(key("cust-7")).0, all);
    let only_b = ListQuery {
        scope: Some(b),
        ..key("cust-7")
    };
    assert_eq!(ids(only_b).0, all[2..].to_vec());
    // One a page, across the scopes.
    let mut q = ListQuery {
        limit: 1,
        ..key("cust-7")
    };
    let mut paged = Vec::new();
    loop {
        let (got, next) = ids(q.clone());
        paged.extend(got);
        match next {
            Some(n) => q.after = Some(n),
            None => break,
        }
    }
    assert_eq!(paged, all);
    // A leased job is still unfinished; a completed one leaves the index.
    let j =
        s.q.lease_next("w", &LeaseOptions::default().scope(a))
            .unwrap()
            .unwrap();
    let leased = ListQuery {
        state: Some(telha_jobs::State::Leased),
        ..key(j.key.as_deref().unwrap())
    };
    assert_eq!(ids(leased.clone()).0, vec![j.id]);
    s.q.complete(&j.token(), None).unwrap();
    assert!(ids(leased).0.is_empty());
    // Bad input: a finished state, a tag beside it, a bad key or cursor.
    for bad in [
        ListQuery {
            state: Some(telha_jobs::State::Completed),
            ..key("cust-7")
        },
        ListQuery {
            tag: Some("t".into()),
            ..key("cust-7")
        },
        key(""),
        ListQuery {
            after: Some("zz".into()),
            ..key("cust-7")
        },
    ] {
        let e = s.q.list(&bad).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{bad:?}: {e}");
    }
    assert_consistent(&s.q);
}
