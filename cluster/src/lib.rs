//! telha-jobs replicated by Raft: one leader runs the engine, its RocksDB
//! write batches travel as Raft entries, and every node applies them to its
//! own store. This crate is the only one that names openraft (pinned at
//! 0.9.25), so a later move to 0.10 stays here.
//!
//! In progress (issues 38, 39 and 40): the type configuration, the log store
//! with group commit, the state machine over a `telha_jobs::replica` store,
//! snapshots (checkpoints of that store) and log purge, the proposer, a
//! node with its engine per leadership term and its membership changes
//! (`node/membership.rs`), and for in-process clusters
//! the faulty router (snapshots streamed file by file) and `ClusterQueue`;
//! the Raft transport over gRPC (`transport/`: the `telha.cluster.v1`
//! client and service, and the operator's `Admin` service and client),
//! mounted by `telha serve --cluster`; the `telha_cluster_*` metrics
//! (`metrics.rs`). docs/ARCHITECTURE.md "Cluster (in progress)".

// openraft's traits return its `StorageError` (224 bytes) by value; the
// helpers that build one return it the same way rather than box and unbox.
#![allow(clippy::result_large_err)]

pub mod client;
pub mod crc32c;
mod elect;
#[cfg(feature = "failpoints")]
pub mod failpoint;
pub mod harness;
pub mod log_store;
pub mod metrics;
pub mod network;
pub mod node;
pub mod probe;
pub mod proposer;
pub mod snapshot;
pub mod state_machine;
mod timing;
pub mod transport;
mod types;

pub use log_store::{LogStore, LogStoreError};
pub use state_machine::StateMachine;
pub use types::{
    Applied, Entry, Epoch, LogId, Payload, PeerNode, SnapshotDir, StorageError, TypeConfig, Vote,
    PAYLOAD_FORMAT,
};
