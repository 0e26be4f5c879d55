//! The steering checker's own tests: a true history passes, and a repeat
//! outside its window, a second job inside a window and a steer missing
//! from the record are each caught, on a real store.

use std::sync::Arc;
use std::time::Duration;

use telha_jobs::{EnqueueOptions, ManualClock, Queue};

use super::*;

const T0: u64 = 1_800_000_000_000;

/// Key `t0-k2`: a 300 ms window, `unique_states` any.
const KEY: &str = "t0-k2";

fn open(dir: &std::path::Path) -> (Queue, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(T0));
    let q = Queue::open_with_clock(dir, crate::steer::config(false, false), clock.clone()).unwrap();
    (q, clock)
}

fn windowed(ms: u64) -> EnqueueOptions {
    EnqueueOptions::default()
        .idempotency_key(KEY)
        .unique_for(Duration::from_millis(ms))
        .priority(7)
}

fn failing(out: &[Verdict], part: &str) -> bool {
    out.iter().any(|(n, r)| n.contains(part) && r.is_err())
}

fn all_pass(out: &[Verdict]) {
    assert!(out.iter().all(|(_, r)| r.is_ok()), "{out:?}");
}

#[test]
fn a_true_history_passes_and_a_late_repeat_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let (q, clock) = open(dir.path());
    let a = q.enqueue("steer:t0", b"a", windowed(300)).unwrap();
    clock.advance(Duration::from_millis(100));
    let again = q.enqueue("steer:t0", b"a", windowed(300)).unwrap();
    assert!(!again.created);
    q.reschedule(&a.id, T0 + 5_000).unwrap();
    q.set_priority(&a.id, 9).unwrap();
    let us = |ms: u64| ms * 1000;
    let log = format!(
        "Q {} {KEY} 0 7 -\nE {} {} 0 new\nQ {} {KEY} 0 7 -\nE {} {} 0 dup\n\
         I {} {} 0 reschedule {}\nO {} {} 0 \nI {} {} 0 priority 9\nO {} {} 0 \n",
        us(T0),
        us(T0),
        a.id,
        us(T0 + 100),
        us(T0 + 100),
        a.id,
        us(T0 + 101),
        a.id,
        T0 + 5_000,
        us(T0 + 101),
        a.id,
        us(T0 + 102),
        a.id,
        us(T0 + 102),
        a.id,
    );
    let mut h = History::default();
    h.add_thread_log(1, 0, &log);
    all_pass(&verify(&q, &h));

    // The same repeat claimed 400 ms after the window opened (it ended at 300).
    let late = log.replace(
        &format!("Q {} ", us(T0 + 100)),
        &format!("Q {} ", us(T0 + 400)),
    );
    let mut h = History::default();
    h.add_thread_log(1, 0, &late);
    assert!(failing(&verify(&q, &h), "a repeat inside a window"));

    // A reschedule the record does not show, and a priority it does not.
    let moved = log
        .replace(
            &format!("reschedule {}", T0 + 5_000),
            &format!("reschedule {}", T0 + 6_000),
        )
        .replace("priority 9", "priority 10");
    let mut h = History::default();
    h.add_thread_log(1, 0, &moved);
    assert!(failing(&verify(&q, &h), "promote/reschedule/priority"));
    q.close();
}

#[test]
fn a_second_job_inside_a_window_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let (q, clock) = open(dir.path());
    // Windows of 1 ms where the checker expects the key's 300 ms: the
    // second job is made 10 ms after the first, inside the expected window.
    let a = q.enqueue("steer:t0", b"a", windowed(1)).unwrap();
    clock.advance(Duration::from_millis(10));
    let b = q.enqueue("steer:t0", b"b", windowed(1)).unwrap();
    assert!(a.created && b.created);
    let log = format!(
        "Q {} {KEY} 0 7 -\nE {} {} 0 new\nQ {} {KEY} 0 7 -\nE {} {} 0 new\n",
        T0 * 1000,
        T0 * 1000,
        a.id,
        (T0 + 10) * 1000,
        (T0 + 10) * 1000,
        b.id
    );
    let mut h = History::default();
    h.add_thread_log(1, 0, &log);
    let out = verify(&q, &h);
    assert!(failing(&out, "no second job for a key"), "{out:?}");
    // And a job the log never mentions is one nobody enqueued.
    let mut h = History::default();
    h.add_thread_log(
        1,
        0,
        log.split_inclusive('\n')
            .take(2)
            .collect::<String>()
            .as_str(),
    );
    assert!(failing(&verify(&q, &h), "no job nobody enqueued"));
    q.close();
}
