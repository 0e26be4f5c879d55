//! `Queue::backup`: a checkpoint of a live store, taken while four threads
//! enqueue, lease and complete, opens as a store, passes `check()` and
//! holds every operation acknowledged before the call; refusals.

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{assert_consistent, expect_err, test_config};
use telha_jobs::{Config, EnqueueOptions, ErrorKind, JobId, LeaseOptions, Queue, State};

/// What the writers had been answered: the job's last acknowledged state.
type Acked = Arc<Mutex<HashMap<JobId, State>>>;

fn writer(q: Queue, n: usize, stop: Arc<AtomicBool>, acked: Acked, ops: Arc<AtomicUsize>) {
    let worker = format!("w{n}");
    let mut i = 0u64;
    while !stop.load(Ordering::SeqCst) {
        i += 1;
        let e = q
            .enqueue(
                &format!("k{}", i % 3),
                &i.to_be_bytes(),
                EnqueueOptions::default(),
            )
            .unwrap();
        acked.lock().unwrap().insert(e.id, State::Pending);
        if let Some(job) = q.lease_next(&worker, &LeaseOptions::default()).unwrap() {
            acked.lock().unwrap().insert(job.id, State::Leased);
            // One in four stays leased: the backup must show it leased.
            if !i.is_multiple_of(4) {
                q.complete(&job.token(), Some(b"ok")).unwrap();
                acked.lock().unwrap().insert(job.id, State::Completed);
            }
        }
        ops.fetch_add(1, Ordering::SeqCst);
    }
}

fn wait_for(ops: &AtomicUsize, n: usize) {
    while ops.load(Ordering::SeqCst) < n {
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_backup_under_load_opens_passes_check_and_holds_every_acknowledged_job() {
    let root = tempfile::tempdir().unwrap();
    let cfg = Config {
        lease_ttl: Duration::from_secs(600),
        ..test_config()
    };
    let q = Queue::open(root.path().join("store"), cfg.clone()).unwrap();
    let (stop, acked, ops) = (
        Arc::new(AtomicBool::new(false)),
        Acked::default(),
        Arc::new(AtomicUsize::new(0)),
    );
    let threads: Vec<_> = (0..4)
        .map(|n| {
            let (q, stop, acked, ops) = (q.clone(), stop.clone(), acked.clone(), ops.clone());
            std::thread::spawn(move || writer(q, n, stop, acked, ops))
        })
        .collect();
    wait_for(&ops, 2_000);
    let before = acked.lock().unwrap().clone();
    let dir = root.path().join("backup");
    let info = q.backup(&dir).unwrap();
    let at = ops.load(Ordering::SeqCst);
    wait_for(&ops, at + 500);
    stop.store(true, Ordering::SeqCst);
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(info.path, dir.canonicalize().unwrap());
    assert!(
        info.files >= 4 && info.bytes > 0 && info.sequence > 0,
        "{info:?}"
    );
    assert_consistent(&q);

    let b = Queue::open(&dir, cfg).unwrap();
    assert_consistent(&b);
    let mut seen = HashMap::<State, usize>::new();
    for (id, state) in &before {
        let job = b
            .get(id)
            .unwrap()
            .unwrap_or_else(|| panic!("{id} acknowledged before the backup is not in it"));
        // A job can only have moved on from what was acknowledged.
        let ok = match state {
            State::Pending => true,
            State::Leased => job.state != State::Pending,
            _ => job.state == *state,
        };
        assert!(
            ok,
            "{id}: acknowledged {state:?}, backup has {:?}",
            job.state
        );
        *seen.entry(*state).or_default() += 1;
    }
    assert!(seen.contains_key(&State::Leased), "{seen:?}");
    // Leases are rebuilt from the rows: a leased job is not leased again.
    let leased = b.stats().unwrap().total.leased;
    assert!(leased > 0);
    b.close();
    q.close();
}

#[test]
fn a_closed_or_read_only_queue_refuses_and_a_bad_dir_is_named() {
    let root = tempfile::tempdir().unwrap();
    let path = root.path().join("store");
    let q = Queue::open(&path, test_config()).unwrap();
    q.enqueue("k", b"1", EnqueueOptions::default()).unwrap();
    let full = root.path().join("full");
    std::fs::create_dir(&full).unwrap();
    std::fs::write(full.join("x"), b"").unwrap();
    let e = expect_err(q.backup(&full), ErrorKind::InvalidArgument);
    assert!(
        e.to_string().contains("full") && e.to_string().contains("not empty"),
        "{e}"
    );
    assert_eq!(std::fs::read_dir(&full).unwrap().count(), 1);
    // A second backup to the same directory is refused, the first intact.
    let dir = root.path().join("b");
    q.backup(&dir).unwrap();
    expect_err(q.backup(&dir), ErrorKind::InvalidArgument);
    q.close();
    expect_err(q.backup(root.path().join("c")), ErrorKind::Closed);
    assert!(!root.path().join("c").exists());

    let ro = Queue::open_read_only(&path).unwrap();
    let e = expect_err(ro.backup(root.path().join("c")), ErrorKind::InvalidArgument);
    assert!(e.to_string().contains("read-only"), "{e}");
    ro.close();
    // Nothing but the store, the refused dir and the one backup.
    let mut names: Vec<_> = std::fs::read_dir(root.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["b", "full", "store"]);
    let b = Queue::open(&dir, test_config()).unwrap();
    assert_eq!(b.stats().unwrap().total.pending, 1);
    assert_consistent(&b);
    b.close();
}
