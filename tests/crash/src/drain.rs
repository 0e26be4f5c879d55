//! The end of a `run`: after the last kill, everything paused is resumed,
//! the dead workers' leases expire and every job not dead or cancelled
//! drains to completed; then the checks run once more.

use std::path::Path;
use std::time::{Duration, Instant};

use telha_jobs::{LeaseOptions, Queue};

use crate::{check, check_config, log, worker};

pub fn drain(
    store: &Path,
    sync_writes: bool,
    h: &mut check::History,
    round: u32,
) -> check::Outcome {
    let name = "after the last kill, every job not dead or cancelled drains to completed";
    let mut failures = Vec::new();
    let q = match Queue::open(store, check_config(sync_writes)) {
        Ok(q) => q,
        Err(e) => {
            return check::Outcome {
                name,
                failures: vec![e.to_string()],
            }
        }
    };
    // Resume what the workers left paused, recorded as they record theirs.
    let mut resumed = Vec::new();
    for t in worker::pause_targets() {
        match q.resume(&t) {
            Ok(_) => resumed.push(log::Record {
                tag: 'U',
                t_us: log::now_us(),
                id: t.label(),
                generation: 0,
                extra: "drain".into(),
            }),
            Err(e) => failures.push(format!("drain resume {}: {e}", t.label())),
        }
    }
    h.add(round, resumed, 0);
    let until = Instant::now() + Duration::from_secs(30);
    let opts = LeaseOptions {
        wait: Some(Duration::from_millis(50)),
        ..LeaseOptions::default()
    };
    loop {
        let s = match q.stats() {
            Ok(s) => s.total,
            Err(e) => {
                failures.push(e.to_string());
                break;
            }
        };
        if s.pending + s.leased + s.failed == 0 {
            break;
        }
        if Instant::now() > until {
            failures.push(format!("not drained after 30 s: {s:?}"));
            break;
        }
        if let Err(e) = q.reap() {
            failures.push(format!("drain reap: {e}"));
        }
        match q.lease_many("drain", 1000, &opts) {
            Ok(jobs) => {
                let items = jobs.iter().map(|j| (j.token(), None).into()).collect();
                match q.complete_many(items) {
                    Ok(v) => {
                        for a in v {
                            if let Err(e) = a {
                                failures.push(format!("drain complete: {e}"));
                            }
                        }
                    }
                    Err(e) => failures.push(format!("drain complete_many: {e}")),
                }
            }
            Err(e) => failures.push(format!("drain lease: {e}")),
        }
        if failures.len() > 20 {
            break;
        }
    }
    let after = check::run(&q, h);
    for o in after {
        failures.extend(o.failures.into_iter().map(|f| format!("{}: {f}", o.name)));
    }
    q.close();
    check::Outcome { name, failures }
}
