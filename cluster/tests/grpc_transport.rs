//! The Raft transport over gRPC (issue 40 slice 1): three nodes in one
//! process, each with its own tonic server (its own runtime, so stopping
//! it closes its port and every connection) on a loopback port, and a
//! `GrpcNetwork` to the others. Nothing goes over the in-process router's
//! links (its stats stay at zero).

mod support;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use openraft::error::RPCError;
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::VoteRequest;

use support::{options, TestCluster};
use telha_jobs::{EnqueueOptions, JobId, LeaseOptions};
use telha_jobs_cluster::client::ClusterQueue;
use telha_jobs_cluster::network::{test_seed, Router};
use telha_jobs_cluster::node::{NodeOptions, StartRefused};
use telha_jobs_cluster::snapshot::SnapshotPolicy;
use telha_jobs_cluster::transport::wire::raft_client::RaftClient;
use telha_jobs_cluster::transport::wire::{snapshot_chunk, RaftRequest, SnapshotChunk};
use telha_jobs_cluster::transport::{GrpcNetwork, GrpcOptions, PeerService, PEER_TOKEN_METADATA};
use telha_jobs_cluster::PeerNode;

const TOKEN: &str = "peer-s3cret";

/// One node's gRPC server: its runtime and service.
struct Served {
    rt: tokio::runtime::Runtime,
    svc: PeerService,
}

/// The servers of a cluster's nodes, each on a fixed loopback port.
struct Servers {
    router: Router,
    addrs: HashMap<u64, SocketAddr>,
    up: Mutex<HashMap<u64, Served>>,
    /// Installs counted by servers since stopped.
    installs_before: Mutex<u64>,
}

fn listen(rt: &tokio::runtime::Runtime, addr: SocketAddr) -> tokio::net::TcpListener {
    rt.block_on(async {
        let s = tokio::net::TcpSocket::new_v4()?;
        s.set_reuseaddr(true)?;
        s.bind(addr)?;
        s.listen(64)
    })
    .unwrap_or_else(|e| panic!("listen on {addr}: {e}"))
}

fn server_rt(id: u64) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name(format!("peer-server-{id}"))
        .enable_all()
        .build()
        .unwrap()
}

impl Servers {
    /// Servers for nodes 1..=n on fresh loopback ports.
    fn start(router: &Router, n: u64) -> Servers {
        let mut s = Servers {
            router: router.clone(),
            addrs: HashMap::new(),
            up: Mutex::new(HashMap::new()),
            installs_before: Mutex::new(0),
        };
        for id in 1..=n {
            let rt = server_rt(id);
            let l = listen(&rt, "127.0.0.1:0".parse().unwrap());
            s.addrs.insert(id, l.local_addr().unwrap());
            s.run(id, rt, l);
        }
        s
    }

    fn run(&self, id: u64, rt: tokio::runtime::Runtime, l: tokio::net::TcpListener) {
        let svc = PeerService::new(id, self.router.clone(), Some(TOKEN));
        let server = svc.clone().into_server();
        rt.spawn(async move {
            let incoming = tonic::transport::server::TcpIncoming::from(l).with_nodelay(Some(true));
            let _ = tonic::transport::Server::builder()
                .serve_with_incoming(server, incoming)
                .await;
        });
        self.up.lock().unwrap().insert(id, Served { rt, svc });
    }

    /// Stop `id`'s server: its port closes, its connections drop.
    fn stop(&self, id: u64) {
        let s = self.up.lock().unwrap().remove(&id).expect("server up");
        *self.installs_before.lock().unwrap() += s.svc.installs();
        s.rt.shutdown_background();
    }

    /// Serve `id` again on its port.
    fn restart(&self, id: u64) {
        let rt = server_rt(id);
        let l = listen(&rt, self.addrs[&id]);
        self.run(id, rt, l);
    }

    fn installs(&self) -> u64 {
        let up: u64 = self
            .up
            .lock()
            .unwrap()
            .values()
            .map(|s| s.svc.installs())
            .sum();
        up + *self.installs_before.lock().unwrap()
    }

    fn url(&self, id: u64) -> String {
        format!("http://{}", self.addrs[&id])
    }

    fn network(&self, token: &str) -> GrpcNetwork {
        let addrs = self.addrs.keys().map(|&id| (id, self.url(id))).collect();
        GrpcNetwork::new(addrs, Some(token), GrpcOptions::default()).unwrap()
    }
}

impl Drop for Servers {
    fn drop(&mut self) {
        for (_, s) in self.up.lock().unwrap().drain() {
            s.rt.shutdown_background();
        }
    }
}

/// Three nodes over gRPC, initialized, one engine open.
fn grpc_cluster(test: &str, opts: NodeOptions) -> (TestCluster, Servers) {
    let router = Router::new(test_seed(test));
    let servers = Servers::start(&router, 3);
    let opts = NodeOptions {
        grpc: Some(servers.network(TOKEN)),
        ..opts
    };
    let c = TestCluster::start_on(&std::env::temp_dir(), router, 3, opts);
    (c, servers)
}

fn keyed(k: String) -> EnqueueOptions {
    EnqueueOptions {
        idempotency_key: Some(k),
        ..Default::default()
    }
}

/// `n` keyed enqueues; half of them leased and completed.
fn write(q: &ClusterQueue, round: &str, n: usize) -> Vec<JobId> {
    let ids: Vec<JobId> = (0..n)
        .map(|i| {
            q.enqueue("a", b"x", keyed(format!("{round}-{i}")))
                .unwrap()
                .id
        })
        .collect();
    let opts = LeaseOptions::default().kind("a").unwrap();
    for j in q.lease_many("w", n / 2, &opts).unwrap() {
        q.complete(&j.token(), None).unwrap();
    }
    ids
}

fn assert_present(q: &ClusterQueue, ids: &[JobId]) {
    for id in ids {
        assert!(q.get(id).unwrap().is_some(), "job {id:?} lost");
    }
}

fn wait_for(what: &str, within: Duration, mut ok: impl FnMut() -> bool) {
    let end = Instant::now() + within;
    while !ok() {
        assert!(Instant::now() < end, "{what}: not within {within:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn assert_nothing_in_process(c: &TestCluster) {
    let s = c.router.stats();
    assert_eq!(s.sent, 0, "RPCs went over the in-process links: {s:?}");
}

#[test]
fn three_nodes_elect_and_replicate_over_grpc() {
    let (c, _s) = grpc_cluster("three_nodes_elect_and_replicate_over_grpc", options());
    let leader = c.engine_leader(Duration::from_secs(10));
    let q = c.queue();
    let ids = write(&q, "w", 60);
    assert_present(&q, &ids);
    c.assert_consistent();
    assert_nothing_in_process(&c);
    eprintln!("leader {leader}; {} jobs on every replica", ids.len());
}

#[test]
fn a_stopped_leader_is_replaced_and_reached_again_on_its_port() {
    let (c, s) = grpc_cluster(
        "a_stopped_leader_is_replaced_and_reached_again_on_its_port",
        options(),
    );
    let q = c.queue();
    let mut ids = write(&q, "before", 20);
    let old = c.engine_leader(Duration::from_secs(10));
    let term = c.term(old);
    // Its port closes with its process.
    s.stop(old);
    c.crash(old);
    let t = Instant::now();
    let new = c.raft_leader(term, Duration::from_secs(10));
    assert_ne!(new, old);
    ids.extend(write(&q, "during", 20));
    eprintln!(
        "node {old} stopped; node {new} leads, a write acknowledged after {:?}",
        t.elapsed()
    );
    // Back on the same port: the leader's pooled channel to the dead
    // connection must reconnect.
    s.restart(old);
    c.restart(old);
    ids.extend(write(&q, "after", 20));
    let target = c.node(new).metrics().last_log_index.unwrap();
    wait_for(
        "the restarted node catches up",
        Duration::from_secs(15),
        || {
            c.node(old)
                .metrics()
                .last_applied
                .is_some_and(|a| a.index >= target)
        },
    );
    c.assert_consistent();
    assert_present(&q, &ids);
    assert_nothing_in_process(&c);
}

#[test]
fn a_follower_down_past_the_purge_point_rejoins_by_a_snapshot_over_grpc() {
    let opts = NodeOptions {
        snapshots: SnapshotPolicy {
            entries: 50,
            bytes: 64 << 10,
            keep_log: 10,
        },
        ..options()
    };
    let (c, s) = grpc_cluster(
        "a_follower_down_past_the_purge_point_rejoins_by_a_snapshot_over_grpc",
        opts,
    );
    let q = c.queue();
    let leader = c.engine_leader(Duration::from_secs(10));
    let follower = *c.ids.iter().find(|&&i| i != leader).unwrap();
    let mut ids = write(&q, "before", 40);
    c.quiesce(Duration::from_secs(20));
    let behind = c.node(follower).metrics().last_log_index.unwrap();
    s.stop(follower);
    c.crash(follower);
    let mut round = 0;
    wait_for(
        "the leader's purge past the follower",
        Duration::from_secs(30),
        || {
            round += 1;
            ids.extend(write(&q, &format!("down-{round}"), 30));
            c.node(leader)
                .metrics()
                .purged
                .is_some_and(|p| p.index > behind)
        },
    );
    let purged = c.node(leader).metrics().purged.unwrap();
    let installs = s.installs();
    s.restart(follower);
    c.restart(follower);
    wait_for(
        "the follower's snapshot install",
        Duration::from_secs(20),
        || {
            let m = c.node(follower).metrics();
            m.snapshot.is_some_and(|x| x.index >= purged.index)
        },
    );
    assert!(s.installs() > installs, "a snapshot was streamed over gRPC");
    ids.extend(write(&q, "after", 20));
    c.assert_consistent();
    assert_present(&q, &ids);
    assert_nothing_in_process(&c);
    eprintln!("follower {follower} behind {behind} rejoined past purge {purged} by snapshot");
}

fn raw_client(
    s: &Servers,
    id: u64,
    rt: &tokio::runtime::Runtime,
) -> RaftClient<tonic::transport::Channel> {
    rt.block_on(RaftClient::connect(s.url(id))).unwrap()
}

fn with_token<T>(msg: T, token: Option<&str>) -> tonic::Request<T> {
    let mut r = tonic::Request::new(msg);
    if let Some(t) = token {
        r.metadata_mut()
            .insert(PEER_TOKEN_METADATA, t.parse().unwrap());
    }
    r
}

fn garbage(format: u32) -> RaftRequest {
    RaftRequest {
        format,
        from: 9,
        as_voter: false,
        payload: vec![0xc1, 0xde, 0xad, 0xbe, 0xef],
    }
}

#[test]
fn a_peer_sending_garbage_gets_a_typed_error_and_the_cluster_carries_on() {
    let (c, s) = grpc_cluster(
        "a_peer_sending_garbage_gets_a_typed_error_and_the_cluster_carries_on",
        options(),
    );
    let rt = server_rt(0);
    let mut client = raw_client(&s, c.engine_leader(Duration::from_secs(10)), &rt);
    let tok = Some(TOKEN);
    let e = rt
        .block_on(client.append_entries(with_token(garbage(1), tok)))
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::InvalidArgument, "{e:?}");
    assert!(
        e.message()
            .starts_with("append-entries request does not decode"),
        "{e:?}"
    );
    let e = rt
        .block_on(client.vote(with_token(garbage(1), tok)))
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::InvalidArgument, "{e:?}");
    assert!(
        e.message().starts_with("vote request does not decode"),
        "{e:?}"
    );
    let e = rt
        .block_on(client.vote(with_token(garbage(7), tok)))
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::InvalidArgument, "{e:?}");
    assert!(e.message().contains("format 7 is not supported"), "{e:?}");
    // A snapshot stream that does not begin with `begin`.
    let chunks = vec![SnapshotChunk {
        part: Some(snapshot_chunk::Part::Data(vec![1, 2, 3])),
    }];
    let stream = tokio_stream::iter(chunks);
    let e = rt
        .block_on(client.install_snapshot(with_token(stream, tok)))
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::InvalidArgument, "{e:?}");
    assert!(
        e.message().contains("the first chunk is not `begin`"),
        "{e:?}"
    );
    // Nothing broke.
    let q = c.queue();
    let ids = write(&q, "after-garbage", 10);
    c.assert_consistent();
    assert_present(&q, &ids);
}

/// A member wiped and started as a joiner under its old id is refused by
/// its join gate through the peer service, as in process
/// (tests/start_refusal.rs): the leader sees it unreachable and writes on.
#[test]
fn the_join_gate_refuses_a_wiped_member_over_grpc() {
    let (c, s) = grpc_cluster("the_join_gate_refuses_a_wiped_member_over_grpc", options());
    let q = c.queue();
    let mut ids = write(&q, "before", 20);
    c.quiesce(Duration::from_secs(20));
    let leader = c.engine_leader(Duration::from_secs(10));
    let f = *c.ids.iter().rev().find(|&&i| i != leader).unwrap();
    s.stop(f);
    c.crash(f);
    std::fs::remove_dir_all(c.node_dir(f)).unwrap();
    s.restart(f);
    let n = c.start_joiner(f);
    wait_for("the refusal", Duration::from_secs(10), || {
        n.join_refused().is_some()
    });
    let why = n.join_refused().unwrap();
    assert!(
        matches!(why, StartRefused::WipedMember { id, leader: l } if id == f && l == leader),
        "{why:?}"
    );
    ids.extend(write(&q, "after", 20));
    assert_present(&q, &ids);
    assert_eq!(c.engine_leader(Duration::from_secs(5)), leader);
    assert_eq!(
        n.metrics().last_log_index,
        None,
        "the wiped node took nothing"
    );
    assert_nothing_in_process(&c);
}

#[test]
fn a_wrong_peer_token_is_refused() {
    let (c, s) = grpc_cluster("a_wrong_peer_token_is_refused", options());
    let leader = c.engine_leader(Duration::from_secs(10));
    let rt = server_rt(0);
    let mut client = raw_client(&s, leader, &rt);
    for token in [None, Some("wrong")] {
        let e = rt
            .block_on(client.append_entries(with_token(garbage(1), token)))
            .unwrap_err();
        assert_eq!(e.code(), tonic::Code::Unauthenticated, "{token:?}: {e:?}");
    }
    // openraft's client with the wrong token: `Unreachable` (it backs
    // off); with the right one, an answer.
    let vote = || VoteRequest::new(openraft::Vote::new(1, 9), None);
    let ttl = RPCOption::new(Duration::from_secs(2));
    let mut bad = rt.block_on(s.network("wrong").new_client(leader, &PeerNode::default()));
    let e = rt.block_on(bad.vote(vote(), ttl.clone())).unwrap_err();
    assert!(matches!(e, RPCError::Unreachable(_)), "{e:?}");
    let mut good = rt.block_on(s.network(TOKEN).new_client(leader, &PeerNode::default()));
    let answer = rt.block_on(good.vote(vote(), ttl)).unwrap();
    assert!(
        !answer.vote_granted,
        "a stale vote request is answered, not granted"
    );
    assert_nothing_in_process(&c);
}
