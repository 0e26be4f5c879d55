//! The log's durable index ([`LogStore::durable`]): what a node's state
//! machine may apply. A leader's own appends are synced on the flusher's
//! thread (the append returns first), so their flush can land after a
//! truncate of the same indexes; the durable index must never then claim
//! entries that were written again and not yet synced.

use std::sync::mpsc;
use std::time::Duration;

use openraft::storage::RaftLogStorage;
use openraft::{CommittedLeaderId, EntryPayload};
use telha_jobs_cluster::{Entry, Epoch, LogId, LogStore, Payload, PAYLOAD_FORMAT};

fn entry(node: u64, index: u64) -> Entry {
    let payload = Payload {
        format: PAYLOAD_FORMAT,
        cf_table_digest: 7,
        epoch: Epoch::Of(0),
        batches: vec![vec![index as u8; 40]],
    };
    Entry {
        log_id: LogId::new(CommittedLeaderId::new(1, node), index),
        payload: EntryPayload::Normal(payload),
    }
}

/// Appends `range` as node `node`'s entries and waits for their flush.
fn append_and_wait(log: &LogStore, node: u64, range: std::ops::RangeInclusive<u64>) {
    let (tx, rx) = mpsc::channel();
    log.append_then(range.map(|i| entry(node, i)), move |r| {
        tx.send(r.is_ok()).unwrap()
    })
    .unwrap();
    assert!(rx.recv_timeout(Duration::from_secs(30)).unwrap(), "flushed");
}

#[tokio::test]
async fn the_durable_index_follows_flushes_and_truncates() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = LogStore::open(dir.path()).unwrap();
    log.set_node(1);
    let durable = log.durable();
    assert_eq!(*durable.borrow(), 0, "an empty log has nothing on disk");

    append_and_wait(&log, 1, 1..=5);
    assert_eq!(*durable.borrow(), 5);
    append_and_wait(&log, 2, 6..=8);
    assert_eq!(*durable.borrow(), 8, "another leader's entries count too");

    log.truncate(LogId::new(CommittedLeaderId::new(1, 2), 7))
        .await
        .unwrap();
    assert_eq!(*durable.borrow(), 6, "a truncate lowers it");
    drop(log);

    let log = LogStore::open(dir.path()).unwrap();
    assert_eq!(
        *log.durable().borrow(),
        6,
        "a reopened log starts at its last entry"
    );
}

/// A leader's own append is flushed on the flusher's thread; a truncate of
/// its entries that comes first (the leader lost its term, the new leader's
/// entries conflict) must win: the late flush raises the durable index no
/// higher than the truncate left it. Rounds vary which lands first.
#[tokio::test]
async fn a_flush_landing_after_a_truncate_claims_nothing_above_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = LogStore::open(dir.path()).unwrap();
    log.set_node(1);
    let durable = log.durable();
    let mut base = 1;
    for _ in 0..100 {
        let (tx, rx) = mpsc::channel();
        log.append_then((base..=base + 3).map(|i| entry(1, i)), move |r| {
            tx.send(r.is_ok()).unwrap()
        })
        .unwrap();
        log.truncate(LogId::new(CommittedLeaderId::new(1, 1), base + 1))
            .await
            .unwrap();
        assert!(rx.recv_timeout(Duration::from_secs(30)).unwrap());
        assert_eq!(
            *durable.borrow(),
            base,
            "entries {}..={} were truncated before their flush was reported",
            base + 1,
            base + 3
        );
        // The new leader's entries at those indexes, synced on this thread.
        append_and_wait(&log, 2, base + 1..=base + 9);
        assert_eq!(*durable.borrow(), base + 9);
        base += 10;
    }
}
