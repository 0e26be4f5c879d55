//! What a backup of a live store reports ([`Queue::backup`](crate::Queue::backup)).

use std::path::PathBuf;
use std::time::Duration;

/// A finished backup: a RocksDB checkpoint of the store plus its format
/// marker, at `path`, that opens with `Queue::open` as an ordinary store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupInfo {
    /// Where the backup is (canonicalized).
    pub path: PathBuf,
    /// The total size of its files. Files hard-linked to the store's (the
    /// SST files, where the filesystem allows it) count in full, though
    /// they take no new space until the store compacts them away.
    pub bytes: u64,
    /// How many files it holds.
    pub files: u64,
    /// How long the backup took, the checkpoint's flush included.
    pub took: Duration,
    /// RocksDB's latest sequence number in the backup, read from the
    /// backup itself: the point of the store's write order it holds (every
    /// write at or below it, none above). Comparable between backups of
    /// the same store only.
    pub sequence: u64,
}
