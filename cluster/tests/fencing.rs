//! The fencing token (cargo feature `failpoints`, for the proposal hold):
//! an entry computed by an engine that was fenced, reaching Raft after the
//! entry that opened the next engine, must be applied nowhere — the next
//! engine recovered without it. The interleaving is forced, not hoped for:
//! the old engine's `complete` is held in its proposer right after the
//! fence check (where a real one can be preempted), the engine is fenced,
//! the next engine opens and completes the same lease, and only then is
//! the held entry let go.

#![cfg(feature = "failpoints")]

use std::time::{Duration, Instant};

use telha_jobs::{EnqueueOptions, ErrorKind, LeaseOptions, State};
use telha_jobs_cluster::failpoint;
use telha_jobs_cluster::harness::{options, TestCluster};

fn wait_until(what: &str, within: Duration, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + within;
    while !f() {
        assert!(Instant::now() < end, "{what}: not within {within:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Releases the hold when the test ends, failed or not (a held proposal
/// would keep its node from stopping).
struct Release;

impl Drop for Release {
    fn drop(&mut self) {
        failpoint::release_proposals();
    }
}

#[test]
fn an_entry_of_a_fenced_engine_proposed_after_the_next_engine_opened_is_applied_nowhere() {
    let c = TestCluster::start(
        "an_entry_of_a_fenced_engine_proposed_after_the_next_engine_opened_is_applied_nowhere",
        3,
        options(),
    );
    let leader = c.engine_leader(Duration::from_secs(20));
    let node = c.node(leader);
    let old = node.queue().unwrap();
    let id = old
        .enqueue("work", b"x", EnqueueOptions::default())
        .unwrap()
        .id;
    let job = old
        .lease_next("w1", &LeaseOptions::default())
        .unwrap()
        .expect("the job is ready");
    assert_eq!(job.id, id);
    let opened = node.engines_opened();
    let epoch_before = node.engine_epoch();

    // The old engine's completion passes the proposer's fence check and
    // waits there.
    failpoint::hold_proposals(node.dir(), 1);
    let _release = Release;
    let token = job.token();
    let late = {
        let old = old.clone();
        std::thread::spawn(move || old.complete(&token, Some(b"old")))
    };
    wait_until("the completion held", Duration::from_secs(10), || {
        failpoint::proposals_held() == 1
    });
    node.fence_engine("test: fenced with an entry past the proposer's check");
    wait_until("the next engine", Duration::from_secs(20), || {
        node.engines_opened() > opened && node.queue().is_ok()
    });
    // The next engine recovered the lease (the worker keeps its job) and
    // the worker completes it there.
    let new = node.queue().unwrap();
    new.complete(&token, Some(b"new")).unwrap();
    failpoint::release_proposals();

    let answer = late.join().unwrap();
    let err = answer.expect_err("the fenced engine's completion must not succeed");
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
    eprintln!("the fenced engine's completion answered: {err}");

    c.assert_consistent();
    // The held entry did reach the log after the next engine's epoch, and
    // every replica skipped it.
    let old_epoch = epoch_before.expect("an epoch");
    let new_epoch = node.engine_epoch().expect("an epoch");
    assert!(new_epoch > old_epoch, "epochs {old_epoch} then {new_epoch}");
    for n in c.nodes.all() {
        assert_eq!(n.entries_skipped(), 1, "node {} skipped", n.id());
    }
    let info = new.get(&id).unwrap().expect("the job");
    assert_eq!(info.state, State::Completed);
    assert_eq!(info.result.as_deref(), Some(&b"new"[..]));
    let counts = new.stats().unwrap().total;
    assert_eq!(
        (counts.get(State::Completed), counts.total()),
        (1, 1),
        "counters"
    );
    // Every replica holds what the next engine wrote, not the fenced one's
    // entry (digests are equal, so one node's rows stand for all).
    for n in c.nodes.all() {
        let r = n.store().check(telha_jobs_cluster::harness::queue_config());
        assert_eq!(r.unwrap().problems, Vec::<String>::new(), "node {}", n.id());
    }
}
