//! Disk bounded (issue 39): a 3-node cluster under a steady enqueue +
//! lease + complete load; every few seconds each node's `D/raft` (the log
//! DB) and `D/snapshots` are measured and must stay under the bound below.
//! `make test` runs 20 s; `make test-cluster-long` 10 minutes
//! (`TELHA_DISK_BOUND_SECS` sets either).
//!
//! **The bound, per node** (docs/ARCHITECTURE.md "Disk bound"):
//! - `D/raft` ≤ the log DB's WAL limit (`LOG_WAL_LIMIT`, 64 MiB) + its
//!   memtables (2 × `LOG_WRITE_BUFFER`, 16 MiB) + level-0 files before
//!   compaction (5 × 16 MiB) + the live log (what was appended since the
//!   last snapshot, at most the policy's `bytes` before the next is
//!   triggered, plus as much again kept behind it: 2 × `bytes`) + 8 MiB
//!   (RocksDB's info logs and manifests);
//! - `D/snapshots` ≤ 3 × the store (`KEPT` = 2 retained plus one retired
//!   but still held by a send; each a checkpoint of the store, counted
//!   whole though it shares files with it by hard links) + 8 MiB (one
//!   `.build-*` or `.incoming-*` under way).

mod support;

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use support::{options, TestCluster};
use telha_jobs::{Completion, Encoding, EnqueueOptions, LeaseOptions, NewJob};
use telha_jobs_cluster::log_store::{LOG_WAL_LIMIT, LOG_WRITE_BUFFER};
use telha_jobs_cluster::node::NodeOptions;
use telha_jobs_cluster::snapshot::{SnapshotPolicy, KEPT};

const MIB: u64 = 1 << 20;

/// Snapshots every 4 MiB of log (or 20,000 entries), 2,000 entries kept
/// behind one: a 10-minute run snapshots hundreds of times.
const POLICY: SnapshotPolicy = SnapshotPolicy {
    entries: 20_000,
    bytes: 4 * MIB,
    keep_log: 2_000,
};

fn raft_bound() -> u64 {
    LOG_WAL_LIMIT + 7 * LOG_WRITE_BUFFER as u64 + 2 * POLICY.bytes + 8 * MIB
}

fn snapshots_bound(store: u64) -> u64 {
    (KEPT as u64 + 1) * store + 8 * MIB
}

/// Bytes of the regular files under `dir`, recursively (a file removed
/// while listed counts 0).
fn bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => bytes(&e.path()),
            Ok(t) if t.is_file() => e.metadata().map_or(0, |m| m.len()),
            _ => 0,
        })
        .sum()
}

fn run(test: &str, default_secs: u64) {
    let secs = std::env::var("TELHA_DISK_BOUND_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default_secs);
    let run = Duration::from_secs(secs);
    let opts = NodeOptions {
        snapshots: POLICY,
        ..options()
    };
    let c = TestCluster::start(test, 3, opts);
    let q = c.queue();
    let stop = AtomicBool::new(false);
    let done = AtomicU64::new(0);
    let (mut max_raft, mut max_snaps, mut max_store) = (0u64, 0u64, 0u64);
    let mut samples = 0;
    std::thread::scope(|s| {
        for w in 0..2 {
            let (q, stop, done) = (q.clone(), &stop, &done);
            s.spawn(move || {
                let opts = LeaseOptions::default().kind("load").unwrap();
                let mut i = 0u64;
                while !stop.load(Ordering::Acquire) {
                    let jobs = (0..20)
                        .map(|k| NewJob {
                            kind: "load".into(),
                            payload: vec![(k + i) as u8; 200],
                            options: EnqueueOptions::default(),
                        })
                        .collect();
                    q.enqueue_many(jobs).unwrap();
                    let leased = q.lease_many(&format!("w{w}"), 20, &opts).unwrap();
                    let n = leased.len() as u64;
                    let items = leased
                        .iter()
                        .map(|j| Completion {
                            token: j.token(),
                            result: Some(b"ok".to_vec()),
                            encoding: Encoding::default(),
                            then: Vec::new(),
                        })
                        .collect();
                    for r in q.complete_many(items).unwrap() {
                        r.unwrap();
                    }
                    done.fetch_add(n, Ordering::Relaxed);
                    i += 1;
                }
            });
        }
        let start = Instant::now();
        while start.elapsed() < run {
            std::thread::sleep(Duration::from_secs(2));
            samples += 1;
            let mut line = Vec::new();
            for id in c.ids.clone() {
                let d = c.node_dir(id);
                let (raft, snaps, store) = (
                    bytes(&d.join("raft")),
                    bytes(&d.join("snapshots")),
                    bytes(&d.join("store")),
                );
                max_store = max_store.max(store);
                max_raft = max_raft.max(raft);
                max_snaps = max_snaps.max(snaps);
                assert!(
                    raft <= raft_bound(),
                    "node {id}: D/raft {raft} bytes over the bound {}",
                    raft_bound()
                );
                assert!(
                    snaps <= snapshots_bound(max_store),
                    "node {id}: D/snapshots {snaps} bytes over the bound {} (store {max_store})",
                    snapshots_bound(max_store)
                );
                line.push(format!(
                    "{id}: raft {:.1} snapshots {:.1} store {:.1}",
                    raft as f64 / MIB as f64,
                    snaps as f64 / MIB as f64,
                    store as f64 / MIB as f64
                ));
            }
            if samples % 15 == 1 {
                eprintln!(
                    "{:>4} s, {} jobs done; MiB per node: {}",
                    start.elapsed().as_secs(),
                    done.load(Ordering::Relaxed),
                    line.join("; ")
                );
            }
        }
        stop.store(true, Ordering::Release);
    });
    let leader = c.node(c.engine_leader(Duration::from_secs(10)));
    eprintln!(
        "{secs} s: {} jobs done, {samples} samples; max D/raft {:.1} MiB (bound {:.1}), \
         max D/snapshots {:.1} MiB (bound {:.1} at the largest store, {:.1} MiB); \
         leader's snapshot {:?}, purged {:?}",
        done.load(Ordering::Relaxed),
        max_raft as f64 / MIB as f64,
        raft_bound() as f64 / MIB as f64,
        max_snaps as f64 / MIB as f64,
        snapshots_bound(max_store) as f64 / MIB as f64,
        max_store as f64 / MIB as f64,
        leader.metrics().snapshot,
        leader.metrics().purged
    );
    drop(leader);
    assert!(done.load(Ordering::Relaxed) > 0, "the load ran");
    assert!(
        c.nodes.all().iter().all(|n| n.metrics().snapshot.is_some()),
        "every node snapshotted at least once"
    );
    c.assert_consistent();
}

#[test]
fn log_and_snapshots_stay_under_the_bound_under_load() {
    run("log_and_snapshots_stay_under_the_bound_under_load", 20);
}

#[test]
#[ignore = "long: make test-cluster-long"]
fn log_and_snapshots_stay_under_the_bound_for_ten_minutes() {
    run(
        "log_and_snapshots_stay_under_the_bound_for_ten_minutes",
        600,
    );
}
