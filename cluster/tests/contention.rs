//! The contention test: 8 pollers through a `ClusterQueue` drain a queue
//! while the leader is crashed twice (two leader changes). No job is
//! leased to two workers under one generation, every job is completed
//! exactly once, and afterwards every replica passes `check()` with the
//! same digest at the same applied index.

mod support;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use support::workers::{enqueue_keyed, run_pollers};
use support::{options, TestCluster};
use telha_jobs::State;

fn contention(test: &str, jobs: usize) {
    let c = TestCluster::start(test, 3, options());
    let q = c.queue();
    let t = Instant::now();
    let ids = enqueue_keyed(&q, "c", jobs);
    eprintln!("enqueued {jobs} in {:?}", t.elapsed());
    let total = ids.len() as u64;
    let t = Instant::now();
    let ledger = std::thread::scope(|s| {
        let pollers = s.spawn(|| run_pollers(&q, 8, total, Duration::from_secs(600)));
        // Two leader changes, a third and two thirds of the way through.
        // The pollers' ledger is not visible until they end, so watch the
        // completed count on the leader.
        for k in 1..=2u64 {
            let mark = total * k / 3;
            loop {
                let done = q.read(|q| q.stats()).unwrap().total.get(State::Completed);
                if done >= mark || pollers.is_finished() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let old = c.engine_leader(Duration::from_secs(10));
            let at = Instant::now();
            c.crash(old);
            let new = c.engine_leader(Duration::from_secs(10));
            eprintln!(
                "leader change {k}: node {old} crashed, node {new} opened its engine after {:?}",
                at.elapsed()
            );
            c.restart(old);
        }
        pollers.join().unwrap()
    });
    let took = t.elapsed();
    eprintln!(
        "{total} jobs leased and completed by 8 pollers in {took:?} ({:.0} jobs/s) across 2 leader changes; client retries {}",
        total as f64 / took.as_secs_f64(),
        q.retries()
    );
    assert_eq!(ledger.done.load(Ordering::Acquire), total);
    ledger.assert_exactly_once(&ids);
    let counts = q.read(|q| q.stats()).unwrap().total;
    assert_eq!(
        (counts.get(State::Completed), counts.total()),
        (total, total)
    );
    c.assert_consistent();
}

#[test]
fn eight_pollers_complete_10k_jobs_exactly_once_across_two_leader_changes() {
    contention(
        "eight_pollers_complete_10k_jobs_exactly_once_across_two_leader_changes",
        10_000,
    );
}

#[test]
#[ignore = "long: make test-cluster-long"]
fn eight_pollers_complete_100k_jobs_exactly_once_across_two_leader_changes() {
    contention(
        "eight_pollers_complete_100k_jobs_exactly_once_across_two_leader_changes",
        100_000,
    );
}
