//! Where the 3-node cluster's CPU goes per job: the batched lifecycle
//! (`enqueue_many(100)` + `lease_many(100)` + `complete_many`) through an
//! in-process 3-node cluster (real fsynced logs), then this process's CPU
//! per job split by thread name (from /proc/self/task), so a profile of
//! the path (`perf record -g`, `valgrind --tool=callgrind`) has numbers to
//! compare against.
//!
//! `cargo run --release -p telha-jobs-cluster --example cluster_profile --
//! [clients] [seconds | <n>r]` (defaults 16 and 5 s; `50r`: 50 rounds per
//! client, a fixed amount of work for `perf stat -e instructions:u`, with
//! `TELHA_PROFILE_NO_CHECK=1` to skip the closing consistency check).
//! `single` as a third argument runs one store with `sync_writes` instead,
//! for the same split. `TELHA_PROFILE_SLOW=1` for valgrind: Raft timing,
//! leases and the write timeout stretched so the slowness changes nothing:
//! `valgrind --tool=callgrind` of `1 20r` minus `1 0r` is the instructions
//! of 2,000 jobs.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use telha_jobs::LeaseOptions;
use telha_jobs::{Completion, Config, NewJob, Queue};
use telha_jobs_cluster::client::ClusterQueue;
use telha_jobs_cluster::harness::{options, TestCluster};
use telha_jobs_cluster::node::Timing;

const PAYLOAD: &[u8] = b"{\"doc\":\"s3://bucket/key/0001.pdf\",\"tenant\":42,\"pages\":12}";
const BATCH: usize = 100;

/// CPU seconds per thread name, digits folded (`telha-raft-1` and
/// `telha-raft-2` count apart; a pool's numbered workers together).
fn cpu_by_thread() -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return out;
    };
    for t in dir.flatten() {
        let stat = std::fs::read_to_string(t.path().join("stat")).unwrap_or_default();
        let Some((head, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let name = head.split_once('(').map_or("?", |h| h.1).to_string();
        let f: Vec<f64> = rest
            .split_whitespace()
            .skip(11)
            .take(2)
            .filter_map(|x| x.parse().ok())
            .collect();
        *out.entry(name).or_insert(0.0) += f.iter().sum::<f64>() / 100.0;
    }
    out
}

/// This process's CPU seconds, exited threads included.
fn cpu_process() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = stat.rsplit_once(')').map_or("", |r| r.1);
    let f: Vec<f64> = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|x| x.parse().ok())
        .collect();
    f.iter().sum::<f64>() / 100.0
}

fn round(q: &dyn Fn(Vec<NewJob>, &LeaseOptions) -> u64, client: u64) -> u64 {
    let k = format!("bench-{client}");
    let jobs = (0..BATCH).map(|_| NewJob::new(&k, PAYLOAD)).collect();
    q(jobs, &LeaseOptions::default().kind(&k).unwrap())
}

/// Wall time spent in each of the round's three calls, in µs, summed over
/// every client, and the calls made: per-call latency.
static CALL_US: [AtomicU64; 3] = [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)];
static CALLS: AtomicU64 = AtomicU64::new(0);

fn timed<T>(op: usize, f: impl FnOnce() -> T) -> T {
    let t = Instant::now();
    let r = f();
    CALL_US[op].fetch_add(t.elapsed().as_micros() as u64, Ordering::Relaxed);
    r
}

macro_rules! lifecycle {
    ($q:expr) => {
        |jobs: Vec<NewJob>, lo: &LeaseOptions| -> u64 {
            timed(0, || $q.enqueue_many(jobs)).expect("enqueue_many");
            let leased = timed(1, || $q.lease_many("w", BATCH, lo)).expect("lease_many");
            let items = leased
                .iter()
                .map(|j| Completion::new(j.token(), None))
                .collect();
            let mut n = 0;
            for a in timed(2, || $q.complete_many(items)).expect("complete_many") {
                a.expect("complete");
                n += 1;
            }
            CALLS.fetch_add(1, Ordering::Relaxed);
            n
        }
    };
}

/// How long each client runs: for a time, or a fixed number of rounds
/// (for instruction counts: `perf stat -e instructions:u`).
#[derive(Clone, Copy)]
enum Amount {
    Time(Duration),
    Rounds(u64),
}

fn run(f: &(dyn Fn(Vec<NewJob>, &LeaseOptions) -> u64 + Sync), clients: u64, amount: Amount) {
    let before = cpu_by_thread();
    let process = cpu_process();
    let start = Instant::now();
    let jobs = AtomicU64::new(0);
    std::thread::scope(|s| {
        for c in 0..clients {
            let jobs = &jobs;
            std::thread::Builder::new()
                .name("client".into())
                .spawn_scoped(s, move || {
                    let mut done = 0;
                    while match amount {
                        Amount::Time(dur) => start.elapsed() < dur,
                        Amount::Rounds(n) => done < n,
                    } {
                        jobs.fetch_add(round(&f, c), Ordering::Relaxed);
                        done += 1;
                    }
                })
                .unwrap();
        }
    });
    let secs = start.elapsed().as_secs_f64();
    let after = cpu_by_thread();
    let process = cpu_process() - process;
    let jobs = jobs.load(Ordering::Relaxed);
    let mut rows: Vec<(String, f64)> = after
        .iter()
        .map(|(n, c)| (n.clone(), c - before.get(n).copied().unwrap_or(0.0)))
        .filter(|(_, c)| *c > 0.0)
        .collect();
    // The client threads have exited: theirs is what no live thread has.
    let live: f64 = rows.iter().map(|r| r.1).sum();
    rows.push(("clients (exited)".into(), (process - live).max(0.0)));
    rows.sort_by(|a, b| b.1.partial_cmp(&a.1).unwrap());
    let total = process;
    println!(
        "{clients} clients, {secs:.1} s: {jobs} jobs, {:.0} jobs/s, CPU {:.1} µs/job ({:.2} cores)",
        jobs as f64 / secs,
        total / jobs.max(1) as f64 * 1e6,
        total / secs
    );
    let rounds = CALLS.load(Ordering::Relaxed).max(1) as f64;
    let ms = |op: usize| CALL_US[op].load(Ordering::Relaxed) as f64 / rounds / 1e3;
    println!(
        "  per call: enqueue_many {:.2} ms, lease_many {:.2} ms, complete_many {:.2} ms",
        ms(0),
        ms(1),
        ms(2)
    );
    for (name, c) in rows {
        println!(
            "  {name:<18} {:>7.1} µs/job {:>5.1} %",
            c / jobs.max(1) as f64 * 1e6,
            c / total * 100.0
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let clients: u64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(16);
    let amount = match args.get(1) {
        Some(a) if a.ends_with('r') => Amount::Rounds(a.trim_end_matches('r').parse().unwrap()),
        Some(a) => Amount::Time(Duration::from_secs(a.parse().unwrap())),
        None => Amount::Time(Duration::from_secs(5)),
    };
    if args.get(2).map(String::as_str) == Some("single") {
        let dir = tempfile::tempdir().unwrap();
        let q = Queue::open(
            dir.path(),
            Config {
                sync_writes: true,
                ..Config::default()
            },
        )
        .unwrap();
        run(&lifecycle!(q), clients, amount);
        q.close();
        return;
    }
    let mut opts = options();
    if std::env::var_os("TELHA_PROFILE_SLOW").is_some() {
        // Under valgrind (50x slower): no election, lease expiry or write
        // timeout from the slowness, few heartbeats and reaper passes.
        opts.timing = Timing {
            heartbeat: Duration::from_secs(2),
            election_min: Duration::from_secs(20),
            election_max: Duration::from_secs(40),
        };
        opts.proposer.write_timeout = Duration::from_secs(300);
        opts.queue_config.lease_ttl = Duration::from_secs(600);
        opts.queue_config.reaper_interval = Duration::from_secs(60);
    }
    let c = TestCluster::start("cluster_profile", 3, opts);
    // Unkeyed, as the gate's rows (cluster_gates.rs).
    let q: ClusterQueue = c.queue().with_auto_keys(false);
    run(&lifecycle!(q), clients, amount);
    if std::env::var_os("TELHA_PROFILE_NO_CHECK").is_none() {
        c.assert_consistent();
    }
}
