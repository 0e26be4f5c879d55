//! Job control: what cancel, delete, snooze, retry-in and pause take and
//! answer. The operations are [`crate::Queue`] methods.

use std::time::Duration;

use crate::error::{Error, Result};
use crate::ids::Scope;
use crate::job::LeaseToken;
use crate::kind::KindPattern;
use crate::state::State;

/// What [`crate::Queue::cancel`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CancelOutcome {
    /// The job was pending, scheduled or failed: it is cancelled now.
    Cancelled,
    /// The job is leased: a durable cancel request is on it. Its holder
    /// learns it at its next `extend` (answered [`crate::ErrorKind::Cancelled`]);
    /// whatever it then submits, or the lease expiring, makes it cancelled.
    Requested,
}

impl CancelOutcome {
    /// `"cancelled"` or `"requested"`.
    pub fn name(self) -> &'static str {
        match self {
            CancelOutcome::Cancelled => "cancelled",
            CancelOutcome::Requested => "requested",
        }
    }
}

/// Which jobs [`crate::Queue::cancel_many`] cancels: every job matching
/// all the given filters that is not finished.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CancelFilter {
    /// Only jobs of these kinds.
    pub kind: Option<KindPattern>,
    /// Only jobs of this scope.
    pub scope: Option<Scope>,
    /// Only jobs in this state: pending, failed, leased or waiting (`None`:
    /// all four). A finished state is `InvalidArgument`.
    pub state: Option<State>,
    /// Only jobs carrying this tag: the walk follows the tag index, a page
    /// of rows per atomic batch, O(jobs carrying the tag) whatever the
    /// store holds (issue 42). A bad tag is `InvalidArgument`.
    pub tag: Option<String>,
    /// Recorded with each job's `cancelled` event.
    pub reason: String,
}

/// What [`crate::Queue::cancel_many`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CancelReport {
    /// Jobs cancelled at once (pending, scheduled, failed).
    pub cancelled: u64,
    /// Leased jobs that got a cancel request.
    pub requested: u64,
    /// Rows that matched but did not decode (kept, untouched).
    pub corrupt: u64,
}

/// One failure for [`crate::Queue::fail_with`].
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    /// The lease being failed.
    pub token: LeaseToken,
    /// Why (at most 4096 bytes kept).
    pub reason: String,
    /// False: dead at once, whatever attempts are left.
    pub retryable: bool,
    /// Retry after this delay instead of the backoff schedule's (still an
    /// attempt spent). At most [`crate::limits::MAX_DURATION`].
    pub retry_in: Option<Duration>,
}

impl Failure {
    /// A retryable failure of `token` with the backoff schedule's delay.
    pub fn new(token: LeaseToken, reason: impl Into<String>) -> Self {
        Failure {
            token,
            reason: reason.into(),
            retryable: true,
            retry_in: None,
        }
    }
    /// Not retryable: the job goes dead.
    pub fn not_retryable(mut self) -> Self {
        self.retryable = false;
        self
    }
    /// Retry after `d` instead of the backoff schedule's delay.
    pub fn retry_in(mut self, d: Duration) -> Self {
        self.retry_in = Some(d);
        self
    }
}

/// What [`crate::Queue::pause`] and [`crate::Queue::resume`] name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PauseTarget {
    /// An exact kind (`embed`) or a family (`ingest:*`).
    Kind(KindPattern),
    /// One tenant scope.
    Scope(Scope),
}

impl PauseTarget {
    /// `kind:<pattern>` or `scope:<uuid>`: the durable name, and what the
    /// CLI and the metrics show.
    pub fn label(&self) -> String {
        match self {
            PauseTarget::Kind(p) => format!("kind:{p}"),
            PauseTarget::Scope(s) => format!("scope:{s}"),
        }
    }

    /// Read [`PauseTarget::label`] back.
    pub fn parse(s: &str) -> Result<PauseTarget> {
        if let Some(k) = s.strip_prefix("kind:") {
            return Ok(PauseTarget::Kind(k.parse()?));
        }
        if let Some(sc) = s.strip_prefix("scope:") {
            return Ok(PauseTarget::Scope(sc.parse()?));
        }
        Err(Error::InvalidArgument(format!(
            "pause target {s:?} must be kind:<kind or family:*> or scope:<uuid>"
        )))
    }
}

/// What is paused.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Paused {
    /// Paused kinds and families, sorted by name.
    pub kinds: Vec<KindPattern>,
    /// Paused scopes, sorted.
    pub scopes: Vec<Scope>,
}

impl Paused {
    /// Whether a job of `kind` in `scope` is paused.
    pub fn covers(&self, kind: &str, scope: &Scope) -> bool {
        self.scopes.contains(scope) || self.kinds.iter().any(|p| p.matches(kind))
    }

    /// Nothing is paused.
    pub fn is_empty(&self) -> bool {
        self.kinds.is_empty() && self.scopes.is_empty()
    }
}
