//! A unique window survives a crash: a child process enqueues with
//! `unique_for` (sync writes) and is killed with SIGKILL mid-stream; every
//! acknowledged window answers its job after the reopen (issue 44).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use telha_jobs::{Config, EnqueueOptions, JobId, Queue};

const ENV: &str = "TELHA_UNIQUE_CRASH_CHILD";
const STORE: &str = "TELHA_UNIQUE_CRASH_STORE";

fn window(i: u64) -> EnqueueOptions {
    EnqueueOptions::default()
        .idempotency_key(format!("user-{i}"))
        .unique_for(Duration::from_secs(3600))
}

/// Child: enqueue windowed keys, printing each acknowledged one, until killed.
#[test]
#[ignore = "child process entry point"]
fn child_enqueueing_windows() {
    if std::env::var(ENV).is_err() {
        return;
    }
    let cfg = Config {
        sync_writes: true,
        reaper_interval: Duration::ZERO,
        ..Config::default()
    };
    let q = Queue::open(std::env::var(STORE).unwrap(), cfg).unwrap();
    let mut i = 0u64;
    loop {
        let e = q.enqueue("embed", b"x", window(i)).unwrap();
        assert!(e.created);
        println!("ACK {i} {}", e.id);
        i += 1;
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
fn an_acknowledged_window_holds_after_a_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = KillOnDrop(
        Command::new(std::env::current_exe().unwrap())
            .args([
                "child_enqueueing_windows",
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(ENV, "1")
            .env(STORE, dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap(),
    );
    let out = BufReader::new(child.0.stdout.take().unwrap());
    let mut acked: Vec<(u64, JobId)> = Vec::new();
    for line in out.lines() {
        let line = line.unwrap();
        if let Some(rest) = line.strip_prefix("ACK ") {
            let (i, id) = rest.split_once(' ').unwrap();
            acked.push((i.parse().unwrap(), id.parse().unwrap()));
        }
        if acked.len() >= 200 {
            break;
        }
    }
    child.0.kill().unwrap();
    assert!(!child.0.wait().unwrap().success());
    assert_eq!(acked.len(), 200);

    let q = Queue::open(dir.path(), Config::default()).unwrap();
    for (i, id) in &acked {
        let e = q.enqueue("embed", b"again", window(*i)).unwrap();
        assert_eq!((e.id, e.created), (*id, false), "window of user-{i}");
    }
    // A key never acknowledged opens its window now (whatever the child
    // wrote after the last acknowledgement, it is one job at most).
    let next = acked.len() as u64 + 1_000;
    assert!(q.enqueue("embed", b"new", window(next)).unwrap().created);
    let report = q.check().unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}
