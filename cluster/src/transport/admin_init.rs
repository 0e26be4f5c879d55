//! Making a new cluster with its members' URLs ([`initialize_members`]),
//! and what a node knows of it ([`cluster_id`]), for the `Admin`
//! service's `Init` and `Status`.

use std::collections::BTreeMap;

use openraft::error::{InitializeError, RaftError};

use crate::node::{Node, NodeError, NodeFile};
use crate::types::PeerNode;

/// An `Init` refused. Nothing was written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InitError {
    #[error("no members given")]
    NoMembers,
    #[error("node {node} is not among the members {members:?}: send init to one of them")]
    NotAMember { node: u64, members: Vec<u64> },
    #[error(
        "node {node} already belongs to an initialized cluster (its log or vote is not empty): \
         nothing changed; add nodes with `telha cluster add`"
    )]
    AlreadyInitialized { node: u64 },
    #[error("node {node} cannot initialize: {reason}")]
    Failed { node: u64, reason: String },
}

/// Make `members` (id → where each listens) a new cluster, on `node`
/// (one of them). Refused, nothing written: no members, `node` not among
/// them, a node that already has a log or vote. On success the new
/// cluster's id is recorded in `node`'s `node.toml` (as
/// `Node::initialize` does).
pub fn initialize_members(node: &Node, members: BTreeMap<u64, PeerNode>) -> Result<(), InitError> {
    let id = node.id();
    if members.is_empty() {
        return Err(InitError::NoMembers);
    }
    if !members.contains_key(&id) {
        return Err(InitError::NotAMember {
            node: id,
            members: members.keys().copied().collect(),
        });
    }
    let failed = |reason: String| InitError::Failed { node: id, reason };
    let raft = node.raft().clone();
    match node.block_on(raft.initialize(members)) {
        Ok(()) => {}
        Err(RaftError::APIError(InitializeError::NotAllowed(_))) => {
            return Err(InitError::AlreadyInitialized { node: id })
        }
        Err(e) => return Err(failed(e.to_string())),
    }
    let mut file = NodeFile::read(id, node.dir())
        .map_err(|e| failed(e.to_string()))?
        .unwrap_or_else(|| NodeFile::new(id));
    if file.cluster_id.is_none() {
        file.cluster_id = Some(uuid::Uuid::now_v7().to_string());
        file.write(node.dir()).map_err(failed)?;
    }
    Ok(())
}

/// The cluster's id as `node`'s `node.toml` records it (set on the node
/// that initialized or seeded the cluster), if any.
pub fn cluster_id(node: &Node) -> Result<Option<String>, NodeError> {
    let file = NodeFile::read(node.id(), node.dir()).map_err(|e| NodeError(e.to_string()))?;
    Ok(file.and_then(|f| f.cluster_id))
}
