//! The schedule crash test (issue 17): an owner process with a 1-second
//! interval schedule (catch-up `all`) and a worker thread completing its
//! jobs is SIGKILLed at random instants; afterwards the store must hold
//! exactly one job per slot from the first slot to the last, with no gap
//! (the `all` policy catches every missed slot up) and no slot twice.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use telha_jobs::{CatchUp, Config, ErrorKind, LeaseOptions, ListQuery, Queue, Schedule};

use crate::driver::Checks;

/// The schedule every owner process keeps.
pub const NAME: &str = "crash-tick";
const INTERVAL_MS: u64 = 1000;

fn config(sync_writes: bool, background: bool) -> Config {
    Config {
        // The scheduler thread runs only with a reaper interval.
        reaper_interval: if background {
            Duration::from_millis(50)
        } else {
            Duration::ZERO
        },
        completed_retention: None,
        sync_writes,
        ..Config::default()
    }
}

fn the_schedule() -> Schedule {
    Schedule {
        catch_up: CatchUp::All,
        max_catch_up: Some(1000),
        payload: b"tick".to_vec(),
        ..Schedule::new(NAME, "every 1s", "crash:tick")
    }
}

/// The owner process: open, put the schedule when it is missing (an
/// existing one is left alone: a put of the same spec would keep its
/// cursor anyway), and complete its jobs until killed or `max_secs`.
pub fn owner(store: &Path, sync_writes: bool, max_secs: u64) {
    let q = Queue::open(store, config(sync_writes, true)).expect("open the store");
    match q.schedule_get(NAME) {
        Ok(_) => {}
        Err(e) if e.kind() == ErrorKind::NotFound => {
            q.schedule_put(&the_schedule()).expect("put the schedule");
        }
        Err(e) => panic!("schedule_get: {e}"),
    }
    let until = Instant::now() + Duration::from_secs(max_secs);
    let opts = LeaseOptions {
        wait: Some(Duration::from_millis(200)),
        ..LeaseOptions::default()
    };
    while Instant::now() < until {
        if let Some(job) = q.lease_next("crash-owner", &opts).expect("lease") {
            q.complete(&job.token(), None).expect("complete");
        }
    }
    q.close();
}

pub struct Params {
    pub base: PathBuf,
    pub kills: u32,
    pub seed: u64,
    pub delay: (u64, u64),
    pub sync_writes: bool,
}

/// Kill an owner `kills` times, then check the slots. Answers (passed, failed).
pub fn run(p: &Params) -> (u32, u32) {
    let store = p.base.join("store");
    std::fs::create_dir_all(&p.base).expect("base dir");
    let mut rng = SmallRng::seed_from_u64(p.seed ^ 0x5c4e_d01e);
    let exe = std::env::current_exe().expect("current exe");
    let started = Instant::now();
    for _ in 0..p.kills {
        let mut cmd = Command::new(&exe);
        cmd.args(["schedule-owner", "--store"]).arg(&store);
        if p.sync_writes {
            cmd.arg("--sync-writes");
        }
        let mut child = cmd.stdin(Stdio::null()).spawn().expect("spawn the owner");
        // One kill in six lands while the owner opens the store.
        let ms = if rng.random_range(0..6u32) == 0 {
            rng.random_range(0..p.delay.0.max(1))
        } else {
            rng.random_range(p.delay.0..=p.delay.1)
        };
        std::thread::sleep(Duration::from_millis(ms));
        let _ = child.kill();
        let _ = child.wait();
    }
    let mut checks = Checks::default();
    // Open without background threads, then one pass catches up to now.
    let q = match Queue::open(&store, config(p.sync_writes, false)) {
        Ok(q) => q,
        Err(e) => {
            checks.check("the store reopens after the last kill", Err(e.to_string()));
            return checks.done();
        }
    };
    let info = match q.schedule_get(NAME) {
        Ok(i) => i,
        Err(e) => {
            // The first owner may have died before it put the schedule only
            // if every kill came that early: not with these delays.
            checks.check("the schedule exists", Err(e.to_string()));
            return checks.done();
        }
    };
    let _ = q.run_schedules().expect("a catch-up pass");
    let slots = slots_of(&q);
    let info_after = q.schedule_get(NAME).expect("schedule_get");
    let again = q.run_schedules().expect("a second pass");
    q.close();

    let dup: Vec<u64> = slots
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(s, _)| *s)
        .collect();
    checks.check(
        "no slot has two jobs",
        if dup.is_empty() {
            Ok(())
        } else {
            Err(format!("slots with more than one job: {dup:?}"))
        },
    );
    let list: Vec<u64> = slots.keys().copied().collect();
    let gaps: Vec<(u64, u64)> = list
        .windows(2)
        .filter(|w| w[1] - w[0] != INTERVAL_MS)
        .map(|w| (w[0], w[1]))
        .collect();
    checks.check(
        "every slot from the first to the last has a job (catch-up all)",
        if gaps.is_empty() {
            Ok(())
        } else {
            Err(format!("gaps between slots: {gaps:?}"))
        },
    );
    checks.check(
        "the slots are on the interval's grid",
        match list.iter().find(|s| *s % INTERVAL_MS != 0) {
            None => Ok(()),
            Some(s) => Err(format!("slot {s} is off the 1 s grid")),
        },
    );
    let last = list.last().copied();
    checks.check(
        "the last slot is the latest due one",
        match (last, info_after.next_slot) {
            (Some(l), Some(n)) if n == l + INTERVAL_MS => Ok(()),
            other => Err(format!("last slot and next slot: {other:?}")),
        },
    );
    checks.check(
        "the schedule's counts match its jobs",
        if info_after.enqueued == list.len() as u64 && info_after.skipped == 0 {
            Ok(())
        } else {
            Err(format!(
                "enqueued {} skipped {} for {} jobs (before the last pass: {})",
                info_after.enqueued,
                info_after.skipped,
                list.len(),
                info.enqueued
            ))
        },
    );
    checks.check(
        "a second pass enqueues nothing",
        if again.enqueued == 0 {
            Ok(())
        } else {
            Err(format!("{again:?}"))
        },
    );
    println!(
        "schedule crash ({} sync): {} kills over {:.1} s, {} slots from {} to {}",
        if p.sync_writes { "on" } else { "off" },
        p.kills,
        started.elapsed().as_secs_f64(),
        list.len(),
        list.first().copied().unwrap_or(0),
        last.unwrap_or(0)
    );
    checks.done()
}

/// Every job of the schedule, counted by slot (and checked to carry the
/// schedule's idempotency key).
fn slots_of(q: &Queue) -> BTreeMap<u64, u32> {
    let mut slots = BTreeMap::new();
    let mut after = None;
    loop {
        let page = q
            .list(&ListQuery {
                schedule: Some(NAME.to_string()),
                limit: 1000,
                after: after.take(),
                ..ListQuery::default()
            })
            .expect("list");
        for j in &page.jobs {
            let r = j.schedule.as_ref().expect("a listed job has its schedule");
            let key = telha_jobs::schedule::idempotency_key(NAME, r.slot);
            assert_eq!(j.idempotency_key.as_deref(), Some(key.as_str()));
            *slots.entry(r.slot).or_insert(0) += 1;
        }
        match page.next {
            Some(n) => after = Some(n),
            None => return slots,
        }
    }
}
