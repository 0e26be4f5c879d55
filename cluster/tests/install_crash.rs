//! A crash inside a snapshot install (cargo feature `failpoints`): a
//! follower down past the leader's purge point restarts, is sent a
//! snapshot, and crashes after staging it (before the swap) or after the
//! swap (before its applied id is visible). What it leaves (the staging
//! directory, a store renamed aside) is gone once it starts again, and it
//! rejoins: equal digests, `check()` clean, every acknowledged job there.

#![cfg(feature = "failpoints")]

mod support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use support::{options, TestCluster};
use telha_jobs::{EnqueueOptions, JobId, LeaseOptions};
use telha_jobs_cluster::client::ClusterQueue;
use telha_jobs_cluster::failpoint::{self, Point};
use telha_jobs_cluster::node::NodeOptions;
use telha_jobs_cluster::snapshot::SnapshotPolicy;

fn write(q: &ClusterQueue, round: &str, n: usize) -> Vec<JobId> {
    let ids: Vec<JobId> = (0..n)
        .map(|i| {
            let opts = EnqueueOptions {
                idempotency_key: Some(format!("{round}-{i}")),
                ..Default::default()
            };
            q.enqueue("a", b"x", opts).unwrap().id
        })
        .collect();
    let opts = LeaseOptions::default().kind("a").unwrap();
    for j in q.lease_many("w", n / 2, &opts).unwrap() {
        q.complete(&j.token(), None).unwrap();
    }
    ids
}

fn wait_for(what: &str, within: Duration, mut ok: impl FnMut() -> bool) {
    let end = Instant::now() + within;
    while !ok() {
        assert!(Instant::now() < end, "{what}: not within {within:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The work directories under `D/snapshots` and a store left aside in `D`.
fn leftovers(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir.join("snapshots"))
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default();
    let aside = dir.join(".store.telha-replaced");
    if aside.exists() {
        v.push(aside);
    }
    v
}

fn crash_in_install(test: &str, point: Point) {
    let opts = NodeOptions {
        snapshots: SnapshotPolicy {
            entries: 50,
            bytes: 64 << 10,
            keep_log: 10,
        },
        ..options()
    };
    let c = TestCluster::start(test, 3, opts);
    let q = c.queue();
    let leader = c.engine_leader(Duration::from_secs(10));
    let f = *c.ids.iter().find(|&&i| i != leader).unwrap();
    let mut ids = write(&q, "before", 30);
    c.quiesce(Duration::from_secs(20));
    let behind = c.node(f).metrics().last_log_index.unwrap();
    c.crash(f);
    let mut round = 0;
    wait_for(
        "the leader's purge past the follower",
        Duration::from_secs(30),
        || {
            round += 1;
            ids.extend(write(&q, &format!("down-{round}"), 30));
            c.node(leader)
                .metrics()
                .purged
                .is_some_and(|p| p.index > behind)
        },
    );

    let router = c.router.clone();
    failpoint::arm(point, &c.node_dir(f), 0, move || router.unregister(f));
    c.restart(f);
    wait_for("the failpoint", Duration::from_secs(30), || {
        failpoint::fired().is_some()
    });
    eprintln!("{point:?} fired on follower {f}");
    c.crash(f);
    let dir = c.node_dir(f);
    let left = leftovers(&dir);
    eprintln!("left by the crash: {left:?}");
    if point == Point::InstallBeforeSwap {
        assert!(
            left.iter()
                .any(|p| p.to_string_lossy().contains(".incoming-")),
            "the staged snapshot is left as a killed process leaves it: {left:?}"
        );
    }
    ids.extend(write(&q, "while-down", 20));

    c.restart(f);
    for p in &left {
        assert!(
            !p.exists(),
            "{} is still there after the start",
            p.display()
        );
    }
    let purged = c.node(leader).metrics().purged.unwrap();
    wait_for("the follower's snapshot", Duration::from_secs(30), || {
        c.node(f)
            .metrics()
            .last_applied
            .is_some_and(|a| a.index >= purged.index)
    });
    ids.extend(write(&q, "after", 20));
    c.assert_consistent();
    for id in &ids {
        assert!(
            q.read(|q| q.get(id)).unwrap().is_some(),
            "acknowledged job {id} is missing"
        );
    }
    for n in c.nodes.all() {
        let m = n.metrics();
        assert!(
            m.running_state.is_ok(),
            "node {}: {:?}",
            n.id(),
            m.running_state
        );
    }
    eprintln!(
        "{} jobs present; follower {f} at {:?}",
        ids.len(),
        c.node(f).metrics().last_applied
    );
}

#[test]
fn a_crash_after_staging_a_snapshot_before_the_swap_restarts_clean() {
    crash_in_install(
        "a_crash_after_staging_a_snapshot_before_the_swap_restarts_clean",
        Point::InstallBeforeSwap,
    );
}

#[test]
fn a_crash_after_the_swap_before_the_applied_id_is_seen_restarts_clean() {
    crash_in_install(
        "a_crash_after_the_swap_before_the_applied_id_is_seen_restarts_clean",
        Point::InstallAfterSwap,
    );
}
