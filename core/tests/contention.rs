//! Zero double leases under contention, checked against a ledger kept
//! outside the queue.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use telha_jobs::{
    Config, EnqueueOptions, ErrorKind, Job, JobId, LeaseOptions, ManualClock, NewJob, Queue,
};

fn config() -> Config {
    Config {
        reaper_interval: Duration::ZERO,
        ..Config::default()
    }
}

/// Who holds what, and how often each job was leased and completed.
#[derive(Default)]
struct Ledger {
    held: Mutex<HashSet<JobId>>,
    leases: Mutex<HashMap<JobId, u32>>,
    completions: Mutex<HashMap<JobId, u32>>,
    violations: Mutex<Vec<String>>,
}

impl Ledger {
    fn take(&self, job: &Job) {
        if !self.held.lock().unwrap().insert(job.id) {
            self.violations
                .lock()
                .unwrap()
                .push(format!("{} leased while held", job.id));
        }
        *self.leases.lock().unwrap().entry(job.id).or_default() += 1;
    }
    fn done(&self, id: JobId) {
        *self.completions.lock().unwrap().entry(id).or_default() += 1;
        self.held.lock().unwrap().remove(&id);
    }
}

fn enqueue_all(q: &Queue, kinds: &[&str], n: usize) -> HashSet<JobId> {
    let mut ids = HashSet::with_capacity(n);
    for chunk in 0..n / 1000 {
        let batch: Vec<NewJob> = (0..1000)
            .map(|i| {
                let k = kinds[(chunk * 1000 + i) % kinds.len()];
                NewJob::new(k, format!("job-{}", chunk * 1000 + i).into_bytes())
            })
            .collect();
        for e in q.enqueue_many(batch).unwrap() {
            assert!(e.created);
            ids.insert(e.id);
        }
    }
    assert_eq!(ids.len(), n);
    ids
}

fn run_pollers(q: &Queue, ledger: &Arc<Ledger>, filters: Vec<Option<&'static str>>, total: usize) {
    let completed = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = filters
        .into_iter()
        .enumerate()
        .map(|(t, filter)| {
            let (q, ledger, completed) = (q.clone(), ledger.clone(), completed.clone());
            std::thread::spawn(move || {
                let worker = format!("w{t}");
                let mut opts = LeaseOptions::default();
                if let Some(k) = filter {
                    opts = opts.kind(k).unwrap();
                }
                let mut idle = 0;
                while completed.load(Ordering::SeqCst) < total && idle < 20_000 {
                    let jobs = if t % 2 == 0 {
                        q.lease_next(&worker, &opts).unwrap().into_iter().collect()
                    } else {
                        q.lease_many(&worker, 16, &opts).unwrap()
                    };
                    if jobs.is_empty() {
                        idle += 1;
                        std::thread::yield_now();
                        continue;
                    }
                    idle = 0;
                    for j in &jobs {
                        ledger.take(j);
                    }
                    for j in jobs {
                        ledger.done(j.id);
                        q.complete(&j.token(), Some(b"ok")).unwrap();
                        completed.fetch_add(1, Ordering::SeqCst);
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

fn assert_exactly_once(ledger: &Ledger, ids: &HashSet<JobId>) {
    let v = ledger.violations.lock().unwrap();
    assert!(v.is_empty(), "double leases: {:?}", &v[..v.len().min(10)]);
    let leases = ledger.leases.lock().unwrap();
    let completions = ledger.completions.lock().unwrap();
    assert_eq!(leases.len(), ids.len(), "every job leased");
    assert!(leases.values().all(|n| *n == 1), "a job was leased twice");
    assert_eq!(completions.len(), ids.len(), "every job completed");
    assert!(
        completions.values().all(|n| *n == 1),
        "a job was completed twice"
    );
    assert!(ids.iter().all(|id| completions.contains_key(id)));
}

#[test]
fn eight_pollers_over_100k_jobs_lease_each_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let q = Queue::open(dir.path(), config()).unwrap();
    let ids = enqueue_all(&q, &["embed"], 100_000);
    let ledger = Arc::new(Ledger::default());
    run_pollers(&q, &ledger, vec![None; 8], ids.len());
    assert_exactly_once(&ledger, &ids);
    let stats = q.stats().unwrap();
    assert_eq!(stats.total.completed, 100_000);
    assert_eq!(stats.total.pending + stats.total.leased, 0);
    let report = q.check().unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}

/// Pollers that find jobs through the kind index and pollers that find them
/// through the jobs rows race for the same rows.
#[test]
fn kind_filtered_and_unfiltered_pollers_never_share_a_job() {
    let dir = tempfile::tempdir().unwrap();
    let q = Queue::open(dir.path(), config()).unwrap();
    let ids = enqueue_all(&q, &["ingest:pdf", "embed", "ingest:html"], 30_000);
    let ledger = Arc::new(Ledger::default());
    let filters = vec![
        None,
        Some("ingest:*"),
        None,
        Some("embed"),
        Some("ingest:pdf"),
        None,
        Some("ingest:*"),
        None,
    ];
    run_pollers(&q, &ledger, filters, ids.len());
    assert_exactly_once(&ledger, &ids);
    let report = q.check().unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}

/// Leases expire while workers are still working (a reaper thread moves the
/// clock past every TTL): jobs run more than once, but fencing lets exactly
/// one attempt per job complete, and every stale attempt is told `Aborted`.
#[test]
fn with_leases_expiring_under_load_exactly_one_completion_per_job_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let cfg = Config {
        reaper_interval: Duration::ZERO,
        max_attempts: 1000,
        backoff: telha_jobs::Backoff {
            base: Duration::from_millis(1),
            factor: 1.0,
            cap: Duration::from_millis(1),
        },
        lease_ttl: Duration::from_secs(1),
        ..Config::default()
    };
    let q = Queue::open_with_clock(dir.path(), cfg, clock.clone()).unwrap();
    let total = 5_000;
    let ids: HashSet<JobId> = (0..total)
        .map(|i| {
            q.enqueue(
                "embed",
                format!("{i}").as_bytes(),
                EnqueueOptions::default(),
            )
            .unwrap()
            .id
        })
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let reaper = {
        let (q, clock, stop) = (q.clone(), clock.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut expired = 0;
            while !stop.load(Ordering::SeqCst) {
                clock.advance(Duration::from_millis(400));
                expired += q.reap().unwrap().expired;
                std::thread::sleep(Duration::from_micros(200));
            }
            expired
        })
    };
    let successes = Arc::new(Mutex::new(HashMap::<JobId, u32>::new()));
    let aborted = Arc::new(AtomicUsize::new(0));
    let workers: Vec<_> = (0..6)
        .map(|t| {
            let (q, successes, aborted) = (q.clone(), successes.clone(), aborted.clone());
            std::thread::spawn(move || {
                // Give up only after 60 s without a lease (a loaded CI
                // machine may starve the reaper thread for a while).
                let mut last = std::time::Instant::now();
                while successes.lock().unwrap().len() < total
                    && last.elapsed() < Duration::from_secs(60)
                {
                    let Some(job) = q
                        .lease_next(&format!("w{t}"), &LeaseOptions::default())
                        .unwrap()
                    else {
                        std::thread::yield_now();
                        continue;
                    };
                    last = std::time::Instant::now();
                    if job.attempts % 3 == 1 {
                        std::thread::yield_now(); // a slow worker
                    }
                    match q.complete(&job.token(), None) {
                        Ok(()) => *successes.lock().unwrap().entry(job.id).or_default() += 1,
                        Err(e) if e.kind() == ErrorKind::Aborted => {
                            aborted.fetch_add(1, Ordering::SeqCst);
                        }
                        Err(e) => panic!("unexpected {e}"),
                    }
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    stop.store(true, Ordering::SeqCst);
    let expired = reaper.join().unwrap();
    let successes = successes.lock().unwrap();
    if successes.len() != total {
        for id in ids.iter().filter(|id| !successes.contains_key(id)).take(5) {
            eprintln!("never completed: {:#?}", q.get(id));
        }
        eprintln!("stats: {:?}", q.stats());
        eprintln!("check: {:?}", q.check().map(|r| r.problems));
    }
    assert_eq!(successes.len(), total, "every job completed");
    assert!(successes.values().all(|n| *n == 1), "a job completed twice");
    assert!(successes.keys().all(|id| ids.contains(id)));
    assert_eq!(q.stats().unwrap().total.completed, total as u64);
    eprintln!(
        "expired leases: {expired}, stale completions aborted: {}",
        aborted.load(Ordering::SeqCst)
    );
    let report = q.check().unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}
