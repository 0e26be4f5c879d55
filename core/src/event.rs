//! [`Event`]: every transition the engine commits, by one name everywhere
//! (job event logs, `telha_jobs_transitions_total`, the docs); and
//! [`LogEntry`], one line of a job's event log.

use std::fmt;

/// A transition the engine commits. Its [`Event::name`] is what job event
/// logs store and what the transition counters are labelled with; names are
/// never changed (stores and dashboards hold them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Event {
    /// A job was created (pending).
    Enqueued,
    /// A pending or failed job was leased (generation + 1).
    Leased,
    /// A lease's deadline was moved by a heartbeat (not logged per job).
    Extended,
    /// A lease was completed.
    Completed,
    /// A lease failed retryably with attempts left (to failed).
    Failed,
    /// A job went dead (not retryable, or out of attempts).
    Dead,
    /// The reaper found a lease past its deadline (to pending, or to dead
    /// on the last attempt, when `dead` follows).
    LeaseExpired,
    /// A lease was handed back without spending an attempt (to pending).
    Released,
    /// An operator retried a dead or failed job (to pending, attempts reset).
    Retried,
    /// A completed job was deleted past its retention (not logged per job).
    Pruned,
    /// An operator purged a completed, dead or cancelled job (not logged
    /// per job).
    Purged,
    /// A job was cancelled: at once from pending or failed, or from leased
    /// when its holder settled or its lease expired after a cancel request.
    Cancelled,
    /// A cancel was requested for a leased job; its holder learns it at its
    /// next heartbeat (leased → leased).
    CancelRequested,
    /// A job that was not leased was deleted with its indexes.
    Deleted,
    /// A leased job was handed back to run later without spending an
    /// attempt (leased → pending at now + delay).
    Snoozed,
    /// A job not leased before its expiry went dead ("expired before
    /// start").
    Expired,
    /// A heartbeat carried a progress report (leased → leased; not logged
    /// per job: the latest report is on the record).
    Progress,
    /// An operator made a delayed or retry-waiting job ready now (pending
    /// or failed, same state, its time now).
    Promoted,
    /// An operator gave a pending or failed job a new run time (same
    /// state; a time in the future makes a ready job delayed).
    Rescheduled,
    /// An operator gave a pending or failed job a new priority (same
    /// state and time).
    Reprioritized,
    /// A `debounce` enqueue replaced a pending job's payload and moved its
    /// run time (pending → pending).
    Debounced,
    /// A child of a waiting parent finished and others are left (waiting
    /// → waiting, its count of unfinished children one less; not logged
    /// per job).
    ChildSettled,
    /// The last child of a waiting parent finished: the parent is pending
    /// (waiting → pending), in that child's batch.
    ChildrenDone,
}

impl Event {
    /// Every event, in a fixed order (the metrics' order).
    pub const ALL: [Event; 23] = [
        Event::Enqueued,
        Event::Leased,
        Event::Extended,
        Event::Completed,
        Event::Failed,
        Event::Dead,
        Event::LeaseExpired,
        Event::Released,
        Event::Retried,
        Event::Pruned,
        Event::Purged,
        Event::Cancelled,
        Event::CancelRequested,
        Event::Deleted,
        Event::Snoozed,
        Event::Expired,
        Event::Progress,
        Event::Promoted,
        Event::Rescheduled,
        Event::Reprioritized,
        Event::Debounced,
        Event::ChildSettled,
        Event::ChildrenDone,
    ];

    /// The stable name: `enqueued`, `leased`, `extended`, `completed`,
    /// `failed`, `dead`, `lease_expired`, `released`, `retried`, `pruned`,
    /// `purged`, `cancelled`, `cancel_requested`, `deleted`, `snoozed`,
    /// `expired`, `progress`, `promoted`, `rescheduled`, `reprioritized`,
    /// `debounced`, `child_settled`, `children_done`.
    pub fn name(self) -> &'static str {
        match self {
            Event::Enqueued => "enqueued",
            Event::Leased => "leased",
            Event::Extended => "extended",
            Event::Completed => "completed",
            Event::Failed => "failed",
            Event::Dead => "dead",
            Event::LeaseExpired => "lease_expired",
            Event::Released => "released",
            Event::Retried => "retried",
            Event::Pruned => "pruned",
            Event::Purged => "purged",
            Event::Cancelled => "cancelled",
            Event::CancelRequested => "cancel_requested",
            Event::Deleted => "deleted",
            Event::Snoozed => "snoozed",
            Event::Expired => "expired",
            Event::Progress => "progress",
            Event::Promoted => "promoted",
            Event::Rescheduled => "rescheduled",
            Event::Reprioritized => "reprioritized",
            Event::Debounced => "debounced",
            Event::ChildSettled => "child_settled",
            Event::ChildrenDone => "children_done",
        }
    }

    /// The event with this name, if it is one.
    pub fn from_name(name: &str) -> Option<Event> {
        Event::ALL.into_iter().find(|e| e.name() == name)
    }

    /// The position of this event in [`Event::ALL`].
    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One entry of a job's event log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogEntry {
    /// ms since the epoch.
    pub ts: u64,
    /// An [`Event::name`] (`enqueued`, `leased`, `completed`, `failed`,
    /// `dead`, `lease_expired`, `released`, `retried`), or `attempt` for a
    /// summary of one earlier attempt whose own entries were folded to keep
    /// the log bounded (see [`LogEntry::ATTEMPT`]). Kept as text: a log
    /// written by a newer build may name events this build does not know.
    pub transition: String,
    /// Free text such as the worker, the attempt or the failure reason
    /// (at most 4096 bytes; an `attempt` summary at most 512).
    pub detail: String,
}

impl LogEntry {
    /// The `transition` of a folded attempt: `attempt N: leased by W, failed
    /// after D ms: REASON` (or `lease expired`), with `ts` the time it was
    /// leased.
    pub const ATTEMPT: &'static str = "attempt";

    /// The event this entry records, when it is one this build knows.
    pub fn event(&self) -> Option<Event> {
        Event::from_name(&self.transition)
    }
}
