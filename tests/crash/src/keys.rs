//! The job-keys crash test (issue 43): an owner process enqueues keyed
//! jobs on one thread (one at a time and in batches of 8, now and then
//! cancelling one it enqueued) while six threads lease them and complete,
//! fail (retryable or not), release or snooze them, and is SIGKILLed at
//! seeded instants. 36 keys, a third of the jobs on four hot keys: every
//! key under `key:*` concurrency 2, and the `ord-*` keys each under their
//! own `key:ord-N` ordered limit (concurrency 1, FIFO). Ordered sits on
//! the `key:<k>` targets because one on `key:*` would order every key and
//! leave the cap of 2 untested; the gate applies both targets alike.
//!
//! Logs, one file per thread and round (log.rs, one `write(2)` a record):
//! the enqueuer's `E 0 <id> <enqueue seq> <key>` after each enqueue
//! returned; a worker's `L <t> <id> <generation> <key>` after a lease
//! returned, `S` before its settle, then its outcome's tag.
//!
//! After every kill (the loop: driver.rs): `check()` is clean; every
//! acknowledged job is in the store with its key; no key had more leases
//! at once than its cap by the ack log's intervals (keys_check.rs), nor
//! has at the kill; each ordered key's jobs were first leased in enqueue
//! order; and `list(key)` (the `jkey/` index) pages exactly the
//! unfinished jobs carrying each key. Then the leases the killed owner
//! held are released, so the next round starts with every key free.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use telha_jobs::{
    Backoff, Config, EnqueueOptions, ErrorKind, JobId, LeaseOptions, LeaseToken, Limit,
    LimitTarget, ListQuery, NewJob, Queue, State,
};

use crate::driver::{kill_loop, Owner, Params};
use crate::keys_check::{self as kc};
use crate::log::{now_us, AckLog};

const KIND: &str = "crash:keyed";
const ORDERED: usize = 12;
const CAPPED: usize = 24;
const CAP: u32 = 2;
const WORKERS: usize = 6;

fn config(sync_writes: bool) -> Config {
    Config {
        lease_ttl: Duration::from_secs(30),
        reaper_interval: Duration::ZERO,
        max_attempts: 4,
        backoff: Backoff {
            base: Duration::from_millis(5),
            factor: 2.0,
            cap: Duration::from_millis(40),
        },
        completed_retention: None,
        dead_retention: None,
        cancelled_retention: None,
        sync_writes,
        ..Config::default()
    }
}

fn is_ordered(key: &str) -> bool {
    key.starts_with("ord-")
}

fn cap_of(key: &str) -> u32 {
    if is_ordered(key) {
        1
    } else {
        CAP
    }
}

/// Key `i` (mod 36): `ord-0`.. then `cap-0`..; a third of the draws go
/// to the hot four (`ord-0`, `ord-1`, `cap-0`, `cap-1`).
fn draw_key(rng: &mut SmallRng) -> String {
    let i = if rng.random_bool(1.0 / 3.0) {
        [0, 1, ORDERED, ORDERED + 1][rng.random_range(0..4usize)]
    } else {
        rng.random_range(0..ORDERED + CAPPED)
    };
    if i < ORDERED {
        format!("ord-{i}")
    } else {
        format!("cap-{}", i - ORDERED)
    }
}

/// The owner process: enqueue on one thread, lease and settle on six,
/// until killed.
pub fn owner(store: &Path, logs: &Path, round: u32, seed: u64, sync_writes: bool, max_secs: u64) {
    let q = Queue::open(store, config(sync_writes)).expect("open the store");
    let until = Instant::now() + Duration::from_secs(max_secs);
    std::thread::scope(|s| {
        let q = &q;
        let path = logs.join(format!("r{round:04}-e.log"));
        s.spawn(move || {
            let mut log = AckLog::create(&path).expect("create the log");
            let mut rng = SmallRng::seed_from_u64(seed ^ u64::from(round));
            let mut recent: Vec<JobId> = Vec::new();
            let mut seq = u64::from(round) << 32;
            let mut i = 0u64;
            while Instant::now() < until {
                i += 1;
                let s = q.stats().expect("stats").total;
                if s.pending + s.failed > 1_500 {
                    std::thread::sleep(Duration::from_millis(5));
                    continue;
                }
                let n = if i.is_multiple_of(4) { 8 } else { 1 };
                let jobs: Vec<NewJob> = (0..n)
                    .map(|_| {
                        let key = draw_key(&mut rng);
                        NewJob::new(KIND, b"x".to_vec()).with(EnqueueOptions::default().key(key))
                    })
                    .collect();
                let keys: Vec<String> = jobs
                    .iter()
                    .map(|j| j.options.key.clone().unwrap())
                    .collect();
                let got = if n == 1 {
                    let j = jobs.into_iter().next().expect("one job");
                    vec![q.enqueue(KIND, &j.payload, j.options).expect("enqueue")]
                } else {
                    q.enqueue_many(jobs).expect("enqueue_many")
                };
                for (e, key) in got.iter().zip(&keys) {
                    log.push('E', 0, &e.id.to_string(), seq, key);
                    seq += 1;
                    recent.push(e.id);
                }
                log.flush();
                if recent.len() > 64 {
                    recent.drain(..recent.len() - 64);
                }
                if i.is_multiple_of(10) {
                    let id = recent[rng.random_range(0..recent.len())];
                    match q.cancel(&id, "crash keys") {
                        Ok(_) => {}
                        Err(e) if e.kind() == ErrorKind::WrongState => {}
                        Err(e) => panic!("cancel {id}: {e}"),
                    }
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        });
        for t in 0..WORKERS {
            let path = logs.join(format!("r{round:04}-w{t}.log"));
            s.spawn(move || work(q, &path, round, seed, t, until));
        }
    });
    q.close();
}

/// One worker thread: lease, hold 0 to 2 ms, settle one of five ways.
fn work(q: &Queue, path: &Path, round: u32, seed: u64, t: usize, until: Instant) {
    let mut log = AckLog::create(path).expect("create the log");
    let mut rng = SmallRng::seed_from_u64(seed ^ (u64::from(round) << 8) ^ t as u64);
    let opts = LeaseOptions::default().kind(KIND).expect("kind");
    let worker = format!("keys-owner-{t}");
    while Instant::now() < until {
        let Some(job) = q.lease_next(&worker, &opts).expect("lease") else {
            std::thread::sleep(Duration::from_millis(1));
            continue;
        };
        let (id, g) = (job.id.to_string(), job.generation);
        let key = job.key.clone().unwrap_or_default();
        log.write('L', now_us(), &id, g, &key);
        std::thread::sleep(Duration::from_micros(rng.random_range(0..2_000)));
        let tok = job.token();
        let (what, tag) = match rng.random_range(0..20u32) {
            0..=9 => ("complete", 'C'),
            10..=12 => ("fail", 'F'),
            13..=14 => ("fail-dead", 'D'),
            15..=17 => ("release", 'R'),
            _ => ("snooze", 'Z'),
        };
        log.write('S', now_us(), &id, g, what);
        let r = match what {
            "complete" => q.complete(&tok, Some(b"ok")),
            "fail" => q.fail(&tok, "again", true),
            "fail-dead" => q.fail(&tok, "boom", false),
            "release" => q.release(&tok),
            _ => q.snooze(&tok, Duration::from_millis(3)),
        };
        match r {
            Ok(()) => log.write(tag, now_us(), &id, g, ""),
            Err(e) if e.kind() == ErrorKind::Cancelled => log.write('N', now_us(), &id, g, what),
            Err(e) => panic!("{what} {id}: {e}"),
        }
    }
}

/// What the harness has read of the logs so far.
#[derive(Default)]
struct Ledger {
    /// Acknowledged job → (enqueue seq, key).
    acked: BTreeMap<JobId, (u64, String)>,
    /// Job → (first acknowledged lease, key).
    first: BTreeMap<JobId, (u64, String)>,
    leases: usize,
    /// The highest overlap seen: (ordered keys, capped keys).
    peak: (u32, u32),
}

/// Kill the owner `kills` times, checking keys after each kill.
pub fn run(p: &Params) -> (u32, u32) {
    let logs = p.base.join("logs");
    std::fs::create_dir_all(&logs).expect("log dir");
    let q = Queue::open(p.store(), config(p.sync_writes)).expect("open the store");
    q.set_limit(&LimitTarget::EachKey, Limit::concurrency(CAP))
        .expect("key:* limit");
    for i in 0..ORDERED {
        q.set_limit(&LimitTarget::Key(format!("ord-{i}")), Limit::ordered())
            .expect("ordered limit");
    }
    q.close();
    let started = Instant::now();
    let mut ledger = Ledger::default();
    let seed = p.seed;
    let owner = Owner {
        cmd: "keys-owner",
        args: &|round| {
            vec![
                "--logs".into(),
                logs.display().to_string(),
                "--round".into(),
                round.to_string(),
                "--seed".into(),
                seed.to_string(),
            ]
        },
        salt: 0x6b65_7973,
        max_ms: 700,
        config: config(p.sync_writes),
        runs_until_killed: true,
    };
    let checks = kill_loop(p, &owner, |q, round, ms, checks| {
        let read = read_round(&logs, round, &mut ledger);
        let leases = match read {
            Ok(l) => l,
            Err(e) => {
                checks.check(&format!("kill {round}: the ack logs read"), Err(e));
                return;
            }
        };
        checks.check(
            &format!("kill {round} after {ms} ms: no key over its cap in the ack log's leases"),
            kc::within_caps(&leases, cap_of),
        );
        let seq = ledger.acked.iter().map(|(id, (s, _))| (*id, *s)).collect();
        checks.check(
            &format!("kill {round}: ordered keys first leased in enqueue order"),
            kc::in_enqueue_order(&ledger.first, &seq, is_ordered).map(drop),
        );
        checks.check(
            &format!("kill {round}: acknowledged jobs kept their keys; list(key) is each key's unfinished jobs"),
            verify(q, &ledger.acked),
        );
        checks.check(
            &format!("kill {round}: leases the owner held handed back"),
            hand_back(q),
        );
    });
    println!(
        "keys crash ({} sync): {} kills over {:.1} s, {} jobs acknowledged, {} leases acknowledged, \
         most held at once: {} per ordered key (cap 1), {} per capped key (cap {CAP})",
        p.sync_label(),
        p.kills,
        started.elapsed().as_secs_f64(),
        ledger.acked.len(),
        ledger.leases,
        ledger.peak.0,
        ledger.peak.1
    );
    checks.done()
}

/// Read round `round`'s logs (only whole lines: a SIGKILL can cut each
/// file's last write short) into `ledger`; answer the round's leases.
fn read_round(logs: &Path, round: u32, ledger: &mut Ledger) -> Result<Vec<kc::Lease>, String> {
    let mut workers = Vec::new();
    for name in std::iter::once("e".to_string()).chain((0..WORKERS).map(|t| format!("w{t}"))) {
        let text = std::fs::read_to_string(logs.join(format!("r{round:04}-{name}.log")))
            .unwrap_or_default();
        let (records, torn) = crate::log::parse(&text);
        if torn > 1 {
            return Err(format!("round {round} {name}: {torn} malformed ack lines"));
        }
        for r in records {
            if r.tag == 'E' {
                let id: JobId = r.id.parse().map_err(|e| format!("{r:?}: {e}"))?;
                ledger.acked.insert(id, (r.generation, r.extra));
            } else {
                workers.push(r);
            }
        }
    }
    let leases = kc::leases(&workers)?;
    ledger.leases += leases.len();
    for l in &leases {
        ledger
            .first
            .entry(l.id)
            .and_modify(|f| f.0 = f.0.min(l.from))
            .or_insert((l.from, l.key.clone()));
    }
    for (key, (peak, _)) in kc::peaks(&leases) {
        let slot = if is_ordered(&key) {
            &mut ledger.peak.0
        } else {
            &mut ledger.peak.1
        };
        *slot = (*slot).max(peak);
    }
    Ok(leases)
}

/// Pages of `query` until the end.
fn all(q: &Queue, mut query: ListQuery) -> Result<Vec<telha_jobs::JobInfo>, String> {
    let mut out = Vec::new();
    loop {
        let page = q.list(&query).map_err(|e| e.to_string())?;
        if !page.corrupt.is_empty() {
            return Err(format!("list reports corrupt rows: {:?}", page.corrupt));
        }
        out.extend(page.jobs);
        match page.next {
            Some(n) => query.after = Some(n),
            None => return Ok(out),
        }
    }
}

fn unfinished(s: State) -> bool {
    !s.is_terminal()
}

/// Every acknowledged job with its key; no key above its cap now; under
/// each key, `list(key)` pages exactly its unfinished jobs, each once.
fn verify(q: &Queue, acked: &BTreeMap<JobId, (u64, String)>) -> Result<(), String> {
    let jobs = all(
        q,
        ListQuery {
            limit: 10_000,
            ..ListQuery::default()
        },
    )?;
    let mut key_of = BTreeMap::new();
    let mut live: BTreeMap<String, BTreeSet<JobId>> = BTreeMap::new();
    let mut leased: BTreeMap<String, u32> = BTreeMap::new();
    for j in &jobs {
        let k = j
            .key
            .clone()
            .ok_or_else(|| format!("job {} has no key", j.id))?;
        if unfinished(j.state) {
            live.entry(k.clone()).or_default().insert(j.id);
        }
        if j.state == State::Leased {
            *leased.entry(k.clone()).or_default() += 1;
        }
        key_of.insert(j.id, k);
    }
    for (id, (_, want)) in acked {
        match key_of.get(id) {
            None => return Err(format!("acknowledged job {id} is not in the store")),
            Some(k) if k != want => {
                return Err(format!("job {id} carries key {k:?}, was given {want:?}"))
            }
            Some(_) => {}
        }
    }
    if let Some((k, n)) = leased.iter().find(|(k, n)| **n > cap_of(k)) {
        return Err(format!(
            "key {k:?} has {n} jobs leased at the kill, cap {}",
            cap_of(k)
        ));
    }
    let keys: BTreeSet<&String> = key_of.values().collect();
    for key in keys {
        let listed: Vec<JobId> = all(
            q,
            ListQuery {
                key: Some(key.clone()),
                limit: 500,
                ..ListQuery::default()
            },
        )?
        .iter()
        .map(|j| j.id)
        .collect();
        let set: BTreeSet<JobId> = listed.iter().copied().collect();
        if set.len() != listed.len() {
            return Err(format!("list(key={key}) repeats a job"));
        }
        let want = live.get(key).cloned().unwrap_or_default();
        if set != want {
            return Err(format!(
                "list(key={key}) has {} jobs, {} unfinished jobs carry it (missing {:?}, extra {:?})",
                set.len(),
                want.len(),
                want.difference(&set).next(),
                set.difference(&want).next()
            ));
        }
    }
    Ok(())
}

/// Release every lease the killed owner held (its TTL is 30 s), so each
/// round starts with every key free and the ledger's rounds do not mix.
fn hand_back(q: &Queue) -> Result<(), String> {
    let held = all(
        q,
        ListQuery {
            state: Some(State::Leased),
            limit: 10_000,
            ..ListQuery::default()
        },
    )?;
    for j in held {
        let tok = LeaseToken {
            id: j.id,
            generation: j.generation,
        };
        match q.release(&tok) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::Cancelled => {}
            Err(e) => return Err(format!("release {tok}: {e}")),
        }
    }
    Ok(())
}
