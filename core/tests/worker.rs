//! The Rust `Worker` passes the Worker tests the Python and Node Workers
//! pass: exactly once, cancel within a heartbeat, `max_lease_total`,
//! `timeout`, snooze / retry-in, follow-ups, panics, a draining stop, and a
//! re-leased job completed by its last delivery.
//!
//! Stores run on a `ManualClock` (the engine's deadlines, expiry and
//! backoff move only when a test says); the Worker's heartbeats and
//! timeouts are real time, so TTLs here are a few hundred milliseconds.

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{TestStore, MS, SEC};
use telha_jobs::worker::{Counts, StopReason};
use telha_jobs::{
    CancelOutcome, Config, EnqueueOptions, JobId, JobStore, KindConfig, ListQuery, NewJob, Outcome,
    State, Worker,
};

const TTL: Duration = Duration::from_millis(300);

fn store(kinds: &[(&str, KindConfig)]) -> TestStore {
    let mut c = Config {
        lease_ttl: TTL,
        ..common::test_config()
    };
    for (k, kc) in kinds {
        c.kinds.insert(k.to_string(), kc.clone());
    }
    TestStore::with_config(c)
}

fn arc(t: &TestStore) -> Arc<dyn JobStore> {
    Arc::new(t.q.clone())
}

fn enqueue(t: &TestStore, kind: &str) -> JobId {
    t.q.enqueue(kind, b"p", EnqueueOptions::default())
        .unwrap()
        .id
}

/// Poll `f` (the Worker's threads act on their own) until it holds.
fn eventually(what: &str, f: impl Fn() -> bool) {
    let end = Instant::now() + 5 * SEC;
    while !f() {
        assert!(Instant::now() < end, "timed out waiting for: {what}");
        std::thread::sleep(2 * MS);
    }
}

fn state(t: &TestStore, id: &JobId) -> telha_jobs::JobInfo {
    t.q.get(id).unwrap().unwrap()
}

#[test]
fn processes_every_job_exactly_once_with_concurrency_4() {
    let t = store(&[]);
    let ids: Vec<_> = (0..300).map(|_| enqueue(&t, "embed")).collect();
    let seen = Arc::new(Mutex::new(HashMap::<JobId, u32>::new()));
    let s = seen.clone();
    let w = Worker::builder(arc(&t), move |ctx| {
        *s.lock().unwrap().entry(ctx.job().id).or_default() += 1;
        Outcome::result(ctx.payload().to_vec())
    })
    .concurrency(4)
    .poll_wait(50 * MS)
    .build()
    .unwrap()
    .start()
    .unwrap();
    eventually("300 completed", || w.counts().completed == 300);
    w.stop(SEC);
    assert!(!w.is_running());
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 300);
    assert!(seen.values().all(|&n| n == 1), "a job ran twice");
    for id in &ids {
        let j = state(&t, id);
        assert_eq!(j.state, State::Completed);
        assert_eq!(j.result.as_deref(), Some(&b"p"[..]));
    }
    assert_eq!(w.counts().errors, 0, "{:?}", w.last_error());
}

#[test]
fn a_cancel_stops_the_handler_within_a_heartbeat() {
    let t = store(&[]);
    let id = enqueue(&t, "embed");
    let (started, rx) = mpsc::channel();
    let w = Worker::builder(arc(&t), move |ctx| {
        started.send(()).unwrap();
        let stopped = ctx.cancel_token().wait(Some(5 * SEC));
        assert!(stopped && ctx.is_cancelled());
        ctx.check().map(|_| Outcome::done())
    })
    .poll_wait(50 * MS)
    .build()
    .unwrap()
    .start()
    .unwrap();
    rx.recv_timeout(5 * SEC).unwrap();
    let asked = Instant::now();
    assert_eq!(
        t.q.cancel(&id, "no longer needed").unwrap(),
        CancelOutcome::Requested
    );
    eventually("cancelled", || state(&t, &id).state == State::Cancelled);
    // A heartbeat is a third of the TTL (100 ms) away; allow for a loaded host.
    assert!(asked.elapsed() < TTL * 3, "took {:?}", asked.elapsed());
    w.stop(SEC);
    assert_eq!(w.counts().cancelled, 1);
}

#[test]
fn a_hung_handler_loses_its_job_after_max_lease_total() {
    let kc = KindConfig {
        max_lease_total: Some(Some(SEC)),
        ..Default::default()
    };
    let t = store(&[("embed", kc)]);
    let id = enqueue(&t, "embed");
    let (saw, saw_rx) = mpsc::channel();
    let (go, go_rx) = mpsc::channel::<()>();
    let go_rx = Mutex::new(go_rx);
    let w = Worker::builder(arc(&t), move |ctx| {
        if ctx.job().attempts > 0 {
            return Outcome::done();
        }
        saw.send(None).unwrap();
        ctx.cancel_token().wait(Some(5 * SEC));
        saw.send(ctx.stop_reason()).unwrap();
        go_rx.lock().unwrap().recv().unwrap();
        Outcome::done() // too late: the lease is gone
    })
    .poll_wait(50 * MS)
    .build()
    .unwrap()
    .start()
    .unwrap();
    assert_eq!(saw_rx.recv_timeout(5 * SEC).unwrap(), None);
    // Held for longer than max_lease_total: the next heartbeat is refused.
    t.clock.advance(2 * SEC);
    assert_eq!(
        saw_rx.recv_timeout(5 * SEC).unwrap(),
        Some(StopReason::Lost)
    );
    t.q.reap().unwrap();
    go.send(()).unwrap();
    eventually("lost", || w.counts().lost == 1);
    let j = state(&t, &id);
    assert_ne!(j.state, State::Completed);
    assert_eq!(j.attempts, 1, "the expiry spent an attempt");
    w.stop(SEC);
}

#[test]
fn a_handler_past_its_timeout_fails_the_job_retryably() {
    let kc = KindConfig {
        timeout: Some(Some(200 * MS)),
        ..Default::default()
    };
    let t = store(&[("slow", kc)]);
    let id = enqueue(&t, "slow");
    let (saw, rx) = mpsc::channel();
    let w = Worker::builder(arc(&t), move |ctx| {
        ctx.cancel_token().wait(Some(5 * SEC));
        saw.send(ctx.stop_reason()).unwrap();
        Outcome::done()
    })
    .poll_wait(50 * MS)
    .build()
    .unwrap()
    .start()
    .unwrap();
    assert_eq!(
        rx.recv_timeout(5 * SEC).unwrap(),
        Some(StopReason::TimedOut)
    );
    eventually("timed out", || w.counts().timed_out == 1);
    w.stop(SEC);
    let j = state(&t, &id);
    assert_eq!(j.state, State::Failed, "retryable: waiting for its retry");
    assert_eq!(j.attempts, 1);
    assert!(j.last_error.unwrap().contains("timed out after 0.2s"));
    assert_eq!(w.counts().completed, 0, "its late result was not sent");
}

#[test]
fn snooze_and_retry_in_settle_as_the_handler_said() {
    let t = store(&[]);
    let snoozed = enqueue(&t, "snooze");
    let retried = enqueue(&t, "retry");
    let w = Worker::builder(arc(&t), |ctx| match ctx.job().kind.as_str() {
        "snooze" => Outcome::Snooze(60 * SEC),
        _ => Outcome::Retry {
            error: "upstream busy".into(),
            after: 90 * SEC,
        },
    })
    .poll_wait(50 * MS)
    .build()
    .unwrap()
    .start()
    .unwrap();
    eventually("settled", || {
        let c = w.counts();
        c.snoozed == 1 && c.failed == 1
    });
    w.stop(SEC);
    let now = t.now();
    let s = state(&t, &snoozed);
    assert_eq!(
        (s.attempts, s.snoozes),
        (0, 1),
        "a snooze spends no attempt"
    );
    let r = state(&t, &retried);
    assert_eq!(r.attempts, 1);
    assert_eq!(r.last_error.as_deref(), Some("upstream busy"));
    // Neither is due before its delay: nothing to lease now, one at +90 s.
    assert!(t
        .q
        .lease_next("probe", &Default::default())
        .unwrap()
        .is_none());
    t.clock.set(now + 61_000);
    let j =
        t.q.lease_next("probe", &Default::default())
            .unwrap()
            .unwrap();
    assert_eq!(j.id, snoozed);
    assert!(t
        .q
        .lease_next("probe", &Default::default())
        .unwrap()
        .is_none());
    t.clock.set(now + 91_000);
    assert_eq!(
        t.q.lease_next("probe", &Default::default())
            .unwrap()
            .unwrap()
            .id,
        retried
    );
}

#[test]
fn follow_ups_are_created_with_the_completion() {
    let t = store(&[]);
    let parent = enqueue(&t, "parent");
    let w = Worker::builder(arc(&t), |ctx| {
        ctx.follow_up(NewJob::new("child", b"c".to_vec()));
        ctx.follow_up(NewJob::new("child", b"d".to_vec()));
        Outcome::done()
    })
    .kinds(["parent"])
    .poll_wait(50 * MS)
    .build()
    .unwrap()
    .start()
    .unwrap();
    eventually("completed", || w.counts().completed == 1);
    w.stop(SEC);
    let kids =
        t.q.list(&ListQuery {
            parent: Some(parent),
            limit: 10,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(kids.jobs.len(), 2);
    assert!(kids
        .jobs
        .iter()
        .all(|j| j.kind == "child" && j.state == State::Pending));
}

#[test]
fn a_panicking_handler_fails_its_job_and_the_worker_goes_on() {
    let t = store(&[]);
    let bad = enqueue(&t, "bad");
    let w = Worker::builder(arc(&t), |ctx| {
        if ctx.job().kind == "bad" {
            panic!("boom");
        }
        Outcome::done()
    })
    .concurrency(1)
    .poll_wait(50 * MS)
    .build()
    .unwrap()
    .start()
    .unwrap();
    eventually("failed", || w.counts().failed == 1);
    let good = enqueue(&t, "good");
    eventually("the next job done", || w.counts().completed == 1);
    w.stop(SEC);
    let b = state(&t, &bad);
    assert_eq!(b.state, State::Failed, "retryable");
    assert!(b.last_error.unwrap().contains("panicked: boom"));
    assert_eq!(state(&t, &good).state, State::Completed);
}

#[test]
fn stop_drains_running_handlers_and_releases_the_rest_unspent() {
    let t = store(&[]);
    let finishes = enqueue(&t, "finishes");
    let hangs = enqueue(&t, "hangs");
    let (started, rx) = mpsc::channel();
    let (gate, gate_rx) = mpsc::channel::<()>();
    let gate_rx = Mutex::new(gate_rx);
    let w = Worker::builder(arc(&t), move |ctx| {
        started.send(()).unwrap();
        if ctx.job().kind == "finishes" {
            gate_rx.lock().unwrap().recv().unwrap();
            return Outcome::result(b"done".to_vec());
        }
        ctx.cancel_token().wait(Some(5 * SEC));
        assert_eq!(ctx.stop_reason(), Some(StopReason::Released));
        Outcome::done()
    })
    .concurrency(2)
    .poll_wait(50 * MS)
    .build()
    .unwrap()
    .start()
    .unwrap();
    rx.recv_timeout(5 * SEC).unwrap();
    rx.recv_timeout(5 * SEC).unwrap();
    let w = Arc::new(w);
    let w2 = w.clone();
    let stopper = std::thread::spawn(move || w2.stop(400 * MS));
    gate.send(()).unwrap(); // the running handler finishes inside the timeout
    stopper.join().unwrap();
    assert!(w.join(Some(SEC)));
    assert_eq!(state(&t, &finishes).state, State::Completed);
    let h = state(&t, &hangs);
    assert_eq!(
        (h.state, h.attempts),
        (State::Pending, 0),
        "no attempt spent"
    );
    let c = w.counts();
    assert_eq!((c.completed, c.released), (1, 1), "{c:?}");
}

#[test]
fn stop_hands_back_jobs_leased_ahead_without_spending_attempts() {
    let t = store(&[]);
    let ids: Vec<_> = (0..2000).map(|_| enqueue(&t, "fast")).collect();
    let w = Worker::builder(arc(&t), |_ctx| Outcome::done())
        .concurrency(2)
        .poll_wait(50 * MS)
        .build()
        .unwrap()
        .start()
        .unwrap();
    eventually("some done", || w.counts().completed >= 100);
    w.stop(SEC);
    let c: Counts = w.counts();
    let mut done = 0;
    for id in &ids {
        let j = state(&t, id);
        match j.state {
            State::Completed => done += 1,
            s => assert_eq!((s, j.attempts), (State::Pending, 0)),
        }
    }
    assert_eq!(done, c.completed);
    assert!(done < 2000, "stopped before the end");
}

#[test]
fn a_lease_lost_and_re_leased_to_the_same_worker_completes_by_its_last_delivery() {
    let t = store(&[]);
    let id = enqueue(&t, "embed");
    let (started, rx) = mpsc::channel();
    let gates: Vec<_> = (0..2).map(|_| mpsc::channel::<()>()).collect();
    let (go, waits): (Vec<_>, Vec<_>) = gates.into_iter().unzip();
    let waits = Arc::new(Mutex::new(waits.into_iter().map(Some).collect::<Vec<_>>()));
    let delivered = AtomicUsize::new(0);
    let w = Worker::builder(arc(&t), move |_ctx| {
        let n = delivered.fetch_add(1, Ordering::SeqCst);
        let wait = waits.lock().unwrap()[n].take().unwrap();
        started.send(n + 1).unwrap();
        wait.recv().unwrap();
        Outcome::result(format!("delivery {}", n + 1).into_bytes())
    })
    .concurrency(2)
    .poll_wait(50 * MS)
    .build()
    .unwrap()
    .start()
    .unwrap();
    assert_eq!(rx.recv_timeout(5 * SEC).unwrap(), 1);
    // The first lease expires (past its deadline and any backoff) and the
    // same worker's other thread leases the next generation.
    t.clock.advance(3600 * SEC);
    t.q.reap().unwrap();
    t.clock.advance(3600 * SEC); // past its retry backoff
    assert_eq!(rx.recv_timeout(5 * SEC).unwrap(), 2);
    go[0].send(()).unwrap(); // the stale delivery settles first: refused
    eventually("the first delivery lost", || w.counts().lost == 1);
    go[1].send(()).unwrap();
    eventually("completed", || state(&t, &id).state == State::Completed);
    assert_eq!(state(&t, &id).result.as_deref(), Some(&b"delivery 2"[..]));
    w.stop(SEC);
    assert_eq!(w.counts().completed, 1);
}

#[test]
fn build_refuses_bad_settings_naming_them() {
    let t = store(&[]);
    let b = || Worker::builder(arc(&t), |_ctx| Outcome::done());
    let e = b().concurrency(0).build().unwrap_err();
    assert!(e.to_string().contains("concurrency"), "{e}");
    let e = b().kinds(["Not A Kind"]).build().unwrap_err();
    assert_eq!(e.kind(), telha_jobs::ErrorKind::InvalidArgument);
    let e = b().worker_id("").build().unwrap_err();
    assert!(e.to_string().contains("worker id"), "{e}");
    assert!(b()
        .build()
        .unwrap()
        .worker_id()
        .contains(&std::process::id().to_string()));
}

/// The README's Rust example is the body of core/examples/worker.rs (which
/// `cargo test` builds), so it compiles.
#[test]
fn the_readme_rust_example_is_the_worker_example() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).unwrap();
    let block = readme
        .split("## Rust\n\n```rust\n")
        .nth(1)
        .and_then(|r| r.split("\n```\n").next())
        .expect("a Rust block under ## Rust");
    let example = std::fs::read_to_string(format!("{root}/core/examples/worker.rs")).unwrap();
    let body = example
        .split("// README begin\n")
        .nth(1)
        .and_then(|r| r.split("// README end").next())
        .unwrap();
    assert_eq!(trim(block), trim(body));
}

fn trim(s: &str) -> Vec<&str> {
    s.lines().map(str::trim).filter(|l| !l.is_empty()).collect()
}

#[test]
fn a_handler_can_stop_its_own_worker_without_waiting_for_itself() {
    let t = store(&[]);
    let slot: Arc<Mutex<Option<Arc<telha_jobs::RunningWorker>>>> = Arc::default();
    let s = slot.clone();
    let w = Worker::builder(arc(&t), move |_ctx| {
        let w = s.lock().unwrap().clone();
        if let Some(w) = w {
            let began = Instant::now();
            w.stop(10 * SEC);
            assert!(began.elapsed() < 5 * SEC, "it waited for itself");
        }
        Outcome::done()
    })
    .concurrency(1)
    .poll_wait(50 * MS)
    .build()
    .unwrap();
    let running = Arc::new(w.start().unwrap());
    *slot.lock().unwrap() = Some(running.clone());
    let id = enqueue(&t, "embed"); // after the slot is filled
    assert!(running.join(Some(10 * SEC)));
    // The stop released the job its own handler was running.
    let j = state(&t, &id);
    assert_eq!((j.state, j.attempts), (State::Pending, 0));
    assert_eq!(running.counts().released, 1);
    slot.lock().unwrap().take();
}
