//! The fan-in crash test (issue 43): groups of children and a parent
//! (`enqueue_group`); an owner process completes children — and the
//! parents they release — on two threads, and is SIGKILLed at random
//! instants. After every kill the store must say, for each group: the
//! parent left `waiting` exactly when all its children completed, exactly
//! once (one `children_done` entry in its log), and a waiting parent
//! counts exactly its unfinished children; `check()` is clean.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use telha_jobs::{Config, LeaseOptions, ListQuery, NewJob, Queue, State};

use crate::schedules::Checks;

const GROUPS: usize = 400;
const MORE_PER_KILL: usize = 100;
const CHILDREN: usize = 5;

fn config(sync_writes: bool) -> Config {
    Config {
        reaper_interval: Duration::ZERO,
        completed_retention: None,
        sync_writes,
        ..Config::default()
    }
}

/// The owner process: complete children and parents until killed.
pub fn owner(store: &Path, sync_writes: bool, max_secs: u64) {
    let q = Queue::open(store, config(sync_writes)).expect("open the store");
    // Leases a killed owner held are handed out again at once.
    q.reap().expect("reap");
    let until = Instant::now() + Duration::from_secs(max_secs);
    std::thread::scope(|s| {
        for t in 0..2 {
            let q = &q;
            s.spawn(move || {
                let opts = LeaseOptions::default().kind("fan:*").expect("kind");
                let worker = format!("fanin-owner-{t}");
                while Instant::now() < until {
                    let Some(job) = q.lease_next(&worker, &opts).expect("lease") else {
                        std::thread::sleep(Duration::from_millis(5));
                        continue;
                    };
                    std::thread::sleep(Duration::from_micros(200));
                    q.complete(&job.token(), Some(b"ok")).expect("complete");
                }
            });
        }
    });
    q.close();
}

/// `telha-crash fanin`: every sync mode in `modes`, then exit with the
/// verdict.
pub fn main(kills: u32, modes: &[bool], seed: Option<u64>) -> ! {
    let seed = seed.unwrap_or_else(|| crate::log::now_us() ^ u64::from(std::process::id()));
    let tmp = tempfile::Builder::new()
        .prefix("telha-crash-fanin")
        .tempdir()
        .expect("temp dir");
    println!("telha-crash fanin: seed {seed} (rerun with --seed {seed}), {kills} kills per mode");
    let (mut passed, mut failed) = (0u32, 0u32);
    for &sync_writes in modes {
        let (p_, f_) = run(&Params {
            base: tmp
                .path()
                .join(if sync_writes { "sync-on" } else { "sync-off" }),
            kills,
            seed,
            sync_writes,
        });
        passed += p_;
        failed += f_;
    }
    println!("{passed} passed, {failed} failed");
    std::process::exit(if failed == 0 { 0 } else { 1 });
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
        seed(&q, &mut seeded, GROUPS);
        q.close();
    }
    let mut rng = SmallRng::seed_from_u64(p.seed ^ 0xfa41_2043);
    let exe = std::env::current_exe().expect("current exe");
    let mut checks = Checks::default();
    let started = Instant::now();
    let mut last = (0, 0);
    for kill in 0..p.kills {
        let mut cmd = Command::new(&exe);
        cmd.args(["fanin-owner", "--store"]).arg(&store);
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
            &format!(
                "kill {kill} after {ms} ms: each parent left waiting once, iff its children completed"
            ),
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
        "fan-in crash ({} sync): {} kills over {:.1} s, {} of {} parents released, {} children completed",
        if p.sync_writes { "on" } else { "off" },
        p.kills,
        started.elapsed().as_secs_f64(),
        last.0,
        seeded - MORE_PER_KILL,
        last.1
    );
    checks.done()
}

/// Enqueue `n` more groups (`seeded` counts them all).
fn seed(q: &Queue, seeded: &mut usize, n: usize) {
    for g in 0..n {
        let children = (0..CHILDREN)
            .map(|i| NewJob::new("fan:child", format!("g{}/{i}", *seeded + g)))
            .collect();
        let parent = NewJob::new("fan:parent", format!("g{}", *seeded + g));
        q.enqueue_group(children, parent).expect("enqueue a group");
    }
    *seeded += n;
}

/// Every parent against its children. Answers (parents released,
/// children completed) when the invariant holds.
fn verify(q: &Queue, seeded: usize) -> Result<(usize, usize), String> {
    let mut parents = Vec::new();
    let mut after = None;
    loop {
        let page = q
            .list(&ListQuery {
                kind: Some("fan:parent".parse().map_err(|e| format!("{e}"))?),
                limit: 10_000,
                after: after.take(),
                ..ListQuery::default()
            })
            .map_err(|e| e.to_string())?;
        parents.extend(page.jobs);
        match page.next {
            Some(n) => after = Some(n),
            None => break,
        }
    }
    if parents.len() != seeded {
        return Err(format!("{} parents, not {seeded}", parents.len()));
    }
    let (mut released, mut completed) = (0, 0);
    for p in &parents {
        let kids = q
            .results_of_children(&p.id, None, 100)
            .map_err(|e| e.to_string())?
            .children;
        if kids.len() != CHILDREN {
            return Err(format!("parent {} has {} children", p.id, kids.len()));
        }
        let done = kids
            .iter()
            .filter(|c| c.state == Some(State::Completed))
            .count();
        completed += done;
        let wakes = p
            .events
            .iter()
            .filter(|e| e.transition == "children_done")
            .count();
        let fan = p
            .fan_in
            .ok_or_else(|| format!("parent {} has no fan-in", p.id))?;
        if p.state == State::Waiting {
            if done == CHILDREN || wakes != 0 || fan.unfinished != (CHILDREN - done) as u64 {
                return Err(format!(
                    "waiting parent {}: {done} children completed, counts {} unfinished, {wakes} wakes",
                    p.id, fan.unfinished
                ));
            }
        } else {
            released += 1;
            if done != CHILDREN || wakes != 1 || fan.unfinished != 0 {
                return Err(format!(
                    "{} parent {}: {done} children completed, {wakes} wakes, {} unfinished",
                    p.state, p.id, fan.unfinished
                ));
            }
        }
    }
    Ok((released, completed))
}
