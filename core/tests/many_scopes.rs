//! Many tenants at once (issue 49): round robin and weighted turns stay
//! exact over 10,000 active scopes, delayed work parks its scope until it
//! is due, and drained scopes leave the set pollers walk, whichever way
//! they were drained.

#[path = "common/mod.rs"]
mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::*;
use telha_jobs::{EnqueueOptions, LeaseOptions, Limit, LimitTarget, NewJob, Scope};

const SCOPES: usize = 10_000;

fn scope(i: usize) -> Scope {
    Scope::from_uuid(uuid::Uuid::from_u128(0x0005_c09e_0000_0000 + i as u128))
}

fn job(sc: Scope, kind: &str) -> NewJob {
    NewJob::new(kind, b"x".to_vec()).with(EnqueueOptions {
        scope: Some(sc),
        ..EnqueueOptions::default()
    })
}

fn enqueue_all(s: &TestStore, jobs: Vec<NewJob>) {
    for chunk in jobs.chunks(1_000) {
        s.q.enqueue_many(chunk.to_vec()).unwrap();
    }
}

fn gauge(s: &TestStore, series: &str) -> f64 {
    metric(&s.q.metrics().unwrap(), series).unwrap_or_else(|| panic!("no {series}"))
}

#[test]
fn round_robin_is_exact_over_10000_active_scopes_beside_delayed_ones() {
    let s = TestStore::new();
    // Three ready jobs per scope, and every tenth position a scope whose
    // only job is an hour away (it must neither be served nor break the turn).
    let later = Scope::from_uuid(uuid::Uuid::from_u128(7));
    let mut delayed = Vec::new();
    let mut jobs = Vec::new();
    for i in 0..SCOPES {
        jobs.push(job(scope(i), "embed"));
        if i % 10 == 0 {
            let d = Scope::from_uuid(uuid::Uuid::from_u128(0x000d_e1a7_0000 + i as u128));
            delayed.push(d);
            jobs.push(job(d, "embed").with(EnqueueOptions {
                scope: Some(d),
                delay: Some(Duration::from_secs(3600)),
                ..EnqueueOptions::default()
            }));
        }
    }
    enqueue_all(&s, jobs);
    enqueue_all(
        &s,
        (0..2 * SCOPES)
            .map(|i| job(scope(i % SCOPES), "embed"))
            .collect(),
    );
    let index: HashMap<Scope, usize> = (0..SCOPES).map(|i| (scope(i), i)).collect();
    // The walk starts just after the first-seen scope, then goes round.
    let mut want = 1;
    for n in 0..3 * SCOPES {
        let j = s.must_lease("w");
        let got = *index
            .get(&j.scope)
            .unwrap_or_else(|| panic!("lease {n}: a delayed scope was served"));
        assert_eq!(got, want, "lease {n}");
        want = (want + 1) % SCOPES;
    }
    assert!(s.lease("w").is_none());
    // Every drained scope left the walk; the delayed ones are parked.
    assert_eq!(gauge(&s, "telha_jobs_scopes_active"), 0.0);
    assert_eq!(gauge(&s, "telha_jobs_scopes_parked"), delayed.len() as f64);
    // Due: each delayed scope is served once, in round-robin order.
    s.enqueue_with(
        "embed",
        EnqueueOptions {
            scope: Some(later),
            ..EnqueueOptions::default()
        },
    );
    s.advance(Duration::from_secs(3600));
    let mut served: Vec<Scope> = (0..=delayed.len())
        .map(|_| s.must_lease("w").scope)
        .collect();
    assert!(s.lease("w").is_none());
    // The walk resumes after scope 0, served last: each delayed scope sits
    // just after a ready one, and the newest scope comes last.
    assert_eq!(served.pop(), Some(later));
    assert_eq!(served, delayed);
    assert_consistent(&s.q);
}

#[test]
fn weighted_turns_are_exact_over_10000_active_scopes() {
    let s = TestStore::new();
    // Every 100th scope has weight 2 or 3, the rest the default 1.
    let weight = |i: usize| match i % 200 {
        0 => 3,
        100 => 2,
        _ => 1,
    };
    let round: usize = (0..SCOPES).map(weight).sum();
    for i in (0..SCOPES).filter(|i| weight(*i) > 1) {
        s.q.set_limit(
            &LimitTarget::Scope(scope(i)),
            Limit::weight(weight(i) as u32),
        )
        .unwrap();
    }
    let jobs = (0..3)
        .flat_map(|_| (0..SCOPES).flat_map(|i| (0..weight(i)).map(move |_| job(scope(i), "embed"))))
        .collect();
    enqueue_all(&s, jobs);
    let mut got: HashMap<Scope, usize> = HashMap::new();
    for r in 1..=2 {
        for _ in 0..round {
            *got.entry(s.must_lease("w").scope).or_default() += 1;
        }
        for i in 0..SCOPES {
            assert_eq!(got[&scope(i)], r * weight(i), "round {r}, scope {i}");
        }
    }
    // Batches take at most a scope's remaining turn and go on.
    let batch = 50;
    assert_eq!(round % batch, 0);
    for _ in 0..round / batch {
        for j in
            s.q.lease_many("w", batch, &LeaseOptions::default())
                .unwrap()
        {
            *got.entry(j.scope).or_default() += 1;
        }
    }
    for i in 0..SCOPES {
        assert_eq!(got[&scope(i)], 3 * weight(i), "batched round, scope {i}");
    }
    assert!(s.lease("w").is_none());
}

#[test]
fn scopes_drained_by_kind_filtered_pollers_leave_the_walk() {
    let s = TestStore::new();
    enqueue_all(&s, (0..1_000).map(|i| job(scope(i), "embed")).collect());
    enqueue_all(&s, (1_000..1_100).map(|i| job(scope(i), "ocr")).collect());
    assert_eq!(gauge(&s, "telha_jobs_scopes_active"), 1_100.0);
    let embed = LeaseOptions::default().kind("embed").unwrap();
    for _ in 0..1_000 {
        let j = s.q.lease_next("w", &embed).unwrap().unwrap();
        s.q.complete(&j.token(), None).unwrap();
    }
    assert!(s.q.lease_next("w", &embed).unwrap().is_none());
    // Each scope left the walk when its last job was claimed, without a
    // poller ever looking at it again; the other kind's stay.
    assert_eq!(gauge(&s, "telha_jobs_scopes_active"), 100.0);
    for _ in 0..100 {
        assert_eq!(s.must_lease("w").kind, "ocr");
    }
    assert_eq!(gauge(&s, "telha_jobs_scopes_active"), 0.0);
    assert_consistent(&s.q);
}

/// Issue 50: what the engine holds per scope follows the scopes that have
/// work, not every scope ever seen.
#[test]
fn memory_per_scope_returns_to_the_live_scopes_after_pruning() {
    let s = TestStore::with_config(telha_jobs::Config {
        completed_retention: Some(SEC),
        ..test_config()
    });
    let live = |i: u128| Scope::from_uuid(uuid::Uuid::from_u128(0x11fe_0000 + i));
    // Live: three scopes with a job due tomorrow (band state and counters),
    // a paused scope without jobs (band state), a scope whose only job is
    // leased (counters: its band state is not needed until it settles).
    for i in 0..3 {
        s.enqueue_with(
            "embed",
            EnqueueOptions {
                scope: Some(live(i)),
                delay: Some(Duration::from_secs(86_400)),
                ..EnqueueOptions::default()
            },
        );
    }
    s.q.pause(&telha_jobs::PauseTarget::Scope(live(3))).unwrap();
    s.enqueue_with(
        "embed",
        EnqueueOptions {
            scope: Some(live(4)),
            ..EnqueueOptions::default()
        },
    );
    let held =
        s.q.lease_next("w", &LeaseOptions::default().scope(live(4)))
            .unwrap()
            .unwrap();
    let prune_all = || loop {
        s.advance(2 * SEC);
        if s.q.reap().unwrap().pruned == 0 {
            break;
        }
    };
    let (batch, batches) = (1_000, 200);
    for b in 0..batches {
        let jobs = (0..batch)
            .map(|i| job(scope(1_000_000 + b * batch + i), "embed"))
            .collect();
        s.q.enqueue_many(jobs).unwrap();
        let leased =
            s.q.lease_many("w", batch, &LeaseOptions::default())
                .unwrap();
        assert_eq!(leased.len(), batch);
        let done = leased
            .iter()
            .map(|j| telha_jobs::Completion::new(j.token(), None))
            .collect();
        assert!(s.q.complete_many(done).unwrap().iter().all(|r| r.is_ok()));
        if b % 20 == 19 {
            prune_all();
            // Bounded between passes too.
            assert_eq!(gauge(&s, "telha_jobs_scopes_in_memory"), 4.0, "batch {b}");
        }
    }
    prune_all();
    assert_eq!(gauge(&s, "telha_jobs_scopes_in_memory"), 4.0);
    assert_eq!(gauge(&s, "telha_jobs_scope_counters_in_memory"), 4.0);
    // A forgotten scope comes back on its next enqueue, counted exactly.
    let again = scope(1_000_000);
    for _ in 0..2 {
        s.enqueue_with(
            "embed",
            EnqueueOptions {
                scope: Some(again),
                ..EnqueueOptions::default()
            },
        );
    }
    for _ in 0..2 {
        let j = s.must_lease("w");
        assert_eq!(j.scope, again);
        s.q.complete(&j.token(), None).unwrap();
    }
    assert!(s.lease("w").is_none());
    s.q.complete(&held.token(), None).unwrap();
    assert_consistent(&s.q);
    prune_all();
    // The leased job's scope was rebuilt by nothing: a completion needs no
    // band state. Left: the delayed three and the paused one.
    assert_eq!(gauge(&s, "telha_jobs_scopes_in_memory"), 4.0);
    assert_eq!(gauge(&s, "telha_jobs_scope_counters_in_memory"), 3.0);
}

/// RocksDB's own memory is in the metrics beside the engine's (issue 50):
/// the memtables per family grow with what was written, the counters
/// family's included.
#[test]
fn rocksdb_memory_is_in_the_metrics_per_family() {
    let s = TestStore::new();
    let before = gauge(
        &s,
        "telha_jobs_rocksdb_memory_bytes{cf=\"counters\",part=\"memtables\"}",
    );
    enqueue_all(&s, (0..2_000).map(|i| job(scope(i), "embed")).collect());
    for cf in ["jobs", "ids", "kinds", "counters"] {
        let m = gauge(
            &s,
            &format!("telha_jobs_rocksdb_memory_bytes{{cf=\"{cf}\",part=\"memtables\"}}"),
        );
        assert!(m > 0.0, "{cf}: {m}");
        gauge(
            &s,
            &format!("telha_jobs_rocksdb_memory_bytes{{cf=\"{cf}\",part=\"table_readers\"}}"),
        );
    }
    let after = gauge(
        &s,
        "telha_jobs_rocksdb_memory_bytes{cf=\"counters\",part=\"memtables\"}",
    );
    assert!(after > before, "{before} -> {after}");
    gauge(&s, "telha_jobs_rocksdb_block_cache_bytes{part=\"usage\"}");
}
