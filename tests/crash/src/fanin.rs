//! The fan-in crash test (issue 43): groups of children and a parent
//! (`enqueue_group`); an owner process completes children — and the
//! parents they release — on two threads, and is SIGKILLed at random
//! instants. After every kill the store must say, for each group: the
//! parent left `waiting` exactly when all its children completed, exactly
//! once (one `children_done` entry in its log), and a waiting parent
//! counts exactly its unfinished children; `check()` is clean.

use std::path::Path;
use std::time::{Duration, Instant};

use telha_jobs::{Config, LeaseOptions, ListQuery, NewJob, Queue, State};

use crate::driver::{kill_loop, Owner, Params};

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
    crate::driver::main("fanin", kills, modes, seed, run)
}

pub fn run(p: &Params) -> (u32, u32) {
    std::fs::create_dir_all(&p.base).expect("base dir");
    let mut seeded = 0;
    {
        let q = Queue::open(p.store(), config(p.sync_writes)).expect("open");
        seed(&q, &mut seeded, GROUPS);
        q.close();
    }
    let started = Instant::now();
    let mut last = (0, 0);
    let owner = Owner {
        cmd: "fanin-owner",
        args: &|_| Vec::new(),
        salt: 0xfa41_2043,
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
            &format!(
                "kill {kill} after {ms} ms: each parent left waiting once, iff its children completed"
            ),
            verdict.map(drop),
        );
        seed(q, &mut seeded, MORE_PER_KILL);
    });
    println!(
        "fan-in crash ({} sync): {} kills over {:.1} s, {} of {} parents released, {} children completed",
        p.sync_label(),
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
