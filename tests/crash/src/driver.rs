//! The owner/kill loop the owner modes share (`followups`, `fanin`,
//! `steer`, `tags`, `keys`): start this binary's owner subcommand on the store,
//! SIGKILL it after a seeded random delay (one kill in six while it opens
//! the store), reopen the store, check that `check()` is clean, hand the
//! open queue to the mode's own checks, close, and go again. Each mode
//! keeps its owner, its workload and its invariants; this file keeps the
//! part they had copied.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use telha_jobs::{Config, Queue};

/// One mode's run in one sync mode.
pub struct Params {
    /// The run's directory (the store is `base/store`).
    pub base: PathBuf,
    pub kills: u32,
    pub seed: u64,
    pub sync_writes: bool,
}

impl Params {
    pub fn store(&self) -> PathBuf {
        self.base.join("store")
    }

    pub fn sync_label(&self) -> &'static str {
        if self.sync_writes {
            "on"
        } else {
            "off"
        }
    }
}

/// Pass/fail lines, one per check per kill.
#[derive(Default)]
pub struct Checks {
    passed: u32,
    failed: u32,
}

impl Checks {
    pub fn check(&mut self, name: &str, r: Result<(), String>) {
        match r {
            Ok(()) => {
                self.passed += 1;
                println!("  ok    {name}");
            }
            Err(e) => {
                self.failed += 1;
                println!("  FAIL  {name}: {e}");
            }
        }
    }

    pub fn done(self) -> (u32, u32) {
        (self.passed, self.failed)
    }
}

/// `telha-crash NAME`: `run` once per sync mode in `modes` (each in its
/// own directory of one temp dir), the seed printed first and the
/// `N passed, N failed` line last; exits 0 when nothing failed.
pub fn main(
    name: &str,
    kills: u32,
    modes: &[bool],
    seed: Option<u64>,
    run: fn(&Params) -> (u32, u32),
) -> ! {
    let seed = seed.unwrap_or_else(|| crate::log::now_us() ^ u64::from(std::process::id()));
    let tmp = tempfile::Builder::new()
        .prefix(&format!("telha-crash-{name}"))
        .tempdir()
        .expect("temp dir");
    println!("telha-crash {name}: seed {seed} (rerun with --seed {seed}), {kills} kills per mode");
    let (mut passed, mut failed) = (0u32, 0u32);
    for &sync_writes in modes {
        let (p_, f_) = run(&Params {
            base: tmp
                .path()
                .join(if sync_writes { "sync-on" } else { "sync-off" }),
            kills,
            seed,
            sync_writes,
        });
        passed += p_;
        failed += f_;
    }
    println!("{passed} passed, {failed} failed");
    std::process::exit(if failed == 0 { 0 } else { 1 });
}

/// How one mode's owner is started and killed.
pub struct Owner<'a> {
    /// The owner's subcommand (given `--store S`, `--sync-writes` when on,
    /// then `args(round)`).
    pub cmd: &'a str,
    pub args: &'a dyn Fn(u32) -> Vec<String>,
    /// Mixed into the seed, so each mode kills at its own instants.
    pub salt: u64,
    /// The longest delay before a kill, ms (the shortest: 0 one time in
    /// six, else 150).
    pub max_ms: u64,
    /// The config the store is reopened with for the checks.
    pub config: Config,
    /// An owner that exits before it is killed is a failure.
    pub runs_until_killed: bool,
}

/// Kill `o`'s owner `p.kills` times (rounds 1 to kills). After each kill:
/// the store reopens, `check()` is clean, then `after(queue, round, ms,
/// checks)` runs the mode's checks (and any seeding for the next round)
/// before the queue closes. A store that does not reopen ends the loop.
pub fn kill_loop(
    p: &Params,
    o: &Owner<'_>,
    mut after: impl FnMut(&Queue, u32, u64, &mut Checks),
) -> Checks {
    let store = p.store();
    let mut rng = SmallRng::seed_from_u64(p.seed ^ o.salt ^ u64::from(p.sync_writes));
    let exe = std::env::current_exe().expect("current exe");
    let mut checks = Checks::default();
    for round in 1..=p.kills {
        let mut cmd = Command::new(&exe);
        cmd.args([o.cmd, "--store"]).arg(&store);
        if p.sync_writes {
            cmd.arg("--sync-writes");
        }
        cmd.args((o.args)(round));
        let mut child = cmd.stdin(Stdio::null()).spawn().expect("spawn the owner");
        let ms = if rng.random_range(0..6u32) == 0 {
            rng.random_range(0..150)
        } else {
            rng.random_range(150..=o.max_ms)
        };
        std::thread::sleep(Duration::from_millis(ms));
        let early = child.try_wait().expect("try_wait");
        let _ = child.kill();
        let _ = child.wait();
        if let (true, Some(status)) = (o.runs_until_killed, early) {
            checks.check(
                &format!("kill {round}: the owner ran until killed"),
                Err(format!("it exited by itself: {status}")),
            );
        }
        let q = match Queue::open(&store, o.config.clone()) {
            Ok(q) => q,
            Err(e) => {
                checks.check(
                    &format!("kill {round}: the store reopens"),
                    Err(e.to_string()),
                );
                return checks;
            }
        };
        let report = q.check().map_err(|e| e.to_string());
        checks.check(
            &format!("kill {round}: check() is clean (every index row, tags included)"),
            match report {
                Ok(r) if r.problems.is_empty() => Ok(()),
                Ok(r) => Err(format!("{:?}", r.problems)),
                Err(e) => Err(e),
            },
        );
        after(&q, round, ms, &mut checks);
        q.close();
    }
    checks
}
