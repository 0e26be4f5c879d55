//! The log store's own guarantees, beyond openraft's suite: what survives a
//! reopen, how corruption is reported, group commit, purge and truncate.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use openraft::storage::{RaftLogStorage, RaftLogStorageExt};
use openraft::{CommittedLeaderId, EntryPayload, ErrorSubject, RaftLogReader};
use telha_jobs_cluster::{
    Entry, Epoch, LogId, LogStore, Payload, StorageError, Vote, PAYLOAD_FORMAT,
};

fn log_id(term: u64, index: u64) -> LogId {
    LogId::new(CommittedLeaderId::new(term, 1), index)
}

fn entry(term: u64, index: u64) -> Entry {
    let payload = Payload {
        format: PAYLOAD_FORMAT,
        cf_table_digest: 7,
        epoch: Epoch::Of(0),
        batches: vec![vec![index as u8; 40]],
    };
    Entry {
        log_id: log_id(term, index),
        payload: EntryPayload::Normal(payload),
    }
}

fn indexes(entries: &[Entry]) -> Vec<u64> {
    entries.iter().map(|e| e.log_id.index).collect()
}

async fn fill(log: &mut LogStore, range: std::ops::RangeInclusive<u64>) {
    log.blocking_append(range.map(|i| entry(1, i)))
        .await
        .unwrap();
}

/// Rewrites the raw value of entry `index` in a closed log DB.
fn tamper(dir: &std::path::Path, index: u64, f: impl FnOnce(&mut Vec<u8>)) {
    let cfs = ["log", "meta"];
    let db = rocksdb::DB::open_cf(&rocksdb::Options::default(), dir, cfs).unwrap();
    let cf = db.cf_handle("log").unwrap();
    let mut v = db
        .get_cf(cf, index.to_be_bytes())
        .unwrap()
        .expect("entry present");
    f(&mut v);
    db.put_cf(cf, index.to_be_bytes(), v).unwrap();
}

fn assert_corrupt_at(err: StorageError, index: u64) {
    // openraft 0.9 has no accessor for the subject; its Display shows it.
    let msg = err.to_string();
    assert!(
        err.into_io().is_some(),
        "an IO storage error, not a defensive one: {msg}"
    );
    assert!(
        msg.contains(&format!("{:?}", ErrorSubject::<u64>::LogIndex(index))),
        "{msg}"
    );
    assert!(msg.contains(&format!("entry {index} is corrupt")), "{msg}");
}

#[tokio::test]
async fn reopened_store_keeps_entries_vote_committed_and_purged() {
    let dir = tempfile::tempdir().unwrap();
    let vote = Vote::new_committed(3, 2);
    {
        let mut log = LogStore::open(dir.path()).unwrap();
        fill(&mut log, 1..=10).await;
        log.save_vote(&vote).await.unwrap();
        log.save_committed(Some(log_id(1, 8))).await.unwrap();
        log.purge(log_id(1, 3)).await.unwrap();
    }
    let mut log = LogStore::open(dir.path()).unwrap();
    let state = log.get_log_state().await.unwrap();
    assert_eq!(state.last_purged_log_id, Some(log_id(1, 3)));
    assert_eq!(state.last_log_id, Some(log_id(1, 10)));
    assert_eq!(log.read_vote().await.unwrap(), Some(vote));
    assert_eq!(log.read_committed().await.unwrap(), Some(log_id(1, 8)));
    let got = log.try_get_log_entries(..).await.unwrap();
    assert_eq!(indexes(&got), (4..=10).collect::<Vec<_>>());
    assert_eq!(got[0], entry(1, 4), "payload round trip");
}

#[tokio::test]
async fn a_flipped_byte_in_an_entry_is_reported_as_corruption_with_its_index() {
    let dir = tempfile::tempdir().unwrap();
    fill(&mut LogStore::open(dir.path()).unwrap(), 1..=5).await;
    tamper(dir.path(), 3, |v| {
        let last = v.len() - 1;
        v[last] ^= 0x01;
    });
    let mut log = LogStore::open(dir.path()).unwrap();
    assert_corrupt_at(log.try_get_log_entries(1..=5).await.unwrap_err(), 3);
    assert_corrupt_at(log.try_get_log_entries(3..4).await.unwrap_err(), 3);
    // The entries around it still read.
    assert_eq!(
        indexes(&log.try_get_log_entries(4..).await.unwrap()),
        vec![4, 5]
    );
    assert_eq!(
        indexes(&log.try_get_log_entries(..3).await.unwrap()),
        vec![1, 2]
    );
}

#[tokio::test]
async fn a_corrupt_last_entry_fails_the_log_state_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    fill(&mut LogStore::open(dir.path()).unwrap(), 1..=4).await;
    tamper(dir.path(), 4, |v| v[0] ^= 0x80); // the checksum itself
    let mut log = LogStore::open(dir.path()).unwrap();
    assert_corrupt_at(log.get_log_state().await.unwrap_err(), 4);
}

#[tokio::test]
async fn truncated_undecodable_and_misplaced_values_are_corruption_not_panics() {
    let dir = tempfile::tempdir().unwrap();
    fill(&mut LogStore::open(dir.path()).unwrap(), 1..=3).await;
    let mut entry1 = Vec::new();
    tamper(dir.path(), 1, |v| {
        entry1 = v.clone();
        v.truncate(2);
    });
    // A valid checksum over bytes that are not an entry.
    tamper(dir.path(), 2, |v| {
        let body = [0xc1u8, 0xc1, 0xc1];
        let crc = telha_jobs_cluster::crc32c::crc32c(&body);
        *v = crc.to_le_bytes().iter().chain(&body).copied().collect();
    });
    // Entry 1, intact, under key 3: the index inside disagrees with the key.
    tamper(dir.path(), 3, |v| *v = entry1);
    let mut log = LogStore::open(dir.path()).unwrap();
    for i in 1..=3 {
        assert_corrupt_at(log.try_get_log_entries(i..=i).await.unwrap_err(), i);
    }
}

#[tokio::test]
async fn purge_and_truncate_keep_their_bounds() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = LogStore::open(dir.path()).unwrap();
    fill(&mut log, 1..=10).await;

    log.truncate(log_id(1, 7)).await.unwrap();
    let state = log.get_log_state().await.unwrap();
    assert_eq!(
        state.last_log_id,
        Some(log_id(1, 6)),
        "truncate removes the given index and after"
    );
    assert_eq!(
        indexes(&log.try_get_log_entries(..).await.unwrap()),
        vec![1, 2, 3, 4, 5, 6]
    );

    log.purge(log_id(1, 3)).await.unwrap();
    assert_eq!(
        indexes(&log.try_get_log_entries(..).await.unwrap()),
        vec![4, 5, 6],
        "purge includes the given index"
    );
    let state = log.get_log_state().await.unwrap();
    assert_eq!(
        (state.last_purged_log_id, state.last_log_id),
        (Some(log_id(1, 3)), Some(log_id(1, 6)))
    );

    // Range bounds of every shape.
    use std::ops::Bound::*;
    assert_eq!(
        indexes(
            &log.try_get_log_entries((Excluded(4), Included(6)))
                .await
                .unwrap()
        ),
        vec![5, 6]
    );
    assert_eq!(
        indexes(&log.try_get_log_entries(..=4).await.unwrap()),
        vec![4]
    );
    assert_eq!(
        indexes(&log.try_get_log_entries(5..5).await.unwrap()),
        Vec::<u64>::new()
    );
    assert_eq!(
        indexes(
            &log.try_get_log_entries((Included(6), Excluded(3)))
                .await
                .unwrap()
        ),
        Vec::<u64>::new()
    );
    assert_eq!(
        indexes(&log.try_get_log_entries(6..=u64::MAX).await.unwrap()),
        vec![6]
    );

    // An older purge changes nothing; purging everything leaves the id.
    log.purge(log_id(1, 2)).await.unwrap();
    assert_eq!(
        log.get_log_state().await.unwrap().last_purged_log_id,
        Some(log_id(1, 3))
    );
    log.purge(log_id(1, 6)).await.unwrap();
    let state = log.get_log_state().await.unwrap();
    assert_eq!(
        (state.last_purged_log_id, state.last_log_id),
        (Some(log_id(1, 6)), Some(log_id(1, 6)))
    );
    assert!(log.try_get_log_entries(..).await.unwrap().is_empty());

    // Appending after a full purge continues from it, in a new term.
    log.blocking_append([entry(2, 7), entry(2, 8)])
        .await
        .unwrap();
    assert_eq!(
        log.get_log_state().await.unwrap().last_log_id,
        Some(log_id(2, 8))
    );
    log.truncate(log_id(2, 8)).await.unwrap();
    assert_eq!(
        indexes(&log.try_get_log_entries(..).await.unwrap()),
        vec![7]
    );
}

/// Completion order recorder: each callback pushes its index.
fn recorder() -> (Arc<Mutex<Vec<u64>>>, mpsc::Sender<u64>, mpsc::Receiver<u64>) {
    let (tx, rx) = mpsc::channel();
    (Arc::new(Mutex::new(Vec::new())), tx, rx)
}

#[test]
fn appends_queued_behind_a_sync_share_the_next_one_and_complete_in_index_order() {
    let dir = tempfile::tempdir().unwrap();
    let log = LogStore::open(dir.path()).unwrap();
    let (order, tx, rx) = recorder();
    // The first completion holds the flusher until every other append is
    // written, so all of them wait on one sync: deterministic grouping.
    let (started_tx, started_rx) = mpsc::channel::<()>();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let o = order.clone();
    let t = tx.clone();
    let first = move |res: std::io::Result<()>| {
        res.unwrap();
        started_tx.send(()).unwrap();
        release_rx.recv().unwrap();
        o.lock().unwrap().push(1);
        t.send(1).unwrap();
    };
    // A lone append syncs on its caller's thread and completes there, so
    // the held completion gets a thread of its own.
    let first_log = log.clone();
    let holder = std::thread::spawn(move || first_log.append_then([entry(1, 1)], first).unwrap());
    // Only once the first sync is done may the others come, else the
    // flusher could take some of them with the first.
    started_rx.recv().unwrap();
    const N: u64 = 200;
    for i in 2..=N {
        let (o, t) = (order.clone(), tx.clone());
        let done = move |res: std::io::Result<()>| {
            res.unwrap();
            o.lock().unwrap().push(i);
            t.send(i).unwrap();
        };
        log.append_then([entry(1, i)], done).unwrap();
    }
    release_tx.send(()).unwrap();
    for _ in 1..=N {
        rx.recv_timeout(Duration::from_secs(30))
            .expect("every append completes");
    }
    holder.join().unwrap();
    assert_eq!(*order.lock().unwrap(), (1..=N).collect::<Vec<_>>());
    assert_eq!(
        log.wal_syncs(),
        2,
        "one sync for the first append, one for the 199 queued behind it"
    );
}

#[test]
fn concurrent_appenders_are_all_flushed_each_in_its_own_order() {
    let dir = tempfile::tempdir().unwrap();
    let log = LogStore::open(dir.path()).unwrap();
    const THREADS: u64 = 8;
    const PER: u64 = 100;
    let (order, tx, rx) = recorder();
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (log, order, tx) = (log.clone(), order.clone(), tx.clone());
            s.spawn(move || {
                for i in 0..PER {
                    // Each thread its own index block.
                    let index = 1 + t * PER + i;
                    let (o, tx) = (order.clone(), tx.clone());
                    let done = move |res: std::io::Result<()>| {
                        res.unwrap();
                        o.lock().unwrap().push(index);
                        tx.send(index).unwrap();
                    };
                    log.append_then([entry(1, index)], done).unwrap();
                }
            });
        }
    });
    for _ in 0..THREADS * PER {
        rx.recv_timeout(Duration::from_secs(30))
            .expect("every append completes");
    }
    let order = order.lock().unwrap().clone();
    assert_eq!(order.len() as u64, THREADS * PER);
    for t in 0..THREADS {
        let mine: Vec<u64> = order
            .iter()
            .copied()
            .filter(|i| (i - 1) / PER == t)
            .collect();
        assert_eq!(
            mine,
            (1 + t * PER..1 + (t + 1) * PER).collect::<Vec<_>>(),
            "appender {t}"
        );
    }
    assert!(log.wal_syncs() <= THREADS * PER);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let mut reader = log.clone();
    let all = rt.block_on(reader.try_get_log_entries(..)).unwrap();
    assert_eq!(indexes(&all), (1..=THREADS * PER).collect::<Vec<_>>());
}

#[test]
fn dropping_the_store_completes_what_is_queued() {
    let dir = tempfile::tempdir().unwrap();
    let (tx, rx) = mpsc::channel();
    {
        let log = LogStore::open(dir.path()).unwrap();
        for i in 1..=50 {
            let tx = tx.clone();
            log.append_then([entry(1, i)], move |res: std::io::Result<()>| {
                tx.send((i, res.is_ok())).unwrap()
            })
            .unwrap();
        }
    }
    let got: Vec<(u64, bool)> = rx.try_iter().collect();
    assert_eq!(got, (1..=50).map(|i| (i, true)).collect::<Vec<_>>());
}
