//! The proposer: the leader engine's [`Replicate`]. Engine threads (std
//! threads, often holding engine locks) hand it write batches and block;
//! one task on the node's Raft runtime coalesces what is queued into one
//! Raft entry, as RocksDB's group commit does, submits entries in the
//! order it took them, and answers every batch of an entry once it is
//! committed and applied on this node (openraft answers a client write
//! after the leader applied it).
//!
//! Outcomes, as the engine's write seam reads them:
//! - refused before anything was proposed (the proposer is fenced or
//!   stopped) → [`ReplicateError::Failed`]: nothing was written;
//! - committed but skipped by the state machine, because a newer engine's
//!   epoch opened before it (`Applied::Stale`, the fencing token) →
//!   [`ReplicateError::Failed`]: every replica skips it, nothing of it is
//!   or will be written, so the engine's memory (without it) matches the
//!   store and a client may retry;
//! - `ForwardToLeader` (leadership lost: the entry may still commit under
//!   the next leader), a fatal Raft error, no answer within the write
//!   timeout, or a fence while waiting → [`ReplicateError::Unknown`],
//!   which fences the engine.
//!
//! Coalescing: an entry takes everything queued, up to
//! [`ProposerConfig::max_entry_bytes`]; while earlier entries are still in
//! flight it lingers up to [`ProposerConfig::linger`] for more, so a lone
//! writer pays no linger and concurrent writers share entries.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use openraft::error::ClientWriteError;
use openraft::Raft;
use telha_jobs::replica::{ReplicaStore, Replicate, ReplicateError};
use telha_jobs::Error;
use tokio::sync::{mpsc, oneshot, watch};

use crate::probe::{self, Stage};
use crate::types::{Applied, Epoch, Payload, TypeConfig, PAYLOAD_FORMAT};

/// An entry's batches stop growing at this many bytes (a larger batch
/// goes alone).
pub const MAX_ENTRY_BYTES_DEFAULT: usize = 1 << 20;
/// How long an entry waits for more batches while others are in flight.
pub const LINGER_DEFAULT: Duration = Duration::from_millis(1);
/// Batches queued before `replicate` blocks its caller.
pub const QUEUE_BOUND_DEFAULT: usize = 4096;
/// No commit within this long: the outcome is unknown and the engine is
/// fenced.
pub const WRITE_TIMEOUT_DEFAULT: Duration = Duration::from_secs(5);

#[derive(Debug, Clone)]
pub struct ProposerConfig {
    pub max_entry_bytes: usize,
    pub linger: Duration,
    pub queue_bound: usize,
    pub write_timeout: Duration,
}

impl Default for ProposerConfig {
    fn default() -> Self {
        ProposerConfig {
            max_entry_bytes: MAX_ENTRY_BYTES_DEFAULT,
            linger: LINGER_DEFAULT,
            queue_bound: QUEUE_BOUND_DEFAULT,
            write_timeout: WRITE_TIMEOUT_DEFAULT,
        }
    }
}

/// One batch waiting for its entry's outcome.
struct Pending {
    batch: Vec<u8>,
    done: oneshot::Sender<Outcome>,
    /// When the engine thread handed it over (`probe` marks only).
    at: Instant,
}

/// An entry's outcome, given to each of its batches.
#[derive(Clone)]
enum Outcome {
    /// Applied as the entry at this log index.
    Ok(u64),
    Failed(String),
    Unknown(String),
}

/// The engine's way into Raft for one leadership term. Cheap to clone;
/// every clone feeds the same task.
#[derive(Clone)]
pub struct Proposer {
    tx: mpsc::Sender<Pending>,
    /// `Some(reason)` once fenced.
    fenced: Arc<watch::Sender<Option<String>>>,
    /// Set once any batch was answered `Unknown` (its engine fenced itself).
    unknown: Arc<AtomicBool>,
}

impl Proposer {
    /// Start a proposer for `raft` on `rt` (the node's Raft runtime), for
    /// the engine of `epoch` (the index of its `Epoch::Open` entry) over
    /// `store`: entries carry the epoch and the store's column-family
    /// table digest.
    pub fn start(
        raft: Raft<TypeConfig>,
        rt: &tokio::runtime::Handle,
        store: &ReplicaStore,
        epoch: u64,
        cfg: ProposerConfig,
    ) -> Proposer {
        let (tx, rx) = mpsc::channel(cfg.queue_bound.max(1));
        let (fenced, fenced_rx) = watch::channel(None);
        let origin = Origin {
            cf_table_digest: store.cf_table_digest(),
            epoch,
            #[cfg(feature = "failpoints")]
            path: store.path().to_path_buf(),
        };
        rt.spawn(run(raft, rx, fenced_rx, origin, cfg));
        Proposer {
            tx,
            fenced: Arc::new(fenced),
            unknown: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Stop proposing: batches not yet proposed answer `Failed`, batches
    /// waiting for their entry's outcome answer `Unknown` at once (their
    /// engine is being fenced anyway). Idempotent; the first reason stays.
    pub fn fence(&self, reason: &str) {
        self.fenced.send_if_modified(|f| {
            if f.is_some() {
                return false;
            }
            *f = Some(reason.to_string());
            true
        });
    }

    /// Whether some batch was answered `Unknown`: its engine fenced itself.
    pub fn answered_unknown(&self) -> bool {
        self.unknown.load(Ordering::Acquire)
    }

    fn fenced_reason(&self) -> Option<String> {
        self.fenced.borrow().clone()
    }
}

impl Replicate for Proposer {
    fn replicate(&self, batch: Vec<u8>) -> Result<(), ReplicateError> {
        if let Some(why) = self.fenced_reason() {
            return Err(ReplicateError::Failed(Error::unavailable(why)));
        }
        let (done, answer) = oneshot::channel();
        let at = Instant::now();
        if self.tx.blocking_send(Pending { batch, done, at }).is_err() {
            return Err(ReplicateError::Failed(Error::unavailable(
                "the node's Raft proposer has stopped",
            )));
        }
        match answer.blocking_recv() {
            Ok(Outcome::Ok(index)) => {
                probe::mark(Stage::Answered, 0, index, Instant::now());
                Ok(())
            }
            Ok(Outcome::Failed(why)) => Err(ReplicateError::Failed(Error::unavailable(why))),
            Ok(Outcome::Unknown(why)) => {
                self.unknown.store(true, Ordering::Release);
                Err(ReplicateError::Unknown(why))
            }
            // The runtime went away with the entry maybe proposed.
            Err(_) => {
                self.unknown.store(true, Ordering::Release);
                Err(ReplicateError::Unknown(
                    "the node's Raft stopped before the write's outcome was known".into(),
                ))
            }
        }
    }
}

/// What the proposer's entries say about their writer.
struct Origin {
    cf_table_digest: u64,
    epoch: u64,
    /// The store's path, for the proposal hold (`failpoint.rs`).
    #[cfg(feature = "failpoints")]
    path: std::path::PathBuf,
}

async fn run(
    raft: Raft<TypeConfig>,
    mut rx: mpsc::Receiver<Pending>,
    mut fenced: watch::Receiver<Option<String>>,
    origin: Origin,
    cfg: ProposerConfig,
) {
    let in_flight = Arc::new(AtomicUsize::new(0));
    loop {
        let first = tokio::select! {
            p = rx.recv() => match p {
                Some(p) => p,
                None => return,
            },
            _ = fenced.wait_for(Option::is_some) => break,
        };
        let mut group = vec![first];
        let mut bytes = group[0].batch.len();
        while bytes < cfg.max_entry_bytes {
            match rx.try_recv() {
                Ok(p) => {
                    bytes += p.batch.len();
                    group.push(p);
                }
                Err(_) => break,
            }
        }
        if bytes < cfg.max_entry_bytes && in_flight.load(Ordering::Acquire) > 0 {
            let until = tokio::time::Instant::now() + cfg.linger;
            while bytes < cfg.max_entry_bytes {
                match tokio::time::timeout_at(until, rx.recv()).await {
                    Ok(Some(p)) => {
                        bytes += p.batch.len();
                        group.push(p);
                    }
                    _ => break,
                }
            }
        }
        if let Some(why) = fenced.borrow().clone() {
            answer(group, Outcome::Failed(why));
            break;
        }
        #[cfg(feature = "failpoints")]
        crate::failpoint::hold_point(crate::failpoint::HoldAt::Propose, &origin.path).await;
        let queued = group
            .iter()
            .map(|p| p.at)
            .min()
            .unwrap_or_else(Instant::now);
        let (batches, dones): (Vec<_>, Vec<_>) =
            group.into_iter().map(|p| (p.batch, p.done)).unzip();
        let bytes: usize = batches.iter().map(Vec::len).sum();
        let submitted = Instant::now();
        let payload = Payload {
            format: PAYLOAD_FORMAT,
            cf_table_digest: origin.cf_table_digest,
            epoch: Epoch::Of(origin.epoch),
            batches,
        };
        // Submitted here, in order; the outcome is awaited apart, so
        // entries pipeline.
        let reply = match raft.client_write_ff(payload).await {
            Ok(r) => r,
            Err(fatal) => {
                let why = format!("the node's Raft stopped: {fatal}");
                for d in dones {
                    let _ = d.send(Outcome::Unknown(why.clone()));
                }
                break;
            }
        };
        in_flight.fetch_add(1, Ordering::AcqRel);
        let (in_flight, mut fenced, timeout) =
            (in_flight.clone(), fenced.clone(), cfg.write_timeout);
        tokio::spawn(async move {
            let outcome = tokio::select! {
                r = tokio::time::timeout(timeout, reply) => match r {
                    Ok(Ok(Ok(r))) => {
                        let index = r.log_id.index;
                        if probe::on() {
                            probe::mark_bytes(Stage::Queued, 0, index, queued, bytes);
                            probe::mark(Stage::Submitted, 0, index, submitted);
                            probe::mark(Stage::Replied, 0, index, Instant::now());
                        }
                        match r.data {
                            Applied::Stale { epoch, current } => Outcome::Failed(format!(
                                "the write was not applied: its engine (epoch {epoch}) was \
                                 fenced, epoch {current} opened before its entry committed"
                            )),
                            Applied::Written | Applied::Opened(_) => Outcome::Ok(index),
                        }
                    }
                    Ok(Ok(Err(ClientWriteError::ForwardToLeader(f)))) => Outcome::Unknown(format!(
                        "leadership lost while the write was in flight (leader now {:?})",
                        f.leader_id
                    )),
                    Ok(Ok(Err(e))) => Outcome::Unknown(format!("raft refused the write: {e}")),
                    Ok(Err(_)) => Outcome::Unknown(
                        "the node's Raft dropped the write before answering".into(),
                    ),
                    Err(_) => Outcome::Unknown(format!(
                        "no commit within {} ms",
                        timeout.as_millis()
                    )),
                },
                f = fenced.wait_for(Option::is_some) => Outcome::Unknown(format!(
                    "fenced while the write was in flight: {}",
                    f.ok().and_then(|f| f.clone()).unwrap_or_default()
                )),
            };
            for d in dones {
                let _ = d.send(outcome.clone());
            }
            in_flight.fetch_sub(1, Ordering::AcqRel);
        });
    }
    // Fenced or stopped: nothing queued will be proposed.
    rx.close();
    let why = fenced
        .borrow()
        .clone()
        .unwrap_or_else(|| "the node's Raft proposer has stopped".into());
    while let Ok(p) = rx.try_recv() {
        let _ = p.done.send(Outcome::Failed(why.clone()));
    }
}

fn answer(group: Vec<Pending>, outcome: Outcome) {
    for p in group {
        let _ = p.done.send(outcome.clone());
    }
}
