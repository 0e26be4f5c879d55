//! The write seam under injected outcomes: a commit whose outcome is
//! unknown fences the engine; a plain failure does not.

use std::path::Path;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{Commit, CommitError, Local};
use crate::engine::Engine;
use crate::error::Error;
use crate::{Config, EnqueueOptions, LeaseOptions, Queue, SubscribeOptions, SystemClock};

const PASS: u8 = 0;
/// The next commit fails with nothing written.
const FAIL: u8 = 1;
/// The next commit is written, then its answer is lost.
const UNKNOWN: u8 = 2;

/// The embedded commit, with its next outcome set by the test.
struct Switch {
    inner: Local,
    next: Arc<AtomicU8>,
}

impl Commit for Switch {
    fn commit(&self, batch: rocksdb::WriteBatch) -> Result<(), CommitError> {
        match self.next.swap(PASS, Ordering::SeqCst) {
            FAIL => Err(CommitError::Failed(Error::Storage(
                "injected failure".into(),
            ))),
            UNKNOWN => {
                self.inner.commit(batch)?;
                Err(CommitError::Unknown(
                    "injected: written, answer lost".into(),
                ))
            }
            _ => self.inner.commit(batch),
        }
    }
}

/// A reaper and a scheduler that run but never pass during the test (their
/// interval is an hour), so only the test's calls write.
fn cfg() -> Config {
    Config {
        reaper_interval: Duration::from_secs(3600),
        ..Config::default()
    }
}

fn open_switched(path: &Path, next: &Arc<AtomicU8>) -> Queue {
    let e = Engine::open_with(path, cfg(), Arc::new(SystemClock), &|store, cfg| {
        Box::new(Switch {
            inner: Local::new(store, cfg.sync_writes),
            next: next.clone(),
        })
    })
    .unwrap();
    Queue::over(e)
}

fn is_unavailable<T: std::fmt::Debug>(r: crate::Result<T>) -> bool {
    matches!(r, Err(ref e) if e.kind() == crate::ErrorKind::Unavailable)
}

/// Whether the engine's reaper and scheduler threads have ended; polled
/// (no event tells the test a thread ended), up to 30 s.
fn threads_end(e: &Engine) -> bool {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let reaper = e.reaper.lock().unwrap();
        let scheduler = e.scheduler.lock().unwrap();
        let ended = reaper.as_ref().is_some_and(|r| r.is_finished())
            && scheduler.as_ref().is_some_and(|s| s.is_finished());
        if ended || Instant::now() > deadline {
            return ended;
        }
        drop((reaper, scheduler));
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn an_unknown_outcome_fences_the_engine_until_the_store_is_reopened() {
    let dir = tempfile::tempdir().unwrap();
    let next = Arc::new(AtomicU8::new(PASS));
    let q = open_switched(dir.path(), &next);
    let e = q.engine().unwrap();
    q.enqueue("a", b"1", EnqueueOptions::default()).unwrap();
    q.enqueue("b", b"2", EnqueueOptions::default()).unwrap();
    let job = q
        .lease_next("w", &LeaseOptions::default())
        .unwrap()
        .unwrap();
    // A subscriber puts the settle's write under the hub's `order` lock.
    let sub = q.subscribe(SubscribeOptions::default()).unwrap();
    let waiter = {
        let q = q.clone();
        let opts = LeaseOptions::default()
            .kind("never")
            .unwrap()
            .wait(Duration::from_secs(3600));
        std::thread::spawn(move || q.lease_next("w2", &opts))
    };

    next.store(UNKNOWN, Ordering::SeqCst);
    assert!(is_unavailable(q.complete(&job.token(), None)));
    assert!(e.is_fenced());

    // Every later call, of this handle or a new open, answers Unavailable.
    let opts = EnqueueOptions::default();
    assert!(is_unavailable(q.enqueue("c", b"3", opts)));
    assert!(is_unavailable(q.lease_next("w", &LeaseOptions::default())));
    assert!(is_unavailable(q.complete(&job.token(), None)));
    assert!(is_unavailable(q.stats()));
    assert!(is_unavailable(q.get(&job.id)));
    assert!(is_unavailable(Queue::open(dir.path(), cfg())));
    // Nothing reached the store after the fence: a write in progress is
    // refused too.
    assert!(is_unavailable(e.write(rocksdb::WriteBatch::default())));
    // Waits and streams end; the threads stop.
    assert!(is_unavailable(waiter.join().unwrap()));
    let ended = loop {
        match sub.recv(Some(Duration::from_secs(30))) {
            Ok(Some(_)) => continue,
            r => break r,
        }
    };
    assert!(is_unavailable(ended), "the stream ends as Unavailable");
    assert!(threads_end(&e), "the reaper and scheduler stop");

    // The store reopens normally once the fenced engine is gone, and holds
    // what the store holds: the settle whose answer was lost took effect.
    drop((sub, e, q));
    let q = Queue::open(dir.path(), cfg()).unwrap();
    let s = q.stats().unwrap().total;
    assert_eq!((s.pending, s.leased, s.completed), (1, 0, 1));
    assert_eq!(q.check().unwrap().problems, Vec::<String>::new());
    let b = q
        .lease_next("w", &LeaseOptions::default())
        .unwrap()
        .unwrap();
    q.complete(&b.token(), None).unwrap();
    assert_eq!(q.stats().unwrap().total.completed, 2);
}

#[test]
fn a_failed_commit_fails_its_call_only() {
    let dir = tempfile::tempdir().unwrap();
    let next = Arc::new(AtomicU8::new(PASS));
    let q = open_switched(dir.path(), &next);
    let e = q.engine().unwrap();

    next.store(FAIL, Ordering::SeqCst);
    let r = q.enqueue("a", b"1", EnqueueOptions::default());
    assert!(
        matches!(r, Err(Error::Storage(ref m)) if m == "injected failure"),
        "{r:?}"
    );
    assert!(!e.is_fenced());
    assert_eq!(q.stats().unwrap().total.pending, 0, "nothing was written");

    q.enqueue("a", b"1", EnqueueOptions::default()).unwrap();
    let job = q
        .lease_next("w", &LeaseOptions::default())
        .unwrap()
        .unwrap();
    next.store(FAIL, Ordering::SeqCst);
    let r = q.complete(&job.token(), None);
    assert!(matches!(r, Err(Error::Storage(_))), "{r:?}");
    // The lease is still held: the settle is tried again and takes effect.
    q.complete(&job.token(), None).unwrap();
    let s = q.stats().unwrap().total;
    assert_eq!((s.pending, s.leased, s.completed), (0, 0, 1));
    assert_eq!(q.check().unwrap().problems, Vec::<String>::new());
    let reaper = e.reaper.lock().unwrap();
    assert!(reaper.as_ref().is_some_and(|r| !r.is_finished()));
}

#[test]
fn a_failed_commit_of_fail_many_or_release_many_moves_none_of_the_batch() {
    let dir = tempfile::tempdir().unwrap();
    let next = Arc::new(AtomicU8::new(PASS));
    let q = open_switched(dir.path(), &next);
    for _ in 0..4 {
        q.enqueue("a", b"1", EnqueueOptions::default()).unwrap();
    }
    let jobs = q.lease_many("w", 4, &LeaseOptions::default()).unwrap();
    let tokens: Vec<_> = jobs.iter().map(|j| j.token()).collect();
    let fails = || {
        tokens[..2]
            .iter()
            .map(|t| crate::Failure::new(*t, "boom"))
            .collect::<Vec<_>>()
    };
    next.store(FAIL, Ordering::SeqCst);
    let r = q.fail_many(fails());
    assert!(matches!(r, Err(Error::Storage(_))), "{r:?}");
    next.store(FAIL, Ordering::SeqCst);
    let r = q.release_many(&tokens[2..]);
    assert!(matches!(r, Err(Error::Storage(_))), "{r:?}");
    assert_eq!(q.stats().unwrap().total.leased, 4, "nothing moved");
    // Every lease is still held: the calls are tried again and take effect.
    assert!(q.fail_many(fails()).unwrap().iter().all(|r| r.is_ok()));
    assert!(q
        .release_many(&tokens[2..])
        .unwrap()
        .iter()
        .all(|r| r.is_ok()));
    let s = q.stats().unwrap().total;
    assert_eq!((s.leased, s.failed, s.pending), (0, 2, 2));
    assert_eq!(q.check().unwrap().problems, Vec::<String>::new());
}
