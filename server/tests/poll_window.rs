//! A `PollJobs` stream's window sized by time (issue 37): with `floor`
//! the server keeps about 100 ms of the handlers' work unsettled, at least
//! `floor` and at most `capacity`; without it, a fixed `capacity`.

mod common;

use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use telha_jobs::{Completion, JobStore, LeaseOptions, NewJob};
use telha_jobs_client::JobStream;

fn backlog(s: &common::Served, n: usize) {
    let jobs = (0..n).map(|i| NewJob::new("w", i.to_string().into_bytes()));
    s.queue.enqueue_many(jobs.collect()).unwrap();
}

/// Read the stream, handle each lease (`handle` long) and complete it
/// until `total` jobs are done by everyone; the most leases this reader
/// held unsettled at once, its message sizes and how many it completed.
fn drain(
    c: &telha_jobs_client::RemoteQueue,
    mut stream: JobStream,
    handle: Duration,
    done: &Mutex<usize>,
    total: usize,
) -> (usize, Vec<usize>, usize) {
    let (mut held_max, mut sizes, mut mine) = (0, Vec::new(), 0);
    while *done.lock().unwrap() < total {
        let Some(batch) = stream.next_batch(Some(Duration::from_millis(200))).unwrap() else {
            break;
        };
        if batch.is_empty() {
            continue;
        }
        sizes.push(batch.len());
        held_max = held_max.max(batch.len());
        let mut items = Vec::new();
        for j in &batch {
            if !handle.is_zero() {
                thread::sleep(handle);
            }
            items.push(Completion::new(j.token(), None));
        }
        for r in c.complete_many(items).unwrap() {
            r.unwrap();
        }
        mine += batch.len();
        *done.lock().unwrap() += batch.len();
    }
    stream.close_release().unwrap();
    (held_max, sizes, mine)
}

#[test]
fn slow_workers_share_a_small_backlog() {
    let s = common::served();
    backlog(&s, 20);
    let done = Arc::new(Mutex::new(0));
    // Two workers of concurrency 1 with room for 257 each (the Python
    // Worker's default prefetch), handlers of 100 ms.
    let mut readers = Vec::new();
    for w in ["a", "b"] {
        let c = s.client();
        let stream = c
            .poll_jobs_window(w, &LeaseOptions::default(), 257, Some(1))
            .unwrap();
        let done = done.clone();
        readers.push(thread::spawn(move || {
            drain(&c, stream, Duration::from_millis(100), &done, 20)
        }));
    }
    // The store's own count of leased jobs, sampled while they run.
    let most_leased = {
        let (q, done) = (s.queue.clone(), done.clone());
        thread::spawn(move || {
            let mut most = 0;
            while *done.lock().unwrap() < 20 {
                most = most.max(q.stats().unwrap().total.leased);
                thread::sleep(Duration::from_millis(5));
            }
            most
        })
    };
    let got: Vec<_> = readers.into_iter().map(|r| r.join().unwrap()).collect();
    let most_leased = most_leased.join().unwrap();
    assert!(most_leased <= 6, "{most_leased} leased at once");
    // With a fixed window the first stream leased all 20 at once.
    for (w, (held_max, sizes, mine)) in ["a", "b"].iter().zip(&got) {
        assert!(*mine >= 5, "{w} did {mine} of 20 ({got:?})");
        assert!(*held_max <= 3, "{w} held {held_max} at once ({sizes:?})");
    }
    assert_eq!(got[0].2 + got[1].2, 20);
}

#[test]
fn fast_handlers_grow_the_window_to_capacity() {
    let s = common::served();
    backlog(&s, 4000);
    let c = s.client();
    let stream = c
        .poll_jobs_window("w", &LeaseOptions::default(), 64, Some(1))
        .unwrap();
    let done = Mutex::new(0);
    let (held_max, sizes, mine) = drain(&c, stream, Duration::ZERO, &done, 4000);
    assert_eq!(mine, 4000);
    // It starts at the floor (nothing settled yet) ...
    assert_eq!(sizes[0], 1, "{sizes:?}");
    // ... and no-op handlers drain it within a round trip: it grows.
    assert!(held_max >= 32, "largest message {held_max}: {sizes:?}");
    assert!(held_max <= 64, "{sizes:?}");
}

#[test]
fn without_a_floor_the_window_is_fixed() {
    let s = common::served();
    backlog(&s, 100);
    let c = s.client();
    // An old client's request: no floor.
    let mut stream = c.poll_jobs("w", &LeaseOptions::default(), 40).unwrap();
    let first = stream
        .next_batch(Some(Duration::from_secs(10)))
        .unwrap()
        .unwrap();
    assert_eq!(first.len(), 40);
    stream.close_release().unwrap();
}

#[test]
fn a_bad_floor_or_window_is_invalid_argument() {
    let s = common::served();
    let c = s.client();
    for floor in [0, 9] {
        let e = c
            .poll_jobs_window("w", &LeaseOptions::default(), 8, Some(floor))
            .err()
            .unwrap_or_else(|| panic!("floor {floor} was taken"));
        assert_eq!(e.kind(), telha_jobs::ErrorKind::InvalidArgument, "{e}");
    }
}
