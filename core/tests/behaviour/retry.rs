//! Operator retry and retention.

use super::*;

// ----------------------------------------------------------------- retry

#[test]
fn retrying_a_dead_job_makes_it_pending_with_attempts_reset_and_logs_it() {
    let s = TestStore::new();
    let id = s.enqueue_with("embed", EnqueueOptions::default().max_attempts(1));
    let job = s.must_lease("w");
    s.q.fail(&job.token(), "boom", true).unwrap();
    assert_eq!(s.get(&id).state, State::Dead);
    s.advance(Duration::from_secs(60));
    s.q.retry(&id).unwrap();
    let info = s.get(&id);
    assert_eq!(info.state, State::Pending);
    assert_eq!(info.attempts, 0);
    assert_eq!(info.state_ts, s.now());
    assert_eq!(info.events.last().unwrap().transition, "retried");
    let stats = s.q.stats().unwrap();
    assert_eq!((stats.total.pending, stats.total.dead), (1, 0));
    let job = s.must_lease("w");
    assert_eq!((job.id, job.attempts), (id, 0));
    s.q.complete(&job.token(), None).unwrap();
    assert_consistent(&s.q);
}

#[test]
fn retrying_a_failed_job_makes_it_leasable_at_once() {
    let s = TestStore::new();
    let id = s.enqueue("embed");
    s.q.fail(&s.must_lease("w").token(), "x", true).unwrap();
    assert!(s.lease("w").is_none(), "backing off");
    s.q.retry(&id).unwrap();
    let info = s.get(&id);
    assert_eq!((info.state, info.attempts), (State::Pending, 0));
    assert_eq!(s.must_lease("w").id, id);
    assert_consistent(&s.q);
}

#[test]
fn retry_refuses_pending_leased_and_completed_jobs_and_unknown_ids() {
    let s = TestStore::new();
    let id = s.enqueue("embed");
    expect_err(s.q.retry(&id), ErrorKind::InvalidArgument);
    let job = s.must_lease("w");
    expect_err(s.q.retry(&id), ErrorKind::InvalidArgument);
    let before = s.get(&id);
    assert_eq!(before.state, State::Leased);
    s.q.complete(&job.token(), None).unwrap();
    expect_err(s.q.retry(&id), ErrorKind::InvalidArgument);
    assert_eq!(s.get(&id).state, State::Completed);
    expect_err(s.q.retry(&JobId::from_bytes([7; 16])), ErrorKind::NotFound);
}

// ------------------------------------------------------------- retention

#[test]
fn reap_prunes_completed_jobs_past_retention_and_dead_ones_past_theirs() {
    let s = TestStore::new();
    let old = s.enqueue("embed");
    s.q.complete(&s.must_lease("w").token(), None).unwrap();
    let dead = s.enqueue("embed");
    s.q.fail(&s.must_lease("w").token(), "no", false).unwrap();
    s.advance(12 * HOUR);
    let newer = s.enqueue("embed");
    s.q.complete(&s.must_lease("w").token(), None).unwrap();
    assert_eq!(s.q.reap().unwrap().pruned, 0, "nothing is 24 h old yet");

    s.advance(12 * HOUR + SEC);
    let report = s.q.reap().unwrap();
    assert_eq!(report.pruned, 1);
    assert!(s.q.get(&old).unwrap().is_none());
    assert_eq!(s.get(&newer).state, State::Completed);
    assert_eq!(s.get(&dead).state, State::Dead);
    let stats = s.q.stats().unwrap();
    assert_eq!((stats.total.completed, stats.total.dead), (1, 1));
    assert_eq!(stats.by_kind["embed"].completed, 1);

    // Later the newer one goes too; the dead one stays for dead_retention
    // (7 days by default)...
    s.advance(5 * 24 * HOUR);
    assert_eq!(s.q.reap().unwrap().pruned, 1);
    assert!(s.q.get(&newer).unwrap().is_none());
    assert_eq!(s.get(&dead).state, State::Dead);
    assert_eq!(s.q.stats().unwrap().total.total(), 1);
    // ...and then goes as well.
    s.advance(2 * 24 * HOUR);
    assert_eq!(s.q.reap().unwrap().pruned, 1);
    assert!(s.q.get(&dead).unwrap().is_none());
    assert_eq!(s.q.stats().unwrap().total.total(), 0);
    assert_consistent(&s.q);
}
