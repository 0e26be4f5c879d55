//! An in-process cluster for tests and `make bench-cluster`: N nodes,
//! each with its own directory under one temp dir, on one seeded
//! [`Router`]; crash and restart by id; nodes added and removed
//! (`members.rs`); the consistency checks every test ends with. Behind no
//! feature, so benches (which cannot see `tests/support`) use it too; it
//! names no dev-dependency.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use openraft::ServerState;
use telha_jobs::Config;

use crate::client::{ClusterQueue, Nodes};
use crate::network::{test_seed, Router};
use crate::node::{EmptyDir, Node, NodeOptions};

mod members;

/// A directory removed when dropped (no `tempfile` outside dev-dependencies).
struct TempDir(PathBuf);

impl TempDir {
    fn new_in(base: &Path, prefix: &str) -> TempDir {
        static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let p = base.join(format!("{prefix}-{}-{n}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One cluster at a time per test binary: three nodes plus clients
/// already fill two cores, and the tests' timing (600 ms without a quorum
/// ack fences) must not depend on what else runs.
static SERIAL: Mutex<()> = Mutex::new(());

pub struct TestCluster {
    pub router: Router,
    pub nodes: Nodes,
    pub opts: NodeOptions,
    pub ids: Vec<u64>,
    dir: TempDir,
    _serial: MutexGuard<'static, ()>,
}

/// The engine config of the tests: short leases so an orphan lease (a
/// lost reply) comes back within the test.
pub fn queue_config() -> Config {
    Config {
        lease_ttl: Duration::from_secs(3),
        reaper_interval: Duration::from_millis(100),
        ..Config::default()
    }
}

pub fn options() -> NodeOptions {
    NodeOptions {
        queue_config: queue_config(),
        ..NodeOptions::default()
    }
}

impl TestCluster {
    /// `n` nodes (ids 1..=n), initialized, with one leader's engine open.
    pub fn start(test: &str, n: u64, opts: NodeOptions) -> TestCluster {
        TestCluster::start_in(&std::env::temp_dir(), test, n, opts)
    }

    /// [`TestCluster::start`] with the nodes' directories under `base`.
    pub fn start_in(base: &Path, test: &str, n: u64, opts: NodeOptions) -> TestCluster {
        TestCluster::start_on(base, Router::new(test_seed(test)), n, opts)
    }

    /// [`TestCluster::start_in`] on `router` (whose nodes the caller
    /// serves over gRPC, say: `NodeOptions::grpc`).
    pub fn start_on(base: &Path, router: Router, n: u64, opts: NodeOptions) -> TestCluster {
        let serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
        let dir = TempDir::new_in(base, "telha-cluster");
        let nodes = Nodes::default();
        let ids: Vec<u64> = (1..=n).collect();
        // Every node new, one of them about to initialize the cluster.
        let initial = NodeOptions {
            empty_dir: EmptyDir::Initial,
            ..opts.clone()
        };
        for &id in &ids {
            let node = Node::start(
                id,
                &dir.path().join(id.to_string()),
                &router,
                initial.clone(),
            )
            .unwrap();
            nodes.insert(node);
        }
        nodes.get(1).unwrap().initialize(&ids).unwrap();
        let c = TestCluster {
            router,
            nodes,
            opts,
            ids,
            dir,
            _serial: serial,
        };
        c.engine_leader(Duration::from_secs(10));
        c
    }

    /// One node, 1, seeded from the plain store at `store`
    /// ([`Node::seed_from_store`]: the store is moved into node 1's
    /// directory), its engine open. Add nodes with [`TestCluster::start_node`].
    pub fn seed_from(test: &str, store: &Path, opts: NodeOptions) -> TestCluster {
        let serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
        let router = Router::new(test_seed(test));
        let dir = TempDir::new_in(&std::env::temp_dir(), "telha-cluster");
        let nodes = Nodes::default();
        let node = Node::seed_from_store(store, &dir.path().join("1"), &router, opts.clone())
            .unwrap_or_else(|e| panic!("{e}"));
        nodes.insert(node);
        let c = TestCluster {
            router,
            nodes,
            opts,
            ids: vec![1],
            dir,
            _serial: serial,
        };
        c.engine_leader(Duration::from_secs(10));
        c
    }

    /// Node `id`'s data directory.
    pub fn node_dir(&self, id: u64) -> PathBuf {
        self.dir.path().join(id.to_string())
    }

    /// Start node `id` (new or not) with `opts` instead of the cluster's.
    pub fn start_node(&self, id: u64, opts: NodeOptions) -> Result<(), crate::node::NodeError> {
        let node = Node::start(id, &self.node_dir(id), &self.router, opts)?;
        self.nodes.insert(node);
        Ok(())
    }

    pub fn node(&self, id: u64) -> Arc<Node> {
        self.nodes
            .get(id)
            .unwrap_or_else(|| panic!("node {id} is down"))
    }

    pub fn queue(&self) -> ClusterQueue {
        ClusterQueue::new(self.nodes.clone())
    }

    /// The node whose engine is open, waiting up to `within`.
    pub fn engine_leader(&self, within: Duration) -> u64 {
        let end = Instant::now() + within;
        loop {
            let open: Vec<u64> = self
                .nodes
                .all()
                .iter()
                .filter(|n| n.queue().is_ok())
                .map(|n| n.id())
                .collect();
            if open.len() == 1 {
                return open[0];
            }
            assert!(
                Instant::now() < end,
                "no single engine within {within:?}: open on {open:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The node that calls itself leader with a term above `above`.
    pub fn raft_leader(&self, above: u64, within: Duration) -> u64 {
        let end = Instant::now() + within;
        loop {
            let ls: Vec<u64> = self
                .nodes
                .all()
                .iter()
                .filter(|n| {
                    let m = n.metrics();
                    m.state == ServerState::Leader && m.current_term > above
                })
                .map(|n| n.id())
                .collect();
            if ls.len() == 1 {
                return ls[0];
            }
            assert!(
                Instant::now() < end,
                "no single leader above term {above}: {ls:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    pub fn term(&self, id: u64) -> u64 {
        self.node(id).metrics().current_term
    }

    /// Crash node `id`: dropped from the network and stopped; its
    /// directories stay.
    pub fn crash(&self, id: u64) {
        let n = self.nodes.remove(id).expect("node up");
        match Arc::try_unwrap(n) {
            Ok(n) => n.crash(),
            // A caller still holds it (a ClusterQueue mid-call): it stops
            // when the last handle goes; it is off the network already.
            Err(n) => self.router.unregister(n.id()),
        }
    }

    /// Start node `id` again from what its directories hold.
    pub fn restart(&self, id: u64) {
        let node = Node::start(
            id,
            &self.dir.path().join(id.to_string()),
            &self.router,
            self.opts.clone(),
        )
        .unwrap();
        self.nodes.insert(node);
    }

    /// Wait until every node up applied the same index, and it stays put
    /// (no write in flight); that index.
    pub fn quiesce(&self, within: Duration) -> u64 {
        let end = Instant::now() + within;
        let mut last = None;
        loop {
            let applied: Vec<Option<u64>> = self
                .nodes
                .all()
                .iter()
                .map(|n| {
                    let m = n.metrics();
                    m.last_applied
                        .map(|a| a.index)
                        .filter(|&a| Some(a) == m.last_log_index)
                })
                .collect();
            let same = applied.windows(2).all(|w| w[0] == w[1]);
            if same && applied[0].is_some() {
                if last == applied[0] {
                    return last.unwrap();
                }
                last = applied[0];
            } else {
                last = None;
            }
            assert!(
                Instant::now() < end,
                "nodes never agreed on an applied index: {applied:?}"
            );
            std::thread::sleep(Duration::from_millis(150));
        }
    }

    /// Every replica up: `check()` clean, and the same content digest at
    /// the same applied index. Retried while a write (a reaper pass) moves
    /// the index under the comparison.
    pub fn assert_consistent(&self) {
        for _ in 0..20 {
            let index = self.quiesce(Duration::from_secs(20));
            let digests: Vec<(u64, u64)> = self
                .nodes
                .all()
                .iter()
                .map(|n| (n.id(), n.store().unwrap().digest().unwrap()))
                .collect();
            if self.quiesce(Duration::from_secs(20)) != index {
                continue;
            }
            assert!(
                digests.windows(2).all(|w| w[0].1 == w[1].1),
                "replicas differ at applied index {index}: {digests:?}"
            );
            for n in self.nodes.all() {
                let r = n.store().unwrap().check(queue_config()).unwrap();
                assert_eq!(r.problems, Vec::<String>::new(), "node {}", n.id());
            }
            eprintln!(
                "consistent: {} replicas at applied index {index}, digest {:#x}",
                digests.len(),
                digests[0].1
            );
            return;
        }
        panic!("the applied index never held still");
    }
}
