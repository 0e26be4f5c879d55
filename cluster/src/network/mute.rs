//! A leader's way to step aside in openraft 0.9, which has no check-quorum:
//! a leader no quorum acknowledges keeps sending append-entries (heartbeats
//! and retries), and each one that arrives renews the followers' leader
//! lease, so they never elect, though nothing can commit (a one-way
//! partition: its messages arrive, no reply comes back). [`Mute`] wraps a
//! node's network: while muted, its append-entries and snapshots fail
//! locally as `Unreachable`; votes still go. The followers' leases run
//! out, they elect, and the new leader's messages (when they arrive)
//! depose this one; the node unmutes once it no longer leads.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use openraft::error::{Fatal, RPCError, RaftError, ReplicationClosed, StreamingError, Unreachable};
use openraft::network::{Backoff, RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, VoteRequest, VoteResponse,
};
use openraft::Snapshot;

use crate::types::{PeerNode, TypeConfig, Vote};

#[derive(Debug, thiserror::Error)]
#[error("this node stepped aside: no quorum acknowledged it as leader")]
struct Muted;

/// Wraps node's network factory `N`; `muted` switches it.
pub struct Mute<N> {
    inner: N,
    muted: Arc<AtomicBool>,
}

impl<N> Mute<N> {
    pub fn new(inner: N, muted: Arc<AtomicBool>) -> Mute<N> {
        Mute { inner, muted }
    }
}

impl<N: RaftNetworkFactory<TypeConfig>> RaftNetworkFactory<TypeConfig> for Mute<N> {
    type Network = MuteClient<N::Network>;

    async fn new_client(&mut self, target: u64, node: &PeerNode) -> Self::Network {
        MuteClient {
            inner: self.inner.new_client(target, node).await,
            muted: self.muted.clone(),
        }
    }
}

pub struct MuteClient<C> {
    inner: C,
    muted: Arc<AtomicBool>,
}

impl<C> MuteClient<C> {
    fn muted(&self) -> bool {
        self.muted.load(Ordering::Acquire)
    }
}

impl<C: RaftNetwork<TypeConfig>> RaftNetwork<TypeConfig> for MuteClient<C> {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<u64>, RPCError<u64, PeerNode, RaftError<u64>>> {
        if self.muted() {
            return Err(RPCError::Unreachable(Unreachable::new(&Muted)));
        }
        self.inner.append_entries(rpc, option).await
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<u64>,
        option: RPCOption,
    ) -> Result<VoteResponse<u64>, RPCError<u64, PeerNode, RaftError<u64>>> {
        self.inner.vote(rpc, option).await
    }

    async fn full_snapshot(
        &mut self,
        vote: Vote,
        snapshot: Snapshot<TypeConfig>,
        cancel: impl Future<Output = ReplicationClosed> + Send + 'static,
        option: RPCOption,
    ) -> Result<SnapshotResponse<u64>, StreamingError<TypeConfig, Fatal<u64>>> {
        if self.muted() {
            return Err(StreamingError::Unreachable(Unreachable::new(&Muted)));
        }
        self.inner
            .full_snapshot(vote, snapshot, cancel, option)
            .await
    }

    fn backoff(&self) -> Backoff {
        self.inner.backoff()
    }
}
