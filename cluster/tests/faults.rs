//! The cluster under network faults: a leader cut off while its writes are
//! in flight (they answer `Unavailable`, its engine fences, retries through
//! the `ClusterQueue` resolve from the record), message loss, one-way and
//! hung links. Each ends with every replica checked and equal.

mod support;

use std::time::{Duration, Instant};

use support::workers::{enqueue_keyed, run_pollers};
use support::{options, TestCluster};
use telha_jobs::{EnqueueOptions, ErrorKind, LeaseOptions, State};
use telha_jobs_cluster::network::SplitMix64;

fn keyed(k: &str) -> EnqueueOptions {
    EnqueueOptions {
        idempotency_key: Some(k.to_string()),
        ..Default::default()
    }
}

#[test]
fn a_leader_cut_off_mid_batch_fences_and_retries_resolve_from_the_record() {
    let c = TestCluster::start(
        "a_leader_cut_off_mid_batch_fences_and_retries_resolve_from_the_record",
        3,
        options(),
    );
    let q = c.queue();
    let old = c.engine_leader(Duration::from_secs(5));
    let ids = enqueue_keyed(&q, "before", 20);
    let leased: Vec<_> = (0..10)
        .map(|_| {
            q.lease_next("w", &LeaseOptions::default())
                .unwrap()
                .unwrap()
        })
        .collect();
    let old_q = c.node(old).queue().unwrap();
    // Nothing the leader sends arrives: its entries reach no quorum. The
    // others elect, and their vote requests depose it.
    for &o in &c.ids {
        if o != old {
            c.router.cut(old, o);
        }
    }
    let cut_at = Instant::now();
    let in_flight: Vec<_> = leased
        .iter()
        .map(|job| {
            let (q, t) = (old_q.clone(), job.token());
            std::thread::spawn(move || q.complete(&t, None))
        })
        .chain((0..5).map(|i| {
            let q = old_q.clone();
            std::thread::spawn(move || {
                q.enqueue("work", b"late", keyed(&format!("late-{i}")))
                    .map(|_| ())
            })
        }))
        .collect();
    for t in in_flight {
        let err = t.join().unwrap().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
    }
    eprintln!(
        "in-flight writes answered Unavailable within {:?}",
        cut_at.elapsed()
    );
    assert!(
        !c.node(old).fences().is_empty(),
        "the old engine was not fenced"
    );
    eprintln!("fenced: {:?}", c.node(old).fences());
    assert_eq!(
        old_q.get(&ids[0]).unwrap_err().kind(),
        ErrorKind::Unavailable,
        "a fenced engine answers Unavailable"
    );
    let new = c.engine_leader(Duration::from_secs(10));
    assert_ne!(new, old);
    // Retried on the new leader: the completes find the leases (held
    // through the takeover grace); the enqueues were never committed (the
    // old leader's entries reached nobody), so they create their jobs now.
    for job in &leased {
        q.complete(&job.token(), None).unwrap();
    }
    for i in 0..5 {
        assert!(
            q.enqueue("work", b"late", keyed(&format!("late-{i}")))
                .unwrap()
                .created
        );
    }
    // A repeat of a settle that committed answers as the first did.
    q.complete(&leased[0].token(), None).unwrap();
    c.router.heal();
    for job in &leased {
        assert_eq!(q.get(&job.id).unwrap().unwrap().state, State::Completed);
    }
    let stats = q.read(|q| q.stats()).unwrap().total;
    assert_eq!((stats.get(State::Completed), stats.total()), (10, 25));
    c.assert_consistent();
}

#[test]
fn lossy_links_make_progress_without_divergence() {
    let c = TestCluster::start("lossy_links_make_progress_without_divergence", 3, options());
    // 10-30 % of messages lost, each direction, drawn from the seed.
    let rate = 0.1 + 0.2 * SplitMix64::new(c.router.seed()).next_f64();
    eprintln!("drop rate {rate:.2}");
    c.router.set_drop_rate(rate);
    c.router
        .set_delay(Duration::from_millis(0), Duration::from_millis(3));
    let q = c.queue();
    let ids = enqueue_keyed(&q, "lossy", 500);
    let ledger = run_pollers(&q, 4, ids.len() as u64, Duration::from_secs(60));
    ledger.assert_exactly_once(&ids);
    let s = c.router.stats();
    eprintln!("router: {s:?}; client retries {}", q.retries());
    assert!(s.dropped > 0);
    c.router.clear_faults();
    c.assert_consistent();
}

#[test]
fn a_hung_link_to_one_follower_leaves_the_quorum_writing() {
    let c = TestCluster::start(
        "a_hung_link_to_one_follower_leaves_the_quorum_writing",
        3,
        options(),
    );
    let leader = c.engine_leader(Duration::from_secs(5));
    let f = *c.ids.iter().find(|&&i| i != leader).unwrap();
    c.router.hang(leader, f);
    let q = c.queue();
    let ids = enqueue_keyed(&q, "hung", 200);
    assert!(c.router.stats().hung > 0);
    // The same engine served it all: a follower that hears nothing is
    // not a reason to fence.
    assert_eq!(c.engine_leader(Duration::from_secs(1)), leader);
    assert!(
        c.node(leader).fences().is_empty(),
        "{:?}",
        c.node(leader).fences()
    );
    c.router.heal();
    assert_eq!(
        q.read(|q| q.stats()).unwrap().total.total(),
        ids.len() as u64
    );
    c.assert_consistent();
}

#[test]
fn a_leader_whose_links_all_hang_is_fenced_and_replaced() {
    let c = TestCluster::start(
        "a_leader_whose_links_all_hang_is_fenced_and_replaced",
        3,
        options(),
    );
    let q = c.queue();
    enqueue_keyed(&q, "a", 50);
    let old = c.engine_leader(Duration::from_secs(5));
    for &o in &c.ids {
        if o != old {
            c.router.hang(old, o);
            c.router.hang(o, old);
        }
    }
    let ids = enqueue_keyed(&q, "b", 50);
    let new = c.engine_leader(Duration::from_secs(10));
    assert_ne!(new, old);
    assert!(!c.node(old).fences().is_empty());
    c.router.heal();
    assert_eq!(q.read(|q| q.stats()).unwrap().total.total(), 100);
    assert!(q.get(&ids[49]).unwrap().is_some());
    c.assert_consistent();
}

#[test]
fn a_leader_that_hears_no_acks_is_fenced_and_the_rest_elect() {
    let c = TestCluster::start(
        "a_leader_that_hears_no_acks_is_fenced_and_the_rest_elect",
        3,
        options(),
    );
    let q = c.queue();
    enqueue_keyed(&q, "a", 50);
    let old = c.engine_leader(Duration::from_secs(5));
    // One-way: the leader's messages arrive, nothing comes back. Its
    // heartbeats alone would keep the others from electing (0.9 has no
    // check-quorum), so the fenced leader must stop sending them.
    for &o in &c.ids {
        if o != old {
            c.router.cut(o, old);
        }
    }
    let ids = enqueue_keyed(&q, "b", 50);
    let new = c.engine_leader(Duration::from_secs(10));
    assert_ne!(new, old);
    assert!(!c.node(old).fences().is_empty());
    c.router.heal();
    assert_eq!(q.read(|q| q.stats()).unwrap().total.total(), 100);
    assert!(q.get(&ids[49]).unwrap().is_some());
    c.assert_consistent();
}

/// An unkeyed enqueue whose first attempt's outcome is unknown: the
/// leader hears no acks (so it fences and steps aside), yet its entry
/// reached both followers, which commit it once they elect. Through a
/// `ClusterQueue` with automatic keys (the default) the call is repeated
/// on the new leader with the key its first attempt carried and finds that
/// job: one job, answered `created`. Without them the same call is not
/// repeated (a repeat would enqueue twice): it answers `Unavailable`
/// although its job exists.
#[test]
fn an_unkeyed_enqueue_cut_off_mid_write_is_repeated_under_its_automatic_key_and_enqueued_once() {
    let c = TestCluster::start(
        "an_unkeyed_enqueue_cut_off_mid_write_is_repeated_under_its_automatic_key_and_enqueued_once",
        3,
        options(),
    );
    enqueue_keyed(&c.queue(), "a", 10);
    let total = |c: &TestCluster| c.queue().read(|q| q.stats()).unwrap().total.total();
    for auto in [false, true] {
        let q = c.queue().with_auto_keys(auto);
        let old = c.engine_leader(Duration::from_secs(10));
        let before = total(&c);
        let followers: Vec<u64> = c.ids.iter().copied().filter(|&o| o != old).collect();
        let last_index = |id: u64| c.node(id).metrics().last_log_index.unwrap_or(0);
        let index_before = last_index(old);
        for &o in &followers {
            c.router.cut(o, old);
        }
        let call = {
            let q = q.clone();
            std::thread::spawn(move || q.enqueue("once", b"x", EnqueueOptions::default()))
        };
        // The entry reaches both followers; their replies never return.
        let end = Instant::now() + Duration::from_secs(20);
        while !followers.iter().all(|&o| last_index(o) > index_before) {
            assert!(
                Instant::now() < end,
                "the entry never reached the followers"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        let res = call.join().unwrap();
        c.router.heal();
        c.engine_leader(Duration::from_secs(10));
        // Either way the first attempt's job exists, once.
        assert_eq!(total(&c), before + 1, "auto keys {auto}");
        if auto {
            let e = res.expect("repeated under its key");
            assert!(e.created, "the job is this call's");
            let info = q.get(&e.id).unwrap().expect("the job");
            assert_eq!(info.state, State::Pending);
            assert!(q.retries() > 0, "the call was repeated");
        } else {
            assert_eq!(res.unwrap_err().kind(), ErrorKind::Unavailable);
        }
    }
    c.assert_consistent();
}
