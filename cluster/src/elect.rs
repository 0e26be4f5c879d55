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
//! Safety does not depend on it: an election started early is an ordinary
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
}
