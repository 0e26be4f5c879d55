//! What the operator commands cost, printed beside raw RocksDB and the core
//! in the same run.
//!
//! `cargo bench -p telha-cli --bench cli [-- --quick]`. With
//! `TELHA_BENCH_REF` naming the JSON that the core's `bench_ref` example
//! prints (`make bench-cli` runs it first), the write rows are also given
//! as multiples of one raw RocksDB single-put batch.
//!
//! Rows:
//! - a bare process start (`telha --version`), then `stats`, `ls`, `show`
//!   on a store of N jobs (p50 of several runs): what a read command adds
//!   to a process start is the read-only open (WAL replay, counters,
//!   leases) and the query;
//! - `stats` on a store ten times larger: whether the open grows with the store;
//! - a bulk `retry --state dead --yes` of N dead jobs, against the same
//!   number of `Queue::retry` calls in this process on an identical store;
//! - `purge --state dead` of N dead jobs.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use telha_jobs::{Config, LeaseOptions, NewJob, Queue, State};

fn telha(db: &Path, args: &[&str]) -> Duration {
    let t = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_telha"))
        .arg("--db")
        .arg(db)
        .args(args)
        .env_remove("TELHA_JOBS_CONFIG")
        .output()
        .expect("run telha");
    let d = t.elapsed();
    assert!(out.status.success(), "telha {args:?}: {out:?}");
    d
}

fn p50(mut f: impl FnMut() -> Duration, runs: usize) -> Duration {
    let mut v: Vec<Duration> = (0..runs).map(|_| f()).collect();
    v.sort();
    v[runs / 2]
}

fn config() -> Config {
    Config {
        reaper_interval: Duration::ZERO,
        ..Config::default()
    }
}

const PAYLOAD: &[u8] = b"{\"doc\":\"s3://bucket/key/0001.pdf\",\"tenant\":42,\"pages\":12}";

/// A store with `n` dead jobs (enqueued in batches, leased, failed as not
/// retryable), closed.
fn dead_store(path: &Path, n: usize) {
    let q = Queue::open(path, config()).expect("open");
    for chunk in (0..n).collect::<Vec<_>>().chunks(1000) {
        let jobs = chunk
            .iter()
            .map(|i| NewJob::new(if i % 2 == 0 { "ingest:pdf" } else { "embed" }, PAYLOAD))
            .collect();
        q.enqueue_many(jobs).expect("enqueue");
        let leased = q
            .lease_many("seed", chunk.len(), &LeaseOptions::default())
            .expect("lease");
        assert_eq!(leased.len(), chunk.len());
        for j in leased {
            q.fail(&j.token(), "poison", false).expect("fail");
        }
    }
    assert_eq!(q.stats().unwrap().total.dead, n as u64);
    q.close();
}

fn pending_store(path: &Path, n: usize) {
    let q = Queue::open(path, config()).expect("open");
    for chunk in (0..n).collect::<Vec<_>>().chunks(1000) {
        let jobs = chunk
            .iter()
            .map(|_| NewJob::new("embed", PAYLOAD))
            .collect();
        q.enqueue_many(jobs).expect("enqueue");
    }
    q.close();
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let n = if quick { 2_000 } else { 20_000 };
    let runs = if quick { 3 } else { 7 };
    let raw_put: Option<f64> = std::env::var_os("TELHA_BENCH_REF").and_then(|p| {
        let text = std::fs::read_to_string(&p).ok()?;
        serde_json::from_str::<serde_json::Value>(&text).ok()?["raw_put"].as_f64()
    });
    let raw_cost = |rate: f64| match raw_put {
        Some(raw) => format!("{:.2}× raw put cost", raw / rate),
        None => "(no TELHA_BENCH_REF)".into(),
    };

    let dir = tempfile::tempdir().expect("bench dir");
    let (small, big) = (dir.path().join("small"), dir.path().join("big"));
    dead_store(&small, n);
    pending_store(&big, n * 10);

    println!(
        "telha CLI benchmark ({}), N = {n}, raw = RocksDB single-put WriteBatch from bench_ref{}",
        if quick { "quick" } else { "full" },
        raw_put.map_or(String::new(), |r| format!(" ({r:.0}/s)"))
    );
    let row = |name: &str, value: String, vs: String| println!("{name:<58} {value:>14}  {vs}");

    let bare = p50(|| telha(&small, &["--version"]), runs);
    row("process start (telha --version)", ms(bare), String::new());
    let id = {
        let out = Command::new(env!("CARGO_BIN_EXE_telha"))
            .arg("--db")
            .arg(&small)
            .args(["--json", "jobs", "ls", "--limit", "1"])
            .output()
            .expect("ls");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        v["jobs"][0]["id"].as_str().expect("an id").to_string()
    };
    for (name, args) in [
        ("jobs stats", vec!["jobs", "stats"]),
        ("jobs ls --limit 100", vec!["jobs", "ls", "--limit", "100"]),
        ("jobs show <id>", vec!["jobs", "show", id.as_str()]),
        ("jobs metrics", vec!["jobs", "metrics"]),
    ] {
        let d = p50(|| telha(&small, &args), runs);
        row(
            &format!("{name}, {n} jobs (p50)"),
            ms(d),
            format!("{:.2}× a bare start", d.as_secs_f64() / bare.as_secs_f64()),
        );
    }
    let d_small = p50(|| telha(&small, &["jobs", "stats"]), runs);
    let d_big = p50(|| telha(&big, &["jobs", "stats"]), runs);
    row(
        &format!("jobs stats, {} jobs (p50)", n * 10),
        ms(d_big),
        format!(
            "{:.2}× with {n}",
            d_big.as_secs_f64() / d_small.as_secs_f64()
        ),
    );

    // The same retry in this process, on an identical store.
    let twin = dir.path().join("twin");
    dead_store(&twin, n);
    let q = Queue::open(&twin, config()).expect("open twin");
    let mut ids = Vec::with_capacity(n);
    let mut query = telha_jobs::ListQuery {
        state: Some(State::Dead),
        limit: 1000,
        ..Default::default()
    };
    let t = Instant::now();
    loop {
        let page = q.list(&query).expect("list");
        ids.extend(page.jobs.iter().map(|j| j.id));
        match page.next {
            Some(c) => query.after = Some(c),
            None => break,
        }
    }
    for id in &ids {
        q.retry(id).expect("retry");
    }
    let in_process = n as f64 / t.elapsed().as_secs_f64();
    q.close();

    let d = telha(&small, &["jobs", "retry", "--state", "dead", "--yes"]);
    let rate = n as f64 / d.as_secs_f64();
    row(
        &format!("Queue::retry in process, list + {n} retries"),
        format!("{in_process:.0}/s"),
        raw_cost(in_process),
    );
    row(
        &format!("jobs retry --state dead --yes, {n} jobs"),
        format!("{rate:.0}/s"),
        format!("{:.2}× in process; {}", in_process / rate, raw_cost(rate)),
    );

    // Dead again, then purged.
    let q = Queue::open(&small, config()).expect("reopen");
    loop {
        let jobs = q
            .lease_many("w", 1000, &LeaseOptions::default())
            .expect("lease");
        if jobs.is_empty() {
            break;
        }
        for j in jobs {
            q.fail(&j.token(), "poison", false).expect("fail");
        }
    }
    assert_eq!(q.stats().unwrap().total.dead, n as u64);
    q.close();
    std::thread::sleep(Duration::from_millis(5));
    let d = telha(
        &small,
        &["jobs", "purge", "--state", "dead", "--older-than", "1ms"],
    );
    let rate = n as f64 / d.as_secs_f64();
    row(
        &format!("jobs purge --state dead, {n} jobs"),
        format!("{rate:.0}/s"),
        raw_cost(rate),
    );
    let q = Queue::open_read_only(&small).expect("check");
    assert_eq!(
        q.stats().unwrap().total.total(),
        0,
        "purge left jobs behind"
    );
}
