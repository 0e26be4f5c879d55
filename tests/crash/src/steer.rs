//! The steering and unique-window crash test (issue 44): an owner process
//! whose threads mix, with seeded randomness, keyed enqueues with
//! `unique_for` (windows of 120 ms to an hour, `unique_states` any and
//! active, many repeats inside a window), `promote`, `reschedule`,
//! `set_priority`, and lease then complete / fail / fail dead / release,
//! while the background reaper prunes the windows that end during the run.
//! It is SIGKILLed at random instants; after every kill the store is
//! reopened and checked against the owner's logs (`steer_check.rs`).
//!
//! Thread `t` owns its keys (`t{t}-k{i}`) and its kind (`steer:t{t}`), in
//! every round, so every operation on a key or on a job comes from one
//! thread and the order of its log lines is the order of the operations.
//! Log lines (`log.rs` format, `<tag> <t_us> <id> <generation> <extra>`):
//!
//! | tag | when | id | extra |
//! |-----|------|----|-------|
//! | `Q` | before an enqueue | the key | `<priority> <run_at ms or ->` |
//! | `E` | the enqueue answered | the job id | `new`/`dup` |
//! | `I` | before a steer or settle of a job | the job id | `promote`, `reschedule <ms>`, `priority <p>`, `complete`, `fail`, `dead`, `release` |
//! | `O` | it answered `Ok` | the job id | |
//! | `J` | it answered an error (nothing written) | the job id | the error kind |
//! | `L` | a lease answered | the job id (generation) | |

use std::path::Path;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use telha_jobs::{Backoff, Config, EnqueueOptions, JobId, LeaseOptions, Queue, UniqueStates};

pub use crate::driver::Params;
use crate::driver::{kill_loop, Owner};
use crate::log::{now_us, AckLog};
use crate::steer_check::History;

/// Keys per thread; key `i`'s window is `WINDOWS[i / 2]`, `unique_states`
/// any for even `i`, active for odd.
pub const KEYS: usize = 8;
const WINDOWS_MS: [u64; 4] = [120, 300, 800, 3_600_000];
/// Owner threads.
pub const THREADS: usize = 3;

/// Key `i`'s window and states.
pub fn key_window(i: usize) -> (u64, UniqueStates) {
    let states = if i.is_multiple_of(2) {
        UniqueStates::Any
    } else {
        UniqueStates::Active
    };
    (WINDOWS_MS[i / 2], states)
}

/// Thread `t`'s key `i`.
pub fn key_name(t: usize, i: usize) -> String {
    format!("t{t}-k{i}")
}

/// The key's index from its name.
pub fn key_index(key: &str) -> Option<usize> {
    key.rsplit_once("-k")?.1.parse().ok()
}

/// The owner's config: short leases and backoff (leases expire, retries
/// come back within a round), the background reaper every 50 ms (it
/// prunes ended windows), every finished job kept (so every acknowledged
/// enqueue can be found).
pub fn config(sync_writes: bool, background: bool) -> Config {
    Config {
        lease_ttl: Duration::from_millis(150),
        reaper_interval: if background {
            Duration::from_millis(50)
        } else {
            Duration::ZERO
        },
        max_attempts: 3,
        backoff: Backoff {
            base: Duration::from_millis(20),
            factor: 2.0,
            cap: Duration::from_millis(200),
        },
        completed_retention: None,
        dead_retention: None,
        cancelled_retention: None,
        prune_batch: 64,
        sync_writes,
        ..Config::default()
    }
}

/// The owner process: `THREADS` threads until killed or `max_secs`.
pub fn owner(store: &Path, logs: &Path, round: u32, seed: u64, sync_writes: bool, max_secs: u64) {
    let q = Queue::open(store, config(sync_writes, true)).expect("open the store");
    let until = Instant::now() + Duration::from_secs(max_secs);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let q = &q;
            let path = logs.join(format!("r{round:04}-t{t}.log"));
            let seed = seed ^ (u64::from(round) << 32) ^ (t as u64).wrapping_mul(0x9E37_79B9);
            s.spawn(move || thread_loop(q, &path, t, round, seed, until));
        }
    });
    q.close();
}

fn thread_loop(q: &Queue, path: &Path, t: usize, round: u32, seed: u64, until: Instant) {
    let mut log = AckLog::create(path).expect("create the log");
    let mut rng = SmallRng::seed_from_u64(seed);
    let kind = format!("steer:t{t}");
    let worker = format!("r{round}t{t}");
    let lease = LeaseOptions::default().kind(&kind).expect("kind");
    // Jobs this thread may steer: the latest it was answered.
    let mut recent: Vec<JobId> = Vec::new();
    while Instant::now() < until {
        let roll = rng.random_range(0..100u32);
        if roll < 45 || recent.is_empty() {
            let i = rng.random_range(0..KEYS);
            let key = key_name(t, i);
            let (ms, states) = key_window(i);
            let priority = rng.random_range(0..=255u8);
            let mut opts = EnqueueOptions::default()
                .idempotency_key(key.as_str())
                .unique_for(Duration::from_millis(ms))
                .unique_states(states)
                .priority(priority);
            let run_at = rng
                .random_bool(0.4)
                .then(|| now_us() / 1000 + rng.random_range(100..3000));
            if let Some(r) = run_at {
                opts = opts.run_at(r);
            }
            let r = run_at.map_or("-".to_string(), |r| r.to_string());
            log.write('Q', now_us(), &key, 0, &format!("{priority} {r}"));
            let e = q.enqueue(&kind, key.as_bytes(), opts).expect("enqueue");
            let how = if e.created { "new" } else { "dup" };
            log.write('E', now_us(), &e.id.to_string(), 0, how);
            if e.created {
                if recent.len() >= 32 {
                    recent.remove(0);
                }
                recent.push(e.id);
            }
        } else if roll < 88 {
            let id = recent[rng.random_range(0..recent.len())];
            // Reschedules mostly into the future, so many steered jobs
            // still wait (their run time checkable) at the kill.
            let what = match rng.random_range(0..4u32) {
                0 => "promote".to_string(),
                1 | 2 => {
                    let at = (now_us() / 1000) as i64 + rng.random_range(-300..5000i64);
                    format!("reschedule {at}")
                }
                _ => format!("priority {}", rng.random_range(0..=255u8)),
            };
            log.write('I', now_us(), &id.to_string(), 0, &what);
            let r = match what.split_once(' ') {
                None => q.promote(&id),
                Some(("reschedule", at)) => q.reschedule(&id, at.parse().expect("ms")),
                Some((_, p)) => q.set_priority(&id, p.parse().expect("priority")),
            };
            // A job that answered WrongState (finished, or held by a killed
            // owner) leaves the steering set: a retryable fail on its last
            // attempt makes a job dead without a `dead` settle.
            if r.is_err() {
                recent.retain(|i| *i != id);
            }
            outcome(&mut log, &id, r);
        } else {
            let Some(job) = q.lease_next(&worker, &lease).expect("lease") else {
                continue;
            };
            log.write('L', now_us(), &job.id.to_string(), job.generation, "");
            let tok = job.token();
            let what = match rng.random_range(0..10u32) {
                0..=5 => "complete",
                6 | 7 => "fail",
                8 => "dead",
                _ => "release",
            };
            log.write('I', now_us(), &job.id.to_string(), job.generation, what);
            let r = match what {
                "complete" => q.complete(&tok, None),
                "fail" => q.fail(&tok, "crash test", true),
                "dead" => q.fail(&tok, "crash test", false),
                _ => q.release(&tok),
            };
            let ended = r.is_ok() && matches!(what, "complete" | "dead");
            outcome(&mut log, &job.id, r);
            // A finished job leaves the steering set (a steer of it would
            // answer WrongState: after a kill, a job a dead owner still
            // holds does).
            if ended {
                recent.retain(|i| *i != job.id);
            }
        }
    }
}

fn outcome(log: &mut AckLog, id: &JobId, r: telha_jobs::Result<()>) {
    match r {
        Ok(()) => log.write('O', now_us(), &id.to_string(), 0, ""),
        Err(e) => log.write(
            'J',
            now_us(),
            &id.to_string(),
            0,
            &format!("{:?}", e.kind()),
        ),
    }
}

/// Kill the owner `kills` times, checking the store after each kill.
/// Answers (passed, failed).
pub fn run(p: &Params) -> (u32, u32) {
    let logs = p.base.join("logs");
    std::fs::create_dir_all(&logs).expect("log dir");
    let mut history = History::default();
    let started = Instant::now();
    let mut pruned = 0u64;
    let seed = p.seed.to_string();
    let owner = Owner {
        cmd: "steer-owner",
        args: &|round| {
            vec![
                "--logs".into(),
                logs.display().to_string(),
                "--round".into(),
                round.to_string(),
                "--seed".into(),
                seed.clone(),
            ]
        },
        salt: 0x57ee_4444,
        max_ms: 900,
        config: config(p.sync_writes, false),
        runs_until_killed: true,
    };
    let checks = kill_loop(p, &owner, |q, round, ms, checks| {
        for t in 0..THREADS {
            let f = logs.join(format!("r{round:04}-t{t}.log"));
            let text = std::fs::read_to_string(&f).unwrap_or_default();
            history.add_thread_log(round, t, &text);
        }
        let verdicts = crate::steer_check::verify(q, &history);
        for (name, r) in verdicts {
            checks.check(&format!("kill {round} after {ms} ms: {name}"), r);
        }
        // A pass here too: the windows that ended are pruned between
        // rounds as well as by the owner's reaper.
        let _ = q.reap();
        pruned += windows_pruned(q);
    });
    let s = history.summary();
    println!(
        "steer crash ({} sync): {} kills over {:.1} s; {s}; {pruned} windows pruned by the checker's passes",
        p.sync_label(),
        p.kills,
        started.elapsed().as_secs_f64(),
    );
    checks.done()
}

/// `telha_jobs_unique_windows_pruned_total` of this handle.
fn windows_pruned(q: &Queue) -> u64 {
    q.metrics()
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("telha_jobs_unique_windows_pruned_total"))
                .and_then(|l| l.rsplit(' ').next()?.parse().ok())
        })
        .unwrap_or(0)
}
