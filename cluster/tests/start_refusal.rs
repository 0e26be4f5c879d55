//! Who may start (issue 39): an empty data directory only with an intent,
//! a directory whose raft log is gone never, and a wiped member started as
//! a new joiner under its old id is refused by the cluster (the leader
//! carries on, no panic); the same node under a new id replaces it.

mod support;

use std::time::{Duration, Instant};

use support::{options, TestCluster};
use telha_jobs::EnqueueOptions;
use telha_jobs_cluster::node::{dir, EmptyDir, NodeOptions, StartRefused};
use telha_jobs_cluster::PeerNode;

fn wait_for(what: &str, within: Duration, mut ok: impl FnMut() -> bool) {
    let end = Instant::now() + within;
    while !ok() {
        assert!(Instant::now() < end, "{what}: not within {within:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn with(c: &TestCluster, empty_dir: EmptyDir) -> NodeOptions {
    NodeOptions {
        empty_dir,
        ..c.opts.clone()
    }
}

#[test]
fn an_empty_or_logless_data_dir_is_refused_at_start_with_a_typed_error() {
    let test = "an_empty_or_logless_data_dir_is_refused_at_start_with_a_typed_error";
    let c = TestCluster::start(test, 3, options());
    let q = c.queue();
    q.enqueue("a", b"x", EnqueueOptions::default()).unwrap();
    c.quiesce(Duration::from_secs(20));
    let leader = c.engine_leader(Duration::from_secs(10));
    let f = *c.ids.iter().rev().find(|&&i| i != leader).unwrap();
    c.crash(f);
    let d = c.node_dir(f);

    // Its log and vote gone, store and node.toml kept: refused, whatever
    // the intent.
    std::fs::remove_dir_all(d.join("raft")).unwrap();
    for intent in [EmptyDir::Refuse, EmptyDir::Initial, EmptyDir::Join] {
        let e = c.start_node(f, with(&c, intent)).expect_err("refused");
        assert!(e.to_string().contains("new id"), "{e}");
        let typed = dir::prepare(f, &d, intent).unwrap_err();
        assert!(
            matches!(typed, StartRefused::LogMissing { id, .. } if id == f),
            "{typed:?}"
        );
    }
    // Another node's directory.
    let typed = dir::prepare(f + 10, &d, EmptyDir::Refuse).unwrap_err();
    assert!(
        matches!(typed, StartRefused::OtherNode { found, .. } if found == f),
        "{typed:?}"
    );

    // Wiped whole: refused without an intent.
    std::fs::remove_dir_all(&d).unwrap();
    let e = c.start_node(f, c.opts.clone()).expect_err("refused");
    assert!(e.to_string().contains("is empty"), "{e}");
    let typed = dir::prepare(f, &d, EmptyDir::Refuse).unwrap_err();
    assert!(
        matches!(typed, StartRefused::EmptyDataDir { id, .. } if id == f),
        "{typed:?}"
    );
    assert!(dir::is_empty(&d), "a refused start leaves nothing behind");
    // The two left go on.
    q.enqueue("a", b"y", EnqueueOptions::default()).unwrap();
}

#[test]
fn a_wiped_member_joining_under_its_old_id_is_refused_and_a_new_id_replaces_it() {
    let test = "a_wiped_member_joining_under_its_old_id_is_refused_and_a_new_id_replaces_it";
    let mut c = TestCluster::start(test, 3, options());
    let q = c.queue();
    for i in 0..20u8 {
        q.enqueue("a", &[i], EnqueueOptions::default()).unwrap();
    }
    c.quiesce(Duration::from_secs(20));
    let leader = c.engine_leader(Duration::from_secs(10));
    let f = *c.ids.iter().rev().find(|&&i| i != leader).unwrap();
    c.crash(f);
    std::fs::remove_dir_all(c.node_dir(f)).unwrap();

    // Started as a new joiner under its old id: it starts, and refuses the
    // leader, whose configuration has it as a voter.
    c.start_node(f, with(&c, EmptyDir::Join)).unwrap();
    let n = c.node(f);
    wait_for("the refusal", Duration::from_secs(10), || {
        n.join_refused().is_some()
    });
    let why = n.join_refused().unwrap();
    assert!(
        matches!(why, StartRefused::WipedMember { id, leader: l } if id == f && l == leader),
        "{why:?}"
    );
    assert!(why.to_string().contains("new id"), "{why}");
    eprintln!("refused: {why}");
    // The cluster writes on with two of three; the leader never panicked.
    for i in 0..20u8 {
        q.enqueue("b", &[i], EnqueueOptions::default()).unwrap();
    }
    let lm = c.node(leader).metrics();
    assert!(lm.running_state.is_ok(), "{:?}", lm.running_state);
    let m = n.metrics();
    assert_eq!((m.last_log_index, m.snapshot), (None, None), "{m:?}");
    drop(n);
    c.crash(f);
    c.ids.retain(|&i| i != f);

    // Replaced under a new id: removed, the new node added as a learner,
    // promoted.
    let l = c.node(leader);
    let keep: Vec<u64> = c.ids.clone();
    l.block_on(l.raft().change_membership(keep.clone(), false))
        .unwrap();
    let new = 4;
    c.start_node(new, with(&c, EmptyDir::Join)).unwrap();
    let r = l
        .block_on(l.raft().add_learner(new, PeerNode::default(), true))
        .unwrap();
    let n4 = c.node(new);
    wait_for("the new node's catch-up", Duration::from_secs(30), || {
        n4.metrics().last_applied.is_some_and(|a| a >= r.log_id)
    });
    let mut voters = keep;
    voters.push(new);
    l.block_on(l.raft().change_membership(voters.clone(), false))
        .unwrap();
    c.ids.push(new);
    assert!(n4.join_refused().is_none());
    // Cleared by the gate at the first RPC after its log holds a
    // membership with it (a heartbeat at most later).
    let d = c.node_dir(new);
    wait_for(
        "joining cleared in node.toml",
        Duration::from_secs(5),
        || {
            let file = telha_jobs_cluster::node::NodeFile::read(new, &d);
            !file.unwrap().unwrap().joining
        },
    );
    drop((l, n4));
    q.enqueue("c", b"z", EnqueueOptions::default()).unwrap();
    c.assert_consistent();
    assert_eq!(q.read(|q| q.stats()).unwrap().total.total(), 41);
}
