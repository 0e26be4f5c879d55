//! What a handler sees and answers: [`JobContext`] (the job, the lease's
//! cancellation, progress, follow-ups), [`Outcome`] and [`HandlerError`].

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::job::{Job, NewJob};
use crate::limits::MAX_PROGRESS_BYTES;
use crate::{Error, Result};

/// Why a handler should stop working on its job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StopReason {
    /// The lease is gone (expired and reaped, renewed past
    /// `max_lease_total`, or the heartbeat could not reach the store
    /// before the lease ran out): the job may already run elsewhere.
    Lost,
    /// A cancel was requested (seen at a heartbeat): whatever the handler
    /// answers, the job ends `cancelled`.
    Cancelled,
    /// The handler ran past its kind's `timeout`: the Worker failed the
    /// job retryably.
    TimedOut,
    /// The Worker is stopping and handed the job back (no attempt spent).
    Released,
}

/// One delivery of a lease: shared by its handler's [`JobContext`], the
/// heartbeat thread and `stop`.
#[derive(Debug)]
pub(crate) struct Delivery {
    pub(crate) job: Job,
    stop: Mutex<Option<StopReason>>,
    stopped: Condvar,
    /// The latest progress report not yet sent on a heartbeat.
    progress: Mutex<Option<Vec<u8>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A handler that panicked holding none of these cannot poison them, but
    // a poisoned flag still holds a meaningful value: read through it.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Delivery {
    pub(crate) fn new(job: Job) -> Arc<Self> {
        Arc::new(Delivery {
            job,
            stop: Mutex::new(None),
            stopped: Condvar::new(),
            progress: Mutex::new(None),
        })
    }

    /// Tell the handler to stop; the first reason sticks (a lease found
    /// cancelled and then released on stop still reads cancelled).
    pub(crate) fn mark(&self, why: StopReason) {
        let mut s = lock(&self.stop);
        if s.is_none() {
            *s = Some(why);
            self.stopped.notify_all();
        }
    }

    pub(crate) fn reason(&self) -> Option<StopReason> {
        *lock(&self.stop)
    }

    pub(crate) fn take_progress(&self) -> Option<Vec<u8>> {
        lock(&self.progress).take()
    }

    /// A heartbeat that carried `p` failed: send it with the next one,
    /// unless the handler reported something newer meanwhile.
    pub(crate) fn restore_progress(&self, p: Option<Vec<u8>>) {
        let mut cur = lock(&self.progress);
        if cur.is_none() {
            *cur = p;
        }
    }
}

/// A handle on one lease's cancellation that a handler can hand to other
/// threads: set once the job is cancelled, its lease lost, timed out or
/// released by a stopping Worker. Clones share the flag.
#[derive(Debug, Clone)]
pub struct CancelToken(Arc<Delivery>);

impl CancelToken {
    /// Whether the handler should stop.
    pub fn is_cancelled(&self) -> bool {
        self.0.reason().is_some()
    }

    /// Why the handler should stop, when it should.
    pub fn reason(&self) -> Option<StopReason> {
        self.0.reason()
    }

    /// Block up to `timeout` (`None`: until it happens) for the token to be
    /// set; answers whether it is. A handler doing timed work waits here
    /// instead of sleeping, so a cancel ends it within a heartbeat.
    pub fn wait(&self, timeout: Option<Duration>) -> bool {
        let d = &self.0;
        let mut s = lock(&d.stop);
        let end = timeout.and_then(|t| Instant::now().checked_add(t));
        while s.is_none() {
            match (timeout, end) {
                (None, _) | (Some(_), None) => {
                    s = d.stopped.wait(s).unwrap_or_else(|p| p.into_inner())
                }
                (Some(_), Some(end)) => {
                    let left = end.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        break;
                    }
                    s = d
                        .stopped
                        .wait_timeout(s, left)
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                }
            }
        }
        s.is_some()
    }
}

/// What a handler is given: its job and a view of its lease.
#[derive(Debug)]
pub struct JobContext {
    d: Arc<Delivery>,
    then: Mutex<Vec<NewJob>>,
}

impl JobContext {
    pub(crate) fn new(d: Arc<Delivery>) -> Self {
        JobContext {
            d,
            then: Mutex::new(Vec::new()),
        }
    }

    /// The leased job (payload, kind, scope, attempts, lease TTL, timeout).
    pub fn job(&self) -> &Job {
        &self.d.job
    }

    /// The job's payload bytes.
    pub fn payload(&self) -> &[u8] {
        &self.d.job.payload
    }

    /// True once a heartbeat found a cancel requested for this job.
    pub fn is_cancelled(&self) -> bool {
        self.d.reason() == Some(StopReason::Cancelled)
    }

    /// True once the handler should stop for any reason ([`StopReason`]):
    /// its result would be refused or ignored.
    pub fn is_lost(&self) -> bool {
        self.d.reason().is_some()
    }

    /// Why the handler should stop, when it should.
    pub fn stop_reason(&self) -> Option<StopReason> {
        self.d.reason()
    }

    /// A cloneable token for the same flag, to poll or wait on elsewhere.
    pub fn cancel_token(&self) -> CancelToken {
        CancelToken(self.d.clone())
    }

    /// `Err` once the handler should stop: `Cancelled` for a cancelled job,
    /// else `Aborted` (the lease is no longer this worker's). For `?`
    /// between the steps of a long handler.
    pub fn check(&self) -> Result<()> {
        let id = self.d.job.id;
        match self.d.reason() {
            None => Ok(()),
            Some(StopReason::Cancelled) => Err(Error::Cancelled(format!(
                "job {id} was cancelled: stop working on it"
            ))),
            Some(StopReason::TimedOut) => Err(Error::Aborted(format!(
                "lease lost: job {id} ran past its kind's timeout"
            ))),
            Some(_) => Err(Error::Aborted(format!(
                "lease lost: job {id} is no longer held by this worker"
            ))),
        }
    }

    /// Report progress (bytes in the payload convention, at most
    /// [`MAX_PROGRESS_BYTES`], else `InvalidArgument` here). Only the
    /// latest report is kept; it rides on the lease's next heartbeat (no
    /// write of its own).
    pub fn progress(&self, value: impl Into<Vec<u8>>) -> Result<()> {
        let v = value.into();
        if v.len() > MAX_PROGRESS_BYTES {
            return Err(Error::invalid(format!(
                "progress must be at most {MAX_PROGRESS_BYTES} bytes, got {}",
                v.len()
            )));
        }
        *lock(&self.d.progress) = Some(v);
        Ok(())
    }

    /// A job to enqueue when, and only when, this one completes (written
    /// in the completion's batch; see `Completion::then`). Ignored for any
    /// other outcome. With the `otel` feature it carries the current trace
    /// context: the handler's process span.
    pub fn follow_up(&self, mut job: NewJob) {
        crate::trace_context::inject_current(&mut job.options.metadata);
        lock(&self.then).push(job);
    }

    pub(crate) fn take_follow_ups(&self) -> Vec<NewJob> {
        std::mem::take(&mut *lock(&self.then))
    }
}

/// How a handler's job settles.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// Completed, with this result (and the context's follow-ups).
    Complete(Option<Vec<u8>>),
    /// Pending again after this delay, no attempt spent (past the kind's
    /// `max_snoozes` it counts as a failed attempt).
    Snooze(Duration),
    /// Failed retryably, retried after `after` instead of the backoff (an
    /// attempt spent).
    Retry {
        /// The failure reason recorded on the job.
        error: String,
        /// When to retry.
        after: Duration,
    },
    /// Failed: retried with backoff until `max_attempts`, or dead at once
    /// when `permanent`.
    Fail {
        /// The failure reason recorded on the job.
        error: String,
        /// Dead now, whatever attempts are left.
        permanent: bool,
    },
}

impl Outcome {
    /// Completed with no result.
    pub fn done() -> Self {
        Outcome::Complete(None)
    }

    /// Completed with `result`.
    pub fn result(result: impl Into<Vec<u8>>) -> Self {
        Outcome::Complete(Some(result.into()))
    }
}

/// A handler's failure, for `?` in a handler returning
/// `Result<Outcome, HandlerError>`: any `std::error::Error` converts into a
/// retryable one; [`HandlerError::permanent`] fails the job for good.
/// (It is not itself a `std::error::Error`, so that blanket conversion can
/// exist.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandlerError {
    message: String,
    permanent: bool,
}

impl HandlerError {
    /// A retryable failure.
    pub fn new(message: impl Into<String>) -> Self {
        HandlerError {
            message: message.into(),
            permanent: false,
        }
    }

    /// A failure that makes the job dead at once.
    pub fn permanent(message: impl Into<String>) -> Self {
        HandlerError {
            message: message.into(),
            permanent: true,
        }
    }

    /// The reason recorded on the job.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Whether it fails the job for good.
    pub fn is_permanent(&self) -> bool {
        self.permanent
    }
}

impl std::fmt::Display for HandlerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl<E: std::error::Error> From<E> for HandlerError {
    fn from(e: E) -> Self {
        HandlerError::new(e.to_string())
    }
}

/// What a handler may return: an [`Outcome`], or a `Result` of one whose
/// error converts into a [`HandlerError`].
pub trait IntoOutcome {
    /// The outcome it stands for.
    fn into_outcome(self) -> Outcome;
}

impl IntoOutcome for Outcome {
    fn into_outcome(self) -> Outcome {
        self
    }
}

impl<E: Into<HandlerError>> IntoOutcome for std::result::Result<Outcome, E> {
    fn into_outcome(self) -> Outcome {
        match self {
            Ok(o) => o,
            Err(e) => {
                let e = e.into();
                Outcome::Fail {
                    error: e.message,
                    permanent: e.permanent,
                }
            }
        }
    }
}
