//! Nodes with the real state machine over `ReplicaStore`s: one engine on
//! the elected leader, jobs replicated to every store, failover to a new
//! leader's engine that finds every acknowledged job, a follower that
//! catches up from the log after a restart.

mod support;

use std::time::Duration;

use support::{options, TestCluster};
use telha_jobs::{EnqueueOptions, JobId, LeaseOptions, State};

fn keyed(k: &str) -> EnqueueOptions {
    EnqueueOptions {
        idempotency_key: Some(k.to_string()),
        ..Default::default()
    }
}

#[test]
fn three_nodes_run_one_engine_and_replicate_every_write_to_every_store() {
    let c = TestCluster::start(
        "three_nodes_run_one_engine_and_replicate_every_write_to_every_store",
        3,
        options(),
    );
    let leader = c.engine_leader(Duration::from_secs(5));
    let q = c.queue();
    let mut ids = Vec::new();
    for i in 0..200 {
        ids.push(
            q.enqueue("email", b"hi", keyed(&format!("k{i}")))
                .unwrap()
                .id,
        );
    }
    // A keyed repeat answers the first job, creates none.
    let again = q.enqueue("email", b"hi", keyed("k7")).unwrap();
    assert_eq!((again.id, again.created), (ids[7], false));
    for _ in 0..50 {
        let job = q
            .lease_next("w", &LeaseOptions::default())
            .unwrap()
            .unwrap();
        q.complete(&job.token(), None).unwrap();
    }
    c.assert_consistent();
    for n in c.nodes.all() {
        let want = u64::from(n.id() == leader);
        assert_eq!(n.engines_opened(), want, "node {}", n.id());
        if n.id() != leader {
            let e = n.queue().unwrap_err();
            assert_eq!(e.leader, Some(leader));
        }
    }
}

/// Crash the leader three times; each time a new leader's engine
/// acknowledges a write and every job acknowledged so far is there. How
/// long failover takes is measured by `make bench-cluster` (20 rounds, p50
/// and max), not asserted here: no timed assertions in tests.
#[test]
fn jobs_acknowledged_before_leader_crashes_are_on_the_new_leader() {
    let c = TestCluster::start(
        "jobs_acknowledged_before_leader_crashes_are_on_the_new_leader",
        3,
        options(),
    );
    let q = c.queue();
    let mut acked: Vec<JobId> = Vec::new();
    for round in 0..3 {
        for i in 0..20 {
            let k = format!("r{round}-{i}");
            acked.push(q.enqueue("k", b"x", keyed(&k)).unwrap().id);
        }
        let old = c.engine_leader(Duration::from_secs(10));
        c.crash(old);
        let id = q
            .enqueue("k", b"x", keyed(&format!("r{round}-after")))
            .unwrap()
            .id;
        acked.push(id);
        let new = c.engine_leader(Duration::from_secs(10));
        assert_ne!(new, old);
        eprintln!("round {round}: node {old} crashed, node {new} acknowledged a write");
        c.restart(old);
        c.quiesce(Duration::from_secs(20));
    }
    for id in &acked {
        let info = q
            .get(id)
            .unwrap()
            .unwrap_or_else(|| panic!("acknowledged job {id} lost"));
        assert_eq!(info.state, State::Pending);
    }
    c.assert_consistent();
}

#[test]
fn a_follower_restarted_behind_the_leader_catches_up_from_the_log() {
    let c = TestCluster::start(
        "a_follower_restarted_behind_the_leader_catches_up_from_the_log",
        3,
        options(),
    );
    let leader = c.engine_leader(Duration::from_secs(5));
    let follower = *c.ids.iter().find(|&&i| i != leader).unwrap();
    let q = c.queue();
    for i in 0..50 {
        q.enqueue("k", b"x", keyed(&format!("a{i}"))).unwrap();
    }
    let behind_at = c.quiesce(Duration::from_secs(10));
    c.crash(follower);
    for i in 0..300 {
        q.enqueue("k", b"x", keyed(&format!("b{i}"))).unwrap();
    }
    c.restart(follower);
    let caught_up = c.quiesce(Duration::from_secs(20));
    assert!(caught_up > behind_at, "{behind_at} -> {caught_up}");
    assert_eq!(c.node(follower).engines_opened(), 0);
    c.assert_consistent();
}
