//! The worker process: a mixed workload on several threads until it is
//! killed, every acknowledged operation appended to its thread's ack log.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use telha_jobs::{
    Backoff, CancelOutcome, Config, EnqueueOptions, ErrorKind, Job, JobId, KindPattern,
    LeaseOptions, NewJob, PauseTarget, Queue, Scope,
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
        // Dead and cancelled jobs too: every acknowledged dead-lettering
        // and cancel is checked after every kill.
        dead_retention: None,
        cancelled_retention: None,
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
            // Only thread 0 pauses and resumes, so the order of those
            // operations (and so what must be paused after a kill) is the
            // order of its log.
            let pauser = t == 0;
            std::thread::spawn(move || thread_loop(&q, &log, seed, &worker, pauser, deadline))
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

/// What thread 0 pauses and resumes: a family, an exact kind, the tenant.
pub fn pause_targets() -> [PauseTarget; 3] {
    let family: KindPattern = "ingest:*".parse().expect("a family pattern");
    let kind: KindPattern = "embed".parse().expect("a kind");
    [
        PauseTarget::Kind(family),
        PauseTarget::Kind(kind),
        PauseTarget::Scope(Scope::from_bytes([7; 16])),
    ]
}

/// Job ids this thread enqueued lately: what it cancels and deletes.
struct Recent {
    ids: Vec<JobId>,
    next: usize,
}

impl Recent {
    const CAP: usize = 64;

    fn add(&mut self, id: JobId) {
        if self.ids.len() < Self::CAP {
            self.ids.push(id);
        } else {
            self.ids[self.next] = id;
            self.next = (self.next + 1) % Self::CAP;
        }
    }

    fn pick(&self, rng: &mut SmallRng) -> Option<JobId> {
        (!self.ids.is_empty()).then(|| self.ids[rng.random_range(0..self.ids.len())])
    }
}

fn thread_loop(q: &Queue, log: &Path, seed: u64, worker: &str, pauser: bool, until: Instant) {
    let mut log = AckLog::create(log).unwrap_or_else(|e| {
        eprintln!("crash worker: cannot create {}: {e}", log.display());
        std::process::exit(3);
    });
    let mut rng = SmallRng::seed_from_u64(seed);
    let tenant = Scope::from_bytes([7; 16]);
    let mut held: Vec<Held> = Vec::new();
    let no_wait = LeaseOptions::default();
    let mut recent = Recent {
        ids: Vec::new(),
        next: 0,
    };
    let targets = pause_targets();
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
                        recent.add(e.id);
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
                            recent.add(e.id);
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
                            let extra = format!("{} {worker} {}", j.deadline, j.attempts);
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
            95 => {
                // Cancel: one of this thread's leases (a cancel request) or
                // a job it enqueued lately (whatever state it is in now).
                let id = if !held.is_empty() && rng.random_bool(0.4) {
                    Some(held[rng.random_range(0..held.len())].job.id)
                } else {
                    recent.pick(&mut rng)
                };
                if let Some(id) = id {
                    cancel(q, &mut log, &id);
                }
            }
            96 => {
                if let Some(id) = recent.pick(&mut rng) {
                    delete(q, &mut log, &id);
                }
            }
            98 if pauser => {
                let t = &targets[rng.random_range(0..targets.len())];
                // Resume more often than pause, so work is mostly leasable.
                pause_or_resume(q, &mut log, t, rng.random_bool(0.35));
            }
            99 if rng.random_bool(0.6) => match q.reap() {
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

fn cancel(q: &Queue, log: &mut AckLog, id: &JobId) {
    let ids = id.to_string();
    log.write('I', now_us(), &ids, 0, "cancel");
    match q.cancel(id, "crash harness cancel") {
        Ok(o) => {
            let extra = match o {
                CancelOutcome::Requested => "requested",
                _ => "cancelled",
            };
            log.write('K', now_us(), &ids, 0, extra);
        }
        // Finished already, or deleted by another thread.
        Err(e) if matches!(e.kind(), ErrorKind::WrongState | ErrorKind::NotFound) => {}
        Err(e) => fatal("cancel", e),
    }
}

/// The jobs this worker deleted. A lease held on one of them had expired
/// (or was cancelled) before the delete, so settling it answers `NotFound`:
/// a stale lease, like `Aborted`. Any other `NotFound` is a lost job.
static DELETED: LazyLock<Mutex<HashSet<JobId>>> = LazyLock::new(Default::default);

fn deleted_here(id: &JobId, e: &telha_jobs::Error) -> bool {
    e.kind() == ErrorKind::NotFound
        && DELETED
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(id)
}

fn delete(q: &Queue, log: &mut AckLog, id: &JobId) {
    let ids = id.to_string();
    log.write('I', now_us(), &ids, 0, "delete");
    match q.delete(id) {
        Ok(()) => {
            DELETED
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(*id);
            log.write('W', now_us(), &ids, 0, "")
        }
        // Leased (cancel it first), or deleted already.
        Err(e) if matches!(e.kind(), ErrorKind::WrongState | ErrorKind::NotFound) => {}
        Err(e) => fatal("delete", e),
    }
}

fn pause_or_resume(q: &Queue, log: &mut AckLog, t: &PauseTarget, pause: bool) {
    let label = t.label();
    let (what, tag) = if pause {
        ("pause", 'H')
    } else {
        ("resume", 'U')
    };
    log.write('I', now_us(), &label, 0, what);
    let r = if pause { q.pause(t) } else { q.resume(t) };
    match r {
        Ok(changed) => log.write(
            tag,
            now_us(),
            &label,
            0,
            if changed { "changed" } else { "same" },
        ),
        Err(e) => fatal(what, e),
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
        // Half the heartbeats carry progress (record tag 9), so kills land
        // on records that hold it too.
        let progress = (action % 2 == 0)
            .then(|| [&[1u8, 0xa3][..], format!("{action:03}").as_bytes()].concat());
        match q.heartbeat(&[tok], &[progress], worker) {
            Ok(mut v) => match v.pop() {
                Some(Ok(deadline)) => {
                    log.write('X', now_us(), &id, tok.generation, &deadline.to_string())
                }
                Some(Err(e)) if e.kind() == ErrorKind::Aborted || deleted_here(&tok.id, &e) => {
                    log.write('A', now_us(), &id, tok.generation, "extend");
                    held.swap_remove(i);
                }
                Some(Err(e)) if e.kind() == ErrorKind::Cancelled => {
                    // A cancel request: not renewed; the holder stops and
                    // settles (the job is recorded cancelled).
                    log.write('Y', now_us(), &id, tok.generation, "extend");
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
                        Err(e) if e.kind() == ErrorKind::Aborted || deleted_here(&h.job.id, &e) => {
                            log.push('A', t, &id, h.job.generation, "complete_many")
                        }
                        Err(e) if e.kind() == ErrorKind::Cancelled => {
                            log.push('N', t, &id, h.job.generation, "complete_many")
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
    } else if action < 95 {
        ("release", 'R', None)
    } else {
        ("snooze", 'Z', None)
    };
    log.write('S', now_us(), &id, tok.generation, what);
    let r = match (tag, result) {
        ('C', _) => q.complete(&tok, Some(b"done")),
        ('R', _) => q.release(&tok),
        ('Z', _) => q.snooze(&tok, Duration::from_millis(rng.random_range(0..200))),
        (_, Some(retryable)) => q.fail(&tok, "crash harness failure", retryable),
        _ => unreachable!("every action has a call"),
    };
    match r {
        Ok(()) => log.write(tag, now_us(), &id, tok.generation, ""),
        Err(e) if e.kind() == ErrorKind::Aborted || deleted_here(&tok.id, &e) => {
            log.write('A', now_us(), &id, tok.generation, what)
        }
        // A cancel was requested while it was held: recorded cancelled.
        Err(e) if e.kind() == ErrorKind::Cancelled => {
            log.write('N', now_us(), &id, tok.generation, what)
        }
        Err(e) => fatal(what, e),
    }
}
