//! `Queue`: the public handle.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use crate::clock::{Clock, SystemClock};
use crate::config::Config;
pub use crate::engine::CheckReport;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::job::{
    EnqueueOptions, Enqueued, Job, JobId, JobInfo, LeaseOptions, LeaseToken, ListPage, ListQuery,
    NewJob, ReapReport, Stats,
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
    pub fn open(path: impl AsRef<Path>, config: Config) -> Result<Queue> {
        Self::open_with_clock(path, config, Arc::new(SystemClock))
    }

    /// Open with an injected clock (tests use [`crate::ManualClock`]). When the
    /// store is already open in this process the existing engine, and its
    /// clock, are shared; a different config is an error.
    pub fn open_with_clock(
        path: impl AsRef<Path>,
        config: Config,
        clock: Arc<dyn Clock>,
    ) -> Result<Queue> {
        let engine = Engine::open(path.as_ref(), config, clock)?;
        Ok(Queue {
            inner: Arc::new(Handle {
                engine: RwLock::new(Some(engine)),
                closed: AtomicBool::new(false),
            }),
        })
    }

    fn engine(&self) -> Result<Arc<Engine>> {
        self.inner
            .engine
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .ok_or(Error::Closed)
    }

    /// Close this handle: later calls answer `Closed`, waits in progress end
    /// with `Closed`. The store is released when no other handle holds it.
    /// Idempotent.
    pub fn close(&self) {
        self.inner.closed.store(true, Ordering::SeqCst);
        let e = self
            .inner
            .engine
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(e) = e {
            // Wake our waiters so they see `closed`; if we held the last
            // reference the engine stops its reaper and closes RocksDB here.
            if Arc::strong_count(&e) == 1 {
                e.begin_shutdown();
            } else {
                e.notifier.bump_always();
            }
        }
    }

    pub fn is_closed(&self) -> bool {
        self.inner.closed.load(Ordering::SeqCst)
    }

    /// The store directory.
    pub fn path(&self) -> Result<std::path::PathBuf> {
        Ok(self.engine()?.path.clone())
    }

    /// The configuration in force.
    pub fn config(&self) -> Result<Config> {
        Ok(self.engine()?.cfg.clone())
    }

    /// Enqueue one job; it becomes pending (leasable at its run-at).
    pub fn enqueue(&self, kind: &str, payload: &[u8], options: EnqueueOptions) -> Result<Enqueued> {
        let job = NewJob {
            kind: kind.to_string(),
            payload: payload.to_vec(),
            options,
        };
        let mut v = self.engine()?.enqueue_many(vec![job])?;
        v.pop()
            .ok_or_else(|| Error::Storage("enqueue returned nothing".into()))
    }

    /// Enqueue many jobs in one atomic batch: all or none.
    pub fn enqueue_many(&self, jobs: Vec<NewJob>) -> Result<Vec<Enqueued>> {
        self.engine()?.enqueue_many(jobs)
    }

    /// Lease the most urgent ready job, or `None` (after waiting up to
    /// `options.wait`).
    pub fn lease_next(&self, worker_id: &str, options: &LeaseOptions) -> Result<Option<Job>> {
        Ok(self.lease_many(worker_id, 1, options)?.pop())
    }

    /// Lease up to `max` ready jobs in one batch (waiting up to
    /// `options.wait` for the first).
    pub fn lease_many(
        &self,
        worker_id: &str,
        max: usize,
        options: &LeaseOptions,
    ) -> Result<Vec<Job>> {
        let e = self.engine()?;
        let h = &self.inner;
        e.lease(worker_id, options, max, &|| h.closed.load(Ordering::SeqCst))
    }

    /// Renew leases (a heartbeat). Per token: the new deadline, or
    /// `Aborted` when that lease is lost (stop working on it).
    pub fn extend(&self, tokens: &[LeaseToken], worker_id: &str) -> Result<Vec<Result<u64>>> {
        self.engine()?.extend(tokens, worker_id)
    }

    /// Complete a leased job, with an optional result.
    pub fn complete(&self, token: &LeaseToken, result: Option<&[u8]>) -> Result<()> {
        self.engine()?.complete(token, result.map(|r| r.to_vec()))
    }

    /// Fail a leased job: it retries after backoff, or goes dead when not
    /// `retryable` or out of attempts.
    pub fn fail(&self, token: &LeaseToken, reason: &str, retryable: bool) -> Result<()> {
        self.engine()?.fail(token, reason, retryable)
    }

    /// Hand a leased job back to pending without spending an attempt.
    pub fn release(&self, token: &LeaseToken) -> Result<()> {
        self.engine()?.release(token)
    }

    /// Operator action: a dead or failed job back to pending, attempts reset.
    pub fn retry(&self, id: &JobId) -> Result<()> {
        self.engine()?.retry(id)
    }

    /// A job with its event log, or `None`.
    pub fn get(&self, id: &JobId) -> Result<Option<JobInfo>> {
        self.engine()?.get(id)
    }

    /// A page of jobs in key order (scope, state, priority, time).
    pub fn list(&self, query: &ListQuery) -> Result<ListPage> {
        self.engine()?.list(query)
    }

    /// Run one reaper pass now.
    pub fn reap(&self) -> Result<ReapReport> {
        crate::reaper::pass(&*self.engine()?)
    }

    /// Exact counts per kind and state (no scan).
    pub fn stats(&self) -> Result<Stats> {
        Ok(self.engine()?.counts.stats())
    }

    /// Prometheus text exposition.
    pub fn metrics(&self) -> Result<String> {
        let e = self.engine()?;
        Ok(e.metrics.render(&e.counts.stats(), e.leases.len()))
    }

    /// Full consistency check (a scan of every row and index).
    pub fn check(&self) -> Result<CheckReport> {
        self.engine()?.check()
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
            if Arc::strong_count(&e) == 1 {
                e.begin_shutdown();
            }
        }
    }
}
