//! Remote lifecycle throughput beside the in-process figures, measured in
//! the same run:
//!
//! `cargo run --release -p telha-jobs-server --example bench_remote -- [--n N] [--batch B] [--ref-file F] [--quick]`
//!
//! A lifecycle is enqueue + lease + complete of one job. Each workload runs
//! the same code over `&dyn JobStore`, once on an embedded `Queue` and once
//! on a `RemoteQueue` of an in-process server (loopback TCP, HTTP/2), with
//! 1 and 16 concurrent clients (threads; remote clients each have their
//! own connection). Before them, one unary RPC (a single `enqueue`):
//! p50 / p99 in process, over loopback TCP and over a Unix socket, and the
//! single-call rate of 1 and 4 threads (`bench/latency.rs`;
//! `--latency-only` stops after it):
//!
//! - unbatched: `enqueue`, `lease_next`, `complete`, one job at a time;
//! - batched: `enqueue_many(B)`, `lease_many(B)`, `complete_many(B)`.
//!
//! `--ref-file` is the JSON of the core's `bench_ref` example (raw RocksDB
//! and the core's own figures) from the same run, printed alongside.

use std::sync::Arc;
use std::time::{Duration, Instant};

use telha_jobs::{Config, EnqueueOptions, JobStore, LeaseOptions, NewJob, Queue};
use telha_jobs_client::{ConnectOptions, RemoteQueue};
use telha_jobs_server::{serve, ServeOptions};

#[path = "bench/latency.rs"]
mod latency;

const PAYLOAD: &[u8] = b"{\"doc\":\"s3://bucket/key/0001.pdf\",\"tenant\":42,\"pages\":12}";

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn unbatched(s: &dyn JobStore, n: usize, worker: &str) {
    let opts = LeaseOptions::default();
    for _ in 0..n {
        s.enqueue("bench", PAYLOAD, EnqueueOptions::default())
            .expect("enqueue");
        let job = s.lease_next(worker, &opts).expect("lease").expect("a job");
        s.complete(&job.token(), None).expect("complete");
    }
}

fn batched(s: &dyn JobStore, n: usize, batch: usize, worker: &str) {
    let opts = LeaseOptions::default();
    let mut done = 0;
    while done < n {
        let b = batch.min(n - done);
        s.enqueue_many((0..b).map(|_| NewJob::new("bench", PAYLOAD)).collect())
            .expect("enqueue_many");
        let mut got = 0;
        while got < b {
            let jobs = s.lease_many(worker, b - got, &opts).expect("lease_many");
            assert!(!jobs.is_empty(), "backlog ran dry");
            got += jobs.len();
            let items = jobs.iter().map(|j| (j.token(), None).into()).collect();
            for a in s.complete_many(items).expect("complete_many") {
                a.expect("complete");
            }
        }
        done += b;
    }
}

/// Lifecycles per second with `clients` threads, each on its own store
/// handle from `make`, doing `n / clients` jobs.
fn run(
    clients: usize,
    n: usize,
    make: &(dyn Fn() -> Arc<dyn JobStore> + Sync),
    work: fn(&dyn JobStore, usize, &str),
) -> f64 {
    let stores: Vec<_> = (0..clients).map(|_| make()).collect();
    let per = n / clients;
    let t = Instant::now();
    std::thread::scope(|sc| {
        for (i, s) in stores.iter().enumerate() {
            sc.spawn(move || work(s.as_ref(), per, &format!("w{i}")));
        }
    });
    (per * clients) as f64 / t.elapsed().as_secs_f64()
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let n: usize = arg("--n")
        .map(|v| v.parse().expect("--n takes a number"))
        .unwrap_or(if quick { 1_600 } else { 16_000 });
    let batch: usize = arg("--batch")
        .map(|v| v.parse().expect("--batch takes a number"))
        .unwrap_or(100);
    let reference = arg("--ref-file").and_then(|f| std::fs::read_to_string(f).ok());

    let dir = tempfile::tempdir().expect("bench dir");
    let cfg = Config {
        reaper_interval: Duration::ZERO,
        ..Config::default()
    };
    let local = Queue::open(dir.path().join("local"), cfg.clone()).expect("open");
    let served = Queue::open(dir.path().join("served"), cfg).expect("open");
    let server = serve(
        served.clone(),
        ServeOptions {
            listen: "127.0.0.1:0".into(),
            also_listen: vec![format!("unix:{}", dir.path().join("bench.sock").display())],
            ..ServeOptions::default()
        },
    )
    .expect("serve");
    let url = server.url();
    let unix_url = server.addresses()[1].url(false);

    let make_local = || Arc::new(local.clone()) as Arc<dyn JobStore>;
    let make_remote = || {
        Arc::new(RemoteQueue::connect(&url, ConnectOptions::default()).expect("connect"))
            as Arc<dyn JobStore>
    };
    let lat_n = if quick { 2_000 } else { 20_000 };
    println!(
        "one unary RPC (a single enqueue), n = {lat_n}, payload {} B",
        PAYLOAD.len()
    );
    println!("| path | p50 µs | p99 µs | mean µs | calls/s, 1 thread | calls/s, 4 threads |");
    println!("|---|---:|---:|---:|---:|---:|");
    let rows: Vec<(&str, latency::Make)> = vec![
        (
            "in-process core",
            Box::new(|| Box::new(local.clone()) as Box<dyn JobStore>),
        ),
        (
            "remote, TCP loopback",
            Box::new(|| {
                Box::new(RemoteQueue::connect(&url, ConnectOptions::default()).expect("connect"))
                    as Box<dyn JobStore>
            }),
        ),
        (
            "remote, Unix socket",
            Box::new(|| {
                Box::new(
                    RemoteQueue::connect(&unix_url, ConnectOptions::default()).expect("connect"),
                ) as Box<dyn JobStore>
            }),
        ),
    ];
    let mut p50s = Vec::new();
    for (name, make) in &rows {
        let (p50, p99, mean) =
            latency::summary(latency::enqueue_latencies(make().as_ref(), lat_n, PAYLOAD));
        let r1 = latency::enqueue_rate(1, lat_n, make.as_ref(), PAYLOAD);
        let r4 = latency::enqueue_rate(4, lat_n, make.as_ref(), PAYLOAD);
        println!("| {name} | {p50:.1} | {p99:.1} | {mean:.1} | {r1:.0} | {r4:.0} |");
        p50s.push((p50, r1));
    }
    let echo_sock = dir.path().join("echo.sock");
    let mut floor = Vec::new();
    for (name, unix) in [
        ("raw socket round trip, TCP loopback", None),
        (
            "raw socket round trip, Unix socket",
            Some(echo_sock.as_path()),
        ),
    ] {
        let (p50, p99, mean) = latency::summary(latency::echo_latencies(unix, lat_n));
        println!("| {name} | {p50:.1} | {p99:.1} | {mean:.1} | | |");
        floor.push(p50);
    }
    let res_n = lat_n / 4;
    println!("enqueue-to-result: enqueue one job, wait for it, a worker completes it; n = {res_n}");
    println!("| path | p50 µs | p99 µs | mean µs |");
    println!("|---|---:|---:|---:|");
    for (name, make) in &rows {
        let (p50, p99, mean) = latency::summary(latency::result_latencies(
            make().as_ref(),
            make(),
            res_n,
            PAYLOAD,
        ));
        println!("| {name} | {p50:.1} | {p99:.1} | {mean:.1} |");
    }
    let (core, tcp, uds) = (p50s[0], p50s[1], p50s[2]);
    println!(
        "RPC p50 over the raw round trip of the same transport (same run): TCP {:.1}x, Unix {:.1}x",
        tcp.0 / floor[0],
        uds.0 / floor[1]
    );
    println!(
        "p50 over TCP {:.1} µs ({:.1}x the core call; target <= 60 µs: {}), over the Unix socket \
         {:.1} µs ({:.2}x TCP); 1-thread rate {:.2}x (TCP) and {:.2}x (Unix) the core's",
        tcp.0,
        tcp.0 / core.0,
        if tcp.0 <= 60.0 { "met" } else { "NOT met" },
        uds.0,
        uds.0 / tcp.0,
        tcp.1 / core.1,
        uds.1 / core.1
    );
    if std::env::args().any(|a| a == "--latency-only") {
        return;
    }

    fn unb(s: &dyn JobStore, n: usize, w: &str) {
        unbatched(s, n, w)
    }
    let bat: fn(&dyn JobStore, usize, &str) = {
        // `batch` is fixed per run; a thread-local keeps the fn pointer shape.
        BATCH.with(|b| b.set(batch));
        |s, n, w| batched(s, n, BATCH.with(|b| b.get()), w)
    };

    println!(
        "remote lifecycle/s (enqueue + lease + complete), n = {n}, batch = {batch}, payload {} B",
        PAYLOAD.len()
    );
    println!("| workload | clients | in-process /s | remote /s | remote ÷ in-process |");
    println!("|---|---:|---:|---:|---:|");
    let mut batched16 = (0.0, 0.0);
    for (name, work, ns) in [
        ("unbatched", unb as fn(&dyn JobStore, usize, &str), n / 4),
        ("batched", bat, n),
    ] {
        for clients in [1, 16] {
            let l = run(clients, ns, &make_local, work);
            let r = run(clients, ns, &make_remote, work);
            println!("| {name} | {clients} | {l:.0} | {r:.0} | {:.2} |", r / l);
            if name == "batched" && clients == 16 {
                batched16 = (l, r);
            }
        }
    }
    if let Some(r) = reference {
        println!("same run, core reference (bench_ref, jobs/s): {}", r.trim());
    }
    let ratio = batched16.1 / batched16.0;
    println!(
        "target: 16 clients batched >= 0.5x in-process batched: {:.2}x ({})",
        ratio,
        if ratio >= 0.5 { "met" } else { "NOT met" }
    );
    server.shutdown(Duration::from_secs(2));
    served.close();
    local.close();
}

thread_local! {
    static BATCH: std::cell::Cell<usize> = const { std::cell::Cell::new(100) };
}
