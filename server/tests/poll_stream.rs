//! A `PollJobs` stream that ends with leases the transport never took:
//! those are released at once (not left leased, by nobody, until their TTL
//! runs out and then counted as a failed attempt).

mod common;

use std::time::{Duration, Instant};

use telha_jobs::{Config, EnqueueOptions, JobStore, LeaseOptions};
use telha_jobs_server::ServeOptions;

fn wait_for(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn leases_queued_for_a_stream_that_ends_are_released_at_once() {
    let config = Config {
        max_payload_bytes: 1 << 20,
        ..common::config()
    };
    let s = common::served_with(config, ServeOptions::default());
    let c = s.client();
    // Never read: after the first message or two HTTP/2's flow-control
    // window is full, so later messages wait in the stream's own queue.
    let stream = c.poll_jobs("w", &LeaseOptions::default(), 8).unwrap();
    let big = vec![7u8; 512 * 1024];
    for i in 1..=8u64 {
        c.enqueue("embed", &big, EnqueueOptions::default()).unwrap();
        // One job per message: the next enqueue after this one is leased.
        wait_for("the job to be leased", || {
            s.queue.stats().unwrap().total.leased == i
        });
    }
    let server = s.server.as_ref().unwrap();
    // Dropped inside an async context: no graceful close (poll_stop.rs),
    // just the end of the stream, as an old client's.
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(async move { drop(stream) });
    wait_for("the stream to close", || server.stats().open_streams() == 0);
    // Long before any TTL (the default is far above this wait), the
    // undelivered ones are pending again, with no attempt spent: the two in
    // the stream's queue (its capacity) and the one waiting to join them.
    // (Without the stream's own release only the last one was.)
    wait_for("undelivered leases to be released", || {
        s.queue.stats().unwrap().total.pending >= 3
    });
    let t = s.queue.stats().unwrap().total;
    assert_eq!(t.pending + t.leased, 8, "{t:?}");
    assert_eq!(t.failed + t.dead, 0, "{t:?}");
    // The released jobs are leased again at once, by another worker.
    let again = c
        .lease_many("w2", t.pending as usize, &LeaseOptions::default())
        .unwrap();
    assert_eq!(again.len() as u64, t.pending);
    for j in &again {
        assert_eq!(j.attempts, 0, "a release spends no attempt");
    }
}
