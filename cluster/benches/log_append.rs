//! The Raft log's group commit beside raw RocksDB sync puts, in one run:
//! appends/s with 1 and 16 appenders that each wait for their flush (the
//! shape of 1 and 16 clients whose writes each become an entry), one
//! pipelined appender that never waits (what openraft does), and raw sync
//! puts at 1 and 16 threads. Ratios, not asserts.
//!
//! fsync latency drifts by 10× on these virtual disks within a minute, so
//! the rows take turns: several rounds, each running every row for a slice,
//! and each row's rate is over all its slices.
//!
//! `make bench-cluster` (`cargo bench -p telha-jobs-cluster --bench
//! log_append`); `-- --quick` for a smoke run. TELHA_BENCH_DIR picks the
//! disk (default: the temp dir).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use openraft::{CommittedLeaderId, EntryPayload};
use telha_jobs_cluster::{Entry, Epoch, LogId, LogStore, Payload, PAYLOAD_FORMAT};

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
        epoch: Epoch::Of(0),
        batches: vec![vec![0x5a; BATCH_BYTES]],
    };
    Entry {
        log_id: LogId::new(CommittedLeaderId::new(1, 1), index),
        payload: EntryPayload::Normal(payload),
    }
}

/// `threads` loops, each running `op(thread, n)` until `dur` has passed;
/// (operations, seconds).
fn run_threads(threads: u64, dur: Duration, op: impl Fn(u64, u64) + Sync) -> (u64, f64) {
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
    (total.load(Ordering::Relaxed), start.elapsed().as_secs_f64())
}

enum Kind {
    RawSyncPut(u64),
    /// The flusher's own sync without its thread: a put without sync, then
    /// `flush_wal(true)`. Its gap to a sync put is the cost of syncing by
    /// `flush_wal`; its gap to one waiting appender is the hand-off.
    RawPutFlushWal,
    /// Appenders that each wait for their own flush.
    Waiting(u64),
    /// One appender that never waits, as openraft appends, with at most
    /// 1024 appends in flight; each slice is timed to its last completion.
    Pipelined,
}

struct Row {
    name: &'static str,
    kind: Kind,
    _dir: tempfile::TempDir,
    db: Option<rocksdb::DB>,
    log: Option<LogStore>,
    ops: u64,
    secs: f64,
}

impl Row {
    fn new(name: &'static str, kind: Kind) -> Row {
        let d = dir("bench-cluster-log");
        let (mut db, mut log) = (None, None);
        if matches!(kind, Kind::RawSyncPut(_) | Kind::RawPutFlushWal) {
            let mut o = rocksdb::Options::default();
            o.create_if_missing(true);
            db = Some(rocksdb::DB::open(&o, d.path()).unwrap());
        } else {
            log = Some(LogStore::open(d.path()).unwrap());
        }
        Row {
            name,
            kind,
            _dir: d,
            db,
            log,
            ops: 0,
            secs: 0.0,
        }
    }

    fn slice(&mut self, dur: Duration) {
        let value = vec![0x5au8; BATCH_BYTES + 40];
        let (ops, secs) = match self.kind {
            Kind::RawSyncPut(threads) => {
                let db = self.db.as_ref().unwrap();
                let mut wo = rocksdb::WriteOptions::default();
                wo.set_sync(true);
                run_threads(threads, dur, |t, n| {
                    db.put_opt(((t << 40) | n).to_be_bytes(), &value, &wo)
                        .unwrap()
                })
            }
            Kind::RawPutFlushWal => {
                let db = self.db.as_ref().unwrap();
                run_threads(1, dur, |_, n| {
                    db.put(n.to_be_bytes(), &value).unwrap();
                    db.flush_wal(true).unwrap();
                })
            }
            Kind::Waiting(threads) => {
                let log = self.log.as_ref().unwrap();
                run_threads(threads, dur, |t, n| {
                    let (tx, rx) = mpsc::sync_channel(1);
                    let done = move |res: std::io::Result<()>| tx.send(res).unwrap();
                    log.append_then([entry(1 + (t << 40) + n)], done).unwrap();
                    rx.recv().unwrap().unwrap();
                })
            }
            Kind::Pipelined => pipelined(self.log.as_ref().unwrap(), dur),
        };
        self.ops += ops;
        self.secs += secs;
    }

    fn rate(&self) -> f64 {
        self.ops as f64 / self.secs
    }

    fn per_sync(&self) -> Option<f64> {
        let syncs = self.log.as_ref()?.wal_syncs().max(1);
        Some(self.ops as f64 / syncs as f64)
    }
}

fn pipelined(log: &LogStore, dur: Duration) -> (u64, f64) {
    const CAP: u64 = 1024;
    let done = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let mut issued = 0;
    while start.elapsed() < dur {
        while issued - done.load(Ordering::Acquire) >= CAP {
            std::thread::yield_now();
        }
        issued += 1;
        let d = done.clone();
        let on_flushed = move |res: std::io::Result<()>| {
            res.unwrap();
            d.fetch_add(1, Ordering::Release);
        };
        log.append_then([entry(issued)], on_flushed).unwrap();
    }
    while done.load(Ordering::Acquire) < issued {
        std::thread::yield_now();
    }
    (issued, start.elapsed().as_secs_f64())
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (rounds, slice) = if quick { (1, 200) } else { (6, 500) };
    let slice = Duration::from_millis(slice);
    let mut rows = [
        Row::new("raw RocksDB sync put, 1 thread", Kind::RawSyncPut(1)),
        Row::new("raw RocksDB sync put, 16 threads", Kind::RawSyncPut(16)),
        Row::new(
            "raw RocksDB put + flush_wal(true), 1 thread",
            Kind::RawPutFlushWal,
        ),
        Row::new(
            "log append, 1 appender waiting for its flush",
            Kind::Waiting(1),
        ),
        Row::new("log append, 16 appenders each waiting", Kind::Waiting(16)),
        Row::new(
            "log append, 1 pipelined appender (openraft)",
            Kind::Pipelined,
        ),
    ];
    println!(
        "raft log append, {BATCH_BYTES}-byte batch per entry, {rounds} rounds of {slice:?} per row"
    );
    for _ in 0..rounds {
        for r in rows.iter_mut() {
            r.slice(slice);
        }
    }
    let raw1 = rows[0].rate();
    println!(
        "{:<46} {:>10} {:>13} {:>8}",
        "", "ops/s", "per WAL sync", "× raw 1"
    );
    for r in &rows {
        let g = r.per_sync().map_or("-".into(), |g| format!("{g:.1}"));
        println!(
            "{:<46} {:>10.0} {:>13} {:>8.2}",
            r.name,
            r.rate(),
            g,
            r.rate() / raw1
        );
    }
    println!(
        "1 waiting appender / raw sync put: {:.2}×; 16 waiting appenders / raw sync put at 16 threads: {:.2}×",
        rows[3].rate() / raw1,
        rows[4].rate() / rows[1].rate()
    );
}
