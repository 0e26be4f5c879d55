//! What job control costs the lease path, and what a bulk cancel costs
//! beside raw RocksDB (issue 16), measured in the same run:
//!
//! - lease cost for one kind while another kind with 1,000,000 pending jobs
//!   is paused, beside the cost with nothing paused (target ≤ 1.1×);
//! - lease cost over 100,000 pending jobs carrying an expiry that has not
//!   passed, beside the same jobs without one (target ≤ 1.1×);
//! - `cancel_many` of 100,000 pending jobs, jobs/s beside raw RocksDB
//!   batches of the same shape (read the rows, delete + put + index writes,
//!   1,000 rows a batch).
//!
//! The compared variants run in alternating chunks on the same machine
//! state (the order reversed every other round, a warm-up round first), so
//! a neighbour's load lands on both; the ratio printed is the median of
//! the per-round ratios (the ratio of the totals beside it). Target ≤ 1.1×.
//! Only `lease_next` is timed; each lease is completed outside the clock.
//!
//! `cargo bench -p telha-jobs --bench control` (part of `make bench`);
//! `-- --quick` for a smoke run with small counts.

use std::time::{Duration, Instant};

use rocksdb::{ColumnFamilyDescriptor, IteratorMode, Options, WriteBatch, DB};
use telha_jobs::store::{counters_merge, COUNTERS_MERGE_NAME};
use telha_jobs::{
    CancelFilter, Config, EnqueueOptions, KindPattern, LeaseOptions, NewJob, PauseTarget, Queue,
    State,
};

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

/// `n` jobs of `kind`, in batches of 1,000.
fn fill(q: &Queue, kind: &str, n: usize, o: &EnqueueOptions) {
    let mut left = n;
    while left > 0 {
        let k = left.min(1000);
        let batch = (0..k)
            .map(|_| NewJob::new(kind, PAYLOAD).with(o.clone()))
            .collect();
        q.enqueue_many(batch).unwrap();
        left -= k;
    }
}

/// `n` leases through `opts`, each completed outside the clock. Returns
/// the time spent in `lease_next`.
fn leases(q: &Queue, opts: &LeaseOptions, n: usize) -> Duration {
    let mut spent = Duration::ZERO;
    for _ in 0..n {
        let t = Instant::now();
        let j = q.lease_next("w", opts).unwrap().expect("a job to lease");
        spent += t.elapsed();
        q.complete(&j.token(), None).unwrap();
    }
    spent
}

fn us(d: Duration, n: usize) -> f64 {
    d.as_secs_f64() * 1e6 / n as f64
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

/// One row read back from the raw store.
type KeyValue = (Box<[u8]>, Box<[u8]>);

fn key(state: u8, ts: u64, id: u64) -> [u8; 42] {
    let mut k = [0u8; 42];
    k[16] = state;
    k[17] = 128;
    k[18..26].copy_from_slice(&ts.to_be_bytes());
    k[34..42].copy_from_slice(&id.to_be_bytes());
    k
}

/// Raw RocksDB: µs per lease-shaped batch (delete the pending row, put the
/// leased row, the id index, the kind index entry, a counter merge) over a
/// backlog of `n`; and jobs/s of `n` pending rows moved to cancelled in
/// batches of 1,000 of the same shape, each batch read with an iterator
/// first (what `cancel_many` does: read, then write).
fn raw(n: usize, value_len: usize) -> (f64, f64) {
    let d = dir("raw-control");
    let db = raw_db(d.path());
    let (jobs, ids, kinds, counters) = (
        db.cf_handle("jobs").unwrap(),
        db.cf_handle("ids").unwrap(),
        db.cf_handle("kinds").unwrap(),
        db.cf_handle("counters").unwrap(),
    );
    let value = vec![7u8; value_len];
    let delta = [0u8; 40];
    let enqueue = |from: u64, to: u64| {
        for c in (from..to).step_by(1000) {
            let mut b = WriteBatch::default();
            for i in c..(c + 1000).min(to) {
                let k = key(1, i, i);
                b.put_cf(jobs, k, &value);
                b.put_cf(ids, i.to_be_bytes(), k);
                b.put_cf(kinds, &k[16..], [1]);
            }
            b.merge_cf(counters, "embed", delta);
            db.write(b).unwrap();
        }
    };
    let n64 = n as u64;
    enqueue(0, n64);
    let leases = (n / 5).max(1) as u64;
    let t0 = Instant::now();
    for i in 0..leases {
        let mut b = WriteBatch::default();
        let (p, l) = (key(1, i, i), key(2, i + 300_000, i));
        b.delete_cf(jobs, p);
        b.put_cf(jobs, l, &value);
        b.put_cf(ids, i.to_be_bytes(), l);
        b.delete_cf(kinds, &p[16..]);
        b.merge_cf(counters, "embed", delta);
        db.write(b).unwrap();
    }
    let lease_us = t0.elapsed().as_secs_f64() * 1e6 / leases as f64;

    // The cancel shape over a fresh range of n pending rows.
    enqueue(n64, 2 * n64);
    let t0 = Instant::now();
    let mut moved = 0usize;
    // Each batch reads on from where the last one stopped (as the engine's
    // cursor does), not over the tombstones of the rows it moved.
    let mut start = key(1, n64, 0).to_vec();
    loop {
        let rows: Vec<KeyValue> = db
            .iterator_cf(
                jobs,
                IteratorMode::From(&start, rocksdb::Direction::Forward),
            )
            .map(|r| r.unwrap())
            .take_while(|(k, _)| k[16] == 1)
            .take(1000)
            .collect();
        if rows.is_empty() {
            break;
        }
        let mut b = WriteBatch::default();
        for (k, v) in &rows {
            let mut c = [0u8; 42];
            c.copy_from_slice(k);
            c[16] = 6;
            b.delete_cf(jobs, k);
            b.put_cf(jobs, c, v);
            b.put_cf(ids, &k[34..42], c);
            b.delete_cf(kinds, &k[16..]);
        }
        b.merge_cf(counters, "embed", delta);
        db.write(b).unwrap();
        moved += rows.len();
        start = rows.last().map(|(k, _)| k.to_vec()).unwrap_or_default();
        start.push(0);
    }
    assert_eq!(moved, n, "the raw cancel moved every row");
    (lease_us, moved as f64 / t0.elapsed().as_secs_f64())
}

/// The median over rounds of `round[a] / round[b]`: a neighbour's burst of
/// load lands in a few rounds, not in the median.
fn median_ratio<const K: usize>(t: &[[Duration; K]], a: usize, b: usize) -> f64 {
    let mut v: Vec<f64> = t
        .iter()
        .map(|r| r[a].as_secs_f64() / r[b].as_secs_f64())
        .collect();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn row(what: &str, value: String, ratio: String) {
    println!("{what:<70} {value:>12} {ratio:>30}");
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    // `-- --only paused|expiry|cancel`: one part alone (for profiling).
    let args: Vec<String> = std::env::args().collect();
    let only = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1).cloned());
    // `--only expiry-plain` / `expiry-expiring`: one side of (b) alone.
    let part = |name: &str| only.as_deref().is_none_or(|o| o.starts_with(name));
    let side = |name: &str| only.as_deref().is_none_or(|o| o == "expiry" || o == name);
    let any = LeaseOptions::default();
    let (paused_backlog, expiring, cancel_n, chunk, chunks) = if quick {
        (20_000, 5_000, 5_000, 200, 4)
    } else {
        (1_000_000, 100_000, 100_000, 500, 30)
    };
    let n = chunk * chunks;
    println!(
        "telha-jobs job control cost ({}), raw = RocksDB batches of the engine's shape, same run",
        if quick { "quick" } else { "full" }
    );
    let (raw_lease, raw_cancel) = raw(cancel_n, 150);
    row(
        "raw lease-shaped batch",
        format!("{raw_lease:.2} µs"),
        String::new(),
    );
    row(
        "raw cancel-shaped batches of 1,000 (iterate, delete + put + indexes)",
        format!("{raw_cancel:.0}/s"),
        String::new(),
    );

    if part("paused") {
        // (a) One kind leased while another with a large backlog is paused.
        let (_d, q) = queue("paused");
        fill(&q, "bulk", paused_backlog, &EnqueueOptions::default());
        fill(
            &q,
            "embed",
            3 * chunk * (chunks + 1),
            &EnqueueOptions::default(),
        );
        let bulk = PauseTarget::Kind("bulk".parse::<KindPattern>().unwrap());
        let embed = LeaseOptions::default().kind("embed").unwrap();
        // The same poller over a store without the backlog.
        let (_d0, solo) = queue("solo");
        fill(
            &solo,
            "embed",
            2 * chunk * (chunks + 1),
            &EnqueueOptions::default(),
        );
        // Per round: [nothing paused, paused (kind filter), paused (any
        // kind), the store without the backlog (any kind), that store with
        // the (absent) bulk kind paused (any kind: the kind-index path)].
        let mut t: Vec<[Duration; 5]> = Vec::new();
        // A warm-up chunk of each (not counted), then the chunks in turn, the
        // order reversed every other round so neither side always goes first.
        for round in 0..=chunks {
            let mut this = [Duration::ZERO; 5];
            let mut run = |which: usize| {
                if which >= 3 {
                    if which == 3 {
                        solo.resume(&bulk).unwrap();
                    } else {
                        solo.pause(&bulk).unwrap();
                    }
                    this[which] = leases(&solo, &any, chunk);
                    return;
                }
                if which == 0 {
                    q.resume(&bulk).unwrap();
                } else {
                    q.pause(&bulk).unwrap();
                }
                this[which] = leases(&q, if which == 2 { &any } else { &embed }, chunk);
            };
            let order = if round % 2 == 0 {
                [0, 1, 2, 3, 4]
            } else {
                [4, 3, 2, 1, 0]
            };
            for w in order {
                run(w);
            }
            if round > 0 {
                t.push(this);
            }
        }
        let total = |i: usize| us(t.iter().map(|r| r[i]).sum(), n);
        let (b, pf, pa) = (total(0), total(1), total(2));
        let (mf, ma) = (median_ratio(&t, 1, 0), median_ratio(&t, 2, 0));
        let (solo_us, ms) = (total(3), median_ratio(&t, 2, 3));
        let (solo_p, msp) = (total(4), median_ratio(&t, 4, 3));
        let label = format!("{}k", paused_backlog / 1000);
        row(
            &format!("lease_next(kind embed), {label} bulk pending, nothing paused"),
            format!("{b:.2} µs"),
            format!("{:.2}× raw lease batch", b / raw_lease),
        );
        row(
            &format!("lease_next(kind embed), {label} bulk pending, bulk paused"),
            format!("{pf:.2} µs"),
            format!("{mf:.2}× unpaused (total {:.2}×)", pf / b),
        );
        row(
            &format!("lease_next(any kind), {label} bulk pending, bulk paused"),
            format!("{pa:.2} µs"),
            format!("{ma:.2}× unpaused (total {:.2}×)", pa / b),
        );
        row(
            "lease_next(any kind), a store of embed jobs alone",
            format!("{solo_us:.2} µs"),
            format!("{:.2}× raw lease batch", solo_us / raw_lease),
        );
        row(
            &format!("  the any-kind poller with {label} bulk paused, beside it"),
            String::new(),
            format!("{ms:.2}× (total {:.2}×)", pa / solo_us),
        );
        row(
            "lease_next(any kind), embed alone, the absent bulk kind paused",
            format!("{solo_p:.2} µs"),
            format!("{msp:.2}× unpaused (total {:.2}×)", solo_p / solo_us),
        );
        drop((q, solo));
    }
    if part("expiry") {
        // (b) Leasing jobs that carry an expiry not yet passed.
        let (_d1, plain) = queue("plain");
        let (_d2, expiring_q) = queue("expiring");
        let far = EnqueueOptions {
            expires_in: Some(Duration::from_secs(3600)),
            ..EnqueueOptions::default()
        };
        fill(&plain, "embed", expiring, &EnqueueOptions::default());
        fill(&expiring_q, "embed", expiring, &far);
        // Per round: [no expiry, expiring].
        let mut t: Vec<[Duration; 2]> = Vec::new();
        for round in 0..=chunks {
            let (a, b) = if round % 2 == 0 {
                (&plain, &expiring_q)
            } else {
                (&expiring_q, &plain)
            };
            let lease_on = |q: &Queue| {
                let name = if std::ptr::eq(q, &plain) {
                    "expiry-plain"
                } else {
                    "expiry-expiring"
                };
                if side(name) {
                    leases(q, &any, chunk)
                } else {
                    Duration::from_nanos(1)
                }
            };
            let (da, db) = (lease_on(a), lease_on(b));
            if round > 0 {
                t.push(if round % 2 == 0 { [da, db] } else { [db, da] });
            }
        }
        let total = |i: usize| us(t.iter().map(|r| r[i]).sum(), n);
        let (p, e) = (total(0), total(1));
        let me = median_ratio(&t, 1, 0);
        let label = format!("{}k", expiring / 1000);
        row(
            &format!("lease_next, {label} pending, no expiry"),
            format!("{p:.2} µs"),
            format!("{:.2}× raw lease batch", p / raw_lease),
        );
        row(
            &format!("lease_next, {label} pending, each expiring in 1 h"),
            format!("{e:.2} µs"),
            format!("{me:.2}× no expiry (total {:.2}×)", e / p),
        );
        drop((plain, expiring_q));
    }
    if part("cancel") {
        // (c) cancel_many of a pending backlog.
        let (_d, q) = queue("cancel-many");
        fill(&q, "embed", cancel_n, &EnqueueOptions::default());
        let t0 = Instant::now();
        let r = q
            .cancel_many(&CancelFilter {
                kind: Some("embed".parse().unwrap()),
                scope: None,
                state: Some(State::Pending),
                reason: "bench".into(),
                tag: None,
            })
            .unwrap();
        let rate = r.cancelled as f64 / t0.elapsed().as_secs_f64();
        assert_eq!(
            r.cancelled, cancel_n as u64,
            "cancel_many cancelled every job"
        );
        row(
            &format!("cancel_many, {}k pending", cancel_n / 1000),
            format!("{rate:.0}/s"),
            format!("{:.2}× raw cancel-shaped rate", rate / raw_cancel),
        );
    }
}
