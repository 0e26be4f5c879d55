//! A node's state as the `Admin` service's messages: the status (role,
//! leader, log positions, membership with URLs, followers' lag) and the
//! membership after a change.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use openraft::{RaftMetrics, ServerState};

use super::wire;
use crate::node::{MembershipView, Node};
use crate::types::{LogId, PeerNode};

/// Where each member listens: the membership's record first, else the
/// service's configured peers.
pub(crate) fn url_of(
    m: &RaftMetrics<u64, PeerNode>,
    urls: &HashMap<u64, String>,
    id: u64,
) -> String {
    m.membership_config
        .membership()
        .get_node(&id)
        .map(|n| n.addr.clone())
        .filter(|a| !a.is_empty())
        .or_else(|| urls.get(&id).cloned())
        .unwrap_or_default()
}

pub(crate) fn log_id(l: &LogId) -> wire::LogId {
    wire::LogId {
        term: l.leader_id.term,
        leader: l.leader_id.node_id,
        index: l.index,
    }
}

/// The role name of `state` for member `id` under `m`.
pub fn role_name(m: &RaftMetrics<u64, PeerNode>) -> &'static str {
    match m.state {
        ServerState::Leader => "leader",
        ServerState::Candidate => "candidate",
        ServerState::Shutdown => "shutdown",
        ServerState::Learner => "learner",
        ServerState::Follower => {
            let learners: BTreeSet<u64> = m.membership_config.membership().learner_ids().collect();
            if learners.contains(&m.id) {
                "learner"
            } else {
                "follower"
            }
        }
    }
}

/// Each other member's matched index on the leader (`None` elsewhere).
pub fn matched(m: &RaftMetrics<u64, PeerNode>) -> Option<BTreeMap<u64, Option<u64>>> {
    if m.state != ServerState::Leader {
        return None;
    }
    let r = m.replication.as_ref()?;
    Some(
        r.iter()
            .filter(|(id, _)| **id != m.id)
            .map(|(id, l)| (*id, l.map(|l| l.index)))
            .collect(),
    )
}

/// On the leader, the highest index a quorum of every configuration holds
/// (the leader counts with its last log index).
pub fn committed(m: &RaftMetrics<u64, PeerNode>) -> Option<u64> {
    let matched = matched(m)?;
    let own = m.last_log_index.unwrap_or(0);
    let configs = m.membership_config.membership().get_joint_config().clone();
    configs
        .iter()
        .map(|voters| {
            let mut held: Vec<u64> = voters
                .iter()
                .map(|v| {
                    if *v == m.id {
                        own
                    } else {
                        matched.get(v).copied().flatten().unwrap_or(0)
                    }
                })
                .collect();
            held.sort_unstable_by(|a, b| b.cmp(a));
            held.get(voters.len() / 2).copied().unwrap_or(0)
        })
        .min()
}

pub(crate) fn membership(
    v: &MembershipView,
    m: &RaftMetrics<u64, PeerNode>,
    urls: &HashMap<u64, String>,
) -> wire::Membership {
    let member = |id: &u64| wire::Member {
        id: *id,
        url: url_of(m, urls, *id),
    };
    wire::Membership {
        voters: v.voters.iter().map(member).collect(),
        learners: v.learners.iter().map(member).collect(),
        configs: v
            .configs
            .iter()
            .map(|c| wire::VoterSet {
                ids: c.iter().copied().collect(),
            })
            .collect(),
        log_id: v.log_id.as_ref().map(log_id),
        committed: v.committed,
        removed: v.removed.iter().copied().collect(),
    }
}

/// `node`'s status.
pub(crate) fn status(
    node: &Node,
    urls: &HashMap<u64, String>,
) -> Result<wire::StatusReply, String> {
    let view = node.membership().map_err(|e| e.to_string())?;
    let m = node.metrics();
    let cluster_id = super::admin_init::cluster_id(node)
        .map_err(|e| e.to_string())?
        .unwrap_or_default();
    let last = m.last_log_index.unwrap_or(0);
    let followers = matched(&m)
        .unwrap_or_default()
        .into_iter()
        .map(|(id, matched)| wire::Follower {
            id,
            matched,
            lag: last.saturating_sub(matched.unwrap_or(0)),
        })
        .collect();
    Ok(wire::StatusReply {
        node_id: node.id(),
        cluster_id,
        role: role_name(&m).into(),
        leader_id: m.current_leader,
        leader_url: m
            .current_leader
            .map(|l| url_of(&m, urls, l))
            .unwrap_or_default(),
        term: m.current_term,
        last_log_index: m.last_log_index,
        committed: committed(&m),
        applied: m.last_applied.as_ref().map(log_id),
        snapshot: m.snapshot.as_ref().map(log_id),
        purged: m.purged.as_ref().map(log_id),
        membership: Some(membership(&view, &m, urls)),
        followers,
        millis_since_quorum_ack: if m.state == ServerState::Leader {
            m.millis_since_quorum_ack
        } else {
            None
        },
        engine_open: node.queue().is_ok(),
    })
}
