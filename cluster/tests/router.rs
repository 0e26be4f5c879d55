//! The in-memory router under faults, with bare openraft nodes (the real
//! log store, a counting state machine): elections, replication, and each
//! fault kind (loss, symmetric and one-way partitions, hung links, a down
//! node) doing what it says. The engine over the router is tested in the
//! node tests; this file proves the network alone.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use openraft::storage::RaftStateMachine;
use openraft::{
    EntryPayload, Raft, RaftSnapshotBuilder, ServerState, Snapshot, SnapshotMeta, StoredMembership,
};
use telha_jobs_cluster::network::{test_seed, Router};
use telha_jobs_cluster::{
    Entry, Epoch, LogId, LogStore, Payload, PeerNode, SnapshotDir, StorageError, TypeConfig,
    PAYLOAD_FORMAT,
};

/// The last applied id, the membership, and how many normal entries.
type Applied = (Option<LogId>, StoredMembership<u64, PeerNode>, u64);

/// Counts applied entries; enough to see replication, no store.
#[derive(Clone, Default)]
struct Counting {
    applied: Arc<Mutex<Applied>>,
}

impl RaftSnapshotBuilder<TypeConfig> for Counting {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError> {
        unreachable!("snapshot policy is Never")
    }
}

impl RaftStateMachine<TypeConfig> for Counting {
    type SnapshotBuilder = Counting;

    async fn applied_state(
        &mut self,
    ) -> Result<(Option<LogId>, StoredMembership<u64, PeerNode>), StorageError> {
        let a = self.applied.lock().unwrap();
        Ok((a.0, a.1.clone()))
    }

    async fn apply<I>(
        &mut self,
        entries: I,
    ) -> Result<Vec<telha_jobs_cluster::Applied>, StorageError>
    where
        I: IntoIterator<Item = Entry> + Send,
        I::IntoIter: Send,
    {
        let mut a = self.applied.lock().unwrap();
        let mut out = Vec::new();
        for e in entries {
            a.0 = Some(e.log_id);
            match e.payload {
                EntryPayload::Membership(m) => a.1 = StoredMembership::new(Some(e.log_id), m),
                EntryPayload::Normal(_) => a.2 += 1,
                EntryPayload::Blank => {}
            }
            out.push(telha_jobs_cluster::Applied::Written);
        }
        Ok(out)
    }

    async fn get_snapshot_builder(&mut self) -> Counting {
        self.clone()
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<SnapshotDir>, StorageError> {
        unreachable!("snapshot policy is Never")
    }

    async fn install_snapshot(
        &mut self,
        _: &SnapshotMeta<u64, PeerNode>,
        _: Box<SnapshotDir>,
    ) -> Result<(), StorageError> {
        unreachable!("snapshot policy is Never")
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<TypeConfig>>, StorageError> {
        Ok(None)
    }
}

struct Cluster {
    router: Router,
    rafts: BTreeMap<u64, Raft<TypeConfig>>,
    sms: BTreeMap<u64, Counting>,
    _dir: tempfile::TempDir,
}

const IDS: [u64; 3] = [1, 2, 3];

impl Cluster {
    async fn start(test: &str) -> Cluster {
        let router = Router::new(test_seed(test));
        let dir = tempfile::tempdir().unwrap();
        let cfg = Arc::new(
            openraft::Config {
                heartbeat_interval: 100,
                election_timeout_min: 300,
                election_timeout_max: 600,
                snapshot_policy: openraft::SnapshotPolicy::Never,
                ..Default::default()
            }
            .validate()
            .unwrap(),
        );
        let (mut rafts, mut sms) = (BTreeMap::new(), BTreeMap::new());
        for id in IDS {
            let log = LogStore::open(dir.path().join(format!("{id}/raft"))).unwrap();
            // A leader's own entries synced on the flusher, as in a Node.
            log.set_node(id);
            let sm = Counting::default();
            let raft = Raft::new(id, cfg.clone(), router.factory(id), log, sm.clone())
                .await
                .unwrap();
            router.register(id, raft.clone());
            rafts.insert(id, raft);
            sms.insert(id, sm);
        }
        let members: BTreeMap<u64, PeerNode> =
            IDS.iter().map(|&i| (i, PeerNode::default())).collect();
        rafts[&1].initialize(members).await.unwrap();
        Cluster {
            router,
            rafts,
            sms,
            _dir: dir,
        }
    }

    /// The one node that calls itself leader among `among`, with a term
    /// above `above`, within `within`.
    async fn leader(&self, among: &[u64], above: u64, within: Duration) -> u64 {
        let end = Instant::now() + within;
        loop {
            let ls: Vec<u64> = among
                .iter()
                .copied()
                .filter(|i| {
                    let m = self.rafts[i].metrics().borrow().clone();
                    m.state == ServerState::Leader && m.current_term > above
                })
                .collect();
            if ls.len() == 1 {
                return ls[0];
            }
            assert!(
                Instant::now() < end,
                "no single leader among {among:?} above term {above}: {ls:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn term(&self, id: u64) -> u64 {
        self.rafts[&id].metrics().borrow().current_term
    }

    fn normal_applied(&self, id: u64) -> u64 {
        self.sms[&id].applied.lock().unwrap().2
    }

    /// Write through whoever leads; retries on a leader change or loss.
    async fn write(&self, among: &[u64]) {
        for _ in 0..200 {
            let l = self.leader(among, 0, Duration::from_secs(10)).await;
            let p = Payload {
                format: PAYLOAD_FORMAT,
                cf_table_digest: 0,
                epoch: Epoch::Of(0),
                batches: vec![b"x".to_vec()],
            };
            match tokio::time::timeout(Duration::from_secs(2), self.rafts[&l].client_write(p)).await
            {
                Ok(Ok(_)) => return,
                _ => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
        panic!("no write committed in 200 tries");
    }

    async fn wait_applied(&self, id: u64, n: u64, within: Duration) {
        let end = Instant::now() + within;
        while self.normal_applied(id) < n {
            assert!(
                Instant::now() < end,
                "node {id} applied {} of {n}",
                self.normal_applied(id)
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn stop(self) {
        for r in self.rafts.values() {
            r.shutdown().await.unwrap();
        }
    }
}

fn others(of: u64) -> Vec<u64> {
    IDS.iter().copied().filter(|&i| i != of).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_elect_one_leader_and_replicate_to_all() {
    let c = Cluster::start("three_nodes_elect_one_leader_and_replicate_to_all").await;
    c.leader(&IDS, 0, Duration::from_secs(5)).await;
    for _ in 0..20 {
        c.write(&IDS).await;
    }
    for id in IDS {
        c.wait_applied(id, 20, Duration::from_secs(5)).await;
    }
    let s = c.router.stats();
    assert!(
        s.delivered > 0 && s.dropped == 0 && s.unreachable == 0,
        "{s:?}"
    );
    c.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_isolated_leader_is_replaced_and_catches_up_after_heal() {
    let c = Cluster::start("an_isolated_leader_is_replaced_and_catches_up_after_heal").await;
    let old = c.leader(&IDS, 0, Duration::from_secs(5)).await;
    c.write(&IDS).await;
    c.router.isolate(old, &IDS);
    let rest = others(old);
    let new = c.leader(&rest, c.term(old), Duration::from_secs(5)).await;
    assert_ne!(new, old);
    // 0.9 has no check-quorum: the isolated node still thinks it leads.
    assert_eq!(c.rafts[&old].metrics().borrow().state, ServerState::Leader);
    for _ in 0..5 {
        c.write(&rest).await;
    }
    assert!(c.router.stats().unreachable > 0);
    c.router.heal();
    c.wait_applied(old, 6, Duration::from_secs(5)).await;
    let end = Instant::now() + Duration::from_secs(5);
    while c.rafts[&old].metrics().borrow().state == ServerState::Leader {
        assert!(
            Instant::now() < end,
            "the healed old leader never stepped down"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    c.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_cut_one_way_from_its_followers_is_replaced() {
    let c = Cluster::start("a_leader_cut_one_way_from_its_followers_is_replaced").await;
    let old = c.leader(&IDS, 0, Duration::from_secs(5)).await;
    let term = c.term(old);
    // The leader's messages go nowhere; the others still reach it, so
    // their vote requests depose it.
    for o in others(old) {
        c.router.cut(old, o);
    }
    let new = c.leader(&others(old), term, Duration::from_secs(5)).await;
    for _ in 0..3 {
        c.write(&others(old)).await;
    }
    assert!(c.term(old) > term, "the old leader never saw the new term");
    assert_ne!(c.rafts[&old].metrics().borrow().state, ServerState::Leader);
    c.router.heal();
    c.wait_applied(old, 3, Duration::from_secs(5)).await;
    assert_eq!(c.leader(&IDS, 0, Duration::from_secs(5)).await, new);
    c.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hung_links_time_out_and_the_rest_commits() {
    let c = Cluster::start("hung_links_time_out_and_the_rest_commits").await;
    let l = c.leader(&IDS, 0, Duration::from_secs(5)).await;
    let [a, b] = others(l)[..] else {
        unreachable!()
    };
    c.router.hang(l, a);
    for _ in 0..10 {
        c.write(&IDS).await;
    }
    c.wait_applied(b, 10, Duration::from_secs(5)).await;
    assert_eq!(
        c.normal_applied(a),
        0,
        "nothing reaches {a} over a hung link"
    );
    let s = c.router.stats();
    assert!(s.hung > 0, "{s:?}");
    c.router.heal();
    c.wait_applied(a, 10, Duration::from_secs(5)).await;
    c.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lossy_delayed_links_still_commit_everything_everywhere() {
    let c = Cluster::start("lossy_delayed_links_still_commit_everything_everywhere").await;
    c.router.set_drop_rate(0.2);
    c.router
        .set_delay(Duration::from_millis(0), Duration::from_millis(5));
    for _ in 0..30 {
        c.write(&IDS).await;
    }
    for id in IDS {
        c.wait_applied(id, 30, Duration::from_secs(10)).await;
    }
    let s = c.router.stats();
    assert!(s.dropped > 0, "{s:?}");
    c.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_down_node_is_unreachable_and_catches_up_when_back() {
    let c = Cluster::start("a_down_node_is_unreachable_and_catches_up_when_back").await;
    let l = c.leader(&IDS, 0, Duration::from_secs(5)).await;
    let f = others(l)[0];
    c.router.unregister(f);
    for _ in 0..5 {
        c.write(&IDS).await;
    }
    assert!(c.router.stats().unreachable > 0);
    assert_eq!(c.normal_applied(f), 0);
    c.router.register(f, c.rafts[&f].clone());
    c.wait_applied(f, 5, Duration::from_secs(5)).await;
    c.stop().await;
}
