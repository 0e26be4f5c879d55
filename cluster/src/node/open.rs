//! Opening a leader's engine for its vote (the watcher's step; see the
//! node's module doc, "Engine per term" and "Fencing token").

use std::time::Instant;

use openraft::Raft;
use telha_jobs::Queue;

use super::{lock, NodeOptions, Shared, Term};
use crate::proposer::Proposer;
use crate::snapshot::StoreCell;
use crate::types::{Applied, Epoch, Payload, TypeConfig, Vote, PAYLOAD_FORMAT};

/// Open this vote's engine: first an `Epoch::Open` entry, then the engine
/// of that epoch once the entry is applied here (so is everything before it
/// in the log, whichever engine proposed it: the recovery reads it all).
/// Entries of earlier engines that reach the log after it are skipped by
/// every replica (`state_machine.rs`).
pub(super) fn try_open(
    raft: &Raft<TypeConfig>,
    cell: &StoreCell,
    shared: &Shared,
    rt: &tokio::runtime::Handle,
    opts: &NodeOptions,
    vote: Vote,
) {
    // Held only while in use: a snapshot install waits for every handle.
    let Some(store) = cell.get() else {
        return;
    };
    let open = Payload {
        format: PAYLOAD_FORMAT,
        cf_table_digest: store.cf_table_digest(),
        epoch: Epoch::Open,
        batches: Vec::new(),
    };
    drop(store);
    lock(&shared.slot).event(format!("Open entry proposed under {vote}"));
    let res = rt.block_on(async {
        tokio::time::timeout(opts.proposer.write_timeout, raft.client_write(open)).await
    });
    // Not applied in time, or leadership lost: the watcher tries again
    // (a late Open entry only moves the epoch on; no engine is of it).
    let epoch = match res {
        Ok(Ok(r)) => match r.data {
            Applied::Opened(e) => {
                lock(&shared.slot).event(format!("Open entry {} applied", r.log_id));
                e
            }
            other => {
                lock(&shared.slot).fences.push(format!(
                    "node {}: epoch entry {} applied as {other:?}",
                    shared.id, r.log_id
                ));
                return;
            }
        },
        Ok(Err(e)) => {
            lock(&shared.slot).event(format!("Open entry refused: {e}"));
            return;
        }
        Err(_) => {
            lock(&shared.slot).event("Open entry not applied in time".into());
            return;
        }
    };
    let Some(store) = cell.get() else {
        return;
    };
    let proposer = Proposer::start(raft.clone(), rt, &store, epoch, opts.proposer.clone());
    let opened = Queue::open_replica(
        &store,
        opts.queue_config.clone(),
        opts.clock.clone(),
        Box::new(proposer.clone()),
        opts.timing.takeover_grace(),
    );
    drop(store);
    let mut slot = lock(&shared.slot);
    match opened {
        Ok(queue) => {
            slot.event(format!("engine of epoch {epoch} opened"));
            slot.opened += 1;
            slot.epoch = Some(epoch);
            slot.term = Some(Term {
                vote,
                epoch,
                queue,
                proposer,
                opened_at: Instant::now(),
            });
        }
        Err(e) => {
            // Its recovery write may have an unknown outcome: the next
            // engine opens after a new epoch entry, which fences it.
            proposer.fence(&format!("engine open failed: {e}"));
            slot.fences.push(format!(
                "node {}: engine open under {vote}, epoch {epoch} failed: {e}",
                shared.id
            ));
        }
    }
}
