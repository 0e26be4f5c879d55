//! The Raft transport between processes: the `telha.cluster.v1` `Raft`
//! gRPC service (proto/telha/cluster/v1/raft.proto).
//!
//! - [`GrpcNetwork`] (`client.rs`): openraft's `RaftNetworkFactory` over
//!   tonic, one lazily connected channel per peer, HTTP/2 keep-alive, each
//!   RPC bounded by `RPCOption::hard_ttl`; a connection error answers
//!   `Unreachable` so openraft backs off (a dead pooled connection to a
//!   restarted peer is noticed by keep-alive and reconnected);
//! - [`PeerService`] (`server.rs`): the service that hands each RPC to the
//!   local node's `Raft` (found through its [`Router`](crate::network::Router),
//!   where the node registers itself), after the node's join gate
//!   (`node/dir.rs`) as the in-process router applies it;
//! - [`AdminService`] (`admin.rs`, `admin_status.rs`): the operator's
//!   `Admin` service (admin.proto) over a [`Node`](crate::node::Node):
//!   status, init and the membership verbs; a non-leader answers
//!   `UNAVAILABLE` with [`LEADER_ID_METADATA`] / [`LEADER_URL_METADATA`];
//!   [`AdminClient`] (`admin_client.rs`) follows that hint once;
//!   [`admin_render`] is `telha cluster`'s text and JSON;
//! - `snapshot.rs`: `InstallSnapshot`, a client stream of the checkpoint's
//!   files in chunks, with the in-process stream's deadlines
//!   ([`SnapshotDeadlines`]: idle progress and total) on both sides, and
//!   the sender's `cancel` honoured.
//!
//! **Payloads.** openraft's requests and replies travel as an opaque,
//! versioned payload: MessagePack (named fields) of their serde form,
//! tagged [`PEER_FORMAT`]. Bytes that do not decode, or an unknown format,
//! are a [`TransportError`] (`INVALID_ARGUMENT` on the wire), never a panic.
//!
//! **Peer token.** With a token, every call must carry it in the
//! [`PEER_TOKEN_METADATA`] metadata (compared in constant time), else
//! `UNAUTHENTICATED`; [`check_peer_listener`] refuses a non-loopback
//! listener without one (the rule for client tokens).

mod admin;
mod admin_client;
mod admin_init;
pub mod admin_render;
mod admin_status;
mod client;
mod server;
mod snapshot;

use serde::de::DeserializeOwned;
use serde::Serialize;

pub use admin::{
    check_url, membership_status, AdminService, ADMIN_ERROR_METADATA, ADMIN_WAIT_DEFAULT,
    ADMIN_WAIT_MAX, LEADER_ID_METADATA, LEADER_URL_METADATA,
};
pub use admin_client::{AdminClient, AdminError};
pub use admin_init::{cluster_id, initialize_members, InitError};
pub use admin_status::{committed as committed_index, matched as matched_indexes, role_name};
pub use client::{GrpcClient, GrpcNetwork, GrpcOptions};
pub use server::PeerService;
pub use telha_jobs_proto::cluster_v1 as wire;

pub use crate::network::SnapshotDeadlines;

/// The payload encoding this build writes and reads.
pub const PEER_FORMAT: u32 = 1;

/// The metadata key carrying the peer token.
pub const PEER_TOKEN_METADATA: &str = "telha-peer-token";

/// A peer's request or reply that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransportError {
    /// A payload format this build does not know.
    #[error("peer payload format {got} is not supported (this build speaks {PEER_FORMAT})")]
    Format { got: u32 },
    /// Bytes that do not decode as what they should carry.
    #[error("{what} does not decode: {why}")]
    Decode { what: &'static str, why: String },
    /// A snapshot stream out of order or inconsistent.
    #[error("bad snapshot stream: {0}")]
    Snapshot(String),
    /// A token that cannot travel as metadata, or a listener refused.
    #[error("{0}")]
    Config(String),
}

impl From<TransportError> for tonic::Status {
    fn from(e: TransportError) -> tonic::Status {
        tonic::Status::invalid_argument(e.to_string())
    }
}

/// MessagePack (named fields) of `v`.
pub fn encode<T: Serialize>(what: &'static str, v: &T) -> Result<Vec<u8>, TransportError> {
    rmp_serde::to_vec_named(v).map_err(|e| TransportError::Decode {
        what,
        why: format!("encoding failed: {e}"),
    })
}

/// `bytes` of format `format` as a `T`, or why not.
pub fn decode<T: DeserializeOwned>(
    what: &'static str,
    format: u32,
    bytes: &[u8],
) -> Result<T, TransportError> {
    if format != PEER_FORMAT {
        return Err(TransportError::Format { got: format });
    }
    rmp_serde::from_slice(bytes).map_err(|e| TransportError::Decode {
        what,
        why: e.to_string(),
    })
}

/// A listener for peers at `addr` without a token is refused unless it is
/// a loopback address (today's rule for client tokens).
pub fn check_peer_listener(
    addr: std::net::SocketAddr,
    token: Option<&str>,
) -> Result<(), TransportError> {
    if token.is_some_and(|t| !t.trim().is_empty()) || addr.ip().to_canonical().is_loopback() {
        return Ok(());
    }
    Err(TransportError::Config(format!(
        "the peer listener {addr} is not loopback: a peer token is required"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_and_unknown_formats_are_typed_errors() {
        let got = decode::<crate::Vote>("vote", PEER_FORMAT, &[0xc1, 0xff, 0x00]);
        assert!(
            matches!(got, Err(TransportError::Decode { what: "vote", .. })),
            "{got:?}"
        );
        let v = encode("vote", &crate::Vote::new(3, 1)).unwrap();
        assert_eq!(
            decode::<crate::Vote>("vote", PEER_FORMAT, &v).unwrap(),
            crate::Vote::new(3, 1)
        );
        assert_eq!(
            decode::<crate::Vote>("vote", 9, &v),
            Err(TransportError::Format { got: 9 })
        );
    }

    #[test]
    fn a_non_loopback_listener_needs_a_token() {
        let lo: std::net::SocketAddr = "127.0.0.1:7450".parse().unwrap();
        let any: std::net::SocketAddr = "0.0.0.0:7450".parse().unwrap();
        assert!(check_peer_listener(lo, None).is_ok());
        assert!(check_peer_listener(any, None).is_err());
        assert!(check_peer_listener(any, Some(" ")).is_err());
        assert!(check_peer_listener(any, Some("s3cret")).is_ok());
    }
}
