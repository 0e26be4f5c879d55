//! The main job, end to end, on the embedded default store (`$TELHA_DB`, else
//! `./telha-data`): producers enqueue, workers lease and heartbeat and
//! complete, one worker dies mid-job and the reaper gives its job to another,
//! one poison job is dead-lettered, then the stats and metrics.
//!
//! `make demo` runs it.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use telha_jobs::{
    Backoff, Config, EnqueueOptions, KindConfig, LeaseOptions, NewJob, Queue, Scope, State,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = telha_jobs::default_store_path();
    // Short timings so the demo shows a lease expiring within seconds.
    let mut cfg = Config {
        lease_ttl: Duration::from_secs(2),
        reaper_interval: Duration::from_millis(250),
        backoff: Backoff {
            base: Duration::from_millis(300),
            factor: 2.0,
            cap: Duration::from_secs(2),
        },
        ..Config::default()
    };
    cfg.kinds.insert(
        "ingest:corrupt".into(),
        KindConfig {
            max_attempts: Some(3),
            ..Default::default()
        },
    );
    let q = Queue::open(&path, cfg)?;
    println!("store: {}", path.display());

    // Every run gets its own tenant scope, so its numbers are its own.
    let scope = Scope::from_uuid(uuid::Uuid::new_v4());
    let opts = EnqueueOptions::default().scope(scope);
    let producers: Vec<_> = ["ingest:pdf", "embed"]
        .into_iter()
        .map(|kind| {
            let (q, opts) = (q.clone(), opts.clone());
            std::thread::spawn(move || {
                let jobs = (0..200)
                    .map(|i| {
                        NewJob::new(kind, format!("{kind} #{i}").into_bytes()).with(opts.clone())
                    })
                    .collect();
                q.enqueue_many(jobs).map(|v| v.len())
            })
        })
        .collect();
    let poison = q
        .enqueue("ingest:corrupt", b"\xff not a pdf", opts.clone())?
        .id;
    let mut enqueued = 1;
    for p in producers {
        enqueued += p.join().expect("producer")?;
    }
    println!("enqueued {enqueued} jobs in scope {scope}");

    // A worker that dies mid-job: it leases, then stops (no heartbeat, no submit).
    let lease = LeaseOptions::default().scope(scope);
    let doomed = q
        .lease_next("worker-doomed", &lease.clone().kind("embed")?)?
        .expect("work is ready");
    println!(
        "worker-doomed leased {} ({}) and died",
        doomed.id, doomed.kind
    );

    let done = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (1..=3)
        .map(|n| {
            let (q, lease, done, stop) = (q.clone(), lease.clone(), done.clone(), stop.clone());
            std::thread::spawn(move || -> telha_jobs::Result<()> {
                let me = format!("worker-{n}");
                let opts = lease.wait(Duration::from_millis(200));
                while !stop.load(Ordering::SeqCst) {
                    let Some(job) = q.lease_next(&me, &opts)? else {
                        continue;
                    };
                    if job.kind == "ingest:corrupt" {
                        q.fail(&job.token(), "cannot parse PDF header", true)?;
                        continue;
                    }
                    std::thread::sleep(Duration::from_millis(2)); // the work
                    q.extend(&[job.token()], &me)?; // a heartbeat
                    let result = format!("{} bytes processed", job.payload.len());
                    q.complete(&job.token(), Some(result.as_bytes()))?;
                    done.fetch_add(1, Ordering::SeqCst);
                }
                Ok(())
            })
        })
        .collect();

    let started = Instant::now();
    loop {
        let dead = q.get(&poison)?.is_some_and(|j| j.state == State::Dead);
        if done.load(Ordering::SeqCst) == enqueued - 1 && dead {
            break;
        }
        if started.elapsed() > Duration::from_secs(60) {
            return Err("demo did not finish within 60 s".into());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    stop.store(true, Ordering::SeqCst);
    for w in workers {
        w.join().expect("worker")?;
    }
    println!(
        "all {} good jobs completed in {:.1} s",
        enqueued - 1,
        started.elapsed().as_secs_f64()
    );

    for (what, id) in [
        ("the dead worker's job", doomed.id),
        ("the poison job", poison),
    ] {
        let j = q.get(&id)?.expect("job exists");
        println!(
            "\n{what} {id}: {}, {} failed attempt(s)",
            j.state, j.attempts
        );
        for e in &j.events {
            let at = e.ts.saturating_sub(j.created_at) as f64 / 1000.0;
            println!("  +{at:>6.3}s  {:<14} {}", e.transition, e.detail);
        }
    }

    // The dead worker's stale token is fenced off.
    match q.complete(&doomed.token(), None) {
        Err(e) => println!("\nworker-doomed comes back and submits: {e}"),
        Ok(()) => return Err("a stale token was accepted".into()),
    }

    println!("\nstats (whole store):");
    let stats = q.stats()?;
    for (kind, c) in &stats.by_kind {
        println!(
            "  {kind:<16} pending {:>5} leased {:>3} failed {:>3} completed {:>6} dead {:>3}",
            c.pending, c.leased, c.failed, c.completed, c.dead
        );
    }
    println!(
        "\nmetrics (what a host serves on /metrics):\n{}",
        q.metrics()?
    );
    q.close();
    Ok(())
}
