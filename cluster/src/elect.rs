//! The split-vote breaker. openraft 0.9 draws each node's election
//! timeout once, when its `Raft` starts, and checks it on a tick of 1.5 ×
//! the heartbeat. Two followers whose timeouts fall in the same tick both
//! stand as candidates of one term, each votes for itself, and neither
//! wins; their next candidacies come after the same fixed timeouts on the
//! same ticks, so the split can repeat, each time costing the timeout
//! again (300–600 ms plus a tick by default). A failover with one split
//! took 2.1–2.5 s against a gate of 2 s.
//!
//! The breaker watches this node's metrics: a candidacy that has lasted a
//! delay drawn afresh for each candidacy (a third to all of the election
//! minimum) without a committed vote starts the next election at once
//! (`Raft::trigger().elect()`), so the two candidates part by a fresh
//! random gap and the first to stand again wins. openraft's own timer
//! stays the backstop; after [`FAST_RETRIES`] quick candidacies without a
//! leader (a minority that cannot win) the breaker leaves it to that timer.
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
//! Safety depends on neither: an election started early is an ordinary
//! Raft election (a higher term, the same vote and log rules).

use std::time::{Duration, Instant};

use openraft::ServerState;

use crate::network::SplitMix64;
use crate::Vote;

/// Quick candidacies per leaderless stretch.
pub const FAST_RETRIES: u32 = 3;

pub(crate) struct SplitBreaker {
    rng: SplitMix64,
    floor: Duration,
    spread: Duration,
    /// The candidacy being timed and when it is due to be replaced.
    armed: Option<(Vote, Instant)>,
    fired: u32,
}

impl SplitBreaker {
    /// Delays drawn from [election_min / 3, election_min).
    pub(crate) fn new(seed: u64, election_min: Duration) -> SplitBreaker {
        SplitBreaker {
            rng: SplitMix64::new(seed),
            floor: election_min / 3,
            spread: election_min - election_min / 3,
            armed: None,
            fired: 0,
        }
    }

    /// Whether to start an election now, given this node's state and vote.
    pub(crate) fn observe(&mut self, state: ServerState, vote: &Vote, now: Instant) -> bool {
        if vote.is_committed() {
            self.fired = 0;
        }
        if state != ServerState::Candidate || vote.is_committed() || self.fired >= FAST_RETRIES {
            self.armed = None;
            return false;
        }
        match self.armed {
            Some((v, due)) if v == *vote => {
                if now < due {
                    return false;
                }
                self.armed = None;
                self.fired += 1;
                true
            }
            _ => {
                let delay = self.floor + self.spread.mul_f64(self.rng.next_f64());
                self.armed = Some((*vote, now + delay));
                false
            }
        }
    }

    /// When the armed candidacy is due, if one is.
    pub(crate) fn due(&self) -> Option<Instant> {
        self.armed.map(|(_, d)| d)
    }
}

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
    fn a_stalled_candidacy_stands_again_after_a_fresh_delay_and_a_leader_resets_the_count() {
        let min = Duration::from_millis(300);
        let mut b = SplitBreaker::new(7, min);
        let t0 = Instant::now();
        let c = ServerState::Candidate;
        let mut delays = Vec::new();
        let mut now = t0;
        for term in 2..2 + FAST_RETRIES as u64 {
            let v = vote(term, 1, false);
            assert!(!b.observe(c, &v, now), "armed, not fired, at first sight");
            let due = b.due().expect("armed");
            let d = due - now;
            assert!(d >= min / 3 && d < min, "delay {d:?}");
            delays.push(d);
            assert!(!b.observe(c, &v, due - Duration::from_millis(1)));
            assert!(b.observe(c, &v, due), "fires when due");
            now = due;
        }
        assert!(
            delays.windows(2).any(|w| w[0] != w[1]),
            "drawn afresh: {delays:?}"
        );
        // A minority: no more quick candidacies until a leader is seen.
        let v = vote(9, 1, false);
        assert!(!b.observe(c, &v, now));
        assert!(!b.observe(c, &v, now + min * 10));
        // A committed vote (a leader elected) starts a new stretch.
        assert!(!b.observe(ServerState::Follower, &vote(9, 2, true), now));
        let v = vote(10, 1, false);
        assert!(!b.observe(c, &v, now));
        assert!(b.observe(c, &v, now + min));
        // Not a candidate (a follower that voted): never.
        let mut f = SplitBreaker::new(1, min);
        let v = vote(3, 2, false);
        assert!(!f.observe(ServerState::Follower, &v, now));
        assert!(!f.observe(ServerState::Follower, &v, now + min * 10));
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
