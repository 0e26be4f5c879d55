//! Issue 38's gates, measured in one run (`make bench-cluster`):
//!
//! 1. **Throughput**: the batched lifecycle (`enqueue_many(100)` →
//!    `lease_many(100)` → `complete_many`) at 1 and 16 clients through a
//!    3-node in-process cluster (real fsynced Raft logs, the in-memory
//!    router without faults) beside one store with `sync_writes = true`.
//!    Target: cluster ≥ 0.5× the single store. fsync latency drifts by 10×
//!    on these virtual disks within a minute, so the rows take turns: several
//!    rounds, each running every row for a slice; each row's rate is over
//!    all its slices.
//! 2. **Failover**: crash the leader (drop its Raft and stores), then time
//!    until the first acknowledged write on the new leader; 20 rounds, each
//!    starting from a caught-up cluster; p50 and max. Target < 2 s.
//!
//! Ratios and "met"/"NOT met" are printed, never asserted (no timed
//! assertions). `-- --quick` for a smoke run, `-- failover` or
//! `-- throughput` for one part; TELHA_BENCH_DIR picks the disk
//! (default: the temp dir).

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use telha_jobs::{Completion, Config, EnqueueOptions, JobId, LeaseOptions, NewJob, Queue, State};
use telha_jobs_cluster::client::ClusterQueue;
use telha_jobs_cluster::harness::{options, TestCluster};

const PAYLOAD: &[u8] = b"{\"doc\":\"s3://bucket/key/0001.pdf\",\"tenant\":42,\"pages\":12}";
const BATCH: usize = 100;

fn base() -> PathBuf {
    let b = std::env::var_os("TELHA_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&b).unwrap();
    b
}

/// One client's lifecycle round on its own kind: 100 jobs enqueued,
/// leased and completed; the jobs completed.
trait Lifecycle: Sync {
    fn round(&self, client: u64) -> u64;
}

fn kind(client: u64) -> String {
    format!("bench-{client}")
}

fn lease_opts(client: u64) -> LeaseOptions {
    LeaseOptions::default().kind(&kind(client)).unwrap()
}

impl Lifecycle for Queue {
    fn round(&self, client: u64) -> u64 {
        let k = kind(client);
        let jobs = (0..BATCH).map(|_| NewJob::new(&k, PAYLOAD)).collect();
        self.enqueue_many(jobs).expect("enqueue_many");
        let leased = self
            .lease_many("w", BATCH, &lease_opts(client))
            .expect("lease_many");
        let items = leased
            .iter()
            .map(|j| Completion::new(j.token(), None))
            .collect();
        let mut n = 0;
        for a in self.complete_many(items).expect("complete_many") {
            a.expect("complete");
            n += 1;
        }
        n
    }
}

impl Lifecycle for ClusterQueue {
    fn round(&self, client: u64) -> u64 {
        let k = kind(client);
        let jobs = (0..BATCH).map(|_| NewJob::new(&k, PAYLOAD)).collect();
        self.enqueue_many(jobs).expect("enqueue_many");
        let leased = self
            .lease_many("w", BATCH, &lease_opts(client))
            .expect("lease_many");
        let items = leased
            .iter()
            .map(|j| Completion::new(j.token(), None))
            .collect();
        let mut n = 0;
        for a in self.complete_many(items).expect("complete_many") {
            a.expect("complete");
            n += 1;
        }
        n
    }
}

/// This process's CPU time (user + system), from /proc/self/stat; 0 where
/// there is none.
fn cpu_secs() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command's closing parenthesis; utime and stime are
    // the 14th and 15th of the line, in clock ticks (100 per second).
    let rest = stat.rsplit_once(')').map_or("", |r| r.1);
    let f: Vec<f64> = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|x| x.parse().ok())
        .collect();
    f.iter().sum::<f64>() / 100.0
}

/// `clients` threads running rounds until `dur` has passed; (jobs, rounds,
/// seconds).
fn slice(q: &dyn Lifecycle, clients: u64, dur: Duration) -> (u64, u64, f64) {
    let start = Instant::now();
    let jobs = AtomicU64::new(0);
    let rounds = AtomicU64::new(0);
    std::thread::scope(|s| {
        for c in 0..clients {
            let (jobs, rounds) = (&jobs, &rounds);
            s.spawn(move || {
                while start.elapsed() < dur {
                    jobs.fetch_add(q.round(c), Ordering::Relaxed);
                    rounds.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    });
    (
        jobs.load(Ordering::Relaxed),
        rounds.load(Ordering::Relaxed),
        start.elapsed().as_secs_f64(),
    )
}

#[derive(Default)]
struct Row {
    jobs: u64,
    rounds: u64,
    secs: f64,
    /// Raft entries appended during this row's slices (cluster rows).
    entries: u64,
    /// Process CPU seconds during this row's slices.
    cpu: f64,
}

impl Row {
    fn rate(&self) -> f64 {
        self.jobs as f64 / self.secs
    }
}

fn met(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "NOT met"
    }
}

fn throughput(rounds: usize, dur: Duration) {
    let base = base();
    let single_dir = tempfile::Builder::new()
        .prefix("bench-cluster-single")
        .tempdir_in(&base)
        .unwrap();
    let single = Queue::open(
        single_dir.path(),
        Config {
            sync_writes: true,
            ..Config::default()
        },
    )
    .unwrap();
    let c = TestCluster::start_in(&base, "bench_cluster_throughput", 3, options());
    // Unkeyed as the single store's enqueues (an automatic key costs an
    // index row per job); nothing fails in these rounds.
    let cq = c.queue().with_auto_keys(false);
    let last_index = || {
        let l = c.engine_leader(Duration::from_secs(10));
        c.node(l).metrics().last_log_index.unwrap_or(0)
    };
    let clients = [1u64, 16];
    // rows[i][0] single, rows[i][1] cluster, for clients[i].
    let mut rows: Vec<[Row; 2]> = clients.iter().map(|_| Default::default()).collect();
    println!(
        "batched lifecycle (enqueue_many({BATCH}) + lease_many({BATCH}) + complete_many), \
         {rounds} interleaved rounds of {dur:?} per row"
    );
    for _ in 0..rounds {
        for (i, &n) in clients.iter().enumerate() {
            let cpu = cpu_secs();
            let (j, r, s) = slice(&single, n, dur);
            let row = &mut rows[i][0];
            (row.jobs, row.rounds, row.secs) = (row.jobs + j, row.rounds + r, row.secs + s);
            row.cpu += cpu_secs() - cpu;
            let before = last_index();
            let cpu = cpu_secs();
            let (j, r, s) = slice(&cq, n, dur);
            let row = &mut rows[i][1];
            row.cpu += cpu_secs() - cpu;
            let after = last_index();
            (row.jobs, row.rounds, row.secs) = (row.jobs + j, row.rounds + r, row.secs + s);
            row.entries += after.saturating_sub(before);
        }
    }
    println!(
        "{:<8} {:>14} {:>15} {:>7} {:>13} {:>23} {:>17}  gate ≥ 0.5×",
        "clients",
        "single jobs/s",
        "cluster jobs/s",
        "ratio",
        "entries/call",
        "CPU µs/job single/3-node",
        "cores busy s/3-n"
    );
    for (i, &n) in clients.iter().enumerate() {
        let [s, cl] = &rows[i];
        let ratio = cl.rate() / s.rate();
        // Three write calls per round.
        let per_call = cl.entries as f64 / (3 * cl.rounds).max(1) as f64;
        let us = |r: &Row| r.cpu / r.jobs.max(1) as f64 * 1e6;
        println!(
            "{n:<8} {:>14.0} {:>15.0} {ratio:>6.2}× {per_call:>13.2} {:>11.1} / {:>9.1} {:>8.2} / {:>6.2}  {}",
            s.rate(),
            cl.rate(),
            us(s),
            us(cl),
            s.cpu / s.secs,
            cl.cpu / cl.secs,
            met(ratio >= 0.5)
        );
    }
    println!(
        "(the 3 nodes, their logs and the clients share this process and {} cores; \
         load average now {})",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    single.close();
    c.assert_consistent();
}

fn keyed(k: String) -> EnqueueOptions {
    EnqueueOptions {
        idempotency_key: Some(k),
        ..Default::default()
    }
}

fn failover(rounds: usize) {
    let c = TestCluster::start_in(&base(), "bench_cluster_failover", 3, options());
    let q = c.queue();
    let mut acked: Vec<JobId> = Vec::new();
    let mut times = Vec::new();
    for round in 0..rounds {
        for i in 0..20 {
            acked.push(
                q.enqueue("k", b"x", keyed(format!("r{round}-{i}")))
                    .unwrap()
                    .id,
            );
        }
        let old = c.engine_leader(Duration::from_secs(10));
        let retries = q.retries();
        let t = Instant::now();
        c.crash(old);
        let id = q
            .enqueue("k", b"x", keyed(format!("r{round}-after")))
            .unwrap()
            .id;
        let took = t.elapsed();
        acked.push(id);
        let new = c.engine_leader(Duration::from_secs(10));
        assert_ne!(new, old);
        times.push(took);
        eprintln!(
            "round {round}: node {old} crashed, node {new} acknowledged after {took:?} \
             ({} client retries)",
            q.retries() - retries
        );
        for n in c.nodes.all() {
            for (at, what) in n.events_since(t) {
                eprintln!(
                    "  {:>8.1} ms node {}: {what}",
                    at.as_secs_f64() * 1e3,
                    n.id()
                );
            }
        }
        c.restart(old);
        // Each round starts from a caught-up cluster: a leader killed while
        // a follower is behind costs 2 × election max more (openraft makes
        // the up-to-date node wait for the behind one's vote).
        c.quiesce(Duration::from_secs(20));
    }
    for id in &acked {
        let info = q.get(id).unwrap().expect("acknowledged job lost");
        assert_eq!(info.state, State::Pending);
    }
    c.assert_consistent();
    times.sort();
    let p50 = times[times.len() / 2];
    let max = *times.last().unwrap();
    let t = &c.opts.timing;
    println!(
        "failover (leader crashed -> first acknowledged write), {rounds} rounds, heartbeat {:?}, \
         election {:?}..{:?}, engine watch {:?}: p50 {p50:.2?}, max {max:.2?}  gate < 2 s: {}",
        t.heartbeat,
        t.election_min,
        t.election_max,
        c.opts.watch_interval,
        met(max < Duration::from_secs(2))
    );
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (rounds, dur, failovers) = if quick {
        (1, Duration::from_millis(300), 3)
    } else {
        (4, Duration::from_millis(1500), 20)
    };
    // `-- failover` or `-- throughput` runs one part only.
    let only = |part: &str| {
        let named: Vec<String> = std::env::args()
            .filter(|a| a == "failover" || a == "throughput")
            .collect();
        named.is_empty() || named.iter().any(|a| a == part)
    };
    if only("throughput") {
        throughput(rounds, dur);
    }
    if only("failover") {
        failover(failovers);
    }
}
