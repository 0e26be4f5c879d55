//! Elections the watcher starts itself.
//!
//! **The overdue follower.** openraft 0.9 lengthens a node's election
//! timeout by 2 × the election max once, as a candidate, it has seen a
//! greater log (`seen_greater_log`), and clears that only when the node
//! next stands by its own timer. A follower that was behind at one
//! failover (it stood first and was refused) therefore stands 1.2 s late
//! at a later one, even when it is then the only node that can win: a
//! failover experiment (`cluster_gates` with `TELHA_BENCH_BEHIND=1`) took
//! 2.33 s that way. [`Overdue`] makes a follower that has heard no leader
//! for longer than openraft's longest ordinary wait (leader lease +
//! election max + a tick + a heartbeat) stand itself, once per leader.
//!
//! Not done: a split-vote breaker (a stalled candidacy standing again
//! after a fresh random delay) was tried and removed. In 0.9 two
//! candidates of one term do not stall (the refusal carries the other's
//! vote, and the lower node id follows the higher at once), while a
//! candidate refused for its shorter log, standing again quickly, raised
//! the term past the up-to-date node's candidacy twice: a 2.44 s round.
//!
//! Safety does not depend on this: an election started early is an
//! ordinary Raft election (a higher term, the same vote and log rules).

use std::time::{Duration, Instant};

use openraft::ServerState;

use crate::Vote;

/// See the module doc.
pub(crate) struct Overdue {
    limit: Duration,
    /// The leader's vote this node last stood against.
    stood: Option<Vote>,
}

impl Overdue {
    pub(crate) fn new(heartbeat: Duration, election_max: Duration) -> Overdue {
        Overdue {
            // Lease (= election max) + the longest timeout + a tick (1.5
            // heartbeats) + a heartbeat's margin.
            limit: election_max * 2 + heartbeat * 5 / 2,
            stood: None,
        }
    }

    /// Whether to stand now: a follower of a committed vote of another
    /// node that last heard a leader at `heard`.
    pub(crate) fn observe(
        &mut self,
        state: ServerState,
        vote: &Vote,
        leader_is_self: bool,
        heard: Instant,
        now: Instant,
    ) -> bool {
        let overdue = state == ServerState::Follower
            && vote.is_committed()
            && !leader_is_self
            && now.saturating_duration_since(heard) > self.limit
            && self.stood != Some(*vote);
        if overdue {
            self.stood = Some(*vote);
        }
        overdue
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vote(term: u64, node: u64, committed: bool) -> Vote {
        if committed {
            Vote::new_committed(term, node)
        } else {
            Vote::new(term, node)
        }
    }

    #[test]
    fn a_follower_that_heard_no_leader_past_openrafts_longest_wait_stands_once_per_leader() {
        let (hb, max) = (Duration::from_millis(100), Duration::from_millis(600));
        let mut o = Overdue::new(hb, max);
        let f = ServerState::Follower;
        let t0 = Instant::now();
        let leader = vote(2, 3, true);
        let limit = max * 2 + hb * 5 / 2;
        assert!(!o.observe(f, &leader, false, t0, t0 + limit));
        assert!(o.observe(f, &leader, false, t0, t0 + limit + Duration::from_millis(1)));
        assert!(
            !o.observe(f, &leader, false, t0, t0 + limit * 3),
            "once per leader"
        );
        let next = vote(3, 1, true);
        assert!(o.observe(f, &next, false, t0, t0 + limit * 3));
        // Heard lately, a candidate, an uncommitted vote or itself the
        // leader: never.
        let mut o = Overdue::new(hb, max);
        let late = t0 + limit * 2;
        assert!(!o.observe(f, &leader, false, late, late + hb));
        assert!(!o.observe(ServerState::Candidate, &leader, false, t0, late));
        assert!(!o.observe(f, &vote(2, 3, false), false, t0, late));
        assert!(!o.observe(f, &leader, true, t0, late));
    }
}
