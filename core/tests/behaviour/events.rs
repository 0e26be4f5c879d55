//! Waiting for a job, subscribing to transitions, progress (issue 18).

use super::*;
use std::collections::HashMap;
use telha_jobs::watch::{EventFilter, JobEvent, SubscribeOptions};
use telha_jobs::{Event, Failure};

fn drain_all(sub: &telha_jobs::Subscription) -> Vec<JobEvent> {
    let mut out = Vec::new();
    while let Some(ev) = sub.recv(Some(Duration::from_millis(200))).unwrap() {
        out.push(ev);
    }
    out
}

#[test]
fn wait_returns_the_completed_job_with_its_result_woken_by_the_commit() {
    let s = TestStore::new();
    let id = s.enqueue("embed");
    let q = s.q.clone();
    let waiter = std::thread::spawn(move || {
        let t0 = Instant::now();
        (q.wait(&id, Duration::from_secs(30)).unwrap(), t0.elapsed())
    });
    std::thread::sleep(Duration::from_millis(50));
    let job = s.must_lease("w");
    s.q.complete(&job.token(), Some(b"vec")).unwrap();
    let (info, took) = waiter.join().unwrap();
    assert_eq!(info.state, State::Completed);
    assert_eq!(info.result.as_deref(), Some(&b"vec"[..]));
    assert!(
        took < Duration::from_secs(10),
        "woken by the commit: {took:?}"
    );
}

#[test]
fn several_waiters_on_one_job_all_wake_and_the_watches_unregister() {
    let s = TestStore::new();
    let id = s.enqueue("embed");
    let waiters: Vec<_> = (0..8)
        .map(|_| {
            let q = s.q.clone();
            std::thread::spawn(move || q.wait(&id, Duration::from_secs(30)).unwrap().state)
        })
        .collect();
    std::thread::sleep(Duration::from_millis(50));
    let job = s.must_lease("w");
    s.q.fail_with(Failure {
        retryable: false,
        ..Failure::new(job.token(), "bad input")
    })
    .unwrap();
    for w in waiters {
        assert_eq!(w.join().unwrap(), State::Dead);
    }
    assert_eq!(
        s.q.get(&id).unwrap().unwrap().last_error.as_deref(),
        Some("bad input")
    );
    assert!(s.q.metrics().unwrap().contains("telha_jobs_job_watches 0"));
}

#[test]
fn a_wait_times_out_with_the_current_state_and_unknown_ids_are_not_found() {
    let s = TestStore::new();
    let id = s.enqueue("embed");
    let t0 = Instant::now();
    let info = s.q.wait(&id, Duration::from_millis(150)).unwrap();
    assert_eq!(info.state, State::Pending);
    assert!(t0.elapsed() >= Duration::from_millis(150));
    let missing = JobId::from_bytes([9; 16]);
    assert_eq!(
        s.q.wait(&missing, SEC).unwrap_err().kind(),
        ErrorKind::NotFound
    );
    // Already terminal: at once.
    let job = s.must_lease("w");
    s.q.complete(&job.token(), None).unwrap();
    let t0 = Instant::now();
    assert_eq!(s.q.wait(&id, HOUR).unwrap().state, State::Completed);
    assert!(t0.elapsed() < Duration::from_secs(5));
}

#[test]
fn a_cancelled_watch_ends_its_wait_and_closing_the_store_wakes_waiters() {
    let s = TestStore::new();
    let id = s.enqueue("embed");
    let w = s.q.watch(&id).unwrap();
    std::thread::scope(|sc| {
        let h = sc.spawn(|| w.wait(None));
        std::thread::sleep(Duration::from_millis(30));
        w.cancel();
        assert!(!h.join().unwrap());
    });
    let q = s.q.clone();
    let h = std::thread::spawn(move || q.wait(&id, HOUR).map(|j| j.state));
    std::thread::sleep(Duration::from_millis(50));
    s.q.close();
    assert_eq!(h.join().unwrap().unwrap_err().kind(), ErrorKind::Closed);
}

#[test]
fn a_subscriber_sees_every_transition_once_in_commit_order() {
    let s = TestStore::new();
    let sub = s.q.subscribe(SubscribeOptions::default()).unwrap();
    let n = 2_000;
    let ids: Vec<JobId> = (0..n).map(|_| s.enqueue("embed")).collect();
    std::thread::scope(|sc| {
        for w in 0..2 {
            let q = &s.q;
            sc.spawn(move || {
                let worker = format!("w{w}");
                while let Some(job) = q.lease_next(&worker, &LeaseOptions::default()).unwrap() {
                    q.complete(&job.token(), None).unwrap();
                }
            });
        }
    });
    let got = drain_all(&sub);
    assert_eq!(got.len(), 3 * n);
    for (i, ev) in got.iter().enumerate() {
        assert_eq!(ev.seq, i as u64 + 1, "gap-free, in order");
        assert_eq!(ev.missed, 0);
    }
    let mut per_job: HashMap<JobId, Vec<Event>> = HashMap::new();
    for ev in &got {
        per_job.entry(ev.id).or_default().push(ev.event);
    }
    for id in &ids {
        let log: Vec<Event> = s.get(id).events.iter().filter_map(|e| e.event()).collect();
        assert_eq!(per_job[id], log, "the job's event log, in order");
        assert_eq!(
            log,
            [Event::Enqueued, Event::Leased, Event::Completed],
            "{id}"
        );
    }
    let leased: Vec<_> = got.iter().filter(|e| e.event == Event::Leased).collect();
    assert!(leased
        .iter()
        .all(|e| e.attempt == 1 && e.worker_id.as_deref().is_some_and(|w| w.starts_with('w'))));
}

#[test]
fn a_slow_subscriber_learns_exactly_how_many_events_it_missed() {
    let s = TestStore::new();
    let slow =
        s.q.subscribe(SubscribeOptions {
            buffer: 10,
            ..Default::default()
        })
        .unwrap();
    let fast = s.q.subscribe(SubscribeOptions::default()).unwrap();
    for _ in 0..500 {
        s.enqueue("embed");
    }
    // Delivery runs on the dispatcher thread: once the fast reader has all
    // 500, the slow one has been offered them all too.
    assert_eq!(drain_all(&fast).len(), 500);
    let mut seen = 0u64;
    let mut missed = 0u64;
    let mut last = 0;
    for ev in drain_all(&slow) {
        seen += 1;
        missed += ev.missed;
        assert_eq!(ev.seq, last + 1 + ev.missed, "the gap is the count");
        last = ev.seq;
    }
    // The buffer held the first 10; the rest were dropped, and the next
    // event (none yet) carries the count: push one more.
    assert_eq!(seen, 10);
    s.enqueue("embed");
    let next = slow.recv(Some(SEC)).unwrap().unwrap();
    missed += next.missed;
    assert_eq!((next.seq, missed), (501, 490));
    assert_eq!(drain_all(&fast).len(), 1);
}

#[test]
fn filters_pick_kinds_scopes_and_transitions() {
    let s = TestStore::new();
    let f = EventFilter::default()
        .kind("ingest:*")
        .unwrap()
        .event(Event::Completed);
    let sub =
        s.q.subscribe(SubscribeOptions {
            filter: f,
            ..Default::default()
        })
        .unwrap();
    let by_scope =
        s.q.subscribe(SubscribeOptions {
            filter: EventFilter::default().scope(scope(3)),
            ..Default::default()
        })
        .unwrap();
    s.enqueue("embed");
    let want = s.enqueue("ingest:pdf");
    s.enqueue_with("embed", EnqueueOptions::default().scope(scope(3)));
    for _ in 0..3 {
        let j = s.must_lease("w");
        s.q.complete(&j.token(), None).unwrap();
    }
    let got = drain_all(&sub);
    assert_eq!(got.len(), 1);
    assert_eq!((got[0].id, got[0].event), (want, Event::Completed));
    assert_eq!(&*got[0].kind, "ingest:pdf");
    let scoped = drain_all(&by_scope);
    assert_eq!(scoped.len(), 3);
    assert!(scoped.iter().all(|e| e.scope == scope(3)));
    assert!(matches!(
        s.q.subscribe(SubscribeOptions {
            buffer: 0,
            ..Default::default()
        }),
        Err(telha_jobs::Error::InvalidArgument(_))
    ));
}

#[test]
fn closing_the_store_ends_subscriptions_and_dropped_ones_go_away() {
    let s = TestStore::new();
    let dropped = s.q.subscribe(SubscribeOptions::default()).unwrap();
    drop(dropped);
    let sub = s.q.subscribe(SubscribeOptions::default()).unwrap();
    s.enqueue("embed");
    assert!(s
        .q
        .metrics()
        .unwrap()
        .contains("telha_jobs_subscriptions 1"));
    s.q.close();
    assert_eq!(sub.recv(None).unwrap().unwrap().event, Event::Enqueued);
    assert!(matches!(sub.recv(None), Err(telha_jobs::Error::Closed)));
}

#[test]
fn progress_rides_on_the_heartbeat_and_is_shown_by_get_and_events() {
    let s = TestStore::new();
    let sub =
        s.q.subscribe(SubscribeOptions {
            filter: EventFilter::default().event(Event::Progress),
            ..Default::default()
        })
        .unwrap();
    let id = s.enqueue("embed");
    let job = s.must_lease("w");
    for i in 0..100u32 {
        s.advance(MS);
        let p = telha_jobs::payload::encode(&rmpv::Value::from(i)).unwrap();
        let r = s.q.heartbeat(&[job.token()], &[Some(p)], "w").unwrap();
        assert!(r[0].is_ok());
    }
    let info = s.get(&id);
    let last = telha_jobs::payload::decode(info.progress.as_deref().unwrap()).unwrap();
    assert_eq!(last, rmpv::Value::from(99u32));
    let evs = drain_all(&sub);
    assert_eq!(evs.len(), 100);
    assert!(evs.iter().all(|e| e.attempt == 1 && e.progress.is_some()));
    // Not logged per job: the log stays enqueued, leased.
    assert_eq!(info.events.len(), 2);
    // The same deadline and a report: still written.
    let r =
        s.q.heartbeat(&[job.token()], &[Some(b"\x01\xa4done".to_vec())], "w")
            .unwrap();
    assert!(r[0].is_ok());
    assert_eq!(s.get(&id).progress.as_deref(), Some(&b"\x01\xa4done"[..]));
    // Too big, or more reports than leases: the whole call is refused and
    // nothing is written.
    let before = s.get(&id);
    let big = vec![0u8; telha_jobs::limits::MAX_PROGRESS_BYTES + 1];
    let err =
        s.q.heartbeat(&[job.token()], &[Some(big)], "w")
            .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    let two = [Some(b"\x01\x01".to_vec()), None];
    let err = s.q.heartbeat(&[job.token()], &two, "w").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    let after = s.get(&id);
    assert_eq!(after.progress, before.progress);
    assert_eq!(after.lease_deadline, before.lease_deadline);
    // A new lease starts without the old attempt's progress.
    s.q.release(&job.token()).unwrap();
    s.must_lease("w");
    assert_eq!(s.get(&id).progress, None);
}

#[test]
fn the_store_is_usable_after_a_subscriber_and_waiters_come_and_go() {
    let s = TestStore::new();
    for round in 0..3 {
        let sub = s.q.subscribe(SubscribeOptions::default()).unwrap();
        let id = s.enqueue("embed");
        let w = s.q.watch(&id).unwrap();
        let j = s.must_lease("w");
        s.q.complete(&j.token(), None).unwrap();
        assert!(w.wait(Some(SEC)), "round {round}");
        assert_eq!(drain_all(&sub).len(), 3);
    }
    assert!(s.q.check().unwrap().problems.is_empty());
}

/// The check at size: every transition of a 100,000-job run, once,
/// in commit order (seq 1, 2, 3 … with nothing missed), each job's events
/// equal to its own event log; read while the run goes on by a reader
/// thread, as a service would.
#[test]
fn a_100k_job_run_is_seen_whole_in_commit_order_against_the_event_logs() {
    const N: usize = 100_000;
    let s = TestStore::new();
    let sub =
        s.q.subscribe(SubscribeOptions {
            buffer: 4 * N,
            ..Default::default()
        })
        .unwrap();
    let done = std::sync::atomic::AtomicBool::new(false);
    let got = std::thread::scope(|sc| {
        let reader = sc.spawn(|| {
            let mut got = Vec::with_capacity(3 * N);
            loop {
                match sub.recv(Some(Duration::from_millis(50))).unwrap() {
                    Some(ev) => got.push(ev),
                    None if done.load(std::sync::atomic::Ordering::SeqCst) => break,
                    None => {}
                }
                got.extend(sub.drain(4096).unwrap());
            }
            got
        });
        for chunk in 0..N / 1000 {
            let jobs = (0..1000)
                .map(|i| NewJob::new("embed", format!("{chunk}-{i}").into_bytes()))
                .collect();
            s.q.enqueue_many(jobs).unwrap();
        }
        let workers: Vec<_> = (0..2)
            .map(|w| {
                let q = &s.q;
                sc.spawn(move || loop {
                    let jobs = q
                        .lease_many(&format!("w{w}"), 100, &LeaseOptions::default())
                        .unwrap();
                    if jobs.is_empty() {
                        break;
                    }
                    let done: Vec<_> = jobs
                        .iter()
                        .map(|j| telha_jobs::Completion::new(j.token(), None))
                        .collect();
                    for r in q.complete_many(done).unwrap() {
                        r.unwrap();
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
        // Everything committed is delivered within the dispatcher's batch
        // interval; the reader stops at its first quiet 50 ms after this.
        std::thread::sleep(Duration::from_millis(100));
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        reader.join().unwrap()
    });
    assert_eq!(got.len(), 3 * N, "every transition once");
    for (i, ev) in got.iter().enumerate() {
        assert_eq!((ev.seq, ev.missed), (i as u64 + 1, 0), "commit order");
    }
    let mut per_job: HashMap<JobId, Vec<Event>> = HashMap::with_capacity(N);
    for ev in &got {
        per_job.entry(ev.id).or_default().push(ev.event);
    }
    assert_eq!(per_job.len(), N);
    let mut checked = 0;
    let all = ListQuery {
        limit: telha_jobs::limits::MAX_LIST_LIMIT,
        ..ListQuery::default()
    };
    let mut page = s.q.list(&all).unwrap();
    loop {
        for j in &page.jobs {
            let log: Vec<Event> = j.events.iter().filter_map(|e| e.event()).collect();
            assert_eq!(per_job[&j.id], log, "job {}", j.id);
            checked += 1;
        }
        match page.next.take() {
            Some(cursor) => {
                page =
                    s.q.list(&ListQuery {
                        after: Some(cursor),
                        ..all.clone()
                    })
                    .unwrap()
            }
            None => break,
        }
    }
    assert_eq!(checked, N, "every job's log compared");
}
