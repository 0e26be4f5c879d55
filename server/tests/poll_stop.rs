//! Stopping a `PollJobs` stream gracefully (`JobStream::close`, the
//! `StopPoll` handshake): while jobs keep being enqueued, a worker stops
//! its stream and another worker leases right away: every job is either
//! completed by the first or leased by the second, none left leased by
//! nobody (a lease the server had written to the connection when the
//! client dropped the stream used to stay leased until its TTL).

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use telha_jobs::{EnqueueOptions, JobStore, LeaseOptions, Outcome, Queue, Worker};
use telha_jobs_client::{JobStream, RemoteQueue};
use telha_jobs_proto::v1 as pb;

const ROUNDS: usize = 20;

/// Enqueue jobs on `q` until the flag is set; answers how many.
fn enqueuer(q: Queue, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let mut n = 0;
        while !stop.load(Ordering::SeqCst) {
            q.enqueue("embed", b"p", EnqueueOptions::default()).unwrap();
            n += 1;
            std::thread::sleep(Duration::from_micros(200));
        }
        n
    })
}

/// After the first worker stopped: a second one leases everything ready
/// at once; nothing is left leased by nobody. Settles the round.
fn check_nothing_stuck(q: &Queue, c: &RemoteQueue, round: usize) {
    let t = q.stats().unwrap().total;
    let got = c
        .lease_many("w2", 10_000, &LeaseOptions::default())
        .unwrap();
    assert_eq!(got.len() as u64, t.pending, "round {round}: {t:?}");
    let t2 = q.stats().unwrap().total;
    assert_eq!(
        t2.leased,
        got.len() as u64,
        "round {round}: leased by nobody after the stop: {t2:?}"
    );
    for j in &got {
        assert_eq!(j.attempts, 0, "a give-back spends no attempt");
        c.complete(&j.token(), None).unwrap();
    }
}

/// Read a few batches from the stream (completing them) while jobs keep
/// coming, then stop taking and end it with `end`.
fn stream_rounds(end: impl Fn(JobStream)) {
    let s = common::served();
    let c = s.client();
    for round in 0..ROUNDS {
        let stop = Arc::new(AtomicBool::new(false));
        let e = enqueuer(s.queue.clone(), stop.clone());
        let mut stream = c.poll_jobs("w1", &LeaseOptions::default(), 4).unwrap();
        let mut done = 0;
        while done < 6 {
            let jobs = stream
                .next_batch(Some(Duration::from_secs(10)))
                .unwrap()
                .unwrap();
            for j in &jobs {
                c.complete(&j.token(), None).unwrap();
                done += 1;
            }
        }
        // The server pushes up to the capacity meanwhile; nobody reads it.
        std::thread::sleep(Duration::from_millis(20));
        end(stream);
        stop.store(true, Ordering::SeqCst);
        let n = e.join().unwrap();
        check_nothing_stuck(&s.queue, &c, round);
        let t = s.queue.stats().unwrap().total;
        assert!(t.completed >= n, "round {round}: {t:?}, {n} enqueued");
    }
}

#[test]
fn a_closed_stream_leaves_no_lease_with_nobody() {
    stream_rounds(|mut st| {
        st.close_release().unwrap();
        // Closed: nothing more comes.
        assert!(st.next_batch(Some(Duration::ZERO)).unwrap().is_none());
    });
}

#[test]
fn a_stream_dropped_outside_an_async_context_closes_the_same_way() {
    stream_rounds(drop);
}

#[test]
fn close_answers_the_leases_that_came_meanwhile_for_the_caller_to_release() {
    let s = common::served();
    let c = s.client();
    let mut stream = c.poll_jobs("w1", &LeaseOptions::default(), 3).unwrap();
    for _ in 0..3 {
        s.queue
            .enqueue("embed", b"p", EnqueueOptions::default())
            .unwrap();
    }
    let mut seen = 0;
    while seen < 3 {
        let t = s.queue.stats().unwrap().total;
        seen = t.leased;
        std::thread::sleep(Duration::from_millis(5));
    }
    // All three are on their way (or in the client's buffers) unread.
    let jobs = stream.close().unwrap();
    assert_eq!(jobs.len(), 3);
    assert!(
        stream.close().unwrap().is_empty(),
        "a second close: nothing"
    );
    for j in &jobs {
        c.release(&j.token()).unwrap();
    }
    assert_eq!(s.queue.stats().unwrap().total.pending, 3);
}

#[test]
fn a_remote_worker_stop_leaves_no_lease_with_nobody() {
    let s = common::served();
    let c = s.client();
    for round in 0..ROUNDS / 2 {
        let stop = Arc::new(AtomicBool::new(false));
        let e = enqueuer(s.queue.clone(), stop.clone());
        let ran = Arc::new(AtomicU64::new(0));
        let r2 = ran.clone();
        let store: Arc<dyn JobStore> = Arc::new(c.clone());
        let w = Worker::builder(store, move |_ctx| {
            r2.fetch_add(1, Ordering::SeqCst);
            Outcome::done()
        })
        .concurrency(2)
        .prefetch(8)
        .build()
        .unwrap()
        .start()
        .unwrap();
        while ran.load(Ordering::SeqCst) < 10 {
            std::thread::sleep(Duration::from_millis(2));
        }
        w.stop(Duration::from_secs(5));
        stop.store(true, Ordering::SeqCst);
        e.join().unwrap();
        check_nothing_stuck(&s.queue, &c, round);
    }
}

#[test]
fn stop_poll_of_an_unknown_stream_is_harmless() {
    let s = common::served();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let found = rt.block_on(async {
        let mut g = pb::jobs_client::JobsClient::connect(s.url.clone())
            .await
            .unwrap();
        g.stop_poll(pb::StopPollRequest {
            stream_id: "no-such-stream".into(),
        })
        .await
        .unwrap()
        .into_inner()
        .found
    });
    assert!(!found);
}
