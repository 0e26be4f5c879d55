//! [`GrpcNetwork`]: node `from`'s way to its peers over gRPC.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use openraft::error::{
    Fatal, NetworkError, RPCError, RaftError, RemoteError, ReplicationClosed, StreamingError,
    Timeout, Unreachable,
};
use openraft::network::{Backoff, RPCOption, RPCTypes, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, VoteRequest, VoteResponse,
};
use openraft::Snapshot;
use tonic::metadata::AsciiMetadataValue;
use tonic::transport::{Channel, Endpoint};

use super::wire::raft_client::RaftClient;
use super::wire::{RaftReply, RaftRequest};
use super::{decode, encode, SnapshotDeadlines, TransportError, PEER_FORMAT, PEER_TOKEN_METADATA};
use crate::network::{Router, UNREACHABLE_BACKOFF_DEFAULT};
use crate::types::{PeerNode, TypeConfig, Vote};

/// How the channels to peers behave.
#[derive(Debug, Clone)]
pub struct GrpcOptions {
    /// A TCP connect that takes longer fails (the peer is `Unreachable`).
    pub connect_timeout: Duration,
    /// HTTP/2 pings this often, also while idle, so a connection to a dead
    /// or restarted peer is noticed (openraft #1770)...
    pub keep_alive_interval: Duration,
    /// ...when a ping is not answered within this.
    pub keep_alive_timeout: Duration,
    /// How long openraft waits before retrying an unreachable peer.
    pub backoff: Duration,
    /// Snapshot transfers' deadlines.
    pub snapshot: SnapshotDeadlines,
}

impl Default for GrpcOptions {
    fn default() -> Self {
        GrpcOptions {
            connect_timeout: Duration::from_millis(500),
            keep_alive_interval: Duration::from_secs(1),
            keep_alive_timeout: Duration::from_secs(1),
            backoff: UNREACHABLE_BACKOFF_DEFAULT,
            snapshot: SnapshotDeadlines::default(),
        }
    }
}

/// A node's peers over gRPC: an address per peer id (from the
/// configuration, else the member's [`PeerNode::addr`]), one tonic channel
/// per peer, created on first use and connected lazily (it reconnects by
/// itself after a failure). Cheap to clone; a node starting binds its own
/// copy (its id, fresh channels: `NodeOptions::grpc`).
#[derive(Clone)]
pub struct GrpcNetwork {
    conf: Arc<Conf>,
    from: u64,
    channels: Arc<Mutex<HashMap<u64, Channel>>>,
    /// Where this node notes that a peer accepted its append-entries (the
    /// overdue-follower check reads it), and finds its own `Raft`.
    router: Option<Router>,
}

struct Conf {
    addrs: HashMap<u64, String>,
    token: Option<AsciiMetadataValue>,
    opts: GrpcOptions,
}

impl GrpcNetwork {
    /// The peers at `addrs` (peer id → `http://host:port`); `token`, when
    /// set, goes with every call.
    pub fn new(
        addrs: HashMap<u64, String>,
        token: Option<&str>,
        opts: GrpcOptions,
    ) -> Result<GrpcNetwork, TransportError> {
        let token = token
            .map(|t| {
                AsciiMetadataValue::try_from(t.trim()).map_err(|_| {
                    TransportError::Config("the peer token must be visible ASCII".into())
                })
            })
            .transpose()?;
        Ok(GrpcNetwork {
            conf: Arc::new(Conf { addrs, token, opts }),
            from: 0,
            channels: Arc::default(),
            router: None,
        })
    }

    /// Node `from`'s copy, with channels of its own, noting heard peers in
    /// `router` (the node does this when it starts).
    pub(crate) fn bind(&self, from: u64, router: Router) -> GrpcNetwork {
        GrpcNetwork {
            conf: self.conf.clone(),
            from,
            channels: Arc::default(),
            router: Some(router),
        }
    }

    fn channel(&self, target: u64, node: &PeerNode) -> Result<Channel, String> {
        let mut chans = self.channels.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = chans.get(&target) {
            return Ok(c.clone());
        }
        let addr = match self.conf.addrs.get(&target) {
            Some(a) => a.clone(),
            None if !node.addr.is_empty() => node.addr.clone(),
            None => return Err(format!("no address for node {target}")),
        };
        let o = &self.conf.opts;
        let ep = Endpoint::from_shared(addr.clone())
            .map_err(|e| format!("node {target} at {addr:?}: {e}"))?
            .connect_timeout(o.connect_timeout)
            .http2_keep_alive_interval(o.keep_alive_interval)
            .keep_alive_timeout(o.keep_alive_timeout)
            .keep_alive_while_idle(true)
            .tcp_nodelay(true);
        let c = ep.connect_lazy();
        chans.insert(target, c.clone());
        Ok(c)
    }
}

impl RaftNetworkFactory<TypeConfig> for GrpcNetwork {
    type Network = GrpcClient;

    async fn new_client(&mut self, target: u64, node: &PeerNode) -> GrpcClient {
        GrpcClient {
            to: target,
            channel: self.channel(target, node),
            net: self.clone(),
        }
    }
}

/// One peer's client.
pub struct GrpcClient {
    to: u64,
    /// The channel, or why there is none (no address: `Unreachable`).
    channel: Result<Channel, String>,
    net: GrpcNetwork,
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(super) struct PeerError(pub(super) String);

/// How one call failed, before it is cast into its call's error type.
pub(super) enum Failure {
    Unreachable(String),
    Network(String),
    Timeout(Duration),
}

impl Failure {
    /// A gRPC status: refused or not there → back off (`Unreachable`);
    /// anything else (bad bytes, ...) → a network error. (A unary call's
    /// deadline statuses are `Timeout` before this: `unary`.)
    pub(super) fn of_status(to: u64, s: &tonic::Status) -> Failure {
        use tonic::Code::*;
        let m = format!("node {to}: {:?}: {}", s.code(), s.message());
        match s.code() {
            Unavailable | Unauthenticated | PermissionDenied | FailedPrecondition | Unknown => {
                Failure::Unreachable(m)
            }
            _ => Failure::Network(m),
        }
    }

    fn timeout(&self, action: RPCTypes, from: u64, to: u64) -> Option<Timeout<u64>> {
        match self {
            Failure::Timeout(d) => Some(Timeout {
                action,
                id: from,
                target: to,
                timeout: *d,
            }),
            _ => None,
        }
    }

    fn into_rpc(
        self,
        action: RPCTypes,
        from: u64,
        to: u64,
    ) -> RPCError<u64, PeerNode, RaftError<u64>> {
        if let Some(t) = self.timeout(action, from, to) {
            return RPCError::Timeout(t);
        }
        match self {
            Failure::Unreachable(m) => RPCError::Unreachable(Unreachable::new(&PeerError(m))),
            Failure::Network(m) => RPCError::Network(NetworkError::new(&PeerError(m))),
            Failure::Timeout(d) => RPCError::Network(NetworkError::new(&PeerError(format!(
                "no answer within {d:?}"
            )))),
        }
    }

    pub(super) fn into_streaming(
        self,
        from: u64,
        to: u64,
    ) -> StreamingError<TypeConfig, Fatal<u64>> {
        if let Some(t) = self.timeout(RPCTypes::InstallSnapshot, from, to) {
            return StreamingError::Timeout(t);
        }
        match self {
            Failure::Unreachable(m) => StreamingError::Unreachable(Unreachable::new(&PeerError(m))),
            Failure::Network(m) => StreamingError::Network(NetworkError::new(&PeerError(m))),
            Failure::Timeout(d) => StreamingError::Network(NetworkError::new(&PeerError(format!(
                "no answer within {d:?}"
            )))),
        }
    }
}

type RpcResult<T> = Result<T, RPCError<u64, PeerNode, RaftError<u64>>>;

impl GrpcClient {
    pub(super) fn client(&self) -> Result<RaftClient<Channel>, Failure> {
        match &self.channel {
            Ok(c) => Ok(RaftClient::new(c.clone())
                .max_decoding_message_size(64 << 20)
                .max_encoding_message_size(64 << 20)),
            Err(why) => Err(Failure::Unreachable(why.clone())),
        }
    }

    pub(super) fn request<T>(&self, msg: T, ttl: Option<Duration>) -> tonic::Request<T> {
        let mut req = tonic::Request::new(msg);
        if let Some(t) = &self.net.conf.token {
            req.metadata_mut().insert(PEER_TOKEN_METADATA, t.clone());
        }
        if let Some(ttl) = ttl {
            req.set_timeout(ttl);
        }
        req
    }

    pub(super) fn sender(&self) -> u64 {
        self.net.from
    }

    pub(super) fn to_id(&self) -> u64 {
        self.to
    }

    pub(super) fn deadlines(&self) -> SnapshotDeadlines {
        self.net.conf.opts.snapshot
    }

    /// One unary call, under `ttl`, its reply decoded.
    async fn unary<Q, A, F, Fut>(
        &self,
        what: &'static str,
        req: &Q,
        as_voter: bool,
        ttl: Duration,
        call: F,
    ) -> Result<Result<A, RaftError<u64>>, Failure>
    where
        Q: serde::Serialize,
        A: serde::de::DeserializeOwned,
        F: FnOnce(RaftClient<Channel>, tonic::Request<RaftRequest>) -> Fut,
        Fut: Future<Output = Result<tonic::Response<RaftReply>, tonic::Status>>,
    {
        let payload = encode(what, req).map_err(|e| Failure::Network(e.to_string()))?;
        let msg = RaftRequest {
            format: PEER_FORMAT,
            from: self.sender(),
            as_voter,
            payload,
        };
        let client = self.client()?;
        let request = self.request(msg, Some(ttl));
        let reply = match tokio::time::timeout(ttl, call(client, request)).await {
            Err(_) => return Err(Failure::Timeout(ttl)),
            // tonic ends a call past its `grpc-timeout` itself
            // (`Cancelled`, "Timeout expired"); the server past it answers
            // `DeadlineExceeded`.
            Ok(Err(s))
                if matches!(
                    s.code(),
                    tonic::Code::Cancelled | tonic::Code::DeadlineExceeded
                ) =>
            {
                return Err(Failure::Timeout(ttl))
            }
            Ok(Err(s)) => return Err(Failure::of_status(self.to, &s)),
            Ok(Ok(r)) => r.into_inner(),
        };
        decode(what, reply.format, &reply.payload)
            .map_err(|e| Failure::Network(format!("node {}: reply: {e}", self.to)))
    }

    /// Whether `voters` (the sender's configuration) has the target: the
    /// receiver's join gate refuses a wiped member on it.
    fn as_voter_of(&self, voters: impl IntoIterator<Item = u64>) -> bool {
        voters.into_iter().any(|v| v == self.to)
    }
}

fn remote(to: u64, e: RaftError<u64>) -> RPCError<u64, PeerNode, RaftError<u64>> {
    match e {
        // A stopped target is as good as down: back off, don't retry hot.
        RaftError::Fatal(f) => RPCError::Unreachable(Unreachable::new(&f)),
        e => RPCError::RemoteError(RemoteError::new(to, e)),
    }
}

impl RaftNetwork<TypeConfig> for GrpcClient {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> RpcResult<AppendEntriesResponse<u64>> {
        let (from, to) = (self.sender(), self.to);
        let as_voter = self.as_voter_of(self.voters());
        let got = self
            .unary(
                "append-entries",
                &rpc,
                as_voter,
                option.hard_ttl(),
                |mut c, r| async move { c.append_entries(r).await },
            )
            .await
            .map_err(|f| f.into_rpc(RPCTypes::AppendEntries, from, to))?;
        let resp = got.map_err(|e| remote(to, e))?;
        if !matches!(resp, AppendEntriesResponse::HigherVote(_)) {
            if let Some(r) = &self.net.router {
                r.mark_heard(to);
            }
        }
        Ok(resp)
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<u64>,
        option: RPCOption,
    ) -> RpcResult<VoteResponse<u64>> {
        let (from, to) = (self.sender(), self.to);
        let as_voter = self.as_voter_of(self.voters());
        let got = self
            .unary(
                "vote",
                &rpc,
                as_voter,
                option.hard_ttl(),
                |mut c, r| async move { c.vote(r).await },
            )
            .await
            .map_err(|f| f.into_rpc(RPCTypes::Vote, from, to))?;
        got.map_err(|e| remote(to, e))
    }

    async fn full_snapshot(
        &mut self,
        vote: Vote,
        snapshot: Snapshot<TypeConfig>,
        cancel: impl Future<Output = ReplicationClosed> + Send + 'static,
        _option: RPCOption,
    ) -> Result<SnapshotResponse<u64>, StreamingError<TypeConfig, Fatal<u64>>> {
        let as_voter = self.as_voter_of(self.voters());
        self.send_snapshot(vote, snapshot, as_voter, cancel).await
    }

    fn backoff(&self) -> Backoff {
        Backoff::new(std::iter::repeat(self.net.conf.opts.backoff))
    }
}

impl GrpcClient {
    /// The voters of the sending node's configuration, from its own Raft
    /// (registered in its router).
    pub(super) fn voters(&self) -> Vec<u64> {
        let Some(r) = &self.net.router else {
            return Vec::new();
        };
        let Some(raft) = r.target(self.sender()) else {
            return Vec::new();
        };
        let m = raft.metrics();
        let m = m.borrow();
        m.membership_config.membership().voter_ids().collect()
    }
}
