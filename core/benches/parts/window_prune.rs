//! Issue 44's pruning row: `n` expired unique windows (1,000,000 in the
//! full run) deleted by the reaper's bounded passes (`prune_batch` rows a
//! pass, `reap()` called back to back: a busier reaper than the background
//! one) while a lease loop runs; the loop's lease p99 beside the same loop's
//! p99 without pruning, same store, same run (target ≤ 2×), with CPU per
//! lease and per pruned window.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use telha_jobs::{Config, EnqueueOptions, LeaseOptions, ManualClock, NewJob, Queue};

use super::queue_unique::cpu;

/// Jobs of the leased kind enqueued at a time (outside the timing).
const REFILL: usize = 1000;

fn pruned(q: &Queue) -> u64 {
    q.metrics()
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("telha_jobs_unique_windows_pruned_total "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

fn refill(q: &Queue) {
    let jobs = (0..REFILL)
        .map(|_| NewJob::new("work", &b"w"[..]))
        .collect();
    q.enqueue_many(jobs).unwrap();
}

/// Lease (timed) and complete one `work` job until `stop` is set, or
/// `at_least` leases when there is no `stop`: the lease latencies in µs.
fn lease_loop(q: &Queue, stop: Option<&AtomicBool>, at_least: usize) -> Vec<f64> {
    let opts = LeaseOptions {
        kinds: vec!["work".parse().unwrap()],
        ..LeaseOptions::default()
    };
    let mut lat = Vec::with_capacity(at_least);
    loop {
        match stop {
            Some(s) if s.load(Ordering::Relaxed) => break,
            None if lat.len() >= at_least => break,
            _ => {}
        }
        let t0 = Instant::now();
        let j = q.lease_next("lat", &opts).unwrap();
        let el = t0.elapsed();
        match j {
            Some(j) => {
                lat.push(el.as_secs_f64() * 1e6);
                q.complete(&j.token(), None).unwrap();
            }
            None => refill(q),
        }
    }
    lat
}

pub fn rows(t: &mut super::Table, n: usize) {
    let dir = tempfile::Builder::new()
        .prefix("windows")
        .tempdir_in(super::bench_dir())
        .unwrap();
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let cfg = Config {
        reaper_interval: Duration::ZERO,
        ..Config::default()
    };
    let batch = cfg.prune_batch;
    let q = Queue::open_with_clock(dir.path(), cfg, clock.clone()).unwrap();
    // `n` windows of a minute (each with its job, of another kind), then
    // the clock past their end: every window is expired.
    let t0 = Instant::now();
    let mut i = 0usize;
    while i < n {
        let k = (n - i).min(1000);
        let jobs = (i..i + k)
            .map(|j| {
                NewJob::new("embed", &b"x"[..]).with(
                    EnqueueOptions::default()
                        .idempotency_key(format!("user-{j}"))
                        .unique_for(Duration::from_secs(60)),
                )
            })
            .collect();
        q.enqueue_many(jobs).unwrap();
        i += k;
    }
    let built = t0.elapsed();
    clock.advance(Duration::from_secs(120));
    for _ in 0..20 {
        refill(&q);
    }
    // Without pruning: the lease loop alone (warm), twice as many leases
    // as the pruning run is likely to take at least.
    lease_loop(&q, None, 5_000);
    let (c0, t0) = (cpu(), Instant::now());
    let mut alone = lease_loop(&q, None, 50_000);
    let alone_cpu = (cpu() - c0).as_secs_f64() * 1e6 / alone.len() as f64;
    let alone_rate = alone.len() as f64 / t0.elapsed().as_secs_f64();
    // With pruning: reap() back to back on another thread until every
    // window is gone, the lease loop running meanwhile.
    let stop = AtomicBool::new(false);
    let (c0, t0) = (cpu(), Instant::now());
    let (mut during, passes, prune_time) = std::thread::scope(|s| {
        let pruner = s.spawn(|| {
            let t0 = Instant::now();
            let mut passes = 0u64;
            while pruned(&q) < n as u64 {
                for _ in 0..10 {
                    q.reap().unwrap();
                    passes += 1;
                }
            }
            stop.store(true, Ordering::Relaxed);
            (passes, t0.elapsed())
        });
        let lat = lease_loop(&q, Some(&stop), 50_000);
        let (p, el) = pruner.join().unwrap();
        (lat, p, el)
    });
    let during_cpu = (cpu() - c0).as_secs_f64() * 1e6;
    let during_rate = during.len() as f64 / t0.elapsed().as_secs_f64();
    q.close();
    let p = |v: &mut Vec<f64>, x: f64| super::percentile(v, x);
    let (a50, a99) = (p(&mut alone, 0.5), p(&mut alone, 0.99));
    let (d50, d99) = (p(&mut during, 0.5), p(&mut during, 0.99));
    t.row(
        &format!("{n} expired unique windows written (enqueue_many)"),
        format!("{:.0} windows/s", n as f64 / built.as_secs_f64()),
        String::new(),
    );
    t.row(
        &format!("reaper pruning them, prune_batch {batch}, back to back"),
        format!("{:.0} windows/s", n as f64 / prune_time.as_secs_f64()),
        format!("{passes} passes, {:.2} s", prune_time.as_secs_f64()),
    );
    t.row(
        "lease p50 / p99, lease loop alone",
        format!("{a50:.1} / {a99:.1} µs"),
        format!("{alone_rate:.0} leases/s, {alone_cpu:.1} µs CPU/lease"),
    );
    t.row(
        "lease p50 / p99, while the reaper prunes",
        format!("{d50:.1} / {d99:.1} µs"),
        format!(
            "{:.2}× p99 alone (target ≤ 2×); {during_rate:.0} leases/s, {:.1} µs CPU per lease+window",
            d99 / a99,
            during_cpu / (during.len() + n) as f64
        ),
    );
}
