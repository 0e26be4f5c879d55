//! Job control beyond the conformance scenarios: durability of cancel
//! requests, pauses and lease starts across a reopen, expiry at scale and
//! its cost, indexes left clean by every move.

use super::*;
use telha_jobs::{CancelFilter, CancelOutcome, Failure, PauseTarget};

fn kind_target(k: &str) -> PauseTarget {
    PauseTarget::Kind(k.parse().unwrap())
}

#[test]
fn a_cancel_request_survives_a_reopen_and_the_expiry_records_it() {
    let mut s = TestStore::new();
    let id = s.enqueue("embed");
    let job = s.must_lease("w");
    assert_eq!(
        s.q.cancel(&id, "operator").unwrap(),
        CancelOutcome::Requested
    );
    s.reopen();
    // The request is on disk: the holder's heartbeat after the restart
    // still answers cancelled.
    let r = s.q.extend(&[job.token()], "w").unwrap();
    expect_err(r.into_iter().next().unwrap(), ErrorKind::Cancelled);
    assert_eq!(s.get(&id).cancel_requested.as_deref(), Some("operator"));
    // The holder never comes back: the lease expires into cancelled.
    s.advance(TTL + Duration::from_secs(1));
    let rep = s.q.reap().unwrap();
    assert_eq!((rep.expired, rep.dead), (0, 0));
    let info = s.get(&id);
    assert_eq!(info.state, State::Cancelled);
    assert_eq!(info.attempts, 0, "a cancel is not an attempt");
    assert!(s.lease("w").is_none());
    assert_eq!(s.q.stats().unwrap().total.cancelled, 1);
    assert_consistent(&s.q);
}

#[test]
fn complete_many_records_a_cancelled_lease_as_cancelled_and_answers_so() {
    let s = TestStore::new();
    let a = s.enqueue("embed");
    let b = s.enqueue("embed");
    let (ja, jb) = (s.must_lease("w"), s.must_lease("w"));
    s.q.cancel(&a, "stop").unwrap();
    let mut out =
        s.q.complete_many(vec![
            (ja.token(), Some(b"ra".to_vec())).into(),
            (jb.token(), Some(b"rb".to_vec())).into(),
        ])
        .unwrap()
        .into_iter();
    expect_err(out.next().unwrap(), ErrorKind::Cancelled);
    assert!(out.next().unwrap().is_ok());
    assert_eq!(s.get(&a).state, State::Cancelled);
    assert_eq!(s.get(&a).result.as_deref(), Some(&b"ra"[..]));
    assert_eq!(s.get(&b).state, State::Completed);
    assert_consistent(&s.q);
}

#[test]
fn cancel_and_delete_remove_every_index_entry_of_a_large_payload_job() {
    let s = TestStore::new();
    let big = vec![7u8; 64 * 1024];
    let opts = EnqueueOptions::default()
        .idempotency_key("big")
        .expires_in(HOUR);
    let id = s.q.enqueue("embed", &big, opts.clone()).unwrap().id;
    s.q.cancel(&id, "x").unwrap();
    assert_eq!(s.get(&id).payload, big);
    assert_consistent(&s.q);
    s.q.delete(&id).unwrap();
    assert!(s.q.get(&id).unwrap().is_none());
    assert_consistent(&s.q);
    // The key is free again.
    let again = s.q.enqueue("embed", &big, opts).unwrap();
    assert!(again.created);
    assert_consistent(&s.q);
}

#[test]
fn pauses_survive_a_reopen_and_show_in_stats_get_and_metrics() {
    let mut s = TestStore::new();
    let a = s.enqueue("embed");
    let sc = scope(9);
    let b = s.enqueue_with("ocr", EnqueueOptions::default().scope(sc));
    assert!(s.q.pause(&kind_target("embed")).unwrap());
    assert!(s.q.pause(&PauseTarget::Scope(sc)).unwrap());
    s.reopen();
    let st = s.q.stats().unwrap();
    assert_eq!(st.paused.kinds, vec!["embed".parse().unwrap()]);
    assert_eq!(st.paused.scopes, vec![sc]);
    assert!(s.get(&a).paused && s.get(&b).paused);
    let m = s.q.metrics().unwrap();
    assert_eq!(metric(&m, "telha_jobs_paused{kind=\"embed\"}"), Some(1.0));
    assert_eq!(
        metric(&m, &format!("telha_jobs_paused{{scope=\"{sc}\"}}")),
        Some(1.0)
    );
    assert!(s.lease("w").is_none());
    assert!(s.q.resume(&kind_target("embed")).unwrap());
    assert_eq!(s.must_lease("w").id, a);
    assert!(!s.q.resume(&kind_target("embed")).unwrap());
    assert!(s.q.resume(&PauseTarget::Scope(sc)).unwrap());
    assert_eq!(s.must_lease("w").id, b);
    assert!(metric(&s.q.metrics().unwrap(), "telha_jobs_paused{kind=\"embed\"}").is_none());
}

#[test]
fn resume_wakes_a_waiting_poller() {
    let s = TestStore::new();
    s.enqueue("embed");
    s.q.pause(&kind_target("embed")).unwrap();
    let q = s.q.clone();
    let t = std::thread::spawn(move || {
        let started = Instant::now();
        let j = q
            .lease_next("w", &LeaseOptions::default().wait(Duration::from_secs(20)))
            .unwrap();
        (j, started.elapsed())
    });
    std::thread::sleep(Duration::from_millis(200));
    s.q.resume(&kind_target("embed")).unwrap();
    let (j, took) = t.join().unwrap();
    assert!(j.is_some(), "the waiting poller got the resumed job");
    assert!(
        took < Duration::from_secs(10),
        "woken by the resume: {took:?}"
    );
}

#[test]
fn a_pause_is_exact_no_lease_of_paused_work_after_it_returns() {
    let s = TestStore::new();
    for _ in 0..2000 {
        s.enqueue("embed");
    }
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let paused_at = Arc::new(std::sync::atomic::AtomicU64::new(u64::MAX));
    let counter = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let pollers: Vec<_> = (0..4)
        .map(|i| {
            let (q, stop, paused_at, counter) = (
                s.q.clone(),
                stop.clone(),
                paused_at.clone(),
                counter.clone(),
            );
            std::thread::spawn(move || {
                let mut late = 0;
                while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                    let seen_pause = paused_at.load(std::sync::atomic::Ordering::SeqCst);
                    if let Some(j) = q
                        .lease_next(&format!("w{i}"), &LeaseOptions::default())
                        .unwrap()
                    {
                        let n = counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        // Only a lease that began after pause() returned counts.
                        if seen_pause != u64::MAX && n > seen_pause {
                            late += 1;
                        }
                        q.release(&j.token()).unwrap();
                    }
                }
                late
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(100));
    s.q.pause(&kind_target("embed")).unwrap();
    paused_at.store(
        counter.load(std::sync::atomic::Ordering::SeqCst),
        std::sync::atomic::Ordering::SeqCst,
    );
    std::thread::sleep(Duration::from_millis(200));
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let late: u32 = pollers.into_iter().map(|p| p.join().unwrap()).sum();
    assert_eq!(late, 0, "leases of a paused kind after pause() returned");
    assert_eq!(s.q.stats().unwrap().total.pending, 2000);
    assert_consistent(&s.q);
}

#[test]
fn max_lease_total_counts_from_the_lease_start_across_a_reopen() {
    let mut cfg = test_config();
    cfg.kinds.insert(
        "slow".into(),
        KindConfig {
            max_lease_total: Some(Some(Duration::from_secs(600))),
            ..KindConfig::default()
        },
    );
    let mut s = TestStore::with_config(cfg);
    s.enqueue("slow");
    let job = s.must_lease("w");
    s.advance(Duration::from_secs(200));
    let d = s.q.extend(&[job.token()], "w").unwrap().remove(0).unwrap();
    assert_eq!(
        d,
        s.now() + 300_000,
        "a full TTL while well inside the limit"
    );
    s.advance(Duration::from_secs(200));
    let d = s.q.extend(&[job.token()], "w").unwrap().remove(0).unwrap();
    assert_eq!(d, job.deadline - 300_000 + 600_000, "capped at the limit");
    s.reopen();
    s.advance(Duration::from_secs(201));
    let r = s.q.extend(&[job.token()], "w").unwrap();
    let e = expect_err(r.into_iter().next().unwrap(), ErrorKind::Aborted);
    assert!(e.to_string().contains("max_lease_total"), "{e}");
}

#[test]
fn expiry_at_scale_goes_through_the_reaper_in_bounded_passes() {
    let mut cfg = test_config();
    cfg.prune_batch = 1500;
    let s = TestStore::with_config(cfg);
    let jobs: Vec<NewJob> = (0..4000)
        .map(|i| {
            NewJob::new("embed", vec![1]).with(
                EnqueueOptions::default().expires_in(Duration::from_secs(if i % 4 == 0 {
                    7200
                } else {
                    60
                })),
            )
        })
        .collect();
    s.q.enqueue_many(jobs).unwrap();
    assert_eq!(s.q.reap().unwrap().expired_unstarted, 0, "nothing due yet");
    s.advance(Duration::from_secs(61));
    let first = s.q.reap().unwrap().expired_unstarted;
    assert_eq!(first, 1500, "one pass expires at most prune_batch");
    let second = s.q.reap().unwrap().expired_unstarted;
    assert_eq!(first + second, 3000);
    let st = s.q.stats().unwrap();
    assert_eq!((st.total.dead, st.total.pending), (3000, 1000));
    let m = s.q.metrics().unwrap();
    assert_eq!(
        metric(&m, "telha_jobs_transitions_total{transition=\"expired\"}"),
        Some(3000.0)
    );
    assert_consistent(&s.q);
    // The ones left run normally and leave the index when leased.
    let j = s.must_lease("w");
    s.q.complete(&j.token(), None).unwrap();
    assert_consistent(&s.q);
}

#[test]
fn an_operator_retry_of_an_expired_job_runs_it() {
    let s = TestStore::new();
    let id = s.enqueue_with("embed", EnqueueOptions::default().expires_in(HOUR));
    s.advance(2 * HOUR);
    s.q.reap().unwrap();
    assert_eq!(s.get(&id).state, State::Dead);
    s.q.retry(&id).unwrap();
    assert_eq!(s.must_lease("w").id, id);
    assert_consistent(&s.q);
}

#[test]
fn cancel_many_crosses_batches_and_scopes() {
    let s = TestStore::new();
    for i in 0..2500u32 {
        let sc = scope((i % 3) as u8 + 1);
        s.enqueue_with("embed", EnqueueOptions::default().scope(sc));
    }
    s.enqueue("ocr");
    let r =
        s.q.cancel_many(&CancelFilter {
            kind: Some("embed".parse().unwrap()),
            reason: "bad batch".into(),
            ..CancelFilter::default()
        })
        .unwrap();
    assert_eq!((r.cancelled, r.requested), (2500, 0));
    let st = s.q.stats().unwrap();
    assert_eq!((st.total.cancelled, st.total.pending), (2500, 1));
    assert_consistent(&s.q);
}

#[test]
fn absurd_retry_in_and_snooze_delays_are_refused_and_change_nothing() {
    let s = TestStore::new();
    let id = s.enqueue("embed");
    let j = s.must_lease("w");
    let far = Duration::from_secs(101 * 365 * 24 * 3600);
    expect_err(s.q.snooze(&j.token(), far), ErrorKind::InvalidArgument);
    expect_err(
        s.q.fail_with(Failure::new(j.token(), "x").retry_in(far)),
        ErrorKind::InvalidArgument,
    );
    // Nothing changed.
    assert_eq!(s.get(&id).state, State::Leased);
    s.q.fail_with(Failure::new(j.token(), "x").retry_in(Duration::from_secs(5)))
        .unwrap();
    assert_eq!(s.get(&id).state_ts, s.now() + 5000);
    assert_consistent(&s.q);
}
