//! Debounce: `debounce` / `debounce_max` on a keyed enqueue (issue 44).

use super::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// A producer's acknowledged (job, payload) pairs, in its own order.
type Acks = Vec<(JobId, Vec<u8>)>;

const SEC: Duration = Duration::from_secs(1);

fn deb(key: &str, d: Duration) -> EnqueueOptions {
    EnqueueOptions::default().idempotency_key(key).debounce(d)
}

fn enq(s: &TestStore, payload: &[u8], o: EnqueueOptions) -> telha_jobs::Enqueued {
    s.q.enqueue("embed", payload, o).expect("enqueue")
}

/// The run times a job's `debounced` log entries moved it to.
fn debounced_dues(info: &telha_jobs::JobInfo) -> Vec<u64> {
    info.events
        .iter()
        .filter(|e| e.transition == "debounced")
        .map(|e| {
            let rest = e.detail.split("due at ").nth(1).expect("a due time");
            rest.split(' ').next().unwrap().parse().unwrap()
        })
        .collect()
}

#[test]
fn a_repeat_replaces_the_payload_and_moves_the_run_time_up_to_the_max() {
    let s = TestStore::new();
    let t0 = s.now();
    let o = || deb("save-7", 10 * SEC).debounce_max(30 * SEC);
    let first = enq(&s, b"v0", o());
    assert!(first.created && !first.debounced);
    assert_eq!(s.get(&first.id).state_ts, t0 + 10_000);
    for i in 1..=8u64 {
        s.advance(5 * SEC);
        let e = enq(&s, format!("v{i}").as_bytes(), o());
        assert_eq!((e.id, e.created, e.debounced), (first.id, false, true));
        let info = s.get(&first.id);
        assert_eq!(info.payload, format!("v{i}").into_bytes());
        // now + 10 s, never past the first enqueue + 30 s.
        let want = (s.now() + 10_000).min(t0 + 30_000);
        assert_eq!(info.state_ts, want, "repeat {i}");
        assert_eq!(info.state, State::Pending);
        if s.now() < want {
            assert!(s.lease("w").is_none(), "repeat {i}: not due yet");
        }
    }
    // The clock is at t0 + 40 s: the job became ready at t0 + 30 s.
    let j = s.must_lease("w");
    assert_eq!((j.id, j.payload.as_slice()), (first.id, &b"v8"[..]));
    assert_eq!(count_events(&s.get(&first.id), "debounced"), 8);
    // Leased: a repeat makes a new job, which takes the key.
    let next = enq(&s, b"w0", o());
    assert!(next.created && next.id != first.id);
    let again = enq(&s, b"w1", o());
    assert_eq!((again.id, again.debounced), (next.id, true));
    assert_eq!(
        s.get(&first.id).payload,
        b"v8",
        "the leased job is untouched"
    );
    // A plain keyed enqueue answers the pending job without touching it.
    let plain = enq(
        &s,
        b"plain",
        EnqueueOptions::default().idempotency_key("save-7"),
    );
    assert_eq!(
        (plain.id, plain.created, plain.debounced),
        (next.id, false, false)
    );
    assert_eq!(s.get(&next.id).payload, b"w1");
    assert_consistent(&s.q);
}

#[test]
fn without_a_max_repeats_postpone_the_job_for_as_long_as_they_come() {
    let s = TestStore::new();
    let first = enq(&s, b"a", deb("k", SEC));
    for _ in 0..100 {
        s.advance(Duration::from_millis(900));
        assert!(s.lease("w").is_none());
        assert!(enq(&s, b"b", deb("k", SEC)).debounced);
    }
    assert_eq!(s.get(&first.id).state_ts, s.now() + 1000);
    s.advance(SEC);
    assert_eq!(s.must_lease("w").id, first.id);
}

#[test]
fn a_failed_job_waiting_for_its_retry_is_not_debounced() {
    let s = TestStore::new();
    let first = enq(&s, b"a", deb("k", SEC));
    s.advance(SEC);
    let j = s.must_lease("w");
    s.q.fail(&j.token(), "x", true).unwrap();
    let next = enq(&s, b"b", deb("k", SEC));
    assert!(next.created && next.id != first.id);
    assert_eq!(s.get(&first.id).payload, b"a");
}

#[test]
fn payloads_move_between_the_record_and_the_payload_rows() {
    let mut s = TestStore::new();
    let big = |c: u8| vec![c; 5000];
    let first = enq(&s, &big(b'a'), deb("k", SEC));
    assert_eq!(enq(&s, b"small", deb("k", SEC)).id, first.id);
    assert_eq!(s.get(&first.id).payload, b"small");
    assert_consistent(&s.q);
    assert_eq!(enq(&s, &big(b'b'), deb("k", SEC)).id, first.id);
    assert_eq!(s.get(&first.id).payload, big(b'b'));
    assert_eq!(enq(&s, &big(b'c'), deb("k", SEC)).id, first.id);
    assert_consistent(&s.q);
    s.reopen();
    assert_eq!(s.get(&first.id).payload, big(b'c'));
    s.advance(SEC);
    assert_eq!(s.must_lease("w").payload, big(b'c'));
    assert_consistent(&s.q);
}

#[test]
fn the_max_and_the_update_hold_across_a_reopen() {
    let mut s = TestStore::new();
    let t0 = s.now();
    let o = || deb("k", 10 * SEC).debounce_max(15 * SEC);
    let first = enq(&s, b"a", o());
    s.reopen();
    s.advance(8 * SEC);
    let e = enq(&s, b"b", o());
    assert_eq!((e.id, e.debounced), (first.id, true));
    s.reopen();
    let info = s.get(&first.id);
    assert_eq!(
        (info.payload.as_slice(), info.state_ts),
        (&b"b"[..], t0 + 15_000)
    );
    s.advance(8 * SEC);
    assert_eq!(s.must_lease("w").payload, b"b");
}

#[test]
fn bad_debounces_are_refused_naming_the_field_and_write_nothing() {
    let s = TestStore::new();
    let cases = [
        (
            EnqueueOptions::default().debounce(SEC),
            "debounce needs an idempotency_key",
        ),
        (deb("k", Duration::ZERO), "debounce must be at least 1ms"),
        (
            deb("k", Duration::from_micros(10)),
            "debounce must be at least 1ms",
        ),
        (
            deb("k", Duration::MAX),
            "debounce must be at most 100 years",
        ),
        (
            deb("k", 10 * SEC).debounce_max(SEC),
            "debounce_max (1s) must be at least debounce (10s)",
        ),
        (
            deb("k", SEC).debounce_max(Duration::MAX),
            "debounce_max must be at most 100 years",
        ),
        (
            EnqueueOptions::default()
                .idempotency_key("k")
                .debounce_max(SEC),
            "debounce_max needs debounce",
        ),
        (
            deb("k", SEC).unique_for(HOUR),
            "debounce cannot be combined with unique_for",
        ),
        (
            deb("k", SEC).delay(SEC),
            "debounce cannot be combined with delay",
        ),
        (
            deb("k", SEC).run_at(s.now() + 5),
            "debounce cannot be combined with run_at",
        ),
    ];
    for (o, want) in cases {
        let err = s.q.enqueue("embed", b"x", o).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert!(err.to_string().contains(want), "{err} lacks {want}");
    }
    let item = |key: &str, p: &[u8]| NewJob {
        kind: "embed".into(),
        payload: p.to_vec(),
        options: deb(key, SEC),
    };
    let first = enq(&s, b"kept", deb("k", SEC));
    let err =
        s.q.enqueue_many(vec![item("k", b"b1"), item("k", b"b2")])
            .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(err.to_string().contains("given twice"), "{err}");
    let mut bad = item("other", b"x");
    bad.options.debounce = Some(Duration::ZERO);
    let err = s.q.enqueue_many(vec![item("k", b"b1"), bad]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    // Nothing written: the job kept its payload and time, no other job.
    let info = s.get(&first.id);
    assert_eq!(
        (info.payload.as_slice(), info.state_ts),
        (&b"kept"[..], s.now() + 1000)
    );
    assert_eq!(count_events(&info, "debounced"), 0);
    assert_eq!(s.q.stats().unwrap().total.pending, 1);
    // A batch may debounce the key once, beside other jobs.
    let out =
        s.q.enqueue_many(vec![item("k", b"b3"), item("k2", b"c")])
            .unwrap();
    assert!(out[0].debounced && out[1].created);
    assert_eq!(s.get(&first.id).payload, b"b3");
    assert_consistent(&s.q);
}

/// 8 producers hammer one key while a worker leases and the clock moves:
/// never two pending jobs for the key, no acknowledged payload lost behind
/// an earlier one of its producer, every run time inside its bounds.
#[test]
fn eight_producers_and_a_worker_on_one_key() {
    const DEB: u64 = 5;
    const MAX: u64 = 20;
    let s = TestStore::new();
    let o = || deb("hot", Duration::from_millis(DEB)).debounce_max(Duration::from_millis(MAX));
    let stop = AtomicBool::new(false);
    // Per producer, its acknowledged (job, payload), in its own order.
    let acks: Vec<Mutex<Acks>> = (0..8).map(|_| Mutex::new(Vec::new())).collect();
    let leased: Mutex<Acks> = Mutex::new(Vec::new());
    std::thread::scope(|t| {
        for (p, mine) in acks.iter().enumerate() {
            let (s, o) = (&s, &o);
            t.spawn(move || {
                for i in 0..400 {
                    let payload = format!("p{p}-{i}").into_bytes();
                    let e = enq(s, &payload, o());
                    assert!(e.created != e.debounced);
                    mine.lock().unwrap().push((e.id, payload));
                    if e.debounced {
                        let info = s.get(&e.id);
                        if info.state == State::Pending {
                            assert!(info.state_ts <= info.created_at + MAX, "past the max");
                        }
                    }
                }
            });
        }
        let (s, stop, leased) = (&s, &stop, &leased);
        t.spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                match s.lease("w") {
                    Some(j) => {
                        s.q.complete(&j.token(), None).unwrap();
                        leased.lock().unwrap().push((j.id, j.payload));
                    }
                    None => s.advance(Duration::from_millis(1)),
                }
                let page =
                    s.q.list(&ListQuery {
                        state: Some(State::Pending),
                        limit: 10,
                        ..ListQuery::default()
                    })
                    .unwrap();
                assert!(
                    page.jobs.len() <= 1,
                    "two pending jobs: {:?}",
                    page.jobs.len()
                );
            }
        });
        // Stop the worker once the producers are done.
        t.spawn(|| {
            while acks.iter().map(|a| a.lock().unwrap().len()).sum::<usize>() < 8 * 400 {
                std::thread::yield_now();
            }
            stop.store(true, Ordering::Relaxed);
        });
    });
    // Every job's final payload was acknowledged for it, and no producer
    // had a later payload acknowledged for that job.
    let mut finals: Acks = leased.into_inner().unwrap();
    let pending =
        s.q.list(&ListQuery {
            state: Some(State::Pending),
            limit: 10,
            ..ListQuery::default()
        })
        .unwrap();
    assert!(pending.jobs.len() <= 1);
    finals.extend(pending.jobs.iter().map(|j| (j.id, j.payload.clone())));
    let acks: Vec<Acks> = acks.into_iter().map(|a| a.into_inner().unwrap()).collect();
    let jobs: HashSet<JobId> = acks.iter().flatten().map(|a| a.0).collect();
    assert!(jobs.len() > 1, "the worker leased while producers ran");
    assert_eq!(
        finals.len(),
        jobs.len(),
        "each job leased once or still pending"
    );
    for (id, payload) in &finals {
        let p: usize = std::str::from_utf8(&payload[1..])
            .unwrap()
            .split('-')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let last = acks[p]
            .iter()
            .rev()
            .find(|a| a.0 == *id)
            .expect("acknowledged");
        assert_eq!(
            &last.1, payload,
            "job {id}: producer {p}'s later payload lost"
        );
        let info = s.get(id);
        for due in debounced_dues(&info) {
            assert!(due <= info.created_at + MAX, "job {id} due at {due}");
        }
    }
    // One more enqueue, the last: its payload wins.
    let e = enq(&s, b"last", o());
    let info = s.get(&e.id);
    assert_eq!(
        (info.state, info.payload.as_slice()),
        (State::Pending, &b"last"[..])
    );
    assert_consistent(&s.q);
}
