//! Issue 38's 1-client row: where one call's time goes, and the floor
//! under it, measured in one run (`make bench-cluster`, after the gates):
//!
//! 1. **fsync alone**: a 4 KiB append + `fdatasync` loop on one file, then
//!    three such loops at once on three files (three logs on one disk).
//! 2. **The single store** (`sync_writes`): each call of the batched
//!    lifecycle (`enqueue_many(100)`, `lease_many(100)`, `complete_many`)
//!    timed; one RocksDB WAL fsync each.
//! 3. **The breakdown**: the same calls through a 3-node in-process
//!    cluster, 1 client, with `telha_jobs_cluster::probe` recording each
//!    entry's stages (proposer, appends, flushes, the follower's ack, the
//!    leader's apply, the answers); median and p90 per segment.
//! 4. **The consensus floor**: three bare openraft nodes, the same log
//!    store and router, a state machine that applies nothing, one client
//!    writing entries of the sizes step 3 saw: the best a 3-node call can
//!    do here before the engine does anything.
//!
//! Printed, never asserted. `-- --quick` for a smoke run; TELHA_BENCH_DIR
//! picks the disk.

#[path = "floor/noop.rs"]
mod noop;

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use telha_jobs::{Completion, Config, LeaseOptions, NewJob, Queue};
use telha_jobs_cluster::harness::{options, TestCluster};
use telha_jobs_cluster::probe::{self, Mark, Stage};

const PAYLOAD: &[u8] = b"{\"doc\":\"s3://bucket/key/0001.pdf\",\"tenant\":42,\"pages\":12}";
const BATCH: usize = 100;
const CALLS: [&str; 3] = ["enqueue_many", "lease_many", "complete_many"];

fn base() -> PathBuf {
    let b = std::env::var_os("TELHA_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&b).unwrap();
    b
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The `p`-th percentile (0–100) of `v`, in place.
fn pct(v: &mut [f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() - 1) as f64 * p / 100.0).round() as usize]
}

fn p50_p90(v: &[f64]) -> (f64, f64) {
    let mut v = v.to_vec();
    (pct(&mut v, 50.0), pct(&mut v, 90.0))
}

/// `threads` loops of `n` × (append 4 KiB, fdatasync), each on its own
/// file, all at once; every sync's latency in ms.
fn fsyncs(dir: &Path, threads: usize, n: usize) -> Vec<f64> {
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|t| {
                s.spawn(move || {
                    let p = dir.join(format!("fsync-{t}"));
                    let mut f = std::fs::File::create(&p).unwrap();
                    let block = [0x5au8; 4096];
                    let mut out = Vec::with_capacity(n);
                    for _ in 0..n {
                        let t0 = Instant::now();
                        f.write_all(&block).unwrap();
                        f.sync_data().unwrap();
                        out.push(ms(t0.elapsed()));
                    }
                    let _ = std::fs::remove_file(&p);
                    out
                })
            })
            .collect();
        hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
    })
}

/// One timed call: which (index into `CALLS`), start, end.
type Call = (usize, Instant, Instant);

/// `rounds` lifecycles of 100 jobs on `q` (a `Queue` or a
/// `ClusterQueue`: the same method names), each call timed.
macro_rules! lifecycle {
    ($q:expr, $rounds:expr) => {{
        let q = $q;
        let lease = LeaseOptions::default().kind("floor").unwrap();
        let mut calls: Vec<Call> = Vec::new();
        for _ in 0..$rounds {
            let jobs = (0..BATCH).map(|_| NewJob::new("floor", PAYLOAD)).collect();
            let t = Instant::now();
            q.enqueue_many(jobs).expect("enqueue_many");
            calls.push((0, t, Instant::now()));
            let t = Instant::now();
            let leased = q.lease_many("w", BATCH, &lease).expect("lease_many");
            calls.push((1, t, Instant::now()));
            let items = leased
                .iter()
                .map(|j| Completion::new(j.token(), None))
                .collect();
            let t = Instant::now();
            for a in q.complete_many(items).expect("complete_many") {
                a.expect("complete");
            }
            calls.push((2, t, Instant::now()));
        }
        calls
    }};
}

/// Per call kind, the calls' latencies in ms.
fn by_kind(calls: &[Call]) -> [Vec<f64>; 3] {
    let mut out: [Vec<f64>; 3] = Default::default();
    for &(k, s, e) in calls {
        out[k].push(ms(e - s));
    }
    out
}

/// The segments of one call's path, in ms, in order (NaN where a mark is
/// missing).
const SEGMENTS: [&str; 16] = [
    "engine, before its write (call → proposer queue)",
    "proposer: queued → entry submitted",
    "openraft: submitted → leader's log append called",
    "leader log append (encode, CRC, unsynced write)",
    "leader: written → log fsynced   (‖ the next five)",
    "leader written → append-entries at the follower",
    "follower's openraft → its log append called",
    "follower log append (encode, CRC, unsynced write)",
    "follower: written → log fsynced",
    "follower fsynced → its ack at the leader",
    "committed (2 of 3 fsynced, acked) → leader apply",
    "leader apply (ReplicaStore::apply)",
    "apply end → proposer has openraft's reply",
    "proposer reply → engine thread woken",
    "engine, after its write (→ call returns)",
    "whole call",
];

fn segments(call: &Call, m: &[Mark], leader: u64) -> [f64; 16] {
    let at = |st: Stage, node: Option<u64>| {
        m.iter()
            .filter(|x| x.stage == st && node.is_none_or(|n| x.node == n))
            .map(|x| x.at)
            .min()
    };
    // The follower whose ack came first made the quorum.
    let f = m
        .iter()
        .filter(|x| x.stage == Stage::Acked && x.node != leader)
        .min_by_key(|x| x.at)
        .map(|x| x.node);
    let d = |a: Option<Instant>, b: Option<Instant>| match (a, b) {
        (Some(a), Some(b)) => ms(b.saturating_duration_since(a)),
        _ => f64::NAN,
    };
    let (queued, submitted) = (at(Stage::Queued, Some(0)), at(Stage::Submitted, Some(0)));
    let (call_l, app_l, fl_l) = (
        at(Stage::AppendCalled, Some(leader)),
        at(Stage::Appended, Some(leader)),
        at(Stage::Flushed, Some(leader)),
    );
    let (deliv_f, call_f) = (
        f.and_then(|f| at(Stage::Delivered, Some(f))),
        f.and_then(|f| at(Stage::AppendCalled, Some(f))),
    );
    let (app_f, fl_f, ack) = (
        f.and_then(|f| at(Stage::Appended, Some(f))),
        f.and_then(|f| at(Stage::Flushed, Some(f))),
        f.and_then(|f| at(Stage::Acked, Some(f))),
    );
    let committed = fl_l.max(ack);
    let (ap0, ap1) = (
        at(Stage::ApplyStart, Some(leader)),
        at(Stage::ApplyEnd, Some(leader)),
    );
    let (replied, answered) = (at(Stage::Replied, Some(0)), at(Stage::Answered, Some(0)));
    [
        d(Some(call.1), queued),
        d(queued, submitted),
        d(submitted, call_l),
        d(call_l, app_l),
        d(app_l, fl_l),
        d(app_l, deliv_f),
        d(deliv_f, call_f),
        d(call_f, app_f),
        d(app_f, fl_f),
        d(fl_f, ack),
        d(committed, ap0),
        d(ap0, ap1),
        d(ap1, replied),
        d(replied, answered),
        d(answered, Some(call.2)),
        ms(call.2 - call.1),
    ]
}

/// Marks grouped by log index.
fn by_index(marks: Vec<Mark>) -> HashMap<u64, Vec<Mark>> {
    let mut out: HashMap<u64, Vec<Mark>> = HashMap::new();
    for m in marks {
        out.entry(m.index).or_default().push(m);
    }
    out
}

/// One client writing `rounds` × the three sizes through the bare nodes,
/// pausing `pause` between writes; prints latencies and the leader-side
/// hop; the round time (sum of the three p50s).
fn bare_run(
    bare: &noop::Bare,
    bl: u64,
    sizes: &[usize; 3],
    rounds: usize,
    pause: Option<Duration>,
) -> f64 {
    let _ = probe::take();
    probe::enable(true);
    let mut lat: [Vec<f64>; 3] = Default::default();
    for i in 0..rounds * 3 {
        if let Some(p) = pause {
            std::thread::sleep(p);
        }
        lat[i % 3].push(ms(bare.write(bl, sizes[i % 3])));
    }
    probe::enable(false);
    let marks = by_index(probe::take());
    let mut round = 0.0;
    let how = pause.map_or("back to back".to_string(), |p| format!("{p:?} apart"));
    for k in 0..3 {
        let (a, b) = p50_p90(&lat[k]);
        round += a;
        println!(
            "  {how:<13} {:>7} B entry   client_write p50 {a:.2} ms p90 {b:.2}",
            sizes[k]
        );
    }
    let (mut fsync_l, mut hop, mut to_commit) = (Vec::new(), Vec::new(), Vec::new());
    for m in marks.values() {
        let at = |st: Stage, node: Option<u64>| {
            m.iter()
                .filter(|x| x.stage == st && node.is_none_or(|n| x.node == n))
                .filter(|x| x.node != bl || st != Stage::Delivered)
                .map(|x| x.at)
                .min()
        };
        let ack = m
            .iter()
            .filter(|x| x.stage == Stage::Acked && x.node != bl)
            .map(|x| x.at)
            .min();
        let (a, f, dl) = (
            at(Stage::Appended, Some(bl)),
            at(Stage::Flushed, Some(bl)),
            at(Stage::Delivered, None),
        );
        if let (Some(a), Some(f), Some(k), Some(dl)) = (a, f, ack, dl) {
            fsync_l.push(ms(f - a));
            hop.push(ms(dl.saturating_duration_since(a)));
            to_commit.push(ms(f.max(k) - a));
        }
    }
    let (fl, _) = p50_p90(&fsync_l);
    let (h, h90) = p50_p90(&hop);
    let (tc, _) = p50_p90(&to_commit);
    println!(
        "  {how:<13} leader append → its log fsynced p50 {fl:.2} ms; → append-entries at the \
         first follower p50 {h:.2} (p90 {h90:.2}); → committed p50 {tc:.2} ms"
    );
    round
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (n_fsync, rounds, warm) = if quick { (50, 20, 5) } else { (300, 100, 20) };
    let base = base();
    let dir = tempfile::Builder::new()
        .prefix("bench-cluster-floor")
        .tempdir_in(&base)
        .unwrap();

    // 1. fsync alone.
    let one = fsyncs(dir.path(), 1, n_fsync);
    let three = fsyncs(dir.path(), 3, n_fsync);
    let (f1, f1_90) = p50_p90(&one);
    let (f3, f3_90) = p50_p90(&three);
    println!(
        "1-client floor ({} lifecycle rounds of {BATCH} jobs per store; load average {})",
        rounds,
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    println!(
        "fsync of this disk (4 KiB append + fdatasync, {n_fsync} each): 1 file p50 {f1:.2} ms \
         p90 {f1_90:.2}; 3 files at once p50 {f3:.2} ms p90 {f3_90:.2}"
    );

    // 2. The single store.
    let single_dir = dir.path().join("single");
    let single = Queue::open(
        &single_dir,
        Config {
            sync_writes: true,
            ..Config::default()
        },
    )
    .unwrap();
    let _ = lifecycle!(&single, warm);
    let s_calls = lifecycle!(&single, rounds);
    single.close();
    let s_kind = by_kind(&s_calls);

    // 3. The cluster, with the probe on.
    let c = TestCluster::start_in(dir.path(), "bench_cluster_floor", 3, options());
    let cq = c.queue().with_auto_keys(false);
    let _ = lifecycle!(&cq, warm);
    let leader = c.engine_leader(Duration::from_secs(10));
    let _ = probe::take();
    probe::enable(true);
    let c_calls = lifecycle!(&cq, rounds);
    probe::enable(false);
    let marks = by_index(probe::take());
    let still = c.engine_leader(Duration::from_secs(10));
    let c_kind = by_kind(&c_calls);
    // Each call's entry: the one whose batch was queued during the call.
    let mut queued: Vec<(Instant, u64, usize)> = marks
        .values()
        .flatten()
        .filter(|m| m.stage == Stage::Queued)
        .map(|m| (m.at, m.index, m.bytes))
        .collect();
    queued.sort();
    let mut seg: Vec<[f64; 16]> = Vec::new();
    let mut bytes: [Vec<f64>; 3] = Default::default();
    let mut entries_per_call = 0usize;
    for call in &c_calls {
        let mine: Vec<_> = queued
            .iter()
            .filter(|q| q.0 >= call.1 && q.0 <= call.2)
            .collect();
        entries_per_call += mine.len();
        if let [q] = mine[..] {
            bytes[call.0].push(q.2 as f64);
            seg.push(segments(call, &marks[&q.1], leader));
        }
    }
    c.assert_consistent();
    drop(cq);
    drop(c);

    println!(
        "per call, ms p50 / p90 (single store sync_writes | 3-node cluster, 1 client; \
         entry bytes p50)"
    );
    let mut s_round = 0.0;
    let mut c_round = 0.0;
    let mut sizes = [0usize; 3];
    for k in 0..3 {
        let (s50, s90) = p50_p90(&s_kind[k]);
        let (c50, c90) = p50_p90(&c_kind[k]);
        let (b50, _) = p50_p90(&bytes[k]);
        sizes[k] = if b50.is_nan() { 20_000 } else { b50 as usize };
        s_round += s50;
        c_round += c50;
        println!(
            "  {:<14} {s50:>6.2} / {s90:>6.2} | {c50:>6.2} / {c90:>6.2}   {:>7} B   cluster ÷ single {:.2}×",
            CALLS[k],
            sizes[k],
            c50 / s50
        );
    }
    println!(
        "  round (sum of p50s) {s_round:.2} | {c_round:.2} ms: per-call ratio at 1 client {:.2}× \
         (entries per call {:.2}; leader {leader}{})",
        s_round / c_round,
        entries_per_call as f64 / c_calls.len().max(1) as f64,
        if still == leader {
            String::new()
        } else {
            format!(" → {still}: a leader change, breakdown unreliable")
        }
    );
    println!(
        "breakdown of the cluster call ({} calls), ms p50 / p90:",
        seg.len()
    );
    // Beyond a bare write: the engine's own time (0, 14), the proposer's
    // hand-offs (1, 13) and the leader's apply (11).
    let (mut engine_own, mut beyond) = (0.0, 0.0);
    for (i, name) in SEGMENTS.iter().enumerate() {
        let v: Vec<f64> = seg.iter().map(|s| s[i]).filter(|x| !x.is_nan()).collect();
        let (a, b) = p50_p90(&v);
        if i == 0 || i == SEGMENTS.len() - 2 {
            engine_own += a;
        }
        if [0, 1, 11, 13, SEGMENTS.len() - 2].contains(&i) {
            beyond += a;
        }
        println!("  {name:<52} {a:>6.3} / {b:>6.3}");
    }

    // 4. The consensus floor: back to back, then with a pause between
    // writes (the previous entry's commit fully propagated first).
    let bare = noop::Bare::start(&dir.path().join("bare"));
    let bl = bare.leader().unwrap();
    for i in 0..warm * 3 {
        bare.write(bl, sizes[i % 3]);
    }
    println!("consensus floor: bare openraft, no-op state machine, same log store, 1 client:");
    let b_round = bare_run(&bare, bl, &sizes, rounds, None);
    bare_run(
        &bare,
        bl,
        &sizes,
        rounds / 2,
        Some(Duration::from_millis(3)),
    );
    bare.stop();
    println!(
        "  floor round (3 bare writes) {b_round:.2} ms vs single store round {s_round:.2} ms: \
         at most {:.2}× at 1 client if the engine cost nothing; with the engine's own time in \
         the cluster call ({engine_own:.2} ms a call, ×3) at most {:.2}×; adding the \
         proposer's hand-offs and the leader's apply ({beyond:.2} ms a call in all) {:.2}× \
         (measured above: {:.2}×)",
        s_round / b_round,
        s_round / (b_round + 3.0 * engine_own),
        s_round / (b_round + 3.0 * beyond),
        s_round / c_round
    );
    println!(
        "  fsyncs on the path: a sync_writes call waits 1 WAL fsync ({f1:.2} ms alone on this \
         disk); a cluster call the slower of the leader's and a follower's, side by side \
         ({f3:.2} ms when 3 logs sync at once): the vendored openraft replicates while the \
         leader's own log syncs (vendor/openraft/README.telha)"
    );
}
