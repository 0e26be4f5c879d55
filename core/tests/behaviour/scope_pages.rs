//! `stats` pages its per-scope counts: the totals and per-kind counts stay
//! whole, and a walk of the pages (by name, or by a count) visits every
//! scope with jobs exactly once, in order, at 100,000 scopes.

use super::*;
use telha_jobs::{ScopeOrder, StatsQuery};

const SCOPES: u32 = 100_000;
/// Scopes `0..BUSY` hold a second pending job, so they rank first by
/// pending.
const BUSY: u32 = 1_000;

fn nth(i: u32) -> Scope {
    let mut b = [0u8; 16];
    b[0] = 0x5c;
    b[12..].copy_from_slice(&i.to_be_bytes());
    Scope::from_bytes(b)
}

fn seeded() -> TestStore {
    let s = TestStore::new();
    let jobs: Vec<NewJob> = (0..SCOPES)
        .chain(0..BUSY)
        .map(|i| NewJob {
            options: EnqueueOptions {
                scope: Some(nth(i)),
                ..EnqueueOptions::default()
            },
            ..NewJob::new("embed", vec![])
        })
        .collect();
    for chunk in jobs.chunks(10_000) {
        s.q.enqueue_many(chunk.to_vec()).unwrap();
    }
    s
}

/// Every page of `order` (`limit` per page), concatenated in page order.
fn walk(q: &Queue, order: ScopeOrder, limit: usize) -> (Vec<(Scope, u64)>, usize) {
    let mut query = StatsQuery {
        scope_order: order,
        scope_limit: limit,
        ..StatsQuery::default()
    };
    let (mut out, mut pages) = (Vec::new(), 0);
    loop {
        let st = q.stats_with(&query).unwrap();
        assert_eq!(
            st.total.pending,
            u64::from(SCOPES + BUSY),
            "totals stay whole"
        );
        assert_eq!(st.by_kind["embed"].pending, u64::from(SCOPES + BUSY));
        assert!(st.by_scope.len() <= limit);
        pages += 1;
        out.extend(st.scopes_ranked().into_iter().map(|(s, c)| (s, c.pending)));
        match st.scopes_next {
            Some(n) => query.scopes_after = Some(n),
            None => return (out, pages),
        }
    }
}

#[test]
fn stats_pages_visit_every_one_of_100_000_scopes_exactly_once() {
    let s = seeded();
    let want: Vec<Scope> = (0..SCOPES).map(nth).collect();

    let (by_name, pages) = walk(&s.q, ScopeOrder::Name, 1_000);
    assert_eq!(pages, 100);
    let names: Vec<Scope> = by_name.iter().map(|(s, _)| *s).collect();
    assert_eq!(names, want, "by name: each scope once, ascending");

    let (by_pending, _) = walk(&s.q, ScopeOrder::Pending, 10_000);
    let seen: HashSet<Scope> = by_pending.iter().map(|(s, _)| *s).collect();
    assert_eq!((by_pending.len(), seen.len()), (want.len(), want.len()));
    let counts: Vec<u64> = by_pending.iter().map(|(_, n)| *n).collect();
    assert!(
        counts.windows(2).all(|w| w[0] >= w[1]),
        "most pending first"
    );
    assert!(by_pending[..BUSY as usize].iter().all(|(_, n)| *n == 2));
    let ranked: Vec<(u64, Scope)> = by_pending.iter().map(|(s, n)| (u64::MAX - n, *s)).collect();
    assert!(ranked.windows(2).all(|w| w[0] < w[1]), "ties by scope");
}

#[test]
fn stats_by_default_returns_the_top_100_and_says_more_exist() {
    let s = seeded();
    let st = s.q.stats().unwrap();
    assert_eq!(st.scope_order, ScopeOrder::Pending);
    assert_eq!(st.by_scope.len(), 100);
    assert!(st.scopes_next.is_some());
    assert!(st.by_scope.values().all(|c| c.pending == 2));
    assert_eq!(st.total.pending, u64::from(SCOPES + BUSY));
    // A prefix narrows the list (the page's search), here to 16 scopes.
    let prefix = nth(0).to_string()[..35].to_string();
    let found =
        s.q.stats_with(&StatsQuery {
            scope_order: ScopeOrder::Name,
            scope_prefix: Some(prefix),
            ..StatsQuery::default()
        })
        .unwrap();
    assert_eq!(
        found.by_scope.keys().copied().collect::<Vec<_>>(),
        (0..16).map(nth).collect::<Vec<_>>()
    );
    // No scopes at all: only the counts.
    let none =
        s.q.stats_with(&StatsQuery {
            scope_limit: 0,
            ..StatsQuery::default()
        })
        .unwrap();
    assert!(none.by_scope.is_empty());
    assert_eq!(none.total.pending, u64::from(SCOPES + BUSY));
    let err =
        s.q.stats_with(&StatsQuery {
            scope_limit: telha_jobs::limits::MAX_SCOPE_LIMIT + 1,
            ..StatsQuery::default()
        })
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
}
