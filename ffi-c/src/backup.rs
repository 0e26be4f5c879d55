//! `tj_queue_backup`: a consistent copy of the live store at a directory
//! (`Queue::backup`), and what it reports.

use std::ffi::c_char;

use crate::boundary::{self, out, string, write};
use crate::error::tj_error;
use crate::queue::tj_queue;
use crate::status::tj_status;

/// What a finished backup reports. A plain value; the backup's path is
/// the `dir` the caller passed.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct tj_backup_info {
    /// The total size of the backup's files in bytes (files hard-linked to
    /// the store's count in full).
    pub bytes: u64,
    /// How many files the backup holds.
    pub files: u64,
    /// How long the backup took, in microseconds.
    pub took_us: u64,
    /// RocksDB's latest sequence number in the backup: the point of the
    /// store's write order it holds (comparable between backups of the
    /// same store only).
    pub sequence: u64,
}

impl From<telha_jobs_core::BackupInfo> for tj_backup_info {
    fn from(b: telha_jobs_core::BackupInfo) -> Self {
        tj_backup_info {
            bytes: b.bytes,
            files: b.files,
            took_us: u64::try_from(b.took.as_micros()).unwrap_or(u64::MAX),
            sequence: b.sequence,
        }
    }
}

/// Write a consistent copy of the live store to the directory `dir` (a
/// RocksDB checkpoint plus the store's format marker; SST files
/// hard-linked where the filesystem allows) that opens with
/// `tj_queue_open` as an ordinary store; other threads' calls go on
/// meanwhile. The copy is written beside `dir` and renamed into place, so
/// a crash never leaves a half backup at `dir`. It holds every operation
/// acknowledged before the call; leased jobs are leased in it (their
/// leases expire by the usual rules once it is opened). `info_out` may be
/// NULL.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (queue, dir), `TJ_STATUS_INVALID_UTF8`,
/// `TJ_STATUS_INVALID_ARGUMENT` (naming `dir`: it exists and is not an
/// empty directory, its parent does not exist, it lies inside the store;
/// or the queue is open read-only), `TJ_STATUS_CLOSED`,
/// `TJ_STATUS_UNAVAILABLE`, `TJ_STATUS_STORAGE`.
///
/// # Safety
/// `queue` is NULL or live; `dir` is NULL or NUL-terminated; `info_out`
/// and `err` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_backup(
    queue: *const tj_queue,
    dir: *const c_char,
    info_out: *mut tj_backup_info,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_backup";
    boundary::run(F, err, || {
        let q = crate::queue::q(F, queue)?;
        let dir = string(F, "dir", dir)?;
        let info = q.queue.backup(dir)?;
        if !info_out.is_null() {
            write(out(F, "info_out", info_out)?, info.into());
        }
        Ok(())
    })
}
