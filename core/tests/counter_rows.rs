//! The store's per-scope counters rows (issue 50): a scope whose jobs have
//! all been pruned leaves no row once compaction has seen it, and dropping
//! such rows never changes a count, whatever was merged after them.

#[path = "common/mod.rs"]
mod common;

use common::*;
use telha_jobs::store::{self, CF_COUNTERS, SCOPE_COUNTER_PREFIX};
use telha_jobs::{EnqueueOptions, LeaseOptions, NewJob, Scope};

fn scope(i: u128) -> Scope {
    Scope::from_uuid(uuid::Uuid::from_u128(0xc0_0000 + i))
}

fn in_scope(sc: Scope) -> EnqueueOptions {
    EnqueueOptions {
        scope: Some(sc),
        ..EnqueueOptions::default()
    }
}

/// Flush and fully compact the counters family of the closed store at
/// `path` (twice: the first compaction merges operands into values, the
/// second filters values), then list the scopes that still have a row.
fn compact_and_list(path: &std::path::Path) -> Vec<Scope> {
    let db = store::open(path).expect("open the store raw");
    let cf = db.cf_handle(CF_COUNTERS).unwrap();
    db.flush_cf(cf).unwrap();
    for _ in 0..2 {
        db.compact_range_cf(cf, None::<&[u8]>, None::<&[u8]>);
    }
    let mut out = Vec::new();
    let mut it = db.raw_iterator_cf(cf);
    it.seek(SCOPE_COUNTER_PREFIX);
    while let Some(k) = it.key() {
        match store::scope_of_counter_key(k) {
            Some(s) => out.push(s),
            None => break,
        }
        it.next();
    }
    it.status().unwrap();
    out
}

#[test]
fn a_pruned_scope_leaves_no_counters_row_and_counts_stay_exact() {
    let mut s = TestStore::with_config(telha_jobs::Config {
        completed_retention: Some(SEC),
        ..test_config()
    });
    let live = Scope::from_uuid(uuid::Uuid::from_u128(0x11fe));
    s.enqueue_with("embed", in_scope(live));
    for round in 0..2u128 {
        let jobs = (0..300)
            .map(|i| NewJob::new("embed", b"x".to_vec()).with(in_scope(scope(round * 300 + i))))
            .collect();
        s.q.enqueue_many(jobs).unwrap();
        let leased = s.q.lease_many("w", 300, &LeaseOptions::default()).unwrap();
        assert_eq!(leased.len(), 300);
        let done = leased
            .iter()
            .map(|j| telha_jobs::Completion::new(j.token(), None))
            .collect();
        assert!(s.q.complete_many(done).unwrap().iter().all(|r| r.is_ok()));
    }
    loop {
        s.advance(2 * SEC);
        if s.q.reap().unwrap().pruned == 0 {
            break;
        }
    }
    assert_consistent(&s.q);
    s.q.close();
    assert_eq!(compact_and_list(s.path()), vec![live]);

    // Scopes whose rows were dropped come back: their new operands add up
    // from nothing exactly as they did from zeros.
    s.reopen();
    assert_consistent(&s.q);
    s.enqueue_with("embed", in_scope(scope(0)));
    s.enqueue_with("embed", in_scope(scope(0)));
    s.enqueue_with("embed", in_scope(scope(599)));
    s.q.close();
    let mut kept = compact_and_list(s.path());
    kept.sort();
    let mut want = vec![live, scope(0), scope(599)];
    want.sort();
    assert_eq!(kept, want);
    s.reopen();
    assert_consistent(&s.q);
    let st = s.q.stats().unwrap();
    assert_eq!(st.by_scope[&scope(0)].pending, 2);
    assert_eq!(st.by_scope[&scope(599)].pending, 1);
    assert_eq!(st.by_scope[&live].pending, 1);
    assert_eq!(st.by_scope.len(), 3);
}
