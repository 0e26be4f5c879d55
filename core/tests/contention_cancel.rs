//! Cancels racing pollers: 8 pollers over 100,000 jobs while another
//! thread cancels a random 10 % of them. Every job ends exactly once, as
//! completed or as cancelled, never both and never lost, and the counters
//! equal a full scan.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use telha_jobs::{CancelOutcome, Config, ErrorKind, JobId, LeaseOptions, NewJob, Queue, State};

const JOBS: usize = 100_000;

#[test]
fn eight_pollers_and_a_canceller_end_every_job_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = Config {
        reaper_interval: Duration::ZERO,
        ..Config::default()
    };
    let q = Queue::open(dir.path(), cfg).unwrap();
    let mut ids: Vec<JobId> = Vec::with_capacity(JOBS);
    for chunk in 0..JOBS / 1000 {
        let batch: Vec<NewJob> = (0..1000)
            .map(|i| NewJob::new("embed", format!("{}", chunk * 1000 + i).into_bytes()))
            .collect();
        ids.extend(q.enqueue_many(batch).unwrap().into_iter().map(|e| e.id));
    }
    // Completions the queue accepted, and cancels it reported, per job.
    let completed_ok: Arc<Mutex<Vec<JobId>>> = Arc::default();
    let told_cancelled: Arc<Mutex<Vec<JobId>>> = Arc::default();
    let finished = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));

    let canceller = {
        let (q, stop) = (q.clone(), stop.clone());
        // A fixed pseudo-random 10 % (xorshift), cancelled in random order.
        let mut pick: Vec<JobId> = Vec::new();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for id in &ids {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if x.is_multiple_of(10) {
                pick.push(*id);
            }
        }
        for i in (1..pick.len()).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            pick.swap(i, (x % (i as u64 + 1)) as usize);
        }
        std::thread::spawn(move || {
            let (mut now, mut requested, mut too_late) = (0, 0, 0);
            for id in pick {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                match q.cancel(&id, "random") {
                    Ok(CancelOutcome::Cancelled) => now += 1,
                    Ok(_) => requested += 1,
                    Err(e) if e.kind() == ErrorKind::WrongState => too_late += 1,
                    Err(e) => panic!("cancel: {e}"),
                }
            }
            (now, requested, too_late)
        })
    };

    let pollers: Vec<_> = (0..8)
        .map(|t| {
            let (q, ok, told, finished) = (
                q.clone(),
                completed_ok.clone(),
                told_cancelled.clone(),
                finished.clone(),
            );
            std::thread::spawn(move || {
                let w = format!("w{t}");
                let mut idle = 0;
                while idle < 2000 {
                    let jobs = q.lease_many(&w, 8, &LeaseOptions::default()).unwrap();
                    if jobs.is_empty() {
                        idle += 1;
                        std::thread::sleep(Duration::from_micros(200));
                        continue;
                    }
                    idle = 0;
                    // Hold the leases a moment: cancels meet leased jobs too.
                    std::thread::sleep(Duration::from_micros(100));
                    for j in jobs {
                        match q.complete(&j.token(), Some(b"ok")) {
                            Ok(()) => ok.lock().unwrap().push(j.id),
                            Err(e) if e.kind() == ErrorKind::Cancelled => {
                                told.lock().unwrap().push(j.id)
                            }
                            Err(e) => panic!("complete: {e}"),
                        }
                        finished.fetch_add(1, Ordering::SeqCst);
                    }
                }
            })
        })
        .collect();
    for p in pollers {
        p.join().unwrap();
    }
    stop.store(true, Ordering::SeqCst);
    let (now, requested, too_late) = canceller.join().unwrap();

    let ok: HashSet<JobId> = completed_ok.lock().unwrap().iter().copied().collect();
    let told: HashSet<JobId> = told_cancelled.lock().unwrap().iter().copied().collect();
    assert_eq!(
        ok.len(),
        completed_ok.lock().unwrap().len(),
        "a job completed twice"
    );
    assert!(ok.is_disjoint(&told), "a job both completed and cancelled");
    assert_eq!(
        told.len() as u64,
        requested,
        "each request answered its holder once"
    );
    let (mut completed, mut cancelled) = (0u64, 0u64);
    for id in &ids {
        let info = q.get(id).unwrap().expect("no job is lost");
        match info.state {
            State::Completed => {
                assert!(ok.contains(id), "completed without an accepted complete");
                completed += 1;
            }
            State::Cancelled => {
                assert!(!ok.contains(id), "cancelled after an accepted complete");
                cancelled += 1;
            }
            other => panic!("job {id} ended {other}"),
        }
    }
    assert_eq!(completed + cancelled, JOBS as u64);
    assert_eq!(cancelled, now + requested);
    assert_eq!(completed, ok.len() as u64);
    assert!(now + requested + too_late > 0);
    let st = q.stats().unwrap();
    assert_eq!(
        (st.total.completed, st.total.cancelled),
        (completed, cancelled)
    );
    let report = q.check().unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    println!(
        "cancelled at once {now}, by request {requested}, too late {too_late}; completed {completed}"
    );
}
