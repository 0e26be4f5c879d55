//! A replica's applies write no WAL (the Raft log is its WAL): a node
//! killed without a clean close keeps only what its store last flushed,
//! with the applied id of that point, and re-applies the rest from its log
//! when it restarts. The kill is imitated by copying the store's directory
//! as the running node has it on disk (what `kill -9` leaves: the
//! memtables are gone), then restarting the node over the copy.

mod support;

use std::path::Path;
use std::time::Duration;

use openraft::storage::RaftStateMachine;
use support::{options, TestCluster};
use telha_jobs::replica::ReplicaStore;
use telha_jobs::{EnqueueOptions, LeaseOptions};
use telha_jobs_cluster::StateMachine;

fn keyed(k: String) -> EnqueueOptions {
    EnqueueOptions {
        idempotency_key: Some(k),
        ..Default::default()
    }
}

/// Copies the flat directory `from` into `to` (a file RocksDB deletes
/// meanwhile is skipped: it was obsolete).
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        if e.file_type().unwrap().is_file() {
            match std::fs::copy(e.path(), to.join(e.file_name())) {
                Ok(_) => {}
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                Err(err) => panic!("copying {}: {err}", e.path().display()),
            }
        }
    }
}

/// The applied index recorded in the store at `path`.
fn applied_index(path: &Path) -> Option<u64> {
    let store = ReplicaStore::open(path).unwrap();
    let mut sm = StateMachine::open(store).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let (applied, _) = rt.block_on(sm.applied_state()).unwrap();
    applied.map(|a| a.index)
}

fn lifecycle(c: &TestCluster, round: &str, jobs: usize, done: usize) {
    let q = c.queue();
    for i in 0..jobs {
        q.enqueue("a", b"x", keyed(format!("{round}-{i}"))).unwrap();
    }
    let leased = q
        .lease_many("w", done, &LeaseOptions::default().kind("a").unwrap())
        .unwrap();
    assert_eq!(leased.len(), done);
    for j in leased {
        q.complete(&j.token(), None).unwrap();
    }
}

#[test]
fn a_follower_killed_with_unflushed_applies_reapplies_them_from_its_log() {
    let c = TestCluster::start(
        "a_follower_killed_with_unflushed_applies_reapplies_them_from_its_log",
        3,
        options(),
    );
    let leader = c.engine_leader(Duration::from_secs(5));
    let follower = *c.ids.iter().find(|&&i| i != leader).unwrap();
    // Flushed on the follower: its store holds this part after the kill.
    lifecycle(&c, "one", 100, 30);
    c.quiesce(Duration::from_secs(20));
    c.node(follower).store().unwrap().persist().unwrap();
    let flushed = c.node(follower).metrics().last_applied.unwrap().index;
    // Applied but only in the memtables (new rows, moves, counter merges
    // on rows the flush already wrote: re-applied twice they would count
    // twice, which `check()` finds).
    lifecycle(&c, "two", 100, 50);
    let index = c.quiesce(Duration::from_secs(20));
    assert!(index > flushed);
    let dir = c.node(follower).store().unwrap().path().to_path_buf();
    let killed = tempfile::tempdir().unwrap();
    copy_dir(&dir, killed.path());
    c.crash(follower);
    std::fs::remove_dir_all(&dir).unwrap();
    copy_dir(killed.path(), &dir);
    let kept = applied_index(&dir).expect("the flush recorded an applied id");
    assert!(
        (flushed..index).contains(&kept),
        "the killed store holds its last flush ({flushed}), not {kept} (applied {index})"
    );
    c.restart(follower);
    // Re-applied from its log: equal digests and a clean check() on every
    // replica at the same applied index.
    c.assert_consistent();
    let m = c.node(follower).metrics();
    assert!(m.last_applied.unwrap().index >= index, "{m:?}");
}
