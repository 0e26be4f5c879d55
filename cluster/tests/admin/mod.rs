//! Nodes served over gRPC with the `Admin` service beside the `Raft`
//! `PeerService`, each on its own tonic server (its own runtime) on a
//! loopback port, as `telha serve --cluster` will mount them.

#![allow(dead_code)] // each test file uses its own part

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use telha_jobs_cluster::harness::options;
use telha_jobs_cluster::network::{test_seed, Router};
use telha_jobs_cluster::node::{EmptyDir, Node, NodeOptions};
use telha_jobs_cluster::transport::wire::admin_server::AdminServer;
use telha_jobs_cluster::transport::wire::raft_server::RaftServer;
use telha_jobs_cluster::transport::{
    AdminClient, AdminError, AdminService, GrpcNetwork, GrpcOptions, PeerService,
};
use tonic::body::Body;
use tonic::codegen::http::{Request, Response};
use tonic::codegen::{BoxFuture, Service};
use tonic::server::NamedService;

pub const PEER_TOKEN: &str = "peer-s3cret";
pub const CLIENT_TOKEN: &str = "client-s3cret";
pub const WITHIN: Duration = Duration::from_secs(15);

/// One cluster at a time in this binary: three nodes fill two cores.
static SERIAL: Mutex<()> = Mutex::new(());

pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

fn server_rt(id: u64) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name(format!("admin-server-{id}"))
        .enable_all()
        .build()
        .unwrap()
}

/// A runtime for the test's client calls.
pub fn client_rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// The `Admin` and (optionally) `Raft` services on one listener, routed
/// by path, as `telha serve --cluster` mounts them beside `Jobs`
/// (tonic's own router is not built here).
#[derive(Clone)]
struct Both {
    admin: AdminServer<AdminService>,
    peer: Option<RaftServer<PeerService>>,
}

impl NamedService for Both {
    const NAME: &'static str = "telha.cluster.v1.Admin";
}

impl Service<Request<Body>> for Both {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Response<Body>, Infallible>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        match &mut self.peer {
            Some(p) if req.uri().path().starts_with("/telha.cluster.v1.Raft/") => {
                Box::pin(p.call(req))
            }
            _ => Box::pin(self.admin.call(req)),
        }
    }
}

/// Serve the services on `l` from `rt`.
fn serve(
    rt: &tokio::runtime::Runtime,
    l: tokio::net::TcpListener,
    peer: Option<PeerService>,
    admin: AdminService,
) {
    let both = Both {
        admin: admin.into_server(),
        peer: peer.map(PeerService::into_server),
    };
    rt.spawn(async move {
        let incoming = tonic::transport::server::TcpIncoming::from(l).with_nodelay(Some(true));
        let _ = tonic::transport::Server::builder()
            .serve_with_incoming(both, incoming)
            .await;
    });
}

fn listen(rt: &tokio::runtime::Runtime) -> tokio::net::TcpListener {
    rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap()
}

/// Nodes 1..=n over gRPC (none initialized), with ports for `spare` more.
pub struct GrpcNodes {
    pub router: Router,
    pub dir: tempfile::TempDir,
    pub addrs: HashMap<u64, SocketAddr>,
    pub network: GrpcNetwork,
    pub nodes: Mutex<HashMap<u64, Arc<Node>>>,
    servers: Mutex<HashMap<u64, tokio::runtime::Runtime>>,
    waiting: Mutex<HashMap<u64, (tokio::runtime::Runtime, tokio::net::TcpListener)>>,
    _serial: MutexGuard<'static, ()>,
}

impl GrpcNodes {
    pub fn start(test: &str, n: u64, spare: u64) -> GrpcNodes {
        let serial = serial();
        let router = Router::new(test_seed(test));
        let mut addrs = HashMap::new();
        let mut waiting = HashMap::new();
        for id in 1..=n + spare {
            let rt = server_rt(id);
            let l = listen(&rt);
            addrs.insert(id, l.local_addr().unwrap());
            waiting.insert(id, (rt, l));
        }
        let urls = addrs
            .iter()
            .filter(|(id, _)| **id <= n)
            .map(|(&id, a)| (id, format!("http://{a}")))
            .collect();
        let network = GrpcNetwork::new(urls, Some(PEER_TOKEN), GrpcOptions::default()).unwrap();
        let g = GrpcNodes {
            router,
            dir: tempfile::tempdir().unwrap(),
            addrs,
            network,
            nodes: Mutex::default(),
            servers: Mutex::default(),
            waiting: Mutex::new(waiting),
            _serial: serial,
        };
        for id in 1..=n {
            g.start_node(id, EmptyDir::Initial);
        }
        g
    }

    /// Start node `id` (its directory new: `empty`) and serve it.
    pub fn start_node(&self, id: u64, empty: EmptyDir) -> Arc<Node> {
        let opts = NodeOptions {
            grpc: Some(self.network.clone()),
            empty_dir: empty,
            ..options()
        };
        let node = Arc::new(
            Node::start(
                id,
                &self.dir.path().join(id.to_string()),
                &self.router,
                opts,
            )
            .unwrap(),
        );
        let (rt, l) = self.waiting.lock().unwrap().remove(&id).expect("a port");
        let peer = PeerService::new(id, self.router.clone(), Some(PEER_TOKEN));
        serve(
            &rt,
            l,
            Some(peer),
            AdminService::new(node.clone(), Some(CLIENT_TOKEN)),
        );
        self.servers.lock().unwrap().insert(id, rt);
        self.nodes.lock().unwrap().insert(id, node.clone());
        node
    }

    pub fn url(&self, id: u64) -> String {
        format!("http://{}", self.addrs[&id])
    }

    pub fn node(&self, id: u64) -> Arc<Node> {
        self.nodes.lock().unwrap()[&id].clone()
    }

    pub fn client(&self, rt: &tokio::runtime::Runtime, id: u64) -> AdminClient {
        rt.block_on(AdminClient::connect(
            &self.url(id),
            Some(CLIENT_TOKEN),
            Duration::from_secs(5),
        ))
        .unwrap()
    }

    /// The node that calls itself leader, with its engine open.
    pub fn leader(&self, within: Duration) -> u64 {
        let end = Instant::now() + within;
        loop {
            let open: Vec<u64> = self
                .nodes
                .lock()
                .unwrap()
                .values()
                .filter(|n| n.queue().is_ok())
                .map(|n| n.id())
                .collect();
            if open.len() == 1 {
                return open[0];
            }
            assert!(Instant::now() < end, "no single engine: {open:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for GrpcNodes {
    fn drop(&mut self) {
        for (_, rt) in self.servers.lock().unwrap().drain() {
            rt.shutdown_timeout(Duration::from_secs(2));
        }
        self.nodes.lock().unwrap().clear();
    }
}

/// Serve only the `Admin` service of `node` on a fresh loopback port
/// (nodes whose Raft runs on the in-process router); its URL and server.
pub fn serve_admin(node: Arc<Node>) -> (String, tokio::runtime::Runtime) {
    let rt = server_rt(node.id());
    let l = listen(&rt);
    let url = format!("http://{}", l.local_addr().unwrap());
    serve(&rt, l, None, AdminService::new(node, Some(CLIENT_TOKEN)));
    (url, rt)
}

pub fn wait_for(what: &str, within: Duration, mut ok: impl FnMut() -> bool) {
    let end = Instant::now() + within;
    while !ok() {
        assert!(Instant::now() < end, "{what}: not within {within:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The refusal's stable name, asserting its code.
pub fn refused<T: std::fmt::Debug>(r: Result<T, AdminError>, code: tonic::Code) -> AdminError {
    match r {
        Err(e) => {
            assert_eq!(e.code, code, "{e:?}");
            e
        }
        Ok(v) => panic!("expected {code:?}, got {v:?}"),
    }
}

pub fn ids(m: &[telha_jobs_cluster::transport::wire::Member]) -> Vec<u64> {
    m.iter().map(|x| x.id).collect()
}
