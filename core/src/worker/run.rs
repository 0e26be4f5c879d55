//! The handler threads: lease, run the handler, settle. Completions go in
//! `complete_many` batches of what gathered while the previous call ran.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::context::{Delivery, JobContext, Outcome, StopReason};
use super::{Count, Handler, Settings};
use crate::api::JobStore;
use crate::job::{Completion, Job, JobId, LeaseOptions};
use crate::{CancelWait, Error, ErrorKind, Failure};

/// A job a handler thread leased beyond the one it runs (see `LeaseAhead`)
/// is released unstarted once it has waited this fraction of its TTL, as
/// the Python and Node Workers do.
const PREFETCH_FRACTION: u32 = 4;
/// A handler thread leases as many jobs at once as its handler runs in
/// about this long (at most `AHEAD_MAX`), as the Python Worker does.
const AHEAD_BUDGET: Duration = Duration::from_millis(5);
const AHEAD_MAX: usize = 16;
/// The most completions in one `complete_many`.
const SETTLE_BATCH_MAX: usize = 256;
/// The reason a job is failed for good with when its result or follow-ups
/// cannot be stored (the other Workers' words).
const UNSTORABLE: &str = "Permanent: the handler's result or follow-up jobs cannot be stored: ";

/// A delivery the Worker holds, keyed by (job id, generation): a lease that
/// expired under its handler can come back to this worker as the next
/// generation while the old handler still runs, and keyed by id alone the
/// old delivery's settle would remove the new one's lease.
pub(crate) type Key = (JobId, u64);

#[derive(Debug)]
pub(crate) struct Held {
    pub(crate) d: Arc<Delivery>,
    /// The TTL the lease was granted with (never `deadline - now`: over a
    /// network the deadline is on the server's clock).
    pub(crate) ttl: Duration,
    /// `None` once the lease is lost or cancelled: no more heartbeats.
    pub(crate) next_beat: Option<Instant>,
    /// When the lease runs out by this process's clock unless renewed.
    pub(crate) expires: Instant,
    pub(crate) timeout_at: Option<Instant>,
}

#[derive(Debug, Default)]
pub(crate) struct State {
    pub(crate) held: HashMap<Key, Held>,
    /// When the heartbeat thread next wakes by itself (while it sleeps).
    pub(crate) beat_at: Option<Instant>,
    pub(crate) live: usize,
    pub(crate) stop_begun: bool,
    pub(crate) finished: bool,
    pub(crate) stopped: bool,
    pub(crate) heart_exit: bool,
    pub(crate) stop_reason: Option<String>,
    pub(crate) last_error: Option<String>,
}

pub(crate) struct Shared {
    pub(crate) store: Arc<dyn JobStore>,
    pub(crate) handler: Handler,
    pub(crate) s: Settings,
    pub(crate) options: LeaseOptions,
    pub(crate) cancel: CancelWait,
    pub(crate) stopping: AtomicBool,
    pub(crate) state: Mutex<State>,
    /// Wakes the heartbeat thread, `stop` (a handler thread ended) and
    /// `join` (stopped).
    pub(crate) cond: Condvar,
    pub(crate) counts: [AtomicU64; Count::N],
    pub(crate) batch: Mutex<BatchState>,
    pub(crate) batch_idle: Condvar,
    pub(crate) heart: Mutex<Option<JoinHandle<()>>>,
    /// Set when leasing ahead through the store's lease feed.
    pub(crate) feed: Option<super::feed::Feed>,
}

#[derive(Default)]
pub(crate) struct BatchState {
    items: Vec<(Completion, Arc<Delivery>)>,
    sending: bool,
}

thread_local! {
    /// Set on a Worker's handler threads: a handler that calls `stop`
    /// must not wait for its own thread to end.
    pub(crate) static ON_HANDLER_THREAD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Handlers never run under these locks, so a poisoned one means a
    // bug in this file; the data is still consistent enough to go on.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// How many jobs one handler thread leases at once, sized by time.
struct LeaseAhead {
    size: usize,
    avg: Option<Duration>,
}

impl LeaseAhead {
    fn ran(&mut self, took: Duration) {
        let avg = match self.avg {
            None => took,
            Some(a) => {
                let (a, t) = (a.as_secs_f64(), took.as_secs_f64());
                Duration::from_secs_f64(a + (t - a) / 8.0)
            }
        };
        self.avg = Some(avg);
        self.size = if avg.is_zero() {
            AHEAD_MAX
        } else {
            ((AHEAD_BUDGET.as_secs_f64() / avg.as_secs_f64()) as usize).clamp(1, AHEAD_MAX)
        };
    }
}

fn ttl_of(job: &Job) -> Duration {
    Duration::from_millis(job.lease_ttl_ms.max(1))
}

/// Whether a job leased ahead at `since` may still start: not once it has
/// waited a quarter of its TTL (its handler would start with little left).
pub(crate) fn fresh(job: &Job, since: Instant) -> bool {
    since.elapsed() < ttl_of(job) / PREFETCH_FRACTION
}

impl Shared {
    pub(crate) fn count(&self, c: Count) {
        self.counts[c as usize].fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }

    /// An error of the Worker's own machinery: counted and kept for
    /// `last_error`; the thread goes on. A closed store stops the Worker.
    pub(crate) fn error(self: &Arc<Self>, what: &str, e: &Error) {
        if e.kind() == ErrorKind::Closed || self.store.is_closed() {
            self.halt(format!("its queue was closed ({e})"));
            return;
        }
        self.count(Count::Errors);
        lock(&self.state).last_error = Some(format!("{what}: {e}"));
    }

    /// Stop from a thread of its own (`stop` joins the Worker's threads).
    pub(crate) fn halt(self: &Arc<Self>, why: String) {
        {
            let mut st = lock(&self.state);
            if st.stop_reason.is_some() || st.stop_begun {
                return;
            }
            st.stop_reason = Some(why);
        }
        let me = self.clone();
        let t = self.s.stop_timeout;
        let _ = std::thread::Builder::new()
            .name(format!("{}-halt", self.s.worker_id))
            .spawn(move || me.stop(t));
    }

    /// Sleep up to `d`, ended early by `stop`.
    pub(crate) fn pause(&self, d: Duration) {
        let st = lock(&self.state);
        if !self.is_stopping() {
            let _ = self.cond.wait_timeout(st, d);
        }
    }

    pub(crate) fn handler_loop(self: &Arc<Self>) {
        let mut ahead = LeaseAhead { size: 1, avg: None };
        while !self.is_stopping() {
            let jobs = match self
                .store
                .lease_many(&self.s.worker_id, ahead.size, &self.options)
            {
                Ok(j) => j,
                Err(e) => {
                    self.error("lease", &e);
                    self.pause(Duration::from_secs(1));
                    continue;
                }
            };
            let leased = Instant::now();
            for (i, job) in jobs.into_iter().enumerate() {
                if self.is_stopping() {
                    // Leased ahead, or in the instant the stop began.
                    self.give_back(&job, Count::Released);
                    continue;
                }
                if i > 0 && !fresh(&job, leased) {
                    self.give_back(&job, Count::PrefetchReleased);
                    continue;
                }
                let started = Instant::now();
                self.run_one(job, (i > 0).then_some(leased));
                ahead.ran(started.elapsed());
            }
        }
    }

    /// Hand back a job no handler ran (no attempt spent).
    pub(crate) fn give_back(&self, job: &Job, what: Count) {
        match self.store.release(&job.token()) {
            Ok(()) => self.count(what),
            Err(e) if e.kind() == ErrorKind::Cancelled => self.count(Count::Cancelled),
            Err(_) => {} // lost meanwhile: its new holder has it
        }
    }

    /// Hand back, at stop, jobs no handler will finish: one `release_many`
    /// (one write; one round trip on a remote queue).
    pub(crate) fn give_back_all(&self, jobs: &[Job]) {
        if jobs.is_empty() {
            return;
        }
        let tokens: Vec<_> = jobs.iter().map(Job::token).collect();
        // The whole call failed: the leases expire after their TTL.
        let Ok(answers) = self.store.release_many(&tokens) else {
            return;
        };
        for a in answers {
            match a {
                Ok(()) => self.count(Count::Released),
                Err(e) if e.kind() == ErrorKind::Cancelled => self.count(Count::Cancelled),
                Err(_) => {} // lost meanwhile: its new holder has it
            }
        }
    }

    pub(crate) fn run_one(self: &Arc<Self>, job: Job, since: Option<Instant>) {
        let now = Instant::now();
        let got = since.unwrap_or(now);
        let ttl = ttl_of(&job);
        let key = (job.id, job.generation);
        let timeout_at = job
            .timeout_ms
            .and_then(|t| now.checked_add(Duration::from_millis(t)));
        let d = Delivery::new(job);
        let h = Held {
            d: d.clone(),
            ttl,
            next_beat: Some(got + ttl / 3),
            expires: got + ttl,
            timeout_at,
        };
        {
            let mut st = lock(&self.state);
            let first = timeout_at.map_or(got + ttl / 3, |t| t.min(got + ttl / 3));
            st.held.insert(key, h);
            // Wake the heartbeat only when this lease is due before it wakes.
            if st.beat_at.is_none_or(|b| first < b) {
                self.cond.notify_all();
            }
        }
        let ctx = JobContext::new(d.clone());
        #[cfg(feature = "otel")]
        let span = crate::otel::ProcessSpan::start(&d.job);
        let outcome = catch_unwind(AssertUnwindSafe(|| (self.handler)(&ctx))).unwrap_or_else(|p| {
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a non-string panic".into());
            Outcome::Fail {
                error: format!("the handler panicked: {msg}"),
                permanent: false,
            }
        });
        #[cfg(feature = "otel")]
        span.end(&outcome);
        self.settle(&d, outcome, ctx);
    }

    /// Take `d` out of the held leases if it is still there as this very
    /// delivery; false when stop released it or it was failed for its
    /// timeout (then its outcome is not the Worker's to send).
    pub(crate) fn unhold(&self, d: &Arc<Delivery>) -> bool {
        let mut st = lock(&self.state);
        let key = (d.job.id, d.job.generation);
        if st.held.get(&key).is_some_and(|h| Arc::ptr_eq(&h.d, d)) {
            st.held.remove(&key);
            true
        } else {
            false
        }
    }

    fn settle(self: &Arc<Self>, d: &Arc<Delivery>, outcome: Outcome, ctx: JobContext) {
        if !self.unhold(d) {
            return;
        }
        let token = d.job.token();
        match outcome {
            Outcome::Complete(r) => {
                let c = Completion::new(token, r).then(ctx.take_follow_ups());
                self.complete(c, d.clone());
            }
            Outcome::Snooze(delay) => match self.store.snooze(&token, delay) {
                Ok(()) => self.count(Count::Snoozed),
                Err(e) => self.refused(d, "snooze", &e),
            },
            Outcome::Retry { error, after } => {
                self.fail(d, Failure::new(token, error).retry_in(after), Count::Failed)
            }
            Outcome::Fail { error, permanent } => {
                let mut f = Failure::new(token, error);
                f.retryable = !permanent;
                self.fail(d, f, Count::Failed)
            }
        }
    }

    /// Fail a job (for its handler, or for the Worker's own reasons:
    /// `what` is counted when the queue takes it).
    pub(crate) fn fail(self: &Arc<Self>, d: &Arc<Delivery>, f: Failure, what: Count) {
        match self.store.fail_with(f) {
            Ok(()) => self.count(what),
            Err(e) => self.refused(d, "fail", &e),
        }
    }

    /// A settle the queue refused, booked the same whether it came from a
    /// single call or from a batch (the Python Worker's `refused`).
    fn refused(self: &Arc<Self>, d: &Arc<Delivery>, how: &str, e: &Error) {
        match e.kind() {
            ErrorKind::Cancelled => {
                d.mark(StopReason::Cancelled);
                self.count(Count::Cancelled);
            }
            ErrorKind::Aborted | ErrorKind::NotFound => {
                d.mark(StopReason::Lost);
                self.count(Count::Lost);
            }
            ErrorKind::Closed => self.error(how, e),
            ErrorKind::InvalidArgument if how == "complete" => {
                // The same values would be refused on every retry.
                let mut f = Failure::new(d.job.token(), format!("{UNSTORABLE}{e}"));
                f.retryable = false;
                self.fail(d, f, Count::Failed);
            }
            // No answer from a remote store: it may have landed, and
            // failing it now could undo a completion; unsettled, it expires.
            ErrorKind::Storage if self.store.as_local().is_none() => self.error(how, e),
            _ if how == "fail" => self.error(how, e),
            _ => {
                self.error(how, e);
                let f = Failure::new(d.job.token(), format!("could not {how}: {e}"));
                self.fail(d, f, Count::Failed);
            }
        }
    }

    /// Queue a completion; the first thread to find no call in flight
    /// sends everything gathered, again and again until nothing is left
    /// (so no settle thread, and a batch is what gathered during the last
    /// call).
    fn complete(self: &Arc<Self>, c: Completion, d: Arc<Delivery>) {
        let mut b = lock(&self.batch);
        b.items.push((c, d));
        if b.sending {
            return;
        }
        b.sending = true;
        loop {
            let n = b.items.len().min(SETTLE_BATCH_MAX);
            if n == 0 {
                b.sending = false;
                self.batch_idle.notify_all();
                return;
            }
            let items: Vec<_> = b.items.drain(..n).collect();
            drop(b);
            self.send(items);
            b = lock(&self.batch);
        }
    }

    fn send(self: &Arc<Self>, items: Vec<(Completion, Arc<Delivery>)>) {
        let (cs, ds): (Vec<_>, Vec<_>) = items.into_iter().unzip();
        match self.store.complete_many(cs.clone()) {
            Ok(answers) => {
                for (d, a) in ds.iter().zip(answers) {
                    self.booked(d, a);
                }
            }
            Err(e) if e.kind() == ErrorKind::Closed => self.error("complete", &e),
            // The whole call refused (one bad item, say): each on its own,
            // so only that one fails.
            Err(_) => {
                for (c, d) in cs.into_iter().zip(&ds) {
                    let a = self.store.complete_with(c);
                    self.booked(d, a);
                }
            }
        }
    }

    fn booked(self: &Arc<Self>, d: &Arc<Delivery>, a: crate::Result<()>) {
        match a {
            Ok(()) => self.count(Count::Completed),
            Err(e) => self.refused(d, "complete", &e),
        }
    }

    /// Wait until no completion is queued or in flight, up to `until`.
    pub(crate) fn wait_batch_idle(&self, until: Instant) {
        let mut b = lock(&self.batch);
        while b.sending || !b.items.is_empty() {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            b = self
                .batch_idle
                .wait_timeout(b, left)
                .map_or_else(|p| p.into_inner().0, |r| r.0);
        }
    }
}
