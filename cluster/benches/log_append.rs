//! The Raft log's group commit beside raw RocksDB sync puts, in one run:
//! appends/s with 1 and 16 appenders that each wait for their flush (the
//! shape of 1 and 16 clients whose writes each become an entry), one
//! pipelined appender that never waits (what openraft does), and the raw
//! sync put loop at 1 and 16 threads. Ratios, not asserts: fsync latency
//! drifts on these disks.
//!
//! `make bench-cluster` (`cargo bench -p telha-jobs-cluster --bench
//! log_append`); `-- --quick` for a smoke run. TELHA_BENCH_DIR picks the
//! disk (default: the temp dir).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use openraft::{CommittedLeaderId, EntryPayload};
use telha_jobs_cluster::{Entry, LogId, LogStore, Payload, PAYLOAD_FORMAT};

/// About one engine commit: a lease's delete + put + index rows.
const BATCH_BYTES: usize = 300;

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

fn entry(index: u64) -> Entry {
    let payload = Payload {
        format: PAYLOAD_FORMAT,
        cf_table_digest: 1,
        batches: vec![vec![0x5a; BATCH_BYTES]],
    };
    Entry {
        log_id: LogId::new(CommittedLeaderId::new(1, 1), index),
        payload: EntryPayload::Normal(payload),
    }
}

/// `threads` loops, each counting operations until `dur` has passed; ops/s.
fn run_threads(threads: u64, dur: Duration, op: impl Fn(u64, u64) + Sync) -> f64 {
    let start = Instant::now();
    let total = AtomicU64::new(0);
    std::thread::scope(|s| {
        for t in 0..threads {
            let (op, total) = (&op, &total);
            s.spawn(move || {
                let mut n = 0;
                while start.elapsed() < dur {
                    op(t, n);
                    n += 1;
                }
                total.fetch_add(n, Ordering::Relaxed);
            });
        }
    });
    total.load(Ordering::Relaxed) as f64 / start.elapsed().as_secs_f64()
}

fn raw_sync_puts(threads: u64, dur: Duration) -> f64 {
    let d = dir("raw-sync");
    let mut o = rocksdb::Options::default();
    o.create_if_missing(true);
    let db = rocksdb::DB::open(&o, d.path()).unwrap();
    let mut wo = rocksdb::WriteOptions::default();
    wo.set_sync(true);
    let value = vec![0x5au8; BATCH_BYTES + 40];
    run_threads(threads, dur, |t, n| {
        let key = ((t << 40) | n).to_be_bytes();
        db.put_opt(key, &value, &wo).unwrap();
    })
}

/// Appenders that each wait for their own flush; (appends/s, appends/sync).
fn waiting_appenders(threads: u64, dur: Duration) -> (f64, f64) {
    let d = dir("log-wait");
    let log = LogStore::open(d.path()).unwrap();
    let rate = run_threads(threads, dur, |t, n| {
        let (tx, rx) = mpsc::sync_channel(1);
        let done = move |res: std::io::Result<()>| tx.send(res).unwrap();
        log.append_then([entry(1 + (t << 40) + n)], done).unwrap();
        rx.recv().unwrap().unwrap();
    });
    let appends = rate * dur.as_secs_f64();
    (rate, appends / log.wal_syncs().max(1) as f64)
}

/// One appender that never waits, as openraft appends; at most `cap`
/// appends in flight. Timed to the last completion.
fn pipelined_appender(dur: Duration, cap: u64) -> (f64, f64) {
    let d = dir("log-pipe");
    let log = LogStore::open(d.path()).unwrap();
    let done_count = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let mut issued = 0;
    while start.elapsed() < dur {
        while issued - done_count.load(Ordering::Acquire) >= cap {
            std::thread::yield_now();
        }
        issued += 1;
        let c = done_count.clone();
        log.append_then([entry(issued)], move |res: std::io::Result<()>| {
            res.unwrap();
            c.fetch_add(1, Ordering::Release);
        })
        .unwrap();
    }
    while done_count.load(Ordering::Acquire) < issued {
        std::thread::yield_now();
    }
    let rate = issued as f64 / start.elapsed().as_secs_f64();
    (rate, issued as f64 / log.wal_syncs().max(1) as f64)
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let dur = Duration::from_millis(if quick { 300 } else { 3000 });
    println!(
        "raft log append, {BATCH_BYTES}-byte batch per entry, {:?} per row",
        dur
    );

    let raw1 = raw_sync_puts(1, dur);
    let raw16 = raw_sync_puts(16, dur);
    let (w1, g1) = waiting_appenders(1, dur);
    let (w16, g16) = waiting_appenders(16, dur);
    let (p, gp) = pipelined_appender(dur, 1024);

    println!(
        "{:<44} {:>12} {:>14} {:>10}",
        "", "ops/s", "per WAL sync", "× raw 1"
    );
    let row = |name: &str, rate: f64, group: Option<f64>| {
        let g = group.map_or("-".into(), |g| format!("{g:.1}"));
        println!("{name:<44} {rate:>12.0} {g:>14} {:>10.2}", rate / raw1);
    };
    row("raw RocksDB sync put, 1 thread", raw1, None);
    row("raw RocksDB sync put, 16 threads", raw16, None);
    row("log append, 1 appender waiting for its flush", w1, Some(g1));
    row("log append, 16 appenders each waiting", w16, Some(g16));
    row("log append, 1 pipelined appender (openraft)", p, Some(gp));
    println!(
        "16 appenders / 1: {:.2}×; 16 appenders / raw sync 16 threads: {:.2}×",
        w16 / w1,
        w16 / raw16
    );
}
