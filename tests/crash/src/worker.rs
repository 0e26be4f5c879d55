//! The worker process: a mixed workload on several threads until it is
//! killed, every acknowledged operation appended to its thread's ack log.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use telha_jobs::{
    Backoff, Config, EnqueueOptions, ErrorKind, Job, LeaseOptions, NewJob, Queue, Scope,
};

use crate::log::{now_us, AckLog};

/// Kinds the workload enqueues (two families, one exact kind).
pub const KINDS: [&str; 3] = ["ingest:pdf", "embed", "cascade"];

/// The store's config in every round: leases short enough that they expire
/// (and the reaper rescues them) many times per round, backoff short enough
/// that failed jobs come back within the round.
pub fn config(sync_writes: bool) -> Config {
    Config {
        lease_ttl: Duration::from_millis(150),
        reaper_interval: Duration::from_millis(50),
        max_attempts: 4,
        backoff: Backoff {
            base: Duration::from_millis(20),
            factor: 2.0,
            cap: Duration::from_millis(200),
        },
        // Completed jobs are kept, so every acknowledged completion can be
        // checked after every kill.
        completed_retention: None,
        sync_writes,
        ..Config::default()
    }
}

/// What one worker process runs with.
pub struct WorkerArgs {
    pub store: PathBuf,
    pub log_dir: PathBuf,
    pub round: u32,
    pub seed: u64,
    pub threads: usize,
    pub sync_writes: bool,
    /// A guard: the worker exits by itself after this long, so a harness
    /// that died cannot leave it running.
    pub max_secs: u64,
}

pub fn run(a: WorkerArgs) -> ! {
    let q = match Queue::open(&a.store, config(a.sync_writes)) {
        Ok(q) => q,
        Err(e) => {
            eprintln!("crash worker: open {}: {e}", a.store.display());
            std::process::exit(2);
        }
    };
    let deadline = Instant::now() + Duration::from_secs(a.max_secs);
    let hs: Vec<_> = (0..a.threads)
        .map(|t| {
            let q = q.clone();
            let log = a.log_dir.join(format!("r{:04}-t{t}.log", a.round));
            let seed = a.seed ^ ((a.round as u64) << 32) ^ (t as u64).wrapping_mul(0x9E37_79B9);
            let worker = format!("r{}t{t}", a.round);
            std::thread::spawn(move || thread_loop(&q, &log, seed, &worker, deadline))
        })
        .collect();
    for h in hs {
        let _ = h.join();
    }
    std::process::exit(0)
}

struct Held {
    job: Job,
}

fn fatal(what: &str, e: telha_jobs::Error) -> ! {
    eprintln!("crash worker: {what}: {e}");
    std::process::exit(4);
}

fn thread_loop(q: &Queue, log: &Path, seed: u64, worker: &str, until: Instant) {
    let mut log = AckLog::create(log).unwrap_or_else(|e| {
        eprintln!("crash worker: cannot create {}: {e}", log.display());
        std::process::exit(3);
    });
    let mut rng = SmallRng::seed_from_u64(seed);
    let tenant = Scope::from_bytes([7; 16]);
    let mut held: Vec<Held> = Vec::new();
    let no_wait = LeaseOptions::default();
    let mut n = 0u64;
    while Instant::now() < until {
        n += 1;
        let roll = rng.random_range(0..100u32);
        // Hold at most a few dozen leases: settle when over.
        let roll = if held.len() > 40 && roll < 60 {
            60 + roll % 35
        } else {
            roll
        };
        match roll {
            0..=14 => {
                let kind = KINDS[rng.random_range(0..KINDS.len())];
                let mut o = EnqueueOptions::default();
                if rng.random_bool(0.3) {
                    o.scope = Some(tenant);
                }
                if rng.random_bool(0.2) {
                    o.priority = Some(rng.random_range(0..=255u8));
                }
                if rng.random_bool(0.1) {
                    // A small key space, so some enqueues hit an existing key.
                    o.idempotency_key = Some(format!("k{}", rng.random_range(0..200u32)));
                }
                if rng.random_bool(0.05) {
                    o.delay = Some(Duration::from_millis(rng.random_range(1..300)));
                }
                match q.enqueue(kind, format!("job {worker} {n}").as_bytes(), o) {
                    Ok(e) => {
                        let extra = if e.created { "new" } else { "dup" };
                        log.write('E', now_us(), &e.id.to_string(), 0, extra);
                    }
                    Err(e) => fatal("enqueue", e),
                }
            }
            15..=19 => {
                let jobs: Vec<NewJob> = (0..rng.random_range(2..10))
                    .map(|i| {
                        NewJob::new(
                            KINDS[rng.random_range(0..KINDS.len())],
                            format!("batch {worker} {n} {i}"),
                        )
                    })
                    .collect();
                match q.enqueue_many(jobs) {
                    Ok(v) => {
                        let t = now_us();
                        for e in v {
                            log.push('E', t, &e.id.to_string(), 0, "new");
                        }
                        log.flush();
                    }
                    Err(e) => fatal("enqueue_many", e),
                }
            }
            20..=54 => {
                let got = if rng.random_bool(0.5) {
                    q.lease_next(worker, &no_wait)
                        .map(|j| j.into_iter().collect())
                } else {
                    q.lease_many(worker, rng.random_range(1..8), &no_wait)
                };
                match got {
                    Ok(jobs) => {
                        let t = now_us();
                        for j in &jobs {
                            let extra = format!("{} {worker}", j.deadline);
                            log.push('L', t, &j.id.to_string(), j.generation, &extra);
                        }
                        log.flush();
                        held.extend(jobs.into_iter().map(|job| Held { job }));
                    }
                    Err(e) => fatal("lease", e),
                }
            }
            55..=94 if !held.is_empty() => {
                let i = rng.random_range(0..held.len());
                settle(q, &mut log, &mut rng, &mut held, i, worker);
            }
            95..=96 => match q.reap() {
                Ok(r) => log.write('P', now_us(), "-", r.expired as u64, ""),
                Err(e) => fatal("reap", e),
            },
            97 => {
                // Let held leases age past their TTL now and then, so the
                // reaper expires some and their late settles are stale.
                std::thread::sleep(Duration::from_millis(rng.random_range(1..40)));
            }
            _ => {}
        }
    }
}

fn settle(
    q: &Queue,
    log: &mut AckLog,
    rng: &mut SmallRng,
    held: &mut Vec<Held>,
    i: usize,
    worker: &str,
) {
    let action = rng.random_range(0..100u32);
    if action < 15 {
        // Heartbeat: the lease stays held.
        let tok = held[i].job.token();
        let id = tok.id.to_string();
        match q.extend(&[tok], worker) {
            Ok(mut v) => match v.pop() {
                Some(Ok(deadline)) => {
                    log.write('X', now_us(), &id, tok.generation, &deadline.to_string())
                }
                Some(Err(e)) if e.kind() == ErrorKind::Aborted => {
                    log.write('A', now_us(), &id, tok.generation, "extend");
                    held.swap_remove(i);
                }
                Some(Err(e)) => fatal("extend (item)", e),
                None => fatal("extend", telha_jobs::Error::NotFound("no answer".into())),
            },
            Err(e) => fatal("extend", e),
        }
        return;
    }
    if action < 20 {
        // Abandon it: the lease expires and the reaper hands the job on.
        held.swap_remove(i);
        return;
    }
    if action < 32 {
        // complete_many over up to five held leases (one atomic write).
        let k = rng.random_range(1..=5usize).min(held.len());
        let batch: Vec<Held> = (0..k).map(|_| held.swap_remove(0)).collect();
        let t = now_us();
        for h in &batch {
            log.push(
                'S',
                t,
                &h.job.id.to_string(),
                h.job.generation,
                "complete_many",
            );
        }
        log.flush();
        let items = batch.iter().map(|h| (h.job.token(), None).into()).collect();
        match q.complete_many(items) {
            Ok(answers) => {
                let t = now_us();
                for (h, a) in batch.iter().zip(answers) {
                    let id = h.job.id.to_string();
                    match a {
                        Ok(()) => log.push('C', t, &id, h.job.generation, ""),
                        Err(e) if e.kind() == ErrorKind::Aborted => {
                            log.push('A', t, &id, h.job.generation, "complete_many")
                        }
                        Err(e) => fatal("complete_many (item)", e),
                    }
                }
                log.flush();
            }
            Err(e) => fatal("complete_many", e),
        }
        return;
    }
    let h = held.swap_remove(i);
    let tok = h.job.token();
    let id = tok.id.to_string();
    let (what, tag, result) = if action < 70 {
        ("complete", 'C', None)
    } else if action < 85 {
        ("fail", 'F', Some(true))
    } else if action < 90 {
        ("fail-dead", 'D', Some(false))
    } else {
        ("release", 'R', None)
    };
    log.write('S', now_us(), &id, tok.generation, what);
    let r = match (tag, result) {
        ('C', _) => q.complete(&tok, Some(b"done")),
        ('R', _) => q.release(&tok),
        (_, Some(retryable)) => q.fail(&tok, "crash harness failure", retryable),
        _ => unreachable!("every action has a call"),
    };
    match r {
        Ok(()) => log.write(tag, now_us(), &id, tok.generation, ""),
        Err(e) if e.kind() == ErrorKind::Aborted => {
            log.write('A', now_us(), &id, tok.generation, what)
        }
        Err(e) => fatal(what, e),
    }
}
