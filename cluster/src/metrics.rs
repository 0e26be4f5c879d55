//! The `telha_cluster_*` Prometheus metrics of one node, from its Raft
//! metrics: what `telha cluster status` shows, for scraping. The server
//! appends [`render`] to its `/metrics` in cluster mode.

use std::fmt::Write;

use openraft::{RaftMetrics, ServerState};

use crate::node::Node;
use crate::transport::{committed_index, matched_indexes};
use crate::types::PeerNode;

/// Node `node`'s metrics in the Prometheus text format.
pub fn render(node: &Node) -> String {
    render_metrics(&node.metrics())
}

fn family(o: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(o, "# HELP {name} {help}");
    let _ = writeln!(o, "# TYPE {name} {kind}");
}

fn gauge(o: &mut String, name: &str, help: &str, v: u64) {
    family(o, name, "gauge", help);
    let _ = writeln!(o, "{name} {v}");
}

/// `m` in the Prometheus text format (every family, always present; an
/// unknown leader is 0, node ids start at 1).
pub fn render_metrics(m: &RaftMetrics<u64, PeerNode>) -> String {
    let mut o = String::new();
    let leader = m.state == ServerState::Leader;
    let membership = m.membership_config.membership();
    gauge(&mut o, "telha_cluster_node_id", "This node's id.", m.id);
    gauge(
        &mut o,
        "telha_cluster_leader_id",
        "The leader this node knows of (0: none).",
        m.current_leader.unwrap_or(0),
    );
    gauge(
        &mut o,
        "telha_cluster_is_leader",
        "1 on the leader, else 0.",
        u64::from(leader),
    );
    gauge(
        &mut o,
        "telha_cluster_term",
        "The current term.",
        m.current_term,
    );
    gauge(
        &mut o,
        "telha_cluster_last_log_index",
        "The last index in this node's log.",
        m.last_log_index.unwrap_or(0),
    );
    if let Some(c) = committed_index(m) {
        gauge(
            &mut o,
            "telha_cluster_committed_index",
            "The index a quorum of every configuration holds (on the leader only).",
            c,
        );
    }
    gauge(
        &mut o,
        "telha_cluster_applied_index",
        "The last index applied to this node's store.",
        m.last_applied.map_or(0, |l| l.index),
    );
    gauge(
        &mut o,
        "telha_cluster_voters",
        "Voters in the membership (of any configuration).",
        membership.voter_ids().count() as u64,
    );
    gauge(
        &mut o,
        "telha_cluster_learners",
        "Learners in the membership.",
        membership.learner_ids().count() as u64,
    );
    gauge(
        &mut o,
        "telha_cluster_joint",
        "1 while the membership is joint (a change to finish), else 0.",
        u64::from(membership.get_joint_config().len() > 1),
    );
    if let Some(matched) = matched_indexes(m) {
        let last = m.last_log_index.unwrap_or(0);
        family(
            &mut o,
            "telha_cluster_follower_lag",
            "gauge",
            "On the leader: its last index minus what each member is known to hold.",
        );
        for (id, i) in &matched {
            let lag = last.saturating_sub(i.unwrap_or(0));
            let _ = writeln!(o, "telha_cluster_follower_lag{{node=\"{id}\"}} {lag}");
        }
        family(
            &mut o,
            "telha_cluster_follower_matched_index",
            "gauge",
            "On the leader: the last index each member is known to hold.",
        );
        for (id, i) in &matched {
            let _ = writeln!(
                o,
                "telha_cluster_follower_matched_index{{node=\"{id}\"}} {}",
                i.unwrap_or(0)
            );
        }
    }
    if let (true, Some(ms)) = (leader, m.millis_since_quorum_ack) {
        gauge(
            &mut o,
            "telha_cluster_millis_since_quorum_ack",
            "On the leader: milliseconds since a quorum acknowledged it.",
            ms,
        );
    }
    o
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};
    use std::sync::Arc;

    use openraft::{CommittedLeaderId, LogId, Membership, StoredMembership, Vote};

    use super::*;

    fn log(index: u64) -> LogId<u64> {
        LogId::new(CommittedLeaderId::new(3, 1), index)
    }

    fn value(text: &str, series: &str) -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
            .unwrap_or_else(|| panic!("no {series} in\n{text}"))
            .parse()
            .unwrap()
    }

    #[test]
    fn a_leaders_metrics_carry_term_indexes_members_and_lag() {
        let voters: BTreeSet<u64> = [1, 2, 3].into();
        let nodes: BTreeMap<u64, PeerNode> = (1..=4).map(|i| (i, PeerNode::default())).collect();
        let mut m = RaftMetrics::<u64, PeerNode>::new_initial(1);
        m.state = ServerState::Leader;
        m.current_leader = Some(1);
        m.current_term = 3;
        m.vote = Vote::new_committed(3, 1);
        m.last_log_index = Some(50);
        m.last_applied = Some(log(48));
        m.millis_since_quorum_ack = Some(12);
        m.membership_config = Arc::new(StoredMembership::new(
            Some(log(2)),
            Membership::new(vec![voters], nodes),
        ));
        m.replication = Some(BTreeMap::from([
            (1, Some(log(50))),
            (2, Some(log(47))),
            (3, Some(log(30))),
            (4, None),
        ]));
        let t = render_metrics(&m);
        assert_eq!(value(&t, "telha_cluster_leader_id"), 1);
        assert_eq!(value(&t, "telha_cluster_is_leader"), 1);
        assert_eq!(value(&t, "telha_cluster_term"), 3);
        assert_eq!(value(&t, "telha_cluster_last_log_index"), 50);
        // Two of three voters hold 47: the quorum's index.
        assert_eq!(value(&t, "telha_cluster_committed_index"), 47);
        assert_eq!(value(&t, "telha_cluster_applied_index"), 48);
        assert_eq!(value(&t, "telha_cluster_voters"), 3);
        assert_eq!(value(&t, "telha_cluster_learners"), 1);
        assert_eq!(value(&t, "telha_cluster_joint"), 0);
        assert_eq!(value(&t, "telha_cluster_follower_lag{node=\"2\"}"), 3);
        assert_eq!(value(&t, "telha_cluster_follower_lag{node=\"3\"}"), 20);
        assert_eq!(value(&t, "telha_cluster_follower_lag{node=\"4\"}"), 50);
        assert!(!t.contains("node=\"1\""), "the leader is no follower:\n{t}");
        assert_eq!(value(&t, "telha_cluster_millis_since_quorum_ack"), 12);
        // Every sample line belongs to a declared family.
        for l in t.lines().filter(|l| !l.starts_with('#')) {
            let name = l.split(['{', ' ']).next().unwrap();
            assert!(t.contains(&format!("# TYPE {name} gauge")), "{l}");
        }
    }

    #[test]
    fn a_follower_has_no_lag_or_committed_series() {
        let mut m = RaftMetrics::<u64, PeerNode>::new_initial(2);
        m.state = ServerState::Follower;
        m.current_leader = Some(1);
        let t = render_metrics(&m);
        assert_eq!(value(&t, "telha_cluster_leader_id"), 1);
        assert_eq!(value(&t, "telha_cluster_is_leader"), 0);
        assert!(!t.contains("telha_cluster_follower_lag"), "{t}");
        assert!(!t.contains("telha_cluster_committed_index"), "{t}");
    }
}
