//! One store, one engine; list; metrics; stats.

use super::*;

// -------------------------------------------------- one store, one engine

#[test]
fn a_second_open_in_the_process_shares_the_engine() {
    let s = TestStore::new();
    // Another clock: the shared engine keeps the first open's clock.
    let other_clock = Arc::new(ManualClock::new(5));
    let q2 = Queue::open_with_clock(s.path(), s.config.clone(), other_clock).unwrap();
    let a = s.enqueue("embed");
    let b = q2
        .enqueue("embed", b"", EnqueueOptions::default())
        .unwrap()
        .id;
    assert_eq!(q2.get(&a).unwrap().unwrap().id, a);
    assert_eq!(s.get(&b).created_at, s.now());
    let j = q2
        .lease_next("w", &LeaseOptions::default())
        .unwrap()
        .unwrap();
    assert_eq!(j.id, a);
    s.q.complete(&j.token(), None).unwrap();
    assert_eq!(q2.stats().unwrap().total.completed, 1);

    let mut different = s.config.clone();
    different.max_attempts = 7;
    expect_err(
        Queue::open_with_clock(s.path(), different, s.dyn_clock()),
        ErrorKind::InvalidArgument,
    );

    // Closing one handle leaves the other working.
    q2.close();
    expect_err(q2.get(&a), ErrorKind::Closed);
    assert_eq!(s.get(&a).state, State::Completed);
    // Closing both releases the store: a fresh open works and sees the jobs.
    s.q.close();
    let q3 = Queue::open_with_clock(s.path(), s.config.clone(), s.dyn_clock()).unwrap();
    assert_eq!(q3.get(&b).unwrap().unwrap().state, State::Pending);
    q3.close();
}

#[test]
fn jobs_and_live_leases_survive_a_reopen() {
    let mut s = TestStore::new();
    let a = s.enqueue("embed");
    let b = s.enqueue_with("ingest:pdf", EnqueueOptions::default().delay(HOUR));
    let job = s.must_lease("w");
    s.reopen();
    assert_eq!(s.get(&a).state, State::Leased);
    // The lease is still the worker's after the reopen.
    s.q.complete(&job.token(), Some(b"ok")).unwrap();
    assert!(s.lease("w").is_none());
    s.advance(HOUR);
    assert_eq!(lease_with(&s, &kinds(&["ingest:*"])).unwrap().id, b);
    assert_consistent(&s.q);
}

#[test]
fn a_lease_held_when_the_store_closed_is_reaped_after_its_ttl_and_leased_again() {
    let mut s = TestStore::new();
    let id = s.enqueue("embed");
    let lost = s.must_lease("crashed");
    s.reopen();
    s.advance(TTL);
    assert_eq!(s.q.reap().unwrap().expired, 1);
    expect_err(s.q.complete(&lost.token(), None), ErrorKind::Aborted);
    s.advance(Duration::from_secs(10));
    let again = s.must_lease("w");
    assert_eq!((again.id, again.attempts), (id, 1));
    s.q.complete(&again.token(), None).unwrap();
    assert_eq!(s.transitions(&id).last().unwrap(), "completed");
    assert_consistent(&s.q);
}

// ------------------------------------------------------------------ list

#[test]
fn list_pages_through_every_job_once_in_key_order() {
    let s = TestStore::new();
    let ids: Vec<JobId> = (0..7).map(|_| s.enqueue("embed")).collect();
    assert_eq!(s.must_lease("w").id, ids[0]);
    let mut q = ListQuery {
        limit: 3,
        ..ListQuery::default()
    };
    let mut seen = Vec::new();
    loop {
        let page = s.q.list(&q).unwrap();
        assert!(page.jobs.len() <= 3);
        assert!(page.corrupt.is_empty());
        seen.extend(page.jobs.iter().map(|j| j.id));
        match page.next {
            Some(next) => q.after = Some(next),
            None => break,
        }
    }
    // Key order: pending (by ready-at, id) before leased.
    let mut want = ids[1..].to_vec();
    want.push(ids[0]);
    assert_eq!(seen, want);

    let leased =
        s.q.list(&ListQuery {
            state: Some(State::Leased),
            ..ListQuery::default()
        })
        .unwrap();
    let leased: Vec<JobId> = leased.jobs.iter().map(|j| j.id).collect();
    assert_eq!(leased, [ids[0]]);
}

// --------------------------------------------------------------- metrics

#[test]
fn metrics_count_dead_letters_and_expired_leases() {
    let s = TestStore::new();
    let text = s.q.metrics().unwrap();
    assert_eq!(metric(&text, "telha_jobs_dead_letter_jobs"), Some(0.0));

    // One job dead by a non-retryable failure.
    s.enqueue("embed");
    s.q.fail(&s.must_lease("w").token(), "no", false).unwrap();
    // Two leases expire: one with attempts left, one without.
    s.enqueue("embed");
    s.enqueue_with("embed", EnqueueOptions::default().max_attempts(1));
    s.must_lease("w");
    s.must_lease("w");
    s.advance(TTL);
    let r = s.q.reap().unwrap();
    assert_eq!((r.expired, r.dead), (1, 1));

    let text = s.q.metrics().unwrap();
    let dead = s.q.stats().unwrap().total.dead;
    assert_eq!(dead, 2);
    assert_eq!(
        metric(&text, "telha_jobs_dead_letter_jobs"),
        Some(dead as f64),
        "{text}"
    );
    assert_eq!(
        metric(
            &text,
            "telha_jobs_transitions_total{transition=\"lease_expired\"}"
        ),
        Some(2.0),
        "{text}"
    );
    assert_eq!(
        metric(&text, "telha_jobs_jobs{kind=\"embed\",state=\"dead\"}"),
        Some(2.0),
        "{text}"
    );
    assert_eq!(metric(&text, "telha_jobs_leases_in_flight"), Some(0.0));
}

// ----------------------------------------------------------------- stats

#[test]
fn stats_count_every_job_by_kind_and_state() {
    let s = TestStore::new();
    s.enqueue("embed");
    s.enqueue("embed");
    s.enqueue("ingest:pdf");
    let j = lease_with(&s, &kinds(&["ingest:pdf"])).unwrap();
    s.q.fail(&j.token(), "x", true).unwrap();
    s.must_lease("w");
    let stats = s.q.stats().unwrap();
    let by: BTreeMap<&str, (u64, u64, u64)> = stats
        .by_kind
        .iter()
        .map(|(k, c)| (k.as_str(), (c.pending, c.leased, c.failed)))
        .collect();
    assert_eq!(
        by,
        BTreeMap::from([("embed", (1, 1, 0)), ("ingest:pdf", (0, 0, 1))])
    );
    assert_eq!(stats.total.total(), 3);
    assert_consistent(&s.q);
}

// ----------------------------------------------------------------- close

/// The last handle's `close` returns once RocksDB has let go of the
/// directory, even when another thread was inside a call at that moment
/// (a Node stall watcher's property read, a stream's pass): a process
/// deleting or reopening the store right after `close` must not find it
/// still open. Checked by opening the directory with RocksDB itself,
/// which refuses a directory whose LOCK this process still holds.
#[test]
fn close_returns_after_rocksdb_let_go_while_another_thread_was_in_a_call() {
    for round in 0..30 {
        let s = TestStore::new();
        for _ in 0..20 {
            s.enqueue("embed");
        }
        let busy = s.q.clone();
        let started = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = started.clone();
        let caller = std::thread::spawn(move || {
            let mut calls = 0u64;
            while busy.stats().is_ok() {
                calls += 1;
                flag.store(true, std::sync::atomic::Ordering::SeqCst);
            }
            calls
        });
        // Let the caller be inside its calls when the close comes.
        while !started.load(std::sync::atomic::Ordering::SeqCst) {
            std::thread::yield_now();
        }
        s.q.close();
        let opts = rocksdb::Options::default();
        let families = rocksdb::DB::list_cf(&opts, s.path()).expect("list families");
        let raw = rocksdb::DB::open_cf(&opts, s.path(), families);
        assert!(
            raw.is_ok(),
            "round {round}: RocksDB still held the store after close: {:?}",
            raw.err()
        );
        drop(raw);
        assert!(
            caller.join().unwrap() > 0,
            "round {round}: the caller never got in"
        );
    }
}
