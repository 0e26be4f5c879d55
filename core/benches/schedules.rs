//! What schedules cost (issue 17), beside raw RocksDB in the same run:
//!
//! - 10,000 schedules due within the same minute (`"S * * * * *"`, S the
//!   schedule's number mod 60): the time one firing pass (the scheduler
//!   thread's work, `run_schedules`) takes to enqueue all their slots, as
//!   jobs/s beside raw RocksDB batches of the same shape (256 schedules a
//!   batch: per slot the job row, the id and kind indexes, the
//!   idempotency key, and the schedule's row; a counter merge per batch);
//! - the latency of ordinary `lease_next` + `complete` calls (one thread)
//!   while another thread fires those 10,000 slots, minute after minute,
//!   beside the same calls with no schedule firing: p50 and p99 over
//!   alternating rounds on the same store. Target: p99 ≤ 2× without.
//!
//! The store's clock is a `ManualClock` (one simulated minute per round),
//! so no sleep is measured. `cargo bench -p telha-jobs --bench schedules`
//! (part of `make bench`); `-- --quick` for a smoke run.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rocksdb::{ColumnFamilyDescriptor, Options, WriteBatch, DB};
use telha_jobs::store::{counters_merge, COUNTERS_MERGE_NAME};
use telha_jobs::{Config, EnqueueOptions, LeaseOptions, ManualClock, NewJob, Queue, Schedule};

const PAYLOAD: &[u8] = b"{\"doc\":\"s3://bucket/key/0001.pdf\",\"tenant\":42,\"pages\":12}";
const MINUTE: u64 = 60_000;

fn dir(name: &str) -> tempfile::TempDir {
    let base = std::env::var_os("TELHA_BENCH_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&base).unwrap();
    tempfile::Builder::new()
        .prefix(name)
        .tempdir_in(base)
        .unwrap()
}

/// A store on a manual clock starting at a minute boundary (2026-12-01).
fn queue(name: &str) -> (tempfile::TempDir, Arc<ManualClock>, Queue) {
    let d = dir(name);
    let clock = Arc::new(ManualClock::new(1_796_083_200_000));
    let cfg = Config {
        reaper_interval: Duration::ZERO,
        completed_retention: None,
        // The firing thread moves the clock a minute a pass: no lease may
        // expire between a lease and its completion.
        lease_ttl: Duration::from_secs(86_400),
        ..Config::default()
    };
    let q = Queue::open_with_clock(d.path(), cfg, clock.clone()).unwrap();
    (d, clock, q)
}

fn put_schedules(q: &Queue, n: usize) {
    for i in 0..n {
        let s = Schedule {
            payload: PAYLOAD.to_vec(),
            ..Schedule::new(
                format!("sched-{i:05}"),
                format!("{} * * * * *", i % 60),
                "scheduled",
            )
        };
        q.schedule_put(&s).unwrap();
    }
}

/// Raw RocksDB: jobs/s of `n` slots written in batches of 256 schedules,
/// each slot the rows the engine writes for it.
fn raw(n: usize) -> f64 {
    let d = dir("raw-schedules");
    let mut o = Options::default();
    o.create_if_missing(true);
    o.create_missing_column_families(true);
    let cfs = ["jobs", "ids", "kinds", "idem", "counters", "schedules"].map(|name| {
        let mut c = Options::default();
        if name == "counters" {
            c.set_merge_operator_associative(COUNTERS_MERGE_NAME, counters_merge);
        }
        ColumnFamilyDescriptor::new(name, c)
    });
    let db = DB::open_cf_descriptors(&o, d.path(), cfs).unwrap();
    let cf = |name: &str| db.cf_handle(name).unwrap();
    let (jobs, ids, kinds, idem, counters, schedules) = (
        cf("jobs"),
        cf("ids"),
        cf("kinds"),
        cf("idem"),
        cf("counters"),
        cf("schedules"),
    );
    let value = vec![7u8; 150];
    let sched_row = vec![9u8; 160];
    let delta = [0u8; 40];
    let t0 = Instant::now();
    for c in (0..n).step_by(256) {
        let mut b = WriteBatch::default();
        for i in c..(c + 256).min(n) {
            let mut k = [0u8; 42];
            k[16] = 1;
            k[17] = 128;
            k[18..26].copy_from_slice(&(i as u64).to_be_bytes());
            k[34..42].copy_from_slice(&(i as u64).to_be_bytes());
            b.put_cf(jobs, k, &value);
            b.put_cf(ids, &k[26..42], k);
            b.put_cf(kinds, &k[16..], [1]);
            b.put_cf(idem, format!("schedule:sched-{i:05}:1796083260000"), k);
            b.put_cf(schedules, format!("sched-{i:05}"), &sched_row);
        }
        b.merge_cf(counters, "scheduled", delta);
        db.write(b).unwrap();
    }
    n as f64 / t0.elapsed().as_secs_f64()
}

fn pct(v: &mut [Duration], p: f64) -> f64 {
    v.sort();
    let i = ((v.len() as f64 * p).ceil() as usize).clamp(1, v.len()) - 1;
    v[i].as_secs_f64() * 1e6
}

fn row(what: &str, value: String, ratio: String) {
    println!("{what:<70} {value:>12} {ratio:>30}");
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (n, rounds, per_round) = if quick {
        (1_000, 2, 500)
    } else {
        (10_000, 8, 4_000)
    };
    println!(
        "telha-jobs schedules cost ({}), raw = RocksDB batches of the engine's shape, same run",
        if quick { "quick" } else { "full" }
    );
    let raw_rate = raw(n);
    row(
        &format!("raw: {}k slots in batches of 256 schedules", n / 1000),
        format!("{raw_rate:.0}/s"),
        String::new(),
    );

    // (a) One pass enqueueing every slot of a minute.
    let (_d, clock, q) = queue("fire");
    put_schedules(&q, n);
    clock.advance(Duration::from_millis(MINUTE));
    let t0 = Instant::now();
    let r = q.run_schedules().unwrap();
    let took = t0.elapsed();
    assert_eq!(r.enqueued, n as u64, "one job per schedule: {r:?}");
    let rate = n as f64 / took.as_secs_f64();
    row(
        &format!("one pass enqueueing {}k schedules' slots", n / 1000),
        format!("{:.0} ms", took.as_secs_f64() * 1e3),
        format!("{rate:.0}/s, {:.2}× raw", rate / raw_rate),
    );
    drop(q);

    // (b) Ordinary leases while the slots fire, beside leases alone.
    let (_d, clock, q) = queue("leases");
    put_schedules(&q, n);
    let ordinary = (rounds + 1) * 2 * per_round;
    for c in (0..ordinary).step_by(1000) {
        let batch = (c..(c + 1000).min(ordinary))
            .map(|_| NewJob::new("ordinary", PAYLOAD).with(EnqueueOptions::default()))
            .collect();
        q.enqueue_many(batch).unwrap();
    }
    let opts = LeaseOptions::default().kind("ordinary").unwrap();
    let lease_round = |q: &Queue, out: &mut Vec<Duration>| {
        for _ in 0..per_round {
            let t = Instant::now();
            let j = q.lease_next("w", &opts).unwrap().expect("an ordinary job");
            q.complete(&j.token(), None).unwrap();
            out.push(t.elapsed());
        }
    };
    let (mut alone, mut firing) = (Vec::new(), Vec::new());
    let mut fired = 0u64;
    for round in 0..=rounds {
        // Alone, then while a thread fires a minute's slots over and over
        // (the order swapped every other round).
        let mut one = |busy: bool, out: &mut Vec<Duration>| {
            if !busy {
                lease_round(&q, out);
                return;
            }
            let stop = AtomicBool::new(false);
            std::thread::scope(|s| {
                let h = s.spawn(|| {
                    let mut n = 0;
                    while !stop.load(Ordering::Relaxed) {
                        clock.advance(Duration::from_millis(MINUTE));
                        n += q.run_schedules().unwrap().enqueued;
                    }
                    n
                });
                lease_round(&q, out);
                stop.store(true, Ordering::Relaxed);
                fired += h.join().unwrap();
            });
        };
        let (mut a, mut f) = (Vec::new(), Vec::new());
        if round % 2 == 0 {
            one(false, &mut a);
            one(true, &mut f);
        } else {
            one(true, &mut f);
            one(false, &mut a);
        }
        if round > 0 {
            alone.extend(a);
            firing.extend(f);
        }
    }
    let (a50, a99) = (pct(&mut alone, 0.5), pct(&mut alone, 0.99));
    let (f50, f99) = (pct(&mut firing, 0.5), pct(&mut firing, 0.99));
    row(
        "lease_next + complete, no schedule firing: p50 / p99",
        format!("{a50:.1} / {a99:.1} µs"),
        String::new(),
    );
    row(
        &format!(
            "  while {}k schedules fire every simulated minute: p50 / p99",
            n / 1000
        ),
        format!("{f50:.1} / {f99:.1} µs"),
        format!("p99 {:.2}× without (target ≤ 2×)", f99 / a99),
    );
    row(
        "  slots enqueued meanwhile",
        format!("{fired}"),
        String::new(),
    );
}
