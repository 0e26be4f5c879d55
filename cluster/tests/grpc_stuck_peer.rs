//! The gRPC transport's deadlines against a peer that accepts calls and
//! never answers (a black hole behind a live connection: HTTP/2 pings are
//! still answered, so only the deadlines end the calls): a unary call ends
//! at `RPCOption::hard_ttl` as `Timeout`; a snapshot stream the peer stops
//! reading fails at the idle deadline, and one whose replication ends is
//! stopped at once by `cancel`.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use openraft::error::{RPCError, ReplicationClosed, StreamingError};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::AppendEntriesRequest;
use openraft::{Snapshot, SnapshotMeta, Vote};
use telha_jobs_cluster::transport::wire::raft_server::{Raft, RaftServer};
use telha_jobs_cluster::transport::wire::{RaftReply, RaftRequest, SnapshotChunk};
use telha_jobs_cluster::transport::{GrpcNetwork, GrpcOptions, SnapshotDeadlines};
use telha_jobs_cluster::{PeerNode, SnapshotDir, TypeConfig};
use tonic::{Request, Response, Status, Streaming};

/// Takes every call and never answers; a snapshot stream is held unread.
struct BlackHole;

#[tonic::async_trait]
impl Raft for BlackHole {
    async fn append_entries(&self, _: Request<RaftRequest>) -> Result<Response<RaftReply>, Status> {
        std::future::pending().await
    }

    async fn vote(&self, _: Request<RaftRequest>) -> Result<Response<RaftReply>, Status> {
        std::future::pending().await
    }

    async fn install_snapshot(
        &self,
        r: Request<Streaming<SnapshotChunk>>,
    ) -> Result<Response<RaftReply>, Status> {
        let _held = r.into_inner();
        std::future::pending().await
    }
}

struct Fixture {
    rt: tokio::runtime::Runtime,
    _server: tokio::runtime::Runtime,
    net: GrpcNetwork,
    dir: tempfile::TempDir,
}

fn fixture(idle: Duration, total: Duration) -> Fixture {
    let server = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let l = server
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = l.local_addr().unwrap();
    server.spawn(async move {
        let incoming = tonic::transport::server::TcpIncoming::from(l);
        let _ = tonic::transport::Server::builder()
            .serve_with_incoming(RaftServer::new(BlackHole), incoming)
            .await;
    });
    let opts = GrpcOptions {
        snapshot: SnapshotDeadlines { idle, total },
        ..GrpcOptions::default()
    };
    let addrs = HashMap::from([(2, format!("http://{addr}"))]);
    // A snapshot of 8 MiB: more than the HTTP/2 windows hold.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("000001.sst"), vec![7u8; 8 << 20]).unwrap();
    Fixture {
        rt: tokio::runtime::Runtime::new().unwrap(),
        _server: server,
        net: GrpcNetwork::new(addrs, None, opts).unwrap(),
        dir,
    }
}

fn snapshot(f: &Fixture) -> Snapshot<TypeConfig> {
    Snapshot {
        meta: SnapshotMeta {
            last_log_id: None,
            last_membership: Default::default(),
            snapshot_id: "test".into(),
        },
        snapshot: Box::new(SnapshotDir::new(f.dir.path())),
    }
}

#[test]
fn a_unary_call_to_a_black_hole_ends_at_its_hard_ttl() {
    let mut f = fixture(Duration::from_secs(1), Duration::from_secs(30));
    let mut c = f.rt.block_on(f.net.new_client(2, &PeerNode::default()));
    let req = AppendEntriesRequest::<TypeConfig> {
        vote: Vote::new(1, 1),
        prev_log_id: None,
        entries: Vec::new(),
        leader_commit: None,
    };
    let t = Instant::now();
    let e =
        f.rt.block_on(c.append_entries(req, RPCOption::new(Duration::from_millis(300))))
            .unwrap_err();
    let took = t.elapsed();
    assert!(matches!(e, RPCError::Timeout(_)), "{e:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    eprintln!("append-entries to a black hole: {e} after {took:?}");
}

#[test]
fn a_snapshot_nobody_reads_fails_at_the_idle_deadline() {
    let mut f = fixture(Duration::from_millis(500), Duration::from_secs(60));
    let snap = snapshot(&f);
    let mut c = f.rt.block_on(f.net.new_client(2, &PeerNode::default()));
    let t = Instant::now();
    let never = std::future::pending::<ReplicationClosed>();
    let e =
        f.rt.block_on(c.full_snapshot(
            Vote::new(1, 1),
            snap,
            never,
            RPCOption::new(Duration::from_secs(1)),
        ))
        .unwrap_err();
    let took = t.elapsed();
    assert!(matches!(e, StreamingError::Timeout(_)), "{e:?}");
    assert!(took < Duration::from_secs(10), "{took:?}");
    eprintln!("snapshot to a black hole: {e} after {took:?}");
}

#[test]
fn a_snapshot_stops_when_its_replication_is_cancelled() {
    let mut f = fixture(Duration::from_secs(60), Duration::from_secs(60));
    let snap = snapshot(&f);
    let mut c = f.rt.block_on(f.net.new_client(2, &PeerNode::default()));
    let t = Instant::now();
    let cancel = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        ReplicationClosed::new("test: replication ended")
    };
    let e =
        f.rt.block_on(c.full_snapshot(
            Vote::new(1, 1),
            snap,
            cancel,
            RPCOption::new(Duration::from_secs(1)),
        ))
        .unwrap_err();
    let took = t.elapsed();
    assert!(matches!(e, StreamingError::Closed(_)), "{e:?}");
    assert!(took < Duration::from_secs(10), "{took:?}");
    eprintln!("snapshot cancelled: {e} after {took:?}");
}
