//! `InstallSnapshot` over gRPC: the sender streams the checkpoint's files
//! (`begin`, then per file its header and [`SNAPSHOT_CHUNK`]-byte `data`
//! chunks, then `end`), the receiver stages them in the directory its
//! Raft gives (`begin_receiving_snapshot`), checks each file's size, syncs
//! it, then installs (`install_full_snapshot`).
//!
//! Deadlines as the in-process stream (network/stream.rs): the sender
//! fails with `Timeout` when no chunk was taken for the idle deadline (a
//! black-holed peer stops taking them: HTTP/2 flow control) or the whole
//! transfer passed the total one, and stops at once when `cancel` fires;
//! the receiver fails when no message came for the idle deadline (or the
//! total passed) and removes what it staged.

use std::future::Future;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use openraft::error::{Fatal, ReplicationClosed, StreamingError};
use openraft::network::RPCTypes;
use openraft::raft::SnapshotResponse;
use openraft::{Raft, Snapshot};
use tokio::sync::mpsc;

use super::client::{Failure, GrpcClient};
use super::wire::snapshot_chunk::Part;
use super::wire::{SnapshotBegin, SnapshotChunk, SnapshotEnd, SnapshotFile};
use super::{decode, encode, SnapshotDeadlines, TransportError, PEER_FORMAT};
use crate::network::SNAPSHOT_CHUNK;
use crate::types::{SnapshotDir, TypeConfig, Vote};

type StreamResult<T> = Result<T, StreamingError<TypeConfig, Fatal<u64>>>;

impl GrpcClient {
    pub(super) async fn send_snapshot(
        &self,
        vote: Vote,
        snapshot: Snapshot<TypeConfig>,
        as_voter: bool,
        cancel: impl Future<Output = ReplicationClosed> + Send + 'static,
    ) -> StreamResult<SnapshotResponse<u64>> {
        let (from, to, d) = (self.sender(), self.to_id(), self.deadlines());
        let fail = |f: Failure| f.into_streaming(from, to);
        let begin = SnapshotBegin {
            format: PEER_FORMAT,
            from,
            as_voter,
            vote: encode("vote", &vote).map_err(|e| fail(Failure::Network(e.to_string())))?,
            meta: encode("snapshot meta", &snapshot.meta)
                .map_err(|e| fail(Failure::Network(e.to_string())))?,
        };
        let mut client = self.client().map_err(fail)?;
        let (tx, rx) = mpsc::channel::<SnapshotChunk>(2);
        let src = snapshot.snapshot.path.clone();
        let producer = produce(tx, begin, src, d.idle);
        let request = self.request(tokio_stream::wrappers::ReceiverStream::new(rx), None);
        let call = async move { client.install_snapshot(request).await };
        let transfer = async {
            tokio::pin!(producer, call);
            // A sender that failed (a message not taken within the idle
            // deadline) stops at once, not when the receiver answers; a
            // receiver that answered first (it refused the stream) says
            // why.
            let reply = tokio::select! {
                biased;
                reply = &mut call => reply,
                sent = &mut producer => match sent {
                    Ok(()) => call.await,
                    Err(f @ Failure::Timeout(_)) => return Err(fail(f)),
                    // The stream closed under the sender: the receiver's
                    // answer, if it gave one, says why.
                    Err(f) => match tokio::time::timeout(d.idle, &mut call).await {
                        Ok(Err(s)) => Err(s),
                        _ => return Err(fail(f)),
                    },
                },
            };
            let r = reply
                .map_err(|s| fail(Failure::of_status(to, &s)))?
                .into_inner();
            let got: Result<SnapshotResponse<u64>, Fatal<u64>> =
                decode("install-snapshot reply", r.format, &r.payload)
                    .map_err(|e| fail(Failure::Network(format!("node {to}: reply: {e}"))))?;
            got.map_err(|f| fail(Failure::Unreachable(format!("node {to} stopped: {f}"))))
        };
        // Dropping the transfer drops the stream: the receiver sees it
        // end early and removes what it staged.
        tokio::select! {
            closed = cancel => Err(StreamingError::Closed(closed)),
            res = tokio::time::timeout(d.total, transfer) => match res {
                Ok(r) => r,
                Err(_) => Err(fail(Failure::Timeout(d.total))),
            },
        }
    }
}

/// Feeds the stream; every message must be taken within `idle`.
async fn produce(
    tx: mpsc::Sender<SnapshotChunk>,
    begin: SnapshotBegin,
    src: PathBuf,
    idle: Duration,
) -> Result<(), Failure> {
    let send = |part: Part| {
        let tx = tx.clone();
        async move {
            match tokio::time::timeout(idle, tx.send(SnapshotChunk { part: Some(part) })).await {
                Err(_) => Err(Failure::Timeout(idle)),
                Ok(Err(_)) => Err(Failure::Network("the snapshot stream ended".into())),
                Ok(Ok(())) => Ok(()),
            }
        }
    };
    let io = |what: &str, p: &Path, e: std::io::Error| {
        Failure::Network(format!("snapshot file {what} {}: {e}", p.display()))
    };
    send(Part::Begin(begin)).await?;
    let mut files: Vec<_> = std::fs::read_dir(&src)
        .map_err(|e| io("list", &src, e))?
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.file_name())
        .collect();
    files.sort();
    let mut buf = vec![0u8; SNAPSHOT_CHUNK];
    for name in &files {
        let path = src.join(name);
        let mut input = std::fs::File::open(&path).map_err(|e| io("open", &path, e))?;
        let size = input.metadata().map_err(|e| io("stat", &path, e))?.len();
        let name = name.to_string_lossy().into_owned();
        send(Part::File(SnapshotFile { name, size })).await?;
        let mut sent = 0u64;
        while sent < size {
            let want = buf.len().min((size - sent) as usize);
            let n = input
                .read(&mut buf[..want])
                .map_err(|e| io("read", &path, e))?;
            if n == 0 {
                return Err(Failure::Network(format!(
                    "snapshot file {} shrank while sent",
                    path.display()
                )));
            }
            send(Part::Data(buf[..n].to_vec())).await?;
            sent += n as u64;
        }
    }
    let files = u32::try_from(files.len()).unwrap_or(u32::MAX);
    send(Part::End(SnapshotEnd { files })).await
}

/// Removes the staging directory unless the install was asked for.
struct Staged(Option<PathBuf>);

impl Drop for Staged {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = std::fs::remove_dir_all(p);
        }
    }
}

/// The file being received.
struct Landing {
    path: PathBuf,
    file: std::fs::File,
    size: u64,
    got: u64,
}

impl Landing {
    fn finish(self) -> Result<(), TransportError> {
        if self.got != self.size {
            return Err(TransportError::Snapshot(format!(
                "{}: {} bytes came, {} announced",
                self.path.display(),
                self.got,
                self.size
            )));
        }
        self.file
            .sync_all()
            .map_err(|e| TransportError::Snapshot(format!("sync {}: {e}", self.path.display())))
    }
}

/// The next message within `idle`.
async fn next(
    s: &mut tonic::Streaming<SnapshotChunk>,
    idle: Duration,
) -> Result<Part, tonic::Status> {
    match tokio::time::timeout(idle, s.message()).await {
        Err(_) => Err(tonic::Status::deadline_exceeded(format!(
            "no snapshot chunk for {idle:?}"
        ))),
        Ok(Err(e)) => Err(e),
        Ok(Ok(None)) => {
            Err(TransportError::Snapshot("the stream ended before `end`".into()).into())
        }
        Ok(Ok(Some(SnapshotChunk { part: None }))) => {
            Err(TransportError::Snapshot("a chunk without a part".into()).into())
        }
        Ok(Ok(Some(SnapshotChunk { part: Some(p) }))) => Ok(p),
    }
}

/// The `begin` message decoded.
pub(super) struct Begin {
    pub from: u64,
    pub as_voter: bool,
    vote: Vote,
    meta: openraft::SnapshotMeta<u64, crate::PeerNode>,
}

/// The first message, which must be `begin`.
pub(super) async fn receive_begin(
    s: &mut tonic::Streaming<SnapshotChunk>,
    idle: Duration,
) -> Result<Begin, tonic::Status> {
    let Part::Begin(b) = next(s, idle).await? else {
        return Err(TransportError::Snapshot("the first chunk is not `begin`".into()).into());
    };
    Ok(Begin {
        from: b.from,
        as_voter: b.as_voter,
        vote: decode("snapshot vote", b.format, &b.vote)?,
        meta: decode("snapshot meta", b.format, &b.meta)?,
    })
}

/// The rest of the stream into a staging directory of `raft`, then its
/// install; the reply's result.
pub(super) async fn receive_rest(
    raft: &Raft<TypeConfig>,
    begin: Begin,
    s: &mut tonic::Streaming<SnapshotChunk>,
    d: SnapshotDeadlines,
) -> Result<Result<SnapshotResponse<u64>, Fatal<u64>>, tonic::Status> {
    let staged = raft
        .begin_receiving_snapshot()
        .await
        .map_err(|e| tonic::Status::unavailable(format!("cannot receive a snapshot: {e}")))?;
    let dir = staged.path.clone();
    let mut guard = Staged(Some(dir.clone()));
    let mut landing: Option<Landing> = None;
    let mut files = 0u32;
    let bad = |m: String| tonic::Status::from(TransportError::Snapshot(m));
    loop {
        match next(s, d.idle).await? {
            Part::Begin(_) => return Err(bad("a second `begin`".into())),
            Part::File(f) => {
                if let Some(l) = landing.take() {
                    blocking(move || l.finish()).await??;
                }
                let plain = Path::new(&f.name).file_name().map(|n| n == f.name.as_str());
                if f.name.is_empty() || f.name.starts_with('.') || plain != Some(true) {
                    return Err(bad(format!("file name {:?} is not a plain name", f.name)));
                }
                let path = dir.join(&f.name);
                let at = path.clone();
                let file = blocking(move || {
                    std::fs::OpenOptions::new()
                        .write(true)
                        .create_new(true)
                        .open(&at)
                })
                .await?
                .map_err(|e| bad(format!("create {}: {e}", path.display())))?;
                files += 1;
                landing = Some(Landing {
                    path,
                    file,
                    size: f.size,
                    got: 0,
                });
            }
            Part::Data(bytes) => {
                let Some(mut l) = landing.take() else {
                    return Err(bad("data before a file".into()));
                };
                l.got += bytes.len() as u64;
                if l.got > l.size {
                    return Err(bad(format!(
                        "{}: more bytes than announced",
                        l.path.display()
                    )));
                }
                // Off the async workers: a slow disk must not stall the
                // runtime that answers heartbeats and client calls.
                let (l, wrote) = blocking(move || {
                    let wrote = l.file.write_all(&bytes);
                    (l, wrote)
                })
                .await?;
                wrote.map_err(|e| bad(format!("write {}: {e}", l.path.display())))?;
                landing = Some(l);
            }
            Part::End(e) => {
                if let Some(l) = landing.take() {
                    blocking(move || l.finish()).await??;
                }
                if e.files != files {
                    return Err(bad(format!("{files} files came, {} announced", e.files)));
                }
                break;
            }
        }
    }
    let at = dir.clone();
    blocking(move || crate::snapshot::sync_dir(&at))
        .await?
        .map_err(|e| bad(format!("{}: {e}", dir.display())))?;
    guard.0 = None;
    let received = Snapshot {
        meta: begin.meta,
        snapshot: Box::new(SnapshotDir::new(dir)),
    };
    Ok(raft.install_full_snapshot(begin.vote, received).await)
}

/// `f` on tokio's blocking pool (file writes and syncs of a received
/// snapshot), `INTERNAL` if it panicked.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, tonic::Status> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| tonic::Status::internal(format!("snapshot file task failed: {e}")))
}

/// The action a snapshot stream is for the join gate.
pub(super) const ACTION: RPCTypes = RPCTypes::InstallSnapshot;
