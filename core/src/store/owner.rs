//! [`Store`]: the owner of an open store's RocksDB handle and of the two
//! files beside it (`telha.format`, `telha.pid`).
//!
//! Split from the engine so that something else than the engine can own
//! the store and outlive an engine (a replicated state machine applies
//! batches to the store whether or not an engine runs on it, and drops a
//! fenced engine without closing the store). The engine holds an
//! `Arc<Store>` and borrows the `DB` from it; the store closes when its
//! last owner lets go.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use rocksdb::DB;

use super::format::{self, StoreFormat};
use crate::error::Result;

/// An open store: the RocksDB handle, its directory and its format.
///
/// Dropping the last reference flushes (and syncs) the WAL, removes the pid
/// file and closes RocksDB, which releases its `LOCK` to the next opener,
/// in that order. A read-only store only closes its handle.
pub(crate) struct Store {
    /// Closed after `drop` removed the pid file (fields drop after the
    /// body). Never handed out as `&mut DB`, so its column family map never
    /// changes while the store is open (the engine caches pointers into it).
    db: DB,
    /// The directory, as the opener named it (the engine canonicalizes it
    /// first).
    path: PathBuf,
    /// Opened with [`Store::open_read_only`]: never written.
    read_only: bool,
    /// Opened with [`Store::open_replica`]: written without the WAL, so
    /// its memtables are flushed (every family at once) before it closes.
    replica: bool,
    /// The store's format, read from its marker after the open (and
    /// raised by [`Store::require_compat`]).
    format: Mutex<Option<StoreFormat>>,
    /// Heavy writes running now (`Local::commit`, [`HEAVY_WRITE`]): what a
    /// short write issued now would queue behind (`Queue::write_busy`).
    heavy: AtomicUsize,
}

/// The entries from which a write counts as heavy: RocksDB inserts a write
/// group's batches one after another on its leader (no concurrent memtable
/// writes, `db.rs`), so a short write that joins the group behind one of
/// these waits for all of it (a reaper pass of `prune_batch` deletes, an
/// `enqueue_many` of thousands: a millisecond and more).
pub(crate) const HEAVY_WRITE: usize = 256;

/// Counts one heavy write in flight while it lives (`Store::heavy_write`).
pub(crate) struct HeavyWrite<'a>(&'a AtomicUsize);

impl Drop for HeavyWrite<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Store {
    /// Open the store at `path` read-write, creating or upgrading it (see
    /// [`super::open`]: the format check, the marker, the pid file).
    pub fn open(path: &Path) -> Result<Store> {
        let db = super::open(path)?;
        Ok(Store::new(db, path, false))
    }

    /// Open a replica's store (`replica.rs`): as [`Store::open`], with
    /// atomic flush, for applies that write no WAL.
    pub fn open_replica(path: &Path) -> Result<Store> {
        let db = super::open_with(path, true)?;
        let mut s = Store::new(db, path, false);
        s.replica = true;
        // Its applies are another node's batches: raised now, not when
        // the first waiting job arrives (see `format.rs`).
        s.require_compat(format::WAITING_COMPAT)?;
        Ok(s)
    }

    /// Open the store at `path` read-only (see [`super::open_read_only`]).
    pub fn open_read_only(path: &Path) -> Result<Store> {
        let db = super::open_read_only(path)?;
        Ok(Store::new(db, path, true))
    }

    fn new(db: DB, path: &Path, read_only: bool) -> Store {
        Store {
            db,
            path: path.to_path_buf(),
            read_only,
            replica: false,
            format: Mutex::new(format::check(path).ok().flatten()),
            heavy: AtomicUsize::new(0),
        }
    }

    /// Count a heavy write (one of [`HEAVY_WRITE`] entries or more) until
    /// the guard drops.
    pub(crate) fn heavy_write(&self) -> HeavyWrite<'_> {
        self.heavy.fetch_add(1, Ordering::Relaxed);
        HeavyWrite(&self.heavy)
    }

    /// Whether a heavy write is running now (one atomic load).
    pub(crate) fn heavy_writes(&self) -> usize {
        self.heavy.load(Ordering::Relaxed)
    }

    pub fn db(&self) -> &DB {
        &self.db
    }

    pub fn read_only(&self) -> bool {
        self.read_only
    }

    pub fn format(&self) -> Option<StoreFormat> {
        *self.format.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Raise the marker's `compatible_from` to `compat` unless it already
    /// says as much: the marker file is rewritten (synced, renamed, the
    /// directory synced) before the caller writes what an older build
    /// would mishandle. Serialized; a no-op once raised.
    pub fn require_compat(&self, compat: u32) -> Result<()> {
        if self.read_only {
            return Ok(());
        }
        let mut f = self.format.lock().unwrap_or_else(|e| e.into_inner());
        let cur = f.unwrap_or(StoreFormat::CURRENT);
        if cur.compatible_from >= compat {
            return Ok(());
        }
        let raised = StoreFormat {
            format: cur.format.max(format::FORMAT),
            compatible_from: compat,
        };
        format::write(&self.path, raised)?;
        *f = Some(raised);
        Ok(())
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        if self.replica {
            // What was applied without the WAL lives only in the
            // memtables: written out (and synced) before the close, so a
            // clean close loses nothing. RocksDB's own close would flush
            // them too; here it is explicit and waited for.
            let _ = super::flush_all(&self.db, &self.path);
        }
        if !self.read_only {
            let _ = self.db.flush_wal(true);
            // Before the LOCK is released, or we could remove the next owner's file.
            super::remove_pid_file(&self.path);
        }
        // `db` closes now, as the fields drop.
    }
}
