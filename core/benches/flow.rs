//! What flow control costs (issue 20), beside raw RocksDB measured in the
//! same run:
//!
//! - lease cost with 1,000 scopes at their concurrency cap (each holding
//!   its one lease, with more work pending) and one free scope, beside a
//!   store of the free scope alone without limits (target ≤ 1.2×: capped
//!   scopes leave the active set, so no poller looks at them), and beside
//!   the same 1,001 scopes without caps;
//! - lifecycle throughput (enqueue, lease, complete, one thread) with a
//!   kind cap and a rate limit configured but not reached, beside none
//!   (target ≥ 0.9×).
//!
//! - fairness between a tenant of slow jobs (4 ms) and one of fast jobs
//!   (1 ms), 4 workers: each one's share of leases and of processing time,
//!   with plain round robin and with a per-scope concurrency cap of 2
//!   (what the ARCHITECTURE's choice of lease-count fairness rests on).
//!
//! The compared variants run in alternating chunks (the order reversed
//! every other round, a warm-up round first); each ratio is the median of
//! the per-round ratios, the ratio of the totals beside it.
//!
//! `cargo bench -p telha-jobs --bench flow` (part of `make bench`);
//! `-- --quick` for a smoke run with small counts.

use std::time::{Duration, Instant};

use rocksdb::{Options, WriteBatch, DB};
use telha_jobs::{Config, EnqueueOptions, LeaseOptions, Limit, LimitTarget, NewJob, Queue, Scope};

const PAYLOAD: &[u8] = b"{\"doc\":\"s3://bucket/key/0001.pdf\",\"tenant\":42,\"pages\":12}";

/// A temp dir under `TELHA_BENCH_DIR` (as every bench here), else the
/// system's.
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

fn queue(name: &str) -> (tempfile::TempDir, Queue) {
    let d = dir(name);
    let cfg = Config {
        reaper_interval: Duration::ZERO,
        completed_retention: None,
        ..Config::default()
    };
    let q = Queue::open(d.path(), cfg).unwrap();
    (d, q)
}

fn scope(i: u32) -> Scope {
    let mut b = [0u8; 16];
    b[0] = 0x02;
    b[12..].copy_from_slice(&i.to_be_bytes());
    Scope::from_bytes(b)
}

fn fill(q: &Queue, sc: Scope, n: usize) {
    let o = EnqueueOptions {
        scope: Some(sc),
        ..EnqueueOptions::default()
    };
    for c in (0..n).step_by(1000) {
        let jobs = (c..(c + 1000).min(n))
            .map(|_| NewJob::new("embed", PAYLOAD).with(o.clone()))
            .collect();
        q.enqueue_many(jobs).unwrap();
    }
}

/// `n` leases (any scope), each completed outside the clock.
fn leases(q: &Queue, n: usize) -> Duration {
    let any = LeaseOptions::default();
    let mut spent = Duration::ZERO;
    for _ in 0..n {
        let t = Instant::now();
        let j = q.lease_next("w", &any).unwrap().expect("a job to lease");
        spent += t.elapsed();
        q.complete(&j.token(), None).unwrap();
    }
    spent
}

/// `n` lifecycles: enqueue, lease, complete.
fn lifecycles(q: &Queue, n: usize) -> Duration {
    let any = LeaseOptions::default();
    let t = Instant::now();
    for _ in 0..n {
        q.enqueue("embed", PAYLOAD, EnqueueOptions::default())
            .unwrap();
        let j = q.lease_next("w", &any).unwrap().expect("a job to lease");
        q.complete(&j.token(), None).unwrap();
    }
    t.elapsed()
}

/// Raw RocksDB: µs per lifecycle of three single-row batches shaped like
/// the engine's (put; delete + put + index; delete + put).
fn raw_lifecycle(n: usize) -> f64 {
    let d = tempfile::Builder::new()
        .prefix("raw-flow")
        .tempdir()
        .unwrap();
    let mut o = Options::default();
    o.create_if_missing(true);
    let db = DB::open(&o, d.path()).unwrap();
    let value = vec![7u8; 150];
    let t = Instant::now();
    for i in 0..n as u64 {
        let (p, l, c) = (
            [&[1u8][..], &i.to_be_bytes()].concat(),
            [&[2u8][..], &i.to_be_bytes()].concat(),
            [&[4u8][..], &i.to_be_bytes()].concat(),
        );
        let mut b = WriteBatch::default();
        b.put(&p, &value);
        db.write(b).unwrap();
        let mut b = WriteBatch::default();
        b.delete(&p);
        b.put(&l, &value);
        b.put(i.to_le_bytes(), &l);
        db.write(b).unwrap();
        let mut b = WriteBatch::default();
        b.delete(&l);
        b.put(&c, &value);
        db.write(b).unwrap();
    }
    t.elapsed().as_secs_f64() * 1e6 / n as f64
}

/// Run 4 workers for `secs` over a slow and a fast tenant; answer each
/// tenant's (leases, busy time).
fn fairness(q: &Queue, slow: Scope, secs: f64) -> [(u64, Duration); 2] {
    let stop = Instant::now() + Duration::from_secs_f64(secs);
    let out = std::sync::Mutex::new([(0u64, Duration::ZERO); 2]);
    std::thread::scope(|t| {
        for w in 0..4 {
            let (q, out) = (q, &out);
            t.spawn(move || {
                let worker = format!("fair-{w}");
                let opts = LeaseOptions::default();
                while Instant::now() < stop {
                    let Some(j) = q.lease_next(&worker, &opts).unwrap() else {
                        std::thread::yield_now();
                        continue;
                    };
                    let (i, d) = if j.scope == slow {
                        (0, Duration::from_millis(4))
                    } else {
                        (1, Duration::from_millis(1))
                    };
                    std::thread::sleep(d);
                    q.complete(&j.token(), None).unwrap();
                    let mut o = out.lock().unwrap();
                    o[i].0 += 1;
                    o[i].1 += d;
                }
            });
        }
    });
    out.into_inner().unwrap()
}

fn median_ratio(t: &[[Duration; 3]], a: usize, b: usize) -> f64 {
    let mut v: Vec<f64> = t
        .iter()
        .map(|r| r[a].as_secs_f64() / r[b].as_secs_f64())
        .collect();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn us(d: Duration, n: usize) -> f64 {
    d.as_secs_f64() * 1e6 / n as f64
}

fn row(what: &str, value: String, ratio: String) {
    println!("{what:<72} {value:>12} {ratio:>30}");
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (capped, chunk, chunks) = if quick {
        (200, 200, 4)
    } else {
        (1000, 1000, 20)
    };
    let n = chunk * chunks;
    println!(
        "telha-jobs flow control cost ({}), raw = RocksDB batches of the engine's shape, same run",
        if quick { "quick" } else { "full" }
    );
    let raw = raw_lifecycle(n);
    row(
        "raw lifecycle (three single-row batches)",
        format!("{raw:.2} µs"),
        String::new(),
    );

    // (a) 1,000 capped scopes at their cap, one free scope.
    let free = scope(0);
    let (_d1, caps) = queue("flow-capped");
    let (_d2, plain) = queue("flow-uncapped");
    let (_d3, solo) = queue("flow-solo");
    let backlog = chunk * (chunks + 1) + 10;
    for q in [&caps, &plain] {
        for i in 1..=capped {
            fill(q, scope(i), 3);
        }
    }
    for q in [&caps, &plain, &solo] {
        fill(q, free, backlog);
    }
    for i in 1..=capped {
        caps.set_limit(&LimitTarget::Scope(scope(i)), Limit::concurrency(1))
            .unwrap();
        // Each capped scope holds its one lease (never settled here).
        let one = LeaseOptions::default().scope(scope(i));
        caps.lease_next("holder", &one).unwrap().expect("a job");
    }
    // The uncapped store's other scopes hold a lease too, and keep their
    // pending work: its pollers visit them in turn.
    let mut t: Vec<[Duration; 3]> = Vec::new();
    for round in 0..=chunks {
        let mut this = [Duration::ZERO; 3];
        let order = if round % 2 == 0 { [0, 1, 2] } else { [2, 1, 0] };
        for w in order {
            this[w] = match w {
                0 => leases(&solo, chunk),
                1 => leases(&caps, chunk),
                _ => {
                    // Only the free scope's jobs are timed on the uncapped
                    // store; its other scopes' few jobs drain first.
                    leases(&plain, chunk)
                }
            };
        }
        if round > 0 {
            t.push(this);
        }
    }
    let total = |i: usize| us(t.iter().map(|r| r[i]).sum(), n);
    let (s, c, p) = (total(0), total(1), total(2));
    row(
        "lease_next, one scope, no limits",
        format!("{s:.2} µs"),
        format!("{:.2}× raw lifecycle", s / raw),
    );
    row(
        &format!("lease_next, {capped} scopes at their cap + one free scope"),
        format!("{c:.2} µs"),
        format!(
            "{:.2}× no limits (total {:.2}×)",
            median_ratio(&t, 1, 0),
            c / s
        ),
    );
    row(
        &format!("lease_next, the same {} scopes without caps", capped + 1),
        format!("{p:.2} µs"),
        format!(
            "{:.2}× no limits (total {:.2}×)",
            median_ratio(&t, 2, 0),
            p / s
        ),
    );
    let held = caps
        .limits()
        .unwrap()
        .iter()
        .filter(|l| l.held == 1)
        .count();
    assert_eq!(
        held, capped as usize,
        "every capped scope stayed at its cap"
    );
    drop((caps, plain, solo));

    // (b) Lifecycle with a kind cap and a rate configured, never reached.
    let (_d4, limited) = queue("flow-limited");
    let (_d5, free_q) = queue("flow-free");
    let embed = LimitTarget::Kind("embed".parse().unwrap());
    limited
        .set_limit(
            &embed,
            Limit {
                concurrency: Some(1000),
                rate: Some(1_000_000.0),
                burst: Some(1_000_000),
                weight: None,
                ordered: false,
            },
        )
        .unwrap();
    let mut t: Vec<[Duration; 3]> = Vec::new();
    for round in 0..=chunks {
        let mut this = [Duration::ZERO; 3];
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for w in order {
            this[w] = lifecycles(if w == 0 { &free_q } else { &limited }, chunk);
        }
        this[2] = Duration::from_nanos(1);
        if round > 0 {
            t.push(this);
        }
    }
    let rate = |i: usize| n as f64 / t.iter().map(|r| r[i]).sum::<Duration>().as_secs_f64();
    let (f, l) = (rate(0), rate(1));
    row(
        "lifecycle, no limits",
        format!("{f:.0}/s"),
        format!("{:.2}× raw lifecycle rate", f * raw / 1e6),
    );
    row(
        "lifecycle, kind cap 1000 + rate 1M/s configured, not reached",
        format!("{l:.0}/s"),
        format!(
            "{:.2}× no limits (total {:.2}×)",
            1.0 / median_ratio(&t, 1, 0),
            l / f
        ),
    );

    drop((limited, free_q));

    // (d) Job keys at their cap (issue 43).
    keyed_rows(quick, chunk, chunks);

    // (c) Fairness by lease count, and with a per-scope cap.
    let secs = if quick { 0.5 } else { 3.0 };
    for cap in [None, Some(2)] {
        let (_d, q) = queue("flow-fair");
        let (slow, fast) = (scope(1), scope(2));
        fill(&q, slow, 5000);
        fill(&q, fast, 20000);
        if let Some(c) = cap {
            q.set_limit(&LimitTarget::EachScope, Limit::concurrency(c))
                .unwrap();
        }
        let r = fairness(&q, slow, secs);
        let leases = r[0].0 + r[1].0;
        let busy = (r[0].1 + r[1].1).as_secs_f64();
        row(
            &match cap {
                None => "fairness, 4 workers, 4 ms vs 1 ms jobs, round robin".to_string(),
                Some(c) => format!("fairness, the same with scope:* concurrency {c}"),
            },
            format!("{leases} leases"),
            format!(
                "slow tenant: {:.0} % of leases, {:.0} % of time",
                100.0 * r[0].0 as f64 / leases as f64,
                100.0 * r[0].1.as_secs_f64() / busy
            ),
        );
    }
}

include!("parts/flow_keys.rs");
