//! An existing single store made node 1 of a new cluster
//! (`Node::seed_from_store`, issue 39): jobs in every state survive the
//! move, two learners join by snapshot and are promoted (openraft's own
//! calls, driven here), all three end equal and `check()`-clean, and the
//! store's old path is refused as a store.

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use support::{options, TestCluster};
use telha_jobs::{Config, EnqueueOptions, ErrorKind, JobId, LeaseOptions, Queue, State};
use telha_jobs_cluster::node::{EmptyDir, NodeFile, NodeOptions};
use telha_jobs_cluster::PeerNode;

/// What a job looked like in the plain store.
type Seen = BTreeMap<JobId, (State, Option<Vec<u8>>)>;

/// A plain store with jobs pending, leased, scheduled, dead and completed
/// with results.
fn plain_store(path: &Path) -> Seen {
    let cfg = Config {
        lease_ttl: Duration::from_secs(3600),
        ..Config::default()
    };
    let q = Queue::open(path, cfg).unwrap();
    let enqueue = |kind: &str, n: usize, opts: EnqueueOptions| -> Vec<JobId> {
        (0..n)
            .map(|i| q.enqueue(kind, &[i as u8], opts.clone()).unwrap().id)
            .collect()
    };
    enqueue("pending", 10, EnqueueOptions::default());
    enqueue("leased", 5, EnqueueOptions::default());
    let later = EnqueueOptions {
        delay: Some(Duration::from_secs(3600)),
        ..Default::default()
    };
    enqueue("scheduled", 5, later);
    let once = EnqueueOptions {
        max_attempts: Some(1),
        ..Default::default()
    };
    enqueue("dead", 5, once);
    enqueue("done", 5, EnqueueOptions::default());
    enqueue("failed", 5, EnqueueOptions::default());
    let lease = |kind: &str| LeaseOptions::default().kind(kind).unwrap();
    let _held = q.lease_many("w", 5, &lease("leased")).unwrap();
    for j in q.lease_many("w", 5, &lease("dead")).unwrap() {
        q.fail(&j.token(), "no", false).unwrap();
    }
    for j in q.lease_many("w", 5, &lease("failed")).unwrap() {
        q.fail(&j.token(), "again", true).unwrap();
    }
    for (i, j) in q
        .lease_many("w", 5, &lease("done"))
        .unwrap()
        .into_iter()
        .enumerate()
    {
        q.complete(&j.token(), Some(format!("result {i}").as_bytes()))
            .unwrap();
    }
    let mut seen = Seen::new();
    let mut after = None;
    loop {
        let page = q
            .list(&telha_jobs::ListQuery {
                after: after.clone(),
                limit: 100,
                ..Default::default()
            })
            .unwrap();
        for j in &page.jobs {
            seen.insert(j.id, (j.state, j.result.clone()));
        }
        match page.next {
            Some(n) => after = Some(n),
            None => break,
        }
    }
    q.close();
    seen
}

fn wait_for(what: &str, within: Duration, mut ok: impl FnMut() -> bool) {
    let end = Instant::now() + within;
    while !ok() {
        assert!(Instant::now() < end, "{what}: not within {within:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Add `id` as a learner on the leader and wait until it applied the
/// membership entry that added it (openraft's `blocking` waits only for a
/// lag under `replication_lag_threshold`, which an empty learner meets).
fn add_learner(c: &TestCluster, id: u64) {
    let l = c.node(c.engine_leader(Duration::from_secs(10)));
    let r = l
        .block_on(l.raft().add_learner(id, PeerNode::default(), true))
        .unwrap();
    let n = c.node(id);
    wait_for("the learner's catch-up", Duration::from_secs(30), || {
        n.metrics().last_applied.is_some_and(|a| a >= r.log_id)
    });
}

#[test]
fn a_plain_store_becomes_node_1_and_two_learners_join_it_by_snapshot() {
    let test = "a_plain_store_becomes_node_1_and_two_learners_join_it_by_snapshot";
    let root = tempfile::tempdir().unwrap();
    let store = root.path().join("plain");
    let seen = plain_store(&store);
    assert_eq!(seen.len(), 35);
    // Scheduled jobs are pending with a later ready-at (checked below: not
    // leasable after the seed either).
    let states: std::collections::BTreeSet<State> = seen.values().map(|s| s.0).collect();
    assert_eq!(
        states.len(),
        5,
        "pending, leased, failed, dead, completed: {states:?}"
    );

    let mut c = TestCluster::seed_from(test, &store, options());
    // The old path is no store any more, and says where it went.
    let e = Queue::open(&store, Config::default()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::UnsupportedFormat, "{e}");
    assert!(
        e.to_string().contains("moved to") && e.to_string().contains("node 1"),
        "{e}"
    );
    let file = NodeFile::read(1, &c.node_dir(1)).unwrap().unwrap();
    assert!(
        file.cluster_id.is_some() && file.seeding_from.is_none(),
        "{file:?}"
    );
    let m = c.node(1).metrics();
    let snap = m.snapshot.expect("the seed's snapshot");
    assert!(m.purged.is_some_and(|p| p.index >= snap.index), "{m:?}");
    eprintln!("seeded: snapshot {snap}, purged {:?}", m.purged);

    let q = c.queue();
    let check = |q: &telha_jobs_cluster::client::ClusterQueue| {
        for (id, (state, result)) in &seen {
            let j = q.read(|q| q.get(id)).unwrap().expect("job present");
            assert_eq!((&j.state, &j.result), (state, result), "job {id}");
        }
    };
    check(&q);

    let join = NodeOptions {
        empty_dir: EmptyDir::Join,
        ..c.opts.clone()
    };
    for id in [2, 3] {
        c.start_node(id, join.clone()).unwrap();
        add_learner(&c, id);
        let m = c.node(id).metrics();
        assert!(
            m.snapshot.is_some(),
            "learner {id} joined by snapshot: {m:?}"
        );
        c.ids.push(id);
    }
    assert!(c.router.stats().snapshots >= 2, "{:?}", c.router.stats());
    let l = c.node(c.engine_leader(Duration::from_secs(10)));
    l.block_on(l.raft().change_membership([1, 2, 3], false))
        .unwrap();
    wait_for("three voters", Duration::from_secs(10), || {
        c.nodes.all().iter().all(|n| {
            n.metrics()
                .membership_config
                .membership()
                .voter_ids()
                .count()
                == 3
        })
    });
    // Writes after the join reach all three.
    let opts = LeaseOptions::default().kind("pending").unwrap();
    for j in q.lease_many("w2", 3, &opts).unwrap() {
        q.complete(&j.token(), None).unwrap();
    }
    q.enqueue("after", b"x", EnqueueOptions::default()).unwrap();
    c.assert_consistent();
    for n in c.nodes.all() {
        let stats = n.store().unwrap().digest().unwrap();
        eprintln!("node {} digest {stats:#x}", n.id());
    }
    // The jobs not touched since are as they were in the plain store.
    let seen_pending = seen
        .iter()
        .filter(|(_, s)| s.0 != State::Pending)
        .map(|(id, s)| (*id, s.clone()));
    for (id, (state, result)) in seen_pending {
        let j = q.read(|q| q.get(&id)).unwrap().expect("job present");
        assert_eq!((j.state, j.result), (state, result), "job {id}");
    }
    let total = q.read(|q| q.stats()).unwrap().total.total();
    assert_eq!(total, 36);
    let later = LeaseOptions::default().kind("scheduled").unwrap();
    assert!(q.lease_many("w3", 5, &later).unwrap().is_empty());
}

#[test]
fn a_seed_refuses_a_store_in_use_and_a_directory_in_use() {
    let root = tempfile::tempdir().unwrap();
    let store = root.path().join("plain");
    let q = Queue::open(&store, Config::default()).unwrap();
    q.enqueue("a", b"x", EnqueueOptions::default()).unwrap();
    let router = telha_jobs_cluster::network::Router::new(1);
    let dir = root.path().join("node");
    let e = telha_jobs_cluster::node::Node::seed_from_store(&store, &dir, &router, options())
        .err()
        .expect("refused while open");
    assert!(
        e.to_string().contains("locked") || e.to_string().contains("in use"),
        "{e}"
    );
    q.close();
    std::fs::create_dir_all(dir.join("x")).unwrap();
    let e = telha_jobs_cluster::node::Node::seed_from_store(&store, &dir, &router, options())
        .err()
        .expect("refused: directory not empty");
    assert!(e.to_string().contains("not empty"), "{e}");
    // Nothing moved: the store opens as before.
    let q = Queue::open(&store, Config::default()).unwrap();
    assert_eq!(q.stats().unwrap().total.total(), 1);
}
