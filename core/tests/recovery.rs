//! A worker process killed with SIGKILL while it holds leases loses nothing:
//! every acknowledged enqueue is there after reopen, and after the TTL its
//! leased jobs are re-leased and complete. Also: one store, one process.
//!
//! The child processes are this test binary re-run on an `#[ignore]`d entry
//! point with `TELHA_TEST_CHILD` set; the parent starts and kills them by pid.

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use telha_jobs::{
    Config, EnqueueOptions, ErrorKind, JobId, LeaseOptions, ManualClock, Queue, State,
};

const ENV: &str = "TELHA_TEST_CHILD";
const STORE: &str = "TELHA_TEST_STORE";
const SYNC: &str = "TELHA_TEST_SYNC";

fn spawn_child(entry: &str, store: &std::path::Path, sync: bool) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            entry,
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ENV, entry)
        .env(STORE, store)
        .env(SYNC, if sync { "1" } else { "0" })
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn child")
}

/// Child: enqueue 50 jobs, lease 10 of them (printing each acknowledged id),
/// then keep enqueueing and printing acknowledgements until killed.
#[test]
#[ignore = "child process entry point for recovery tests"]
fn child_worker_that_gets_killed() {
    if std::env::var(ENV).as_deref() != Ok("child_worker_that_gets_killed") {
        return;
    }
    let store = std::env::var(STORE).unwrap();
    let cfg = Config {
        lease_ttl: Duration::from_secs(60),
        sync_writes: std::env::var(SYNC).as_deref() == Ok("1"),
        ..Config::default()
    };
    let q = Queue::open(&store, cfg).unwrap();
    for i in 0..50 {
        let e = q
            .enqueue(
                "embed",
                format!("early-{i}").as_bytes(),
                EnqueueOptions::default(),
            )
            .unwrap();
        println!("ACK {}", e.id);
    }
    for _ in 0..10 {
        let j = q
            .lease_next("doomed", &LeaseOptions::default())
            .unwrap()
            .unwrap();
        println!("LEASED {}", j.id);
    }
    println!("READY");
    let mut i = 0u64;
    loop {
        let e = q
            .enqueue(
                "embed",
                format!("late-{i}").as_bytes(),
                EnqueueOptions::default(),
            )
            .unwrap();
        println!("ACK {}", e.id);
        i += 1;
    }
}

/// Child: hold the store open until killed.
#[test]
#[ignore = "child process entry point for recovery tests"]
fn child_holding_the_store() {
    if std::env::var(ENV).as_deref() != Ok("child_holding_the_store") {
        return;
    }
    let store = std::env::var(STORE).unwrap();
    let _q = Queue::open(&store, Config::default()).unwrap();
    println!("READY");
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

struct KillOnDrop(Child);
impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_worker_killed_with_sigkill_loses_no_acknowledged_job_and_its_leases_come_back() {
    killed_worker_scenario(false, 2_000);
}

#[test]
fn with_sync_writes_a_worker_killed_with_sigkill_loses_no_acknowledged_job() {
    killed_worker_scenario(true, 200);
}

fn killed_worker_scenario(sync: bool, kill_after_acks: usize) {
    let dir = tempfile::tempdir().unwrap();
    let mut child = KillOnDrop(spawn_child(
        "child_worker_that_gets_killed",
        dir.path(),
        sync,
    ));
    let out = BufReader::new(child.0.stdout.take().unwrap());
    let mut acked: HashSet<JobId> = HashSet::new();
    let mut leased: HashSet<JobId> = HashSet::new();
    let mut ready = false;
    for line in out.lines() {
        let line = line.unwrap();
        if let Some(id) = line.strip_prefix("ACK ") {
            acked.insert(id.parse().unwrap());
        } else if let Some(id) = line.strip_prefix("LEASED ") {
            leased.insert(id.parse().unwrap());
        } else if line == "READY" {
            ready = true;
        }
        // Kill mid-stream, while it is enqueueing as fast as it can.
        if ready && acked.len() >= kill_after_acks {
            break;
        }
    }
    assert!(ready, "child never got ready");
    child.0.kill().unwrap(); // SIGKILL
    let status = child.0.wait().unwrap();
    assert!(!status.success());
    assert_eq!(leased.len(), 10);

    // Reopen with a clock past the child's lease deadlines.
    let clock = Arc::new(ManualClock::starting_now());
    clock.advance(Duration::from_secs(61));
    let cfg = Config {
        reaper_interval: Duration::ZERO,
        lease_ttl: Duration::from_secs(60),
        ..Config::default()
    };
    let q = Queue::open_with_clock(dir.path(), cfg, clock.clone()).unwrap();
    for id in &acked {
        assert!(q.get(id).unwrap().is_some(), "acknowledged job {id} lost");
    }
    for id in &leased {
        assert_eq!(q.get(id).unwrap().unwrap().state, State::Leased);
    }
    let report = q.check().unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);

    let reaped = q.reap().unwrap();
    assert_eq!(reaped.expired, 10);
    for id in &leased {
        let info = q.get(id).unwrap().unwrap();
        assert_eq!((info.state, info.attempts), (State::Pending, 1));
        assert_eq!(info.events.last().unwrap().transition, "lease_expired");
    }
    // After the backoff (10 s, jittered ±20 %: at most 12 s) every job, the
    // 10 reclaimed included, leases and completes.
    clock.advance(Duration::from_secs(13));
    let mut done = HashSet::new();
    while let Some(j) = q.lease_next("rescuer", &LeaseOptions::default()).unwrap() {
        q.complete(&j.token(), None).unwrap();
        done.insert(j.id);
    }
    assert!(leased.is_subset(&done), "a reclaimed job was not re-leased");
    assert!(acked.is_subset(&done));
    let stats = q.stats().unwrap();
    assert_eq!(stats.total.completed as usize, done.len());
    assert_eq!(stats.total.pending + stats.total.leased, 0);
    let report = q.check().unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}

#[test]
fn a_second_process_gets_store_locked_naming_the_path_and_pid() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = KillOnDrop(spawn_child("child_holding_the_store", dir.path(), false));
    let mut out = BufReader::new(child.0.stdout.take().unwrap());
    let mut line = String::new();
    while !line.contains("READY") {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "child exited early");
    }
    let err = Queue::open(dir.path(), Config::default()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::StoreLocked);
    let msg = err.to_string();
    let canon = dir.path().canonicalize().unwrap();
    assert!(msg.contains(&canon.display().to_string()), "{msg}");
    assert!(msg.contains(&format!("pid {}", child.0.id())), "{msg}");

    // The OS releases the lock when the owner dies, SIGKILL included.
    child.0.kill().unwrap();
    child.0.wait().unwrap();
    let q = Queue::open(dir.path(), Config::default()).unwrap();
    q.enqueue("embed", b"x", EnqueueOptions::default()).unwrap();
}
