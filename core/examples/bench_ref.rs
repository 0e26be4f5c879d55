//! The reference figures every binding's benchmark prints itself beside:
//! the Rust core and raw RocksDB, measured in the same run as the binding.
//!
//! `cargo run --release -p telha-jobs --example bench_ref -- [--n N] [--batch B] [--dir D]`
//! prints one JSON object (jobs/s unless named otherwise):
//!
//! - `raw_put`: raw RocksDB single-put WriteBatches (the ceiling);
//! - `enqueue`: single `enqueue` calls; `enqueue_batch`: `enqueue_many` of `batch`;
//! - `lease_complete`: `lease_next` + `complete` over a backlog;
//! - `lease_batch_complete`: `lease_many(batch)` + `complete` each;
//! - `lease_batch_complete_many`: `lease_many(batch)` + one `complete_many`;
//! - `lifecycle`: enqueue + lease_next + complete, one job at a time;
//! - `pollers4`: 4 threads each `lease_next` + `complete` over a backlog;
//! - `batch_pollers4`: 4 threads each `lease_many(batch)` + `complete_many`
//!   over a backlog (what a fleet of Workers is measured against);
//! - `batch_lifecycle`: `enqueue_many(batch)` + `lease_many(batch)` +
//!   `complete_many`, `batch` jobs at a time; `batch_lifecycle_each`: the
//!   same with one `complete` per job (the shape of C and Python);
//! - `raw_lifecycle` / `raw_batch_lifecycle`: the raw RocksDB ceilings of the
//!   two lifecycles: the three WriteBatches a three-state job needs at the
//!   least (put pending; delete it + put leased; delete that + put
//!   completed), one job per batch, or `batch` jobs per batch.
//!
//! `--settle-many` measures only the batch settles against single calls,
//! `--rounds R` rounds (default 100) of `batch` leased jobs each, the four
//! ways interleaved in every round: `fail_each` (`batch` × `fail`),
//! `fail_many` (one `fail_many(batch)`), `release_each`, `release_many`;
//! jobs/s over the settle calls only, and the calling thread's CPU per job
//! (`/proc/thread-self/schedstat`; RocksDB's background threads not
//! counted).
//!
//! `--table` measures only what `make bench`'s one table shows (`raw_put`,
//! `raw_lifecycle`, `raw_batch_lifecycle`, `lifecycle`, `batch_lifecycle`,
//! `batch_lifecycle_each`).
//!
//! Each binding runs the same workloads with the same payload (`PAYLOAD`,
//! 60 bytes) and `reaper_interval = 0`, so the ratios compare like with like.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rocksdb::{Options, WriteBatch, DB};
use telha_jobs::{Config, EnqueueOptions, LeaseOptions, NewJob, Queue};

/// The payload every binding benchmark uses.
const PAYLOAD: &[u8] = b"{\"doc\":\"s3://bucket/key/0001.pdf\",\"tenant\":42,\"pages\":12}";

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(|v| {
            v.parse()
                .unwrap_or_else(|_| panic!("{name} takes a number"))
        })
        .unwrap_or(default)
}

fn per_sec(n: usize, since: Instant) -> f64 {
    n as f64 / since.elapsed().as_secs_f64()
}

/// enqueue → lease_next → complete, one job at a time; closes `q`.
fn lifecycle_per_sec(q: &Queue, n: usize, opts: &LeaseOptions) -> f64 {
    let t = Instant::now();
    for _ in 0..n {
        q.enqueue("bench", PAYLOAD, EnqueueOptions::default())
            .expect("enqueue");
        let job = q.lease_next("w", opts).expect("lease").expect("a job");
        q.complete(&job.token(), None).expect("complete");
    }
    let rate = per_sec(n, t);
    q.close();
    rate
}

fn main() {
    let n = arg("--n", 20_000);
    let batch = arg("--batch", 100).max(1);
    let base = std::env::args()
        .skip_while(|a| a != "--dir")
        .nth(1)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let dir = tempfile::Builder::new()
        .prefix("telha-bench-ref")
        .tempdir_in(base)
        .expect("bench dir");
    let store = |name: &str| {
        let cfg = Config {
            reaper_interval: Duration::ZERO,
            ..Config::default()
        };
        Queue::open(dir.path().join(name), cfg).expect("open bench store")
    };

    if std::env::args().any(|a| a == "--settle-many") {
        settle_many(&store("settle_many"), arg("--rounds", 100), batch);
        return;
    }
    let table = std::env::args().any(|a| a == "--table");

    let raw_lifecycle = raw_three_writes(&dir.path().join("raw_lifecycle"), n, 1);
    let raw_batch_lifecycle = raw_three_writes(&dir.path().join("raw_batch_lifecycle"), n, batch);

    let q = store("batch_lifecycle");
    let opts = LeaseOptions::default();
    let t = Instant::now();
    let mut done = 0;
    while done < n {
        let b = batch.min(n - done);
        let jobs = (0..b).map(|_| NewJob::new("bench", PAYLOAD)).collect();
        q.enqueue_many(jobs).expect("enqueue_many");
        let leased = q.lease_many("w", b, &opts).expect("lease_many");
        assert_eq!(leased.len(), b, "lease_many took fewer than were enqueued");
        let items = leased
            .iter()
            .map(|j| telha_jobs::Completion::new(j.token(), None))
            .collect();
        for a in q.complete_many(items).expect("complete_many") {
            a.expect("complete");
        }
        done += b;
    }
    let batch_lifecycle = per_sec(n, t);
    q.close();

    // The same with one `complete` per job: the shape of the front ends
    // without a `complete_many` (C, Python), for a like-with-like ratio.
    let q = store("batch_lifecycle_each");
    let t = Instant::now();
    let mut done = 0;
    while done < n {
        let b = batch.min(n - done);
        let jobs = (0..b).map(|_| NewJob::new("bench", PAYLOAD)).collect();
        q.enqueue_many(jobs).expect("enqueue_many");
        let leased = q.lease_many("w", b, &opts).expect("lease_many");
        assert_eq!(leased.len(), b, "lease_many took fewer than were enqueued");
        for j in &leased {
            q.complete(&j.token(), None).expect("complete");
        }
        done += b;
    }
    let batch_lifecycle_each = per_sec(n, t);
    q.close();

    let raw = {
        let mut o = Options::default();
        o.create_if_missing(true);
        let db = DB::open(&o, dir.path().join("raw")).expect("raw rocksdb");
        let t = Instant::now();
        for i in 0..n {
            let mut key = [0u8; 42];
            key[..8].copy_from_slice(&(i as u64).to_be_bytes());
            let mut b = WriteBatch::default();
            b.put(key, PAYLOAD);
            db.write(b).expect("raw put");
        }
        per_sec(n, t)
    };

    if table {
        let lifecycle = lifecycle_per_sec(&store("lifecycle"), n, &opts);
        println!(
            "{{\"n\":{n},\"batch\":{batch},\"raw_put\":{raw:.0},\"raw_lifecycle\":{raw_lifecycle:.0},\
             \"raw_batch_lifecycle\":{raw_batch_lifecycle:.0},\"lifecycle\":{lifecycle:.0},\
             \"batch_lifecycle\":{batch_lifecycle:.0},\"batch_lifecycle_each\":{batch_lifecycle_each:.0}}}"
        );
        return;
    }

    let q = store("single");
    let t = Instant::now();
    for _ in 0..n {
        q.enqueue("bench", PAYLOAD, EnqueueOptions::default())
            .expect("enqueue");
    }
    let enqueue = per_sec(n, t);
    let t = Instant::now();
    for _ in 0..n {
        let job = q.lease_next("w", &opts).expect("lease").expect("a job");
        q.complete(&job.token(), None).expect("complete");
    }
    let lease_complete = per_sec(n, t);
    q.close();

    let q = store("batch");
    let t = Instant::now();
    for chunk in (0..n).collect::<Vec<_>>().chunks(batch) {
        let jobs = chunk
            .iter()
            .map(|_| NewJob::new("bench", PAYLOAD))
            .collect();
        q.enqueue_many(jobs).expect("enqueue_many");
    }
    let enqueue_batch = per_sec(n, t);
    let t = Instant::now();
    let mut done = 0;
    while done < n {
        let jobs = q.lease_many("w", batch, &opts).expect("lease_many");
        assert!(!jobs.is_empty(), "backlog ran dry at {done}");
        for job in &jobs {
            q.complete(&job.token(), None).expect("complete");
        }
        done += jobs.len();
    }
    let lease_batch_complete = per_sec(n, t);
    q.close();

    let q = store("batch_many");
    for chunk in (0..n).collect::<Vec<_>>().chunks(1000) {
        let jobs = chunk
            .iter()
            .map(|_| NewJob::new("bench", PAYLOAD))
            .collect();
        q.enqueue_many(jobs).expect("enqueue_many");
    }
    let t = Instant::now();
    let mut done = 0;
    while done < n {
        let jobs = q.lease_many("w", batch, &opts).expect("lease_many");
        assert!(!jobs.is_empty(), "backlog ran dry at {done}");
        done += jobs.len();
        let items = jobs
            .iter()
            .map(|j| telha_jobs::Completion::new(j.token(), None))
            .collect();
        for a in q.complete_many(items).expect("complete_many") {
            a.expect("complete");
        }
    }
    let lease_batch_complete_many = per_sec(n, t);
    q.close();

    let lifecycle = lifecycle_per_sec(&store("lifecycle"), n, &opts);

    let q = Arc::new(store("pollers"));
    let jobs: Vec<NewJob> = (0..n).map(|_| NewJob::new("bench", PAYLOAD)).collect();
    for chunk in jobs.chunks(1000) {
        q.enqueue_many(chunk.to_vec()).expect("enqueue_many");
    }
    let t = Instant::now();
    let hs: Vec<_> = (0..4)
        .map(|w| {
            let q = q.clone();
            std::thread::spawn(move || {
                let worker = format!("w{w}");
                let opts = LeaseOptions::default();
                while let Some(job) = q.lease_next(&worker, &opts).expect("lease") {
                    q.complete(&job.token(), None).expect("complete");
                }
            })
        })
        .collect();
    for h in hs {
        h.join().expect("poller");
    }
    let pollers4 = per_sec(n, t);
    q.close();

    let batch_pollers4 = batch_pollers(&store("batch_pollers"), n, batch, 4);

    println!(
        "{{\"n\":{n},\"batch\":{batch},\"raw_put\":{raw:.0},\"enqueue\":{enqueue:.0},\
         \"enqueue_batch\":{enqueue_batch:.0},\"lease_complete\":{lease_complete:.0},\
         \"lease_batch_complete\":{lease_batch_complete:.0},\
         \"lease_batch_complete_many\":{lease_batch_complete_many:.0},\"lifecycle\":{lifecycle:.0},\
         \"pollers4\":{pollers4:.0},\"batch_pollers4\":{batch_pollers4:.0},\"batch_lifecycle\":{batch_lifecycle:.0},\
         \"batch_lifecycle_each\":{batch_lifecycle_each:.0},\"raw_lifecycle\":{raw_lifecycle:.0},\
         \"raw_batch_lifecycle\":{raw_batch_lifecycle:.0}}}"
    );
}

/// Jobs/s of `threads` threads each `lease_many(batch)` + `complete_many`
/// over a backlog of `n` jobs.
fn batch_pollers(q: &Queue, n: usize, batch: usize, threads: usize) -> f64 {
    for chunk in (0..n).collect::<Vec<_>>().chunks(1000) {
        let jobs = chunk
            .iter()
            .map(|_| NewJob::new("bench", PAYLOAD))
            .collect();
        q.enqueue_many(jobs).expect("enqueue_many");
    }
    let t = Instant::now();
    std::thread::scope(|s| {
        for w in 0..threads {
            s.spawn(move || {
                let worker = format!("w{w}");
                let opts = LeaseOptions::default();
                loop {
                    let jobs = q.lease_many(&worker, batch, &opts).expect("lease_many");
                    if jobs.is_empty() {
                        return;
                    }
                    let items = jobs
                        .iter()
                        .map(|j| telha_jobs::Completion::new(j.token(), None))
                        .collect();
                    for a in q.complete_many(items).expect("complete_many") {
                        a.expect("complete");
                    }
                }
            });
        }
    });
    let rate = per_sec(n, t);
    q.close();
    rate
}

/// Jobs/s through the least a three-state queue writes in raw RocksDB:
/// put pending; delete it and put leased; delete that and put completed,
/// `per_batch` jobs per WriteBatch (each a 42-byte key, the 60-byte payload).
fn raw_three_writes(path: &std::path::Path, n: usize, per_batch: usize) -> f64 {
    let mut o = Options::default();
    o.create_if_missing(true);
    let db = DB::open(&o, path).expect("raw rocksdb");
    let key = |state: u8, i: usize| {
        let mut k = [0u8; 42];
        k[0] = state;
        k[1..9].copy_from_slice(&(i as u64).to_be_bytes());
        k
    };
    let t = Instant::now();
    let mut i = 0;
    while i < n {
        let end = (i + per_batch).min(n);
        let mut b = WriteBatch::default();
        for j in i..end {
            b.put(key(1, j), PAYLOAD);
        }
        db.write(b).expect("raw put");
        let mut b = WriteBatch::default();
        for j in i..end {
            b.delete(key(1, j));
            b.put(key(2, j), PAYLOAD);
        }
        db.write(b).expect("raw lease");
        let mut b = WriteBatch::default();
        for j in i..end {
            b.delete(key(2, j));
            b.put(key(4, j), PAYLOAD);
        }
        db.write(b).expect("raw complete");
        i = end;
    }
    per_sec(n, t)
}

/// The calling thread's CPU time so far, in ns (0 where the kernel does not
/// say).
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// `--settle-many`: `fail_many` / `release_many` of `batch` leases against
/// `batch` single `fail` / `release` calls, interleaved round by round.
fn settle_many(q: &Queue, rounds: usize, batch: usize) {
    use telha_jobs::Failure;
    const MODES: [&str; 4] = ["fail_each", "fail_many", "release_each", "release_many"];
    let opts = LeaseOptions::default();
    // Per mode: wall ns and thread CPU ns over its settle calls.
    let mut spent = [(0u128, 0u64); 4];
    for _ in 0..rounds {
        for (m, mode) in MODES.iter().enumerate() {
            let jobs: Vec<NewJob> = (0..batch).map(|_| NewJob::new("bench", PAYLOAD)).collect();
            q.enqueue_many(jobs).expect("enqueue_many");
            let leased = q.lease_many("w", batch, &opts).expect("lease_many");
            assert_eq!(leased.len(), batch, "a released job was left behind");
            let tokens: Vec<_> = leased.iter().map(|j| j.token()).collect();
            let (t, cpu) = (Instant::now(), thread_cpu_ns());
            match *mode {
                "fail_each" => {
                    for tk in &tokens {
                        q.fail(tk, "boom", false).expect("fail");
                    }
                }
                "fail_many" => {
                    let items = tokens
                        .iter()
                        .map(|t| Failure::new(*t, "boom").not_retryable());
                    for a in q.fail_many(items.collect()).expect("fail_many") {
                        a.expect("fail");
                    }
                }
                "release_each" => {
                    for tk in &tokens {
                        q.release(tk).expect("release");
                    }
                }
                _ => {
                    for a in q.release_many(&tokens).expect("release_many") {
                        a.expect("release");
                    }
                }
            }
            spent[m].0 += t.elapsed().as_nanos();
            spent[m].1 += thread_cpu_ns().saturating_sub(cpu);
            if mode.starts_with("release") {
                // Lease the released jobs again and complete them, so the
                // next round finds only its own jobs pending.
                let again = q.lease_many("w", batch, &opts).expect("lease_many");
                let done = again
                    .iter()
                    .map(|j| telha_jobs::Completion::new(j.token(), None))
                    .collect();
                for a in q.complete_many(done).expect("complete_many") {
                    a.expect("complete");
                }
            }
        }
    }
    let n = (rounds * batch) as f64;
    let rate = |m: usize| n / (spent[m].0 as f64 / 1e9);
    let cpu_us = |m: usize| spent[m].1 as f64 / 1e3 / n;
    let fields: Vec<String> = MODES
        .iter()
        .enumerate()
        .map(|(m, name)| {
            format!(
                "\"{name}\":{:.0},\"{name}_cpu_us\":{:.2}",
                rate(m),
                cpu_us(m)
            )
        })
        .collect();
    println!(
        "{{\"rounds\":{rounds},\"batch\":{batch},{},\"fail_many_vs_each\":{:.2},\"release_many_vs_each\":{:.2}}}",
        fields.join(","),
        rate(1) / rate(0),
        rate(3) / rate(2)
    );
}
