//! telha-crash: the kill -9 crash harness (issue #7).
//!
//! `telha-crash run --kills 10 --sync both` starts a worker process (this
//! binary, `worker` subcommand) on a fresh store, kills it with SIGKILL
//! after a random delay (seeded; the seed is printed), reopens the store
//! and checks every invariant against the worker's ack logs, then starts
//! the next worker on the same store; after the last kill it drains the
//! store. It ends with an `N passed, N failed` line (one per check per kill)
//! and exits non-zero on any failure. See docs/ARCHITECTURE.md, "Crash
//! harness".

mod check;
mod drain;
mod driver;
mod fanin;
mod followups;
mod keys;
mod keys_check;
mod log;
mod schedules;
mod steer;
mod steer_check;
mod tags;
mod worker;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand, ValueEnum};
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use telha_jobs::Queue;

#[derive(Parser)]
#[command(about = "Kill -9 crash harness for telha-jobs")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Sync {
    Off,
    On,
    Both,
}

#[derive(Subcommand)]
enum Cmd {
    /// Kill a worker N times per sync mode, checking the store after each kill.
    Run {
        /// Kills per sync mode.
        #[arg(long, default_value_t = 10)]
        kills: u32,
        /// `sync_writes` off, on, or both (one run each).
        #[arg(long, value_enum, default_value_t = Sync::Both)]
        sync: Sync,
        /// Seed for the kill delays and the workloads (default: from the clock).
        #[arg(long)]
        seed: Option<u64>,
        /// Shortest delay before a kill, ms.
        #[arg(long, default_value_t = 150)]
        min_delay_ms: u64,
        /// Longest delay before a kill, ms.
        #[arg(long, default_value_t = 900)]
        max_delay_ms: u64,
        /// Percent of kills at 0..min-delay-ms instead (during the worker's
        /// open and lease recovery).
        #[arg(long, default_value_t = 15, value_parser = clap::value_parser!(u8).range(0..=100))]
        early_pct: u8,
        /// Worker threads.
        #[arg(long, default_value_t = 4)]
        threads: usize,
        /// Keep the store and the logs here (default: a temp dir, removed).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Kill a schedule's owner process N times (per sync mode), then check
    /// that its jobs are exactly one per slot with no gap.
    Schedules {
        /// Kills per sync mode.
        #[arg(long, default_value_t = 20)]
        kills: u32,
        /// `sync_writes` off, on, or both (one run each).
        #[arg(long, value_enum, default_value_t = Sync::Off)]
        sync: Sync,
        /// Seed for the kill delays (default: from the clock).
        #[arg(long)]
        seed: Option<u64>,
        /// Shortest delay before a kill, ms (one kill in six comes sooner,
        /// while the owner opens the store).
        #[arg(long, default_value_t = 300)]
        min_delay_ms: u64,
        /// Longest delay before a kill, ms.
        #[arg(long, default_value_t = 5000)]
        max_delay_ms: u64,
        /// Keep the store here (default: a temp dir, removed).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Kill an owner completing parents with follow-up jobs N times (per
    /// sync mode), checking after each kill that children exist exactly
    /// when their parent completed.
    Followups {
        /// Kills per sync mode.
        #[arg(long, default_value_t = 20)]
        kills: u32,
        /// `sync_writes` off, on, or both (one run each).
        #[arg(long, value_enum, default_value_t = Sync::Off)]
        sync: Sync,
        /// Seed for the kill delays (default: from the clock).
        #[arg(long)]
        seed: Option<u64>,
    },
    /// Kill an owner mixing windowed enqueues, promote, reschedule,
    /// set_priority and settles N times (per sync mode), checking windows
    /// and steering against its logs after each kill (issue 44).
    Steer {
        /// Kills per sync mode.
        #[arg(long, default_value_t = 20)]
        kills: u32,
        /// `sync_writes` off, on, or both (one run each).
        #[arg(long, value_enum, default_value_t = Sync::Off)]
        sync: Sync,
        /// Seed for the kill delays and the workload (default: from the clock).
        #[arg(long)]
        seed: Option<u64>,
    },
    /// The steering owner process (started by `steer`).
    SteerOwner {
        #[arg(long)]
        store: PathBuf,
        #[arg(long)]
        logs: PathBuf,
        #[arg(long)]
        round: u32,
        #[arg(long)]
        seed: u64,
        #[arg(long)]
        sync_writes: bool,
        #[arg(long, default_value_t = 120)]
        max_secs: u64,
    },
    /// Kill an owner completing fan-in groups' children (and the parents
    /// they release) N times (per sync mode), checking after each kill
    /// that each parent left waiting once, iff its children completed
    /// (issue 43).
    Fanin {
        /// Kills per sync mode.
        #[arg(long, default_value_t = 20)]
        kills: u32,
        /// `sync_writes` off, on, or both (one run each).
        #[arg(long, value_enum, default_value_t = Sync::Off)]
        sync: Sync,
        /// Seed for the kill delays (default: from the clock).
        #[arg(long)]
        seed: Option<u64>,
    },
    /// Kill an owner enqueueing tagged jobs and moving them through every
    /// state N times (per sync mode), checking after each kill that every
    /// acknowledged job is listed once under each of its tags (issue 42).
    Tags {
        /// Kills per sync mode.
        #[arg(long, default_value_t = 20)]
        kills: u32,
        /// `sync_writes` off, on, or both (one run each).
        #[arg(long, value_enum, default_value_t = Sync::Off)]
        sync: Sync,
        /// Seed for the kill delays (default: from the clock).
        #[arg(long)]
        seed: Option<u64>,
    },
    /// Kill an owner leasing keyed jobs under `key:*` caps and ordered
    /// keys N times (per sync mode), checking caps, FIFO order and the key
    /// index after each kill (issue 43).
    Keys {
        /// Kills per sync mode.
        #[arg(long, default_value_t = 20)]
        kills: u32,
        /// `sync_writes` off, on, or both (one run each).
        #[arg(long, value_enum, default_value_t = Sync::Off)]
        sync: Sync,
        /// Seed for the kill delays and the workload (default: from the clock).
        #[arg(long)]
        seed: Option<u64>,
    },
    /// The keys owner process (started by `keys`).
    KeysOwner {
        #[arg(long)]
        store: PathBuf,
        #[arg(long)]
        logs: PathBuf,
        #[arg(long)]
        round: u32,
        #[arg(long)]
        seed: u64,
        #[arg(long)]
        sync_writes: bool,
        #[arg(long, default_value_t = 120)]
        max_secs: u64,
    },
    /// The tags owner process (started by `tags`).
    TagsOwner {
        #[arg(long)]
        store: PathBuf,
        #[arg(long)]
        logs: PathBuf,
        #[arg(long)]
        round: u32,
        #[arg(long)]
        sync_writes: bool,
        #[arg(long, default_value_t = 120)]
        max_secs: u64,
    },
    /// The fan-in owner process (started by `fanin`).
    FaninOwner {
        #[arg(long)]
        store: PathBuf,
        #[arg(long)]
        sync_writes: bool,
        #[arg(long, default_value_t = 120)]
        max_secs: u64,
    },
    /// The follow-up owner process (started by `followups`).
    FollowupOwner {
        #[arg(long)]
        store: PathBuf,
        #[arg(long)]
        sync_writes: bool,
        #[arg(long, default_value_t = 120)]
        max_secs: u64,
    },
    /// The schedule owner process (started by `schedules`).
    ScheduleOwner {
        #[arg(long)]
        store: PathBuf,
        #[arg(long)]
        sync_writes: bool,
        #[arg(long, default_value_t = 120)]
        max_secs: u64,
    },
    /// The worker process (started by `run`).
    Worker {
        #[arg(long)]
        store: PathBuf,
        #[arg(long)]
        logs: PathBuf,
        #[arg(long)]
        round: u32,
        #[arg(long)]
        seed: u64,
        #[arg(long)]
        threads: usize,
        #[arg(long)]
        sync_writes: bool,
        #[arg(long, default_value_t = 120)]
        max_secs: u64,
    },
}

fn main() {
    match Cli::parse().cmd {
        Cmd::FollowupOwner {
            store,
            sync_writes,
            max_secs,
        } => followups::owner(&store, sync_writes, max_secs),
        Cmd::FaninOwner {
            store,
            sync_writes,
            max_secs,
        } => fanin::owner(&store, sync_writes, max_secs),
        Cmd::Fanin { kills, sync, seed } => fanin::main(kills, modes(sync), seed),
        Cmd::SteerOwner {
            store,
            logs,
            round,
            seed,
            sync_writes,
            max_secs,
        } => steer::owner(&store, &logs, round, seed, sync_writes, max_secs),
        Cmd::Steer { kills, sync, seed } => {
            driver::main("steer", kills, modes(sync), seed, steer::run)
        }
        Cmd::Followups { kills, sync, seed } => {
            driver::main("followups", kills, modes(sync), seed, followups::run)
        }
        Cmd::Tags { kills, sync, seed } => {
            driver::main("tags", kills, modes(sync), seed, tags::run)
        }
        Cmd::Keys { kills, sync, seed } => {
            driver::main("keys", kills, modes(sync), seed, keys::run)
        }
        Cmd::KeysOwner {
            store,
            logs,
            round,
            seed,
            sync_writes,
            max_secs,
        } => keys::owner(&store, &logs, round, seed, sync_writes, max_secs),
        Cmd::TagsOwner {
            store,
            logs,
            round,
            sync_writes,
            max_secs,
        } => tags::owner(&store, &logs, round, sync_writes, max_secs),
        Cmd::ScheduleOwner {
            store,
            sync_writes,
            max_secs,
        } => schedules::owner(&store, sync_writes, max_secs),
        Cmd::Schedules {
            kills,
            sync,
            seed,
            min_delay_ms,
            max_delay_ms,
            dir,
        } => {
            let seed = seed.unwrap_or_else(|| log::now_us() ^ u64::from(std::process::id()));
            let tmp = tempfile::Builder::new()
                .prefix("telha-crash-schedules")
                .tempdir()
                .expect("temp dir");
            let base = dir.unwrap_or_else(|| tmp.path().to_path_buf());
            println!(
                "telha-crash schedules: seed {seed} (rerun with --seed {seed}), {kills} kills \
                 per mode, kill delay {min_delay_ms}..{max_delay_ms} ms"
            );
            let (mut passed, mut failed) = (0u32, 0u32);
            for &sync_writes in modes(sync) {
                let (p_, f_) = schedules::run(&schedules::Params {
                    base: base.join(if sync_writes { "sync-on" } else { "sync-off" }),
                    kills,
                    seed,
                    delay: (min_delay_ms, max_delay_ms.max(min_delay_ms)),
                    sync_writes,
                });
                passed += p_;
                failed += f_;
            }
            println!("{passed} passed, {failed} failed");
            std::process::exit(if failed == 0 { 0 } else { 1 });
        }
        Cmd::Worker {
            store,
            logs,
            round,
            seed,
            threads,
            sync_writes,
            max_secs,
        } => worker::run(worker::WorkerArgs {
            store,
            log_dir: logs,
            round,
            seed,
            threads,
            sync_writes,
            max_secs,
        }),
        Cmd::Run {
            kills,
            sync,
            seed,
            min_delay_ms,
            max_delay_ms,
            early_pct,
            threads,
            dir,
        } => {
            let seed = seed.unwrap_or_else(|| log::now_us() ^ u64::from(std::process::id()));
            let tmp;
            let base = match dir {
                Some(d) => d,
                None => {
                    tmp = tempfile::Builder::new()
                        .prefix("telha-crash")
                        .tempdir()
                        .expect("temp dir");
                    tmp.path().to_path_buf()
                }
            };
            let modes = modes(sync);
            println!(
                "telha-crash: seed {seed} (rerun with --seed {seed}), {kills} kills per mode, \
                 {threads} worker threads, kill delay {min_delay_ms}..{max_delay_ms} ms \
                 ({early_pct}% of kills at 0..{min_delay_ms} ms instead)"
            );
            let (mut passed, mut failed) = (0u32, 0u32);
            for &sync_writes in modes {
                let p = RunParams {
                    base: base.join(if sync_writes { "sync-on" } else { "sync-off" }),
                    kills,
                    seed,
                    delay: (min_delay_ms, max_delay_ms.max(min_delay_ms)),
                    early_pct,
                    threads,
                    sync_writes,
                };
                let (p_, f_) = run_mode(&p);
                passed += p_;
                failed += f_;
            }
            println!("{passed} passed, {failed} failed");
            std::process::exit(if failed == 0 { 0 } else { 1 });
        }
    }
}

fn modes(sync: Sync) -> &'static [bool] {
    match sync {
        Sync::Off => &[false],
        Sync::On => &[true],
        Sync::Both => &[false, true],
    }
}

struct RunParams {
    base: PathBuf,
    kills: u32,
    seed: u64,
    delay: (u64, u64),
    early_pct: u8,
    threads: usize,
    sync_writes: bool,
}

fn spawn_worker(p: &RunParams, store: &Path, logs: &Path, round: u32) -> Child {
    let exe = std::env::current_exe().expect("current exe");
    Command::new(exe)
        .args(["worker", "--store"])
        .arg(store)
        .arg("--logs")
        .arg(logs)
        .args(["--round", &round.to_string()])
        .args(["--seed", &p.seed.to_string()])
        .args(["--threads", &p.threads.to_string()])
        .args(if p.sync_writes {
            &["--sync-writes"][..]
        } else {
            &[][..]
        })
        .stdin(Stdio::null())
        .spawn()
        .expect("spawn the worker")
}

/// One sync mode: `kills` rounds of spawn, kill, reopen, check; then a drain.
fn run_mode(p: &RunParams) -> (u32, u32) {
    let mode = if p.sync_writes { "on" } else { "off" };
    let store = p.base.join("store");
    let logs = p.base.join("logs");
    std::fs::create_dir_all(&logs).expect("log dir");
    let mut rng = SmallRng::seed_from_u64(p.seed ^ u64::from(p.sync_writes));
    let mut history = check::History::default();
    let (mut passed, mut failed) = (0u32, 0u32);
    let mut before_first_ack = 0u32;
    let started = Instant::now();
    println!("== sync_writes {mode}: store {}", store.display());
    for round in 1..=p.kills {
        // Most kills land in the workload; some land early, while the
        // worker opens the store and rebuilds its leases from disk.
        let delay = if rng.random_bool(p.early_pct as f64 / 100.0) {
            rng.random_range(0..=p.delay.0)
        } else {
            rng.random_range(p.delay.0..=p.delay.1)
        };
        let mut child = spawn_worker(p, &store, &logs, round);
        let pid = child.id();
        std::thread::sleep(Duration::from_millis(delay));
        // The worker runs until killed; if it has exited by itself it failed.
        let early = child.try_wait().expect("try_wait");
        // Child::kill is SIGKILL on Unix; wait() reaps it, and the OS has
        // released its store lock by then.
        let _ = child.kill();
        let _ = child.wait();

        let before = history.total_acks();
        let mut new_records = Vec::new();
        let mut torn = 0;
        for t in 0..p.threads {
            let f = logs.join(format!("r{round:04}-t{t}.log"));
            if let Ok(text) = std::fs::read_to_string(&f) {
                let (r, n) = log::parse(&text);
                new_records.extend(r);
                torn += n;
            }
        }
        if new_records.is_empty() {
            before_first_ack += 1;
        }
        history.add(round, new_records, torn);

        let mut outcomes = Vec::new();
        if let Some(status) = early {
            outcomes.push(check::Outcome {
                name: "the worker ran until killed",
                failures: vec![format!("worker pid {pid} exited by itself: {status}")],
            });
        }
        let t = Instant::now();
        match Queue::open(&store, check_config(p.sync_writes)) {
            Ok(q) => {
                let open_ms = t.elapsed().as_millis();
                outcomes.push(check::Outcome {
                    name: "the store reopens after SIGKILL",
                    failures: vec![],
                });
                outcomes.extend(check::run(&q, &history));
                let s = q.stats().map(|s| s.total).unwrap_or_default();
                q.close();
                let (ok, bad) = tally(&outcomes);
                passed += ok;
                failed += bad;
                println!(
                    "kill {round:>3}/{} after {delay:>4} ms (pid {pid}): +{:>5} acks, reopen {open_ms} ms, \
                     {} jobs (pending {}, leased {}, failed {}, completed {}, dead {}, cancelled {}): \
                     {ok}/{} checks passed",
                    p.kills,
                    history.total_acks() - before,
                    history.jobs(),
                    s.pending,
                    s.leased,
                    s.failed,
                    s.completed,
                    s.dead,
                    s.cancelled,
                    ok + bad
                );
            }
            Err(e) => {
                outcomes.push(check::Outcome {
                    name: "the store reopens after SIGKILL",
                    failures: vec![e.to_string()],
                });
                let (ok, bad) = tally(&outcomes);
                passed += ok;
                failed += bad;
                println!("kill {round}: the store does not reopen: {e}");
            }
        }
        report_failures(&outcomes);
    }

    // After the last kill: everything paused is resumed, the leases the
    // dead workers held expire, and every job that is not dead or
    // cancelled drains to completed.
    let drain = drain::drain(&store, p.sync_writes, &mut history, p.kills + 1);
    let (ok, bad) = tally(std::slice::from_ref(&drain));
    report_failures(std::slice::from_ref(&drain));
    passed += ok;
    failed += bad;

    let acks: Vec<String> = history
        .acks
        .iter()
        .map(|(tag, n)| format!("{} {n}", log::tag_name(*tag)))
        .collect();
    println!(
        "summary sync_writes {mode}: {} kills ({before_first_ack} before the worker's first ack), {} jobs, \
         {} ops acknowledged ({}), {} torn log lines, {passed} checks passed, {failed} failed, {:.1} s",
        p.kills,
        history.jobs(),
        history.total_acks(),
        acks.join(", "),
        history.torn,
        started.elapsed().as_secs_f64()
    );
    (passed, failed)
}

/// The worker's config without the background reaper: the checks scan the
/// store row by row, and a reaper moving rows between two reads would make
/// them see a job in flight. The drain calls `reap()` itself.
pub(crate) fn check_config(sync_writes: bool) -> telha_jobs::Config {
    telha_jobs::Config {
        reaper_interval: Duration::ZERO,
        ..worker::config(sync_writes)
    }
}

fn tally(o: &[check::Outcome]) -> (u32, u32) {
    let bad = o.iter().filter(|o| !o.failures.is_empty()).count() as u32;
    (o.len() as u32 - bad, bad)
}

fn report_failures(o: &[check::Outcome]) {
    for o in o.iter().filter(|o| !o.failures.is_empty()) {
        println!("  FAILED {}: {} problem(s)", o.name, o.failures.len());
        for f in o.failures.iter().take(10) {
            println!("    {f}");
        }
    }
}
