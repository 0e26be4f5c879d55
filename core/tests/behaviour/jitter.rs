//! Retry jitter (`backoff_jitter`) and the per-job backoff base.

use super::*;
use telha_jobs::config::Value;

const SEC: u64 = 1000;

/// A store with the default jitter (±20 %), its draws seeded.
fn jittered_store(seed: u64) -> TestStore {
    let s = TestStore::with_config(telha_jobs::Config {
        backoff_jitter: 0.2,
        ..test_config()
    });
    s.q.seed_jitter(seed).unwrap();
    s
}

/// Enqueue `n` jobs and lease them all; returns the leases.
fn lease_all(s: &TestStore, n: usize) -> Vec<telha_jobs::Job> {
    for _ in 0..n {
        s.enqueue("embed");
    }
    (0..n).map(|_| s.must_lease("w")).collect()
}

/// Counts of `delays` (ms) in 10 equal bins over `[lo, hi]`; panics on a
/// delay outside the band.
fn histogram(delays: &[u64], lo: u64, hi: u64) -> [usize; 10] {
    let mut bins = [0usize; 10];
    for &d in delays {
        assert!(
            (lo..=hi).contains(&d),
            "a delay of {d} ms is outside [{lo}, {hi}]"
        );
        let i = ((d - lo) * 10 / (hi - lo + 1)) as usize;
        bins[i] += 1;
    }
    bins
}

#[test]
fn a_thousand_simultaneous_failures_retry_spread_over_80_to_120_percent_of_the_delay() {
    let s = jittered_store(44);
    let jobs = lease_all(&s, 1000);
    let now = s.now();
    for j in &jobs {
        s.q.fail(&j.token(), "outage", true).unwrap();
    }
    let delays: Vec<u64> = jobs.iter().map(|j| s.get(&j.id).state_ts - now).collect();
    // The base is 10 s: every delay in [8 s, 12 s], spread evenly.
    let bins = histogram(&delays, 8 * SEC, 12 * SEC);
    println!("1,000 retries over [8 s, 12 s] in 10 bins: {bins:?}");
    for (i, n) in bins.iter().enumerate() {
        assert!(
            (60..=140).contains(n),
            "bin {i} holds {n} of 1,000 (expected ~100): {bins:?}"
        );
    }
    let distinct: HashSet<u64> = delays.iter().copied().collect();
    assert!(distinct.len() > 500, "{} distinct delays", distinct.len());
    assert_consistent(&s.q);

    // The same seed and the same calls give the same delays.
    let again = jittered_store(44);
    let jobs2 = lease_all(&again, 1000);
    let now2 = again.now();
    for j in &jobs2 {
        again.q.fail(&j.token(), "outage", true).unwrap();
    }
    let delays2: Vec<u64> = jobs2
        .iter()
        .map(|j| again.get(&j.id).state_ts - now2)
        .collect();
    assert_eq!(delays, delays2);
}

#[test]
fn expired_leases_retry_jittered_too() {
    let s = jittered_store(7);
    let jobs = lease_all(&s, 1000);
    s.advance(TTL);
    assert_eq!(s.q.reap().unwrap().expired, 1000);
    let now = s.now();
    let delays: Vec<u64> = jobs.iter().map(|j| s.get(&j.id).state_ts - now).collect();
    let bins = histogram(&delays, 8 * SEC, 12 * SEC);
    for (i, n) in bins.iter().enumerate() {
        assert!((60..=140).contains(n), "bin {i}: {bins:?}");
    }
}

#[test]
fn a_per_kind_jitter_and_zero_keep_their_own_bands() {
    let mut cfg = test_config();
    cfg.backoff_jitter = 0.0;
    cfg.set_for_kind("wide", "backoff_jitter", Value::Float(1.0))
        .unwrap();
    let s = TestStore::with_config(cfg);
    s.q.seed_jitter(1).unwrap();
    let exact: Vec<JobId> = (0..50).map(|_| s.enqueue("embed")).collect();
    let wide: Vec<JobId> = (0..200).map(|_| s.enqueue("wide")).collect();
    let now = s.now();
    for _ in 0..250 {
        let j = s.must_lease("w");
        s.q.fail(&j.token(), "x", true).unwrap();
    }
    for id in &exact {
        assert_eq!(s.get(id).state_ts - now, 10 * SEC);
    }
    let d: Vec<u64> = wide.iter().map(|id| s.get(id).state_ts - now).collect();
    // ±100 %: from 0 to 20 s, both halves used.
    histogram(&d, 0, 20 * SEC);
    assert!(d.iter().any(|&x| x < 5 * SEC) && d.iter().any(|&x| x > 15 * SEC));
}

#[test]
fn a_delay_the_handler_chose_is_not_jittered() {
    let mut cfg = test_config();
    cfg.backoff_jitter = 1.0;
    let s = TestStore::with_config(cfg);
    for _ in 0..20 {
        let id = s.enqueue("embed");
        let j = s.must_lease("w");
        let now = s.now();
        s.q.fail_with(telha_jobs::Failure::new(j.token(), "busy").retry_in(Duration::from_secs(5)))
            .unwrap();
        assert_eq!(s.get(&id).state_ts - now, 5 * SEC);
        s.advance(Duration::from_secs(5));
        let j = s.must_lease("w");
        s.q.snooze(&j.token(), Duration::from_secs(3)).unwrap();
        assert_eq!(s.get(&id).state_ts - s.now(), 3 * SEC);
        s.advance(Duration::from_secs(3));
        s.q.cancel(&id, "done").unwrap();
    }
}

#[test]
fn a_per_job_backoff_base_wins_over_the_kinds_and_raises_the_cap() {
    let mut cfg = test_config();
    cfg.kinds.insert(
        "embed".into(),
        KindConfig {
            backoff_base: Some(Duration::from_secs(60)),
            ..KindConfig::default()
        },
    );
    let s = TestStore::with_config(cfg);
    let own = s.enqueue_with(
        "embed",
        EnqueueOptions::default()
            .max_attempts(10)
            .backoff_base(Duration::from_secs(2)),
    );
    let kinds_base = s.enqueue_with("embed", EnqueueOptions::default().max_attempts(10));
    let now = s.now();
    let a = s.must_lease("w");
    let b = s.must_lease("w");
    s.q.fail(&a.token(), "x", true).unwrap();
    s.q.fail(&b.token(), "x", true).unwrap();
    assert_eq!(s.get(&own).state_ts - now, 2 * SEC);
    assert_eq!(s.get(&kinds_base).state_ts - now, 60 * SEC);
    // Over the cap: the job's base is its cap too; and it survives a reopen.
    let mut s = s;
    let long = s.enqueue_with("embed", EnqueueOptions::default().backoff_base(2 * HOUR));
    s.reopen();
    let now = s.now();
    let j = lease_with(&s, &kinds(&["embed"])).expect("the long one is due");
    assert_eq!(j.id, long);
    s.q.fail(&j.token(), "x", true).unwrap();
    assert_eq!(s.get(&long).state_ts - now, 2 * HOUR.as_millis() as u64);
}

#[test]
fn bad_jitter_and_a_zero_or_huge_backoff_base_are_refused_and_write_nothing() {
    for bad in [-0.1, 1.5, f64::NAN, f64::INFINITY] {
        let mut c = test_config();
        let err = c.set("backoff_jitter", Value::Float(bad)).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{bad}");
        assert!(
            err.to_string()
                .contains("backoff_jitter must be a number from 0 to 1"),
            "{err}"
        );
        let err = c
            .set_for_kind("embed", "backoff_jitter", Value::Float(bad))
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        c.backoff_jitter = bad;
        let dir = tempfile::tempdir().unwrap();
        let err = Queue::open(dir.path(), c).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert!(err.to_string().contains("jobs.backoff.jitter"), "{err}");
    }
    let mut c = test_config();
    assert!(c.set_text("backoff_jitter", "fast").is_err());
    c.set_text("backoff_jitter", "0.5").unwrap();
    assert_eq!(c.backoff_jitter, 0.5);

    let s = TestStore::new();
    for b in [Duration::ZERO, Duration::from_micros(999), Duration::MAX] {
        let err =
            s.q.enqueue("embed", b"x", EnqueueOptions::default().backoff_base(b))
                .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{b:?}: {err}");
        assert!(err.to_string().contains("backoff_base"), "{err}");
    }
    assert_eq!(s.q.stats().unwrap().total.pending, 0);
}
