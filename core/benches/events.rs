//! What subscribers and waiters cost the write path (issue 18), beside raw
//! RocksDB measured in the same run:
//!
//! - lifecycle throughput (enqueue + lease_next + complete, one job at a
//!   time) with 0, 1 and 16 subscribers (each drained by its own thread,
//!   as a service would), with 1,000 pending waiters (watches on other
//!   jobs that stay pending) and with one stalled subscriber (never
//!   reads: its buffer fills, then events are dropped and counted), each
//!   beside the same lifecycle with none
//!   (target: 16 subscribers ≥ 0.9× none);
//! - raw RocksDB's three WriteBatches of one lifecycle, the ceiling;
//! - enqueue-to-result latency, p50 / p99, for a producer that enqueues a
//!   job and waits for it while a worker thread (a blocking lease) runs it.
//!
//! The compared variants run in alternating chunks (a warm-up first), so a
//! neighbour's load lands on both; the ratio is the median of the
//! per-round ratios. `cargo bench -p telha-jobs --bench events` (part of
//! `make bench`); `-- --quick` for a smoke run.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rocksdb::{Options, WriteBatch, DB};
use telha_jobs::{Config, EnqueueOptions, JobWatch, LeaseOptions, Queue, SubscribeOptions};

const PAYLOAD: &[u8] = b"{\"doc\":\"s3://bucket/key/0001.pdf\",\"tenant\":42,\"pages\":12}";

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

/// `n` lifecycles; seconds spent.
fn lifecycles(q: &Queue, n: usize) -> f64 {
    let t = Instant::now();
    for _ in 0..n {
        q.enqueue("embed", PAYLOAD, EnqueueOptions::default())
            .unwrap();
        let j = q
            .lease_next("w", &LeaseOptions::default())
            .unwrap()
            .unwrap();
        q.complete(&j.token(), Some(b"ok")).unwrap();
    }
    t.elapsed().as_secs_f64()
}

/// Three raw batches per job shaped like a lifecycle; seconds spent.
fn raw(db: &DB, n: usize, base: u64) -> f64 {
    let t = Instant::now();
    for i in base..base + n as u64 {
        let (p, l, c) = ([1u8, 0, 0, 0], [2u8, 0, 0, 0], [4u8, 0, 0, 0]);
        let key = |s: [u8; 4]| [&s[..], &i.to_be_bytes()].concat();
        let mut b = WriteBatch::default();
        b.put(key(p), PAYLOAD);
        b.put(i.to_le_bytes(), key(p));
        db.write(b).unwrap();
        let mut b = WriteBatch::default();
        b.delete(key(p));
        b.put(key(l), PAYLOAD);
        b.put(i.to_le_bytes(), key(l));
        db.write(b).unwrap();
        let mut b = WriteBatch::default();
        b.delete(key(l));
        b.put(key(c), PAYLOAD);
        b.put(i.to_le_bytes(), key(c));
        db.write(b).unwrap();
    }
    t.elapsed().as_secs_f64()
}

/// `k` subscriptions, each drained by a thread until `stop`.
fn subscribers(q: &Queue, k: usize, stop: &Arc<AtomicBool>) -> Vec<std::thread::JoinHandle<u64>> {
    (0..k)
        .map(|_| {
            let sub = q.subscribe(SubscribeOptions::default()).unwrap();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    if let Ok(Some(_)) = sub.recv(Some(Duration::from_millis(20))) {
                        n += 1;
                    }
                    n += sub.drain(4096).map_or(0, |v| v.len() as u64);
                }
                n
            })
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn pct(v: &mut [Duration], p: f64) -> Duration {
    v.sort();
    v[((v.len() as f64 * p) as usize).min(v.len() - 1)]
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (rounds, chunk) = if quick { (3, 500) } else { (9, 4000) };
    let raw_dir = dir("raw-events");
    let mut o = Options::default();
    o.create_if_missing(true);
    let db = DB::open(&o, raw_dir.path()).unwrap();
    let mut raw_base = 0u64;

    // Variant 0: no listener; 1: one subscriber; 2: sixteen; 3: 1,000
    // waiters; 4: one subscriber that never reads (its buffer of 1,000
    // fills, then every event is dropped and counted).
    let names = [
        "none",
        "1 subscriber",
        "16 subscribers",
        "1,000 waiters",
        "1 stalled subscriber",
    ];
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); names.len()];
    let mut ratios: Vec<Vec<f64>> = vec![Vec::new(); names.len()];
    let mut raw_rates = Vec::new();
    let mut stalled_gaps = 0;
    for round in 0..=rounds {
        let mut secs = [0.0f64; 5];
        let order: Vec<usize> = if round % 2 == 0 {
            vec![0, 1, 2, 3, 4]
        } else {
            vec![4, 3, 2, 1, 0]
        };
        for v in order {
            let (_d, q) = queue("events");
            let stop = Arc::new(AtomicBool::new(false));
            let subs = match v {
                1 => subscribers(&q, 1, &stop),
                2 => subscribers(&q, 16, &stop),
                _ => Vec::new(),
            };
            let _watches: Vec<JobWatch> = if v == 3 {
                (0..1000)
                    .map(|_| {
                        let id = q
                            .enqueue(
                                "parked",
                                PAYLOAD,
                                EnqueueOptions::default().delay(Duration::from_secs(3600)),
                            )
                            .unwrap()
                            .id;
                        q.watch(&id).unwrap()
                    })
                    .collect()
            } else {
                Vec::new()
            };
            let stalled = (v == 4).then(|| {
                q.subscribe(SubscribeOptions {
                    buffer: 1000,
                    ..SubscribeOptions::default()
                })
                .unwrap()
            });
            secs[v] = lifecycles(&q, chunk);
            if let Some(sub) = stalled {
                // Everything it was offered is held or counted: once the
                // dispatcher has caught up, the buffer holds the first
                // 1,000 and the next event carries the exact gap.
                std::thread::sleep(Duration::from_millis(50));
                let held = sub.drain(usize::MAX).unwrap();
                assert_eq!(held.len(), 1000, "its buffer filled");
                q.enqueue("embed", PAYLOAD, EnqueueOptions::default())
                    .unwrap();
                let next = sub.recv(Some(Duration::from_secs(10))).unwrap().unwrap();
                assert_eq!(next.missed, 3 * chunk as u64 - 1000, "the exact gap");
                stalled_gaps += 1;
            }
            stop.store(true, Ordering::Relaxed);
            for s in subs {
                s.join().unwrap();
            }
        }
        let r = raw(&db, chunk, raw_base);
        raw_base += chunk as u64;
        if round == 0 {
            continue; // warm-up
        }
        raw_rates.push(chunk as f64 / r);
        for v in 0..names.len() {
            rates[v].push(chunk as f64 / secs[v]);
            ratios[v].push(secs[0] / secs[v]);
        }
    }
    let raw_rate = median(raw_rates);
    println!("events bench: {rounds} rounds of {chunk} lifecycles per variant (median)");
    println!(
        "  the stalled subscriber's gap was exact in all {stalled_gaps} runs ({} missed each)",
        3 * chunk - 1000
    );
    println!(
        "  raw RocksDB, 3 batches per job    {:>9.0} jobs/s",
        raw_rate
    );
    for (v, name) in names.iter().enumerate() {
        let rate = median(rates[v].clone());
        println!(
            "  lifecycle, {name:<22} {rate:>9.0} jobs/s  {:.2}× none  {:.2}× raw",
            median(ratios[v].clone()),
            rate / raw_rate
        );
    }

    // Enqueue-to-result latency, in process.
    let (_d, q) = queue("latency");
    let n = if quick { 200 } else { 5000 };
    let stop = Arc::new(AtomicBool::new(false));
    let worker = {
        let (q, stop) = (q.clone(), stop.clone());
        std::thread::spawn(move || {
            let o = LeaseOptions::default().wait(Duration::from_millis(50));
            while !stop.load(Ordering::Relaxed) {
                if let Some(j) = q.lease_next("w", &o).unwrap() {
                    q.complete(&j.token(), Some(b"ok")).unwrap();
                }
            }
        })
    };
    let mut lat = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let id = q
            .enqueue("embed", PAYLOAD, EnqueueOptions::default())
            .unwrap()
            .id;
        let info = q.wait(&id, Duration::from_secs(10)).unwrap();
        assert!(info.state.is_terminal());
        lat.push(t.elapsed());
    }
    stop.store(true, Ordering::Relaxed);
    worker.join().unwrap();
    println!(
        "  enqueue-to-result (wait), in process: p50 {:.0} µs, p99 {:.0} µs ({n} jobs)",
        pct(&mut lat, 0.5).as_secs_f64() * 1e6,
        pct(&mut lat, 0.99).as_secs_f64() * 1e6
    );
}
