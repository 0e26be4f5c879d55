//! Issue 45's rows: an enqueue (one job per call) carrying a W3C
//! `traceparent` in its metadata (what the Python and Node front ends add
//! inside a span) beside the same without, and the whole lifecycle
//! (enqueue, lease, complete: the record, metadata included, is rewritten
//! by each move) likewise; same run, rounds alternated, medians, CPU time
//! per job beside each rate (target ≤ 1.1× the plain time per job).

use std::time::{Duration, Instant};

use telha_jobs::trace_context::TRACEPARENT;
use telha_jobs::{Config, EnqueueOptions, LeaseOptions, Queue};

const TP: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

/// The process's user + system CPU time (from /proc/self/stat).
fn cpu() -> Duration {
    let Ok(s) = std::fs::read_to_string("/proc/self/stat") else {
        return Duration::ZERO;
    };
    let rest = s.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|x| x.parse().ok())
        .collect();
    Duration::from_millis(f.iter().sum::<u64>() * 10)
}

fn open(dir: &std::path::Path) -> Queue {
    let cfg = Config {
        reaper_interval: Duration::ZERO,
        ..Config::default()
    };
    Queue::open(dir, cfg).unwrap()
}

fn opts(traced: bool) -> EnqueueOptions {
    if traced {
        EnqueueOptions::default().meta(TRACEPARENT, TP)
    } else {
        EnqueueOptions::default()
    }
}

/// `n` enqueues (and, with `settle`, each leased and completed at once) on
/// a fresh store: (jobs/s, CPU µs/job).
fn run(n: usize, traced: bool, settle: bool) -> (f64, f64) {
    let dir = tempfile::Builder::new()
        .prefix("trace")
        .tempdir_in(super::bench_dir())
        .unwrap();
    let q = open(dir.path());
    let lease = LeaseOptions::default();
    let (c0, t0) = (cpu(), Instant::now());
    for _ in 0..n {
        q.enqueue("embed", super::PAYLOAD, opts(traced)).unwrap();
        if settle {
            let j = q.lease_next("w", &lease).unwrap().unwrap();
            q.complete(&j.token(), None).unwrap();
        }
    }
    let (el, c) = (t0.elapsed(), cpu() - c0);
    q.close();
    (
        n as f64 / el.as_secs_f64(),
        c.as_secs_f64() * 1e6 / n as f64,
    )
}

/// The rows: plain and traced, `rounds` each, alternated.
pub fn rows(t: &mut super::Table, n: usize, rounds: usize) {
    for (settle, what) in [(false, "enqueue"), (true, "lifecycle")] {
        let (mut plain, mut traced) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            plain.push(run(n, false, settle));
            traced.push(run(n, true, settle));
        }
        let med = |v: &mut Vec<(f64, f64)>| {
            v.sort_by(|a, b| a.0.total_cmp(&b.0));
            v[v.len() / 2]
        };
        let (p, g) = (med(&mut plain), med(&mut traced));
        t.row(
            &format!("{what}, 1 thread, no metadata"),
            format!("{:.0} jobs/s", p.0),
            format!("{:.1} µs CPU/job", p.1),
        );
        t.row(
            &format!("{what}, 1 thread, traceparent in metadata"),
            format!("{:.0} jobs/s", g.0),
            format!("{:.2}× plain time/job, {:.1} µs CPU/job", p.0 / g.0, g.1),
        );
    }
}
