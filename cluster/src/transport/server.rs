//! [`PeerService`]: the `Raft` gRPC service of one node.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use openraft::network::RPCTypes;
use openraft::raft::AppendEntriesResponse;
use openraft::Raft;
use tonic::{Request, Response, Status, Streaming};

use super::wire::raft_server::{Raft as RaftRpc, RaftServer};
use super::wire::{RaftReply, RaftRequest, SnapshotChunk};
use super::{decode, encode, snapshot, SnapshotDeadlines, PEER_FORMAT, PEER_TOKEN_METADATA};
use crate::network::{Arriving, Router};
use crate::types::TypeConfig;

/// Hands the peers' RPCs to node `id`'s `Raft`, which the node registers
/// in `router` when it starts (and removes when it stops: then
/// `UNAVAILABLE`, which the sender takes as `Unreachable`). The node's
/// join gate, if set in `router`, sees every RPC first, as in process.
#[derive(Clone)]
pub struct PeerService {
    id: u64,
    router: Router,
    token: Option<Arc<[u8]>>,
    snapshot: SnapshotDeadlines,
    /// Snapshots received whole and handed to the install.
    installs: Arc<AtomicU64>,
}

impl PeerService {
    /// Node `id`'s service; with `token`, a call without that token in
    /// [`PEER_TOKEN_METADATA`] is refused (`UNAUTHENTICATED`).
    pub fn new(id: u64, router: Router, token: Option<&str>) -> PeerService {
        PeerService {
            id,
            router,
            token: token
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(|t| Arc::from(t.as_bytes())),
            snapshot: SnapshotDeadlines::default(),
            installs: Arc::default(),
        }
    }

    /// Receiving snapshots under `d`.
    pub fn with_snapshot_deadlines(mut self, d: SnapshotDeadlines) -> PeerService {
        self.snapshot = d;
        self
    }

    /// Snapshots this service received whole and handed to the install
    /// (counted by every clone).
    pub fn installs(&self) -> u64 {
        self.installs.load(Ordering::Relaxed)
    }

    /// The tonic service, ready to mount on a listener.
    pub fn into_server(self) -> RaftServer<PeerService> {
        RaftServer::new(self)
            .max_decoding_message_size(64 << 20)
            .max_encoding_message_size(64 << 20)
    }

    fn check_token(&self, meta: &tonic::metadata::MetadataMap) -> Result<(), Status> {
        let Some(want) = &self.token else {
            return Ok(());
        };
        match meta.get(PEER_TOKEN_METADATA) {
            None => Err(Status::unauthenticated(format!(
                "node {}: peers must send `{PEER_TOKEN_METADATA}`",
                self.id
            ))),
            Some(got) if ct_eq(got.as_bytes(), want) => Ok(()),
            Some(_) => Err(Status::unauthenticated(format!(
                "node {}: wrong peer token",
                self.id
            ))),
        }
    }

    /// The node's `Raft`, after its gate admitted the RPC.
    fn admit(
        &self,
        from: u64,
        action: RPCTypes,
        as_voter: bool,
    ) -> Result<Raft<TypeConfig>, Status> {
        let Some(raft) = self.router.target(self.id) else {
            return Err(Status::unavailable(format!(
                "node {} is not running",
                self.id
            )));
        };
        self.router
            .admit_arriving(
                self.id,
                Arriving {
                    from,
                    action,
                    as_voter,
                },
            )
            .map_err(Status::failed_precondition)?;
        Ok(raft)
    }
}

/// Equal in time independent of where the first difference is.
pub(crate) fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn reply<T: serde::Serialize>(what: &'static str, v: &T) -> Result<Response<RaftReply>, Status> {
    Ok(Response::new(RaftReply {
        format: PEER_FORMAT,
        payload: encode(what, v).map_err(|e| Status::internal(e.to_string()))?,
    }))
}

#[tonic::async_trait]
impl RaftRpc for PeerService {
    async fn append_entries(
        &self,
        request: Request<RaftRequest>,
    ) -> Result<Response<RaftReply>, Status> {
        self.check_token(request.metadata())?;
        let r = request.into_inner();
        let rpc: openraft::raft::AppendEntriesRequest<TypeConfig> =
            decode("append-entries request", r.format, &r.payload)?;
        let raft = self.admit(r.from, RPCTypes::AppendEntries, r.as_voter)?;
        let got = raft.append_entries(rpc).await;
        // This node heard a leader: noted in its own router, which its
        // overdue-follower check reads (in one process the sender's
        // `GrpcNetwork` notes it in the shared router; across processes
        // only the receiver can).
        if matches!(&got, Ok(r) if !matches!(r, AppendEntriesResponse::HigherVote(_))) {
            self.router.mark_heard(self.id);
        }
        reply("append-entries reply", &got)
    }

    async fn vote(&self, request: Request<RaftRequest>) -> Result<Response<RaftReply>, Status> {
        self.check_token(request.metadata())?;
        let r = request.into_inner();
        let rpc: openraft::raft::VoteRequest<u64> = decode("vote request", r.format, &r.payload)?;
        let raft = self.admit(r.from, RPCTypes::Vote, r.as_voter)?;
        reply("vote reply", &raft.vote(rpc).await)
    }

    async fn install_snapshot(
        &self,
        request: Request<Streaming<SnapshotChunk>>,
    ) -> Result<Response<RaftReply>, Status> {
        self.check_token(request.metadata())?;
        let mut s = request.into_inner();
        let d = self.snapshot;
        let work = async {
            let begin = snapshot::receive_begin(&mut s, d.idle).await?;
            let raft = self.admit(begin.from, snapshot::ACTION, begin.as_voter)?;
            snapshot::receive_rest(&raft, begin, &mut s, d).await
        };
        let got = tokio::time::timeout(d.total, work).await.map_err(|_| {
            Status::deadline_exceeded(format!("snapshot transfer longer than {:?}", d.total))
        })??;
        self.installs.fetch_add(1, Ordering::Relaxed);
        reply("install-snapshot reply", &got)
    }
}
