//! The consensus layer's floor: three bare openraft nodes (each on its own
//! 2-thread runtime, as a `Node`), the real fsynced `LogStore` with group
//! commit, the in-memory router, and a state machine that applies nothing.
//! One client writes entries of given sizes one at a time.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use openraft::storage::RaftStateMachine;
use openraft::{Raft, RaftSnapshotBuilder, ServerState, Snapshot, SnapshotMeta, StoredMembership};
use telha_jobs_cluster::network::Router;
use telha_jobs_cluster::{
    Applied, Entry, Epoch, LogId, LogStore, Payload, PeerNode, SnapshotDir, StorageError,
    TypeConfig, PAYLOAD_FORMAT,
};

type State = (Option<LogId>, StoredMembership<u64, PeerNode>);

/// Records the applied id and membership; writes nothing anywhere.
#[derive(Clone)]
pub struct NoOp(Arc<Mutex<State>>, u64);

impl RaftSnapshotBuilder<TypeConfig> for NoOp {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError> {
        unreachable!("snapshot policy is Never")
    }
}

impl RaftStateMachine<TypeConfig> for NoOp {
    type SnapshotBuilder = NoOp;

    async fn applied_state(&mut self) -> Result<State, StorageError> {
        Ok(self.0.lock().unwrap().clone())
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<Applied>, StorageError>
    where
        I: IntoIterator<Item = Entry> + Send,
        I::IntoIter: Send,
    {
        let mut s = self.0.lock().unwrap();
        let mut out = Vec::new();
        for e in entries {
            let now = Instant::now();
            telha_jobs_cluster::probe::mark(
                telha_jobs_cluster::probe::Stage::ApplyStart,
                self.1,
                e.log_id.index,
                now,
            );
            s.0 = Some(e.log_id);
            if let openraft::EntryPayload::Membership(m) = e.payload {
                s.1 = StoredMembership::new(Some(e.log_id), m);
            }
            out.push(Applied::Written);
        }
        Ok(out)
    }

    async fn get_snapshot_builder(&mut self) -> NoOp {
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

pub struct Bare {
    rts: BTreeMap<u64, tokio::runtime::Runtime>,
    rafts: BTreeMap<u64, Raft<TypeConfig>>,
    _router: Router,
}

impl Bare {
    /// Three nodes under `dir` with the node's timing, a leader elected.
    pub fn start(dir: &std::path::Path) -> Bare {
        let router = Router::new(38);
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
        let (mut rts, mut rafts) = (BTreeMap::new(), BTreeMap::new());
        for id in [1u64, 2, 3] {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name(format!("bare-raft-{id}"))
                .enable_all()
                .build()
                .unwrap();
            let log = LogStore::open(dir.join(format!("{id}/raft"))).unwrap();
            log.set_probe_node(id);
            log.set_node(id);
            let raft = rt
                .block_on(Raft::new(
                    id,
                    cfg.clone(),
                    router.factory(id),
                    log,
                    NoOp(Arc::default(), id),
                ))
                .unwrap();
            router.register(id, raft.clone());
            rts.insert(id, rt);
            rafts.insert(id, raft);
        }
        let members: BTreeMap<u64, PeerNode> = [1, 2, 3]
            .iter()
            .map(|&i| (i, PeerNode::default()))
            .collect();
        rts[&1].block_on(rafts[&1].initialize(members)).unwrap();
        let b = Bare {
            rts,
            rafts,
            _router: router,
        };
        let end = Instant::now() + Duration::from_secs(10);
        while b.leader().is_none() {
            assert!(Instant::now() < end, "no leader among the bare nodes");
            std::thread::sleep(Duration::from_millis(20));
        }
        b
    }

    pub fn leader(&self) -> Option<u64> {
        self.rafts
            .iter()
            .find_map(|(&id, r)| (r.metrics().borrow().state == ServerState::Leader).then_some(id))
    }

    /// One write of `bytes` batch bytes through the leader, answered after
    /// the leader's (no-op) apply; its latency.
    pub fn write(&self, leader: u64, bytes: usize) -> Duration {
        let p = Payload {
            format: PAYLOAD_FORMAT,
            cf_table_digest: 0,
            epoch: Epoch::Of(0),
            batches: vec![vec![7u8; bytes]],
        };
        let t = Instant::now();
        self.rts[&leader]
            .block_on(self.rafts[&leader].client_write(p))
            .expect("bare write");
        t.elapsed()
    }

    pub fn stop(self) {
        for (id, r) in &self.rafts {
            let _ = self.rts[id].block_on(r.shutdown());
        }
    }
}
