//! The wait and run-time histograms and the ready gauges, on the manual
//! clock: each reads exactly the delays and backlog the test scripts.

use super::*;

/// The value of one sample line of the metrics text (`name{labels}`), or
/// `None` when the series is absent.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| {
        let (s, v) = l.rsplit_once(' ')?;
        (s == series).then(|| v.parse().expect("a number"))
    })
}

/// The cumulative bucket counts of one histogram series at the bounds the
/// tests look at, then its count and sum (seconds).
fn histogram(text: &str, name: &str, labels: &str) -> (Vec<(String, u64)>, u64, f64) {
    let les = [
        "0.001", "0.005", "0.05", "0.1", "2.5", "10", "60", "3600", "+Inf",
    ];
    let buckets = les
        .iter()
        .map(|le| {
            let series = format!("{name}_bucket{{{labels},le=\"{le}\"}}");
            let n = sample(text, &series).unwrap_or_else(|| panic!("{series} in\n{text}"));
            (le.to_string(), n as u64)
        })
        .collect();
    let count = sample(text, &format!("{name}_count{{{labels}}}")).expect("count") as u64;
    let sum = sample(text, &format!("{name}_sum{{{labels}}}")).expect("sum");
    (buckets, count, sum)
}

fn cumulative(at: &[(&str, u64)]) -> Vec<(String, u64)> {
    at.iter().map(|(l, n)| (l.to_string(), *n)).collect()
}

#[test]
fn wait_and_run_histograms_hold_the_scripted_delays_bucket_by_bucket() {
    let s = TestStore::new();
    // Waits: 0 ms, 3 ms, and 2 s after a run-at 10 s out (not 12 s: the
    // wait counts from when the job was due, not from its enqueue).
    s.enqueue("a");
    let j0 = s.must_lease("w");
    s.enqueue("a");
    s.advance(3 * MS);
    let j1 = s.must_lease("w");
    s.enqueue_with("a", EnqueueOptions::default().delay(10 * SEC));
    s.advance(12 * SEC);
    let j2 = s.must_lease("w");
    // Runs: j0 completes after 12.003 s (it was leased first), j1 fails
    // after 12 s, j2 is released after 40 ms.
    s.q.complete(&j0.token(), None).unwrap();
    s.q.fail(&j1.token(), "boom", true).unwrap();
    s.advance(40 * MS);
    s.q.release(&j2.token()).unwrap();
    // The released job waits again from its original ready instant.
    s.advance(Duration::from_secs(5000));
    let j3 = s.must_lease("w");
    assert_eq!(j3.id, j2.id);
    s.advance(70 * MS);
    s.q.snooze(&j3.token(), 2 * SEC).unwrap();

    let m = s.q.metrics().unwrap();
    let (b, count, sum) = histogram(&m, "telha_jobs_wait_seconds", "kind=\"a\"");
    assert_eq!(
        b,
        cumulative(&[
            ("0.001", 1),
            ("0.005", 2),
            ("0.05", 2),
            ("0.1", 2),
            ("2.5", 3),
            ("10", 3),
            ("60", 3),
            ("3600", 3),
            ("+Inf", 4)
        ])
    );
    assert_eq!(count, 4);
    // 0 + 0.003 + 2 + (2 + 0.04 + 5000) s after j2's run-at.
    assert!((sum - 5004.043).abs() < 1e-6, "{sum}");

    let run = |outcome: &str| {
        let labels = format!("kind=\"a\",outcome=\"{outcome}\"");
        histogram(&m, "telha_jobs_run_seconds", &labels)
    };
    let (b, count, sum) = run("completed");
    assert_eq!(count, 1);
    assert!((sum - 12.003).abs() < 1e-9, "{sum}");
    assert_eq!(b[5], ("10".into(), 0));
    assert_eq!(b[6], ("60".into(), 1));
    let (b, count, _) = run("failed");
    assert_eq!((count, b[5].1, b[6].1), (1, 0, 1));
    let (b, count, sum) = run("released");
    assert_eq!((count, b[2].1, b[3].1), (1, 1, 1), "40 ms: in le=0.05");
    assert!((sum - 0.04).abs() < 1e-9);
    let (b, count, _) = run("snoozed");
    assert_eq!((count, b[2].1, b[3].1), (1, 0, 1), "70 ms: in le=0.1");
    // Outcomes with no observation have no series.
    assert_eq!(
        sample(
            &m,
            "telha_jobs_run_seconds_count{kind=\"a\",outcome=\"dead\"}"
        ),
        None
    );
}

#[test]
fn expiry_cancel_and_death_are_run_outcomes_of_their_own() {
    let s = TestStore::new();
    let a = s.enqueue("x");
    let j = s.must_lease("w");
    s.q.cancel(&a, "stop").unwrap();
    // A cancel of a leased job is requested; the holder's settle ends it.
    s.advance(SEC);
    let _ = s.q.complete(&j.token(), None);
    s.enqueue_with("x", EnqueueOptions::default().max_attempts(1));
    let j = s.must_lease("w");
    s.advance(2 * SEC);
    s.q.fail(&j.token(), "bad", true).unwrap();
    s.enqueue("x");
    s.must_lease("w");
    s.advance(TTL + SEC);
    s.q.reap().unwrap();
    let m = s.q.metrics().unwrap();
    let count = |o: &str| {
        sample(
            &m,
            &format!("telha_jobs_run_seconds_count{{kind=\"x\",outcome=\"{o}\"}}"),
        )
    };
    assert_eq!(count("cancelled"), Some(1.0));
    assert_eq!(count("dead"), Some(1.0));
    assert_eq!(count("expired"), Some(1.0));
    assert_eq!(count("completed"), None);
    let sum = sample(
        &m,
        "telha_jobs_run_seconds_sum{kind=\"x\",outcome=\"expired\"}",
    );
    assert_eq!(sum, Some((TTL + SEC).as_secs_f64()));
}

/// The oldest-ready gauge (metrics and stats) and the backlog of `kind`.
fn ready(s: &TestStore, kind: &str) -> (f64, u64) {
    let m = s.q.metrics().unwrap();
    let gauge = sample(
        &m,
        &format!("telha_jobs_oldest_ready_seconds{{kind=\"{kind}\"}}"),
    )
    .unwrap_or(0.0);
    let backlog = sample(&m, &format!("telha_jobs_backlog{{kind=\"{kind}\"}}")).unwrap_or(0.0);
    let asked = telha_jobs::StatsQuery {
        oldest_ready: true,
        ..Default::default()
    };
    let stats = s.q.stats_with(&asked).unwrap();
    assert!(s.q.stats().unwrap().oldest_ready_ms.is_empty(), "not asked");
    let from_stats = stats.oldest_ready_ms.get(kind).copied().unwrap_or(0);
    assert_eq!(from_stats as f64 / 1000.0, gauge, "stats and metrics agree");
    (gauge, backlog as u64)
}

#[test]
fn the_oldest_ready_gauge_follows_a_scripted_backlog_exactly() {
    let s = TestStore::new();
    assert_eq!(ready(&s, "a"), (0.0, 0));
    let a1 = s.enqueue("a");
    s.advance(5 * SEC);
    assert_eq!(ready(&s, "a"), (5.0, 1));
    // A younger job in another scope and priority does not change it; an
    // older one does (the earliest head over every band of the kind).
    s.enqueue_with("a", EnqueueOptions::default().scope(scope(2)).priority(0));
    s.advance(SEC);
    assert_eq!(ready(&s, "a"), (6.0, 2));
    s.enqueue_with(
        "a",
        EnqueueOptions::default()
            .scope(scope(3))
            .run_at(s.now() - 60_000),
    );
    assert_eq!(ready(&s, "a"), (60.0, 3));
    // Other kinds have their own.
    s.enqueue("b");
    s.advance(SEC);
    assert_eq!(ready(&s, "b"), (1.0, 1));
    assert_eq!(ready(&s, "a"), (61.0, 3));
    // Leasing the oldest moves the gauge to the next: the kind-filtered
    // path takes the scope-3 job (61 s), the cancel removes a1 (7 s) from
    // under its cursor, leaving the scope-2 job (2 s).
    let j = lease_with(&s, &kinds(&["a"]).scope(scope(3))).unwrap();
    assert_eq!(ready(&s, "a"), (7.0, 2));
    s.q.cancel(&a1, "no").unwrap();
    assert_eq!(ready(&s, "a"), (2.0, 1));
    // A delayed job counts in the backlog at once, in the gauge once due.
    s.enqueue_with("a", EnqueueOptions::default().delay(10 * SEC));
    assert_eq!(ready(&s, "a"), (2.0, 2));
    let j2 = lease_with(&s, &kinds(&["a"])).unwrap();
    assert_eq!(j2.scope, scope(2));
    assert_eq!(ready(&s, "a"), (0.0, 1), "nothing due: 0");
    s.advance(10 * SEC);
    assert_eq!(ready(&s, "a"), (0.0, 1), "due at this very instant");
    s.advance(4 * SEC);
    assert_eq!(ready(&s, "a"), (4.0, 1));
    // A failure's retry is ready at its backoff, not before.
    s.q.fail(&j.token(), "again", true).unwrap();
    let retry_at = s.get(&j.id).state_ts;
    assert!(retry_at > s.now());
    assert_eq!(ready(&s, "a"), (4.0, 2));
    let j3 = lease_with(&s, &kinds(&["a"])).unwrap();
    assert_ne!(j3.id, j.id);
    assert_eq!(ready(&s, "a"), (0.0, 1));
    s.set_now(retry_at + 1_500);
    assert_eq!(ready(&s, "a"), (1.5, 1));
    // Drained: 0 and 0 while the kind still has jobs in other states.
    lease_with(&s, &kinds(&["a"])).unwrap();
    assert_eq!(ready(&s, "a"), (0.0, 0));
    let m = s.q.metrics().unwrap();
    assert!(m.contains("telha_jobs_oldest_ready_seconds{kind=\"a\"} 0\n"));
}

#[test]
fn the_gauge_survives_a_reopen() {
    let mut s = TestStore::new();
    s.enqueue("a");
    s.enqueue("a");
    s.advance(3 * SEC);
    s.reopen();
    assert_eq!(ready(&s, "a"), (3.0, 2));
}
