//! Snapshots: RocksDB checkpoints of the node's store, kept under
//! `D/snapshots/<term>-<index>/` (the applied log id they hold, read from
//! the checkpoint itself), at most [`KEPT`] of them. A retained snapshot
//! handed out ([`crate::SnapshotDir`], for a send) holds its directory:
//! one retired by a newer snapshot meanwhile is removed when the last
//! handle goes, never under a send.
//!
//! Names starting with `.` are work in progress: `.build-*` (a checkpoint
//! being written, before its applied id names it), `.incoming-*` (files
//! being received), and the checkpoint code's own temporary directories.
//! A node removes them all when it starts; nothing else reads them.

mod cell;
mod policy;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use openraft::{AnyError, ErrorSubject, ErrorVerb, Snapshot, SnapshotMeta, StorageIOError};
use telha_jobs::replica::ReplicaStore;

pub use cell::StoreCell;
pub(crate) use policy::SnapshotTrigger;
pub use policy::{
    SnapshotPolicy, KEEP_LOG_DEFAULT, SNAPSHOT_BYTES_DEFAULT, SNAPSHOT_ENTRIES_DEFAULT,
};

use crate::state_machine::{read_meta, META_APPLIED, META_MEMBERSHIP};
use crate::types::{LogId, PeerNode, SnapshotDir, StorageError, TypeConfig};

/// Snapshots retained on disk (handles still held by sends excepted).
pub const KEPT: usize = 2;

pub type Meta = SnapshotMeta<u64, PeerNode>;

/// One retained snapshot. Its directory is removed when it was retired
/// and the last handle to it drops.
#[derive(Debug)]
pub struct Retained {
    path: PathBuf,
    meta: Meta,
    retired: AtomicBool,
}

impl Drop for Retained {
    fn drop(&mut self) {
        if self.retired.load(Ordering::Acquire) {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// A node's snapshots directory (`D/snapshots/`).
#[derive(Debug)]
pub struct Snapshots {
    dir: PathBuf,
    /// Oldest first, at most [`KEPT`].
    kept: Mutex<Vec<Arc<Retained>>>,
    next: AtomicU64,
}

impl Snapshots {
    /// Open (create) `dir`: work left by a previous run removed, the
    /// newest [`KEPT`] snapshots retained (by applied id), older or
    /// unreadable ones removed.
    pub fn open(dir: &Path) -> Result<Snapshots, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut found: Vec<(Meta, PathBuf)> = Vec::new();
        let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || parse_name(&name).is_none() {
                let _ = std::fs::remove_dir_all(&path);
                continue;
            }
            match read_snapshot_meta(&path) {
                Ok(meta) => found.push((meta, path)),
                Err(_) => {
                    let _ = std::fs::remove_dir_all(&path);
                }
            }
        }
        found.sort_by_key(|(meta, _)| meta.last_log_id);
        while found.len() > KEPT {
            let (_, path) = found.remove(0);
            let _ = std::fs::remove_dir_all(path);
        }
        let kept = found
            .into_iter()
            .map(|(meta, path)| {
                Arc::new(Retained {
                    path,
                    meta,
                    retired: AtomicBool::new(false),
                })
            })
            .collect();
        Ok(Snapshots {
            dir: dir.to_path_buf(),
            kept: Mutex::new(kept),
            next: AtomicU64::new(0),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Checkpoint `store` and retain it under its applied id: see the
    /// module doc. The same applied id as a retained snapshot answers that
    /// one (nothing was applied in between).
    pub fn build(&self, store: &ReplicaStore) -> Result<Snapshot<TypeConfig>, StorageError> {
        let work = self.work_path("build");
        store
            .checkpoint(&work)
            .map_err(|e| snap_err(None, ErrorVerb::Write, format!("checkpoint: {e}")))?;
        let meta = match read_snapshot_meta(&work) {
            Ok(m) => m,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&work);
                return Err(e);
            }
        };
        let path = self.dir.join(&meta.snapshot_id);
        let mut kept = lock(&self.kept);
        if let Some(same) = kept.iter().find(|r| r.meta.last_log_id == meta.last_log_id) {
            let _ = std::fs::remove_dir_all(&work);
            return Ok(handle(same));
        }
        let _ = std::fs::remove_dir_all(&path);
        std::fs::rename(&work, &path)
            .and_then(|()| sync_dir(&self.dir))
            .map_err(|e| {
                let _ = std::fs::remove_dir_all(&work);
                let msg = format!("{} -> {}: {e}", work.display(), path.display());
                snap_err(Some(&meta), ErrorVerb::Write, msg)
            })?;
        let r = Arc::new(Retained {
            path,
            meta,
            retired: AtomicBool::new(false),
        });
        kept.push(r.clone());
        kept.sort_by_key(|r| r.meta.last_log_id);
        while kept.len() > KEPT {
            let old = kept.remove(0);
            old.retired.store(true, Ordering::Release);
        }
        Ok(handle(&r))
    }

    /// The newest retained snapshot, holding it.
    pub fn current(&self) -> Option<Snapshot<TypeConfig>> {
        lock(&self.kept).last().map(handle)
    }

    /// The applied ids of the retained snapshots, oldest first.
    pub fn retained(&self) -> Vec<Option<LogId>> {
        lock(&self.kept)
            .iter()
            .map(|r| r.meta.last_log_id)
            .collect()
    }

    /// A new, empty directory for a snapshot being received.
    pub fn incoming(&self) -> Result<PathBuf, StorageError> {
        let path = self.work_path("incoming");
        std::fs::create_dir_all(&path).map_err(|e| {
            let msg = format!("{}: {e}", path.display());
            snap_err(None, ErrorVerb::Write, msg)
        })?;
        Ok(path)
    }

    fn work_path(&self, what: &str) -> PathBuf {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        self.dir.join(format!(".{what}-{}-{n}", std::process::id()))
    }
}

/// `<term>-<index>`, as directories are named.
fn parse_name(name: &str) -> Option<(u64, u64)> {
    let (t, i) = name.split_once('-')?;
    Some((t.parse().ok()?, i.parse().ok()?))
}

/// The name of a snapshot of `id`: `<term>-<index>`.
pub fn name_of(id: &LogId) -> String {
    format!("{}-{}", id.leader_id.term, id.index)
}

fn handle(r: &Arc<Retained>) -> Snapshot<TypeConfig> {
    Snapshot {
        meta: r.meta.clone(),
        snapshot: Box::new(SnapshotDir {
            path: r.path.clone(),
            hold: Some(r.clone()),
        }),
    }
}

/// The meta of the checkpoint at `path`, read from it (opened read-only):
/// its applied log id, its membership, and its name from the id.
pub fn read_snapshot_meta(path: &Path) -> Result<Meta, StorageError> {
    let store = ReplicaStore::open_read_only(path)
        .map_err(|e| snap_err(None, ErrorVerb::Read, format!("{}: {e}", path.display())))?;
    let applied: Option<LogId> = read_meta(&store, META_APPLIED)?;
    let Some(applied) = applied else {
        let msg = format!("{}: the checkpoint applied no entry", path.display());
        return Err(snap_err(None, ErrorVerb::Read, msg));
    };
    let membership = read_meta(&store, META_MEMBERSHIP)?.unwrap_or_default();
    Ok(SnapshotMeta {
        last_log_id: Some(applied),
        last_membership: membership,
        snapshot_id: name_of(&applied),
    })
}

/// The log store's guard before a purge ([`crate::LogStore::before_purge`]):
/// the store must have applied every entry the purge deletes, and is made
/// durable (its memtables flushed and synced: applies write no WAL, the
/// log is its WAL) before they go. A store that has not applied them yet
/// puts the purge off (`Ok(false)`): openraft issues a follower's purge
/// right behind its snapshot install, unordered with the state machine's
/// work, so it can come first; the watcher runs it later
/// ([`crate::LogStore::purge_deferred`]). Waits while an install swaps
/// the store.
pub(crate) fn purge_guard(cell: StoreCell) -> crate::log_store::PurgeGuard {
    Arc::new(move |upto: LogId| {
        let store = cell.get().ok_or("the node has no store")?;
        let applied: Option<LogId> = read_meta(&store, META_APPLIED).map_err(|e| e.to_string())?;
        if applied.is_none_or(|a| a.index < upto.index) {
            return Ok(false);
        }
        store
            .persist()
            .map_err(|e| format!("making the store durable: {e}"))?;
        Ok(true)
    })
}

pub(crate) fn snap_err(meta: Option<&Meta>, verb: ErrorVerb, msg: String) -> StorageError {
    let subject = ErrorSubject::Snapshot(meta.map(|m| m.signature()));
    StorageIOError::new(subject, verb, AnyError::error(format!("snapshot: {msg}"))).into()
}

pub(crate) fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
