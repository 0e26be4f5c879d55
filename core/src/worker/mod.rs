//! [`Worker`]: a pool of std threads that lease jobs from any
//! [`JobStore`] (an embedded `Queue` or a remote client), run a handler,
//! heartbeat and settle — the Python and Node Workers' behaviour, in Rust.
//!
//! Threads: `concurrency` handler threads, each leasing a few jobs at once
//! (as many as its handler runs in about 5 ms, at most 16) with a wait that
//! `stop` cancels; one heartbeat thread. Completions go in `complete_many`
//! batches of what gathered while the previous call ran, sent by whichever
//! handler thread finds no call in flight.

mod context;
mod feed;
mod heart;
mod run;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

pub use context::{CancelToken, HandlerError, IntoOutcome, JobContext, Outcome, StopReason};
pub use feed::LeaseFeed;

use crate::api::JobStore;
use crate::ids::Scope;
use crate::job::LeaseOptions;
use crate::kind::KindPattern;
use crate::limits::{validate_worker_id, MAX_BATCH, MAX_DURATION};
use crate::{CancelWait, Error, Result};
use run::{lock, Shared};

/// Handler threads a Worker runs by default.
pub const CONCURRENCY_DEFAULT: usize = 4;
/// The most handler threads one Worker runs.
pub const CONCURRENCY_MAX: usize = 1024;
/// How long one lease call waits for work by default (a stop ends it early).
pub const POLL_WAIT_DEFAULT: Duration = Duration::from_secs(1);
/// How long `stop` (and dropping a running Worker) lets handlers finish by default.
pub const STOP_TIMEOUT_DEFAULT: Duration = Duration::from_secs(30);
/// The least a Worker leases ahead through a lease feed by default: the
/// Python Worker's floor (measured there: 4 ahead left one process idle
/// between small batches, 32 gave about three times the rate). The default
/// is `max(4 × concurrency, 32)`, within `MAX_BATCH` with the running ones.
pub const PREFETCH_FLOOR: usize = 32;

pub(crate) type Handler = Arc<dyn Fn(&JobContext) -> Outcome + Send + Sync>;

/// What a running Worker has done (see [`RunningWorker::counts`]).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Counts {
    /// Completed by their handlers.
    pub completed: u64,
    /// Failed (by the handler's outcome, a panic, or a result that cannot
    /// be stored); retried or dead as the job's attempts say.
    pub failed: u64,
    /// Snoozed by their handlers.
    pub snoozed: u64,
    /// Handed back unstarted or unfinished by `stop` (no attempt spent).
    pub released: u64,
    /// Found cancelled when settled: the job ended `cancelled`.
    pub cancelled: u64,
    /// Settles refused because the lease was lost (the job may run elsewhere).
    pub lost: u64,
    /// Failed retryably for running past the kind's `timeout`.
    pub timed_out: u64,
    /// Leased ahead and released unstarted after waiting past a quarter of
    /// their TTL.
    pub prefetch_released: u64,
    /// Errors of the Worker's own machinery (a store call that failed);
    /// none ended a thread. See [`RunningWorker::last_error`].
    pub errors: u64,
}

#[derive(Clone, Copy)]
pub(crate) enum Count {
    Completed,
    Failed,
    Snoozed,
    Released,
    Cancelled,
    Lost,
    TimedOut,
    PrefetchReleased,
    Errors,
}

impl Count {
    pub(crate) const N: usize = 9;
}

#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) worker_id: String,
    pub(crate) concurrency: usize,
    pub(crate) stop_timeout: Duration,
    pub(crate) poll_wait: Duration,
    /// Leases pushed ahead beyond the running ones (0: no lease feed).
    pub(crate) prefetch: usize,
    /// Of those, how many are kept ahead even while handlers are slow.
    pub(crate) min_prefetch: usize,
}

/// A configured Worker; [`Worker::start`] runs it.
pub struct Worker {
    store: Arc<dyn JobStore>,
    handler: Handler,
    s: Settings,
    options: LeaseOptions,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker").field("settings", &self.s).finish()
    }
}

/// Builds a [`Worker`]; [`WorkerBuilder::build`] checks every setting.
pub struct WorkerBuilder {
    store: Arc<dyn JobStore>,
    handler: Handler,
    worker_id: Option<String>,
    concurrency: usize,
    kinds: Vec<String>,
    scopes: Vec<Scope>,
    poll_wait: Duration,
    stop_timeout: Duration,
    prefetch: Option<usize>,
    min_prefetch: usize,
}

impl Worker {
    /// A Worker running `handler` for jobs of `store`. The handler returns
    /// an [`Outcome`] or a `Result<Outcome, E>` with `E: Into<HandlerError>`
    /// (any `std::error::Error`: `?` fails the job retryably).
    pub fn builder<F, R>(store: Arc<dyn JobStore>, handler: F) -> WorkerBuilder
    where
        F: Fn(&JobContext) -> R + Send + Sync + 'static,
        R: IntoOutcome,
    {
        WorkerBuilder {
            store,
            handler: Arc::new(move |ctx: &JobContext| handler(ctx).into_outcome()),
            worker_id: None,
            concurrency: CONCURRENCY_DEFAULT,
            kinds: Vec::new(),
            scopes: Vec::new(),
            poll_wait: POLL_WAIT_DEFAULT,
            stop_timeout: STOP_TIMEOUT_DEFAULT,
            prefetch: None,
            min_prefetch: 0,
        }
    }

    /// The worker id leases are taken under.
    pub fn worker_id(&self) -> &str {
        &self.s.worker_id
    }

    /// Start the handler and heartbeat threads and return at once.
    ///
    /// Errors: `Closed` when the store is closed; `Storage` when a thread
    /// cannot be started (the ones started are stopped).
    pub fn start(self) -> Result<RunningWorker> {
        if self.store.is_closed() {
            return Err(Error::Closed);
        }
        let cancel = CancelWait::new();
        let mut options = self.options;
        options.cancel = Some(cancel.clone());
        // Opened first: a bad filter or an unreachable server fails here.
        let src = match self.s.prefetch {
            0 => None,
            n => {
                let cap = (self.s.concurrency + n) as u32;
                // The window follows the handlers: at least one lease per
                // handler thread, up to `cap` while they drain it fast.
                let floor = (self.s.concurrency + self.s.min_prefetch) as u32;
                self.store
                    .lease_feed_floor(&self.s.worker_id, &options, cap, floor)?
            }
        };
        let sh = Arc::new(Shared {
            store: self.store,
            handler: self.handler,
            s: self.s,
            options,
            cancel,
            stopping: AtomicBool::new(false),
            state: Mutex::new(run::State::default()),
            cond: Condvar::new(),
            counts: Default::default(),
            batch: Mutex::new(Default::default()),
            batch_idle: Condvar::new(),
            heart: Mutex::new(None),
            feed: src.is_some().then(Default::default),
        });
        let running = RunningWorker { sh: sh.clone() };
        let spawn = |name: String, f: Box<dyn FnOnce() + Send>| {
            std::thread::Builder::new()
                .name(name)
                .spawn(f)
                .map_err(|e| Error::Storage(format!("cannot start a worker thread: {e}")))
        };
        let me = sh.clone();
        let heart = spawn(
            format!("{}-heartbeat", sh.s.worker_id),
            Box::new(move || me.heart_loop()),
        )?;
        *lock(&sh.heart) = Some(heart);
        if let Some(src) = src {
            let me = sh.clone();
            let name = format!("{}-feed", sh.s.worker_id);
            let t = match spawn(name, Box::new(move || me.feed_loop(src))) {
                Ok(t) => t,
                Err(e) => {
                    running.stop(Duration::ZERO);
                    return Err(e);
                }
            };
            if let Some(f) = &sh.feed {
                *lock(&f.thread) = Some(t);
            }
        }
        for i in 0..sh.s.concurrency {
            let me = sh.clone();
            lock(&sh.state).live += 1;
            let body = Box::new(move || {
                // Counted down however the loop ends, so `stop` never
                // waits on a thread that is gone.
                struct Live(Arc<Shared>);
                impl Drop for Live {
                    fn drop(&mut self) {
                        lock(&self.0.state).live -= 1;
                        self.0.cond.notify_all();
                    }
                }
                run::ON_HANDLER_THREAD.with(|c| c.set(true));
                let live = Live(me);
                if live.0.feed.is_some() {
                    live.0.prefetched_loop();
                } else {
                    live.0.handler_loop();
                }
            });
            if let Err(e) = spawn(format!("{}-{i}", sh.s.worker_id), body) {
                lock(&sh.state).live -= 1;
                running.stop(Duration::ZERO);
                return Err(e);
            }
        }
        Ok(running)
    }
}

impl WorkerBuilder {
    /// Handler threads (1 to [`CONCURRENCY_MAX`], default 4).
    pub fn concurrency(mut self, n: usize) -> Self {
        self.concurrency = n;
        self
    }

    /// Take only these kinds (exact or `family:*`); default every kind.
    pub fn kinds<I, S>(mut self, kinds: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.kinds.extend(kinds.into_iter().map(Into::into));
        self
    }

    /// Take only from this scope (call again for more); default every scope.
    pub fn scope(mut self, scope: Scope) -> Self {
        self.scopes.push(scope);
        self
    }

    /// The worker id leases are taken under (default `<host>-<pid>-<n>`).
    pub fn worker_id(mut self, id: impl Into<String>) -> Self {
        self.worker_id = Some(id.into());
        self
    }

    /// How long one lease call waits for work (default 1 s; `stop` ends a
    /// wait at once on an embedded queue).
    pub fn poll_wait(mut self, d: Duration) -> Self {
        self.poll_wait = d;
        self
    }

    /// How long `stop` lets running handlers finish when dropped or
    /// stopped by itself (default 30 s).
    pub fn stop_timeout(mut self, d: Duration) -> Self {
        self.stop_timeout = d;
        self
    }

    /// Leases to take ahead through the store's lease feed (a remote
    /// queue's `PollJobs` stream) beyond the running ones; default
    /// `max(4 × concurrency, 32)` when the store has a feed, 0: none (one
    /// `lease_many` long-poll per handler thread). A lease that waited past
    /// a quarter of its TTL is released unstarted. An embedded queue has no
    /// feed: its handler threads lease a few jobs at once instead.
    pub fn prefetch(mut self, n: usize) -> Self {
        self.prefetch = Some(n);
        self
    }

    /// Of the `prefetch` leases, how many the server keeps ahead even while
    /// the handlers are slow; default 0. The window follows the handlers: a
    /// remote server keeps about 100 ms of their work unsettled (their
    /// settle rate × 100 ms), at least `concurrency + min_prefetch` and at
    /// most `concurrency + prefetch`; equal to `prefetch`: a fixed window.
    pub fn min_prefetch(mut self, n: usize) -> Self {
        self.min_prefetch = n;
        self
    }

    /// Check the settings. Errors: `InvalidArgument` naming the setting (a
    /// concurrency out of range, a bad kind pattern or worker id, a
    /// duration over `limits::MAX_DURATION`).
    pub fn build(self) -> Result<Worker> {
        if !(1..=CONCURRENCY_MAX).contains(&self.concurrency) {
            return Err(Error::invalid(format!(
                "concurrency must be 1 to {CONCURRENCY_MAX}, got {}",
                self.concurrency
            )));
        }
        for (what, d) in [
            ("poll_wait", self.poll_wait),
            ("stop_timeout", self.stop_timeout),
        ] {
            if d > MAX_DURATION {
                return Err(Error::invalid(format!(
                    "{what} must be at most {MAX_DURATION:?}, got {d:?}"
                )));
            }
        }
        let prefetch = self.prefetch.unwrap_or_else(|| {
            (4 * self.concurrency)
                .max(PREFETCH_FLOOR)
                .min(MAX_BATCH - self.concurrency)
        });
        if prefetch + self.concurrency > MAX_BATCH {
            return Err(Error::invalid(format!(
                "prefetch + concurrency must be at most {MAX_BATCH}, got {prefetch}"
            )));
        }
        if self.min_prefetch > prefetch {
            return Err(Error::invalid(format!(
                "min_prefetch must be at most prefetch ({prefetch}), got {}",
                self.min_prefetch
            )));
        }
        let worker_id = self.worker_id.unwrap_or_else(default_worker_id);
        validate_worker_id(&worker_id)?;
        let kinds = self
            .kinds
            .iter()
            .map(|k| k.parse::<KindPattern>())
            .collect::<Result<Vec<_>>>()?;
        let mut options = LeaseOptions::default().wait(self.poll_wait);
        options.kinds = kinds;
        options.scopes = self.scopes;
        Ok(Worker {
            store: self.store,
            handler: self.handler,
            s: Settings {
                worker_id,
                concurrency: self.concurrency,
                stop_timeout: self.stop_timeout,
                poll_wait: self.poll_wait,
                prefetch,
                min_prefetch: self.min_prefetch,
            },
            options,
        })
    }
}

/// `<host>-<pid>-<n>`: unique per Worker in this process, as the other
/// front ends make it.
fn default_worker_id() -> String {
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = SEQ.fetch_add(1, Ordering::Relaxed) + 1;
    let host = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "rust".into());
    format!("{host}-{}-{n}", std::process::id())
}

/// A started [`Worker`]. Dropping it stops it (with its `stop_timeout`).
pub struct RunningWorker {
    sh: Arc<Shared>,
}

impl std::fmt::Debug for RunningWorker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunningWorker")
            .field("worker_id", &self.sh.s.worker_id)
            .field("counts", &self.counts())
            .finish()
    }
}

impl RunningWorker {
    /// The worker id leases are taken under.
    pub fn worker_id(&self) -> &str {
        &self.sh.s.worker_id
    }

    /// Stop leasing; wait up to `timeout` for running handlers; send the
    /// completions gathered; release the jobs still held (no attempt
    /// spent: those leased ahead, and those whose handlers did not finish,
    /// whose contexts turn lost). Returns within `timeout` plus at most
    /// 0.5 s for that network part; what is left goes on in the
    /// background, and a lease never released expires after its TTL.
    /// Idempotent; callable from any thread.
    pub fn stop(&self, timeout: Duration) {
        self.sh.stop(timeout);
    }

    /// Wait until the Worker has stopped (by `stop`, or by itself when its
    /// store was closed); true when it has. `None`: no limit.
    pub fn join(&self, timeout: Option<Duration>) -> bool {
        let end = timeout.and_then(|t| Instant::now().checked_add(t));
        let mut st = lock(&self.sh.state);
        while !st.stopped {
            match end {
                None => st = self.sh.cond.wait(st).unwrap_or_else(|p| p.into_inner()),
                Some(e) => {
                    let left = e.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return false;
                    }
                    st = self
                        .sh
                        .cond
                        .wait_timeout(st, left)
                        .map_or_else(|p| p.into_inner().0, |r| r.0);
                }
            }
        }
        true
    }

    /// True until it has stopped.
    pub fn is_running(&self) -> bool {
        !lock(&self.sh.state).stopped
    }

    /// Why it stopped by itself (its store was closed), or `None`.
    pub fn stop_reason(&self) -> Option<String> {
        lock(&self.sh.state).stop_reason.clone()
    }

    /// The latest error of the Worker's own machinery (`counts().errors`).
    pub fn last_error(&self) -> Option<String> {
        lock(&self.sh.state).last_error.clone()
    }

    /// What it has done so far.
    pub fn counts(&self) -> Counts {
        let c = |k: Count| self.sh.counts[k as usize].load(Ordering::Relaxed);
        Counts {
            completed: c(Count::Completed),
            failed: c(Count::Failed),
            snoozed: c(Count::Snoozed),
            released: c(Count::Released),
            cancelled: c(Count::Cancelled),
            lost: c(Count::Lost),
            timed_out: c(Count::TimedOut),
            prefetch_released: c(Count::PrefetchReleased),
            errors: c(Count::Errors),
        }
    }
}

impl Drop for RunningWorker {
    fn drop(&mut self) {
        if self.is_running() {
            self.sh.stop(self.sh.s.stop_timeout);
        }
    }
}
