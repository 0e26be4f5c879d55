//! Repeated settles (a retry after a lost reply) answer from the record: the
//! same answer as the first call while the job sits where that call left
//! it under the token's generation, `Aborted` once it moved on, `NotFound`
//! once it is gone. A repeat changes nothing.

use super::*;
use telha_jobs::{CancelOutcome, Completion, Failure};

/// One settle call of a token.
type Settle<'a> = dyn Fn(&LeaseToken) -> telha_jobs::Result<()> + 'a;

/// A job leased by `worker`, and its record right after `settle` took it.
fn settled(
    s: &TestStore,
    worker: &str,
    settle: impl Fn(&LeaseToken) -> telha_jobs::Result<()>,
) -> (LeaseToken, JobId) {
    let id = s.enqueue("embed");
    let job = s.q.lease_next(worker, &LeaseOptions::default()).unwrap();
    let job = job.expect("a job to lease");
    assert_eq!(job.id, id);
    settle(&job.token()).unwrap();
    (job.token(), id)
}

#[test]
fn a_repeated_complete_answers_ok_and_keeps_the_first_result() {
    let s = TestStore::new();
    let (t, id) = settled(&s, "w", |t| s.q.complete(t, Some(b"first")));
    let after = s.get(&id);
    s.q.complete(&t, Some(b"second")).unwrap();
    s.q.complete(&t, None).unwrap();
    assert_eq!(s.get(&id), after, "a repeat changes nothing");
    assert_eq!(after.result.as_deref(), Some(&b"first"[..]));
    // Another kind of settle did not end this lease: Aborted.
    expect_err(s.q.fail(&t, "late", true), ErrorKind::Aborted);
    expect_err(s.q.release(&t), ErrorKind::Aborted);
    expect_err(s.q.snooze(&t, SEC), ErrorKind::Aborted);
    assert_eq!(s.get(&id), after);
    assert_consistent(&s.q);
}

#[test]
fn a_repeated_fail_answers_ok_and_spends_no_second_attempt() {
    let s = TestStore::new();
    let (t, id) = settled(&s, "w", |t| s.q.fail(t, "boom", true));
    let after = s.get(&id);
    assert_eq!((after.state, after.attempts), (State::Failed, 1));
    s.q.fail(&t, "boom", true).unwrap();
    s.q.fail(&t, "other reason", false).unwrap();
    assert_eq!(s.get(&id), after);
    expect_err(s.q.complete(&t, None), ErrorKind::Aborted);
    expect_err(s.q.release(&t), ErrorKind::Aborted);
    expect_err(s.q.snooze(&t, SEC), ErrorKind::Aborted);

    // Not retryable: dead at once; the repeat answers Ok from dead.
    let (t, id) = settled(&s, "w", |t| s.q.fail(t, "fatal", false));
    let dead = s.get(&id);
    assert_eq!(dead.state, State::Dead);
    s.q.fail(&t, "fatal", false).unwrap();
    assert_eq!(s.get(&id), dead);
    expect_err(s.q.complete(&t, None), ErrorKind::Aborted);
    assert_consistent(&s.q);
}

#[test]
fn a_repeated_release_or_snooze_answers_ok_while_the_job_waits() {
    let s = TestStore::new();
    let (t, id) = settled(&s, "w", |t| s.q.release(t));
    let after = s.get(&id);
    assert_eq!(after.state, State::Pending);
    s.q.release(&t).unwrap();
    assert_eq!(s.get(&id), after);
    expect_err(s.q.snooze(&t, SEC), ErrorKind::Aborted);
    expect_err(s.q.complete(&t, None), ErrorKind::Aborted);
    // Once leased again, the old token is stale, for a repeat too.
    let next = s.must_lease("w2");
    assert_eq!(next.id, id);
    expect_err(s.q.release(&t), ErrorKind::Aborted);
    s.q.complete(&next.token(), None).unwrap();

    let (t, id) = settled(&s, "w", |t| s.q.snooze(t, HOUR));
    let after = s.get(&id);
    assert_eq!((after.state, after.snoozes), (State::Pending, 1));
    s.q.snooze(&t, HOUR).unwrap();
    s.q.snooze(&t, SEC).unwrap();
    assert_eq!(s.get(&id), after, "the first delay and count stand");
    expect_err(s.q.release(&t), ErrorKind::Aborted);
    expect_err(s.q.fail(&t, "x", true), ErrorKind::Aborted);
    assert_consistent(&s.q);
}

#[test]
fn a_repeated_snooze_past_max_snoozes_answers_ok_from_failed_and_dead() {
    let mut cfg = test_config();
    cfg.max_snoozes = 0;
    cfg.max_attempts = 2;
    let s = TestStore::with_config(cfg);
    let (t, id) = settled(&s, "w", |t| s.q.snooze(t, MS));
    let after = s.get(&id);
    assert_eq!((after.state, after.attempts), (State::Failed, 1));
    s.q.snooze(&t, MS).unwrap();
    expect_err(s.q.fail(&t, "x", true), ErrorKind::Aborted);
    assert_eq!(s.get(&id), after);

    s.advance(SEC);
    let last = s.must_lease("w");
    s.q.snooze(&last.token(), MS).unwrap();
    let dead = s.get(&id);
    assert_eq!((dead.state, dead.attempts), (State::Dead, 2));
    s.q.snooze(&last.token(), MS).unwrap();
    assert_eq!(s.get(&id), dead);
    assert_consistent(&s.q);
}

#[test]
fn a_repeat_after_a_cancel_request_answers_cancelled_again() {
    let s = TestStore::new();
    let settles: [(&str, &Settle); 4] = [
        ("complete", &|t| s.q.complete(t, Some(b"r"))),
        ("fail", &|t| s.q.fail(t, "boom", true)),
        ("release", &|t| s.q.release(t)),
        ("snooze", &|t| s.q.snooze(t, SEC)),
    ];
    for (i, (name, settle)) in settles.iter().enumerate() {
        let id = s.enqueue("embed");
        let job = s.must_lease("w");
        let reason = format!("operator {name}");
        assert_eq!(s.q.cancel(&id, &reason).unwrap(), CancelOutcome::Requested);
        let first = expect_err(settle(&job.token()), ErrorKind::Cancelled);
        let after = s.get(&id);
        assert_eq!(after.state, State::Cancelled, "{name}");
        let again = expect_err(settle(&job.token()), ErrorKind::Cancelled);
        assert_eq!(again.to_string(), first.to_string(), "{name}");
        assert_eq!(s.get(&id), after, "{name}");
        // Another call did not end that lease.
        let other = &settles[(i + 1) % settles.len()].1;
        expect_err(other(&job.token()), ErrorKind::Aborted);
    }
    // A cancel of a job already handed back is the operator's, not the
    // settle's: the repeated release is Aborted.
    let (t, id) = settled(&s, "w", |t| s.q.release(t));
    assert_eq!(s.q.cancel(&id, "x").unwrap(), CancelOutcome::Cancelled);
    expect_err(s.q.release(&t), ErrorKind::Aborted);
    assert_consistent(&s.q);
}

#[test]
fn a_stale_generation_is_aborted_even_for_the_settle_it_made() {
    let s = TestStore::new();
    let (t, id) = settled(&s, "w1", |t| s.q.fail(t, "boom", true));
    s.set_now(s.get(&id).state_ts);
    let second = s.must_lease("w2");
    assert_eq!(second.generation, t.generation + 1);
    s.q.fail(&second.token(), "boom", true).unwrap();
    // The job is failed again, by the newer lease.
    expect_err(s.q.fail(&t, "boom", true), ErrorKind::Aborted);
    let wrong = LeaseToken {
        id,
        generation: second.generation + 1,
    };
    expect_err(s.q.fail(&wrong, "boom", true), ErrorKind::Aborted);
    let never = LeaseToken { id, generation: 0 };
    expect_err(s.q.fail(&never, "boom", true), ErrorKind::Aborted);
    s.q.fail(&second.token(), "boom", true).unwrap();
    assert_consistent(&s.q);
}

#[test]
fn a_lease_the_reaper_expired_is_aborted_though_the_generation_matches() {
    let s = TestStore::new();
    let id = s.enqueue("embed");
    let job = s.must_lease("w");
    s.advance(TTL + MS);
    assert_eq!(s.q.reap().unwrap().expired, 1);
    let before = s.get(&id);
    assert_eq!(before.state, State::Pending);
    assert_eq!(before.generation, job.generation);
    expect_err(s.q.release(&job.token()), ErrorKind::Aborted);
    expect_err(s.q.snooze(&job.token(), SEC), ErrorKind::Aborted);
    expect_err(s.q.complete(&job.token(), None), ErrorKind::Aborted);
    assert_eq!(s.get(&id), before);
    assert_consistent(&s.q);
}

#[test]
fn a_repeat_for_a_pruned_or_deleted_job_is_not_found() {
    let s = TestStore::new();
    let (t, id) = settled(&s, "w", |t| s.q.complete(t, None));
    s.advance(Duration::from_secs(24 * 3600) + SEC);
    assert_eq!(s.q.reap().unwrap().pruned, 1);
    assert!(s.q.get(&id).unwrap().is_none());
    expect_err(s.q.complete(&t, None), ErrorKind::NotFound);

    let (t, id) = settled(&s, "w", |t| s.q.release(t));
    s.q.delete(&id).unwrap();
    expect_err(s.q.release(&t), ErrorKind::NotFound);
    assert_consistent(&s.q);
}

#[test]
fn a_repeat_after_an_operator_retry_is_aborted() {
    let s = TestStore::new();
    let (t, id) = settled(&s, "w", |t| s.q.fail(t, "fatal", false));
    s.q.retry(&id).unwrap();
    expect_err(s.q.fail(&t, "fatal", false), ErrorKind::Aborted);
    assert_eq!(s.get(&id).state, State::Pending);
    assert_consistent(&s.q);
}

#[test]
fn a_retried_complete_never_stages_its_follow_ups_twice() {
    let s = TestStore::new();
    let parent = s.enqueue("ingest");
    let job = s.must_lease("w");
    let child = |k: &str| NewJob::new(k, b"c".to_vec());
    let c = Completion::new(job.token(), None).then(vec![child("embed"), child("cascade")]);
    s.q.complete_with(c.clone()).unwrap();
    s.q.complete_with(c.clone()).unwrap();
    let many = s.q.complete_many(vec![c.clone(), c]).unwrap();
    assert!(many.iter().all(Result::is_ok), "{many:?}");
    let kids =
        s.q.list(&ListQuery {
            parent: Some(parent),
            ..ListQuery::default()
        })
        .unwrap()
        .jobs;
    assert_eq!(kids.len(), 2);
    assert_eq!(s.q.stats().unwrap().total.pending, 2);
    assert_consistent(&s.q);
}

#[test]
fn complete_many_answers_repeats_within_a_call_and_of_earlier_calls_alike() {
    let s = TestStore::new();
    let a = s.enqueue("embed");
    let b = s.enqueue("embed");
    let c = s.enqueue("embed");
    let (ja, jb, jc) = (s.must_lease("w"), s.must_lease("w"), s.must_lease("w"));
    assert_eq!((ja.id, jb.id, jc.id), (a, b, c));
    assert_eq!(s.q.cancel(&c, "stop").unwrap(), CancelOutcome::Requested);
    s.q.complete(&ja.token(), Some(b"a1")).unwrap();
    let stale = LeaseToken {
        id: b,
        generation: jb.generation + 1,
    };
    let ghost = LeaseToken {
        id: JobId::from_bytes([7; 16]),
        generation: 1,
    };
    let item = |t: LeaseToken, r: &[u8]| Completion::new(t, Some(r.to_vec()));
    let answers =
        s.q.complete_many(vec![
            item(ja.token(), b"a2"), // completed by an earlier call
            item(jb.token(), b"b1"), // completes here
            item(jb.token(), b"b2"), // named again
            item(stale, b"b3"),
            item(jc.token(), b"c1"), // cancelled
            item(jc.token(), b"c2"),
            item(ghost, b"g"),
        ])
        .unwrap();
    let kinds: Vec<_> = answers
        .iter()
        .map(|r| r.as_ref().err().map(|e| e.kind()))
        .collect();
    assert_eq!(
        kinds,
        [
            None,
            None,
            None,
            Some(ErrorKind::Aborted),
            Some(ErrorKind::Cancelled),
            Some(ErrorKind::Cancelled),
            Some(ErrorKind::NotFound),
        ]
    );
    assert_eq!(
        answers[4].as_ref().unwrap_err().to_string(),
        answers[5].as_ref().unwrap_err().to_string()
    );
    let before: Vec<_> = [a, b, c].iter().map(|id| s.get(id)).collect();
    assert_eq!(before[0].result.as_deref(), Some(&b"a1"[..]));
    assert_eq!(before[1].result.as_deref(), Some(&b"b1"[..]));
    assert_eq!(before[2].state, State::Cancelled);
    assert_eq!(count_events(&before[1], "completed"), 1);

    // The whole call again: the same answers, nothing changes.
    let again =
        s.q.complete_many(vec![
            item(ja.token(), b"x"),
            item(jb.token(), b"x"),
            item(jc.token(), b"x"),
        ])
        .unwrap();
    assert!(again[0].is_ok() && again[1].is_ok());
    assert_eq!(
        again[2].as_ref().unwrap_err().to_string(),
        answers[4].as_ref().unwrap_err().to_string()
    );
    let after: Vec<_> = [a, b, c].iter().map(|id| s.get(id)).collect();
    assert_eq!(after, before);
    assert_consistent(&s.q);
}

#[test]
fn a_repeat_after_a_reopen_answers_from_the_stored_record() {
    let mut s = TestStore::new();
    let (t, id) = settled(&s, "w", |t| s.q.complete(t, None));
    let (r, rid) = settled(&s, "w", |t| s.q.fail_with(Failure::new(*t, "boom")));
    s.reopen();
    s.q.complete(&t, None).unwrap();
    s.q.fail(&r, "boom", true).unwrap();
    assert_eq!(s.get(&id).state, State::Completed);
    assert_eq!(s.get(&rid).attempts, 1);
    assert_consistent(&s.q);
}
