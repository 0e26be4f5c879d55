//! Settling leases: stale tokens, extend, release.

use super::*;

// ---------------------------------------------------------- stale submit

#[test]
fn a_reaped_workers_late_complete_fail_extend_and_release_are_aborted_and_change_nothing() {
    let s = TestStore::new();
    let id = s.enqueue("embed");
    let old = s.must_lease("w1");
    assert_eq!(old.generation, 1);
    assert_eq!(old.deadline, s.now() + 300_000);

    s.advance(TTL + MS);
    let report = s.q.reap().unwrap();
    assert_eq!((report.expired, report.dead), (1, 0));
    let before = s.get(&id);
    assert_eq!(before.state, State::Pending);
    assert_eq!(before.attempts, 1);
    assert_eq!(before.events.last().unwrap().transition, "lease_expired");

    let t = old.token();
    expect_err(s.q.complete(&t, Some(b"late")), ErrorKind::Aborted);
    expect_err(s.q.fail(&t, "late", true), ErrorKind::Aborted);
    expect_err(s.q.release(&t), ErrorKind::Aborted);
    let ext = s.q.extend(&[t], "w1").unwrap();
    assert_eq!(ext.len(), 1);
    expect_err(ext.into_iter().next().unwrap(), ErrorKind::Aborted);
    assert_eq!(s.get(&id), before, "a stale submit changes nothing");

    // After its backoff (10 s for a first failure) the job is re-leased
    // under a higher generation, and the new lease settles normally.
    assert!(s.lease("w2").is_none(), "still backing off");
    s.set_now(before.state_ts);
    let new = s.must_lease("w2");
    assert_eq!(new.id, id);
    assert!(new.generation > old.generation);
    assert_eq!(new.attempts, 1);
    // The old token is still stale while the new lease is live.
    expect_err(s.q.complete(&t, None), ErrorKind::Aborted);
    assert_eq!(s.get(&id).worker_id.as_deref(), Some("w2"));
    s.q.complete(&new.token(), Some(b"done")).unwrap();
    let info = s.get(&id);
    assert_eq!(info.state, State::Completed);
    assert_eq!(info.result.as_deref(), Some(&b"done"[..]));
    assert_consistent(&s.q);
}

#[test]
fn a_completed_token_is_aborted_for_any_other_settle() {
    let s = TestStore::new();
    let id = s.enqueue("embed");
    let job = s.must_lease("w");
    s.q.complete(&job.token(), None).unwrap();
    let after = s.get(&id);
    // A second complete is a retry, answered as the first (resettle.rs).
    s.q.complete(&job.token(), None).unwrap();
    expect_err(s.q.fail(&job.token(), "x", true), ErrorKind::Aborted);
    expect_err(s.q.release(&job.token()), ErrorKind::Aborted);
    assert_eq!(s.get(&id), after);
}

// --------------------------------------------------------------- release

#[test]
fn a_released_job_is_pending_again_without_spending_an_attempt_and_keeps_its_place() {
    let s = TestStore::new();
    let a = s.enqueue("embed");
    let b = s.enqueue("embed");
    let first = s.must_lease("w1");
    assert_eq!(first.id, a);
    s.advance(Duration::from_secs(5));
    s.q.release(&first.token()).unwrap();
    let info = s.get(&a);
    assert_eq!(info.state, State::Pending);
    assert_eq!(info.attempts, 0);
    assert_eq!(info.lease_deadline, None);
    assert_eq!(info.events.last().unwrap().transition, "released");
    expect_err(s.q.complete(&first.token(), None), ErrorKind::Aborted);

    let again = s.must_lease("w2");
    assert_eq!(again.id, a, "back at its place in line, ahead of b");
    assert_eq!(again.attempts, 0);
    assert!(again.generation > first.generation);
    assert_eq!(s.must_lease("w2").id, b);
    assert_consistent(&s.q);
}

// ---------------------------------------------------------------- extend

#[test]
fn extend_moves_the_deadline_to_now_plus_the_ttl() {
    let mut cfg = test_config();
    cfg.kinds.insert(
        "long".into(),
        KindConfig {
            lease_ttl: Some(Duration::from_secs(900)),
            ..KindConfig::default()
        },
    );
    let s = TestStore::with_config(cfg);
    let id = s.enqueue("embed");
    let t0 = s.now();
    let job = s.must_lease("w1");
    assert_eq!(job.deadline, t0 + 300_000);
    s.advance(Duration::from_secs(200));
    let d = s.q.extend(&[job.token()], "w1").unwrap();
    assert_eq!(d.len(), 1);
    let deadline = *d[0].as_ref().unwrap();
    assert_eq!(deadline, t0 + 500_000);
    let info = s.get(&id);
    assert_eq!(info.lease_deadline, Some(deadline));
    assert_eq!(info.state_ts, deadline);

    // Past the original deadline, the extended lease survives a reaper pass.
    s.advance(Duration::from_secs(250));
    assert_eq!(s.q.reap().unwrap().expired, 0);
    assert_eq!(s.get(&id).state, State::Leased);
    s.q.complete(&job.token(), None).unwrap();

    // A per-kind TTL applies to leases and to extends.
    s.enqueue("long");
    let long = s.must_lease("w1");
    assert_eq!(long.deadline, s.now() + 900_000);
    s.advance(Duration::from_secs(100));
    let d = s.q.extend(&[long.token()], "w1").unwrap();
    assert_eq!(*d[0].as_ref().unwrap(), s.now() + 900_000);
    assert_consistent(&s.q);
}

#[test]
fn extend_by_another_worker_is_aborted_and_changes_nothing() {
    let s = TestStore::new();
    let id = s.enqueue("embed");
    let job = s.must_lease("w1");
    s.advance(Duration::from_secs(60));
    let before = s.get(&id);
    let d = s.q.extend(&[job.token()], "w2").unwrap();
    expect_err(d.into_iter().next().unwrap(), ErrorKind::Aborted);
    assert_eq!(s.get(&id), before);
    // The owner still holds the lease.
    s.q.complete(&job.token(), None).unwrap();
}

#[test]
fn extend_answers_each_token_of_a_mixed_batch_on_its_own() {
    let s = TestStore::new();
    s.enqueue("embed");
    s.enqueue("embed");
    let live = s.must_lease("w");
    let stale = s.must_lease("w");
    s.q.release(&stale.token()).unwrap();
    let unknown = LeaseToken {
        id: JobId::from_bytes([9; 16]),
        generation: 1,
    };
    s.advance(Duration::from_secs(10));
    let d =
        s.q.extend(&[live.token(), stale.token(), unknown], "w")
            .unwrap();
    assert_eq!(d.len(), 3);
    let mut d = d.into_iter();
    assert_eq!(d.next().unwrap().unwrap(), s.now() + 300_000);
    expect_err(d.next().unwrap(), ErrorKind::Aborted);
    expect_err(d.next().unwrap(), ErrorKind::NotFound);
}

#[test]
fn extend_renews_a_live_token_even_when_the_batch_also_names_an_old_lease_of_that_job() {
    let s = TestStore::new();
    let id = s.enqueue("embed");
    let old = s.must_lease("w");
    s.q.release(&old.token()).unwrap();
    let live = s.must_lease("w");
    assert_eq!(live.id, id);
    s.advance(Duration::from_secs(100));
    let want = s.now() + 300_000;

    // Live first, then the stale one: each gets its own answer.
    let d = s.q.extend(&[live.token(), old.token()], "w").unwrap();
    assert_eq!(*d[0].as_ref().unwrap(), want);
    expect_err(d.into_iter().nth(1).unwrap(), ErrorKind::Aborted);

    // Stale first: the live lease must still be renewed, not reported lost.
    s.advance(Duration::from_secs(100));
    let want = s.now() + 300_000;
    let d = s.q.extend(&[old.token(), live.token()], "w").unwrap();
    let mut d = d.into_iter();
    expect_err(d.next().unwrap(), ErrorKind::Aborted);
    let renewed = d.next().unwrap();
    assert!(
        matches!(renewed, Ok(t) if t == want),
        "the live token was answered {renewed:?}, want Ok({want})"
    );
    assert_eq!(s.get(&id).lease_deadline, Some(want));
}

#[test]
fn extend_answers_a_token_repeated_in_one_batch_the_same_each_time() {
    let s = TestStore::new();
    let id = s.enqueue("embed");
    let job = s.must_lease("w");
    s.advance(Duration::from_secs(100));
    let want = s.now() + 300_000;
    let d = s.q.extend(&[job.token(), job.token()], "w").unwrap();
    let d: Vec<_> = d
        .into_iter()
        .map(|a| a.map_err(|e| e.to_string()))
        .collect();
    assert_eq!(d, [Ok(want), Ok(want)]);
    assert_eq!(s.get(&id).lease_deadline, Some(want));
}
