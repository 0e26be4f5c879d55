//! Poison jobs: dead after exactly max_attempts, with their whole log.

use super::*;

// ---------------------------------------------------------------- poison

/// Leases and fails `id` until it is dead, moving the clock to each retry-at.
/// Returns how many times it was leased.
fn fail_until_dead(s: &TestStore, id: JobId) -> u32 {
    let mut leases = 0;
    loop {
        let job = s.lease("w").expect("the poison job is leasable again");
        assert_eq!(job.id, id);
        assert_eq!(job.attempts, leases, "attempts before this lease");
        leases += 1;
        s.q.fail(&job.token(), "cannot parse", true).unwrap();
        let info = s.get(&id);
        match info.state {
            State::Failed => {
                assert!(leases < 100, "never goes dead");
                assert!(info.state_ts > s.now());
                // Past the backoff: the job is due again.
                s.set_now(info.state_ts + 1);
            }
            State::Dead => return leases,
            other => panic!("a failed job is failed or dead, got {other}"),
        }
    }
}

fn assert_dead_with_full_log(s: &TestStore, id: JobId, attempts: u32) {
    let info = s.get(&id);
    assert_eq!(info.state, State::Dead);
    assert_eq!(info.attempts, attempts);
    assert_eq!(info.max_attempts, attempts);
    assert_eq!(info.dropped_events, 0);
    assert_eq!(count_events(&info, "leased"), attempts as usize);
    assert_eq!(count_events(&info, "failed"), attempts as usize);
    assert_eq!(count_events(&info, "dead"), 1);
    assert_eq!(info.events.first().unwrap().transition, "enqueued");
    assert_eq!(info.events.last().unwrap().transition, "dead");
    assert_eq!(info.last_error.as_deref(), Some("cannot parse"));
    // Dead is terminal: nobody leases it again, and it is kept until
    // dead_retention (7 days by default) has passed.
    s.advance(Duration::from_secs(6 * 24 * 3600));
    s.q.reap().unwrap();
    assert!(s.lease("w").is_none());
    assert_eq!(s.q.stats().unwrap().total.dead, 1);
    assert_consistent(&s.q);
}

#[test]
fn a_poison_job_is_leased_exactly_max_attempts_times_then_dead_with_its_event_log() {
    let s = TestStore::new();
    let id = s.enqueue("ingest:pdf");
    assert_eq!(fail_until_dead(&s, id), 5);
    assert_dead_with_full_log(&s, id, 5);
}

#[test]
fn a_per_job_max_attempts_bounds_the_poison_job() {
    let mut cfg = test_config();
    cfg.kinds.insert(
        "k".into(),
        KindConfig {
            max_attempts: Some(3),
            ..KindConfig::default()
        },
    );
    let s = TestStore::with_config(cfg);
    // The per-job ceiling wins over the per-kind one.
    let id = s.enqueue_with("k", EnqueueOptions::default().max_attempts(2));
    assert_eq!(s.get(&id).max_attempts, 2);
    assert_eq!(fail_until_dead(&s, id), 2);
    assert_dead_with_full_log(&s, id, 2);
}

#[test]
fn a_per_kind_max_attempts_bounds_the_poison_job() {
    let mut cfg = test_config();
    cfg.kinds.insert(
        "k".into(),
        KindConfig {
            max_attempts: Some(3),
            ..KindConfig::default()
        },
    );
    let s = TestStore::with_config(cfg);
    let id = s.enqueue("k");
    assert_eq!(s.get(&id).max_attempts, 3);
    assert_eq!(fail_until_dead(&s, id), 3);
    assert_dead_with_full_log(&s, id, 3);
}

#[test]
fn a_job_failed_as_not_retryable_is_dead_at_once() {
    let s = TestStore::new();
    let id = s.enqueue("embed");
    let job = s.must_lease("w");
    s.q.fail(&job.token(), "bad input", false).unwrap();
    let info = s.get(&id);
    assert_eq!((info.state, info.attempts), (State::Dead, 1));
    assert_eq!(s.transitions(&id), ["enqueued", "leased", "failed", "dead"]);
}
