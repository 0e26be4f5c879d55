//! Sending a snapshot over the in-process network, file by file, as a
//! transport between processes will (stage 4): the receiver's Raft opens
//! a staging directory (`begin_receiving_snapshot`), every file of the
//! checkpoint goes over in chunks of [`SNAPSHOT_CHUNK`] bytes, each chunk
//! a message on the link with its faults, the size of each file is checked
//! where it landed, then the receiver's Raft installs it
//! (`install_full_snapshot`, which verifies and swaps it in).
//!
//! **Deadlines of its own** (openraft hands `full_snapshot` its
//! `install_snapshot_timeout`, 200 ms by default, which a big snapshot
//! never meets: the resend loop of renegade-fi/renegade #634): the
//! transfer fails with `Timeout` when no chunk got through for
//! [`SnapshotDeadlines::idle`], or when it took longer than
//! [`SnapshotDeadlines::total`] in all; a dropped chunk is sent again (a
//! lost segment, as TCP resends it) within the idle deadline; a cut link
//! or a down node fails it at once (`Unreachable`). `cancel` (the
//! replication ended) stops it between chunks. A failed transfer removes
//! what it staged, unless the install was already asked for: the
//! receiver's state machine then owns (and removes) the directory.

use std::future::Future;
use std::io::{Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use openraft::error::{
    Fatal, NetworkError, ReplicationClosed, StreamingError, Timeout, Unreachable,
};
use openraft::network::RPCTypes;
use openraft::raft::SnapshotResponse;
use openraft::Snapshot;

use super::{lock, Failure, LinkError, Router};
use crate::types::{SnapshotDir, TypeConfig, Vote};

/// Bytes per chunk message.
pub const SNAPSHOT_CHUNK: usize = 1 << 20;
/// No chunk through for this long fails a transfer.
pub const SNAPSHOT_IDLE_DEFAULT: Duration = Duration::from_secs(3);
/// A transfer longer than this fails.
pub const SNAPSHOT_TOTAL_DEFAULT: Duration = Duration::from_secs(120);

/// A snapshot transfer's deadlines: see the module doc.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotDeadlines {
    pub idle: Duration,
    pub total: Duration,
}

impl Default for SnapshotDeadlines {
    fn default() -> Self {
        SnapshotDeadlines {
            idle: SNAPSHOT_IDLE_DEFAULT,
            total: SNAPSHOT_TOTAL_DEFAULT,
        }
    }
}

type StreamResult<T> = Result<T, StreamingError<TypeConfig, Fatal<u64>>>;

fn net(msg: String) -> StreamingError<TypeConfig, Fatal<u64>> {
    StreamingError::Network(NetworkError::new(&LinkError(msg)))
}

fn streaming<E: std::fmt::Display>(f: Failure<E>) -> StreamingError<TypeConfig, Fatal<u64>> {
    match f {
        Failure::Dropped(m) => net(m),
        Failure::Unreachable(m) => StreamingError::Unreachable(Unreachable::new(&LinkError(m))),
        Failure::Timeout(t) => StreamingError::Timeout(t),
        // The target's Raft stopped: as good as down.
        Failure::Remote(e) => {
            StreamingError::Unreachable(Unreachable::new(&LinkError(e.to_string())))
        }
    }
}

impl Router {
    /// Snapshot transfers from now on use `d`.
    pub fn set_snapshot_deadlines(&self, d: SnapshotDeadlines) {
        self.faults().snapshot = Some(d);
    }

    fn snapshot_deadlines(&self) -> SnapshotDeadlines {
        self.faults().snapshot.unwrap_or_default()
    }

    /// `full_snapshot` of node `from` to `to`: see the module doc.
    pub(super) async fn send_snapshot(
        &self,
        from: u64,
        to: u64,
        vote: Vote,
        snapshot: Snapshot<TypeConfig>,
        cancel: impl Future<Output = ReplicationClosed> + Send + 'static,
    ) -> StreamResult<SnapshotResponse<u64>> {
        let d = self.snapshot_deadlines();
        let timeout = Timeout {
            action: RPCTypes::InstallSnapshot,
            id: from,
            target: to,
            timeout: d.total,
        };
        let transfer = self.transfer(from, to, vote, snapshot, d);
        tokio::select! {
            closed = cancel => Err(StreamingError::Closed(closed)),
            res = tokio::time::timeout(d.total, transfer) => match res {
                Ok(r) => r,
                Err(_) => Err(StreamingError::Timeout(timeout)),
            },
        }
    }

    async fn transfer(
        &self,
        from: u64,
        to: u64,
        vote: Vote,
        snapshot: Snapshot<TypeConfig>,
        d: SnapshotDeadlines,
    ) -> StreamResult<SnapshotResponse<u64>> {
        let staged = self
            .carry(
                from,
                to,
                RPCTypes::InstallSnapshot,
                d.idle,
                |r| async move { r.begin_receiving_snapshot().await },
            )
            .await
            .map_err(streaming)?;
        // Removes the staging directory unless the install was asked for.
        struct Staged(Option<std::path::PathBuf>);
        impl Drop for Staged {
            fn drop(&mut self) {
                if let Some(p) = self.0.take() {
                    let _ = std::fs::remove_dir_all(p);
                }
            }
        }
        let mut guard = Staged(Some(staged.path.clone()));
        self.send_files(from, to, &snapshot.snapshot.path, &staged.path, d)
            .await?;
        guard.0 = None;
        let Snapshot { meta, snapshot } = snapshot;
        // The sender's hold on its snapshot ends with the transfer.
        drop(snapshot);
        let received = Snapshot {
            meta,
            snapshot: Box::new(SnapshotDir::new(staged.path.clone())),
        };
        let resp = self
            .carry(
                from,
                to,
                RPCTypes::InstallSnapshot,
                d.total,
                |r| async move { r.install_full_snapshot(vote, received).await },
            )
            .await
            .map_err(streaming)?;
        self.inner
            .stats
            .snapshots
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(resp)
    }

    /// Every file of `src` into `dst`, chunk by chunk over the link.
    async fn send_files(
        &self,
        from: u64,
        to: u64,
        src: &Path,
        dst: &Path,
        d: SnapshotDeadlines,
    ) -> StreamResult<()> {
        let mut files: Vec<_> = std::fs::read_dir(src)
            .map_err(|e| net(format!("snapshot {}: {e}", src.display())))?
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .map(|e| e.file_name())
            .collect();
        files.sort();
        let mut buf = vec![0u8; SNAPSHOT_CHUNK];
        for name in files {
            let (from_path, to_path) = (src.join(&name), dst.join(&name));
            let io = |what: &str, p: &Path, e: std::io::Error| {
                net(format!("snapshot file {what} {}: {e}", p.display()))
            };
            let mut input =
                std::fs::File::open(&from_path).map_err(|e| io("open", &from_path, e))?;
            let mut output =
                std::fs::File::create(&to_path).map_err(|e| io("create", &to_path, e))?;
            let mut sent: u64 = 0;
            loop {
                let n = input
                    .read(&mut buf)
                    .map_err(|e| io("read", &from_path, e))?;
                if n == 0 {
                    break;
                }
                self.chunk(from, to, d.idle).await?;
                output
                    .write_all(&buf[..n])
                    .map_err(|e| io("write", &to_path, e))?;
                sent += n as u64;
            }
            output.sync_all().map_err(|e| io("sync", &to_path, e))?;
            let landed = std::fs::metadata(&to_path)
                .map_err(|e| io("stat", &to_path, e))?
                .len();
            if landed != sent {
                return Err(net(format!(
                    "snapshot file {}: {landed} bytes landed, {sent} sent",
                    to_path.display()
                )));
            }
        }
        crate::snapshot::sync_dir(dst).map_err(|e| net(format!("{}: {e}", dst.display())))?;
        Ok(())
    }

    /// One chunk's message over the link: resent while dropped, until
    /// `idle` passed without it getting through.
    async fn chunk(&self, from: u64, to: u64, idle: Duration) -> StreamResult<()> {
        let started = Instant::now();
        let timeout = || Timeout {
            action: RPCTypes::InstallSnapshot,
            id: from,
            target: to,
            timeout: idle,
        };
        loop {
            if !lock(&self.inner.targets).contains_key(&to) {
                return Err(streaming::<String>(Failure::Unreachable(format!(
                    "node {to} is down"
                ))));
            }
            let left = idle.saturating_sub(started.elapsed());
            match self.leg::<String>(from, to, left, &timeout).await {
                Ok(()) => return Ok(()),
                Err(Failure::Dropped(_)) if started.elapsed() < idle => {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                Err(Failure::Dropped(_)) => return Err(StreamingError::Timeout(timeout())),
                Err(f) => return Err(streaming(f)),
            }
        }
    }
}
