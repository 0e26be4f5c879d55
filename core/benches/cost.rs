//! What one call costs against what its writes cost: the core's
//! lease + complete pair beside two raw RocksDB batches of the same shape,
//! and the lifecycle with large payloads beside the lifecycle with a small
//! one plus one raw put of the payload. Measured in the same run.
//!
//! `cargo bench -p telha-jobs --bench cost` (part of `make bench`);
//! `-- --quick` for a smoke run.

use std::time::{Duration, Instant};

use rocksdb::{ColumnFamilyDescriptor, Options, WriteBatch, DB};
use telha_jobs::store::{counters_merge, COUNTERS_MERGE_NAME};
use telha_jobs::{Config, EnqueueOptions, LeaseOptions, NewJob, Queue, Scope};

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

/// A raw store with the engine's hot column families.
fn raw_db(d: &std::path::Path) -> DB {
    let mut o = Options::default();
    o.create_if_missing(true);
    o.create_missing_column_families(true);
    let cfs = ["jobs", "ids", "kinds", "counters"].map(|n| {
        let mut c = Options::default();
        if n == "counters" {
            c.set_merge_operator_associative(COUNTERS_MERGE_NAME, counters_merge);
        }
        ColumnFamilyDescriptor::new(n, c)
    });
    DB::open_cf_descriptors(&o, d, cfs).unwrap()
}

fn key(state: u8, ts: u64, id: u64) -> [u8; 42] {
    let mut k = [0u8; 42];
    k[16] = state;
    k[17] = 128;
    k[18..26].copy_from_slice(&ts.to_be_bytes());
    k[34..42].copy_from_slice(&id.to_be_bytes());
    k
}

/// Raw batches shaped like an enqueue, a lease and a completion (the keys,
/// column families and value sizes the engine writes). Returns the rate of
/// (lease-shaped + completion-shaped) pairs, and of whole lifecycles.
fn raw_shapes(n: usize, value_len: usize) -> (f64, f64) {
    let d = dir("raw-shapes");
    let db = raw_db(d.path());
    let (jobs, ids, kinds, counters) = (
        db.cf_handle("jobs").unwrap(),
        db.cf_handle("ids").unwrap(),
        db.cf_handle("kinds").unwrap(),
        db.cf_handle("counters").unwrap(),
    );
    let value = vec![7u8; value_len];
    let delta = [0u8; 40];
    let enqueue = |i: u64| {
        let mut b = WriteBatch::default();
        let k = key(1, i, i);
        b.put_cf(jobs, k, &value);
        b.put_cf(ids, i.to_be_bytes(), k);
        b.put_cf(kinds, &k[16..], [1]);
        b.merge_cf(counters, "embed", delta);
        db.write(b).unwrap();
    };
    let lease_and_complete = |i: u64| {
        let mut b = WriteBatch::default();
        let (p, l) = (key(1, i, i), key(2, i + 300_000, i));
        b.delete_cf(jobs, p);
        b.put_cf(jobs, l, &value);
        b.put_cf(ids, i.to_be_bytes(), l);
        b.delete_cf(kinds, &p[16..]);
        b.merge_cf(counters, "embed", delta);
        db.write(b).unwrap();
        let mut b = WriteBatch::default();
        let c = key(4, i + 1, i);
        b.delete_cf(jobs, l);
        b.put_cf(jobs, c, &value);
        b.put_cf(ids, i.to_be_bytes(), c);
        b.merge_cf(counters, "embed", delta);
        db.write(b).unwrap();
    };
    for i in 0..n as u64 {
        enqueue(i);
    }
    let t0 = Instant::now();
    for i in 0..n as u64 {
        lease_and_complete(i);
    }
    let pairs = n as f64 / t0.elapsed().as_secs_f64();
    let t0 = Instant::now();
    for i in n as u64..2 * n as u64 {
        enqueue(i);
        lease_and_complete(i);
    }
    (pairs, n as f64 / t0.elapsed().as_secs_f64())
}

/// µs per raw single put of `len` bytes.
fn raw_put_us(n: usize, len: usize) -> f64 {
    let d = dir("raw-put");
    let db = raw_db(d.path());
    let cf = db.cf_handle("jobs").unwrap();
    let v = vec![3u8; len];
    let t0 = Instant::now();
    for i in 0..n as u64 {
        let mut b = WriteBatch::default();
        b.put_cf(cf, i.to_be_bytes(), &v);
        db.write(b).unwrap();
    }
    t0.elapsed().as_secs_f64() * 1e6 / n as f64
}

/// Lease + complete pairs over a backlog of `n`, per second.
fn core_pairs(n: usize) -> f64 {
    let (_d, q) = queue("pairs");
    let payload = vec![5u8; 56];
    for _ in 0..n / 1000 {
        let batch = (0..1000)
            .map(|_| NewJob::new("embed", payload.clone()))
            .collect();
        q.enqueue_many(batch).unwrap();
    }
    let t0 = Instant::now();
    for _ in 0..n / 1000 * 1000 {
        let j = q
            .lease_next("w", &LeaseOptions::default())
            .unwrap()
            .unwrap();
        q.complete(&j.token(), None).unwrap();
    }
    (n / 1000 * 1000) as f64 / t0.elapsed().as_secs_f64()
}

/// µs per lease_next + complete on the any-scope poll with `scopes` active
/// scopes of one ready job each beside a busy scope (issue 49: a lease must
/// not cost more with more tenants waiting), over `n` pairs.
fn active_scopes_us(scopes: usize, n: usize) -> f64 {
    let (_d, q) = queue("active");
    let payload = vec![5u8; 56];
    let in_scope = |sc: Scope| {
        NewJob::new("embed", payload.clone()).with(EnqueueOptions {
            scope: Some(sc),
            ..EnqueueOptions::default()
        })
    };
    let busy = Scope::from_uuid(uuid::Uuid::from_u128(1));
    for _ in 0..n.div_ceil(1000) {
        q.enqueue_many((0..1000).map(|_| in_scope(busy)).collect())
            .unwrap();
    }
    let all: Vec<Scope> = (0..scopes)
        .map(|i| Scope::from_uuid(uuid::Uuid::from_u128(1_000 + i as u128)))
        .collect();
    for chunk in all.chunks(1000) {
        q.enqueue_many(chunk.iter().map(|sc| in_scope(*sc)).collect())
            .unwrap();
    }
    let t0 = Instant::now();
    for _ in 0..n {
        let j = q
            .lease_next("w", &LeaseOptions::default())
            .unwrap()
            .unwrap();
        q.complete(&j.token(), None).unwrap();
    }
    t0.elapsed().as_secs_f64() * 1e6 / n as f64
}

/// µs per lifecycle (enqueue, lease, complete) with a payload of `len` bytes.
fn lifecycle_us(n: usize, len: usize) -> f64 {
    let (_d, q) = queue("lifecycle");
    let payload = vec![9u8; len];
    let t0 = Instant::now();
    for _ in 0..n {
        q.enqueue("embed", &payload, EnqueueOptions::default())
            .unwrap();
        let j = q
            .lease_next("w", &LeaseOptions::default())
            .unwrap()
            .unwrap();
        q.complete(&j.token(), None).unwrap();
    }
    t0.elapsed().as_secs_f64() * 1e6 / n as f64
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    // `-- --pairs`: only the pair figures (for profiling the lease path).
    let pairs_only = std::env::args().any(|a| a == "--pairs");
    let n = if quick { 5_000 } else { 50_000 };
    // `-- --lifecycle-only N`: only N core lifecycles, nothing printed but
    // their cost (for callgrind: every instruction is the engine's).
    if let Some(i) = std::env::args().position(|a| a == "--lifecycle-only") {
        let n = std::env::args()
            .nth(i + 1)
            .and_then(|v| v.parse().ok())
            .unwrap_or(20_000);
        println!(
            "lifecycle, 100-byte payload: {:.1} µs",
            lifecycle_us(n, 100)
        );
        return;
    }
    println!(
        "telha-jobs per-call cost ({}), raw = RocksDB batches of the engine's shape, same run",
        if quick { "quick" } else { "full" }
    );
    let row = |what: &str, value: String, ratio: String| {
        println!("{what:<66} {value:>14} {ratio:>26}");
    };
    // A 56-byte payload makes a ~150-byte record with its log.
    let (raw_pairs, raw_life) = raw_shapes(n, 150);
    row(
        "raw lease-shaped + completion-shaped batches",
        format!("{raw_pairs:.0}/s"),
        String::new(),
    );
    row(
        "raw enqueue + lease + completion-shaped batches",
        format!("{raw_life:.0}/s"),
        String::new(),
    );
    let pairs = core_pairs(n);
    row(
        "lease_next + complete, 1 thread",
        format!("{pairs:.0}/s"),
        format!("{:.2}× the raw pair rate", pairs / raw_pairs),
    );
    if pairs_only {
        return;
    }
    // Lease cost against the number of active scopes (1 thread).
    let counts: &[usize] = if quick {
        &[1, 1_000, 10_000]
    } else {
        &[1, 1_000, 10_000, 100_000]
    };
    let per = (n / 5).max(1_000);
    let mut one = 0.0;
    for &c in counts {
        // The best of three stores: the rows are compared with each other,
        // and a loaded machine only ever makes a run slower.
        let us = (0..3)
            .map(|_| active_scopes_us(c, per))
            .fold(f64::INFINITY, f64::min);
        if c == 1 {
            one = us;
        }
        row(
            &format!("lease_next + complete, {c} active scopes + a busy one"),
            format!("{us:.1} µs"),
            format!(
                "{:.2}× 1 scope (≤ 1.5×), {:.2}× raw",
                us / one,
                us * raw_pairs / 1e6
            ),
        );
    }
    let small = lifecycle_us(n, 100);
    row(
        "lifecycle, 100-byte payload",
        format!("{small:.1} µs"),
        format!("{:.2}× the raw lifecycle rate", (1e6 / small) / raw_life),
    );
    for (len, label, count) in [(64 << 10, "64 KiB", n / 10), (1 << 20, "1 MiB", n / 100)] {
        let put = raw_put_us(count.max(50), len);
        let big = lifecycle_us(count.max(50), len);
        row(
            &format!("lifecycle, {label} payload (raw put of it: {put:.1} µs)"),
            format!("{big:.1} µs"),
            format!("{:.2}× (100-byte lifecycle + put)", big / (small + put)),
        );
    }
}
