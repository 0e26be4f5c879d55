//! The state machine's snapshots (issue 39): building one is a checkpoint
//! of the store (`snapshot/mod.rs`); installing a received one verifies it
//! and swaps it in for the store.
//!
//! **Install**, in order; any failure leaves the store as it was and
//! answers a `StorageError` naming the snapshot (openraft stops the node:
//! loud, and nothing half-installed):
//! 1. refused if it is not newer than what this store applied (openraft
//!    #543: never go back);
//! 2. the staged files opened read-only: the applied id they hold must be
//!    the snapshot's, their column-family table this store's, and
//!    `check()` clean;
//! 3. the store closed once its last handle lets go (the cell's readers
//!    wait meanwhile), renamed aside, the staged directory renamed in its
//!    place, the directory synced, the old one removed, the new one
//!    opened (`telha_jobs::replica` `swap.rs`; a crash in between is
//!    repaired at the next open);
//! 4. the applied id, membership and epoch read back from it, and a
//!    checkpoint of it retained as this node's current snapshot (hard
//!    links: the node can send what it installed);
//! 5. the node's `after_install` (the log purge openraft issued right
//!    behind the install, put off until the store had the entries:
//!    `snapshot::purge_guard`).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use openraft::{ErrorVerb, RaftSnapshotBuilder, Snapshot};
use telha_jobs::replica::ReplicaStore;

use super::{read_meta, Members, StateMachine, META_APPLIED, META_EPOCH, META_MEMBERSHIP};
use crate::log_store::codec::encode;
use crate::snapshot::{snap_err, Meta, Snapshots, StoreCell};
use crate::types::{LogId, SnapshotDir, StorageError, TypeConfig};

/// How long an install waits for the old store's last handles (a fenced
/// engine's callers, a check) before it gives up.
const CLOSE_WITHIN: Duration = Duration::from_secs(10);

/// Problems of a received snapshot's `check()` named in the refusal.
const PROBLEMS_NAMED: usize = 5;

/// Builds a snapshot of the store (a task of its own in openraft,
/// concurrent with applies: the applied id is read from the checkpoint).
pub struct SnapshotBuilder {
    cell: StoreCell,
    snapshots: Option<Arc<Snapshots>>,
}

impl RaftSnapshotBuilder<TypeConfig> for SnapshotBuilder {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError> {
        let snapshots = self.snapshots.clone().ok_or_else(not_kept)?;
        let cell = self.cell.clone();
        tokio::task::spawn_blocking(move || {
            let store = cell
                .get()
                .ok_or_else(|| snap_err(None, ErrorVerb::Write, "the node has no store".into()))?;
            snapshots.build(&store)
        })
        .await
        .map_err(|e| snap_err(None, ErrorVerb::Write, format!("build task: {e}")))?
    }
}

fn not_kept() -> StorageError {
    let msg = "this state machine keeps no snapshots (opened without a snapshot directory)";
    snap_err(None, ErrorVerb::Write, msg.into())
}

/// What an install leaves the state machine at.
struct Installed {
    applied: Option<LogId>,
    membership: Members,
    epoch: u64,
}

impl StateMachine {
    pub(super) fn builder(&self) -> SnapshotBuilder {
        SnapshotBuilder {
            cell: self.cell.clone(),
            snapshots: self.snapshots.clone(),
        }
    }

    pub(super) fn begin_receiving(&self) -> Result<Box<SnapshotDir>, StorageError> {
        let snapshots = self.snapshots.as_ref().ok_or_else(not_kept)?;
        Ok(Box::new(SnapshotDir::new(snapshots.incoming()?)))
    }

    pub(super) async fn install(
        &mut self,
        meta: &Meta,
        staged: SnapshotDir,
    ) -> Result<(), StorageError> {
        let res = self.install_staged(meta, &staged.path).await;
        // A failpoint's crash leaves what a killed process would.
        #[cfg(feature = "failpoints")]
        if crate::failpoint::fired().is_some_and(|(p, _)| p.is_install()) && res.is_err() {
            return res;
        }
        // Gone on success (renamed in); removed on a refusal.
        if staged.path.exists() && staged.hold.is_none() {
            let _ = std::fs::remove_dir_all(&staged.path);
        }
        res
    }

    async fn install_staged(&mut self, meta: &Meta, staged: &Path) -> Result<(), StorageError> {
        let snapshots = self.snapshots.clone().ok_or_else(not_kept)?;
        if meta.last_log_id <= self.last_applied {
            let msg = format!(
                "snapshot {} holds up to {:?}, not newer than this store's applied {:?}: refused \
                 (a store never goes back)",
                meta.snapshot_id, meta.last_log_id, self.last_applied
            );
            return Err(snap_err(Some(meta), ErrorVerb::Write, msg));
        }
        let (cell, path, digest) = (self.cell.clone(), self.path.clone(), self.cf_table_digest);
        let (meta_c, staged) = (meta.clone(), staged.to_path_buf());
        let done = tokio::task::spawn_blocking(move || {
            install_blocking(&cell, &snapshots, &path, digest, &meta_c, &staged)
        })
        .await
        .map_err(|e| snap_err(Some(meta), ErrorVerb::Write, format!("install task: {e}")))??;
        self.membership_raw = encode(&done.membership)
            .map_err(|e| snap_err(Some(meta), ErrorVerb::Write, e.to_string()))?;
        self.last_applied = done.applied;
        self.membership = done.membership;
        self.epoch = done.epoch;
        if let Some(f) = &self.after_install {
            f().map_err(|why| snap_err(Some(meta), ErrorVerb::Write, why))?;
        }
        Ok(())
    }
}

fn install_blocking(
    cell: &StoreCell,
    snapshots: &Snapshots,
    path: &Path,
    digest: u64,
    meta: &Meta,
    staged: &Path,
) -> Result<Installed, StorageError> {
    let err = |msg: String| snap_err(Some(meta), ErrorVerb::Write, msg);
    verify(staged, digest, meta).map_err(err)?;
    #[cfg(feature = "failpoints")]
    if crate::failpoint::hit(crate::failpoint::Point::InstallBeforeSwap, path) {
        return Err(err("failpoint: the node crashed before the swap".into()));
    }
    let swapped = cell.swap(|old| {
        let Some(old) = old else {
            return (None, Err("the node has no store to replace".to_string()));
        };
        if let Err((e, back)) = old.close(CLOSE_WITHIN) {
            return (Some(back), Err(format!("closing the store: {e}")));
        }
        match ReplicaStore::swap_in(path, staged) {
            Ok(new) => (Some(new), Ok(())),
            Err(e) => {
                let back = ReplicaStore::open(path);
                let why = match &back {
                    Ok(_) => format!("swapping it in: {e} (the old store is back)"),
                    Err(e2) => format!("swapping it in: {e}; reopening the store: {e2}"),
                };
                (back.ok(), Err(why))
            }
        }
    });
    swapped.map_err(err)?;
    #[cfg(feature = "failpoints")]
    if crate::failpoint::hit(crate::failpoint::Point::InstallAfterSwap, path) {
        return Err(err("failpoint: the node crashed after the swap".into()));
    }
    let store = cell
        .get()
        .ok_or_else(|| err("no store after the swap".into()))?;
    let applied: Option<LogId> = read_meta(&store, META_APPLIED)?;
    if applied != meta.last_log_id {
        let msg = format!("the installed store applied {applied:?}, not the snapshot's id");
        return Err(err(msg));
    }
    let membership = read_meta(&store, META_MEMBERSHIP)?.unwrap_or_default();
    let epoch = read_meta(&store, META_EPOCH)?.unwrap_or(0);
    // Kept as this node's current snapshot, so it can send what it has.
    snapshots.build(&store)?;
    Ok(Installed {
        applied,
        membership,
        epoch,
    })
}

/// Step 2 of the install: the staged files as a store, read-only.
fn verify(staged: &Path, digest: u64, meta: &Meta) -> Result<(), String> {
    let copy = ReplicaStore::open_read_only(staged)
        .map_err(|e| format!("the received files do not open as a store: {e}"))?;
    let applied: Option<LogId> = read_meta(&copy, META_APPLIED).map_err(|e| e.to_string())?;
    if applied != meta.last_log_id {
        return Err(format!(
            "the received store applied {applied:?}, the snapshot says {:?}",
            meta.last_log_id
        ));
    }
    if copy.cf_table_digest() != digest {
        return Err(format!(
            "the received store has column-family table {:#018x}, this store {digest:#018x}",
            copy.cf_table_digest()
        ));
    }
    let report = copy
        .check(telha_jobs::Config::default())
        .map_err(|e| format!("check() of the received store: {e}"))?;
    if !report.problems.is_empty() {
        let named: Vec<&String> = report.problems.iter().take(PROBLEMS_NAMED).collect();
        return Err(format!(
            "check() of the received store found {} problems: {named:?}",
            report.problems.len()
        ));
    }
    Ok(())
}
