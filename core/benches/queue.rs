//! The queue's benchmark: every figure printed beside raw RocksDB single-put
//! WriteBatches measured in the same run, as a ratio.
//!
//! `cargo bench -p telha-jobs --bench queue` (or `make bench`); `-- --quick`
//! for a smoke run with small counts.

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use rocksdb::{Options, WriteBatch, WriteOptions, DB};
use telha_jobs::{Config, EnqueueOptions, LeaseOptions, NewJob, Queue, Scope};

struct Scale {
    ops: usize,
    churn: usize,
    backlog: usize,
    sync_ops: usize,
    idle_scopes: usize,
}

const PAYLOAD: &[u8] = b"{\"doc\":\"s3://bucket/key/0001.pdf\",\"tenant\":42,\"pages\":12}";

fn store(name: &str, sync: bool) -> (tempfile::TempDir, Queue) {
    let dir = tempfile::Builder::new()
        .prefix(name)
        .tempdir_in(bench_dir())
        .unwrap();
    let cfg = Config {
        reaper_interval: Duration::ZERO,
        sync_writes: sync,
        ..Config::default()
    };
    let q = Queue::open(dir.path(), cfg).unwrap();
    (dir, q)
}

fn bench_dir() -> std::path::PathBuf {
    let d = std::env::var_os("TELHA_BENCH_DIR")
        .map(Into::into)
        .unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Raw RocksDB: `threads` threads each writing `per_thread` single-put batches.
/// Returns µs per batch (wall time × threads / ops, i.e. per-op cost) and ops/s.
fn raw_puts(threads: usize, per_thread: usize, sync: bool) -> (f64, f64) {
    let dir = tempfile::Builder::new()
        .prefix("raw")
        .tempdir_in(bench_dir())
        .unwrap();
    let mut o = Options::default();
    o.create_if_missing(true);
    let db = Arc::new(DB::open(&o, dir.path()).unwrap());
    let barrier = Arc::new(Barrier::new(threads + 1));
    let hs: Vec<_> = (0..threads)
        .map(|t| {
            let (db, barrier) = (db.clone(), barrier.clone());
            std::thread::spawn(move || {
                let mut w = WriteOptions::default();
                w.set_sync(sync);
                barrier.wait();
                for i in 0..per_thread {
                    let mut key = [0u8; 42];
                    key[..8].copy_from_slice(&(t as u64).to_be_bytes());
                    key[8..16].copy_from_slice(&(i as u64).to_be_bytes());
                    let mut b = WriteBatch::default();
                    b.put(key, PAYLOAD);
                    db.write_opt(b, &w).unwrap();
                }
            })
        })
        .collect();
    barrier.wait();
    let t0 = Instant::now();
    for h in hs {
        h.join().unwrap();
    }
    let el = t0.elapsed().as_secs_f64();
    let ops = (threads * per_thread) as f64;
    (el * 1e6 / ops, ops / el)
}

fn per_sec(n: usize, d: Duration) -> f64 {
    n as f64 / d.as_secs_f64()
}

/// Run `op` `per_thread` times on each of `threads` threads (each with its
/// own worker id), all starting together. Returns operations/s.
fn threaded(q: &Queue, threads: usize, per_thread: usize, op: fn(&Queue, &str)) -> f64 {
    let barrier = Arc::new(Barrier::new(threads + 1));
    let hs: Vec<_> = (0..threads)
        .map(|t| {
            let (q, barrier) = (q.clone(), barrier.clone());
            std::thread::spawn(move || {
                let w = format!("w{t}");
                barrier.wait();
                for _ in 0..per_thread {
                    op(&q, &w);
                }
            })
        })
        .collect();
    barrier.wait();
    let t0 = Instant::now();
    for h in hs {
        h.join().unwrap();
    }
    per_sec(threads * per_thread, t0.elapsed())
}

/// Lease the next job and complete it.
fn lease_and_complete(q: &Queue, worker: &str) {
    let j = q
        .lease_next(worker, &LeaseOptions::default())
        .unwrap()
        .expect("a job");
    q.complete(&j.token(), None).unwrap();
}

/// One full lifecycle: enqueue, lease, complete.
fn lifecycle_once(q: &Queue, worker: &str) {
    q.enqueue("embed", PAYLOAD, EnqueueOptions::default())
        .unwrap();
    lease_and_complete(q, worker);
}

/// `threads` threads each running `per_thread` full lifecycles. Returns lifecycles/s.
fn lifecycle(q: &Queue, threads: usize, per_thread: usize) -> f64 {
    threaded(q, threads, per_thread, lifecycle_once)
}

/// `threads` pollers each leasing and completing `per_thread` jobs from a
/// backlog. Returns jobs/s.
fn pollers(q: &Queue, threads: usize, per_thread: usize) -> f64 {
    threaded(q, threads, per_thread, lease_and_complete)
}

fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

/// Latency of `n` single leases (each completed outside the timing).
fn lease_latency(q: &Queue, opts: &LeaseOptions, n: usize) -> (f64, f64) {
    let mut lat = Vec::with_capacity(n);
    for _ in 0..n {
        let t0 = Instant::now();
        let j = q.lease_next("lat", opts).unwrap().expect("a job");
        lat.push(t0.elapsed().as_secs_f64() * 1e6);
        q.complete(&j.token(), None).unwrap();
    }
    (percentile(&mut lat, 0.5), percentile(&mut lat, 0.99))
}

fn enqueue_n(q: &Queue, kind: &str, n: usize, opts: EnqueueOptions) {
    let mut left = n;
    while left > 0 {
        let k = left.min(1000);
        let batch = (0..k)
            .map(|_| NewJob::new(kind, PAYLOAD).with(opts.clone()))
            .collect();
        q.enqueue_many(batch).unwrap();
        left -= k;
    }
}

struct Table {
    rows: Vec<(String, String, String)>,
}

impl Table {
    fn row(&mut self, what: &str, value: String, ratio: String) {
        println!("{what:<62} {value:>16} {ratio:>22}");
        self.rows.push((what.into(), value, ratio));
    }
}

#[path = "parts/backup.rs"]
mod backup;
#[path = "parts/queue_fanin.rs"]
mod queue_fanin;
#[path = "parts/queue_tags.rs"]
mod queue_tags;
#[path = "parts/queue_trace.rs"]
mod queue_trace;
#[path = "parts/queue_unique.rs"]
mod queue_unique;
#[path = "parts/window_prune.rs"]
mod window_prune;

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    if std::env::args().any(|a| a == "--unique") {
        // Only issue 44's rows: `cargo bench -p telha-jobs --bench queue -- --unique`.
        let mut t = Table { rows: Vec::new() };
        println!("{:<62} {:>16} {:>22}", "figure", "value", "vs");
        queue_unique::rows(&mut t, if quick { 5_000 } else { 50_000 });
        return;
    }
    if std::env::args().any(|a| a == "--fanin") {
        // Only issue 43's row: `cargo bench -p telha-jobs --bench queue -- --fanin`.
        let mut t = Table { rows: Vec::new() };
        println!("{:<62} {:>16} {:>22}", "figure", "value", "vs");
        queue_fanin::rows(&mut t, 10_000, if quick { 1 } else { 3 });
        return;
    }
    if std::env::args().any(|a| a == "--tags") {
        // Only issue 42's rows: `cargo bench -p telha-jobs --bench queue -- --tags`.
        let mut t = Table { rows: Vec::new() };
        println!("{:<62} {:>16} {:>22}", "figure", "value", "vs");
        let (n, others) = if quick {
            (5_000, 20_000)
        } else {
            (20_000, 1_000_000)
        };
        let (raw_us, raw_rate) = raw_puts(1, n * 2, false);
        t.row(
            "raw RocksDB single-put batch, 1 thread",
            format!("{raw_rate:.0}/s"),
            format!("{raw_us:.2} µs/put"),
        );
        queue_tags::rows(&mut t, n, others, raw_rate);
        return;
    }
    if std::env::args().any(|a| a == "--trace") {
        // Only issue 45's rows: `cargo bench -p telha-jobs --bench queue -- --trace`.
        let mut t = Table { rows: Vec::new() };
        println!("{:<62} {:>16} {:>22}", "figure", "value", "vs");
        queue_trace::rows(
            &mut t,
            if quick { 5_000 } else { 20_000 },
            if quick { 3 } else { 5 },
        );
        return;
    }
    if std::env::args().any(|a| a == "--backup") {
        // Issue 39's backup rows: `… --bench queue -- --backup`.
        let mut t = Table { rows: Vec::new() };
        println!("{:<62} {:>16} {:>22}", "figure", "value", "vs");
        let (small, large) = if quick {
            (1_000, 50_000)
        } else {
            (10_000, 1_000_000)
        };
        backup::rows(&mut t, small, large);
        return;
    }
    if std::env::args().any(|a| a == "--prune-windows") {
        // Issue 44's pruning row: `… --bench queue -- --prune-windows`.
        let mut t = Table { rows: Vec::new() };
        println!("{:<62} {:>16} {:>22}", "figure", "value", "vs");
        window_prune::rows(&mut t, if quick { 100_000 } else { 1_000_000 });
        return;
    }
    let s = if quick {
        Scale {
            ops: 5_000,
            churn: 50_000,
            backlog: 50_000,
            sync_ops: 100,
            idle_scopes: 1_000,
        }
    } else {
        Scale {
            ops: 50_000,
            churn: 1_000_000,
            backlog: 1_000_000,
            sync_ops: 1_000,
            idle_scopes: 10_000,
        }
    };
    let mut t = Table { rows: Vec::new() };
    println!(
        "telha-jobs benchmark ({}), raw = RocksDB single-put WriteBatch, WAL on, same run",
        if quick { "quick" } else { "full" }
    );
    println!("{:<62} {:>16} {:>22}", "figure", "value", "vs raw RocksDB");

    // The ceiling.
    let (raw_us, raw_1) = raw_puts(1, s.ops * 2, false);
    t.row(
        "raw RocksDB single-put batch, 1 thread",
        format!("{raw_1:.0}/s"),
        format!("{raw_us:.2} µs/put"),
    );
    let raw_t: Vec<f64> = [2, 4]
        .iter()
        .map(|&n| raw_puts(n, s.ops, false).1)
        .collect();
    t.row(
        "raw RocksDB single-put batch, 2 threads",
        format!("{:.0}/s", raw_t[0]),
        String::new(),
    );
    t.row(
        "raw RocksDB single-put batch, 4 threads",
        format!("{:.0}/s", raw_t[1]),
        String::new(),
    );

    // Enqueue, single and batched.
    let (_d, q) = store("enq", false);
    let t0 = Instant::now();
    for _ in 0..s.ops {
        q.enqueue("embed", PAYLOAD, EnqueueOptions::default())
            .unwrap();
    }
    let enq = per_sec(s.ops, t0.elapsed());
    t.row(
        "enqueue, 1 thread",
        format!("{enq:.0}/s"),
        format!("{:.2}× raw put cost", raw_1 / enq),
    );
    let t0 = Instant::now();
    enqueue_n(&q, "embed", s.ops * 4, EnqueueOptions::default());
    let enq_b = per_sec(s.ops * 4, t0.elapsed());
    t.row(
        "enqueue_many (1000 per batch), 1 thread",
        format!("{enq_b:.0}/s"),
        format!("{:.2}× raw put rate", enq_b / raw_1),
    );

    // Lease + complete over the backlog just built.
    let t0 = Instant::now();
    for _ in 0..s.ops {
        let j = q
            .lease_next("w", &LeaseOptions::default())
            .unwrap()
            .unwrap();
        q.complete(&j.token(), None).unwrap();
    }
    let lc = per_sec(s.ops, t0.elapsed());
    t.row(
        "lease_next + complete, 1 thread",
        format!("{lc:.0}/s"),
        format!("{:.2}× raw put cost", raw_1 / lc),
    );
    let t0 = Instant::now();
    let mut n = 0;
    while n < s.ops * 2 {
        let jobs = q.lease_many("w", 100, &LeaseOptions::default()).unwrap();
        for j in &jobs {
            q.complete(&j.token(), None).unwrap();
        }
        n += jobs.len();
    }
    let lmc = per_sec(n, t0.elapsed());
    t.row(
        "lease_many(100) + complete each, 1 thread",
        format!("{lmc:.0}/s"),
        format!("{:.2}× raw put cost", raw_1 / lmc),
    );
    drop(q);

    // Pollers over a backlog: lease_next + complete, 1/2/4 threads.
    let mut one_p = 0.0;
    for threads in [1, 2, 4] {
        let (_d, q) = store("pollers", false);
        let per = s.ops / threads;
        enqueue_n(&q, "embed", per * threads, EnqueueOptions::default());
        let r = pollers(&q, threads, per);
        if threads == 1 {
            one_p = r;
        }
        t.row(
            &format!("pollers over a backlog (lease_next + complete), {threads} thread(s)"),
            format!("{r:.0}/s"),
            format!("{:.2}× 1 thread", r / one_p),
        );
    }

    // Full lifecycle, 1/2/4 threads.
    let mut one = 0.0;
    for threads in [1, 2, 4] {
        let (_d, q) = store("life", false);
        let r = lifecycle(&q, threads, s.ops / threads);
        if threads == 1 {
            one = r;
            t.row(
                "lifecycle enqueue→lease→complete, 1 thread (target ≤ 4×)",
                format!("{r:.0}/s"),
                format!("{:.2}× raw put cost", raw_1 / r),
            );
        } else {
            let raw = raw_t[if threads == 2 { 0 } else { 1 }];
            t.row(
                &format!("lifecycle, {threads} threads"),
                format!("{r:.0}/s"),
                format!("{:.2}× 1 thread; {:.2}× raw", r / one, raw / r),
            );
        }
    }

    // Lease latency: fresh, then after `churn` jobs went through one scope.
    let (_d, q) = store("churn", false);
    enqueue_n(&q, "embed", 2_000, EnqueueOptions::default());
    let (p50f, p99f) = lease_latency(&q, &LeaseOptions::default(), 2_000);
    t.row(
        "lease latency p50 / p99, fresh store",
        format!("{p50f:.1}/{p99f:.1} µs"),
        format!("{:.2}× raw put (p50)", p50f / raw_us),
    );
    let mut left = s.churn;
    while left > 0 {
        let k = left.min(10_000);
        enqueue_n(&q, "embed", k, EnqueueOptions::default());
        let mut got = 0;
        while got < k {
            let jobs = q
                .lease_many("churn", 500, &LeaseOptions::default())
                .unwrap();
            for j in &jobs {
                q.complete(&j.token(), None).unwrap();
            }
            got += jobs.len();
        }
        left -= k;
    }
    enqueue_n(&q, "embed", 2_000, EnqueueOptions::default());
    let (p50c, p99c) = lease_latency(&q, &LeaseOptions::default(), 2_000);
    t.row(
        &format!(
            "lease latency p50 / p99 after {} churned (target p99 ≤ 2× fresh)",
            s.churn
        ),
        format!("{p50c:.1}/{p99c:.1} µs"),
        format!("p99 {:.2}× fresh", p99c / p99f),
    );
    drop(q);

    // Kind filter with a backlog of another kind ahead.
    let (_d, q) = store("kinds", false);
    enqueue_n(&q, "ingest:pdf", s.backlog, EnqueueOptions::default());
    enqueue_n(&q, "embed", 2_000, EnqueueOptions::default());
    let filt = LeaseOptions::default().kind("embed").unwrap();
    let (p50k, p99k) = lease_latency(&q, &filt, 2_000);
    let (p50u, p99u) = lease_latency(&q, &LeaseOptions::default(), 2_000);
    t.row(
        &format!(
            "kind-filtered lease, {} other-kind jobs ahead (p50/p99)",
            s.backlog
        ),
        format!("{p50k:.1}/{p99k:.1} µs"),
        format!("{:.2}× unfiltered p50 (≤ 2×)", p50k / p50u),
    );
    t.row(
        "unfiltered lease on the same store (p50/p99)",
        format!("{p50u:.1}/{p99u:.1} µs"),
        String::new(),
    );

    // Fairness: a big backlog beside a small scope.
    let big = Scope::from_bytes([1; 16]);
    let small = Scope::from_bytes([2; 16]);
    enqueue_n(&q, "embed", s.backlog, EnqueueOptions::default().scope(big));
    enqueue_n(&q, "embed", 10, EnqueueOptions::default().scope(small));
    let mut leases = 0;
    let mut served = 0;
    while served < 10 {
        let j = q
            .lease_next("fair", &LeaseOptions::default())
            .unwrap()
            .unwrap();
        leases += 1;
        if j.scope == small {
            served += 1;
        }
        q.complete(&j.token(), None).unwrap();
    }
    let scopes = 3; // system scope (leftover ingest:pdf backlog), big, small
    t.row(
        &format!(
            "leases until a 10-job scope is served beside {} backlog",
            s.backlog
        ),
        format!("{leases} leases"),
        format!("{scopes} scopes/round: ≤ {} is one round each", 10 * scopes),
    );
    drop(q);

    // Many tenants that have gone idle cost a poller nothing.
    let (_d, q) = store("idle", false);
    enqueue_n(&q, "embed", 4_000, EnqueueOptions::default());
    let (p50b, _) = lease_latency(&q, &LeaseOptions::default(), 2_000);
    for i in 0..s.idle_scopes {
        let sc = Scope::from_uuid(uuid::Uuid::from_u128(1_000 + i as u128));
        q.enqueue("embed", PAYLOAD, EnqueueOptions::default().scope(sc))
            .unwrap();
        let j = q
            .lease_next("idle", &LeaseOptions::default().scope(sc))
            .unwrap()
            .unwrap();
        q.complete(&j.token(), None).unwrap();
    }
    let (p50i, p99i) = lease_latency(&q, &LeaseOptions::default(), 2_000);
    t.row(
        &format!(
            "lease p50/p99 with {} drained scopes beside a busy one",
            s.idle_scopes
        ),
        format!("{p50i:.1}/{p99i:.1} µs"),
        format!("{:.2}× with none", p50i / p50b),
    );
    drop(q);

    // Durable: sync_writes.
    let (raw_sync_us, raw_sync) = raw_puts(1, s.sync_ops, true);
    t.row(
        "raw RocksDB single-put batch, sync, 1 thread",
        format!("{raw_sync:.0}/s"),
        format!("{raw_sync_us:.0} µs/put"),
    );
    let (_r, raw_sync16) = raw_puts(16, s.sync_ops / 4, true);
    t.row(
        "raw RocksDB single-put batch, sync, 16 threads",
        format!("{raw_sync16:.0}/s"),
        String::new(),
    );
    for threads in [1, 16] {
        let (_d, q) = store("sync", true);
        let per = if threads == 1 {
            s.sync_ops
        } else {
            s.sync_ops / 4
        };
        let r = lifecycle(&q, threads, per);
        let raw = if threads == 1 { raw_sync } else { raw_sync16 };
        t.row(
            &format!("lifecycle with sync_writes, {threads} thread(s)"),
            format!("{r:.0}/s"),
            format!("{:.2}× raw sync put cost", raw / r),
        );
    }
    // Keyed enqueue_many(100) with sync_writes: each batch holds most of
    // the 64 idempotency stripes across its fsync, so concurrent keyed
    // batches queue behind each other (the contention a replicated commit
    // would magnify; the baseline for the cluster stages).
    for threads in [1, 16] {
        let (_d, q) = store("keyed", true);
        let batches = if threads == 1 {
            s.sync_ops / 10
        } else {
            s.sync_ops / 40
        };
        let t0 = Instant::now();
        let hs: Vec<_> = (0..threads)
            .map(|t| {
                let q = q.clone();
                std::thread::spawn(move || keyed_batches(&q, t, batches))
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        let el = t0.elapsed();
        let n = threads * batches;
        let raw = if threads == 1 { raw_sync } else { raw_sync16 };
        t.row(
            &format!("keyed enqueue_many(100) with sync_writes, {threads} thread(s)"),
            format!("{:.0} jobs/s", per_sec(n * 100, el)),
            format!("{:.2}× raw sync put cost/batch", raw / per_sec(n, el)),
        );
    }
    let _ = t.rows.len();
}

/// `batches` batches of 100 jobs, each with its own idempotency key.
fn keyed_batches(q: &Queue, thread: usize, batches: usize) {
    for b in 0..batches {
        let jobs = (0..100)
            .map(|i| {
                let key = format!("t{thread}-b{b}-j{i}");
                NewJob::new("embed", PAYLOAD).with(EnqueueOptions::default().idempotency_key(key))
            })
            .collect();
        q.enqueue_many(jobs).unwrap();
    }
}
