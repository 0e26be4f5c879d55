//! Issue 42's rows: a lifecycle (enqueue, lease, complete, one
//! job per call) of jobs with 4 tags beside the same without tags, same
//! run (target ≤ 1.3× the untagged time per job), CPU time per job beside
//! each rate; and `list(tag)`'s first page, `count_tag` and `find` of a tag with
//! 100 jobs beside `others` jobs of other tags, against the same calls
//! on a store holding only that tag's jobs (`make bench`: 1,000,000
//! others, target within 2×). Raw RocksDB single-put batches are measured
//! in the same run (`queue.rs`) and each lifecycle row says its cost in
//! raw puts.

use std::time::{Duration, Instant};

use telha_jobs::{Config, EnqueueOptions, LeaseOptions, ListQuery, NewJob, Queue};

/// The process's user + system CPU time (from /proc/self/stat).
pub fn cpu() -> Duration {
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
    Queue::open(
        dir,
        Config {
            reaper_interval: Duration::ZERO,
            ..Config::default()
        },
    )
    .unwrap()
}

/// `n` one-at-a-time lifecycles with `tags` tags each: (jobs/s, CPU µs/job).
fn lifecycles(n: usize, tags: usize) -> (f64, f64) {
    let dir = tempfile::tempdir().unwrap();
    let q = open(dir.path());
    let opts = |i: usize| {
        (0..tags).fold(EnqueueOptions::default(), |o, t| {
            o.tag(format!("tag-{t}-{}", i % 100))
        })
    };
    let lease = LeaseOptions::default();
    let (c0, t0) = (cpu(), Instant::now());
    for i in 0..n {
        q.enqueue("embed", b"payload", opts(i)).unwrap();
        let j = q.lease_next("w", &lease).unwrap().unwrap();
        q.complete(&j.token(), None).unwrap();
    }
    let (el, c) = (t0.elapsed(), cpu() - c0);
    q.close();
    (
        n as f64 / el.as_secs_f64(),
        c.as_secs_f64() * 1e6 / n as f64,
    )
}

/// The median time of `rounds` calls of `f`, µs.
fn time_of(rounds: usize, mut f: impl FnMut()) -> f64 {
    let mut v: Vec<f64> = (0..rounds)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// `list(tag)`'s first page (50), `count_tag` of a 100-job tag and
/// `find` of the tag's text (also one job's idempotency key: the key and
/// the tag's first page of 50) with `others` jobs of other tags beside
/// it: (list µs, count µs, find µs).
fn lookups(others: usize) -> (f64, f64, f64) {
    let dir = tempfile::tempdir().unwrap();
    let q = open(dir.path());
    let mut batch = Vec::new();
    for i in 0..others {
        batch.push(
            NewJob::new("embed", b"x".to_vec())
                .with(EnqueueOptions::default().tag(format!("other-{}", i % 1000))),
        );
        if batch.len() == 10_000 {
            q.enqueue_many(std::mem::take(&mut batch)).unwrap();
        }
    }
    for _ in 0..100 {
        batch.push(
            NewJob::new("embed", b"x".to_vec()).with(EnqueueOptions::default().tag("order-4711")),
        );
    }
    batch.push(
        NewJob::new("embed", b"x".to_vec())
            .with(EnqueueOptions::default().idempotency_key("order-4711")),
    );
    q.enqueue_many(batch).unwrap();
    let query = ListQuery {
        tag: Some("order-4711".into()),
        limit: 50,
        ..ListQuery::default()
    };
    let list = time_of(201, || {
        assert_eq!(q.list(&query).unwrap().jobs.len(), 50);
    });
    let count = time_of(201, || {
        assert_eq!(q.count_tag("order-4711", None).unwrap().pending, 100);
    });
    let mut fq = telha_jobs::FindQuery::new("order-4711");
    fq.limit = 50;
    let find = time_of(201, || {
        let r = q.find(&fq).unwrap();
        assert_eq!((r.matched(), r.by_tag.jobs.len()), (vec!["key", "tag"], 50));
    });
    q.close();
    (list, count, find)
}

/// The rows.
/// `raw_rate`: raw RocksDB single-put batches per second, same run.
pub fn rows(t: &mut super::Table, n: usize, others: usize, raw_rate: f64) {
    let (mut plain, mut tagged) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        plain.push(lifecycles(n, 0));
        tagged.push(lifecycles(n, 4));
    }
    let med = |v: &mut Vec<(f64, f64)>| {
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        v[v.len() / 2]
    };
    let (p, g) = (med(&mut plain), med(&mut tagged));
    t.row(
        "lifecycle, 1 thread, no tags",
        format!("{:.0} jobs/s", p.0),
        format!("{:.1} µs CPU/job, {:.2}× raw put cost", p.1, raw_rate / p.0),
    );
    t.row(
        "lifecycle, 1 thread, 4 tags",
        format!("{:.0} jobs/s", g.0),
        format!(
            "{:.2}× untagged time/job, {:.1} µs CPU/job, {:.2}× raw put cost",
            p.0 / g.0,
            g.1,
            raw_rate / g.0
        ),
    );
    let (el, ec, ef) = lookups(0);
    let (fl, fc, ff) = lookups(others);
    t.row(
        "list(tag) first page of 50, tag of 100 jobs, alone",
        format!("{el:.0} µs"),
        String::new(),
    );
    t.row(
        &format!("list(tag) first page of 50, beside {others} other jobs"),
        format!("{fl:.0} µs"),
        format!("{:.2}× alone", fl / el),
    );
    t.row(
        "count_tag, tag of 100 jobs, alone",
        format!("{ec:.0} µs"),
        String::new(),
    );
    t.row(
        &format!("count_tag, beside {others} other jobs"),
        format!("{fc:.0} µs"),
        format!("{:.2}× alone", fc / ec),
    );
    t.row(
        "find(text): a key and a tag's first page of 50, alone",
        format!("{ef:.0} µs"),
        String::new(),
    );
    t.row(
        &format!("find(text), beside {others} other jobs"),
        format!("{ff:.0} µs"),
        format!("{:.2}× alone", ff / ef),
    );
}
