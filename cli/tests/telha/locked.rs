//! Another process (a worker) holds the store: reads work beside it,
//! writes fail at once with exit 3 and the owner's pid.
//!
//! The holder is this test binary run again with `HOLD_STORE` set: it runs
//! only the ignored `hold_store_child` below, which opens the store
//! read-write, enqueues one job, reports its pid and the job id on stdout,
//! and waits until the test kills it by pid.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use telha_jobs::{EnqueueOptions, JobId, Queue};

use crate::support::*;

const HOLD_VAR: &str = "TELHA_CLI_TEST_HOLD_STORE";

#[test]
#[ignore = "helper process for while_a_worker_holds_the_store_reads_work_and_writes_exit_3"]
fn hold_store_child() {
    let Some(path) = std::env::var_os(HOLD_VAR) else {
        eprintln!("hold_store_child is a helper process; it holds nothing when run by itself");
        return;
    };
    let q = Queue::open(&path, config()).unwrap();
    let id = q
        .enqueue("embed", b"from-the-worker", EnqueueOptions::default())
        .unwrap()
        .id;
    println!("HOLDING {} {id}", std::process::id());
    // Until killed. A parent that dies without killing us closes our stdin.
    let mut sink = String::new();
    let _ = std::io::stdin().read_line(&mut sink);
}

/// The holder, killed (by pid) and reaped when dropped.
struct Holder {
    child: Child,
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn_holder(path: &std::path::Path) -> (Holder, u32, JobId) {
    let child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "locked::hold_store_child",
            "--ignored",
            "--nocapture",
        ])
        .env(HOLD_VAR, path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut holder = Holder { child };
    let stdout = holder.child.stdout.take().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        if let Some(rest) = line.strip_prefix("HOLDING ") {
            let id = rest.split_once(' ').unwrap().1;
            let pid = holder.child.id();
            assert_eq!(rest.split_once(' ').unwrap().0, pid.to_string());
            return (holder, pid, id.parse().unwrap());
        }
        assert!(Instant::now() < deadline, "the holder did not start");
    }
    let status = holder.child.wait().unwrap();
    panic!("the holder exited before holding the store: {status}");
}

#[test]
fn while_a_worker_holds_the_store_reads_work_and_writes_exit_3() {
    let s = seeded();
    let (holder, pid, worker_job) = spawn_holder(&s.path);

    // Reads: read-only opens beside the owner, seeing what it wrote.
    let ls = telha(&s.path, &["--json", "jobs", "ls", "--limit", "100"]).json();
    let ids = json_ids(&ls["jobs"]);
    assert_eq!(ids.len(), s.total + 1);
    assert!(
        ids.contains(&worker_job),
        "the worker's enqueue is not visible"
    );
    let show = telha(&s.path, &["jobs", "show", &s.dead_pdf_a[0].to_string()]);
    assert!(show.ok().contains("cannot parse PDF header"), "{show:?}");
    let shown = telha(
        &s.path,
        &["--json", "jobs", "show", &worker_job.to_string()],
    )
    .json();
    assert_eq!(shown["payload"]["value"], "from-the-worker");
    assert_eq!(
        telha(&s.path, &["--json", "jobs", "stats"]).json()["total"]["pending"],
        5
    );
    let metrics = telha(&s.path, &["jobs", "metrics"]);
    assert!(
        metrics.ok().contains("telha_jobs_dead_letter_jobs 6"),
        "{metrics:?}"
    );

    // Writes: refused at once, naming the owner.
    let locked = format!("locked by pid {pid}");
    let started = Instant::now();
    telha(&s.path, &["jobs", "retry", &s.dead_pdf_a[0].to_string()]).fails(3, &locked);
    telha(&s.path, &["jobs", "retry", "--state", "dead", "--yes"]).fails(3, &locked);
    telha(
        &s.path,
        &["jobs", "purge", "--state", "dead", "--older-than", "1s"],
    )
    .fails(3, &locked);
    telha(&s.path, &["jobs", "enqueue", "embed"]).fails(3, &locked);
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "a locked store made the writes wait"
    );

    drop(holder);
    // The OS released the lock with the holder: writes work again.
    let out = telha(&s.path, &["jobs", "retry", &s.dead_pdf_a[0].to_string()]);
    assert!(out.ok().contains("dead -> pending"), "{out:?}");
}
