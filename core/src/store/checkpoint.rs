//! Checkpoints of a live store: a consistent copy of the store at `dir`
//! that opens as an ordinary store (`Queue::backup`; issue 39's snapshots
//! will reuse it).
//!
//! [`create`] writes one in four steps, never leaving a half copy at `dir`:
//!
//! 1. **Checkpoint** into a sibling temporary directory
//!    (`.NAME.telha-backup-PID-N.tmp` beside `dir`) with RocksDB's
//!    `Checkpoint`: it flushes the memtables (every family at once in a
//!    replica's atomic-flush store), hard-links the SST files where the
//!    filesystem allows (copies them otherwise) and copies the MANIFEST,
//!    `CURRENT`, `OPTIONS` and the WAL up to one sequence number, with
//!    file deletions held off meanwhile. Writers go on; the copy is the
//!    store at one point of its write order.
//! 2. **The store's own files**: the format marker (`telha.format`) copied
//!    byte for byte, so the copy opens as the format the store holds. The
//!    pid file and RocksDB's `LOCK` and info logs are not copied.
//! 3. **Verify**: the copy is opened read-only (format check, every
//!    column family) and its latest sequence number read: the point it
//!    holds. Every file is synced, then the directory.
//! 4. **Install**: the temporary directory is renamed to `dir` (which may
//!    exist only as an empty directory) and the parent directory synced.
//!
//! Any failure removes the temporary directory. A crash leaves it behind
//! (never `dir`); the next checkpoint beside the same `dir` removes such
//! leftovers whose process is gone (on Linux, where `/proc` says so;
//! elsewhere they are left for the operator).
//!
//! Next (issue 39's snapshots): open a checkpoint read-only to verify a
//! received one, and swap one in for a store (rename, fsync, reopen).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use rocksdb::DB;

use super::format::FORMAT_FILE;
use crate::backup::BackupInfo;
use crate::error::{Error, Result};

/// The infix of the temporary directories: `.NAME` + this + `PID-N.tmp`.
const TEMP_INFIX: &str = ".telha-backup-";

/// Write a checkpoint of the open store `db` (at `store_dir`, canonical)
/// to `dir`: see the module doc. `InvalidArgument` (naming `dir`) when
/// `dir` exists and is not an empty directory, has no parent directory,
/// or lies inside the store; `Storage` when writing fails.
pub(crate) fn create(db: &DB, store_dir: &Path, dir: &Path) -> Result<BackupInfo> {
    create_with(db, store_dir, dir, &|_| Ok(()))
}

/// [`create`], calling `before_install` with the finished temporary
/// directory just before it is renamed to `dir` (a test stands a crash
/// there).
pub(crate) fn create_with(
    db: &DB,
    store_dir: &Path,
    dir: &Path,
    before_install: &dyn Fn(&Path) -> Result<()>,
) -> Result<BackupInfo> {
    let started = Instant::now();
    let (parent, name) = target(store_dir, dir)?;
    sweep_leftovers(&parent, &name);
    let temp = temp_path(&parent, &name);
    let written = write(db, store_dir, &temp).and_then(|(bytes, files, sequence)| {
        before_install(&temp)?;
        install(&temp, dir, &parent)?;
        Ok((bytes, files, sequence))
    });
    let (bytes, files, sequence) = match written {
        Ok(w) => w,
        Err(e) => {
            remove_temp(&temp);
            return Err(e);
        }
    };
    Ok(BackupInfo {
        path: dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf()),
        bytes,
        files,
        took: started.elapsed(),
        sequence,
    })
}

/// Steps 1–3 into `temp`: (bytes, files, sequence).
fn write(db: &DB, store_dir: &Path, temp: &Path) -> Result<(u64, u64, u64)> {
    let cp = rocksdb::checkpoint::Checkpoint::new(db)?;
    cp.create_checkpoint(temp).map_err(|e| {
        Error::Storage(format!(
            "cannot checkpoint the store to {}: {e}",
            temp.display()
        ))
    })?;
    copy_marker(store_dir, temp)?;
    let sequence = {
        let copy = super::open_read_only(temp)?;
        copy.latest_sequence_number()
    };
    let (bytes, files) = sync_tree(temp)?;
    Ok((bytes, files, sequence))
}

/// Where `dir` goes: its parent (existing) and its last component; refuses
/// what cannot be a backup directory.
fn target(store_dir: &Path, dir: &Path) -> Result<(PathBuf, OsString)> {
    let bad = |why: &str| Error::invalid(format!("backup directory {}: {why}", dir.display()));
    let name = dir
        .file_name()
        .ok_or_else(|| bad("names no directory (it ends in `..` or is a root)"))?
        .to_os_string();
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let parent = parent
        .canonicalize()
        .map_err(|e| bad(&format!("its parent directory cannot be resolved: {e}")))?;
    if !parent.is_dir() {
        return Err(bad("its parent is not a directory"));
    }
    if parent.join(&name).starts_with(store_dir) {
        return Err(bad(&format!(
            "it lies inside the store {}",
            store_dir.display()
        )));
    }
    match std::fs::symlink_metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(bad(&format!("cannot be read: {e}"))),
        Ok(m) if !m.is_dir() => return Err(bad("exists and is not a directory")),
        Ok(_) => {
            let mut entries = std::fs::read_dir(dir).map_err(|e| bad(&format!("{e}")))?;
            if entries.next().is_some() {
                return Err(bad("exists and is not empty"));
            }
        }
    }
    Ok((parent, name))
}

fn temp_prefix(name: &OsString) -> String {
    format!(".{}{TEMP_INFIX}", name.to_string_lossy())
}

fn temp_path(parent: &Path, name: &OsString) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    parent.join(format!(
        "{}{}-{n}.tmp",
        temp_prefix(name),
        std::process::id()
    ))
}

/// Remove the temporary directories of checkpoints to `name` whose process
/// is gone (RocksDB's own `.tmp` beside ours included). Best effort.
fn sweep_leftovers(parent: &Path, name: &OsString) {
    let prefix = temp_prefix(name);
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let file = entry.file_name();
        let Some(rest) = file.to_str().and_then(|f| f.strip_prefix(&prefix)) else {
            continue;
        };
        let pid: Option<u32> = rest.split('-').next().and_then(|p| p.parse().ok());
        if pid.is_some_and(process_gone) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

#[cfg(target_os = "linux")]
fn process_gone(pid: u32) -> bool {
    pid != std::process::id() && !Path::new("/proc").join(pid.to_string()).exists()
}

#[cfg(not(target_os = "linux"))]
fn process_gone(_pid: u32) -> bool {
    false
}

fn remove_temp(temp: &Path) {
    let _ = std::fs::remove_dir_all(temp);
    // RocksDB's own staging directory, should its checkpoint have failed.
    let mut staging = temp.as_os_str().to_os_string();
    staging.push(".tmp");
    let _ = std::fs::remove_dir_all(PathBuf::from(staging));
}

fn io(what: &str, path: &Path, e: std::io::Error) -> Error {
    Error::Storage(format!("backup: cannot {what} {}: {e}", path.display()))
}

/// Copy the store's format marker (a format-1 store has none) and sync it.
fn copy_marker(store_dir: &Path, temp: &Path) -> Result<()> {
    let from = store_dir.join(FORMAT_FILE);
    let bytes = match std::fs::read(&from) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io("read", &from, e)),
    };
    let to = temp.join(FORMAT_FILE);
    std::fs::write(&to, bytes).map_err(|e| io("write", &to, e))?;
    Ok(())
}

/// Sync every file of `temp` and the directory itself: (bytes, files).
fn sync_tree(temp: &Path) -> Result<(u64, u64)> {
    let (mut bytes, mut files) = (0, 0);
    for entry in std::fs::read_dir(temp).map_err(|e| io("list", temp, e))? {
        let entry = entry.map_err(|e| io("list", temp, e))?;
        let path = entry.path();
        let meta = entry.metadata().map_err(|e| io("stat", &path, e))?;
        if !meta.is_file() {
            continue;
        }
        std::fs::File::open(&path)
            .and_then(|f| f.sync_all())
            .map_err(|e| io("sync", &path, e))?;
        bytes += meta.len();
        files += 1;
    }
    sync_dir(temp)?;
    Ok((bytes, files))
}

fn sync_dir(dir: &Path) -> Result<()> {
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io("sync directory", dir, e))
}

/// Step 4: rename `temp` to `dir` (an empty directory there is replaced),
/// then sync the parent.
fn install(temp: &Path, dir: &Path, parent: &Path) -> Result<()> {
    std::fs::rename(temp, dir).map_err(|e| {
        Error::Storage(format!(
            "backup: cannot rename {} to {}: {e}",
            temp.display(),
            dir.display()
        ))
    })?;
    sync_dir(parent)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (tempfile::TempDir, PathBuf, DB) {
        let root = tempfile::tempdir().unwrap();
        let path = root.path().join("store");
        let db = super::super::open(&path).unwrap();
        let cf = db.cf_handle(super::super::CF_META).unwrap();
        db.put_cf(cf, b"pause/x", b"1").unwrap();
        (root, path.canonicalize().unwrap(), db)
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_failure_before_the_rename_leaves_no_backup_and_no_temporary() {
        let (root, path, db) = store();
        let dir = root.path().join("b");
        let e = create_with(&db, &path, &dir, &|temp| {
            assert!(temp.join("CURRENT").exists() && temp.join(FORMAT_FILE).exists());
            Err(Error::Storage("crash stood in".into()))
        })
        .unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Storage);
        assert!(!dir.exists());
        assert_eq!(names(root.path()), vec!["store"]);
        // The same dir works afterwards, and holds the row.
        let info = create(&db, &path, &dir).unwrap();
        assert!(
            info.files >= 4 && info.bytes > 0 && info.sequence >= 1,
            "{info:?}"
        );
        let copy = super::super::open_read_only(&dir).unwrap();
        let cf = copy.cf_handle(super::super::CF_META).unwrap();
        assert_eq!(
            copy.get_cf(cf, b"pause/x").unwrap().as_deref(),
            Some(&b"1"[..])
        );
    }

    #[test]
    fn leftovers_of_a_dead_process_are_swept_and_live_ones_kept() {
        let (root, path, db) = store();
        let dir = root.path().join("b");
        // No process has pid 4,000,000,000 (Linux caps pids at 2^22).
        let dead = root.path().join(".b.telha-backup-4000000000-0.tmp");
        let dead_rocks = root.path().join(".b.telha-backup-4000000000-1.tmp.tmp");
        let live = root
            .path()
            .join(format!(".b.telha-backup-{}-99.tmp", std::process::id()));
        let other = root.path().join(".c.telha-backup-4000000000-0.tmp");
        for d in [&dead, &dead_rocks, &live, &other] {
            std::fs::create_dir(d).unwrap();
            std::fs::write(d.join("x.sst"), b"half").unwrap();
        }
        create(&db, &path, &dir).unwrap();
        assert_eq!(
            dead.exists() || dead_rocks.exists(),
            !cfg!(target_os = "linux")
        );
        assert!(live.exists() && other.exists());
    }

    #[test]
    fn bad_directories_are_refused_by_name() {
        let (root, path, db) = store();
        let full = root.path().join("full");
        std::fs::create_dir(&full).unwrap();
        std::fs::write(full.join("f"), b"").unwrap();
        let file = root.path().join("file");
        std::fs::write(&file, b"").unwrap();
        for (dir, why) in [
            (full.clone(), "not empty"),
            (file.clone(), "not a directory"),
            (root.path().join("no/such/b"), "parent"),
            (path.join("inside"), "inside the store"),
            (path.clone(), "inside the store"),
        ] {
            let e = create(&db, &path, &dir).unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::InvalidArgument, "{dir:?}");
            let s = e.to_string();
            assert!(
                s.contains(&dir.display().to_string()) && s.contains(why),
                "{s}"
            );
        }
        // An empty directory is taken.
        let empty = root.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        create(&db, &path, &empty).unwrap();
        assert!(empty.join("CURRENT").exists());
    }
}
