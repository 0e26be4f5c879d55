//! `Queue`: the public handle.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use crate::clock::{Clock, SystemClock};
use crate::config::Config;
use crate::control::{CancelFilter, CancelOutcome, CancelReport, Failure, PauseTarget, Paused};
pub use crate::engine::CheckReport;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::flow::{Limit, LimitStatus, LimitTarget};
use crate::watch::{JobWatch, SubscribeOptions, Subscription};

/// How often a [`Queue::wait`] looks at its handle's `closed` flag.
const WAIT_SLICE: std::time::Duration = std::time::Duration::from_millis(100);
/// How long the last handle's `close` waits for calls in progress to let
/// go of the engine, so that RocksDB has closed when it returns.
const CLOSE_WAIT: std::time::Duration = std::time::Duration::from_secs(30);
use crate::job::{
    Completion, EnqueueOptions, Enqueued, Job, JobId, JobInfo, LeaseOptions, LeaseToken, ListPage,
    ListQuery, NewJob, PurgeReport, ReapReport,
};

/// A handle to an open store. Cheap to clone (clones share the handle);
/// `Send + Sync`, so one handle serves many threads.
///
/// A store has one owning process. Within it, every `Queue::open` of the same
/// path shares one engine; the engine closes (releasing the store to other
/// processes) when the last handle is closed or dropped.
#[derive(Clone, Debug)]
pub struct Queue {
    inner: Arc<Handle>,
}

#[derive(Debug)]
struct Handle {
    engine: RwLock<Option<Arc<Engine>>>,
    closed: AtomicBool,
}

impl Queue {
    /// Open (or create) the store at `path` with `config`, on the system clock.
    /// Blocks while another handle of this process is closing the same store.
    ///
    /// Errors: `InvalidArgument` when `config` fails [`Config::validate`] or
    /// the store is already open in this process with a different config;
    /// `StoreLocked` when another process owns it; `Storage` when the
    /// directory or RocksDB cannot be opened, or a close of the same store
    /// takes over 30 s; `Corruption` from RocksDB; `Unavailable` while a
    /// handle of this process still holds the store's fenced engine (a
    /// commit's outcome was unknown: every call of it answers `Unavailable`
    /// until its last handle is dropped; then the store opens afresh).
    pub fn open(path: impl AsRef<Path>, config: Config) -> Result<Queue> {
        Self::open_with_clock(path, config, Arc::new(SystemClock))
    }

    /// Open with an injected clock (tests use [`crate::ManualClock`]). When the
    /// store is already open in this process the existing engine, and its
    /// clock, are shared (`clock` is then unused); a different config is an
    /// error. Errors as [`Queue::open`].
    pub fn open_with_clock(
        path: impl AsRef<Path>,
        config: Config,
        clock: Arc<dyn Clock>,
    ) -> Result<Queue> {
        Ok(Queue::over(Engine::open(path.as_ref(), config, clock)?))
    }

    /// A handle over `engine` (one open of it: closing it lets go of one).
    pub(crate) fn over(engine: Arc<Engine>) -> Queue {
        Queue {
            inner: Arc::new(Handle {
                engine: RwLock::new(Some(engine)),
                closed: AtomicBool::new(false),
            }),
        }
    }

    /// Open the store at `path` read-only, for inspection (`get`, `list`,
    /// `stats`, `metrics`, `check`). Works while another process owns the
    /// store and sees what it had written (RocksDB replays its WAL); the
    /// view is a snapshot taken at open. Creates nothing; is not shared with
    /// read-write opens; runs no reaper.
    ///
    /// Calls that write (`enqueue`, leasing, settling, `retry`, `reap`,
    /// `purge`) answer `InvalidArgument` ("open read-only").
    ///
    /// Errors: `NotFound` when there is no store at `path`; `Storage`;
    /// `Corruption`.
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Queue> {
        Self::open_read_only_with_config(path, Config::default())
    }

    /// [`Queue::open_read_only`] with the owner's `config`, so the values
    /// derived from it (a job's effective `max_attempts`: per job > per
    /// kind > global) read as the owner sees them. Its reaper interval is
    /// ignored (a read-only handle runs no reaper).
    ///
    /// Errors: `InvalidArgument` when `config` fails [`Config::validate`];
    /// otherwise as [`Queue::open_read_only`].
    pub fn open_read_only_with_config(path: impl AsRef<Path>, config: Config) -> Result<Queue> {
        Ok(Queue::over(Engine::open_read_only(path.as_ref(), config)?))
    }

    /// Whether this handle came from [`Queue::open_read_only`].
    pub fn is_read_only(&self) -> bool {
        self.engine().is_ok_and(|e| e.read_only)
    }

    pub(crate) fn writable(&self) -> Result<Arc<Engine>> {
        let e = self.engine()?;
        if e.read_only {
            return Err(Error::invalid(format!(
                "store {} is open read-only; open it read-write (in the owning process) to change it",
                e.path.display()
            )));
        }
        Ok(e)
    }

    /// The engine, for one call: `Closed` after `close`, `Unavailable` once
    /// the engine is fenced (every call of `Queue` passes here).
    pub(crate) fn engine(&self) -> Result<Arc<Engine>> {
        let e = self.held_engine().ok_or(Error::Closed)?;
        e.check_fenced()?;
        Ok(e)
    }

    /// The engine, fenced or not; `None` after `close`.
    pub(crate) fn held_engine(&self) -> Option<Arc<Engine>> {
        self.inner
            .engine
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Close this handle and its clones: later calls answer `Closed`, waits
    /// in progress end with `Closed`. Handles from other `open` calls keep
    /// working; the store is released when no handle holds it. When this
    /// was the store's last handle in the process, `close` returns once
    /// RocksDB has closed (files and lock released), waiting for calls in
    /// progress on other threads to end (they end promptly: waits wake with
    /// `Closed`), at most 30 s. Dropping the last handle without
    /// `close` does not wait. Idempotent.
    pub fn close(&self) {
        self.inner.closed.store(true, Ordering::SeqCst);
        let e = self
            .inner
            .engine
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(e) = e {
            // Wake our waiters so they see `closed`; if ours was the last
            // handle the engine stops its reaper and RocksDB closes when the
            // last reference drops: here, or in a call still in progress,
            // which we wait for.
            let dropped = e.dropped.clone();
            if e.release_handle() {
                dropped.wait(CLOSE_WAIT);
            }
        }
    }

    /// Whether this handle can serve calls: `Ok` while it is open and its
    /// engine is not fenced; `Closed` after [`close`](Self::close),
    /// `Unavailable` (with the fence's reason) once a commit's outcome was
    /// unknown. What a readiness probe asks; it touches no store (a lock
    /// read and an atomic load).
    pub fn ready(&self) -> Result<()> {
        self.engine().map(|_| ())
    }

    /// Whether [`Queue::close`] was called on this handle or a clone of it.
    pub fn is_closed(&self) -> bool {
        self.inner.closed.load(Ordering::SeqCst)
    }

    /// Whether RocksDB is stopping or slowing writes right now (too many
    /// memtables or level-0 files waiting for a flush or a compaction), so
    /// a write could block: the properties `rocksdb.is-write-stopped` and
    /// `rocksdb.actual-delayed-write-rate`. A binding that runs short calls
    /// on its caller's thread (Node's event loop) asks before each one and
    /// hands the call to a pool thread when this answers true. It takes
    /// RocksDB's DB mutex for a moment; about a microsecond. A closed
    /// handle answers false (the call then fails with `Closed` at once).
    pub fn write_stalled(&self) -> bool {
        let Ok(e) = self.engine() else { return false };
        let db = e.db();
        let int = |p: &std::ffi::CStr| db.property_int_value(p).ok().flatten().unwrap_or(0);
        int(c"rocksdb.is-write-stopped") != 0 || int(c"rocksdb.actual-delayed-write-rate") != 0
    }

    /// The store directory (canonicalized). `Closed` after `close`.
    pub fn path(&self) -> Result<std::path::PathBuf> {
        Ok(self.engine()?.path.clone())
    }

    /// The configuration in force. `Closed` after `close`.
    pub fn config(&self) -> Result<Config> {
        Ok(self.engine()?.cfg.clone())
    }

    /// Enqueue one job; it becomes pending (leasable at its run-at). The
    /// payload is copied. Returns its id and whether it was created (false
    /// when the idempotency key matched an existing job).
    ///
    /// Errors: `InvalidArgument` for a malformed kind, a `system:*` kind
    /// outside the system scope, a payload over `max_payload_bytes`, an empty
    /// or over-512-byte idempotency key, or `max_attempts` 0; `Storage` when
    /// the write fails; `Closed`.
    pub fn enqueue(&self, kind: &str, payload: &[u8], options: EnqueueOptions) -> Result<Enqueued> {
        let mut job = NewJob {
            kind: kind.to_string(),
            payload: payload.to_vec(),
            options,
        };
        crate::trace_context::inject_current(&mut job.options.metadata);
        self.writable()?.enqueue_one(job)
    }

    /// Enqueue many jobs in one atomic batch: all or none. Answers in input
    /// order; jobs of one batch sharing a scope and idempotency key get one
    /// job. Errors as [`Queue::enqueue`]; one invalid job rejects the batch.
    pub fn enqueue_many(&self, mut jobs: Vec<NewJob>) -> Result<Vec<Enqueued>> {
        crate::trace_context::inject_current_all(&mut jobs);
        self.writable()?.enqueue_many(jobs)
    }

    /// Lease the most urgent ready job, or `None` (after waiting up to
    /// `options.wait`). The lease lasts the kind's `lease_ttl`: heartbeat with
    /// [`Queue::extend`], then `complete`, `fail` or `release` it.
    ///
    /// Errors: `InvalidArgument` for an empty or over-256-byte `worker_id`;
    /// `Closed`, also when the handle is closed during the wait; `Storage`.
    /// Rows that do not decode are skipped and counted, not returned.
    pub fn lease_next(&self, worker_id: &str, options: &LeaseOptions) -> Result<Option<Job>> {
        Ok(self.lease_many(worker_id, 1, options)?.pop())
    }

    /// Lease up to `max` ready jobs in one batch (waiting up to
    /// `options.wait` for the first; it returns as soon as it has any).
    /// Fewer, or none, when fewer are ready.
    ///
    /// Errors: as [`Queue::lease_next`], and `InvalidArgument` when `max` is
    /// 0 or over 10,000.
    pub fn lease_many(
        &self,
        worker_id: &str,
        max: usize,
        options: &LeaseOptions,
    ) -> Result<Vec<Job>> {
        let e = self.writable()?;
        if let Some(c) = &options.cancel {
            c.attach(&e);
        }
        let h = &self.inner;
        e.lease(worker_id, options, max, &|| h.closed.load(Ordering::SeqCst))
    }

    /// Renew leases (a heartbeat). Per token, in order: the new deadline (ms
    /// since the epoch: now + the kind's `lease_ttl`, never earlier than the
    /// current one), or `Aborted` when that lease is lost (stale generation,
    /// leased by another worker, or no longer leased: stop working on it),
    /// or `NotFound` when there is no such job. A lease past its deadline
    /// can still be renewed until the reaper has expired it.
    ///
    /// The outer error is for the whole call: `InvalidArgument` for a bad
    /// `worker_id`, `Storage`, `Closed`.
    pub fn extend(&self, tokens: &[LeaseToken], worker_id: &str) -> Result<Vec<Result<u64>>> {
        self.writable()?.extend(tokens, worker_id)
    }

    /// [`Queue::extend`] with progress: `progress[i]` (a small value in the
    /// payload convention, at most [`crate::limits::MAX_PROGRESS_BYTES`])
    /// is stored on `tokens[i]`'s record by the same write that renews it
    /// (no write beyond the heartbeat), shown by `get` and `list`, and
    /// published as a `progress` event. A shorter `progress` means no
    /// report for the rest. Per token as `extend`; a report that is too big,
    /// or more reports than tokens, is `InvalidArgument` for the whole call
    /// (nothing renewed).
    pub fn heartbeat(
        &self,
        tokens: &[LeaseToken],
        progress: &[Option<Vec<u8>>],
        worker_id: &str,
    ) -> Result<Vec<Result<u64>>> {
        self.writable()?.heartbeat(tokens, progress, worker_id)
    }

    /// Watch job `id` until it is terminal (completed, dead, cancelled) or
    /// removed: the returned [`JobWatch`] is done once that transition has
    /// committed (at once if it already has), woken by the commit itself.
    /// Any number of watches per job; a watch costs a writer one map
    /// look-up when it fires, nothing before.
    ///
    /// Errors: `NotFound` when there is no such job; `Closed`.
    pub fn watch(&self, id: &JobId) -> Result<JobWatch> {
        self.engine()?.watch(id)
    }

    /// Wait up to `timeout` for job `id` to be terminal, and return it as it
    /// is then: terminal (completed with its result, dead with its last
    /// error, cancelled), or in its current state when the time ran out.
    /// Woken by the transition, never by polling.
    ///
    /// Errors: `NotFound` for no such job (or one removed meanwhile);
    /// `Closed` when this handle is closed, before or during the wait.
    pub fn wait(&self, id: &JobId, timeout: std::time::Duration) -> Result<JobInfo> {
        let w = self.watch(id)?;
        self.wait_watched(&w, timeout)
    }

    /// Wait on a watch made by [`Queue::watch`] (see [`Queue::wait`]).
    pub fn wait_watched(&self, w: &JobWatch, timeout: std::time::Duration) -> Result<JobInfo> {
        let deadline = std::time::Instant::now().checked_add(timeout);
        // In slices, so closing this handle (not the store) ends the wait.
        loop {
            if self.is_closed() {
                return Err(Error::Closed);
            }
            let now = std::time::Instant::now();
            let left = deadline.map_or(WAIT_SLICE, |d| d.saturating_duration_since(now));
            if w.wait(Some(left.min(WAIT_SLICE))) || left <= WAIT_SLICE || w.is_cancelled() {
                break;
            }
        }
        self.get(&w.id())?
            .ok_or_else(|| Error::NotFound(format!("no job {}", w.id())))
    }

    /// Subscribe to the transitions the engine commits from now on (see
    /// [`crate::watch`]): a live stream, in commit order, through a bounded
    /// buffer that never slows the engine (a reader that falls behind is
    /// told how many events it missed). Nothing is replayed.
    ///
    /// Errors: `InvalidArgument` for a buffer out of range; `Closed`.
    pub fn subscribe(&self, options: SubscribeOptions) -> Result<Subscription> {
        self.engine()?.subscribe(options)
    }

    /// Complete a leased job, with an optional result (copied). The token is
    /// checked, not the worker id.
    ///
    /// Retry-safe: repeated with the same token after it took effect (a
    /// reply lost on the way), it answers as the first call did (`Ok`, or
    /// `Cancelled`) and changes nothing; the first call's result and
    /// follow-ups stand. Decided from the record: the job is still in the
    /// state that settle left it, under the token's generation.
    ///
    /// Errors: `InvalidArgument` for a result over `max_payload_bytes`;
    /// `Aborted` for a stale token or a job no longer leased by it that
    /// this settle did not leave (nothing changes); `NotFound` when there
    /// is no such job; `Cancelled` when it was cancelled while leased (it
    /// is recorded cancelled, the result kept); `Storage`; `Closed`.
    pub fn complete(&self, token: &LeaseToken, result: Option<&[u8]>) -> Result<()> {
        self.complete_with(Completion::new(*token, result.map(|r| r.to_vec())))
    }

    /// [`Queue::complete`] taking a [`Completion`] (which also records how
    /// the result was made). Errors as [`Queue::complete`].
    pub fn complete_with(&self, completion: Completion) -> Result<()> {
        self.writable()?.complete(completion)
    }

    /// Complete many leased jobs (each with an optional result) in one
    /// atomic write: the batch form of [`Queue::complete`]. Answers per item,
    /// in order: `Ok`, or why that item changed nothing — `Aborted` (stale
    /// token), `NotFound`, `InvalidArgument` (a result over
    /// `max_payload_bytes`), `Cancelled`. Each item is retry-safe as
    /// [`Queue::complete`] is: a token completed by an earlier call, or
    /// named again in this one, answers as its completion did.
    ///
    /// The outer error is for the whole call, and then nothing was
    /// completed: `Storage`, `Closed`.
    pub fn complete_many(&self, items: Vec<Completion>) -> Result<Vec<Result<()>>> {
        self.writable()?.complete_many(items)
    }

    /// Fail a leased job: it retries after backoff, or goes dead when not
    /// `retryable` or out of attempts. Spends one attempt; `reason` (cut to
    /// 4096 bytes) becomes the job's `last_error`.
    ///
    /// Retry-safe as [`Queue::complete`]: repeated with the same token
    /// while the job is still failed (or dead) by it, it answers `Ok` again
    /// and spends no second attempt.
    ///
    /// Errors: `Aborted` for a stale token or a job no longer leased by it
    /// (nothing changes); `NotFound` when there is no such job; `Cancelled`
    /// when it was cancelled while leased; `Storage`; `Closed`.
    pub fn fail(&self, token: &LeaseToken, reason: &str, retryable: bool) -> Result<()> {
        let mut f = Failure::new(*token, reason);
        f.retryable = retryable;
        self.fail_with(f)
    }

    /// [`Queue::fail`] taking a [`Failure`], which can also say when to
    /// retry (`retry_in`, instead of the backoff schedule; still an attempt
    /// spent). Errors as [`Queue::fail`], and `InvalidArgument` for a
    /// `retry_in` over 100 years.
    pub fn fail_with(&self, failure: Failure) -> Result<()> {
        self.writable()?.fail(failure)
    }

    /// Fail many leased jobs in one atomic write: the batch form of
    /// [`Queue::fail_with`] (each item its own reason, `retryable` and
    /// `retry_in`). Answers per item, in order, as [`Queue::complete_many`]
    /// does: `Ok`, or why that item changed nothing — `Aborted`,
    /// `NotFound`, `InvalidArgument` (a `retry_in` over 100 years) — or
    /// `Cancelled` (recorded cancelled). Each item is retry-safe as
    /// [`Queue::fail`] is. The outer error (`Storage`, `Closed`) means
    /// nothing was failed.
    pub fn fail_many(&self, items: Vec<Failure>) -> Result<Vec<Result<()>>> {
        self.writable()?.fail_many(items)
    }

    /// Hand a leased job back to pending until now + `delay` without
    /// spending an attempt (event `snoozed`; the job's snooze count goes
    /// up). Past the kind's `max_snoozes`, a snooze counts as a failed
    /// attempt retried after `delay`. Retry-safe as [`Queue::complete`]:
    /// repeated while the job is still pending from this snooze, it answers
    /// `Ok` again (the delay and snooze count of the first call stand).
    ///
    /// Errors: as [`Queue::fail`]; `InvalidArgument` for a delay over 100
    /// years; `Cancelled` when the job was cancelled while leased (it is
    /// recorded cancelled, not snoozed).
    pub fn snooze(&self, token: &LeaseToken, delay: std::time::Duration) -> Result<()> {
        self.writable()?.snooze(token, delay)
    }

    /// Cancel a job. A pending, scheduled, failed or waiting job is cancelled at
    /// once ([`CancelOutcome::Cancelled`]); a leased one gets a durable
    /// cancel request ([`CancelOutcome::Requested`]): its next `extend`
    /// answers `Cancelled` for its token, and whatever its holder then
    /// submits, or the lease expiring, records it cancelled, never retried.
    /// `reason` (cut to 4096 bytes) goes into its event log.
    ///
    /// Errors: `NotFound`; `WrongState` for a completed, dead or cancelled
    /// job (it is untouched); `Storage`; `Closed`.
    pub fn cancel(&self, id: &JobId, reason: &str) -> Result<CancelOutcome> {
        self.writable()?.cancel(id, reason)
    }

    /// Cancel every unfinished job matching `filter` (kind, scope, state),
    /// in atomic batches of 1,000 rows; an error stops it with the earlier
    /// batches committed. Leased jobs get cancel requests; waiting parents
    /// (fan-in) are cancelled one at a time, each under the fan-in lock.
    ///
    /// Errors: `InvalidArgument` for a finished state in the filter;
    /// `Storage`; `Closed`.
    pub fn cancel_many(&self, filter: &CancelFilter) -> Result<CancelReport> {
        self.writable()?.cancel_many(filter)
    }

    /// Delete a job that is not leased (pending, failed, dead, completed,
    /// cancelled) with all its index entries, in one atomic batch.
    ///
    /// Errors: `NotFound`; `WrongState` for a leased job (cancel it first);
    /// `Storage`; `Closed`.
    pub fn delete(&self, id: &JobId) -> Result<()> {
        self.writable()?.delete(id)
    }

    /// Pause a kind (exact or `family:*`) or a scope: its jobs are not
    /// leased until [`Queue::resume`]; leases running now carry on. Durable
    /// (survives a restart). When this returns, no lease of paused work is
    /// in flight. Returns false when it was paused already.
    ///
    /// Errors: `Storage`; `Closed`.
    pub fn pause(&self, target: &PauseTarget) -> Result<bool> {
        self.writable()?.pause(target)
    }

    /// Resume what [`Queue::pause`] paused; waiting pollers wake. Returns
    /// false when it was not paused (a kind paused through its family is
    /// resumed by resuming the family).
    ///
    /// Errors: `Storage`; `Closed`.
    pub fn resume(&self, target: &PauseTarget) -> Result<bool> {
        self.writable()?.resume(target)
    }

    /// What is paused now. `Closed` after `close`.
    pub fn paused(&self) -> Result<Paused> {
        Ok((*self.engine()?.paused()).clone())
    }

    /// Set (or replace) the flow-control limit on `target`: a concurrency
    /// cap, a rate with a burst and, on scopes, a weight (see
    /// [`crate::flow`]). Durable; takes effect for the next lease, and
    /// counts the leases that exist now (a cap below them lets none go
    /// until enough settle; nothing running is taken back).
    ///
    /// Errors: `InvalidArgument` (a setting out of range, a weight on a
    /// kind target); `Storage`; `Closed`.
    pub fn set_limit(&self, target: &LimitTarget, limit: Limit) -> Result<()> {
        self.writable()?.set_limit(target, limit)
    }

    /// Remove the limit on `target`; false when there was none. Waiting
    /// pollers wake.
    ///
    /// Errors: `Storage`; `Closed`.
    pub fn remove_limit(&self, target: &LimitTarget) -> Result<bool> {
        self.writable()?.remove_limit(target)
    }

    /// Every limit, by target label, with its use now: leases counted,
    /// instances held back, and how often each held work back since open.
    /// `Closed` after `close`.
    pub fn limits(&self) -> Result<Vec<LimitStatus>> {
        Ok(self.engine()?.limits())
    }

    /// Hand a leased job back to pending without spending an attempt, at its
    /// old place in line (a worker shutting down gracefully). Retry-safe as
    /// [`Queue::complete`]: repeated while the job is still pending from
    /// this release, it answers `Ok` again.
    ///
    /// Errors: as [`Queue::fail`].
    pub fn release(&self, token: &LeaseToken) -> Result<()> {
        self.writable()?.release(token)
    }

    /// Release many leased jobs in one atomic write: the batch form of
    /// [`Queue::release`] (a worker stopping hands back what it leased
    /// ahead). Answers per item, in order, as [`Queue::complete_many`]
    /// does; each item is retry-safe as [`Queue::release`] is. The outer
    /// error (`Storage`, `Closed`) means nothing was released.
    pub fn release_many(&self, tokens: &[LeaseToken]) -> Result<Vec<Result<()>>> {
        self.writable()?.release_many(tokens)
    }

    /// Operator action: a dead or failed job back to pending, attempts reset,
    /// ready now.
    ///
    /// Errors: `NotFound` when there is no such job; `InvalidArgument` when
    /// it is neither dead nor failed (a failed job being leased at that
    /// moment counts as leased); `Storage`; `Closed`.
    pub fn retry(&self, id: &JobId) -> Result<()> {
        self.writable()?.retry(id)
    }

    /// A job with its event log, or `Ok(None)` when there is no such job.
    ///
    /// Errors: `Corruption` when the id index names a row that is missing or
    /// does not decode; `Storage`; `Closed`.
    pub fn get(&self, id: &JobId) -> Result<Option<JobInfo>> {
        self.engine()?.get(id)
    }

    /// A page of jobs in key order (scope, state, priority, time); with
    /// [`ListQuery::tag`], the tag's jobs from the tag index, by scope,
    /// state and enqueue order, O(page). Rows that do not decode are
    /// skipped and listed in [`ListPage::corrupt`].
    ///
    /// Errors: `InvalidArgument` for a limit of 0 or over
    /// [`crate::limits::MAX_LIST_LIMIT`], a malformed tag or `after` cursor;
    /// `Storage`; `Closed`.
    pub fn list(&self, query: &ListQuery) -> Result<ListPage> {
        self.engine()?.list(query)
    }

    /// Run one reaper pass now, at the queue clock's time: expired leases go
    /// back to pending with backoff (or dead), up to `prune_batch` jobs that
    /// expired before they started go dead, then up to `prune_batch`
    /// completed, dead and cancelled jobs past their retention are deleted. Independent of the
    /// background reaper. Errors: `Storage` (the pass stops there); `Closed`.
    pub fn reap(&self) -> Result<ReapReport> {
        crate::reaper::pass(&*self.writable()?)
    }

    /// Operator action: delete `state` jobs (completed, dead or cancelled) that got
    /// there before `cutoff_ms` (ms since the epoch), with their indexes and
    /// counters. Returns how many were deleted. Runs in batches of 1,000;
    /// an error stops it with the earlier batches committed.
    ///
    /// Errors: `InvalidArgument` for any other state; `Storage`; `Closed`.
    pub fn purge(&self, state: crate::job::State, cutoff_ms: u64) -> Result<PurgeReport> {
        self.writable()?.purge(state, cutoff_ms)
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        if let Some(e) = self
            .engine
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            e.release_handle();
        }
    }
}
