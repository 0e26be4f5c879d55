//! Pollers through a `ClusterQueue`, and the ledger that checks them:
//! every job completed exactly once, no lease generation handed out twice.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use telha_jobs::{EnqueueOptions, JobId, LeaseOptions, NewJob};
use telha_jobs_cluster::client::ClusterQueue;

#[derive(Default)]
pub struct Ledger {
    /// Per job: every (generation, worker) it was leased under.
    pub leases: Mutex<HashMap<JobId, Vec<(u64, String)>>>,
    /// Per job: completions acknowledged `Ok`.
    pub completed: Mutex<HashMap<JobId, u32>>,
    pub done: AtomicU64,
    /// Calls that failed for good (after the queue's retries).
    pub errors: Mutex<Vec<String>>,
}

/// Enqueue `n` jobs in keyed batches of 100 (repeats are deduplicated).
pub fn enqueue_keyed(q: &ClusterQueue, prefix: &str, n: usize) -> Vec<JobId> {
    let mut ids = Vec::with_capacity(n);
    for chunk in (0..n).collect::<Vec<_>>().chunks(100) {
        let jobs = chunk
            .iter()
            .map(|i| NewJob {
                kind: "work".into(),
                payload: i.to_le_bytes().to_vec(),
                options: EnqueueOptions {
                    idempotency_key: Some(format!("{prefix}-{i}")),
                    ..Default::default()
                },
            })
            .collect();
        ids.extend(q.enqueue_many(jobs).unwrap().into_iter().map(|e| e.id));
    }
    ids
}

/// `workers` pollers lease and complete until `total` completions are
/// acknowledged (or `within` passes). Returns once all stopped.
pub fn run_pollers(q: &ClusterQueue, workers: usize, total: u64, within: Duration) -> Arc<Ledger> {
    let ledger = Arc::new(Ledger::default());
    let end = Instant::now() + within;
    let threads: Vec<_> = (0..workers)
        .map(|w| {
            let (q, ledger) = (q.clone(), ledger.clone());
            std::thread::spawn(move || poll(&q, &ledger, &format!("w{w}"), total, end))
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    ledger
}

fn poll(q: &ClusterQueue, ledger: &Ledger, me: &str, total: u64, end: Instant) {
    let opts = LeaseOptions::default();
    while ledger.done.load(Ordering::Acquire) < total && Instant::now() < end {
        match q.lease_next(me, &opts) {
            Ok(Some(job)) => {
                ledger
                    .leases
                    .lock()
                    .unwrap()
                    .entry(job.id)
                    .or_default()
                    .push((job.generation, me.to_string()));
                match q.complete(&job.token(), None) {
                    Ok(()) => {
                        *ledger.completed.lock().unwrap().entry(job.id).or_default() += 1;
                        ledger.done.fetch_add(1, Ordering::AcqRel);
                    }
                    Err(e) => ledger
                        .errors
                        .lock()
                        .unwrap()
                        .push(format!("{me}: complete {}: {e}", job.token())),
                }
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => ledger
                .errors
                .lock()
                .unwrap()
                .push(format!("{me}: lease: {e}")),
        }
    }
}

impl Ledger {
    /// Every job of `ids` completed exactly once, nothing else completed,
    /// no generation of any job leased twice, no call failed for good.
    pub fn assert_exactly_once(&self, ids: &[JobId]) {
        let errors = self.errors.lock().unwrap();
        assert!(
            errors.is_empty(),
            "calls failed: {:?}",
            &errors[..errors.len().min(10)]
        );
        let completed = self.completed.lock().unwrap();
        for id in ids {
            assert_eq!(completed.get(id), Some(&1), "job {id} completions");
        }
        assert_eq!(completed.len(), ids.len(), "completed jobs");
        let leases = self.leases.lock().unwrap();
        let mut relet = 0;
        for (id, ls) in leases.iter() {
            let mut gens: Vec<u64> = ls.iter().map(|l| l.0).collect();
            gens.sort();
            gens.dedup();
            assert_eq!(gens.len(), ls.len(), "job {id} double-leased: {ls:?}");
            relet += ls.len() - 1;
        }
        eprintln!(
            "ledger: {} jobs completed once each; {relet} leases re-granted after a lost lease \
             reply or an expiry; no generation leased twice",
            ids.len()
        );
    }
}
