//! The follow-up crash test (issue 20): an owner process completes parent
//! jobs with `then` (three follow-up jobs each, in the completion's
//! batch), two threads at once, and is SIGKILLed at random instants.
//! After every kill the store must say: each completed parent has exactly
//! its three children (one of each index), and a parent that did not
//! complete has none.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use telha_jobs::{Completion, Config, JobId, LeaseOptions, ListQuery, NewJob, Queue, State};

use crate::schedules::Checks;

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

pub struct Params {
    pub base: PathBuf,
    pub kills: u32,
    pub seed: u64,
    pub sync_writes: bool,
}

/// Kill the owner `kills` times, checking the store after each kill.
/// Answers (passed, failed).
pub fn run(p: &Params) -> (u32, u32) {
    let store = p.base.join("store");
    std::fs::create_dir_all(&p.base).expect("base dir");
    let mut seeded = 0;
    {
        let q = Queue::open(&store, config(p.sync_writes)).expect("open");
        seed(&q, &mut seeded, PARENTS);
        q.close();
    }
    let mut rng = SmallRng::seed_from_u64(p.seed ^ 0x0f01_10a5);
    let exe = std::env::current_exe().expect("current exe");
    let mut checks = Checks::default();
    let started = Instant::now();
    let mut last = (0, 0);
    for kill in 0..p.kills {
        let mut cmd = Command::new(&exe);
        cmd.args(["followup-owner", "--store"]).arg(&store);
        if p.sync_writes {
            cmd.arg("--sync-writes");
        }
        let mut child = cmd.stdin(Stdio::null()).spawn().expect("spawn the owner");
        let ms = if rng.random_range(0..6u32) == 0 {
            rng.random_range(0..150)
        } else {
            rng.random_range(150..=700)
        };
        std::thread::sleep(Duration::from_millis(ms));
        let _ = child.kill();
        let _ = child.wait();
        let q = match Queue::open(&store, config(p.sync_writes)) {
            Ok(q) => q,
            Err(e) => {
                checks.check(
                    &format!("kill {kill}: the store reopens"),
                    Err(e.to_string()),
                );
                return checks.done();
            }
        };
        let verdict = verify(&q, seeded);
        if let Ok(n) = &verdict {
            last = *n;
        }
        checks.check(
            &format!("kill {kill} after {ms} ms: children exist iff their parent completed"),
            verdict.map(drop),
        );
        let report = q.check().expect("check");
        checks.check(
            &format!("kill {kill}: the store checks clean"),
            if report.problems.is_empty() {
                Ok(())
            } else {
                Err(format!("{:?}", report.problems))
            },
        );
        seed(&q, &mut seeded, MORE_PER_KILL);
        q.close();
    }
    println!(
        "follow-up crash ({} sync): {} kills over {:.1} s, {} of {} parents completed, {} children",
        if p.sync_writes { "on" } else { "off" },
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
