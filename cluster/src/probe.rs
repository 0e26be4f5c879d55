//! Stage timestamps of each Raft entry on its way through the write path,
//! for the 1-client latency breakdown (`benches/cluster_floor.rs`). Off by
//! default: every site checks one relaxed atomic and records nothing. On,
//! each site appends a [`Mark`] (stage, node, log index, instant) to one
//! process-wide list that the bench takes and matches by index.
//!
//! Sites: the proposer (`node` 0: it runs for the leader's engine) marks a
//! batch queued, its entry submitted, the reply received and the engine
//! thread answered; the log store marks an entry's append called, written
//! and flushed on each node; the router marks a follower's append-entries
//! delivered and its answer back at the leader (`node` = the follower); the state machine marks each
//! entry's apply start and end on each node.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// Where an entry was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Stage {
    /// The engine thread handed the proposer its batch (the first batch
    /// of the entry).
    Queued,
    /// The proposer called `client_write_ff` with the entry.
    Submitted,
    /// openraft called this node's log append with it (before encoding).
    AppendCalled,
    /// The entry was written (unsynced) to this node's log.
    Appended,
    /// The leader's append-entries carrying it reached the follower's
    /// `Raft` through the router (`node` = the follower).
    Delivered,
    /// This node's log flusher synced it and fired its callback.
    Flushed,
    /// The follower's append-entries answer for it reached the leader.
    Acked,
    /// This node's state machine started applying it.
    ApplyStart,
    /// This node's state machine wrote it.
    ApplyEnd,
    /// The proposer's task received openraft's answer.
    Replied,
    /// The engine thread woke with the answer.
    Answered,
}

/// One stage of one entry on one node.
#[derive(Debug, Clone, Copy)]
pub struct Mark {
    pub stage: Stage,
    /// The node (0 for the proposer's marks).
    pub node: u64,
    pub index: u64,
    pub at: Instant,
    /// The entry's batch bytes (`Queued` only; 0 elsewhere).
    pub bytes: usize,
}

static ON: AtomicBool = AtomicBool::new(false);
static MARKS: Mutex<Vec<Mark>> = Mutex::new(Vec::new());

/// Start or stop recording (what was recorded stays until [`take`]).
pub fn enable(on: bool) {
    ON.store(on, Ordering::Relaxed);
}

/// Whether marks are being recorded.
#[inline]
pub fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// Everything recorded so far, emptying the list.
pub fn take() -> Vec<Mark> {
    std::mem::take(&mut *MARKS.lock().unwrap_or_else(|e| e.into_inner()))
}

/// Record one mark, if recording.
#[inline]
pub fn mark(stage: Stage, node: u64, index: u64, at: Instant) {
    mark_bytes(stage, node, index, at, 0);
}

/// Record one mark with the entry's size, if recording.
pub fn mark_bytes(stage: Stage, node: u64, index: u64, at: Instant, bytes: usize) {
    if on() {
        MARKS.lock().unwrap_or_else(|e| e.into_inner()).push(Mark {
            stage,
            node,
            index,
            at,
            bytes,
        });
    }
}
