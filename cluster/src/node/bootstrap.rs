//! What `telha serve --cluster` asks of a node once it runs: agree with
//! the `--peers` it was given, and `--bootstrap` a new cluster.

use std::collections::{BTreeMap, BTreeSet};

use super::{Node, NodeError, NodeFile};
use crate::types::PeerNode;

/// What [`Node::bootstrap`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bootstrap {
    /// This node's Raft state was empty: the cluster is initialized with
    /// the given members.
    Initialized,
    /// This node already holds a log or a snapshot (initialized here
    /// before, or reached by another member's initialization): nothing
    /// done.
    AlreadyInitialized,
}

impl Node {
    /// Make `members` (node ids) the cluster; call on one node of a new
    /// cluster. Members reached over gRPC should carry their URLs:
    /// [`Node::initialize_peers`].
    pub fn initialize(&self, members: &[u64]) -> Result<(), NodeError> {
        let nodes = members.iter().map(|&m| (m, PeerNode::default())).collect();
        self.initialize_nodes(nodes)
    }

    /// Make `nodes` (id → how peers reach it) the cluster: the membership
    /// every node stores then carries each member's address.
    pub fn initialize_nodes(&self, nodes: BTreeMap<u64, PeerNode>) -> Result<(), NodeError> {
        self.block_on(self.raft.initialize(nodes))
            .map_err(|e| NodeError(format!("node {}: initialize: {e}", self.id)))?;
        // The new cluster's id, in this node's node.toml.
        let mut file = NodeFile::read(self.id, &self.dir)
            .map_err(|e| NodeError(e.to_string()))?
            .unwrap_or_else(|| NodeFile::new(self.id));
        if file.cluster_id.is_none() {
            file.cluster_id = Some(uuid::Uuid::now_v7().to_string());
            file.write(&self.dir)
                .map_err(|e| NodeError(format!("node {}: {e}", self.id)))?;
        }
        Ok(())
    }

    /// Initialize the cluster with `peers` (id → peer URL) if this node's
    /// Raft state is empty (no log entry, no snapshot, no membership);
    /// otherwise nothing. Every member of a new cluster may be started
    /// this way: they all write the same membership entry at index 0, and
    /// a member another one reached first already holds it.
    pub fn bootstrap(&self, peers: &BTreeMap<u64, String>) -> Result<Bootstrap, NodeError> {
        if !peers.contains_key(&self.id) {
            return Err(NodeError(format!(
                "node {}: bootstrap: this node is not among the members {:?}",
                self.id,
                peers.keys().collect::<Vec<_>>()
            )));
        }
        if !self.raft_state_empty() {
            return Ok(Bootstrap::AlreadyInitialized);
        }
        let nodes = peers
            .iter()
            .map(|(&id, url)| (id, PeerNode { addr: url.clone() }))
            .collect();
        match self.initialize_nodes(nodes) {
            Ok(()) => Ok(Bootstrap::Initialized),
            // Another member's entry arrived between the look and the call.
            Err(_) if !self.raft_state_empty() => Ok(Bootstrap::AlreadyInitialized),
            Err(e) => Err(e),
        }
    }

    /// Whether this node holds no log entry, no snapshot and no
    /// membership. Read from Raft's state, not its metrics (right after
    /// start those may still be the initial, empty ones). A log's first
    /// entry is a membership, so no voters and no snapshot is no log.
    pub fn raft_state_empty(&self) -> bool {
        self.block_on(self.raft.with_raft_state(|st| {
            st.snapshot_meta.last_log_id.is_none()
                && st
                    .membership_state
                    .effective()
                    .membership()
                    .voter_ids()
                    .next()
                    .is_none()
        }))
        // A stopped core: not empty, so nothing is initialized over it.
        .unwrap_or(false)
    }

    /// Refuse `peers` (id → URL) that disagree with the membership this
    /// node stores: a different set of voters (a data directory of another
    /// cluster, or a peer list that is out of date). A node with no
    /// membership yet, or in a joint configuration (a change under way),
    /// is not refused here.
    pub fn check_peers(&self, peers: &BTreeMap<u64, String>) -> Result<(), NodeError> {
        // From Raft's state, not its metrics: right after start the core
        // task may not have published them yet, and the initial (empty)
        // metrics would let any peer list through.
        let membership = self
            .block_on(
                self.raft
                    .with_raft_state(|st| st.membership_state.effective().membership().clone()),
            )
            .map_err(|e| NodeError(format!("node {}: raft: {e}", self.id)))?;
        if membership.get_joint_config().len() != 1 {
            return Ok(());
        }
        let stored: BTreeSet<u64> = membership.voter_ids().collect();
        if stored.is_empty() {
            return Ok(());
        }
        let given: BTreeSet<u64> = peers.keys().copied().collect();
        if stored != given {
            return Err(NodeError(format!(
                "node {}: --peers names nodes {given:?} but the membership stored in {} has \
                 voters {stored:?}: a data directory of another cluster, or a peer list out of \
                 date (membership changes go through `telha cluster`)",
                self.id,
                self.dir.display()
            )));
        }
        Ok(())
    }

    /// The URL a member is reached at, as the stored membership has it
    /// (empty for a member initialized without addresses).
    pub fn member_url(&self, id: u64) -> Option<String> {
        let m = self.metrics();
        m.membership_config
            .membership()
            .get_node(&id)
            .map(|n| n.addr.clone())
            .filter(|a| !a.is_empty())
    }
}
