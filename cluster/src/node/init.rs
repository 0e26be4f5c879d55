//! Making a new cluster ([`Node::initialize_members`]), and what a node
//! knows of it ([`Node::cluster_id`]), for the operator's `Init` call
//! (`transport/admin.rs`).

use std::collections::BTreeMap;

use openraft::error::{InitializeError, RaftError};

use super::{Node, NodeError, NodeFile};
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

impl Node {
    /// Make `members` (id → where each listens) a new cluster; call on one
    /// of them. Refused, nothing written: no members, this node not among
    /// them, a node that already has a log or vote. On success the new
    /// cluster's id is recorded in this node's `node.toml`.
    pub fn initialize_members(&self, members: BTreeMap<u64, PeerNode>) -> Result<(), InitError> {
        if members.is_empty() {
            return Err(InitError::NoMembers);
        }
        if !members.contains_key(&self.id) {
            return Err(InitError::NotAMember {
                node: self.id,
                members: members.keys().copied().collect(),
            });
        }
        let failed = |reason: String| InitError::Failed {
            node: self.id,
            reason,
        };
        let raft = self.raft.clone();
        let rt = self
            .rt
            .as_ref()
            .ok_or_else(|| failed("the node has stopped".into()))?;
        match rt.block_on(raft.initialize(members)) {
            Ok(()) => {}
            Err(RaftError::APIError(InitializeError::NotAllowed(_))) => {
                return Err(InitError::AlreadyInitialized { node: self.id })
            }
            Err(e) => return Err(failed(e.to_string())),
        }
        // The new cluster's id, in this node's node.toml.
        let mut file = NodeFile::read(self.id, &self.dir)
            .map_err(|e| failed(e.to_string()))?
            .unwrap_or_else(|| NodeFile::new(self.id));
        if file.cluster_id.is_none() {
            file.cluster_id = Some(uuid::Uuid::now_v7().to_string());
            file.write(&self.dir).map_err(|e| failed(e.to_string()))?;
        }
        Ok(())
    }

    /// The cluster's id as this node's `node.toml` records it (set on the
    /// node that initialized or seeded the cluster), if any.
    pub fn cluster_id(&self) -> Result<Option<String>, NodeError> {
        let file = NodeFile::read(self.id, &self.dir).map_err(|e| NodeError(e.to_string()))?;
        Ok(file.and_then(|f| f.cluster_id))
    }
}
