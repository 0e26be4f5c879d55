//! Promote, reschedule and set_priority (issue 44): each moves the job's
//! one ready row within its state, durable across a reopen, `check()`
//! clean after each; leased and finished jobs answer `WrongState`, bad
//! input `InvalidArgument` with nothing written; exact beside pollers.

use super::*;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use telha_jobs::limits::MAX_INSTANT_MS;
use telha_jobs::watch::SubscribeOptions;

type Rows = (BTreeSet<Vec<u8>>, BTreeSet<Vec<u8>>);

/// Every key of the jobs and kinds column families (the queue closed, then
/// reopened: each step is also proven durable).
fn rows(s: &mut TestStore) -> Rows {
    s.q.close();
    let db = raw_db(s.path());
    let keys = |cf: &str| -> BTreeSet<Vec<u8>> {
        let h = db.cf_handle(cf).unwrap();
        db.iterator_cf(h, rocksdb::IteratorMode::Start)
            .map(|r| r.unwrap().0.to_vec())
            .collect()
    };
    let out = (keys("jobs"), keys("kinds"));
    drop(db);
    s.reopen();
    assert_consistent(&s.q);
    out
}

/// Exactly one row of each family left and one came (the job's own).
fn assert_one_row_moved(before: &Rows, after: &Rows) {
    for (b, a, cf) in [
        (&before.0, &after.0, "jobs"),
        (&before.1, &after.1, "kinds"),
    ] {
        assert_eq!(b.difference(a).count(), 1, "{cf}: one row left");
        assert_eq!(a.difference(b).count(), 1, "{cf}: one row came");
        assert_eq!(a.len(), b.len(), "{cf}");
    }
}

#[test]
fn promote_makes_a_delayed_job_ready_now_moving_one_row() {
    let mut s = TestStore::new();
    let other = s.enqueue("embed");
    let id = s.enqueue_with("embed", EnqueueOptions::default().delay(HOUR));
    let before = rows(&mut s);
    s.q.promote(&id).unwrap();
    // Counted since open (the reopen below starts again from zero).
    let m = s.q.metrics().unwrap();
    assert_eq!(
        metric(&m, "telha_jobs_transitions_total{transition=\"promoted\"}"),
        Some(1.0)
    );
    let after = rows(&mut s);
    assert_one_row_moved(&before, &after);
    let info = s.get(&id);
    assert_eq!((info.state, info.state_ts), (State::Pending, s.now()));
    assert_eq!(count_events(&info, "promoted"), 1);
    // Ready now, behind the job that was ready before it.
    assert_eq!(s.must_lease("w").id, other);
    assert_eq!(s.must_lease("w").id, id);
}

#[test]
fn promote_of_a_due_job_writes_nothing_and_a_retry_waiting_one_stays_failed() {
    let mut s = TestStore::new();
    let due = s.enqueue("embed");
    let before = rows(&mut s);
    s.q.promote(&due).unwrap();
    assert_eq!(rows(&mut s), before, "nothing written");
    assert_eq!(count_events(&s.get(&due), "promoted"), 0);

    let job = s.must_lease("w");
    s.q.fail(&job.token(), "boom", true).unwrap();
    let failed = s.get(&due);
    assert_eq!(failed.state, State::Failed);
    assert!(failed.state_ts > s.now(), "waiting for its retry");
    assert!(s.lease("w").is_none());
    let before = rows(&mut s);
    s.q.promote(&due).unwrap();
    assert_one_row_moved(&before, &rows(&mut s));
    let info = s.get(&due);
    assert_eq!((info.state, info.state_ts), (State::Failed, s.now()));
    assert_eq!(info.attempts, 1, "a promote is no attempt");
    let again = s.must_lease("w");
    assert_eq!(again.id, due);
    assert_eq!(s.q.stats().unwrap().total.failed, 0);
}

#[test]
fn reschedule_into_the_future_makes_a_ready_job_delayed_and_back() {
    let mut s = TestStore::new();
    let id = s.enqueue("embed");
    let later = s.now() + 60_000;
    let before = rows(&mut s);
    s.q.reschedule(&id, later).unwrap();
    assert_one_row_moved(&before, &rows(&mut s));
    let info = s.get(&id);
    assert_eq!((info.state, info.state_ts), (State::Pending, later));
    assert_eq!(count_events(&info, "rescheduled"), 1);
    assert!(s.lease("w").is_none(), "delayed now");
    assert_eq!(s.q.stats().unwrap().total.pending, 1);
    // The same time again writes nothing.
    let before = rows(&mut s);
    s.q.reschedule(&id, later).unwrap();
    assert_eq!(rows(&mut s), before);
    // Into the past: ready again.
    s.q.reschedule(&id, s.now() - 1).unwrap();
    assert_eq!(s.must_lease("w").id, id);
    assert_consistent(&s.q);
}

#[test]
fn set_priority_moves_a_job_ahead_and_keeps_its_time() {
    let mut s = TestStore::new();
    let a = s.enqueue("embed");
    s.advance(MS);
    let b = s.enqueue("embed");
    let ts = s.get(&b).state_ts;
    let before = rows(&mut s);
    s.q.set_priority(&b, 0).unwrap();
    assert_one_row_moved(&before, &rows(&mut s));
    let info = s.get(&b);
    assert_eq!((info.priority, info.state_ts), (0, ts));
    assert_eq!(count_events(&info, "reprioritized"), 1);
    // A kind-filtered lease reads the kind index: it sees the move too.
    assert_eq!(lease_with(&s, &kinds(&["embed"])).unwrap().id, b);
    assert_eq!(s.must_lease("w").id, a);
}

#[test]
fn leased_finished_and_unknown_jobs_and_bad_times_are_refused_with_nothing_written() {
    let mut s = TestStore::new();
    let id = s.enqueue("embed");
    let job = s.must_lease("w");
    let before = rows(&mut s);
    expect_err(s.q.promote(&id), ErrorKind::WrongState);
    expect_err(s.q.reschedule(&id, s.now()), ErrorKind::WrongState);
    expect_err(s.q.set_priority(&id, 3), ErrorKind::WrongState);
    s.q.complete(&job.token(), None).unwrap();
    expect_err(s.q.promote(&id), ErrorKind::WrongState);
    let none = JobId::from_bytes([9; 16]);
    expect_err(s.q.promote(&none), ErrorKind::NotFound);
    expect_err(s.q.set_priority(&none, 1), ErrorKind::NotFound);
    let waiting = s.enqueue_with("embed", EnqueueOptions::default().delay(HOUR));
    let before_bad = rows(&mut s);
    let e = expect_err(
        s.q.reschedule(&waiting, MAX_INSTANT_MS + 1),
        ErrorKind::InvalidArgument,
    );
    assert!(e.to_string().contains("run_at"), "{e}");
    assert_eq!(rows(&mut s), before_bad, "nothing written");
    assert_ne!(before, before_bad);
}

#[test]
fn subscribers_see_each_steering_move() {
    let s = TestStore::new();
    let sub = s.q.subscribe(SubscribeOptions::default()).unwrap();
    let id = s.enqueue_with("embed", EnqueueOptions::default().delay(HOUR));
    s.q.set_priority(&id, 7).unwrap();
    s.q.reschedule(&id, s.now() + 5).unwrap();
    s.q.promote(&id).unwrap();
    let mut seen = Vec::new();
    while let Some(ev) = sub.recv(Some(Duration::from_millis(200))).unwrap() {
        seen.push(ev.event.name());
    }
    assert_eq!(
        seen,
        ["enqueued", "reprioritized", "rescheduled", "promoted"]
    );
}

/// 4 pollers over 2,000 delayed jobs that only a steering thread makes
/// ready: it reprioritizes and promotes each, then reprioritizes it again
/// while the pollers race for it (`Ok` or `WrongState`, never a lost or
/// doubled job). Every job is completed exactly once; `check()` is clean.
#[test]
fn steering_beside_pollers_loses_and_doubles_nothing() {
    const N: usize = 2000;
    let s = TestStore::new();
    let ids: Vec<JobId> = (0..N)
        .map(|i| {
            let kind = if i % 2 == 0 { "embed" } else { "ingest:pdf" };
            s.enqueue_with(kind, EnqueueOptions::default().delay(HOUR))
        })
        .collect();
    let done: Arc<Mutex<Vec<JobId>>> = Arc::default();
    let raced = Arc::new(AtomicUsize::new(0));
    std::thread::scope(|sc| {
        for w in 0..4 {
            let (q, done) = (s.q.clone(), done.clone());
            let opts = if w % 2 == 0 {
                LeaseOptions::default()
            } else {
                kinds(&["embed", "ingest:*"])
            };
            sc.spawn(move || loop {
                if done.lock().unwrap().len() >= N {
                    return;
                }
                match q.lease_next(&format!("w{w}"), &opts).unwrap() {
                    Some(job) => {
                        q.complete(&job.token(), None).unwrap();
                        done.lock().unwrap().push(job.id);
                    }
                    None => std::thread::yield_now(),
                }
            });
        }
        let (q, raced) = (s.q.clone(), raced.clone());
        let ids = &ids;
        sc.spawn(move || {
            for (i, id) in ids.iter().enumerate() {
                q.set_priority(id, (i % 7) as u8).unwrap();
                if i % 3 == 0 {
                    q.reschedule(id, EPOCH_MS - 1).unwrap();
                } else {
                    q.promote(id).unwrap();
                }
                match q.set_priority(id, 200) {
                    Ok(()) => {}
                    Err(e) if e.kind() == ErrorKind::WrongState => {
                        raced.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => panic!("{e}"),
                }
            }
        });
    });
    let done = done.lock().unwrap();
    let unique: HashSet<&JobId> = done.iter().collect();
    assert_eq!((done.len(), unique.len()), (N, N), "each job exactly once");
    let stats = s.q.stats().unwrap().total;
    assert_eq!((stats.completed, stats.pending), (N as u64, 0));
    for id in ids.iter().step_by(97) {
        let info = s.get(id);
        assert_eq!(info.attempts, 0);
        assert_eq!(count_events(&info, "leased"), 1);
    }
    eprintln!(
        "steering raced a lease on {} of {N} jobs",
        raced.load(Ordering::Relaxed)
    );
    assert_consistent(&s.q);
}
