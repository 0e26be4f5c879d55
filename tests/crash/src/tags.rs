//! The tags crash test (issue 42): an owner process enqueues tagged jobs
//! (one at a time and in batches of 8, with metadata, a repeated tag
//! among them) on one thread while a second leases them and completes,
//! fails (retryable or not), releases or cancels them, and is SIGKILLed
//! at random instants. Each enqueue is acknowledged in a log (one
//! `write(2)` right after the call returned) with the ids and their tags.
//! After every kill (the loop: driver.rs): `check()` is clean (it walks
//! the tag index), every acknowledged job is in the store with exactly its
//! tags and metadata, and under each tag `list(tag)` pages every job
//! carrying it exactly once and no other, and `count_tag` counts them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

use telha_jobs::{Config, EnqueueOptions, JobId, LeaseOptions, ListQuery, NewJob, Queue};

pub use crate::driver::Params;
use crate::driver::{kill_loop, Owner};
use crate::log::AckLog;

const KIND: &str = "crash:tagged";

fn config(sync_writes: bool) -> Config {
    Config {
        reaper_interval: Duration::ZERO,
        completed_retention: None,
        dead_retention: None,
        cancelled_retention: None,
        sync_writes,
        ..Config::default()
    }
}

/// Job `i`'s tags in round `round`, as given (the repeated one is stored once).
fn tags_of(round: u32, i: u64) -> Vec<String> {
    let mut t = vec![
        "crash-tags".to_string(),
        format!("mod7-{}", i % 7),
        format!("round-{round}"),
    ];
    if i.is_multiple_of(3) {
        t.push(format!("mod7-{}", i % 7));
    }
    t
}

fn options(round: u32, i: u64) -> EnqueueOptions {
    tags_of(round, i)
        .into_iter()
        .fold(EnqueueOptions::default(), |o, t| o.tag(t))
        .meta("n", i.to_string())
}

/// The owner process: enqueue on one thread, move jobs on the other,
/// until killed.
pub fn owner(store: &Path, logs: &Path, round: u32, sync_writes: bool, max_secs: u64) {
    let q = Queue::open(store, config(sync_writes)).expect("open the store");
    // Leases a killed owner held are handed out again at once.
    q.reap().expect("reap");
    let until = Instant::now() + Duration::from_secs(max_secs);
    let path = logs.join(format!("r{round:04}.log"));
    std::thread::scope(|s| {
        let q = &q;
        s.spawn(move || {
            let mut log = AckLog::create(&path).expect("create the log");
            let mut i = 0u64;
            while Instant::now() < until {
                let ids: Vec<(JobId, u64)> = if i.is_multiple_of(4) {
                    let jobs = (i..i + 8)
                        .map(|k| NewJob::new(KIND, b"x".to_vec()).with(options(round, k)))
                        .collect();
                    let got = q.enqueue_many(jobs).expect("enqueue_many");
                    got.iter().zip(i..).map(|(e, k)| (e.id, k)).collect()
                } else {
                    let e = q.enqueue(KIND, b"x", options(round, i)).expect("enqueue");
                    vec![(e.id, i)]
                };
                for (id, k) in &ids {
                    log.push('E', 0, &id.to_string(), *k, &tags_of(round, *k).join(","));
                }
                log.flush();
                i += ids.len() as u64;
                std::thread::sleep(Duration::from_micros(300));
            }
        });
        s.spawn(move || {
            let opts = LeaseOptions::default().kind(KIND).expect("kind");
            let mut n = 0u64;
            while Instant::now() < until {
                let Some(job) = q.lease_next("tags-owner", &opts).expect("lease") else {
                    std::thread::sleep(Duration::from_millis(2));
                    continue;
                };
                n += 1;
                let t = job.token();
                match n % 6 {
                    0 | 1 => q.complete(&t, Some(b"ok")).expect("complete"),
                    2 => q.fail(&t, "boom", false).expect("fail"),
                    3 => q.fail(&t, "again", true).expect("fail retryable"),
                    4 => q.release(&t).expect("release"),
                    _ => {
                        q.cancel(&job.id, "crash").expect("cancel");
                    }
                }
            }
        });
    });
    q.close();
}

/// Kill the owner `kills` times, checking the tag index after each kill.
/// Answers (passed, failed).
pub fn run(p: &Params) -> (u32, u32) {
    let logs = p.base.join("logs");
    std::fs::create_dir_all(&logs).expect("log dir");
    let started = Instant::now();
    let mut last = (0, 0);
    let owner = Owner {
        cmd: "tags-owner",
        args: &|round| {
            vec![
                "--logs".into(),
                logs.display().to_string(),
                "--round".into(),
                round.to_string(),
            ]
        },
        salt: 0x7a65_4242,
        max_ms: 700,
        config: config(p.sync_writes),
        runs_until_killed: true,
    };
    let checks = kill_loop(p, &owner, |q, round, ms, checks| {
        let verdict = acked(&logs, round).and_then(|acked| verify(q, &acked));
        if let Ok(n) = &verdict {
            last = *n;
        }
        checks.check(
            &format!(
                "kill {round} after {ms} ms: every acknowledged job listed once under each of its tags"
            ),
            verdict.map(drop),
        );
    });
    println!(
        "tags crash ({} sync): {} kills over {:.1} s, {} jobs acknowledged, {} index rows listed",
        p.sync_label(),
        p.kills,
        started.elapsed().as_secs_f64(),
        last.0,
        last.1
    );
    checks.done()
}

/// Every acknowledged job of rounds 1 to `through`: id → (n, tags).
/// A SIGKILL can cut the owner's last `write(2)` short (a regular file's
/// write stops at a pending fatal signal), so only whole lines count: a
/// torn one is an acknowledgement the harness cannot read, skipped as
/// [`crate::log::parse`] skips it.
fn acked(logs: &Path, through: u32) -> Result<BTreeMap<JobId, (u64, Vec<String>)>, String> {
    let mut out = BTreeMap::new();
    for round in 1..=through {
        let text =
            std::fs::read_to_string(logs.join(format!("r{round:04}.log"))).unwrap_or_default();
        let (records, torn) = crate::log::parse(&text);
        if torn > 1 {
            return Err(format!("round {round}: {torn} malformed ack lines"));
        }
        for r in records {
            if r.tag != 'E' || r.extra.is_empty() {
                return Err(format!("round {round}: a malformed ack line {r:?}"));
            }
            let id: JobId = r.id.parse().map_err(|e| format!("{r:?}: {e}"))?;
            let tags = r.extra.split(',').map(str::to_string).collect();
            out.insert(id, (r.generation, tags));
        }
    }
    Ok(out)
}

/// Pages of `query` until the end: the ids in order.
fn all_ids(q: &Queue, mut query: ListQuery) -> Result<Vec<JobId>, String> {
    let mut ids = Vec::new();
    loop {
        let page = q.list(&query).map_err(|e| e.to_string())?;
        if !page.corrupt.is_empty() {
            return Err(format!("list reports corrupt rows: {:?}", page.corrupt));
        }
        ids.extend(page.jobs.iter().map(|j| j.id));
        match page.next {
            Some(n) => query.after = Some(n),
            None => return Ok(ids),
        }
    }
}

/// The checks; answers (acknowledged jobs, tag index rows listed).
fn verify(
    q: &Queue,
    acked: &BTreeMap<JobId, (u64, Vec<String>)>,
) -> Result<(usize, usize), String> {
    // Every job's tags, from the records (acknowledged or not: a job the
    // owner wrote but never heard back about is in the index too).
    let mut carrying: BTreeMap<String, BTreeSet<JobId>> = BTreeMap::new();
    let mut records = BTreeMap::new();
    let mut query = ListQuery {
        limit: 10_000,
        ..ListQuery::default()
    };
    loop {
        let page = q.list(&query).map_err(|e| e.to_string())?;
        for j in &page.jobs {
            for t in &j.tags {
                carrying.entry(t.clone()).or_default().insert(j.id);
            }
            records.insert(j.id, (j.tags.clone(), j.metadata.get("n").cloned()));
        }
        match page.next {
            Some(n) => query.after = Some(n),
            None => break,
        }
    }
    for (id, (n, given)) in acked {
        let Some((tags, meta)) = records.get(id) else {
            return Err(format!("acknowledged job {id} is not in the store"));
        };
        let mut want: Vec<String> = Vec::new();
        for t in given {
            if !want.contains(t) {
                want.push(t.clone());
            }
        }
        if *tags != want || meta.as_deref() != Some(n.to_string().as_str()) {
            return Err(format!(
                "job {id} carries {tags:?} / n={meta:?}, was given {want:?} / n={n}"
            ));
        }
    }
    let mut rows = 0;
    for (tag, want) in &carrying {
        let listed = all_ids(
            q,
            ListQuery {
                tag: Some(tag.clone()),
                limit: 1_000,
                ..ListQuery::default()
            },
        )?;
        rows += listed.len();
        let set: BTreeSet<JobId> = listed.iter().copied().collect();
        if set.len() != listed.len() {
            return Err(format!("list(tag={tag}) repeats a job"));
        }
        if set != *want {
            let missing = want.difference(&set).next();
            let extra = set.difference(want).next();
            return Err(format!(
                "list(tag={tag}) has {} jobs, the records {} (missing {missing:?}, extra {extra:?})",
                set.len(),
                want.len()
            ));
        }
        let counted = q.count_tag(tag, None).map_err(|e| e.to_string())?.total();
        if counted != want.len() as u64 {
            return Err(format!(
                "count_tag({tag}) = {counted}, {} carry it",
                want.len()
            ));
        }
    }
    Ok((acked.len(), rows))
}
