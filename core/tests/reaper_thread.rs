//! The background reaper started by `open`: it runs on its own (no `reap()`
//! call) at `reaper_interval`, and it stops with the engine.

use std::sync::Arc;
use std::time::{Duration, Instant};

use telha_jobs::{Config, EnqueueOptions, LeaseOptions, ManualClock, Queue, State};

/// Poll `f` until it holds or `limit` passes (the reaper runs on real time).
fn eventually(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    f()
}

#[test]
fn the_background_reaper_returns_an_expired_lease_without_a_reap_call() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let cfg = Config {
        reaper_interval: Duration::from_millis(20),
        lease_ttl: Duration::from_secs(60),
        ..Config::default()
    };
    let q = Queue::open_with_clock(dir.path(), cfg, clock.clone()).unwrap();
    let id = q
        .enqueue("embed", b"x", EnqueueOptions::default())
        .unwrap()
        .id;
    let job = q
        .lease_next("w", &LeaseOptions::default())
        .unwrap()
        .unwrap();
    assert_eq!(job.id, id);
    // Not expired yet: the reaper leaves it alone.
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(q.get(&id).unwrap().unwrap().state, State::Leased);
    clock.advance(Duration::from_secs(61));
    let back = eventually(Duration::from_secs(10), || {
        q.get(&id).unwrap().unwrap().state == State::Pending
    });
    assert!(
        back,
        "the background reaper never returned the expired lease"
    );
    let info = q.get(&id).unwrap().unwrap();
    assert_eq!(info.attempts, 1);
    assert!(q
        .metrics()
        .unwrap()
        .contains("telha_jobs_reaper_passes_total"));
}

#[test]
fn the_background_reaper_prunes_completed_jobs_past_retention() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let cfg = Config {
        reaper_interval: Duration::from_millis(20),
        completed_retention: Some(Duration::from_secs(3600)),
        ..Config::default()
    };
    let q = Queue::open_with_clock(dir.path(), cfg, clock.clone()).unwrap();
    let id = q
        .enqueue("embed", b"x", EnqueueOptions::default())
        .unwrap()
        .id;
    let job = q
        .lease_next("w", &LeaseOptions::default())
        .unwrap()
        .unwrap();
    q.complete(&job.token(), None).unwrap();
    clock.advance(Duration::from_secs(3601));
    let gone = eventually(Duration::from_secs(10), || q.get(&id).unwrap().is_none());
    assert!(gone, "the completed job was never pruned");
    assert_eq!(q.stats().unwrap().total.completed, 0);
}

#[test]
fn closing_the_last_handle_stops_the_reaper_and_releases_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = Config {
        reaper_interval: Duration::from_millis(10),
        ..Config::default()
    };
    let q = Queue::open(dir.path(), cfg.clone()).unwrap();
    q.enqueue("embed", b"x", EnqueueOptions::default()).unwrap();
    std::thread::sleep(Duration::from_millis(30));
    q.close();
    assert_eq!(q.stats().unwrap_err().kind(), telha_jobs::ErrorKind::Closed);
    // The store was closed (no reaper thread holds it): RocksDB's own lock
    // file can be taken again, here by a fresh engine with another config.
    let other = Config {
        reaper_interval: Duration::ZERO,
        ..Config::default()
    };
    let q2 = Queue::open(dir.path(), other).unwrap();
    assert_eq!(q2.stats().unwrap().total.pending, 1);
}

#[test]
fn close_releases_the_store_even_while_a_reaper_pass_is_running() {
    // The reaper thread holds the engine for the length of each pass. A
    // close landing inside a pass must still shut the engine down: the next
    // open (here with another config, which may not share it) waits for
    // RocksDB to close rather than finding the old engine alive. Each round
    // leases 500 jobs on a 1 ms TTL, so the reaper is busy expiring them
    // when the close comes.
    let dir = tempfile::tempdir().unwrap();
    let busy = Config {
        reaper_interval: Duration::from_millis(1),
        lease_ttl: Duration::from_millis(1),
        max_attempts: 1000,
        backoff: telha_jobs::Backoff {
            base: Duration::from_millis(1),
            factor: 1.0,
            cap: Duration::from_millis(1),
        },
        ..Config::default()
    };
    let other = Config {
        reaper_interval: Duration::ZERO,
        ..busy.clone()
    };
    let q = Queue::open(dir.path(), busy.clone()).unwrap();
    let jobs: Vec<_> = (0..500)
        .map(|i| telha_jobs::NewJob::new("embed", format!("{i}").into_bytes()))
        .collect();
    q.enqueue_many(jobs).unwrap();
    q.close();
    for round in 0..30 {
        let q = Queue::open(dir.path(), busy.clone()).unwrap();
        // Right after an open the jobs may all still be leased (recovered
        // from the last round, expired but not yet reaped): wait for them.
        let wait = telha_jobs::LeaseOptions::default().wait(Duration::from_secs(10));
        let leased = q.lease_many("w", 500, &wait).unwrap();
        assert!(!leased.is_empty());
        std::thread::sleep(Duration::from_millis(2));
        q.close();
        let q2 = Queue::open(dir.path(), other.clone())
            .unwrap_or_else(|e| panic!("round {round}: reopen after close: {e}"));
        assert_eq!(q2.stats().unwrap().total.completed, 0);
        q2.close();
    }
}
