//! The follow-up crash test (issue 20): an owner process completes parent
//! jobs with `then` (three follow-up jobs each, in the completion's
//! batch), two threads at once, and is SIGKILLed at random instants.
//! After every kill the store must say: each completed parent has exactly
//! its three children (one of each index), and a parent that did not
//! complete has none; `check()` is clean (the loop: driver.rs).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use telha_jobs::{Completion, Config, JobId, LeaseOptions, ListQuery, NewJob, Queue, State};

pub use crate::driver::Params;
use crate::driver::{kill_loop, Owner};

/// Parents enqueued before the first kill, and after each kill's checks
/// (so the late kills still find work).
const PARENTS: usize = 5_000;
const MORE_PER_KILL: usize = 1_000;
const CHILDREN: usize = 3;

fn config(sync_writes: bool) -> Config {
    Config {
        reaper_interval: Duration::ZERO,
        completed_retention: None,
        sync_writes,
        ..Config::default()
    }
}

/// The owner process: complete parents with their children until killed.
pub fn owner(store: &Path, sync_writes: bool, max_secs: u64) {
    let q = Queue::open(store, config(sync_writes)).expect("open the store");
    // Leases a killed owner held are handed out again at once.
    q.reap().expect("reap");
    let until = Instant::now() + Duration::from_secs(max_secs);
    std::thread::scope(|s| {
        for t in 0..2 {
            let q = &q;
            s.spawn(move || {
                let opts = LeaseOptions::default().kind("crash:parent").expect("kind");
                let worker = format!("followup-owner-{t}");
                while Instant::now() < until {
                    let Some(job) = q.lease_next(&worker, &opts).expect("lease") else {
                        return;
                    };
                    // The handler's work: it keeps 20 kills from running
                    // out of parents.
                    std::thread::sleep(Duration::from_micros(500));
                    let then = (0..CHILDREN)
                        .map(|i| NewJob::new("crash:child", format!("{}/{i}", job.id)))
                        .collect();
                    let c = Completion::new(job.token(), Some(b"done".to_vec())).then(then);
                    q.complete_with(c).expect("complete with follow-ups");
                }
            });
        }
    });
    q.close();
}

/// Kill the owner `kills` times, checking the store after each kill.
/// Answers (passed, failed).
pub fn run(p: &Params) -> (u32, u32) {
    std::fs::create_dir_all(&p.base).expect("base dir");
    let mut seeded = 0;
    {
        let q = Queue::open(p.store(), config(p.sync_writes)).expect("open");
        seed(&q, &mut seeded, PARENTS);
        q.close();
    }
    let started = Instant::now();
    let mut last = (0, 0);
    let owner = Owner {
        cmd: "followup-owner",
        args: &|_| Vec::new(),
        salt: 0x0f01_10a5,
        max_ms: 700,
        config: config(p.sync_writes),
        runs_until_killed: false,
    };
    let checks = kill_loop(p, &owner, |q, kill, ms, checks| {
        let verdict = verify(q, seeded);
        if let Ok(n) = &verdict {
            last = *n;
        }
        checks.check(
            &format!("kill {kill} after {ms} ms: children exist iff their parent completed"),
            verdict.map(drop),
        );
        seed(q, &mut seeded, MORE_PER_KILL);
    });
    println!(
        "follow-up crash ({} sync): {} kills over {:.1} s, {} of {} parents completed, {} children",
        p.sync_label(),
        p.kills,
        started.elapsed().as_secs_f64(),
        last.0,
        seeded - MORE_PER_KILL,
        last.1
    );
    checks.done()
}

/// Enqueue `n` more parents (`seeded` counts them all).
fn seed(q: &Queue, seeded: &mut usize, n: usize) {
    for c in (0..n).step_by(1000) {
        let jobs = (c..(c + 1000).min(n))
            .map(|i| NewJob::new("crash:parent", format!("p{}", *seeded + i)))
            .collect();
        q.enqueue_many(jobs).expect("enqueue the parents");
    }
    *seeded += n;
}

/// Every job by kind: parents by state, children by parent. Answers
/// (completed parents, children) when the invariant holds.
fn verify(q: &Queue, seeded: usize) -> Result<(usize, usize), String> {
    let mut parents: BTreeMap<JobId, State> = BTreeMap::new();
    let mut children: BTreeMap<JobId, Vec<usize>> = BTreeMap::new();
    let mut after = None;
    loop {
        let page = q
            .list(&ListQuery {
                limit: 10_000,
                after: after.take(),
                ..ListQuery::default()
            })
            .map_err(|e| e.to_string())?;
        for j in page.jobs {
            match j.kind.as_str() {
                "crash:parent" => {
                    parents.insert(j.id, j.state);
                }
                "crash:child" => {
                    let parent = j.parent.ok_or("a child without a parent")?;
                    let text = String::from_utf8_lossy(&j.payload).into_owned();
                    let (pid, i) = text.split_once('/').ok_or("a child payload without /")?;
                    if pid != parent.to_string() {
                        return Err(format!(
                            "child {} says parent {pid}, records {parent}",
                            j.id
                        ));
                    }
                    let i: usize = i.parse().map_err(|_| "a child index")?;
                    children.entry(parent).or_default().push(i);
                }
                k => return Err(format!("unexpected kind {k}")),
            }
        }
        match page.next {
            Some(n) => after = Some(n),
            None => break,
        }
    }
    if parents.len() != seeded {
        return Err(format!("{} parents, not {seeded}", parents.len()));
    }
    let mut completed = 0;
    let mut total = 0;
    for (id, state) in &parents {
        let mut got = children.remove(id).unwrap_or_default();
        got.sort();
        total += got.len();
        match state {
            State::Completed => {
                completed += 1;
                if got != (0..CHILDREN).collect::<Vec<_>>() {
                    return Err(format!("completed parent {id} has children {got:?}"));
                }
            }
            s if !got.is_empty() => {
                return Err(format!("parent {id} is {s} but has children {got:?}"));
            }
            _ => {}
        }
    }
    if let Some((p, _)) = children.into_iter().next() {
        return Err(format!("children of an unknown parent {p}"));
    }
    Ok((completed, total))
}
