//! Behaviour of the public `Queue` API, one guarantee per test. Time comes
//! from a `ManualClock`; nothing here sleeps except the long-poll tests, whose
//! subject is real-time blocking.

mod common;

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use telha_jobs::store::keys::JobKey;
use telha_jobs::{
    EnqueueOptions, ErrorKind, JobId, KindConfig, LeaseOptions, LeaseToken, ListQuery, ManualClock,
    NewJob, Queue, Scope, State,
};

const HOUR: Duration = Duration::from_secs(3600);
const TTL: Duration = Duration::from_secs(300);

fn scope(n: u8) -> Scope {
    Scope::from_bytes([n; 16])
}

fn kinds(patterns: &[&str]) -> LeaseOptions {
    patterns.iter().fold(LeaseOptions::default(), |o, p| {
        o.kind(p).expect("valid pattern")
    })
}

fn lease_with(s: &TestStore, opts: &LeaseOptions) -> Option<telha_jobs::Job> {
    s.q.lease_next("w", opts).expect("lease_next")
}

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
    // Dead is terminal: however long we wait, nobody leases it again.
    s.advance(Duration::from_secs(30 * 24 * 3600));
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
fn a_token_settled_once_is_aborted_the_second_time() {
    let s = TestStore::new();
    let id = s.enqueue("embed");
    let job = s.must_lease("w");
    s.q.complete(&job.token(), None).unwrap();
    let after = s.get(&id);
    expect_err(s.q.complete(&job.token(), None), ErrorKind::Aborted);
    expect_err(s.q.fail(&job.token(), "x", true), ErrorKind::Aborted);
    expect_err(s.q.release(&job.token()), ErrorKind::Aborted);
    assert_eq!(s.get(&id), after);
}

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

// ------------------------------------------------------------ scheduling

#[test]
fn a_delayed_job_is_leased_at_its_run_at_and_not_before() {
    let s = TestStore::new();
    let t0 = s.now();
    let delayed = s.enqueue_with(
        "embed",
        EnqueueOptions::default().delay(Duration::from_secs(60)),
    );
    let at = s.enqueue_with("embed", EnqueueOptions::default().run_at(t0 + 120_000));
    assert_eq!(s.get(&delayed).state_ts, t0 + 60_000);
    assert_eq!(s.get(&at).state_ts, t0 + 120_000);

    assert!(s.lease("w").is_none());
    s.set_now(t0 + 60_000 - 1);
    assert!(s.lease("w").is_none());
    s.set_now(t0 + 60_000);
    assert_eq!(s.must_lease("w").id, delayed);
    s.set_now(t0 + 120_000 - 1);
    assert!(s.lease("w").is_none());
    s.set_now(t0 + 120_000);
    assert_eq!(s.must_lease("w").id, at);
}

#[test]
fn run_at_wins_over_delay_and_a_past_run_at_is_ready_now() {
    let s = TestStore::new();
    let t0 = s.now();
    let both = s.enqueue_with(
        "embed",
        EnqueueOptions::default().delay(HOUR).run_at(t0 + 5_000),
    );
    assert_eq!(s.get(&both).state_ts, t0 + 5_000);
    let past = s.enqueue_with("embed", EnqueueOptions::default().run_at(t0 - 5_000));
    assert_eq!(s.must_lease("w").id, past);
    assert!(s.lease("w").is_none());
    s.advance(Duration::from_secs(5));
    assert_eq!(s.must_lease("w").id, both);
}

#[test]
fn the_most_urgent_priority_is_leased_first_regardless_of_enqueue_order() {
    let s = TestStore::new();
    let low = s.enqueue_with("embed", EnqueueOptions::default().priority(255));
    let mid = s.enqueue("embed"); // default 128
    let high = s.enqueue_with("embed", EnqueueOptions::default().priority(0));
    let mid2 = s.enqueue_with("embed", EnqueueOptions::default().priority(128));
    assert_eq!(s.get(&mid).priority, 128);
    let order: Vec<JobId> = (0..4).map(|_| s.must_lease("w").id).collect();
    assert_eq!(order, [high, mid, mid2, low]);
}

#[test]
fn jobs_of_one_priority_are_leased_in_enqueue_order() {
    let s = TestStore::new();
    // All at the same clock millisecond: the order comes from the ids.
    let ids: Vec<JobId> = (0..50).map(|_| s.enqueue("embed")).collect();
    let leased: Vec<JobId> = (0..50).map(|_| s.must_lease("w").id).collect();
    assert_eq!(leased, ids);
    assert!(s.lease("w").is_none());
}

#[test]
fn a_delayed_urgent_job_does_not_block_ready_less_urgent_work() {
    let s = TestStore::new();
    let urgent = s.enqueue_with("embed", EnqueueOptions::default().priority(0).delay(HOUR));
    let lazy = s.enqueue_with("embed", EnqueueOptions::default().priority(200));
    assert_eq!(s.must_lease("w").id, lazy);
    assert!(s.lease("w").is_none());
    s.advance(HOUR);
    assert_eq!(s.must_lease("w").id, urgent);
}

// ----------------------------------------------------------- idempotency

#[test]
fn a_repeated_idempotency_key_in_a_scope_returns_the_existing_job() {
    let s = TestStore::new();
    let opts = EnqueueOptions::default().idempotency_key("doc-42");
    let first = s.q.enqueue("embed", b"a", opts.clone()).unwrap();
    assert!(first.created);
    let again = s.q.enqueue("embed", b"b", opts.clone()).unwrap();
    assert_eq!((again.id, again.created), (first.id, false));
    assert_eq!(s.get(&first.id).payload, b"a", "the first payload stays");
    assert_eq!(s.q.stats().unwrap().total.total(), 1);

    // While the job exists, in any state, the key keeps answering it.
    let job = s.must_lease("w");
    assert_eq!(
        s.q.enqueue("embed", b"c", opts.clone()).unwrap().id,
        first.id
    );
    s.q.complete(&job.token(), None).unwrap();
    let done = s.q.enqueue("embed", b"d", opts).unwrap();
    assert_eq!((done.id, done.created), (first.id, false));
    assert_consistent(&s.q);
}

#[test]
fn the_same_idempotency_key_in_another_scope_is_another_job() {
    let s = TestStore::new();
    let k = EnqueueOptions::default().idempotency_key("doc-42");
    let nil = s.q.enqueue("embed", b"", k.clone()).unwrap();
    let a =
        s.q.enqueue("embed", b"", k.clone().scope(scope(1)))
            .unwrap();
    let b =
        s.q.enqueue("embed", b"", k.clone().scope(scope(2)))
            .unwrap();
    assert!(nil.created && a.created && b.created);
    let ids: HashSet<JobId> = [nil.id, a.id, b.id].into();
    assert_eq!(ids.len(), 3);
    let a2 = s.q.enqueue("embed", b"", k.scope(scope(1))).unwrap();
    assert_eq!((a2.id, a2.created), (a.id, false));
}

#[test]
fn a_duplicate_key_inside_one_enqueue_many_maps_to_the_first_job() {
    let s = TestStore::new();
    let pre =
        s.q.enqueue(
            "embed",
            b"",
            EnqueueOptions::default().idempotency_key("old"),
        )
        .unwrap();
    let key = |k: &str| EnqueueOptions::default().idempotency_key(k);
    let out =
        s.q.enqueue_many(vec![
            NewJob::new("embed", b"1".to_vec()).with(key("x")),
            NewJob::new("embed", b"2".to_vec()),
            NewJob::new("embed", b"3".to_vec()).with(key("x")),
            NewJob::new("embed", b"4".to_vec()).with(key("old")),
        ])
        .unwrap();
    assert_eq!(out.len(), 4);
    assert!(out[0].created && out[1].created);
    assert_eq!((out[2].id, out[2].created), (out[0].id, false));
    assert_eq!((out[3].id, out[3].created), (pre.id, false));
    assert_eq!(s.q.stats().unwrap().total.pending, 3);
    assert_eq!(s.get(&out[0].id).payload, b"1");
    assert_consistent(&s.q);
}

#[test]
fn an_idempotency_key_creates_a_new_job_once_the_old_one_is_pruned() {
    let s = TestStore::new();
    let opts = EnqueueOptions::default().idempotency_key("nightly");
    let first = s.q.enqueue("system:vacuum", b"", opts.clone()).unwrap();
    let job = s.must_lease("w");
    s.q.complete(&job.token(), None).unwrap();
    s.advance(Duration::from_secs(24 * 3600) + SEC);
    assert_eq!(s.q.reap().unwrap().pruned, 1);
    assert!(s.q.get(&first.id).unwrap().is_none());
    let second = s.q.enqueue("system:vacuum", b"", opts.clone()).unwrap();
    assert!(second.created);
    assert_ne!(second.id, first.id);
    let third = s.q.enqueue("system:vacuum", b"", opts).unwrap();
    assert_eq!((third.id, third.created), (second.id, false));
    assert_consistent(&s.q);
}

// ---------------------------------------------------------- kind filters

#[test]
fn an_exact_kind_filter_leases_only_that_kind() {
    let s = TestStore::new();
    let e = s.enqueue("embed");
    let p = s.enqueue("ingest:pdf");
    let job = lease_with(&s, &kinds(&["ingest:pdf"])).unwrap();
    assert_eq!((job.id, job.kind.as_str()), (p, "ingest:pdf"));
    assert!(lease_with(&s, &kinds(&["ingest:pdf"])).is_none());
    assert_eq!(s.get(&e).state, State::Pending);
    assert_eq!(s.must_lease("w").id, e);
}

#[test]
fn a_family_filter_leases_every_kind_of_the_family_and_nothing_else() {
    let s = TestStore::new();
    let embed = s.enqueue("embed");
    let pdf = s.enqueue("ingest:pdf");
    let cascade = s.enqueue("cascade");
    let html = s.enqueue("ingest:html");
    let f = kinds(&["ingest:*"]);
    assert_eq!(lease_with(&s, &f).unwrap().id, pdf);
    assert_eq!(lease_with(&s, &f).unwrap().id, html);
    assert!(lease_with(&s, &f).is_none());
    for id in [embed, cascade] {
        assert_eq!(s.get(&id).state, State::Pending);
    }
}

#[test]
fn a_kind_filter_keeps_priority_then_fifo_order_across_its_kinds() {
    let s = TestStore::new();
    let p = |n| EnqueueOptions::default().priority(n);
    let a = s.enqueue_with("ingest:pdf", p(128));
    let b = s.enqueue_with("ingest:html", p(128));
    let _e = s.enqueue_with("embed", p(0));
    let c = s.enqueue_with("ingest:pdf", p(128));
    let d = s.enqueue_with("ingest:html", p(0));
    let _x = s.enqueue_with("cascade", p(1));
    let f = kinds(&["ingest:*"]);
    let got: Vec<JobId> = std::iter::from_fn(|| lease_with(&s, &f).map(|j| j.id)).collect();
    assert_eq!(got, [d, a, b, c]);

    // A list of exact kinds behaves the same.
    let s = TestStore::new();
    let a = s.enqueue_with("cascade", p(50));
    let _b = s.enqueue_with("ingest:pdf", p(0));
    let c = s.enqueue_with("embed", p(50));
    let d = s.enqueue_with("embed", p(10));
    let f = kinds(&["embed", "cascade"]);
    let got: Vec<JobId> = std::iter::from_fn(|| lease_with(&s, &f).map(|j| j.id)).collect();
    assert_eq!(got, [d, a, c]);
}

#[test]
fn a_filtered_lease_on_a_queue_of_other_kinds_finds_nothing_and_takes_nothing() {
    let s = TestStore::new();
    let ids: Vec<JobId> = (0..5).map(|_| s.enqueue("embed")).collect();
    assert!(lease_with(&s, &kinds(&["ingest:*"])).is_none());
    assert!(lease_with(&s, &kinds(&["cascade", "embed:x"])).is_none());
    let stats = s.q.stats().unwrap();
    assert_eq!((stats.total.pending, stats.total.leased), (5, 0));
    for id in ids {
        assert_eq!(s.get(&id).state, State::Pending);
    }
}

// ------------------------------------------------------ scope round-robin

#[test]
fn pollers_without_a_scope_alternate_between_scopes_with_work() {
    let s = TestStore::new();
    for _ in 0..5 {
        s.enqueue_with("embed", EnqueueOptions::default().scope(scope(1)));
    }
    for _ in 0..5 {
        s.enqueue_with("embed", EnqueueOptions::default().scope(scope(2)));
    }
    let scopes: Vec<Scope> = (0..10).map(|_| s.must_lease("w").scope).collect();
    for pair in scopes.windows(2) {
        assert_ne!(
            pair[0], pair[1],
            "consecutive leases from one scope: {scopes:?}"
        );
    }
}

#[test]
fn a_large_backlog_in_one_scope_does_not_starve_a_small_one() {
    let s = TestStore::new();
    let big = scope(1);
    let small = scope(2);
    let jobs: Vec<NewJob> = (0..1000)
        .map(|i| {
            NewJob::new("embed", format!("{i}").into_bytes())
                .with(EnqueueOptions::default().scope(big))
        })
        .collect();
    s.q.enqueue_many(jobs).unwrap();
    for _ in 0..10 {
        s.enqueue_with("embed", EnqueueOptions::default().scope(small));
    }
    let first20: Vec<Scope> = (0..20).map(|_| s.must_lease("w").scope).collect();
    assert_eq!(first20.iter().filter(|s| **s == small).count(), 10);
}

#[test]
fn round_robin_serves_active_scopes_evenly_beside_idle_ones() {
    let s = TestStore::new();
    // A scope that had work once and is now idle.
    let idle = scope(1);
    s.enqueue_with("embed", EnqueueOptions::default().scope(idle));
    s.q.complete(&s.must_lease("w").token(), None).unwrap();
    let (big, small) = (scope(2), scope(3));
    for _ in 0..100 {
        s.enqueue_with("embed", EnqueueOptions::default().scope(big));
    }
    for _ in 0..10 {
        s.enqueue_with("embed", EnqueueOptions::default().scope(small));
    }
    let first20: Vec<Scope> = (0..20).map(|_| s.must_lease("w").scope).collect();
    let served_small = first20.iter().filter(|s| **s == small).count();
    assert_eq!(
        served_small, 10,
        "round-robin over the scopes that have ready work should give the small scope \
         every other lease; it got {served_small} of the first 20"
    );
}

#[test]
fn a_drained_scope_is_served_again_when_work_returns_and_a_delayed_one_at_its_run_at() {
    let s = TestStore::new();
    let (a, b) = (scope(1), scope(2));
    s.enqueue_with("embed", EnqueueOptions::default().scope(a));
    s.q.complete(&s.must_lease("w").token(), None).unwrap();
    // Scope a is drained (and no longer visited); a delayed job keeps b waiting.
    assert!(s
        .q
        .lease_next("w", &LeaseOptions::default())
        .unwrap()
        .is_none());
    let later = s.enqueue_with(
        "embed",
        EnqueueOptions::default()
            .scope(b)
            .delay(Duration::from_secs(5)),
    );
    assert!(s
        .q
        .lease_next("w", &LeaseOptions::default())
        .unwrap()
        .is_none());
    let again = s.enqueue_with("embed", EnqueueOptions::default().scope(a));
    assert_eq!(s.must_lease("w").id, again);
    s.clock.advance(Duration::from_secs(5));
    assert_eq!(s.must_lease("w").id, later);
    assert_consistent(&s.q);
}

#[test]
fn a_scoped_lease_takes_only_from_that_scope() {
    let s = TestStore::new();
    let a = s.enqueue_with("embed", EnqueueOptions::default().scope(scope(1)));
    let b = s.enqueue_with("embed", EnqueueOptions::default().scope(scope(2)));
    let nil = s.enqueue("embed");
    let only2 = LeaseOptions::default().scope(scope(2));
    let got = lease_with(&s, &only2).unwrap();
    assert_eq!((got.id, got.scope), (b, scope(2)));
    assert!(lease_with(&s, &only2).is_none());
    assert!(lease_with(&s, &LeaseOptions::default().scope(scope(9))).is_none());
    assert_eq!(s.get(&a).state, State::Pending);
    assert_eq!(s.get(&nil).state, State::Pending);
    let sys = lease_with(&s, &LeaseOptions::default().scope(Scope::SYSTEM)).unwrap();
    assert_eq!((sys.id, sys.scope), (nil, Scope::SYSTEM));
}

#[test]
fn system_kinds_live_only_in_the_nil_scope() {
    let s = TestStore::new();
    let e = expect_err(
        s.q.enqueue(
            "system:vacuum",
            b"",
            EnqueueOptions::default().scope(scope(1)),
        ),
        ErrorKind::InvalidArgument,
    );
    assert!(e.to_string().contains("system"), "{e}");
    assert_eq!(s.q.stats().unwrap().total.total(), 0);
    let a = s.enqueue("system:vacuum");
    let b = s.enqueue_with(
        "system:vacuum",
        EnqueueOptions::default().scope(Scope::SYSTEM),
    );
    assert_eq!(s.get(&a).scope, Scope::SYSTEM);
    assert_eq!(s.get(&b).scope, Scope::SYSTEM);
    // A non-system kind may use the nil scope too.
    s.enqueue("embed");
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

// ----------------------------------------------- lease_many and long-poll

#[test]
fn lease_many_returns_up_to_n_distinct_jobs() {
    let s = TestStore::new();
    let ids: HashSet<JobId> = (0..5).map(|_| s.enqueue("embed")).collect();
    let first = s.q.lease_many("w", 3, &LeaseOptions::default()).unwrap();
    let rest = s.q.lease_many("w", 10, &LeaseOptions::default()).unwrap();
    assert_eq!((first.len(), rest.len()), (3, 2));
    let got: HashSet<JobId> = first.iter().chain(&rest).map(|j| j.id).collect();
    assert_eq!(got, ids, "every job once");
    for j in first.iter().chain(&rest) {
        assert_eq!(s.get(&j.id).state, State::Leased);
        assert_eq!(j.worker_id, "w");
    }
    assert!(s
        .q
        .lease_many("w", 4, &LeaseOptions::default())
        .unwrap()
        .is_empty());
    assert_eq!(s.q.stats().unwrap().total.leased, 5);
    assert_consistent(&s.q);
}

#[test]
fn a_waiting_lease_is_woken_by_an_enqueue() {
    let s = TestStore::new();
    let q = s.q.clone();
    let waiter = std::thread::spawn(move || {
        let t = Instant::now();
        let r = q.lease_next("w", &LeaseOptions::default().wait(Duration::from_secs(5)));
        (r, t.elapsed())
    });
    // Real time, on purpose: the waiter must be blocked before the enqueue,
    // so that only the enqueue's wake-up (not its timeout) can end the wait.
    std::thread::sleep(Duration::from_millis(200));
    let id = s.enqueue("embed");
    let (r, elapsed) = waiter.join().unwrap();
    let job = r.unwrap().expect("the waiter gets the job");
    assert_eq!(job.id, id);
    assert!(
        elapsed < Duration::from_secs(4),
        "woken after {elapsed:?}; the enqueue should wake it at once"
    );
}

#[test]
fn a_waiting_lease_on_an_empty_queue_returns_none_when_the_wait_ends() {
    let s = TestStore::new();
    let t = Instant::now();
    let got =
        s.q.lease_next(
            "w",
            &LeaseOptions::default().wait(Duration::from_millis(100)),
        )
        .unwrap();
    assert!(got.is_none());
    assert!(
        t.elapsed() >= Duration::from_millis(100),
        "{:?}",
        t.elapsed()
    );
}

#[test]
fn a_waiting_lease_wakes_when_a_delayed_or_backing_off_job_falls_due() {
    // The system clock, on purpose: the subject is the waiter sleeping until
    // the earliest due time when no enqueue will wake it.
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = test_config();
    cfg.backoff.base = Duration::from_millis(300);
    let q = Queue::open(dir.path(), cfg).unwrap();
    let wait = LeaseOptions::default().wait(Duration::from_secs(5));

    let delayed = q
        .enqueue(
            "embed",
            b"",
            EnqueueOptions::default().delay(Duration::from_millis(300)),
        )
        .unwrap()
        .id;
    let t = Instant::now();
    let job = q.lease_next("w", &wait).unwrap().expect("the delayed job");
    assert_eq!(job.id, delayed);
    assert!(t.elapsed() < Duration::from_secs(4), "{:?}", t.elapsed());

    q.fail(&job.token(), "again", true).unwrap();
    let t = Instant::now();
    let again = q.lease_next("w", &wait).unwrap().expect("the failed job");
    assert_eq!((again.id, again.attempts), (delayed, 1));
    assert!(t.elapsed() < Duration::from_secs(4), "{:?}", t.elapsed());
    q.close();
}

#[test]
fn closing_the_queue_ends_a_wait_in_progress_with_closed() {
    let s = TestStore::new();
    let q = s.q.clone();
    let waiter = std::thread::spawn(move || {
        let t = Instant::now();
        let r = q
            .lease_next("w", &LeaseOptions::default().wait(Duration::from_secs(10)))
            .map(|j| j.map(|j| j.id));
        (r, t.elapsed())
    });
    std::thread::sleep(Duration::from_millis(200));
    s.q.close();
    let (r, elapsed) = waiter.join().unwrap();
    expect_err(r, ErrorKind::Closed);
    assert!(elapsed < Duration::from_secs(8), "ended after {elapsed:?}");
    // Every later call on the handle answers Closed.
    assert!(s.q.is_closed());
    expect_err(
        s.q.enqueue("embed", b"", EnqueueOptions::default()),
        ErrorKind::Closed,
    );
    expect_err(s.q.stats(), ErrorKind::Closed);
}

// ------------------------------------------------------------- retention

#[test]
fn reap_prunes_completed_jobs_past_retention_and_keeps_newer_and_dead_ones() {
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

    // Much later the newer one goes too; the dead one never does.
    s.advance(30 * 24 * HOUR);
    assert_eq!(s.q.reap().unwrap().pruned, 1);
    assert!(s.q.get(&newer).unwrap().is_none());
    assert_eq!(s.get(&dead).state, State::Dead);
    assert_eq!(s.q.stats().unwrap().total.total(), 1);
    assert_consistent(&s.q);
}

// ------------------------------------------------------------- bad input

#[test]
fn malformed_kinds_are_invalid_arguments() {
    let s = TestStore::new();
    let long = "a".repeat(65);
    for kind in [
        "Embed",
        "",
        long.as_str(),
        "ingest pdf",
        " embed",
        "ingest/pdf",
        "é",
    ] {
        expect_err(
            s.q.enqueue(kind, b"", EnqueueOptions::default()),
            ErrorKind::InvalidArgument,
        );
    }
    // The 64-byte limit is inclusive.
    s.enqueue(&"a".repeat(64));
    assert_eq!(s.q.stats().unwrap().total.total(), 1);
    for pattern in ["Ingest:*", "", "a b", "ingest:pdf:*"] {
        expect_err(
            LeaseOptions::default().kind(pattern),
            ErrorKind::InvalidArgument,
        );
    }
}

#[test]
fn an_oversized_payload_is_refused_and_nothing_is_written() {
    let mut cfg = test_config();
    cfg.max_payload_bytes = 1024;
    let s = TestStore::with_config(cfg);
    s.enqueue("embed");
    let before = s.q.stats().unwrap();
    expect_err(
        s.q.enqueue("embed", &[0u8; 1025], EnqueueOptions::default()),
        ErrorKind::InvalidArgument,
    );
    // One bad job fails the whole batch.
    expect_err(
        s.q.enqueue_many(vec![
            NewJob::new("embed", vec![0u8; 10]),
            NewJob::new("embed", vec![0u8; 1025]),
        ]),
        ErrorKind::InvalidArgument,
    );
    assert_eq!(s.q.stats().unwrap(), before);
    let ok =
        s.q.enqueue("embed", &[0u8; 1024], EnqueueOptions::default())
            .unwrap();
    assert_eq!(s.get(&ok.id).payload.len(), 1024);
    assert_consistent(&s.q);
}

#[test]
fn an_oversized_result_is_refused_and_the_lease_stays_valid() {
    let mut cfg = test_config();
    cfg.max_payload_bytes = 1024;
    let s = TestStore::with_config(cfg);
    let id = s.enqueue("embed");
    let job = s.must_lease("w");
    let before = s.get(&id);
    expect_err(
        s.q.complete(&job.token(), Some(&[1u8; 1025])),
        ErrorKind::InvalidArgument,
    );
    assert_eq!(s.get(&id), before);
    assert!(s.q.extend(&[job.token()], "w").unwrap()[0].is_ok());
    s.q.complete(&job.token(), Some(&[1u8; 1024])).unwrap();
    assert_eq!(s.get(&id).result.map(|r| r.len()), Some(1024));
}

#[test]
fn malformed_ids_scopes_workers_batches_and_cursors_are_invalid_arguments() {
    let s = TestStore::new();
    s.enqueue("embed");
    for bad in [
        "nope",
        "",
        "0190f1b2-0000-7000-8000",
        "0190f1b2-0000-7000-8000-00000000000g",
    ] {
        expect_err(bad.parse::<JobId>(), ErrorKind::InvalidArgument);
        expect_err(bad.parse::<Scope>(), ErrorKind::InvalidArgument);
    }
    expect_err("nope".parse::<LeaseToken>(), ErrorKind::InvalidArgument);
    let id = JobId::from_bytes([3; 16]);
    assert_eq!(id.to_string().parse::<JobId>().unwrap(), id);
    assert!(s.q.get(&id).unwrap().is_none(), "unknown id: Ok(None)");

    expect_err(
        s.q.lease_next("", &LeaseOptions::default()),
        ErrorKind::InvalidArgument,
    );
    expect_err(
        s.q.lease_next(&"w".repeat(257), &LeaseOptions::default()),
        ErrorKind::InvalidArgument,
    );
    expect_err(
        s.q.lease_many("w", 0, &LeaseOptions::default()),
        ErrorKind::InvalidArgument,
    );
    let job = s.must_lease("w");
    expect_err(s.q.extend(&[job.token()], ""), ErrorKind::InvalidArgument);

    for after in ["garbage", "zz", "00"] {
        let q = ListQuery {
            after: Some(after.into()),
            ..ListQuery::default()
        };
        expect_err(s.q.list(&q), ErrorKind::InvalidArgument);
    }
    let zero = ListQuery {
        limit: 0,
        ..ListQuery::default()
    };
    expect_err(s.q.list(&zero), ErrorKind::InvalidArgument);
    expect_err(
        s.q.enqueue("embed", b"", EnqueueOptions::default().idempotency_key("")),
        ErrorKind::InvalidArgument,
    );
    expect_err(
        s.q.enqueue("embed", b"", EnqueueOptions::default().max_attempts(0)),
        ErrorKind::InvalidArgument,
    );
    // None of it disturbed the store.
    assert_eq!(s.q.stats().unwrap().total.leased, 1);
    assert_consistent(&s.q);
}

#[test]
fn an_invalid_config_is_refused_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = test_config();
    cfg.max_attempts = 0;
    expect_err(Queue::open(dir.path(), cfg), ErrorKind::InvalidArgument);
}

// ----------------------------------------------------- corruption on disk

/// With the queue closed, overwrite `victim`'s row in the jobs CF with bytes
/// that do not decode, through the raw RocksDB API.
fn corrupt_row(path: &std::path::Path, victim: JobId, garbage: &[u8]) {
    let mut opts = rocksdb::Options::default();
    opts.create_if_missing(false);
    let cfs = telha_jobs::store::ALL_CFS.iter().map(|name| {
        let mut o = rocksdb::Options::default();
        if *name == "counters" {
            // Recovery may flush the WAL's merge operands: it needs the operator.
            o.set_merge_operator_associative(
                telha_jobs::store::COUNTERS_MERGE_NAME,
                telha_jobs::store::counters_merge,
            );
        }
        rocksdb::ColumnFamilyDescriptor::new(*name, o)
    });
    let db = rocksdb::DB::open_cf_descriptors(&opts, path, cfs).expect("raw open");
    let ids = db.cf_handle("ids").unwrap();
    let jobs = db.cf_handle("jobs").unwrap();
    let key = db
        .get_cf(ids, victim.as_bytes())
        .unwrap()
        .expect("the victim is in the id index");
    let jk = JobKey::decode(&key).unwrap();
    assert_eq!((jk.id, jk.state), (victim, State::Pending));
    assert!(db.get_cf(jobs, &key).unwrap().is_some());
    db.put_cf(jobs, &key, garbage).unwrap();
    db.flush_wal(true).unwrap();
}

#[test]
fn a_corrupt_record_on_disk_is_reported_and_skipped_and_the_store_stays_usable() {
    let mut s = TestStore::new();
    let ids: Vec<JobId> = (0..3).map(|_| s.enqueue("embed")).collect();
    let victim = ids[1];
    s.q.close();
    corrupt_row(s.path(), victim, &[1, 0xc1, 0xff, 0x00, 0x13]);
    s.reopen();

    let page = s.q.list(&ListQuery::default()).unwrap();
    let listed: Vec<JobId> = page.jobs.iter().map(|j| j.id).collect();
    assert_eq!(listed, [ids[0], ids[2]]);
    assert_eq!(page.corrupt.len(), 1);
    assert_eq!(page.corrupt[0].id, Some(victim));
    assert!(!page.corrupt[0].error.is_empty());

    expect_err(s.q.get(&victim), ErrorKind::Corruption);
    assert_eq!(s.get(&ids[0]).state, State::Pending);

    let mut leased = Vec::new();
    for _ in 0..5 {
        if let Some(j) = s.lease("w") {
            leased.push(j.id);
        }
    }
    assert_eq!(
        leased,
        [ids[0], ids[2]],
        "the good jobs, once each, in order"
    );
    for id in [ids[0], ids[2]] {
        let t = LeaseToken { id, generation: 1 };
        s.q.complete(&t, None).unwrap();
    }
    s.q.reap().unwrap();
    s.advance(25 * HOUR);
    assert_eq!(s.q.reap().unwrap().pruned, 2);

    let text = s.q.metrics().unwrap();
    let corrupt = metric(&text, "telha_jobs_corrupt_records_total").expect("the series");
    assert_eq!(
        corrupt, 1.0,
        "one bad record, however often it is met: {text}"
    );
    s.q.list(&ListQuery::default()).unwrap();
    s.q.reap().unwrap();
    let text = s.q.metrics().unwrap();
    assert_eq!(metric(&text, "telha_jobs_corrupt_records_total"), Some(1.0));
    // The full check names the bad row.
    let report = s.q.check().unwrap();
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.contains(&victim.to_string())),
        "{:?}",
        report.problems
    );
}

#[test]
fn a_corrupt_record_at_the_head_does_not_hide_the_ready_job_behind_it() {
    let mut s = TestStore::new();
    let bad = s.enqueue("embed");
    let good = s.enqueue("embed");
    s.q.close();
    corrupt_row(s.path(), bad, b"garbage");
    s.reopen();
    let got = s.lease("w");
    assert_eq!(
        got.map(|j| j.id),
        Some(good),
        "lease_next answered None while a good job was ready behind the corrupt one"
    );
}

// -------------------------------------------------- one store, one engine

#[test]
fn a_second_open_in_the_process_shares_the_engine() {
    let s = TestStore::new();
    // Another clock: the shared engine keeps the first open's clock.
    let other_clock = Arc::new(ManualClock::new(5));
    let q2 = Queue::open_with_clock(s.path(), s.config.clone(), other_clock).unwrap();
    let a = s.enqueue("embed");
    let b = q2
        .enqueue("embed", b"", EnqueueOptions::default())
        .unwrap()
        .id;
    assert_eq!(q2.get(&a).unwrap().unwrap().id, a);
    assert_eq!(s.get(&b).created_at, s.now());
    let j = q2
        .lease_next("w", &LeaseOptions::default())
        .unwrap()
        .unwrap();
    assert_eq!(j.id, a);
    s.q.complete(&j.token(), None).unwrap();
    assert_eq!(q2.stats().unwrap().total.completed, 1);

    let mut different = s.config.clone();
    different.max_attempts = 7;
    expect_err(
        Queue::open_with_clock(s.path(), different, s.dyn_clock()),
        ErrorKind::InvalidArgument,
    );

    // Closing one handle leaves the other working.
    q2.close();
    expect_err(q2.get(&a), ErrorKind::Closed);
    assert_eq!(s.get(&a).state, State::Completed);
    // Closing both releases the store: a fresh open works and sees the jobs.
    s.q.close();
    let q3 = Queue::open_with_clock(s.path(), s.config.clone(), s.dyn_clock()).unwrap();
    assert_eq!(q3.get(&b).unwrap().unwrap().state, State::Pending);
    q3.close();
}

#[test]
fn jobs_and_live_leases_survive_a_reopen() {
    let mut s = TestStore::new();
    let a = s.enqueue("embed");
    let b = s.enqueue_with("ingest:pdf", EnqueueOptions::default().delay(HOUR));
    let job = s.must_lease("w");
    s.reopen();
    assert_eq!(s.get(&a).state, State::Leased);
    // The lease is still the worker's after the reopen.
    s.q.complete(&job.token(), Some(b"ok")).unwrap();
    assert!(s.lease("w").is_none());
    s.advance(HOUR);
    assert_eq!(lease_with(&s, &kinds(&["ingest:*"])).unwrap().id, b);
    assert_consistent(&s.q);
}

#[test]
fn a_lease_held_when_the_store_closed_is_reaped_after_its_ttl_and_leased_again() {
    let mut s = TestStore::new();
    let id = s.enqueue("embed");
    let lost = s.must_lease("crashed");
    s.reopen();
    s.advance(TTL);
    assert_eq!(s.q.reap().unwrap().expired, 1);
    expect_err(s.q.complete(&lost.token(), None), ErrorKind::Aborted);
    s.advance(Duration::from_secs(10));
    let again = s.must_lease("w");
    assert_eq!((again.id, again.attempts), (id, 1));
    s.q.complete(&again.token(), None).unwrap();
    assert_eq!(s.transitions(&id).last().unwrap(), "completed");
    assert_consistent(&s.q);
}

// ------------------------------------------------------------------ list

#[test]
fn list_pages_through_every_job_once_in_key_order() {
    let s = TestStore::new();
    let ids: Vec<JobId> = (0..7).map(|_| s.enqueue("embed")).collect();
    assert_eq!(s.must_lease("w").id, ids[0]);
    let mut q = ListQuery {
        limit: 3,
        ..ListQuery::default()
    };
    let mut seen = Vec::new();
    loop {
        let page = s.q.list(&q).unwrap();
        assert!(page.jobs.len() <= 3);
        assert!(page.corrupt.is_empty());
        seen.extend(page.jobs.iter().map(|j| j.id));
        match page.next {
            Some(next) => q.after = Some(next),
            None => break,
        }
    }
    // Key order: pending (by ready-at, id) before leased.
    let mut want = ids[1..].to_vec();
    want.push(ids[0]);
    assert_eq!(seen, want);

    let leased =
        s.q.list(&ListQuery {
            state: Some(State::Leased),
            ..ListQuery::default()
        })
        .unwrap();
    let leased: Vec<JobId> = leased.jobs.iter().map(|j| j.id).collect();
    assert_eq!(leased, [ids[0]]);
}

// --------------------------------------------------------------- metrics

#[test]
fn metrics_count_dead_letters_and_expired_leases() {
    let s = TestStore::new();
    let text = s.q.metrics().unwrap();
    assert_eq!(metric(&text, "telha_jobs_dead_letter_jobs"), Some(0.0));

    // One job dead by a non-retryable failure.
    s.enqueue("embed");
    s.q.fail(&s.must_lease("w").token(), "no", false).unwrap();
    // Two leases expire: one with attempts left, one without.
    s.enqueue("embed");
    s.enqueue_with("embed", EnqueueOptions::default().max_attempts(1));
    s.must_lease("w");
    s.must_lease("w");
    s.advance(TTL);
    let r = s.q.reap().unwrap();
    assert_eq!((r.expired, r.dead), (1, 1));

    let text = s.q.metrics().unwrap();
    let dead = s.q.stats().unwrap().total.dead;
    assert_eq!(dead, 2);
    assert_eq!(
        metric(&text, "telha_jobs_dead_letter_jobs"),
        Some(dead as f64),
        "{text}"
    );
    assert_eq!(
        metric(
            &text,
            "telha_jobs_transitions_total{transition=\"lease_expired\"}"
        ),
        Some(2.0),
        "{text}"
    );
    assert_eq!(
        metric(&text, "telha_jobs_jobs{kind=\"embed\",state=\"dead\"}"),
        Some(2.0),
        "{text}"
    );
    assert_eq!(metric(&text, "telha_jobs_leases_in_flight"), Some(0.0));
}

// ----------------------------------------------------------------- stats

#[test]
fn stats_count_every_job_by_kind_and_state() {
    let s = TestStore::new();
    s.enqueue("embed");
    s.enqueue("embed");
    s.enqueue("ingest:pdf");
    let j = lease_with(&s, &kinds(&["ingest:pdf"])).unwrap();
    s.q.fail(&j.token(), "x", true).unwrap();
    s.must_lease("w");
    let stats = s.q.stats().unwrap();
    let by: BTreeMap<&str, (u64, u64, u64)> = stats
        .by_kind
        .iter()
        .map(|(k, c)| (k.as_str(), (c.pending, c.leased, c.failed)))
        .collect();
    assert_eq!(
        by,
        BTreeMap::from([("embed", (1, 1, 0)), ("ingest:pdf", (0, 0, 1))])
    );
    assert_eq!(stats.total.total(), 3);
    assert_consistent(&s.q);
}
