//! [`RemoteQueue::backup`]: the `Backup` RPC.

use std::path::Path;

use telha_jobs::{BackupInfo, Error, Result};
use telha_jobs_proto::convert as cv;
use telha_jobs_proto::v1 as pb;

use crate::retry::Safe;
use crate::RemoteQueue;

impl RemoteQueue {
    /// A consistent copy of the server's store written to `dir` **on the
    /// server's filesystem** (relative to the server's working directory
    /// unless absolute): `Queue::backup` run by the server. The answer's
    /// path is the server's. Not repeated after a reply was lost (a second
    /// try would find `dir` taken).
    ///
    /// Errors: `InvalidArgument` when `dir` is not UTF-8, exists and is
    /// not empty, its parent is missing or it lies inside the store, and
    /// when the connection is neither a Unix socket nor loopback and the
    /// server does not allow remote backups; `Storage`; `Unavailable`.
    pub fn backup(&self, dir: &Path) -> Result<BackupInfo> {
        let dir = dir.to_str().ok_or_else(|| {
            Error::InvalidArgument(format!(
                "backup directory {} is not UTF-8 (the wire carries text)",
                dir.display()
            ))
        })?;
        let req = pb::BackupRequest {
            dir: dir.to_string(),
        };
        let r = self.call(Safe::IfNotSent, |mut c| {
            let r = req.clone();
            async move { c.backup(r).await }
        })?;
        Ok(cv::backup_from_pb(r))
    }
}
