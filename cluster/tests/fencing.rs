//! The fencing token (cargo feature `failpoints`, for the holds): a write
//! the next engine's recovery did not read must be applied nowhere after
//! it. Two paths, each forced rather than hoped for:
//! - a fenced engine's entry reaching Raft after the next engine opened:
//!   the old engine's `complete` is held in its proposer right after the
//!   fence check (where a real one can be preempted), the engine is fenced,
//!   the next engine opens and completes the same lease, and only then is
//!   the held entry let go — every replica skips it;
//! - a leader restarted into its own vote with entries of its previous
//!   incarnation not yet applied: its next engine opens after them.

#![cfg(feature = "failpoints")]

use std::time::{Duration, Instant};

use telha_jobs::{EnqueueOptions, ErrorKind, LeaseOptions, State};
use telha_jobs_cluster::failpoint::{self, HoldAt, Point};
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
        failpoint::release();
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
    failpoint::hold(HoldAt::Propose, node.dir(), 1);
    let _release = Release;
    let token = job.token();
    let late = {
        let old = old.clone();
        std::thread::spawn(move || old.complete(&token, Some(b"old")))
    };
    wait_until("the completion held", Duration::from_secs(10), || {
        failpoint::held(HoldAt::Propose) == 1
    });
    node.fence_engine("test: fenced with an entry past the proposer's check");
    wait_until("the next engine", Duration::from_secs(20), || {
        node.engines_opened() > opened && node.queue().is_ok()
    });
    // The next engine recovered the lease (the worker keeps its job) and
    // the worker completes it there.
    let new = node.queue().unwrap();
    new.complete(&token, Some(b"new")).unwrap();
    failpoint::release();

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
        let r = n
            .store()
            .unwrap()
            .check(telha_jobs_cluster::harness::queue_config());
        assert_eq!(r.unwrap().problems, Vec::<String>::new(), "node {}", n.id());
    }
}

/// openraft 0.9 restarts a node that led a committed vote as leader of
/// that vote, without a new blank entry: a leader crashed right after its
/// log flush and restarted at once (before a follower's election timeout)
/// comes back leading the same vote, its log holding an entry of its
/// previous incarnation not yet committed nor applied. Its next engine must
/// open only after that entry applied (its Open entry comes after it in
/// the log); opening on the recovered state before it, as an engine keyed
/// only on "an entry of this vote is applied" did, leaves the job with two
/// rows once the entry applies (the failpoint runs' symptom).
#[test]
fn a_leader_restarted_into_its_own_vote_opens_its_engine_after_its_earlier_entries() {
    let c = TestCluster::start(
        "a_leader_restarted_into_its_own_vote_opens_its_engine_after_its_earlier_entries",
        3,
        options(),
    );
    let leader = c.engine_leader(Duration::from_secs(20));
    let dir = c.node(leader).dir().to_path_buf();
    let (id, token, vote) = {
        let node = c.node(leader);
        let q = node.queue().unwrap();
        for i in 0..10u8 {
            q.enqueue("work", &[i], EnqueueOptions::default()).unwrap();
        }
        let job = q
            .lease_next("w1", &LeaseOptions::default())
            .unwrap()
            .expect("a job");
        let vote = node.metrics().vote;
        // The completion's entry is synced to the leader's log, then the
        // node stops as a killed process would: no append completes.
        let router = c.router.clone();
        failpoint::arm(Point::AfterLogFlush, node.dir(), 0, move || {
            router.unregister(leader)
        });
        let answer = q.complete(&job.token(), Some(b"old"));
        eprintln!("the completion before the crash answered: {answer:?}");
        assert!(failpoint::fired().is_some(), "the flush failpoint fired");
        (job.id, job.token(), vote)
    };
    c.crash(leader);
    // The restarted node's first apply (the entry its crash left
    // unapplied, or the first after it) waits a while: an engine keyed
    // only on "an entry of this vote is applied" opens in that time.
    failpoint::hold(HoldAt::Apply, &dir, 1);
    let _release = Release;
    c.restart(leader);
    std::thread::sleep(Duration::from_secs(1));
    failpoint::release();
    let now = c.engine_leader(Duration::from_secs(20));
    let resumed = now == leader && c.node(leader).metrics().vote == vote;
    eprintln!("after the restart node {now} leads; the crashed leader resumed its vote: {resumed}");
    let q = c.node(now).queue().unwrap();
    // The worker still holds its lease and completes the job again.
    let again = q.complete(&token, Some(b"new"));
    eprintln!("the completion after the restart answered: {again:?}");

    c.assert_consistent();
    let info = q.get(&id).unwrap().expect("the job");
    assert_eq!(info.state, State::Completed);
    let counts = q.stats().unwrap().total;
    assert_eq!(
        (counts.get(State::Completed), counts.total()),
        (1, 10),
        "counters"
    );
}
