//! Operator-facing core API: read-only opens, purge, and cancelling a wait.

mod common;

use std::time::{Duration, Instant};

use common::*;
use telha_jobs::{
    CancelWait, EnqueueOptions, ErrorKind, LeaseOptions, ListQuery, Queue, Scope, State,
};

fn dead_job(s: &TestStore, kind: &str) -> telha_jobs::JobId {
    let id = s.enqueue(kind);
    let job = s.must_lease("w");
    assert_eq!(job.id, id);
    s.q.fail(&job.token(), "poison", false).unwrap();
    id
}

#[test]
fn a_read_only_open_sees_the_owners_writes_and_refuses_to_write() {
    let s = TestStore::new();
    let dead = dead_job(&s, "embed");
    let id = s.enqueue("embed");
    let ro = Queue::open_read_only(s.path()).expect("read-only open beside the owner");
    assert!(ro.is_read_only());
    assert!(!s.q.is_read_only());
    assert_eq!(ro.get(&id).unwrap().unwrap().state, State::Pending);
    assert_eq!(ro.get(&dead).unwrap().unwrap().state, State::Dead);
    assert_eq!(ro.stats().unwrap().total.dead, 1);
    assert_eq!(ro.stats().unwrap().total.pending, 1);
    let page = ro
        .list(&ListQuery {
            state: Some(State::Dead),
            ..ListQuery::default()
        })
        .unwrap();
    assert_eq!(page.jobs.len(), 1);
    assert!(ro
        .metrics()
        .unwrap()
        .contains("telha_jobs_dead_letter_jobs 1"));
    assert!(ro.check().unwrap().problems.is_empty());
    for err in [
        ro.enqueue("embed", b"", EnqueueOptions::default())
            .map(|_| ()),
        ro.retry(&dead),
        ro.lease_next("w", &LeaseOptions::default()).map(|_| ()),
        ro.reap().map(|_| ()),
        ro.purge(State::Dead, u64::MAX).map(|_| ()),
    ] {
        let e = expect_err(err, ErrorKind::InvalidArgument);
        assert!(e.to_string().contains("read-only"), "{e}");
    }
    // Closing the read-only view leaves the owner (and its pid file) alone.
    ro.close();
    drop(ro);
    assert!(s.path().join(telha_jobs::store::PID_FILE).exists());
    s.q.retry(&dead).unwrap();
    assert_consistent(&s.q);
}

#[test]
fn a_read_only_open_with_the_owners_config_reports_effective_max_attempts() {
    let s = TestStore::new();
    let dead = dead_job(&s, "embed");
    let waiting =
        s.q.enqueue("embed", b"", EnqueueOptions::default())
            .unwrap()
            .id;
    let default_view = Queue::open_read_only(s.path()).unwrap();
    assert_eq!(default_view.get(&waiting).unwrap().unwrap().max_attempts, 5);
    let mut cfg = telha_jobs::Config::default();
    cfg.kinds.insert(
        "embed".into(),
        telha_jobs::KindConfig {
            max_attempts: Some(3),
            ..Default::default()
        },
    );
    let view = Queue::open_read_only_with_config(s.path(), cfg.clone()).unwrap();
    // A job that never failed reads the ceiling from the config given...
    assert_eq!(view.get(&waiting).unwrap().unwrap().max_attempts, 3);
    // ...a dead one keeps the ceiling that decided it (the owner's 5).
    assert_eq!(view.get(&dead).unwrap().unwrap().max_attempts, 5);
    assert_eq!(view.config().unwrap().reaper_interval, Duration::ZERO);
    cfg.max_attempts = 0;
    expect_err(
        Queue::open_read_only_with_config(s.path(), cfg),
        ErrorKind::InvalidArgument,
    );
}

#[test]
fn a_read_only_open_of_a_missing_store_is_not_found_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    let e = expect_err(Queue::open_read_only(&missing), ErrorKind::NotFound);
    assert!(e.to_string().contains("nope"), "{e}");
    assert!(!missing.exists());
}

#[test]
fn purge_deletes_exactly_the_old_dead_jobs_with_their_indexes() {
    let s = TestStore::new();
    let old: Vec<_> = (0..3).map(|_| dead_job(&s, "embed")).collect();
    let cutoff = s.now() + 1;
    s.advance(SEC);
    let young = dead_job(&s, "ingest:pdf");
    let keep = s.enqueue_with(
        "embed",
        EnqueueOptions::default()
            .scope(Scope::from_bytes([7; 16]))
            .idempotency_key("k1"),
    );
    let r = s.q.purge(State::Dead, cutoff).unwrap();
    assert_eq!(r.purged, 3);
    for id in &old {
        assert!(s.q.get(id).unwrap().is_none());
    }
    assert_eq!(s.get(&young).state, State::Dead);
    assert_eq!(s.get(&keep).state, State::Pending);
    assert_eq!(s.q.stats().unwrap().total.dead, 1);
    assert_eq!(
        metric(&s.q.metrics().unwrap(), "telha_jobs_dead_letter_jobs"),
        Some(1.0)
    );
    assert_eq!(
        metric(
            &s.q.metrics().unwrap(),
            "telha_jobs_transitions_total{transition=\"purged\"}"
        ),
        Some(3.0)
    );
    assert_consistent(&s.q);
}

#[test]
fn purge_of_completed_jobs_frees_their_idempotency_keys() {
    let s = TestStore::new();
    let opts = || EnqueueOptions::default().idempotency_key("once");
    let first = s.enqueue_with("embed", opts());
    let job = s.must_lease("w");
    s.q.complete(&job.token(), Some(b"ok")).unwrap();
    s.advance(SEC);
    assert_eq!(s.q.purge(State::Completed, s.now()).unwrap().purged, 1);
    let again = s.q.enqueue("embed", b"", opts()).unwrap();
    assert!(again.created);
    assert_ne!(again.id, first);
    assert_consistent(&s.q);
}

#[test]
fn purge_takes_only_completed_or_dead() {
    let s = TestStore::new();
    for st in [State::Pending, State::Leased, State::Failed] {
        expect_err(s.q.purge(st, u64::MAX), ErrorKind::InvalidArgument);
    }
}

#[test]
fn purge_of_many_dead_jobs_runs_in_batches_and_agrees_with_a_scan() {
    let s = TestStore::new();
    let n = 2_500;
    let jobs: Vec<_> = (0..n)
        .map(|i| telha_jobs::NewJob::new("embed", format!("{i}").into_bytes()))
        .collect();
    s.q.enqueue_many(jobs).unwrap();
    for job in s.q.lease_many("w", n, &LeaseOptions::default()).unwrap() {
        s.q.fail(&job.token(), "bad", false).unwrap();
    }
    s.advance(SEC);
    assert_eq!(s.q.purge(State::Dead, s.now()).unwrap().purged, n);
    assert_eq!(s.q.stats().unwrap().total.total(), 0);
    assert_consistent(&s.q);
}

#[test]
fn a_cancelled_wait_returns_nothing_at_once() {
    let s = TestStore::new();
    let cancel = CancelWait::new();
    let opts = LeaseOptions::default()
        .wait(Duration::from_secs(30))
        .cancel(cancel.clone());
    let q = s.q.clone();
    let t0 = Instant::now();
    let h = std::thread::spawn(move || q.lease_next("w", &opts));
    std::thread::sleep(Duration::from_millis(50));
    cancel.cancel();
    let got = h.join().unwrap().expect("a cancelled wait is not an error");
    assert!(got.is_none());
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    assert!(cancel.is_cancelled());
}

#[test]
fn a_cancelled_token_still_takes_a_ready_job() {
    let s = TestStore::new();
    let id = s.enqueue("embed");
    let cancel = CancelWait::new();
    cancel.cancel();
    let opts = LeaseOptions::default()
        .wait(Duration::from_secs(30))
        .cancel(cancel);
    assert_eq!(s.q.lease_next("w", &opts).unwrap().unwrap().id, id);
    assert!(s.q.lease_next("w", &opts).unwrap().is_none());
}

#[test]
fn complete_many_completes_the_live_leases_and_answers_each_item() {
    let s = TestStore::with_config(telha_jobs::Config {
        max_payload_bytes: 1024,
        ..test_config()
    });
    for i in 0..5 {
        s.enqueue_with("embed", EnqueueOptions::default().priority(i));
    }
    let jobs = s.q.lease_many("w", 5, &LeaseOptions::default()).unwrap();
    assert_eq!(jobs.len(), 5);
    // jobs[3]'s lease goes stale: it expires and is leased again.
    s.advance(s.config.lease_ttl + SEC);
    s.q.reap().unwrap();
    s.advance(SEC * 60);
    let again = s.q.lease_many("w2", 5, &LeaseOptions::default()).unwrap();
    assert_eq!(again.len(), 5);
    let fresh: Vec<_> = again.iter().map(|j| j.token()).collect();
    let stale = jobs[3].token();
    let unknown = telha_jobs::LeaseToken {
        id: telha_jobs::JobId::from_bytes([9; 16]),
        generation: 1,
    };
    let items = vec![
        (fresh[0], Some(b"r0".to_vec())),
        (stale, None),
        (fresh[1], None),
        (unknown, None),
        (fresh[2], Some(vec![0; 2048])),
        (fresh[1], None),
        (fresh[4], Some(b"r4".to_vec())),
    ];
    let answers =
        s.q.complete_many(items.into_iter().map(Into::into).collect())
            .unwrap();
    let kinds: Vec<Option<ErrorKind>> = answers
        .iter()
        .map(|a| a.as_ref().err().map(|e| e.kind()))
        .collect();
    assert_eq!(
        kinds,
        vec![
            None,
            Some(ErrorKind::Aborted),
            None,
            Some(ErrorKind::NotFound),
            Some(ErrorKind::InvalidArgument),
            None, // fresh[1] again: answered as its completion
            None,
        ]
    );
    assert_eq!(s.get(&fresh[0].id).state, State::Completed);
    assert_eq!(s.get(&fresh[0].id).result.as_deref(), Some(&b"r0"[..]));
    assert_eq!(s.get(&fresh[1].id).state, State::Completed);
    assert_eq!(s.get(&fresh[4].id).result.as_deref(), Some(&b"r4"[..]));
    for t in [fresh[2], fresh[3]] {
        assert_eq!(s.get(&t.id).state, State::Leased, "untouched");
    }
    let stats = s.q.stats().unwrap().total;
    assert_eq!((stats.completed, stats.leased), (3, 2));
    // The untouched leases still settle normally.
    s.q.complete(&fresh[2], None).unwrap();
    assert!(s.q.complete_many(Vec::new()).unwrap().is_empty());
    assert_consistent(&s.q);
}

#[test]
fn check_reads_one_snapshot_so_a_busy_store_shows_no_disk_disagreements() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let cfg = telha_jobs::Config {
        lease_ttl: Duration::from_millis(20),
        reaper_interval: Duration::from_millis(2),
        backoff: telha_jobs::Backoff {
            base: Duration::from_millis(1),
            factor: 1.0,
            cap: Duration::from_millis(1),
        },
        max_attempts: 1000,
        ..telha_jobs::Config::default()
    };
    let q = Queue::open(dir.path(), cfg).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..2)
        .map(|t| {
            let (q, stop) = (q.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    i += 1;
                    q.enqueue("embed", b"x", EnqueueOptions::default()).unwrap();
                    if let Some(job) = q.lease_next("w", &LeaseOptions::default()).unwrap() {
                        // Complete, fail, or leave the lease to expire and
                        // be moved by the reaper while check scans.
                        let _ = match (i + t) % 3 {
                            0 => q.complete(&job.token(), None),
                            1 => q.fail(&job.token(), "again", true),
                            _ => Ok(()),
                        };
                    }
                }
            })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_millis(1500);
    let mut scans = 0;
    while Instant::now() < deadline {
        let report = q.check().unwrap();
        scans += 1;
        let disk: Vec<_> = report
            .problems
            .iter()
            .filter(|p| !p.contains("in-memory"))
            .collect();
        assert!(disk.is_empty(), "scan {scans}: {disk:?}");
    }
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().unwrap();
    }
    assert!(scans >= 3);
    // Once quiet (the abandoned leases expired and reaped), memory agrees too.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(q.stats().unwrap().total.leased, 0);
    let report = q.check().unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}

#[test]
fn complete_many_completes_the_live_lease_named_after_a_stale_one_of_the_same_job() {
    let s = TestStore::new();
    s.q.enqueue("embed", b"", EnqueueOptions::default())
        .unwrap();
    let first =
        s.q.lease_next("w", &LeaseOptions::default())
            .unwrap()
            .unwrap();
    s.advance(SEC * 301);
    s.q.reap().unwrap();
    s.advance(SEC * 60);
    let second =
        s.q.lease_next("w", &LeaseOptions::default())
            .unwrap()
            .unwrap();
    assert_eq!((first.id, second.generation), (second.id, 2));
    let answers =
        s.q.complete_many(vec![
            telha_jobs::Completion::new(first.token(), Some(b"late".to_vec())),
            telha_jobs::Completion::new(second.token(), Some(b"live".to_vec())),
        ])
        .unwrap();
    assert_eq!(answers[0].as_ref().unwrap_err().kind(), ErrorKind::Aborted);
    assert!(answers[1].is_ok(), "{:?}", answers[1]);
    let info = s.get(&second.id);
    assert_eq!(
        (info.state, info.result.as_deref()),
        (State::Completed, Some(&b"live"[..]))
    );
}
