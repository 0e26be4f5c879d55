//! Snapshots of a replica's store (telha-jobs-cluster, issue 39): a
//! checkpoint of it (the code `Queue::backup` uses), a read-only open of a
//! received one to verify it, and the swap of a verified one in for the
//! store (close, rename, sync the directory, reopen).
//!
//! **The swap** ([`ReplicaStore::close`], then [`ReplicaStore::swap_in`]) never leaves the store's path
//! without a whole store at a crash point a restart cannot repair: the
//! open store is closed (flushed, its `LOCK` released), renamed aside to
//! `.NAME.telha-replaced` beside it, the new one renamed to the store's
//! path, the parent directory synced, then the old one removed. A crash
//! between the two renames leaves only the one aside: the next
//! [`ReplicaStore::open`] of the path puts it back (the old store, whole,
//! as it was closed); a crash after the second rename leaves the new store
//! in place, and the next open removes the one aside.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{Inner, ReplicaStore};
use crate::backup::BackupInfo;
use crate::error::{Error, Result};
use crate::store::{self as st, Store};

/// The suffix of the store renamed aside during a swap: `.NAME` + this.
const REPLACED_SUFFIX: &str = ".telha-replaced";

impl ReplicaStore {
    /// Open the store at `path` read-only (a received snapshot, to verify
    /// it before it is swapped in): [`ReplicaStore::meta_get`],
    /// [`ReplicaStore::digest`], [`ReplicaStore::check`] and
    /// [`ReplicaStore::cf_table_digest`] work as on an open replica;
    /// [`ReplicaStore::apply`] answers `Storage` (RocksDB refuses the
    /// write), and nothing in the directory changes. Takes no lock.
    ///
    /// Errors: `NotFound` when `path` holds no store; `UnsupportedFormat`,
    /// `Corruption`, `Storage` from the open.
    pub fn open_read_only(path: &Path) -> Result<ReplicaStore> {
        let canon = path
            .canonicalize()
            .map_err(|e| Error::NotFound(format!("no store at {}: {e}", path.display())))?;
        let store = Store::open_read_only(&canon)?;
        ReplicaStore::over(store, canon)
    }

    /// Write a checkpoint of this store to `dir` with the code of
    /// `Queue::backup` (a RocksDB checkpoint plus the format marker, in a
    /// sibling temporary directory, synced, then renamed to `dir`): it
    /// opens as a store. It flushes the memtables first, so everything
    /// applied before the call is also in synced files of this store
    /// (applies write no WAL). The applied id it holds is the one in its
    /// own `raft/` keys: read it from the copy
    /// ([`ReplicaStore::open_read_only`]), never from memory, since applies
    /// go on meanwhile. Errors as `Queue::backup`.
    pub fn checkpoint(&self, dir: &Path) -> Result<BackupInfo> {
        crate::store::checkpoint::create(self.db(), &self.inner.path, dir)
    }

    /// Close this store once it is the last handle of it: every clone,
    /// every engine opened over it and every check's borrow let go,
    /// waiting up to `within` for them (a fenced engine's last caller
    /// returns). The close flushes the memtables and releases RocksDB's
    /// `LOCK`. When others still hold it after `within`, the store stays
    /// open and this handle comes back with `Unavailable` naming it.
    pub fn close(self, within: Duration) -> std::result::Result<(), (Error, ReplicaStore)> {
        let path = self.inner.path.clone();
        let end = Instant::now() + within;
        let mut inner = self.inner;
        let inner = loop {
            match Arc::try_unwrap(inner) {
                Ok(i) => break i,
                Err(back) if Instant::now() < end => {
                    inner = back;
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(back) => {
                    let e = busy(&path, within, "other handles of the store");
                    return Err((e, ReplicaStore { inner: back }));
                }
            }
        };
        // No clone of `Inner` is left, so no new engine or check can
        // borrow the store: wait for those still running.
        let Inner {
            mut store,
            path,
            table,
            table_digest,
            meta_id,
            engine,
        } = inner;
        loop {
            match Arc::try_unwrap(store) {
                Ok(s) => {
                    drop(s);
                    return Ok(());
                }
                Err(back) if Instant::now() < end => {
                    store = back;
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(back) => {
                    let e = busy(&path, within, "an engine or a check over it");
                    let inner = Inner {
                        store: back,
                        path,
                        table,
                        table_digest,
                        meta_id,
                        engine,
                    };
                    return Err((
                        e,
                        ReplicaStore {
                            inner: Arc::new(inner),
                        },
                    ));
                }
            }
        }
    }

    /// Swap the store at `staged` (a verified snapshot, on the same
    /// filesystem) in for the closed store at `path` ([`ReplicaStore::close`]
    /// first) and open it: see the module doc. On success the old store is
    /// gone and `staged` no longer exists. When a rename fails, the old
    /// store is put back if it was moved, and the error returned: open
    /// `path` again to go on with it.
    pub fn swap_in(path: &Path, staged: &Path) -> Result<ReplicaStore> {
        let path = path
            .canonicalize()
            .map_err(|e| io("resolve the store path", path, e))?;
        if !staged.join("CURRENT").exists() {
            return Err(Error::invalid(format!(
                "cannot swap {} in for the store {}: it holds no store",
                staged.display(),
                path.display()
            )));
        }
        let aside = aside_path(&path)?;
        if aside.exists() {
            std::fs::remove_dir_all(&aside).map_err(|e| io("remove", &aside, e))?;
        }
        let moved = rename(&path, &aside)
            .and_then(|()| sync_parent(&path))
            .and_then(|()| rename(staged, &path))
            .and_then(|()| sync_parent(&path));
        if let Err(e) = moved {
            if !path.exists() && aside.exists() {
                let _ = rename(&aside, &path).and_then(|()| sync_parent(&path));
            }
            return Err(e);
        }
        let _ = std::fs::remove_dir_all(&aside);
        ReplicaStore::open(&path)
    }

    /// What a swap interrupted by a crash left beside `canon` (a store's
    /// canonical path), repaired before the open: the store aside put back
    /// when the path holds no store, removed otherwise.
    pub(super) fn repair_swap(canon: &Path) -> Result<()> {
        let aside = aside_path(canon)?;
        if !aside.exists() {
            return Ok(());
        }
        if canon.join("CURRENT").exists() {
            std::fs::remove_dir_all(&aside)
                .map_err(|e| io("remove the store left aside", &aside, e))
        } else {
            if canon.exists() {
                // The empty directory `canonical` just made.
                std::fs::remove_dir_all(canon).map_err(|e| io("remove", canon, e))?;
            }
            rename(&aside, canon)?;
            sync_parent(canon)
        }
    }

    /// A handle over `store`, open at `canon`.
    pub(super) fn over(store: Store, canon: PathBuf) -> Result<ReplicaStore> {
        let table = super::cf_table(store.db(), &canon)?;
        let meta_id = table
            .iter()
            .find(|(n, _)| n == st::CF_META)
            .map(|(_, id)| *id)
            .ok_or_else(|| {
                Error::Corruption(format!("store {} has no meta family", canon.display()))
            })?;
        let mut h = super::Fnv::new();
        for (name, id) in &table {
            h.framed(name.as_bytes());
            h.bytes(&id.to_le_bytes());
        }
        Ok(ReplicaStore {
            inner: Arc::new(Inner {
                store: Arc::new(store),
                path: canon,
                table_digest: h.0,
                table,
                meta_id,
                engine: std::sync::Mutex::new(std::sync::Weak::new()),
            }),
        })
    }
}

fn busy(path: &Path, within: Duration, what: &str) -> Error {
    Error::unavailable(format!(
        "store {} is still in use by {what} after {within:?}: not closed",
        path.display()
    ))
}

fn aside_path(canon: &Path) -> Result<PathBuf> {
    let name = canon.file_name().ok_or_else(|| {
        Error::invalid(format!("store path {} names no directory", canon.display()))
    })?;
    let parent = canon.parent().unwrap_or(Path::new("."));
    Ok(parent.join(format!(".{}{REPLACED_SUFFIX}", name.to_string_lossy())))
}

fn io(what: &str, path: &Path, e: std::io::Error) -> Error {
    Error::Storage(format!("cannot {what} {}: {e}", path.display()))
}

fn rename(from: &Path, to: &Path) -> Result<()> {
    std::fs::rename(from, to).map_err(|e| {
        Error::Storage(format!(
            "cannot rename {} to {}: {e}",
            from.display(),
            to.display()
        ))
    })
}

fn sync_parent(path: &Path) -> Result<()> {
    let parent = path.parent().unwrap_or(Path::new("."));
    std::fs::File::open(parent)
        .and_then(|d| d.sync_all())
        .map_err(|e| io("sync directory", parent, e))
}
