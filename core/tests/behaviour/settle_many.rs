//! `fail_many` and `release_many`: the batch forms of `fail` and `release`
//! move each job, log it and count it as the single calls do.

use super::*;
use telha_jobs::Failure;

/// Four leased jobs and their tokens.
fn four_leased(s: &TestStore) -> (Vec<JobId>, Vec<LeaseToken>) {
    let ids: Vec<JobId> = (0..4).map(|_| s.enqueue("embed")).collect();
    let tokens = (0..4).map(|_| s.must_lease("w").token()).collect();
    (ids, tokens)
}

/// What a settle left, apart from the job's id: its state, when, attempts,
/// last error, transitions.
fn outcome(s: &TestStore, id: &JobId) -> (State, u64, u32, Option<String>, Vec<String>) {
    let j = s.get(id);
    (
        j.state,
        j.state_ts,
        j.attempts,
        j.last_error.clone(),
        s.transitions(id),
    )
}

fn transitions_total(q: &Queue) -> Vec<String> {
    q.metrics()
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("telha_jobs_transitions_total{"))
        .map(str::to_string)
        .collect()
}

fn failures(t: &[LeaseToken]) -> Vec<Failure> {
    vec![
        Failure::new(t[0], "boom"),
        Failure::new(t[1], "bad input").not_retryable(),
        Failure::new(t[2], "later").retry_in(Duration::from_secs(60)),
    ]
}

#[test]
fn fail_many_and_release_many_move_log_and_count_as_fail_and_release_do() {
    let (one, many) = (TestStore::new(), TestStore::new());
    let (ids1, t1) = four_leased(&one);
    let (ids2, t2) = four_leased(&many);
    one.advance(SEC);
    many.advance(SEC);
    for f in failures(&t1) {
        one.q.fail_with(f).unwrap();
    }
    one.q.release(&t1[3]).unwrap();
    let failed = many.q.fail_many(failures(&t2)).unwrap();
    assert!(failed.iter().all(Result::is_ok), "{failed:?}");
    let released = many.q.release_many(&t2[3..]).unwrap();
    assert!(released.iter().all(Result::is_ok), "{released:?}");
    for (a, b) in ids1.iter().zip(&ids2) {
        assert_eq!(outcome(&one, a), outcome(&many, b));
    }
    assert_eq!(many.get(&ids2[0]).state, State::Failed);
    assert_eq!(many.get(&ids2[1]).state, State::Dead);
    assert_eq!(many.get(&ids2[2]).state_ts, many.now() + 60_000);
    assert_eq!(many.get(&ids2[3]).state, State::Pending);
    assert_eq!(transitions_total(&one.q), transitions_total(&many.q));
    assert_consistent(&many.q);
}

#[test]
fn fail_many_and_release_many_answer_a_lost_lease_per_item_and_commit_the_rest() {
    let s = TestStore::new();
    let (ids, t) = four_leased(&s);
    let unknown = LeaseToken {
        id: JobId::from_bytes([9; 16]),
        generation: 1,
    };
    let stale = LeaseToken {
        generation: t[1].generation + 1,
        ..t[1]
    };
    let answers =
        s.q.fail_many(vec![
            Failure::new(unknown, "x"),
            Failure::new(stale, "x"),
            Failure::new(t[0], "boom"),
            Failure::new(t[1], "x").retry_in(Duration::from_secs(200 * 366 * 24 * 3600)),
        ])
        .unwrap();
    let kinds: Vec<_> = answers
        .iter()
        .map(|a| a.as_ref().err().map(|e| e.kind()))
        .collect();
    assert_eq!(
        kinds,
        vec![
            Some(ErrorKind::NotFound),
            Some(ErrorKind::Aborted),
            None,
            Some(ErrorKind::InvalidArgument),
        ]
    );
    assert_eq!(s.get(&ids[0]).state, State::Failed);
    assert_eq!(s.get(&ids[1]).state, State::Leased, "untouched");
    let answers =
        s.q.release_many(&[t[2], unknown, t[0], t[2], t[1]])
            .unwrap();
    let kinds: Vec<_> = answers
        .iter()
        .map(|a| a.as_ref().err().map(|e| e.kind()))
        .collect();
    assert_eq!(
        kinds,
        vec![
            None,
            Some(ErrorKind::NotFound),
            Some(ErrorKind::Aborted), // failed, not released, by this token
            None,                     // a repeat answers as its release
            None,
        ]
    );
    for id in [&ids[1], &ids[2]] {
        assert_eq!(s.get(id).state, State::Pending);
        assert_eq!(s.get(id).attempts, 0);
    }
    assert_eq!(s.get(&ids[3]).state, State::Leased);
    assert!(s.q.fail_many(Vec::new()).unwrap().is_empty());
    assert!(s.q.release_many(&[]).unwrap().is_empty());
    s.q.close();
    expect_err(s.q.release_many(&[t[3]]), ErrorKind::Closed);
    expect_err(
        s.q.fail_many(vec![Failure::new(t[3], "x")]),
        ErrorKind::Closed,
    );
}
