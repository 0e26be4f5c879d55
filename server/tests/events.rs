//! Waits, event streams and progress through a server (issue 18): the
//! Rust client's `wait`, `watch`, `subscribe` and `heartbeat` answer as an
//! embedded queue's do.

mod common;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use telha_jobs::watch::EventFilter;
use telha_jobs::{
    EnqueueOptions, ErrorKind, Event, JobId, JobStore, LeaseOptions, State, SubscribeOptions,
};

#[test]
fn a_remote_wait_returns_the_result_when_the_job_completes() {
    let s = common::served();
    let c = s.client();
    let id = c
        .enqueue("embed", b"x", EnqueueOptions::default())
        .unwrap()
        .id;
    let c2 = s.client();
    let waiter = std::thread::spawn(move || c2.wait(&id, Duration::from_secs(30)).unwrap());
    std::thread::sleep(Duration::from_millis(100));
    let job = c
        .lease_next("w", &LeaseOptions::default())
        .unwrap()
        .unwrap();
    c.complete(&job.token(), Some(b"done")).unwrap();
    let info = waiter.join().unwrap();
    assert_eq!(info.state, State::Completed);
    assert_eq!(info.result.as_deref(), Some(&b"done"[..]));
}

#[test]
fn a_remote_wait_times_out_with_the_state_and_unknown_ids_are_not_found() {
    let s = common::served();
    let c = s.client();
    let id = c
        .enqueue("embed", b"x", EnqueueOptions::default())
        .unwrap()
        .id;
    let t0 = Instant::now();
    let info = c.wait(&id, Duration::from_millis(300)).unwrap();
    assert_eq!(info.state, State::Pending);
    assert!(t0.elapsed() >= Duration::from_millis(300));
    let err = c
        .wait(&JobId::from_bytes([7; 16]), Duration::from_secs(1))
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
    assert_eq!(
        c.watch(&JobId::from_bytes([7; 16])).unwrap_err().kind(),
        ErrorKind::NotFound
    );
}

#[test]
fn a_remote_watch_fires_in_the_background_with_the_job() {
    let s = common::served();
    let c = s.client();
    let ids: Vec<JobId> = (0..20)
        .map(|_| {
            c.enqueue("embed", b"x", EnqueueOptions::default())
                .unwrap()
                .id
        })
        .collect();
    let watches: Vec<_> = ids.iter().map(|id| c.watch(id).unwrap()).collect();
    // Settled on the server's own handle: nothing on this client is busy,
    // so the background long polls must be driven all the same.
    while let Some(j) = s.queue.lease_next("w", &LeaseOptions::default()).unwrap() {
        s.queue.fail(&j.token(), "bad", false).unwrap();
    }
    for w in &watches {
        assert!(w.wait(Some(Duration::from_secs(20))), "{:?}", w.id());
        let info = c.watched_job(w).unwrap();
        assert_eq!(info.state, State::Dead);
        assert_eq!(info.last_error.as_deref(), Some("bad"));
    }
}

#[test]
fn a_remote_subscriber_sees_every_transition_in_commit_order() {
    let s = common::served();
    let c = s.client();
    let sub = c.subscribe(SubscribeOptions::default()).unwrap();
    let only_done = c
        .subscribe(SubscribeOptions {
            filter: EventFilter::default().event(Event::Completed),
            ..Default::default()
        })
        .unwrap();
    let n = 200;
    for _ in 0..n {
        c.enqueue("embed", b"x", EnqueueOptions::default()).unwrap();
    }
    while let Some(j) = c.lease_next("w", &LeaseOptions::default()).unwrap() {
        c.complete(&j.token(), None).unwrap();
    }
    let mut got = Vec::new();
    while got.len() < 3 * n {
        match sub.recv(Some(Duration::from_secs(20))).unwrap() {
            Some(e) => got.push(e),
            None => panic!("only {} events of {}", got.len(), 3 * n),
        }
    }
    let mut per_job: HashMap<JobId, Vec<Event>> = HashMap::new();
    for (i, e) in got.iter().enumerate() {
        assert_eq!(e.seq, i as u64 + 1);
        per_job.entry(e.id).or_default().push(e.event);
    }
    for (id, evs) in &per_job {
        let log: Vec<Event> = c
            .get(id)
            .unwrap()
            .unwrap()
            .events
            .iter()
            .filter_map(|e| e.event())
            .collect();
        assert_eq!(evs, &log);
    }
    let mut done = 0;
    while let Some(e) = only_done.recv(Some(Duration::from_secs(5))).unwrap() {
        assert_eq!(e.event, Event::Completed);
        done += 1;
        if done == n {
            break;
        }
    }
    assert_eq!(done, n);
    // Closing the client ends its subscriptions.
    c.close();
    let end = loop {
        match sub.recv(Some(Duration::from_secs(10))) {
            Ok(Some(_)) => continue,
            other => break other,
        }
    };
    assert!(
        matches!(&end, Err(e) if e.kind() == ErrorKind::Closed),
        "{end:?}"
    );
}

#[test]
fn progress_travels_with_the_heartbeat_and_bad_filters_are_refused() {
    let s = common::served();
    let c = s.client();
    let id = c
        .enqueue("embed", b"x", EnqueueOptions::default())
        .unwrap()
        .id;
    let sub = c
        .subscribe(SubscribeOptions {
            filter: EventFilter::default().event(Event::Progress),
            ..Default::default()
        })
        .unwrap();
    let job = c
        .lease_next("w", &LeaseOptions::default())
        .unwrap()
        .unwrap();
    let p = b"\x01\xa4half".to_vec();
    let r = c
        .heartbeat(&[job.token()], &[Some(p.clone())], "w")
        .unwrap();
    assert!(r[0].is_ok());
    assert_eq!(c.get(&id).unwrap().unwrap().progress, Some(p.clone()));
    let e = sub.recv(Some(Duration::from_secs(10))).unwrap().unwrap();
    assert_eq!(e.progress.as_deref(), Some(&p[..]));
    let big = vec![1u8; telha_jobs::limits::MAX_PROGRESS_BYTES + 1];
    let err = c.heartbeat(&[job.token()], &[Some(big)], "w").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert_eq!(c.get(&id).unwrap().unwrap().progress, Some(p.clone()));
    let bad = c.subscribe(SubscribeOptions {
        buffer: 0,
        ..Default::default()
    });
    assert_eq!(bad.unwrap_err().kind(), ErrorKind::InvalidArgument);
}
