//! The write seam: every engine write goes through one [`Commit`].
//!
//! A commit has three outcomes. `Ok`: the batch is durable (as far as
//! `sync_writes` asks) and visible to every later read. `Failed`: nothing
//! was written, so the engine's memory (leases, counters, cursors) still
//! agrees with the store, and the call fails with that error. `Unknown`:
//! the batch may or may not have been applied (a replicated write whose
//! leader lost its quorum mid-flight, a timeout). Then the engine's memory
//! can no longer be trusted to agree with the store, so the engine
//! **fences** itself: every later call, of any handle, answers
//! `Unavailable`; its reaper and scheduler threads stop; waits and event
//! streams end. A fenced engine is never revived: the store is reopened
//! (after every handle of the fenced engine is dropped), and `recover`
//! rebuilds memory from what the store holds.

use std::sync::Arc;

use rocksdb::{WriteBatch, WriteOptions};

use super::Engine;
use crate::error::{Error, Result};
use crate::replica::{Replicate, ReplicateError};
use crate::store::{Store, HEAVY_WRITE};

/// Why a [`Commit`] did not answer `Ok`.
#[derive(Debug)]
pub(crate) enum CommitError {
    /// Nothing was written; the call fails with this error.
    Failed(Error),
    /// The batch may or may not have been applied: fences the engine. The
    /// message says what happened, for the `Unavailable` answers. The
    /// embedded commit never yields it; a replicated one does.
    Unknown(String),
}

/// Where an engine's batches go. `Ok` only once the batch is durable and
/// visible to reads of the store the engine reads.
pub(crate) trait Commit: Send + Sync {
    fn commit(&self, batch: WriteBatch) -> std::result::Result<(), CommitError>;
}

/// The embedded commit: one `write_opt` on the store's RocksDB, with
/// `sync` as `sync_writes` asks.
///
/// It never answers `Unknown`. RocksDB's write either applies the batch to
/// the WAL and the memtable and answers `Ok`, or answers an error with the
/// batch not in the memtable, which maps to `Failed` (`Storage`, as before
/// the seam). One edge is ambiguous and is mapped to `Failed` all the same:
/// when the WAL write succeeded but its fsync failed, the bytes may be in
/// the WAL and replayed by the next open. RocksDB then refuses every later
/// write (a background error), so the engine cannot act on a memory that
/// disagrees with the store; the next open reads what the store holds.
pub(crate) struct Local {
    store: Arc<Store>,
    wopts: WriteOptions,
}

impl Local {
    pub fn new(store: Arc<Store>, sync_writes: bool) -> Local {
        let mut wopts = WriteOptions::default();
        wopts.set_sync(sync_writes);
        Local { store, wopts }
    }
}

impl Commit for Local {
    fn commit(&self, batch: WriteBatch) -> std::result::Result<(), CommitError> {
        // Counted for `Queue::write_busy`: a short write of another thread
        // would queue behind it.
        let _heavy = (batch.len() >= HEAVY_WRITE).then(|| self.store.heavy_write());
        self.store
            .db()
            .write_opt(batch, &self.wopts)
            .map_err(|e| CommitError::Failed(e.into()))
    }
}

/// The replicated commit (`Queue::open_replica`): the batch's bytes go to
/// the [`Replicate`] (telha-jobs-cluster's proposer), which answers once
/// they are durable on a quorum and applied to the store this engine
/// reads. A separate impl, so the embedded path keeps its `write_opt`
/// without a copy of the bytes or another indirection.
pub(crate) struct Replicated {
    replicate: Box<dyn Replicate>,
}

impl Replicated {
    pub fn new(replicate: Box<dyn Replicate>) -> Replicated {
        Replicated { replicate }
    }
}

impl Commit for Replicated {
    fn commit(&self, batch: WriteBatch) -> std::result::Result<(), CommitError> {
        self.replicate
            .replicate(batch.data().to_vec())
            .map_err(|e| match e {
                ReplicateError::Failed(e) => CommitError::Failed(e),
                ReplicateError::Unknown(why) => CommitError::Unknown(why),
            })
    }
}

/// The answer of every call to a fenced engine.
pub(crate) fn unavailable(why: &str) -> Error {
    Error::unavailable(format!("the queue is fenced: {why}"))
}

impl Engine {
    /// Commit `batch` through the engine's [`Commit`]. `Unavailable` (and
    /// nothing written) once the engine is fenced; an unknown outcome
    /// fences it and answers `Unavailable`.
    pub fn write(&self, batch: WriteBatch) -> Result<()> {
        if self.read_only {
            return Err(Error::invalid("the store is open read-only"));
        }
        // A call that passed its entry check before a fence must not write
        // on a memory that may disagree with the store.
        if let Some(why) = self.fenced.get() {
            return Err(unavailable(why));
        }
        match self.commit.commit(batch) {
            Ok(()) => Ok(()),
            Err(CommitError::Failed(e)) => Err(e),
            Err(CommitError::Unknown(what)) => {
                let why = format!(
                    "the engine of store {} is fenced: the outcome of a write is unknown ({what}); \
                     reopen the store",
                    self.path.display()
                );
                self.fence(why.clone());
                Err(unavailable(&why))
            }
        }
    }

    /// Whether an unknown commit outcome fenced this engine.
    pub fn is_fenced(&self) -> bool {
        self.fenced.get().is_some()
    }

    /// `Err(Unavailable)` when the engine is fenced: the check at every
    /// entry point (`Queue`'s calls, waits, the registry's open).
    pub fn check_fenced(&self) -> Result<()> {
        match self.fenced.get() {
            Some(why) => Err(unavailable(why)),
            None => Ok(()),
        }
    }

    /// Fence the engine (once): later calls answer `Unavailable`, the reaper
    /// and scheduler are told to stop, waiters wake, streams and watches
    /// end. Runs inside a write, so under whatever locks the writer holds
    /// (a lease entry, idempotency stripes, the hub's `order`): it takes
    /// only leaf locks and the hub's own (never `order`), and joins no
    /// thread (the reaper may be waiting for a lease entry this writer
    /// holds). The threads are joined when the last handle closes. Also
    /// called from outside (`Queue::fence`: a replica's leadership lost).
    pub(crate) fn fence(&self, why: String) {
        if self.fenced.set(why.clone()).is_err() {
            return;
        }
        if let Some(r) = self
            .reaper
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
        {
            r.signal();
        }
        if let Some(s) = self
            .scheduler
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
        {
            s.signal();
        }
        self.notifier.bump_always();
        self.hub.end_all(Some(why));
    }
}

#[cfg(test)]
#[path = "commit_tests.rs"]
mod tests;
