//! Membership changes on a [`TestCluster`]: a new node started with an
//! empty directory (a machine joining), membership calls sent to the
//! leader of the moment, a removed node stopped.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::TestCluster;
use crate::node::{EmptyDir, LearnerProgress, MembershipError, Node, NodeOptions};
use crate::PeerNode;

impl TestCluster {
    /// Start node `id` with an empty directory under the cluster's, on
    /// the router and in `nodes`; it is no member until added
    /// ([`TestCluster::join`]). `ids` keeps the first members only.
    pub fn start_joiner(&self, id: u64) -> Arc<Node> {
        let dir = self.dir.path().join(id.to_string());
        assert!(!dir.exists(), "node {id} has a directory already");
        let opts = NodeOptions {
            empty_dir: EmptyDir::Join,
            ..self.opts.clone()
        };
        let node = Node::start(id, &dir, &self.router, opts).unwrap();
        self.nodes.insert(node);
        self.node(id)
    }

    /// Start node `id` empty and add it as a learner through the leader,
    /// waiting up to `within` for it to catch up; where it stands.
    pub fn join(&self, id: u64, within: Duration) -> LearnerProgress {
        self.start_joiner(id);
        self.admin(within, |n| n.add_learner(id, PeerNode::default(), within))
            .unwrap_or_else(|e| panic!("adding node {id}: {e}"))
    }

    /// Run a membership call on the node that leads now, following
    /// `NotLeader` (no leader known yet, or a hint) until `within`.
    pub fn admin<T>(
        &self,
        within: Duration,
        call: impl Fn(&Node) -> Result<T, MembershipError>,
    ) -> Result<T, MembershipError> {
        let end = Instant::now() + within;
        loop {
            let leader = self
                .nodes
                .all()
                .into_iter()
                .find(|n| n.metrics().current_leader == Some(n.id()));
            let res = match &leader {
                Some(n) => call(n),
                None => Err(MembershipError::NotLeader {
                    node: 0,
                    leader: None,
                }),
            };
            match res {
                Err(MembershipError::NotLeader { .. }) if Instant::now() < end => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                res => return res,
            }
        }
    }

    /// Stop node `id` (a member removed, or about to be) and take it out
    /// of `nodes`; its directory stays.
    pub fn stop_node(&self, id: u64) {
        self.crash(id);
    }
}
