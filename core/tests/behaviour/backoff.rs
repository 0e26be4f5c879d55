//! Backoff schedules and retry-at.

use super::*;

// --------------------------------------------------------------- backoff

/// Leases `id` and fails it `n` times, each time moving the clock to exactly
/// the retry-at; returns each retry-at minus the fail time, in seconds.
fn retry_delays(s: &TestStore, id: JobId, n: usize) -> Vec<u64> {
    let mut out = Vec::new();
    // Only this job's kind: another test job may be due at the same time.
    let own = kinds(&[s.get(&id).kind.as_str()]);
    for _ in 0..n {
        let job = lease_with(s, &own).expect("due at its retry-at");
        assert_eq!(job.id, id);
        s.q.fail(&job.token(), "transient", true).unwrap();
        let info = s.get(&id);
        assert_eq!(info.state, State::Failed);
        let delay_ms = info.state_ts - s.now();
        assert_eq!(delay_ms % 1000, 0, "whole seconds, got {delay_ms} ms");
        out.push(delay_ms / 1000);
        s.set_now(info.state_ts);
    }
    out
}

#[test]
fn backoff_is_10_40_160_640_2560_seconds_then_capped_at_an_hour() {
    let s = TestStore::new();
    let id = s.enqueue_with("embed", EnqueueOptions::default().max_attempts(10));
    assert_eq!(
        retry_delays(&s, id, 7),
        [10, 40, 160, 640, 2560, 3600, 3600]
    );
}

#[test]
fn a_per_kind_backoff_base_above_the_cap_raises_the_cap_for_that_kind() {
    let mut cfg = test_config();
    cfg.kinds.insert(
        "slow".into(),
        KindConfig {
            backoff_base: Some(2 * HOUR),
            ..KindConfig::default()
        },
    );
    let s = TestStore::with_config(cfg);
    let slow = s.enqueue_with("slow", EnqueueOptions::default().max_attempts(10));
    assert_eq!(retry_delays(&s, slow, 4), [7200; 4]);
    // Other kinds keep the global schedule.
    let other = s.enqueue_with("embed", EnqueueOptions::default().max_attempts(10));
    assert_eq!(retry_delays(&s, other, 2), [10, 40]);
}

#[test]
fn backoff_base_secs_by_kind_sets_the_base_and_raises_the_cap() {
    let mut cfg = test_config();
    cfg.backoff_base_secs_by_kind
        .insert("clarify:temporal".into(), 7200);
    cfg.backoff_base_secs_by_kind.insert("quick".into(), 1);
    let s = TestStore::with_config(cfg);
    let t = s.enqueue_with(
        "clarify:temporal",
        EnqueueOptions::default().max_attempts(10),
    );
    assert_eq!(retry_delays(&s, t, 3), [7200; 3]);
    // A small base keeps the global factor and cap.
    let q = s.enqueue_with("quick", EnqueueOptions::default().max_attempts(10));
    assert_eq!(
        retry_delays(&s, q, 8),
        [1, 4, 16, 64, 256, 1024, 3600, 3600]
    );
}

#[test]
fn an_expired_lease_goes_back_to_pending_after_the_kinds_backoff() {
    let mut cfg = test_config();
    cfg.backoff_base_secs_by_kind
        .insert("clarify:temporal".into(), 7200);
    let s = TestStore::with_config(cfg);
    let a = s.enqueue("embed");
    let b = s.enqueue("clarify:temporal");
    s.must_lease("w");
    s.must_lease("w");
    s.advance(TTL);
    let report = s.q.reap().unwrap();
    assert_eq!(report.expired, 2);
    let now = s.now();
    for (id, wait) in [(a, 10_000), (b, 7_200_000)] {
        let info = s.get(&id);
        assert_eq!(info.state, State::Pending);
        assert_eq!(info.attempts, 1);
        assert_eq!(info.state_ts, now + wait);
        assert_eq!(info.lease_deadline, None);
    }
}

#[test]
fn a_failed_job_becomes_leasable_exactly_at_its_retry_at_without_a_reaper_pass() {
    let s = TestStore::new();
    let id = s.enqueue("ingest:pdf");
    let job = s.must_lease("w");
    s.q.fail(&job.token(), "timeout", true).unwrap();
    let retry_at = s.get(&id).state_ts;
    assert_eq!(retry_at, s.now() + 10_000);
    let filtered = kinds(&["ingest:*"]);

    s.set_now(retry_at - 1);
    assert!(s.lease("w").is_none(), "1 ms before retry-at");
    assert!(
        lease_with(&s, &filtered).is_none(),
        "1 ms before, kind filter"
    );
    assert_eq!(s.get(&id).state, State::Failed);

    s.set_now(retry_at);
    let again = s.lease("w").expect("leasable exactly at retry-at");
    assert_eq!((again.id, again.attempts), (id, 1));

    // The same through the kind index.
    s.q.fail(&again.token(), "timeout", true).unwrap();
    let retry_at = s.get(&id).state_ts;
    assert_eq!(retry_at, s.now() + 40_000);
    s.set_now(retry_at - 1);
    assert!(lease_with(&s, &filtered).is_none());
    s.set_now(retry_at);
    let third = lease_with(&s, &filtered).expect("leasable at retry-at through a filter");
    assert_eq!((third.id, third.attempts), (id, 2));
    assert_consistent(&s.q);
}

#[test]
fn a_backing_off_job_does_not_block_the_ready_work_behind_it() {
    let s = TestStore::new();
    let a = s.enqueue("embed");
    let job = s.must_lease("w");
    s.q.fail(&job.token(), "x", true).unwrap();
    let b = s.enqueue("embed");
    assert_eq!(s.must_lease("w").id, b);
    assert!(s.lease("w").is_none());
    s.advance(Duration::from_secs(10));
    assert_eq!(s.must_lease("w").id, a);
}
