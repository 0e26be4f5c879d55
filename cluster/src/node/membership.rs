//! Membership changes on a running cluster (issue 39, stage 3): the
//! operator's verbs, called on the leader. Each one first confirms this
//! node leads and has applied everything committed
//! (`Raft::ensure_linearizable`), checks the request against the
//! membership it then sees, and only then proposes: a refused call
//! changes nothing and says why ([`MembershipError`]).
//!
//! - [`Node::add_learner`]: a new id joins as a learner (it receives the
//!   log, or a snapshot when the leader purged what it lacks, and does not
//!   vote); the call waits until it caught up or `within` passed, and
//!   answers where it stands ([`LearnerProgress`]).
//! - [`Node::promote`]: learners become voters, once each has caught up
//!   with the leader's log as it was at the call (else refused, nothing
//!   changed).
//! - [`Node::remove`]: members leave. The last voter, or a majority of
//!   the voters at once, is refused. A removed leader keeps leading until
//!   the configuration without it commits, then steps down (openraft
//!   `leader_step_down`); the others elect among themselves.
//! - [`Node::replace`]: `old` (a voter) out, `new` (always a new id) in:
//!   `new` added as a learner and caught up, then one change swaps the
//!   voters. Called again after a `NotCaughtUp`, it resumes with the
//!   learner already there.
//! - [`Node::finish_joint`]: a joint configuration left by an interrupted
//!   change (openraft 0.9 proposes the second, uniform step from the
//!   caller's task: a leader that crashed or lost office between the two
//!   leaves the cluster joint, openraft #1351) is finished towards its
//!   target, the last of its configurations, as the interrupted change
//!   meant to.
//! - [`Node::membership`]: this node's view (any node): voters, learners,
//!   the configurations (two while joint), whether committed, the ids
//!   ever removed.
//!
//! **The joint rule.** While the membership is joint, or its last entry is
//! not committed yet, every verb but `finish_joint` is refused (`Joint`,
//! `InProgress`): changes go one at a time, from a committed uniform
//! configuration.
//!
//! **Removed ids are never reused.** The state machine records every id a
//! membership entry drops (`raft/removed`, replicated with the entry and
//! carried by snapshots); `add_learner` and `replace` refuse such an id.
//! A node that left keeps its old log and vote; under its old id it could
//! vote twice in one term or be mistaken for its old self (openraft's FAQ:
//! never reuse an id for a wiped node), so a machine rejoins under a new
//! id with an empty directory.
//!
//! **Unknown outcomes.** A proposed change runs on the node's Raft runtime
//! to its end, whether or not the caller still waits (openraft proposes
//! the uniform step from that task; dropping it would leave the cluster
//! joint). A call whose deadline passes first, or whose leader lost
//! office mid-way, answers `Unknown`: read [`Node::membership`] on the
//! leader and call again.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use openraft::error::{ChangeMembershipError, CheckIsLeaderError, ClientWriteError, RaftError};
use openraft::ChangeMembers;

use super::{lock, Node};
use crate::state_machine::{read_meta, removed_ids, META_MEMBERSHIP};
use crate::types::{LogId, PeerNode};

/// How often a catch-up wait looks at the leader's replication metrics.
const POLL: Duration = Duration::from_millis(20);

/// A member's role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Voter,
    Learner,
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Role::Voter => "voter",
            Role::Learner => "learner",
        })
    }
}

/// A node's view of the membership.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MembershipView {
    /// The node whose view this is.
    pub node: u64,
    /// The leader it knows of.
    pub leader: Option<u64>,
    /// The log id of the entry that set this membership.
    pub log_id: Option<LogId>,
    /// The voter configurations: one when uniform, two while joint.
    pub configs: Vec<BTreeSet<u64>>,
    /// Every voter (of any configuration).
    pub voters: BTreeSet<u64>,
    /// Members that receive the log and do not vote.
    pub learners: BTreeSet<u64>,
    /// Whether this node applied it (so it is committed); a leader's
    /// newest entry may not be yet.
    pub committed: bool,
    /// Every id ever removed, as this node applied it.
    pub removed: BTreeSet<u64>,
}

impl MembershipView {
    /// A configuration left between two steps of a change.
    pub fn is_joint(&self) -> bool {
        self.configs.len() > 1
    }

    /// `id`'s role, if a member.
    pub fn role(&self, id: u64) -> Option<Role> {
        if self.voters.contains(&id) {
            Some(Role::Voter)
        } else if self.learners.contains(&id) {
            Some(Role::Learner)
        } else {
            None
        }
    }
}

/// Where a learner stands, as the leader sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LearnerProgress {
    pub id: u64,
    /// It holds every entry up to `target`.
    pub caught_up: bool,
    /// The last log index the leader knows it holds.
    pub matched: Option<u64>,
    /// The leader's last log index when the wait began.
    pub target: u64,
    /// The leader's log no longer held its first entries when it joined,
    /// so it catches up by a snapshot (then the log).
    pub by_snapshot: bool,
    pub waited: Duration,
}

/// A membership call refused or failed. A refusal changed nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MembershipError {
    #[error("node {node} is not the leader (leader: {leader:?}); call the leader")]
    NotLeader { node: u64, leader: Option<u64> },
    #[error("no node ids given")]
    NoIds,
    #[error("node {id} is already a {role} of the cluster")]
    AlreadyMember { id: u64, role: Role },
    #[error(
        "node id {id} was removed from this cluster before and is never reused: \
         a node joins under a new id, with an empty data directory"
    )]
    RemovedBefore { id: u64 },
    #[error("node {id} is not a member of the cluster")]
    UnknownNode { id: u64 },
    #[error("node {id} is already a voter")]
    AlreadyVoter { id: u64 },
    #[error("node {id} is a learner, not a voter")]
    NotAVoter { id: u64 },
    #[error("replace needs two different ids, got {id} twice")]
    SameId { id: u64 },
    #[error("removing {removing:?} would leave the cluster without a voter")]
    NoVotersLeft { removing: BTreeSet<u64> },
    #[error(
        "removing {removing:?} at once is a majority of the voters {voters:?}: \
         remove fewer at a time"
    )]
    MajorityAtOnce {
        removing: BTreeSet<u64>,
        voters: BTreeSet<u64>,
    },
    #[error(
        "the membership is joint ({configs:?}): an earlier change was interrupted; \
         finish it first (finish_joint)"
    )]
    Joint { configs: Vec<BTreeSet<u64>> },
    #[error("a membership change is in progress ({0}); call again once it committed")]
    InProgress(String),
    #[error(
        "learner {} has not caught up within {:?} (holds up to {:?}, leader at {}); \
         nothing else changed",
        .0.id, .0.waited, .0.matched, .0.target
    )]
    NotCaughtUp(LearnerProgress),
    #[error(
        "the change's outcome is unknown ({0}): read the membership on the leader, call again"
    )]
    Unknown(String),
    #[error("node {node} cannot act: {reason}")]
    Stopped { node: u64, reason: String },
}

type Changes = ChangeMembers<u64, PeerNode>;

impl Node {
    /// This node's view of the membership (any node; see
    /// [`MembershipView`]).
    pub fn membership(&self) -> Result<MembershipView, MembershipError> {
        let m = self.metrics();
        let store = self.store.get().ok_or_else(|| self.stopped("no store"))?;
        let applied: crate::state_machine::Members = read_meta(&store, META_MEMBERSHIP)
            .map_err(|e| self.stopped(&e.to_string()))?
            .unwrap_or_default();
        let removed = removed_ids(&store).map_err(|e| self.stopped(&e.to_string()))?;
        drop(store);
        let effective = m.membership_config.membership();
        let configs = effective.get_joint_config().clone();
        let voters: BTreeSet<u64> = effective.voter_ids().collect();
        let learners: BTreeSet<u64> = effective.learner_ids().collect();
        Ok(MembershipView {
            node: self.id,
            leader: m.current_leader,
            log_id: *m.membership_config.log_id(),
            committed: applied.log_id() == m.membership_config.log_id(),
            configs,
            voters,
            learners,
            removed,
        })
    }

    /// Add `id` as a learner reached at `node`, and wait up to `within`
    /// for it to hold the leader's log as it was once it joined. `Ok`
    /// says where it stands, caught up or not (it stays a learner either
    /// way). Refused: a member, a removed id, a joint membership.
    pub fn add_learner(
        &self,
        id: u64,
        node: PeerNode,
        within: Duration,
    ) -> Result<LearnerProgress, MembershipError> {
        let _one = lock(&self.admin);
        let end = Instant::now() + within;
        let view = self.leader_view(end)?;
        if let Some(role) = view.role(id) {
            return Err(MembershipError::AlreadyMember { id, role });
        }
        if view.removed.contains(&id) {
            return Err(MembershipError::RemovedBefore { id });
        }
        let by_snapshot = self.metrics().purged.is_some();
        self.change(Changes::AddNodes(BTreeMap::from([(id, node)])), end)?;
        let mut p = self.catch_up(id, end);
        p.by_snapshot = by_snapshot;
        Ok(p)
    }

    /// Make the learners `ids` voters, once each caught up with the
    /// leader's log as it is now (waiting up to `within`). Refused: an id
    /// not a member, a voter, a learner behind at the deadline, a joint
    /// membership.
    pub fn promote(
        &self,
        ids: &[u64],
        within: Duration,
    ) -> Result<MembershipView, MembershipError> {
        let _one = lock(&self.admin);
        let end = Instant::now() + within;
        let ids = id_set(ids)?;
        let view = self.leader_view(end)?;
        for &id in &ids {
            match view.role(id) {
                None => return Err(MembershipError::UnknownNode { id }),
                Some(Role::Voter) => return Err(MembershipError::AlreadyVoter { id }),
                Some(Role::Learner) => {}
            }
        }
        for &id in &ids {
            let p = self.catch_up(id, end);
            if !p.caught_up {
                return Err(MembershipError::NotCaughtUp(p));
            }
        }
        self.change(Changes::AddVoterIds(ids), end)?;
        self.membership()
    }

    /// Take `ids` (voters or learners) out of the cluster. Refused: an id
    /// not a member, the last voter, a majority of the voters at once, a
    /// joint membership. A removed leader steps down once the change
    /// commits. Stop a removed node: it is no longer sent the log.
    pub fn remove(&self, ids: &[u64], within: Duration) -> Result<MembershipView, MembershipError> {
        let _one = lock(&self.admin);
        let end = Instant::now() + within;
        let ids = id_set(ids)?;
        let view = self.leader_view(end)?;
        let (mut voters, mut learners) = (BTreeSet::new(), BTreeSet::new());
        for &id in &ids {
            match view.role(id) {
                None => return Err(MembershipError::UnknownNode { id }),
                Some(Role::Voter) => voters.insert(id),
                Some(Role::Learner) => learners.insert(id),
            };
        }
        if !voters.is_empty() && voters == view.voters {
            return Err(MembershipError::NoVotersLeft { removing: voters });
        }
        if voters.len() * 2 > view.voters.len() {
            return Err(MembershipError::MajorityAtOnce {
                removing: voters,
                voters: view.voters,
            });
        }
        // Learners first: a leader removing itself no longer leads after.
        if !learners.is_empty() {
            self.change(Changes::RemoveNodes(learners), end)?;
        }
        if !voters.is_empty() {
            self.change(Changes::RemoveVoters(voters), end)?;
        }
        self.membership()
    }

    /// Replace the voter `old` with `new`, a new id reached at `node`:
    /// `new` joins as a learner (unless it is one already: a replace
    /// called again resumes), catches up within `within`, then one change
    /// swaps the voters (joint, then uniform) and drops `old`, whose id is
    /// never used again. Refused: the same id twice, `old` not a voter,
    /// `new` a voter or removed before, a joint membership; `new` behind
    /// at the deadline (`NotCaughtUp`: it stays a learner, the voters are
    /// unchanged).
    pub fn replace(
        &self,
        old: u64,
        new: u64,
        node: PeerNode,
        within: Duration,
    ) -> Result<MembershipView, MembershipError> {
        let _one = lock(&self.admin);
        let end = Instant::now() + within;
        if old == new {
            return Err(MembershipError::SameId { id: old });
        }
        let view = self.leader_view(end)?;
        match view.role(old) {
            Some(Role::Voter) => {}
            Some(Role::Learner) => return Err(MembershipError::NotAVoter { id: old }),
            None => return Err(MembershipError::UnknownNode { id: old }),
        }
        if view.removed.contains(&new) {
            return Err(MembershipError::RemovedBefore { id: new });
        }
        match view.role(new) {
            Some(Role::Voter) => {
                return Err(MembershipError::AlreadyMember {
                    id: new,
                    role: Role::Voter,
                })
            }
            Some(Role::Learner) => {}
            None => {
                self.change(Changes::AddNodes(BTreeMap::from([(new, node)])), end)?;
            }
        }
        let p = self.catch_up(new, end);
        if !p.caught_up {
            return Err(MembershipError::NotCaughtUp(p));
        }
        let mut voters = view.voters.clone();
        voters.remove(&old);
        voters.insert(new);
        self.change(Changes::ReplaceAllVoters(voters), end)?;
        self.membership()
    }

    /// Finish a joint configuration left by an interrupted change: one
    /// change to its target (its last configuration); voters of the first
    /// that the target lacks leave the cluster. A uniform membership
    /// answers as it is, nothing changed.
    pub fn finish_joint(&self, within: Duration) -> Result<MembershipView, MembershipError> {
        let _one = lock(&self.admin);
        let end = Instant::now() + within;
        let view = self.view_as_leader(end)?;
        if !view.is_joint() {
            return Ok(view);
        }
        if !view.committed {
            return Err(MembershipError::InProgress(format!(
                "joint entry {:?} not applied here yet",
                view.log_id
            )));
        }
        let target = view.configs.last().cloned().unwrap_or_default();
        self.change(Changes::ReplaceAllVoters(target), end)?;
        self.membership()
    }

    /// This node leads, has applied all that was committed, and the
    /// membership is uniform and committed: its view.
    fn leader_view(&self, end: Instant) -> Result<MembershipView, MembershipError> {
        let view = self.view_as_leader(end)?;
        if view.is_joint() {
            return Err(MembershipError::Joint {
                configs: view.configs,
            });
        }
        if !view.committed {
            return Err(MembershipError::InProgress(format!(
                "membership entry {:?} not committed yet",
                view.log_id
            )));
        }
        Ok(view)
    }

    /// Confirm leadership with a quorum and wait for everything committed
    /// to be applied here; then this node's view.
    fn view_as_leader(&self, end: Instant) -> Result<MembershipView, MembershipError> {
        let left = end.saturating_duration_since(Instant::now());
        let raft = self.raft.clone();
        let res =
            self.run(async move { tokio::time::timeout(left, raft.ensure_linearizable()).await })?;
        match res {
            Err(_) => {
                return Err(MembershipError::Unknown(
                    "no quorum confirmed this leader in time".into(),
                ))
            }
            Ok(Err(RaftError::APIError(CheckIsLeaderError::ForwardToLeader(f)))) => {
                return Err(self.not_leader(f.leader_id))
            }
            Ok(Err(RaftError::APIError(CheckIsLeaderError::QuorumNotEnough(q)))) => {
                return Err(MembershipError::Unknown(q.to_string()))
            }
            Ok(Err(RaftError::Fatal(f))) => return Err(self.stopped(&f.to_string())),
            Ok(Ok(_)) => {}
        }
        let view = self.membership()?;
        if view.leader != Some(self.id) {
            return Err(self.not_leader(view.leader));
        }
        Ok(view)
    }

    /// Propose `changes` and wait (until `end`) for them to be applied
    /// here. The change runs to its end on the Raft runtime, waited for
    /// or not (module doc, "Unknown outcomes").
    fn change(&self, changes: Changes, end: Instant) -> Result<(), MembershipError> {
        let rt = self
            .rt
            .as_ref()
            .ok_or_else(|| self.stopped("the node has stopped"))?;
        let raft = self.raft.clone();
        let task = rt.spawn(async move { raft.change_membership(changes, false).await });
        let left = end.saturating_duration_since(Instant::now());
        let joined = rt.block_on(async { tokio::time::timeout(left, task).await });
        let res = match joined {
            Err(_) => return Err(MembershipError::Unknown("not applied in time".into())),
            Ok(Err(e)) => return Err(MembershipError::Unknown(format!("the change's task: {e}"))),
            Ok(Ok(res)) => res,
        };
        match res {
            Ok(_) => Ok(()),
            Err(RaftError::APIError(ClientWriteError::ForwardToLeader(f))) => {
                // Refused before anything was proposed, or the leader lost
                // office mid-way: which one, only the membership tells.
                Err(MembershipError::Unknown(format!(
                    "node {} lost leadership (leader now {:?})",
                    self.id, f.leader_id
                )))
            }
            Err(RaftError::APIError(ClientWriteError::ChangeMembershipError(e))) => Err(match e {
                ChangeMembershipError::InProgress(p) => MembershipError::InProgress(p.to_string()),
                ChangeMembershipError::EmptyMembership(_) => MembershipError::NoVotersLeft {
                    removing: BTreeSet::new(),
                },
                ChangeMembershipError::LearnerNotFound(l) => {
                    MembershipError::UnknownNode { id: l.node_id }
                }
            }),
            Err(RaftError::Fatal(f)) => Err(self.stopped(&f.to_string())),
        }
    }

    /// Wait until `end` for learner `id` to hold the leader's log up to
    /// its last index as of now.
    fn catch_up(&self, id: u64, end: Instant) -> LearnerProgress {
        let start = Instant::now();
        let target = self.metrics().last_log_index.unwrap_or(0);
        loop {
            let m = self.metrics();
            let matched = m
                .replication
                .as_ref()
                .and_then(|r| r.get(&id).copied().flatten())
                .map(|l| l.index);
            let caught_up = matched.is_some_and(|i| i >= target);
            if caught_up || Instant::now() >= end {
                return LearnerProgress {
                    id,
                    caught_up,
                    matched,
                    target,
                    by_snapshot: false,
                    waited: start.elapsed(),
                };
            }
            std::thread::sleep(POLL.min(end.saturating_duration_since(Instant::now())));
        }
    }

    /// Run `f` on this node's Raft runtime.
    fn run<F: std::future::Future>(&self, f: F) -> Result<F::Output, MembershipError> {
        match &self.rt {
            Some(rt) => Ok(rt.block_on(f)),
            None => Err(self.stopped("the node has stopped")),
        }
    }

    fn not_leader(&self, leader: Option<u64>) -> MembershipError {
        MembershipError::NotLeader {
            node: self.id,
            leader,
        }
    }

    fn stopped(&self, reason: &str) -> MembershipError {
        MembershipError::Stopped {
            node: self.id,
            reason: reason.to_string(),
        }
    }
}

fn id_set(ids: &[u64]) -> Result<BTreeSet<u64>, MembershipError> {
    if ids.is_empty() {
        return Err(MembershipError::NoIds);
    }
    Ok(ids.iter().copied().collect())
}
