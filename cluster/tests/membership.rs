//! Membership changes in an in-process cluster (issue 39, slice 3a): a
//! node joins a loaded cluster and is promoted; a learner joins by a
//! snapshot while the leader snapshots and purges (openraft #1706's
//! shape); a voter replaced under a new id, its old id refused after; the
//! leader removed (it steps down, the rest elect and go on); a change
//! interrupted between its joint and uniform steps left joint, then
//! finished; bad calls refused with typed errors, nothing changed.

mod support;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use openraft::ChangeMembers;
use support::{options, TestCluster};
use telha_jobs::{EnqueueOptions, JobId, LeaseOptions};
use telha_jobs_cluster::client::ClusterQueue;
use telha_jobs_cluster::network::SplitMix64;
use telha_jobs_cluster::node::{MembershipError, NodeOptions, Role};
use telha_jobs_cluster::snapshot::SnapshotPolicy;
use telha_jobs_cluster::PeerNode;

const WITHIN: Duration = Duration::from_secs(20);

fn keyed(k: String) -> EnqueueOptions {
    EnqueueOptions {
        idempotency_key: Some(k),
        ..Default::default()
    }
}

/// `n` keyed enqueues, one call each; half of them leased and completed.
fn write(q: &ClusterQueue, round: &str, n: usize) -> Vec<JobId> {
    let mut ids = Vec::new();
    for i in 0..n {
        let e = q.enqueue("a", b"x", keyed(format!("{round}-{i}"))).unwrap();
        ids.push(e.id);
    }
    let opts = LeaseOptions::default().kind("a").unwrap();
    for j in q.lease_many("w", n / 2, &opts).unwrap() {
        q.complete(&j.token(), None).unwrap();
    }
    ids
}

/// Writers through `q` until `stop`, each acknowledged job into `acked`.
fn writers<'s>(
    s: &'s std::thread::Scope<'s, '_>,
    q: &ClusterQueue,
    n: usize,
    stop: &'s AtomicBool,
    acked: &'s Mutex<Vec<JobId>>,
) {
    for w in 0..n {
        let q = q.clone();
        s.spawn(move || {
            let mut i = 0;
            while !stop.load(Ordering::Acquire) {
                let ids = write(&q, &format!("w{w}-{i}"), 10);
                acked.lock().unwrap().extend(ids);
                i += 1;
            }
        });
    }
}

fn wait_for(what: &str, within: Duration, mut ok: impl FnMut() -> bool) {
    let end = Instant::now() + within;
    while !ok() {
        assert!(Instant::now() < end, "{what}: not within {within:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn assert_present(q: &ClusterQueue, ids: &[JobId]) {
    for id in ids {
        let job = q.read(|q| q.get(id)).unwrap();
        assert!(job.is_some(), "acknowledged job {id} is missing");
    }
}

fn set(ids: &[u64]) -> BTreeSet<u64> {
    ids.iter().copied().collect()
}

#[test]
fn a_node_joins_a_loaded_cluster_catches_up_and_is_promoted() {
    let test = "a_node_joins_a_loaded_cluster_catches_up_and_is_promoted";
    let c = TestCluster::start(test, 3, options());
    let q = c.queue();
    let (stop, acked) = (AtomicBool::new(false), Mutex::new(Vec::new()));
    std::thread::scope(|s| {
        writers(s, &q, 2, &stop, &acked);
        wait_for("writes", WITHIN, || acked.lock().unwrap().len() >= 100);
        let p = c.join(4, WITHIN);
        assert!(p.caught_up && !p.by_snapshot, "{p:?}");
        let v = c.admin(WITHIN, |n| n.promote(&[4], WITHIN)).unwrap();
        assert_eq!((&v.voters, &v.learners), (&set(&[1, 2, 3, 4]), &set(&[])));
        assert!(!v.is_joint() && v.committed);
        let at = acked.lock().unwrap().len();
        wait_for("writes with 4 voters", WITHIN, || {
            acked.lock().unwrap().len() >= at + 100
        });
        stop.store(true, Ordering::Release);
    });
    let acked = acked.into_inner().unwrap();
    // Equal digests at one applied index on all four: the joiner holds
    // every acknowledged job.
    c.assert_consistent();
    assert_present(&q, &acked);
    eprintln!("{} jobs acknowledged across the join", acked.len());
}

#[test]
fn a_learner_installs_a_snapshot_while_the_leader_purges() {
    let test = "a_learner_installs_a_snapshot_while_the_leader_purges";
    let opts = NodeOptions {
        snapshots: SnapshotPolicy {
            entries: 30,
            bytes: 64 << 10,
            keep_log: 5,
        },
        ..options()
    };
    let c = TestCluster::start(test, 3, opts);
    let q = c.queue();
    let leader = c.engine_leader(WITHIN);
    let mut ids = Vec::new();
    let mut round = 0;
    wait_for("the leader's first purge", WITHIN, || {
        round += 1;
        ids.extend(write(&q, &format!("pre-{round}"), 20));
        c.node(leader).metrics().purged.is_some()
    });
    let purged_before = c.node(leader).metrics().purged.map(|p| p.index);
    let sent_before = c.router.stats().snapshots;
    let (stop, acked) = (AtomicBool::new(false), Mutex::new(ids));
    let mut rng = SplitMix64::new(c.router.seed());
    let mut forced = 0;
    std::thread::scope(|s| {
        writers(s, &q, 2, &stop, &acked);
        let joining = s.spawn(|| c.join(4, WITHIN));
        // The leader snapshots and purges as fast as it can while the
        // learner receives and installs.
        let l = c.node(leader);
        let purged = || l.metrics().purged.map(|p| p.index);
        let end = Instant::now() + WITHIN;
        while !joining.is_finished() || (purged() <= purged_before && Instant::now() < end) {
            let _ = l.block_on(l.raft().trigger().snapshot());
            let upto = l.metrics().last_applied.map_or(0, |a| a.index);
            let _ = l.block_on(l.raft().trigger().purge_log(upto));
            forced += 1;
            std::thread::sleep(Duration::from_millis(rng.between(2, 10)));
        }
        let p = joining.join().unwrap();
        assert!(p.caught_up && p.by_snapshot, "{p:?}");
        stop.store(true, Ordering::Release);
    });
    let acked = acked.into_inner().unwrap();
    let purged_after = c.node(leader).metrics().purged.map(|p| p.index);
    let installed = c.node(4).metrics().snapshot;
    assert!(
        purged_after > purged_before,
        "{purged_before:?} {purged_after:?}"
    );
    assert!(
        c.router.stats().snapshots > sent_before,
        "a snapshot was streamed"
    );
    assert!(installed.is_some(), "the learner installed a snapshot");
    c.assert_consistent();
    assert_present(&q, &acked);
    for n in c.nodes.all() {
        let m = n.metrics();
        assert!(m.running_state.is_ok(), "node {} stopped", n.id());
    }
    eprintln!(
        "learner 4 installed {installed:?}; leader purged {purged_before:?} -> {purged_after:?} \
         under {forced} forced snapshot+purge rounds; {} snapshots streamed; {} jobs",
        c.router.stats().snapshots - sent_before,
        acked.len()
    );
}

#[test]
fn a_voter_replaced_under_a_new_id_and_its_old_id_refused() {
    let test = "a_voter_replaced_under_a_new_id_and_its_old_id_refused";
    let c = TestCluster::start(test, 3, options());
    let q = c.queue();
    let (stop, acked) = (AtomicBool::new(false), Mutex::new(Vec::new()));
    std::thread::scope(|s| {
        writers(s, &q, 2, &stop, &acked);
        wait_for("writes", WITHIN, || acked.lock().unwrap().len() >= 100);
        c.start_joiner(4);
        let v = c
            .admin(WITHIN, |n| n.replace(3, 4, PeerNode::default(), WITHIN))
            .unwrap();
        assert_eq!((&v.voters, &v.learners), (&set(&[1, 2, 4]), &set(&[])));
        assert!(v.removed.contains(&3) && !v.is_joint(), "{v:?}");
        c.stop_node(3);
        let at = acked.lock().unwrap().len();
        wait_for("writes after the replace", WITHIN, || {
            acked.lock().unwrap().len() >= at + 100
        });
        stop.store(true, Ordering::Release);
    });
    let acked = acked.into_inner().unwrap();
    c.assert_consistent();
    assert_present(&q, &acked);
    // Every replica knows 3 was removed; its id is refused for good.
    for n in c.nodes.all() {
        assert!(
            n.membership().unwrap().removed.contains(&3),
            "node {}",
            n.id()
        );
    }
    let before = c.admin(WITHIN, |n| n.membership()).unwrap();
    let e = c.admin(WITHIN, |n| n.add_learner(3, PeerNode::default(), WITHIN));
    assert_eq!(e, Err(MembershipError::RemovedBefore { id: 3 }));
    let e = c.admin(WITHIN, |n| n.replace(1, 3, PeerNode::default(), WITHIN));
    assert_eq!(e, Err(MembershipError::RemovedBefore { id: 3 }));
    assert_eq!(
        c.admin(WITHIN, |n| n.membership()).unwrap().log_id,
        before.log_id
    );
}

#[test]
fn a_removed_leader_steps_down_and_the_rest_elect_and_go_on() {
    let test = "a_removed_leader_steps_down_and_the_rest_elect_and_go_on";
    let c = TestCluster::start(test, 3, options());
    let q = c.queue();
    let (stop, acked) = (AtomicBool::new(false), Mutex::new(Vec::new()));
    let mut removed = None;
    std::thread::scope(|s| {
        writers(s, &q, 2, &stop, &acked);
        wait_for("writes", WITHIN, || acked.lock().unwrap().len() >= 100);
        // Whichever node leads removes itself.
        let v = c.admin(WITHIN, |n| n.remove(&[n.id()], WITHIN)).unwrap();
        let old = v.node;
        let rest: Vec<u64> = c.ids.iter().copied().filter(|&i| i != old).collect();
        assert_eq!(v.voters, set(&rest));
        assert!(v.removed.contains(&old), "{v:?}");
        wait_for("the removed leader's step down", WITHIN, || {
            let m = c.node(old).metrics();
            m.state != openraft::ServerState::Leader && c.node(old).queue().is_err()
        });
        let new = c.engine_leader(WITHIN);
        assert!(rest.contains(&new), "new leader {new}");
        c.stop_node(old);
        let at = acked.lock().unwrap().len();
        wait_for("writes under the new leader", WITHIN, || {
            acked.lock().unwrap().len() >= at + 100
        });
        stop.store(true, Ordering::Release);
        removed = Some((old, rest));
    });
    let (old, rest) = removed.unwrap();
    let acked = acked.into_inner().unwrap();
    c.assert_consistent();
    assert_present(&q, &acked);
    for n in c.nodes.all() {
        let v = n.membership().unwrap();
        assert_eq!(v.voters, set(&rest), "node {}", n.id());
        assert!(v.removed.contains(&old), "node {}", n.id());
    }
    eprintln!("leader {old} removed; {} jobs acknowledged", acked.len());
}

/// The leader proposes a replace of itself by learner 4; its followers'
/// replies are cut, so the joint entry reaches them but never commits on
/// the leader, which crashes. The others elect under the joint
/// configuration and stay joint until `finish_joint`.
#[test]
fn an_interrupted_change_is_shown_joint_then_finished() {
    let test = "an_interrupted_change_is_shown_joint_then_finished";
    let c = TestCluster::start(test, 3, options());
    let q = c.queue();
    let mut ids = write(&q, "before", 20);
    let p = c.join(4, WITHIN);
    assert!(p.caught_up, "{p:?}");
    let old = c.engine_leader(WITHIN);
    let rest: Vec<u64> = c.ids.iter().copied().filter(|&i| i != old).collect();
    let target: BTreeSet<u64> = rest.iter().copied().chain([4]).collect();
    for &f in rest.iter().chain([&4]) {
        c.router.cut(f, old);
    }
    let raft = c.node(old).raft().clone();
    let goal = target.clone();
    let interrupted = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let change = raft.change_membership(ChangeMembers::ReplaceAllVoters(goal), false);
        rt.block_on(async { tokio::time::timeout(Duration::from_secs(10), change).await })
    });
    wait_for("the joint entry on the followers", WITHIN, || {
        rest.iter().all(|&f| {
            let m = c.node(f).metrics();
            m.membership_config.membership().get_joint_config().len() == 2
        })
    });
    let term = c.term(old);
    c.crash(old);
    c.router.heal();
    let res = interrupted.join().unwrap();
    assert!(
        !matches!(res, Ok(Ok(_))),
        "the change was interrupted: {res:?}"
    );
    let new = c.raft_leader(term, WITHIN);
    let mut v = c.admin(WITHIN, |n| n.membership()).unwrap();
    wait_for("the joint entry committed", WITHIN, || {
        v = c.node(new).membership().unwrap();
        v.committed
    });
    assert!(v.is_joint(), "{v:?}");
    assert_eq!(v.configs, vec![set(&[1, 2, 3]), target.clone()]);
    // Nothing but finishing it while joint.
    let e = c.admin(WITHIN, |n| n.remove(&[4], WITHIN));
    assert!(matches!(e, Err(MembershipError::Joint { .. })), "{e:?}");
    let e = c.admin(WITHIN, |n| n.add_learner(9, PeerNode::default(), WITHIN));
    assert!(matches!(e, Err(MembershipError::Joint { .. })), "{e:?}");
    let done = c.admin(WITHIN, |n| n.finish_joint(WITHIN)).unwrap();
    assert!(!done.is_joint() && done.committed, "{done:?}");
    assert_eq!(done.voters, target);
    assert!(done.removed.contains(&old), "{done:?}");
    // Finishing again changes nothing.
    let again = c.admin(WITHIN, |n| n.finish_joint(WITHIN)).unwrap();
    assert_eq!(again.log_id, done.log_id);
    ids.extend(write(&q, "after", 20));
    c.assert_consistent();
    assert_present(&q, &ids);
    eprintln!("joint {:?} finished as {:?}", v.configs, done.configs);
}

#[test]
fn bad_membership_calls_give_typed_errors_and_change_nothing() {
    let test = "bad_membership_calls_give_typed_errors_and_change_nothing";
    let c = TestCluster::start(test, 3, options());
    let l = c.engine_leader(WITHIN);
    let leader = c.node(l);
    let f: Vec<u64> = c.ids.iter().copied().filter(|&i| i != l).collect();
    let before = leader.membership().unwrap();
    let short = Duration::from_millis(300);
    use MembershipError as E;
    assert_eq!(
        c.node(f[0]).add_learner(5, PeerNode::default(), short),
        Err(E::NotLeader {
            node: f[0],
            leader: Some(l)
        })
    );
    assert_eq!(
        leader.remove(&[1, 2, 3], short),
        Err(E::NoVotersLeft {
            removing: set(&[1, 2, 3])
        })
    );
    assert_eq!(
        leader.remove(&f, short),
        Err(E::MajorityAtOnce {
            removing: set(&f),
            voters: set(&[1, 2, 3])
        })
    );
    assert_eq!(leader.promote(&[9], short), Err(E::UnknownNode { id: 9 }));
    assert_eq!(
        leader.promote(&[f[0]], short),
        Err(E::AlreadyVoter { id: f[0] })
    );
    assert_eq!(leader.promote(&[], short), Err(E::NoIds));
    assert_eq!(leader.remove(&[9], short), Err(E::UnknownNode { id: 9 }));
    assert_eq!(
        leader.add_learner(f[1], PeerNode::default(), short),
        Err(E::AlreadyMember {
            id: f[1],
            role: Role::Voter
        })
    );
    assert_eq!(
        leader.replace(f[0], f[0], PeerNode::default(), short),
        Err(E::SameId { id: f[0] })
    );
    assert_eq!(
        leader.replace(9, 5, PeerNode::default(), short),
        Err(E::UnknownNode { id: 9 })
    );
    for n in c.nodes.all() {
        assert_eq!(
            n.membership().unwrap().log_id,
            before.log_id,
            "node {}",
            n.id()
        );
    }
    // A learner that never starts: added, never caught up, not promoted,
    // not added twice; once removed, its id is refused.
    let p = leader.add_learner(4, PeerNode::default(), short).unwrap();
    assert!(!p.caught_up && p.matched.is_none(), "{p:?}");
    let e = leader.promote(&[4], short);
    assert!(
        matches!(e, Err(E::NotCaughtUp(ref p)) if p.id == 4),
        "{e:?}"
    );
    assert_eq!(
        leader.add_learner(4, PeerNode::default(), short),
        Err(E::AlreadyMember {
            id: 4,
            role: Role::Learner
        })
    );
    assert_eq!(
        leader.replace(4, 5, PeerNode::default(), short),
        Err(E::NotAVoter { id: 4 })
    );
    let v = leader.remove(&[4], WITHIN).unwrap();
    assert_eq!((v.voters, v.learners), (set(&[1, 2, 3]), set(&[])));
    assert_eq!(v.removed, set(&[4]));
    assert_eq!(
        leader.add_learner(4, PeerNode::default(), short),
        Err(E::RemovedBefore { id: 4 })
    );
    assert_eq!(
        leader.replace(f[0], 4, PeerNode::default(), short),
        Err(E::RemovedBefore { id: 4 })
    );
    drop(leader);
    c.assert_consistent();
}

/// A replace whose new node is not up yet stops at its deadline with the
/// voters unchanged (the new id a learner); called again once the node
/// runs, it resumes with that learner.
#[test]
fn a_replace_behind_at_its_deadline_changes_no_voter_and_resumes() {
    let test = "a_replace_behind_at_its_deadline_changes_no_voter_and_resumes";
    let c = TestCluster::start(test, 3, options());
    let q = c.queue();
    let mut ids = write(&q, "before", 20);
    let short = Duration::from_millis(300);
    let e = c.admin(WITHIN, |n| n.replace(3, 4, PeerNode::default(), short));
    assert!(
        matches!(e, Err(MembershipError::NotCaughtUp(ref p)) if p.id == 4),
        "{e:?}"
    );
    let v = c.admin(WITHIN, |n| n.membership()).unwrap();
    assert_eq!((&v.voters, &v.learners), (&set(&[1, 2, 3]), &set(&[4])));
    c.start_joiner(4);
    let v = c
        .admin(WITHIN, |n| n.replace(3, 4, PeerNode::default(), WITHIN))
        .unwrap();
    assert_eq!((&v.voters, &v.learners), (&set(&[1, 2, 4]), &set(&[])));
    c.stop_node(3);
    ids.extend(write(&q, "after", 20));
    c.assert_consistent();
    assert_present(&q, &ids);
}
