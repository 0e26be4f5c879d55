//! A node's links to its peers: the in-process [`Router`](super::Router)
//! or gRPC ([`GrpcNetwork`], `transport/`), chosen when the node starts
//! ([`NodeOptions::grpc`](crate::node::NodeOptions::grpc)).

use std::future::Future;

use openraft::error::{Fatal, RPCError, RaftError, ReplicationClosed, StreamingError};
use openraft::network::{Backoff, RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, VoteRequest, VoteResponse,
};
use openraft::Snapshot;

use super::{RouterClient, RouterFactory};
use crate::transport::{GrpcClient, GrpcNetwork};
use crate::types::{PeerNode, TypeConfig, Vote};

/// The network factory a node gives its `Raft`.
pub enum Links {
    Local(RouterFactory),
    Grpc(GrpcNetwork),
}

/// One peer's client of either kind.
pub enum LinkClient {
    Local(RouterClient),
    Grpc(GrpcClient),
}

impl RaftNetworkFactory<TypeConfig> for Links {
    type Network = LinkClient;

    async fn new_client(&mut self, target: u64, node: &PeerNode) -> LinkClient {
        match self {
            Links::Local(f) => LinkClient::Local(f.new_client(target, node).await),
            Links::Grpc(f) => LinkClient::Grpc(f.new_client(target, node).await),
        }
    }
}

type RpcResult<T> = Result<T, RPCError<u64, PeerNode, RaftError<u64>>>;

impl RaftNetwork<TypeConfig> for LinkClient {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> RpcResult<AppendEntriesResponse<u64>> {
        match self {
            LinkClient::Local(c) => c.append_entries(rpc, option).await,
            LinkClient::Grpc(c) => c.append_entries(rpc, option).await,
        }
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<u64>,
        option: RPCOption,
    ) -> RpcResult<VoteResponse<u64>> {
        match self {
            LinkClient::Local(c) => c.vote(rpc, option).await,
            LinkClient::Grpc(c) => c.vote(rpc, option).await,
        }
    }

    async fn full_snapshot(
        &mut self,
        vote: Vote,
        snapshot: Snapshot<TypeConfig>,
        cancel: impl Future<Output = ReplicationClosed> + Send + 'static,
        option: RPCOption,
    ) -> Result<SnapshotResponse<u64>, StreamingError<TypeConfig, Fatal<u64>>> {
        match self {
            LinkClient::Local(c) => c.full_snapshot(vote, snapshot, cancel, option).await,
            LinkClient::Grpc(c) => c.full_snapshot(vote, snapshot, cancel, option).await,
        }
    }

    fn backoff(&self) -> Backoff {
        match self {
            LinkClient::Local(c) => c.backoff(),
            LinkClient::Grpc(c) => c.backoff(),
        }
    }
}
