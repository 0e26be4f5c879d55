//! Unique windows: `unique_for` on a keyed enqueue (issue 44).

use super::*;
use telha_jobs::UniqueStates;

const MIN: Duration = Duration::from_secs(60);

fn keyed(key: &str, window: Duration) -> EnqueueOptions {
    EnqueueOptions::default()
        .idempotency_key(key)
        .unique_for(window)
}

fn enq(s: &TestStore, o: EnqueueOptions) -> telha_jobs::Enqueued {
    s.q.enqueue("embed", b"x", o).expect("enqueue")
}

#[test]
fn a_repeat_inside_the_window_answers_the_job_and_after_it_makes_a_new_one() {
    let s = TestStore::new();
    let first = enq(&s, keyed("user-7", 10 * MIN));
    assert!(first.created);
    s.advance(10 * MIN - Duration::from_millis(1));
    let again = enq(&s, keyed("user-7", 10 * MIN));
    assert_eq!((again.id, again.created), (first.id, false));
    // Another key or scope is another window.
    assert!(enq(&s, keyed("user-8", 10 * MIN)).created);
    assert!(enq(&s, keyed("user-7", 10 * MIN).scope(scope(3))).created);
    // At the window's end (the first job still pending): a new job.
    s.advance(Duration::from_millis(1));
    let next = enq(&s, keyed("user-7", 10 * MIN));
    assert!(next.created);
    assert_ne!(next.id, first.id);
    // ...which opened a new window: the repeat answers it.
    let repeat = enq(&s, keyed("user-7", 10 * MIN));
    assert_eq!((repeat.id, repeat.created), (next.id, false));
    // A plain keyed enqueue answers the newest job of the key.
    let plain = enq(&s, EnqueueOptions::default().idempotency_key("user-7"));
    assert_eq!((plain.id, plain.created), (next.id, false));
    assert_eq!(s.q.stats().unwrap().total.pending, 4);
    assert_consistent(&s.q);
}

#[test]
fn the_default_window_holds_after_the_job_finished_and_was_pruned() {
    let mut cfg = test_config();
    cfg.completed_retention = Some(Duration::from_secs(1));
    let s = TestStore::with_config(cfg);
    let first = enq(&s, keyed("once-an-hour", HOUR));
    let j = s.must_lease("w");
    s.q.complete(&j.token(), None).unwrap();
    s.advance(Duration::from_secs(2));
    assert_eq!(s.q.reap().unwrap().pruned, 1);
    assert!(s.q.get(&first.id).unwrap().is_none(), "the record is gone");
    let again = enq(&s, keyed("once-an-hour", HOUR));
    assert_eq!((again.id, again.created), (first.id, false));
    s.advance(HOUR);
    assert!(enq(&s, keyed("once-an-hour", HOUR)).created);
}

#[test]
fn an_active_window_holds_only_while_the_job_is_pending_leased_or_retrying() {
    let s = TestStore::new();
    let active = |k: &str| keyed(k, HOUR).unique_states(UniqueStates::Active);
    let first = enq(&s, active("k"));
    assert!(!enq(&s, active("k")).created, "pending");
    let j = s.must_lease("w");
    assert!(!enq(&s, active("k")).created, "leased");
    s.q.fail(&j.token(), "x", true).unwrap();
    assert!(!enq(&s, active("k")).created, "waiting for its retry");
    s.advance(Duration::from_secs(10));
    let j = s.must_lease("w");
    s.q.complete(&j.token(), None).unwrap();
    let next = enq(&s, active("k"));
    assert!(next.created, "completed: a new job inside the hour");
    assert_ne!(next.id, first.id);
    assert!(!enq(&s, active("k")).created, "the new job's window");
    s.q.cancel(&next.id, "no").unwrap();
    assert!(enq(&s, active("k")).created, "cancelled");
}

#[test]
fn a_window_holds_across_a_reopen() {
    let mut s = TestStore::new();
    let first = enq(&s, keyed("k", HOUR));
    s.reopen();
    let again = enq(&s, keyed("k", HOUR));
    assert_eq!((again.id, again.created), (first.id, false));
    s.advance(HOUR);
    s.reopen();
    assert!(enq(&s, keyed("k", HOUR)).created);
}

#[test]
fn one_job_per_window_from_many_threads_and_within_a_batch() {
    let s = TestStore::new();
    let ids: Vec<JobId> = std::thread::scope(|t| {
        let hs: Vec<_> = (0..8)
            .map(|_| {
                t.spawn(|| {
                    (0..50)
                        .map(|_| enq(&s, keyed("hot", HOUR)).id)
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    let distinct: HashSet<JobId> = ids.into_iter().collect();
    assert_eq!(distinct.len(), 1);
    let batch =
        s.q.enqueue_many(
            (0..3)
                .map(|_| NewJob {
                    kind: "embed".into(),
                    payload: b"x".to_vec(),
                    options: keyed("batch", HOUR),
                })
                .collect(),
        )
        .unwrap();
    assert!(batch[0].created && !batch[1].created && !batch[2].created);
    assert_eq!(batch[1].id, batch[0].id);
}

#[test]
fn the_reaper_prunes_ended_windows_in_bounded_passes() {
    let mut cfg = test_config();
    cfg.prune_batch = 40;
    let s = TestStore::with_config(cfg);
    for i in 0..100 {
        enq(&s, keyed(&format!("k{i}"), MIN));
    }
    // One window renewed after its end: the old index row goes, its row stays.
    s.advance(MIN);
    assert!(enq(&s, keyed("k0", HOUR)).created);
    let pruned = |s: &TestStore| -> u64 {
        let m = s.q.metrics().unwrap();
        m.lines()
            .find_map(|l| l.strip_prefix("telha_jobs_unique_windows_pruned_total "))
            .expect("the metric")
            .trim()
            .parse()
            .unwrap()
    };
    s.q.reap().unwrap();
    assert_eq!(pruned(&s), 40, "one pass: at most prune_batch rows");
    s.q.reap().unwrap();
    s.q.reap().unwrap();
    assert_eq!(pruned(&s), 99, "k0 was renewed");
    s.q.reap().unwrap();
    assert_eq!(pruned(&s), 99);
    // Pruned windows are gone: a new job each; the renewed one holds.
    assert!(enq(&s, keyed("k5", MIN)).created);
    assert!(!enq(&s, keyed("k0", HOUR)).created);
    s.advance(HOUR);
    s.q.reap().unwrap();
    assert_eq!(pruned(&s), 101);
}

#[test]
fn bad_windows_are_refused_and_write_nothing() {
    let s = TestStore::new();
    let cases = [
        (
            EnqueueOptions::default().unique_for(HOUR),
            "unique_for needs an idempotency_key",
        ),
        (
            keyed("k", Duration::ZERO),
            "unique_for must be at least 1ms",
        ),
        (
            keyed("k", Duration::from_micros(10)),
            "unique_for must be at least 1ms",
        ),
        (
            keyed("k", Duration::MAX),
            "unique_for must be at most 100 years",
        ),
        (
            EnqueueOptions::default()
                .idempotency_key("k")
                .unique_states(UniqueStates::Active),
            "unique_states needs unique_for",
        ),
    ];
    for (o, want) in cases {
        let err = s.q.enqueue("embed", b"x", o).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert!(err.to_string().contains(want), "{err}");
    }
    // In a batch: all or nothing.
    let err =
        s.q.enqueue_many(vec![
            NewJob {
                kind: "embed".into(),
                payload: b"x".to_vec(),
                options: keyed("good", HOUR),
            },
            NewJob {
                kind: "embed".into(),
                payload: b"x".to_vec(),
                options: keyed("bad", Duration::ZERO),
            },
        ])
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert_eq!(s.q.stats().unwrap().total.pending, 0);
    assert!(
        enq(&s, keyed("good", HOUR)).created,
        "no window was written"
    );
    assert!("all".parse::<UniqueStates>().is_err());
    assert_eq!(
        "active".parse::<UniqueStates>().unwrap(),
        UniqueStates::Active
    );
}
