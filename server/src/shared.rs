//! What every RPC handler shares: the queue, the server's stats, the
//! closing signal, the PollJobs streams' bookkeeping, and the checks and
//! status helpers the handlers (service.rs, poll.rs, settle.rs, ...) use.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use telha_jobs::{limits, Error, LeaseToken, Queue, Result};
use telha_jobs_proto::status::to_status;
use tokio::sync::watch;
use tonic::Status;

use crate::poll::Slot;
use crate::source::Source;
use crate::stats::ServerStats;

/// What every handler shares.
pub(crate) struct Shared {
    /// Where each call's queue comes from (source.rs): the store, or in
    /// cluster mode the engine of the current term.
    pub(crate) source: Source,
    pub(crate) stats: Arc<ServerStats>,
    pub(crate) closing: watch::Receiver<bool>,
    pub(crate) max_wait: Duration,
    /// `ServeOptions::allow_remote_backup` (backup.rs).
    pub(crate) allow_remote_backup: bool,
    /// Short calls run inline ([`Shared::quick`]): one store that does
    /// not fsync per write (never in cluster mode).
    inline: bool,
    /// Leases delivered by a PollJobs stream and not yet settled through
    /// the server, by token: the stream whose capacity they count against.
    pub(crate) streamed: Mutex<HashMap<LeaseToken, Weak<Slot>>>,
    /// The open PollJobs streams by id (their `telha-poll-stream` header):
    /// what StopPoll signals. A stream's loop removes itself as it ends.
    pub(crate) polls: Mutex<HashMap<String, watch::Sender<bool>>>,
}

impl Shared {
    pub(crate) fn new(
        source: Source,
        stats: Arc<ServerStats>,
        closing: watch::Receiver<bool>,
        max_wait: Duration,
    ) -> Self {
        let inline = match &source {
            Source::Fixed(q) => q.config().is_ok_and(|c| !c.sync_writes),
            Source::Dynamic(_) => false,
        };
        Shared {
            source,
            stats,
            closing,
            max_wait,
            allow_remote_backup: false,
            inline,
            streamed: Mutex::new(HashMap::new()),
            polls: Mutex::new(HashMap::new()),
        }
    }

    /// This call's queue, or `UNAVAILABLE` with the leader hint.
    pub(crate) fn queue(&self) -> Result<Queue, Status> {
        self.source.queue_or_status()
    }

    /// The answer for a core error (with the leader hint in cluster mode).
    pub(crate) fn status(&self, e: &Error) -> Status {
        self.source.status(e)
    }

    pub(crate) fn is_closing(&self) -> bool {
        *self.closing.borrow()
    }

    /// A lease is no longer held by its stream (settled, released or lost).
    pub(crate) fn settled(&self, t: &LeaseToken) {
        let slot = self
            .streamed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(t);
        if let Some(slot) = slot.and_then(|w| w.upgrade()) {
            slot.held
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(t);
            slot.settles
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            slot.freed.notify_one();
        }
    }

    pub(crate) fn renewed(&self, t: &LeaseToken, deadline: u64) {
        let slot = self
            .streamed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(t)
            .and_then(Weak::upgrade);
        if let Some(slot) = slot {
            if let Some(d) = slot
                .held
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get_mut(t)
            {
                *d = deadline;
            }
        }
    }

    /// Run a short core call (one job, or a batch of at most
    /// [`INLINE_MAX_ITEMS`]): inline on the async worker when the store
    /// does not fsync per write (the call then takes microseconds, and a
    /// hand-off to the blocking pool and back would cost more than the
    /// call), else on the blocking pool like [`Shared::run`] (always in
    /// cluster mode: a write there waits for a quorum). A panic in the
    /// core answers `INTERNAL` either way.
    pub(crate) async fn quick<T, F>(&self, f: F) -> Result<T, Status>
    where
        T: Send + 'static,
        F: FnOnce(&Queue) -> Result<T> + Send + 'static,
    {
        let q = match &self.source {
            Source::Fixed(q) if self.inline => q,
            _ => return self.run(f).await,
        };
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(q))) {
            Ok(r) => r.map_err(|e| self.status(&e)),
            Err(_) => Err(Status::internal(
                "server task failed: the core call panicked",
            )),
        }
    }

    /// Run a core call on the blocking pool.
    pub(crate) async fn run<T, F>(&self, f: F) -> Result<T, Status>
    where
        T: Send + 'static,
        F: FnOnce(&Queue) -> Result<T> + Send + 'static,
    {
        let q = self.queue()?;
        match tokio::task::spawn_blocking(move || f(&q)).await {
            Ok(r) => r.map_err(|e| self.status(&e)),
            Err(e) => Err(Status::internal(format!("server task failed: {e}"))),
        }
    }
}

/// The largest batch (jobs, tokens, settles) [`Shared::quick`] runs
/// inline; a larger one takes long enough to go to the blocking pool.
pub(crate) const INLINE_MAX_ITEMS: usize = 16;

pub(crate) fn invalid(msg: impl Into<String>) -> Status {
    to_status(&Error::InvalidArgument(msg.into()))
}

pub(crate) fn bad(e: Error) -> Status {
    to_status(&e)
}

/// The core's worker-id rule, answered before any work is queued.
pub(crate) fn check_worker(w: &str) -> Result<(), Status> {
    limits::validate_worker_id(w).map_err(bad)
}

/// A batch request (enqueue, submit, heartbeat) holds at most the core's
/// [`limits::MAX_BATCH`] items.
pub(crate) fn check_batch(what: &str, n: usize) -> Result<(), Status> {
    if n > limits::MAX_BATCH {
        return Err(invalid(format!(
            "{what}: at most {} per call, got {n}",
            limits::MAX_BATCH
        )));
    }
    Ok(())
}

pub(crate) fn closing_status() -> Status {
    to_status(&Error::Closed)
}

pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Resolves once the server starts closing (the watch guard never crosses
/// an await, so the futures stay `Send`).
pub(crate) async fn until_closing(rx: &mut watch::Receiver<bool>) {
    let _ = rx.wait_for(|c| *c).await;
}
