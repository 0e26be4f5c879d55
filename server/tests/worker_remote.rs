//! The Rust `Worker` over a `RemoteQueue` through a real in-process
//! server: it leases ahead through `PollJobs` (the store's lease feed),
//! settles in batches, sees a cancel at a heartbeat, and a stop gives back
//! what it had leased ahead with no attempt spent.

mod common;

use std::collections::HashMap;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use telha_jobs::{CancelOutcome, Config, EnqueueOptions, JobId, JobStore, Outcome, State, Worker};
use telha_jobs_server::ServeOptions;

const SEC: Duration = Duration::from_secs(1);

fn eventually(what: &str, f: impl Fn() -> bool) {
    let end = Instant::now() + 10 * SEC;
    while !f() {
        assert!(Instant::now() < end, "timed out waiting for: {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_remote_worker_leases_ahead_and_processes_every_job_once() {
    let s = common::served();
    let c: Arc<dyn JobStore> = Arc::new(s.client());
    let ids: Vec<JobId> = (0..300)
        .map(|_| {
            s.queue
                .enqueue("embed", b"p", EnqueueOptions::default())
                .unwrap()
                .id
        })
        .collect();
    let seen = Arc::new(Mutex::new(HashMap::<JobId, u32>::new()));
    let s2 = seen.clone();
    let w = Worker::builder(c, move |ctx| {
        *s2.lock().unwrap().entry(ctx.job().id).or_default() += 1;
        Outcome::result(b"r".to_vec())
    })
    .concurrency(4)
    .build()
    .unwrap()
    .start()
    .unwrap();
    eventually("300 completed", || w.counts().completed == 300);
    w.stop(SEC);
    assert!(seen.lock().unwrap().values().all(|&n| n == 1));
    for id in &ids {
        assert_eq!(s.queue.get(id).unwrap().unwrap().state, State::Completed);
    }
    assert_eq!(w.counts().errors, 0, "{:?}", w.last_error());
}

#[test]
fn a_remote_worker_sees_a_cancel_and_gives_back_its_prefetch_on_stop() {
    let config = Config {
        lease_ttl: Duration::from_millis(600),
        ..common::config()
    };
    let s = common::served_with(config, ServeOptions::default());
    let c: Arc<dyn JobStore> = Arc::new(s.client());
    let first = s
        .queue
        .enqueue("embed", b"p", EnqueueOptions::default())
        .unwrap()
        .id;
    let (started, rx) = mpsc::channel();
    let w = Worker::builder(c, move |ctx| {
        started.send(ctx.job().id).unwrap();
        ctx.cancel_token().wait(Some(10 * SEC));
        Outcome::done()
    })
    .concurrency(1)
    .prefetch(8)
    .min_prefetch(8) // a fixed window: the prefetch fills behind the running one
    .build()
    .unwrap()
    .start()
    .unwrap();
    assert_eq!(rx.recv_timeout(10 * SEC).unwrap(), first);
    // Queued behind the running one: pushed ahead to the worker.
    let rest: Vec<JobId> = (0..5)
        .map(|_| {
            s.queue
                .enqueue("embed", b"p", EnqueueOptions::default())
                .unwrap()
                .id
        })
        .collect();
    eventually("leased ahead", || {
        s.queue.stats().unwrap().total.leased == 6
    });
    let asked = Instant::now();
    assert_eq!(
        s.queue.cancel(&first, "stop").unwrap(),
        CancelOutcome::Requested
    );
    eventually("cancelled", || {
        s.queue.get(&first).unwrap().unwrap().state == State::Cancelled
    });
    // Seen at a heartbeat (a third of the 600 ms TTL); not asserted as a
    // time here (a loaded machine), but printed.
    println!("cancel seen after {:?}", asked.elapsed());
    // The next prefetched job is running now; stop releases it and the rest.
    rx.recv_timeout(10 * SEC).unwrap();
    w.stop(Duration::from_millis(200));
    // `stop` closed the lease stream gracefully (StopPoll, then read it to
    // its end): what was in flight came back to the Worker, which released
    // it with the rest before returning. None spent an attempt.
    for id in &rest {
        let j = s.queue.get(id).unwrap().unwrap();
        assert_eq!(j.attempts, 0, "{id}");
        assert_eq!(j.state, State::Pending, "{id}");
    }
    let k = w.counts();
    assert_eq!(k.cancelled, 1, "{k:?}");
    assert!((1..=5).contains(&k.released), "{k:?}");
}
