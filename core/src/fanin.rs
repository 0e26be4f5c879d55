//! Fan-in (issue 43): a job enqueued with [`crate::EnqueueOptions::after`]
//! waits (state [`crate::State::Waiting`]) until every job it names — its
//! *children* — has finished, then becomes pending in the batch of the
//! last child's settle. See docs/ARCHITECTURE.md, "Fan-in".

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};
use crate::ids::JobId;
use crate::payload::Encoding;
use crate::state::State;

/// The most ids one `after` may name (and children one group may hold).
pub const MAX_AFTER: usize = 100_000;

/// The most children one `results_of_children` page returns.
pub const MAX_CHILDREN_PAGE: usize = 1_000;

/// What a child that did not complete (dead, cancelled, or deleted before
/// it finished) does to its waiting parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum ChildDeadPolicy {
    /// The parent goes dead at once, its last error naming the child and
    /// the child's error (the default).
    #[default]
    Fail,
    /// The parent is cancelled at once, and so are its children that have
    /// not finished (after the parent's batch, each by `cancel`).
    CancelRest,
    /// The child counts as finished: the parent runs once every child
    /// finished, whatever the outcome (its handler reads the states with
    /// `results_of_children`).
    Ignore,
}

impl ChildDeadPolicy {
    /// Every policy.
    pub const ALL: [ChildDeadPolicy; 3] = [Self::Fail, Self::CancelRest, Self::Ignore];

    /// The name (`fail`, `cancel_rest`, `ignore`), which `parse` reads back.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Fail => "fail",
            Self::CancelRest => "cancel_rest",
            Self::Ignore => "ignore",
        }
    }

    /// The stored code (record tag 16).
    pub fn code(self) -> u64 {
        match self {
            Self::Fail => 0,
            Self::CancelRest => 1,
            Self::Ignore => 2,
        }
    }

    /// The policy of a stored code (an unknown one reads as `Fail`).
    pub fn from_code(c: u64) -> Self {
        match c {
            1 => Self::CancelRest,
            2 => Self::Ignore,
            _ => Self::Fail,
        }
    }
}

impl fmt::Display for ChildDeadPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ChildDeadPolicy {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Self::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| {
                Error::invalid(format!(
                    "unknown on_child_dead policy {s:?}; one of fail, cancel_rest, ignore"
                ))
            })
    }
}

/// A fan-in parent's children, as `get` and `list` show them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct FanInInfo {
    /// Children not finished yet (0 once the parent was released).
    pub unfinished: u64,
    /// Children it waits on (every id of its `after`).
    pub total: u64,
    /// What a child that did not complete does to it.
    pub policy: ChildDeadPolicy,
}

impl FanInInfo {
    /// A summary (for front ends that build one from the wire).
    pub fn new(unfinished: u64, total: u64, policy: ChildDeadPolicy) -> Self {
        FanInInfo {
            unfinished,
            total,
            policy,
        }
    }
}

/// One child of a parent, for its handler: the child's state and result.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ChildResult {
    /// The child's id.
    pub id: JobId,
    /// Its state now; `None` when it was pruned, purged or deleted.
    pub state: Option<State>,
    /// What its `complete` was given, if anything.
    pub result: Option<Vec<u8>>,
    /// How the result was made.
    pub result_encoding: Encoding,
    /// Its latest failure (a dead child's error).
    pub last_error: Option<String>,
}

impl ChildResult {
    /// A child as a front end rebuilds it from the wire.
    pub fn new(
        id: JobId,
        state: Option<State>,
        result: Option<Vec<u8>>,
        result_encoding: Encoding,
        last_error: Option<String>,
    ) -> Self {
        ChildResult {
            id,
            state,
            result,
            result_encoding,
            last_error,
        }
    }
}

/// A page of [`ChildResult`]s, in child id order (enqueue order).
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct ChildPage {
    /// The children of this page.
    pub children: Vec<ChildResult>,
    /// Pass as `cursor` for the next page; `None` after the last one.
    pub next: Option<String>,
}

impl ChildPage {
    /// A page as a front end rebuilds it from the wire.
    pub fn new(children: Vec<ChildResult>, next: Option<String>) -> Self {
        ChildPage { children, next }
    }
}

/// Read a `results_of_children` cursor (32 hex digits: the last child id).
pub fn parse_cursor(c: &str) -> Result<JobId> {
    let b = crate::store::keys::unhex(c)
        .and_then(|b| <[u8; 16]>::try_from(b.as_slice()).ok())
        .ok_or_else(|| Error::invalid(format!("malformed children cursor {c:?}")))?;
    Ok(JobId::from_bytes(b))
}
