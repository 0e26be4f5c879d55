//! lease_many and long-polls.

use super::*;

// ----------------------------------------------- lease_many and long-poll

#[test]
fn lease_many_returns_up_to_n_distinct_jobs() {
    let s = TestStore::new();
    let ids: HashSet<JobId> = (0..5).map(|_| s.enqueue("embed")).collect();
    let first = s.q.lease_many("w", 3, &LeaseOptions::default()).unwrap();
    let rest = s.q.lease_many("w", 10, &LeaseOptions::default()).unwrap();
    assert_eq!((first.len(), rest.len()), (3, 2));
    let got: HashSet<JobId> = first.iter().chain(&rest).map(|j| j.id).collect();
    assert_eq!(got, ids, "every job once");
    for j in first.iter().chain(&rest) {
        assert_eq!(s.get(&j.id).state, State::Leased);
        assert_eq!(j.worker_id, "w");
    }
    assert!(s
        .q
        .lease_many("w", 4, &LeaseOptions::default())
        .unwrap()
        .is_empty());
    assert_eq!(s.q.stats().unwrap().total.leased, 5);
    assert_consistent(&s.q);
}

#[test]
fn a_waiting_lease_is_woken_by_an_enqueue() {
    let s = TestStore::new();
    let q = s.q.clone();
    let waiter = std::thread::spawn(move || {
        let t = Instant::now();
        let r = q.lease_next("w", &LeaseOptions::default().wait(Duration::from_secs(5)));
        (r, t.elapsed())
    });
    // Real time, on purpose: the waiter must be blocked before the enqueue,
    // so that only the enqueue's wake-up (not its timeout) can end the wait.
    std::thread::sleep(Duration::from_millis(200));
    let id = s.enqueue("embed");
    let (r, elapsed) = waiter.join().unwrap();
    let job = r.unwrap().expect("the waiter gets the job");
    assert_eq!(job.id, id);
    assert!(
        elapsed < Duration::from_secs(4),
        "woken after {elapsed:?}; the enqueue should wake it at once"
    );
}

#[test]
fn a_waiting_lease_on_an_empty_queue_returns_none_when_the_wait_ends() {
    let s = TestStore::new();
    let t = Instant::now();
    let got =
        s.q.lease_next(
            "w",
            &LeaseOptions::default().wait(Duration::from_millis(100)),
        )
        .unwrap();
    assert!(got.is_none());
    assert!(
        t.elapsed() >= Duration::from_millis(100),
        "{:?}",
        t.elapsed()
    );
}

#[test]
fn a_waiting_lease_wakes_when_a_delayed_or_backing_off_job_falls_due() {
    // The system clock, on purpose: the subject is the waiter sleeping until
    // the earliest due time when no enqueue will wake it.
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = test_config();
    cfg.backoff.base = Duration::from_millis(300);
    let q = Queue::open(dir.path(), cfg).unwrap();
    let wait = LeaseOptions::default().wait(Duration::from_secs(5));

    let delayed = q
        .enqueue(
            "embed",
            b"",
            EnqueueOptions::default().delay(Duration::from_millis(300)),
        )
        .unwrap()
        .id;
    let t = Instant::now();
    let job = q.lease_next("w", &wait).unwrap().expect("the delayed job");
    assert_eq!(job.id, delayed);
    assert!(t.elapsed() < Duration::from_secs(4), "{:?}", t.elapsed());

    q.fail(&job.token(), "again", true).unwrap();
    let t = Instant::now();
    let again = q.lease_next("w", &wait).unwrap().expect("the failed job");
    assert_eq!((again.id, again.attempts), (delayed, 1));
    assert!(t.elapsed() < Duration::from_secs(4), "{:?}", t.elapsed());
    q.close();
}

#[test]
fn closing_the_queue_ends_a_wait_in_progress_with_closed() {
    let s = TestStore::new();
    let q = s.q.clone();
    let waiter = std::thread::spawn(move || {
        let t = Instant::now();
        let r = q
            .lease_next("w", &LeaseOptions::default().wait(Duration::from_secs(10)))
            .map(|j| j.map(|j| j.id));
        (r, t.elapsed())
    });
    std::thread::sleep(Duration::from_millis(200));
    s.q.close();
    let (r, elapsed) = waiter.join().unwrap();
    expect_err(r, ErrorKind::Closed);
    assert!(elapsed < Duration::from_secs(8), "ended after {elapsed:?}");
    // Every later call on the handle answers Closed.
    assert!(s.q.is_closed());
    expect_err(
        s.q.enqueue("embed", b"", EnqueueOptions::default()),
        ErrorKind::Closed,
    );
    expect_err(s.q.stats(), ErrorKind::Closed);
}
