//! Issue 43's row: 10,000 children completed one at a time (lease_next,
//! complete) with one parent waiting on all of them (`after`), beside the
//! same 10,000 lifecycles with no parent, same run (target ≤ 1.3× the
//! plain time per job), CPU time per job beside each rate; medians of
//! `rounds`.

use std::time::{Duration, Instant};

use telha_jobs::{Config, EnqueueOptions, JobId, LeaseOptions, NewJob, Queue};

use super::queue_tags::cpu;

fn open(dir: &std::path::Path) -> Queue {
    Queue::open(
        dir,
        Config {
            reaper_interval: Duration::ZERO,
            ..Config::default()
        },
    )
    .unwrap()
}

/// `n` children enqueued in batches of 1,000, then leased and completed
/// one at a time; with `fan_in`, a parent waits on them all and is leased
/// and completed at the end. (jobs/s, CPU µs/job), per child.
fn run(n: usize, fan_in: bool) -> (f64, f64) {
    let dir = tempfile::tempdir().unwrap();
    let q = open(dir.path());
    let (c0, t0) = (cpu(), Instant::now());
    let mut ids: Vec<JobId> = Vec::with_capacity(n);
    for c in (0..n).step_by(1_000) {
        let jobs = (c..(c + 1_000).min(n))
            .map(|i| NewJob::new("page", format!("p{i}")))
            .collect();
        ids.extend(q.enqueue_many(jobs).unwrap().into_iter().map(|e| e.id));
    }
    if fan_in {
        q.enqueue("index", b"doc", EnqueueOptions::default().after(ids))
            .unwrap();
    }
    let pages = LeaseOptions::default().kind("page").unwrap();
    for _ in 0..n {
        let j = q.lease_next("w", &pages).unwrap().unwrap();
        q.complete(&j.token(), None).unwrap();
    }
    if fan_in {
        let idx = LeaseOptions::default().kind("index").unwrap();
        let j = q
            .lease_next("w", &idx)
            .unwrap()
            .expect("the parent is pending");
        q.complete(&j.token(), None).unwrap();
    }
    let (el, c) = (t0.elapsed(), cpu() - c0);
    q.close();
    (
        n as f64 / el.as_secs_f64(),
        c.as_secs_f64() * 1e6 / n as f64,
    )
}

fn median(mut v: Vec<(f64, f64)>) -> (f64, f64) {
    v.sort_by(|a, b| b.0.total_cmp(&a.0));
    v[v.len() / 2]
}

pub fn rows(t: &mut super::Table, n: usize, rounds: usize) {
    let mut plain = Vec::new();
    let mut fan = Vec::new();
    for _ in 0..rounds {
        plain.push(run(n, false));
        fan.push(run(n, true));
    }
    let (p, pc) = median(plain);
    let (f, fc) = median(fan);
    t.row(
        &format!("{n} lifecycles, no parent"),
        format!("{p:.0} jobs/s"),
        format!("{pc:.1} µs CPU/job"),
    );
    t.row(
        &format!("{n} children fanned in to one parent"),
        format!("{f:.0} jobs/s"),
        format!("{:.2}x time, {fc:.1} µs CPU/job", p / f),
    );
}
