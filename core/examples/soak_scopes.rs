//! Memory against the number of scopes ever seen (issue 50): the resident
//! set after N lifecycles with a new scope per job, beside the same run with
//! one scope for all, each in a fresh process.
//!
//! `cargo run --release -p telha-jobs --example soak_scopes -- [--n N] [--batch B] [--reap-every R]`
//! (`make bench-memory`, N = 1,000,000 unless `SOAK_N` says otherwise).
//! Each run enqueues, leases and completes `batch` jobs at a time
//! (`enqueue_many`, `lease_many`, `complete_many`, a fresh idempotency key
//! per job) on a manual clock that moves one second per batch, with
//! `completed_retention` one second and a reaper pass every R batches (10), so
//! finished jobs are pruned as they would be in service. RocksDB's memory
//! settings are the store's own (its `OPTIONS` file, printed), unchanged.

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use telha_jobs::{
    Completion, Config, EnqueueOptions, LeaseOptions, ManualClock, NewJob, Queue, Scope,
};

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn num(name: &str, default: usize) -> usize {
    arg(name).map_or(default, |v| v.parse().expect("a number"))
}

extern "C" {
    /// glibc: give free heap memory back to the system.
    fn malloc_trim(pad: usize) -> i32;
}

/// (VmRSS, VmHWM) in KiB.
fn rss_kib() -> (u64, u64) {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        s.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// The memory-related lines of the store's newest OPTIONS file.
fn rocksdb_memory_settings(dir: &std::path::Path) -> Vec<String> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("OPTIONS-"))
        })
        .collect();
    files.sort();
    let Some(newest) = files.last() else {
        return vec!["(no OPTIONS file)".into()];
    };
    let text = std::fs::read_to_string(newest).unwrap_or_default();
    let mut out = Vec::new();
    let mut section = String::new();
    for line in text.lines() {
        let l = line.trim();
        if l.starts_with('[') {
            section = l.to_string();
            continue;
        }
        let wanted = [
            "write_buffer_size=",
            "max_write_buffer_number=",
            "db_write_buffer_size=",
            "max_total_wal_size=",
            "block_cache=",
            "block_size=",
            "cache_index_and_filter_blocks=",
            "max_open_files=",
        ];
        if wanted.iter().any(|w| l.starts_with(w)) {
            let line = format!("{section} {l}");
            if !out.contains(&line) {
                out.push(line);
            }
        }
    }
    out
}

/// One run in this process: prints `rss_kib=<n> hwm_kib=<n>` and settings.
fn child(new_scope_each: bool, n: usize, batch: usize, reap_every: usize) {
    let base = std::env::var_os("TELHA_BENCH_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&base).expect("bench dir");
    let dir = tempfile::tempdir_in(base).expect("temp dir");
    let cfg = Config {
        reaper_interval: Duration::ZERO,
        completed_retention: Some(Duration::from_secs(1)),
        ..Config::default()
    };
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let q = Queue::open_with_clock(dir.path(), cfg, clock.clone()).expect("open");
    let one = Scope::from_uuid(uuid::Uuid::from_u128(1));
    let t0 = Instant::now();
    let mut id: u128 = 0;
    for b in 0..n.div_ceil(batch) {
        let jobs: Vec<NewJob> = (0..batch)
            .map(|_| {
                id += 1;
                let scope = if new_scope_each {
                    Scope::from_uuid(uuid::Uuid::from_u128(0x5000_0000_0000 + id))
                } else {
                    one
                };
                NewJob::new("embed", b"{\"doc\":42}".to_vec()).with(EnqueueOptions {
                    scope: Some(scope),
                    idempotency_key: Some(format!("k{id}")),
                    ..EnqueueOptions::default()
                })
            })
            .collect();
        q.enqueue_many(jobs).expect("enqueue");
        let leased = q
            .lease_many("w", batch, &LeaseOptions::default())
            .expect("lease");
        let done = leased
            .iter()
            .map(|j| Completion::new(j.token(), None))
            .collect();
        q.complete_many(done).expect("complete");
        clock.advance(Duration::from_secs(1));
        if b % reap_every == reap_every - 1 {
            q.reap().expect("reap");
        }
    }
    clock.advance(Duration::from_secs(2));
    while q.reap().expect("reap").pruned > 0 {}
    let secs = t0.elapsed().as_secs_f64();
    let (rss, hwm) = rss_kib();
    // What of it is free memory the allocator keeps (glibc returns it to
    // the system on malloc_trim): a diagnostic, printed beside.
    // SAFETY: malloc_trim only walks glibc's own arenas.
    unsafe { malloc_trim(0) };
    let (trimmed, _) = rss_kib();
    let m = q.metrics().expect("metrics");
    let gauge = |name: &str| {
        m.lines()
            .find(|l| l.starts_with(name) && l[name.len()..].starts_with(' '))
            .map(|l| l[name.len() + 1..].to_string())
            .unwrap_or_default()
    };
    println!(
        "rss_kib={rss} hwm_kib={hwm} trimmed_kib={trimmed} secs={secs:.1} scopes_in_memory={} scope_counters={}",
        gauge("telha_jobs_scopes_in_memory"),
        gauge("telha_jobs_scope_counters_in_memory")
    );
    // RocksDB's own share of the resident set, summed per part.
    let mut parts: Vec<(String, f64)> = Vec::new();
    for l in m.lines().filter(|l| l.starts_with("telha_jobs_rocksdb_")) {
        let (Some(p), Some(v)) = (
            l.split("part=\"").nth(1).and_then(|r| r.split('"').next()),
            l.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok()),
        ) else {
            continue;
        };
        // The memtables per family too: which keys hold the memory.
        let cf = l.split("cf=\"").nth(1).and_then(|r| r.split('"').next());
        let keys = [
            Some(p.to_string()),
            cf.filter(|_| p == "memtables")
                .map(|c| format!("memtables[{c}]")),
        ];
        for k in keys.into_iter().flatten() {
            match parts.iter_mut().find(|(n, _)| *n == k) {
                Some(e) => e.1 += v,
                None => parts.push((k, v)),
            }
        }
    }
    for (p, v) in parts {
        println!("rocksdb {p}={:.1}", v / 1048576.0);
    }
    for l in rocksdb_memory_settings(dir.path()) {
        println!("setting {l}");
    }
}

fn main() {
    let n = num("--n", 1_000_000);
    let batch = num("--batch", 1_000);
    let reap_every = num("--reap-every", 10).max(1);
    if let Some(mode) = arg("--mode") {
        child(mode == "new", n, batch, reap_every);
        return;
    }
    let exe = std::env::current_exe().expect("own path");
    let run = |mode: &str| {
        let out = Command::new(&exe)
            .args([
                "--mode",
                mode,
                "--n",
                &n.to_string(),
                "--batch",
                &batch.to_string(),
                "--reap-every",
                &reap_every.to_string(),
            ])
            .output()
            .expect("run a child");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let field = |out: &str, name: &str| -> f64 {
        out.split_whitespace()
            .find_map(|w| w.strip_prefix(name))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0)
    };
    println!(
        "telha-jobs memory soak: {n} lifecycles, batches of {batch}, each run a fresh process"
    );
    let one = run("one");
    let new = run("new");
    for (label, out) in [("one scope for all", &one), ("a new scope per job", &new)] {
        println!(
            "{label:<22} RSS {:>8.1} MiB (peak {:>8.1} MiB), {:>6.1} s, scopes in memory {}, scope counters {}",
            field(out, "rss_kib=") / 1024.0,
            field(out, "hwm_kib=") / 1024.0,
            field(out, "secs="),
            out.split_whitespace()
                .find_map(|w| w.strip_prefix("scopes_in_memory="))
                .unwrap_or("?"),
            out.split_whitespace()
                .find_map(|w| w.strip_prefix("scope_counters="))
                .unwrap_or("?"),
        );
    }
    for (label, out) in [("one scope", &one), ("new scope each", &new)] {
        let r: Vec<&str> = out
            .lines()
            .filter_map(|l| l.strip_prefix("rocksdb "))
            .collect();
        println!(
            "  {label}: RSS after malloc_trim {:.1} MiB; RocksDB's memory (MiB): {}",
            field(out, "trimmed_kib=") / 1024.0,
            r.join(", ")
        );
    }
    println!(
        "new scope per job / one scope: RSS {:.2}× (goal ≤ 1.2×), peak {:.2}×, both after malloc_trim {:.2}×",
        field(&new, "rss_kib=") / field(&one, "rss_kib="),
        field(&new, "hwm_kib=") / field(&one, "hwm_kib="),
        field(&new, "trimmed_kib=") / field(&one, "trimmed_kib=")
    );
    println!(
        "RocksDB memory settings (the store's OPTIONS file, the defaults telha-jobs opens with):"
    );
    for l in new.lines().filter_map(|l| l.strip_prefix("setting ")) {
        println!("  {l}");
    }
}
