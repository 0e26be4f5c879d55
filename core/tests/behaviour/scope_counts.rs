//! Counts per scope: exact through every move, durable across a reopen,
//! rebuilt at open for a store from before them or when an older build moved
//! jobs without keeping them, and checked by `check`.

use super::*;
use telha_jobs::state::{encode_counters, PerState};
use telha_jobs::store::{scope_counter_key, SCOPE_COUNTERS_MARKER};
use telha_jobs::Scope;

const A: &str = "0190c0de-0000-7000-8000-0000000000c1";
const B: &str = "0190c0de-0000-7000-8000-0000000000c2";

fn scope(s: &str) -> Scope {
    s.parse().unwrap()
}

fn in_scope(s: &TestStore, sc: &str, kind: &str) -> JobId {
    s.enqueue_with(
        kind,
        EnqueueOptions {
            scope: Some(scope(sc)),
            ..EnqueueOptions::default()
        },
    )
}

fn counts(q: &Queue, sc: &str) -> telha_jobs::StateCounts {
    q.stats()
        .unwrap()
        .by_scope
        .get(&scope(sc))
        .copied()
        .unwrap_or_default()
}

/// Three jobs in A (one dead, one completed, one pending), one pending in B.
fn seeded() -> TestStore {
    let s = TestStore::new();
    in_scope(&s, A, "embed");
    in_scope(&s, A, "embed");
    in_scope(&s, A, "ingest");
    in_scope(&s, B, "embed");
    let o = |kind: &str| LeaseOptions {
        scopes: vec![scope(A)],
        kinds: vec![kind.parse().unwrap()],
        ..LeaseOptions::default()
    };
    let j = s.q.lease_next("w", &o("ingest")).unwrap().unwrap();
    s.q.fail(&j.token(), "bad", false).unwrap();
    let j = s.q.lease_next("w", &o("embed")).unwrap().unwrap();
    s.q.complete(&j.token(), None).unwrap();
    s
}

fn assert_seeded_counts(q: &Queue) {
    let a = counts(q, A);
    assert_eq!((a.pending, a.dead, a.completed, a.leased), (1, 1, 1, 0));
    let b = counts(q, B);
    assert_eq!((b.pending, b.total()), (1, 1));
    let st = q.stats().unwrap();
    let sum: u64 = st.by_scope.values().map(|c| c.total()).sum();
    assert_eq!(sum, st.total.total());
    let report = q.check().unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}

#[test]
fn counts_per_scope_follow_every_move_and_survive_a_reopen() {
    let mut s = seeded();
    assert_seeded_counts(&s.q);
    s.reopen();
    assert_seeded_counts(&s.q);
    // A scope whose last job goes is omitted.
    let only_b = s.q.list(&ListQuery {
        scope: Some(scope(B)),
        ..ListQuery::default()
    });
    s.q.delete(&only_b.unwrap().jobs[0].id).unwrap();
    assert!(!s.q.stats().unwrap().by_scope.contains_key(&scope(B)));
}

fn raw_edit(s: &mut TestStore, edit: impl FnOnce(&rocksdb::DB, &rocksdb::ColumnFamily)) {
    s.q.close();
    {
        let db = raw_db(s.path());
        let cf = db.cf_handle("counters").unwrap();
        edit(&db, cf);
        db.flush_cf(cf).unwrap();
    }
    s.reopen();
}

#[test]
fn a_store_from_before_them_gets_them_rebuilt_at_open() {
    let mut s = seeded();
    raw_edit(&mut s, |db, cf| {
        for sc in [A, B] {
            db.delete_cf(cf, scope_counter_key(&scope(sc))).unwrap();
        }
        db.delete_cf(cf, SCOPE_COUNTERS_MARKER).unwrap();
    });
    assert_seeded_counts(&s.q);
    s.reopen(); // rebuilt once, written: the next open reads them
    assert_seeded_counts(&s.q);
}

#[test]
fn counters_an_older_build_left_stale_are_rebuilt_at_open() {
    let mut s = seeded();
    // An older build moved jobs and kept only the per-kind counters: the
    // per-scope sums no longer match them.
    raw_edit(&mut s, |db, cf| {
        let mut d = PerState::<i64>::default();
        d[State::Pending] = 5;
        db.merge_cf(cf, scope_counter_key(&scope(A)), encode_counters(&d))
            .unwrap();
    });
    assert_seeded_counts(&s.q);
}

#[test]
fn check_names_per_scope_counters_that_disagree_with_a_scan() {
    let mut s = seeded();
    // A drift that keeps every per-state sum: not caught at open, caught
    // by check.
    raw_edit(&mut s, |db, cf| {
        let (mut up, mut down) = (PerState::<i64>::default(), PerState::<i64>::default());
        up[State::Pending] = 1;
        down[State::Pending] = -1;
        db.merge_cf(cf, scope_counter_key(&scope(A)), encode_counters(&up))
            .unwrap();
        db.merge_cf(cf, scope_counter_key(&scope(B)), encode_counters(&down))
            .unwrap();
    });
    let problems = s.q.check().unwrap().problems;
    assert!(
        problems
            .iter()
            .any(|p| p.contains("per-scope counters on disk")),
        "{problems:?}"
    );
}
