//! Shared helpers for the integration tests: a store in its own temp dir, on
//! a manual clock, with no background reaper (tests call `reap()`).
#![allow(dead_code)]

use std::fmt::Debug;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use telha_jobs::{
    Clock, Config, EnqueueOptions, Error, ErrorKind, Job, JobId, JobInfo, LeaseOptions,
    ManualClock, Queue, Result,
};
use tempfile::TempDir;

/// Where every test clock starts (2023-11-14T22:13:20Z), so timestamps in
/// failures are recognisable.
pub const EPOCH_MS: u64 = 1_700_000_000_000;

pub const SEC: Duration = Duration::from_secs(1);
pub const MS: Duration = Duration::from_millis(1);

/// The config every test store starts from: defaults, minus the background
/// reaper, so expiry and pruning happen only when a test calls `reap()`.
pub fn test_config() -> Config {
    Config {
        reaper_interval: Duration::ZERO,
        // Exact retry delays: the tests of schedules compare them to the
        // millisecond (jitter has its own tests, with seeded draws).
        backoff_jitter: 0.0,
        ..Config::default()
    }
}

/// One store for one test. Dropping it closes the queue, then removes the dir.
pub struct TestStore {
    pub q: Queue,
    pub clock: Arc<ManualClock>,
    pub config: Config,
    pub dir: TempDir,
}

impl TestStore {
    pub fn new() -> TestStore {
        TestStore::with_config(test_config())
    }

    /// A store with `config`; its reaper interval is forced to zero.
    pub fn with_config(mut config: Config) -> TestStore {
        config.reaper_interval = Duration::ZERO;
        let dir = tempfile::tempdir().expect("temp dir");
        let clock = Arc::new(ManualClock::new(EPOCH_MS));
        let q = Queue::open_with_clock(dir.path(), config.clone(), clock.clone())
            .expect("open the test store");
        TestStore {
            q,
            clock,
            config,
            dir,
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The clock as the queue wants it.
    pub fn dyn_clock(&self) -> Arc<dyn Clock> {
        self.clock.clone()
    }

    /// Close the queue and open the same directory again, on the same clock.
    pub fn reopen(&mut self) {
        self.q.close();
        self.q = Queue::open_with_clock(self.dir.path(), self.config.clone(), self.dyn_clock())
            .expect("reopen the test store");
    }

    pub fn now(&self) -> u64 {
        self.clock.now_ms()
    }

    pub fn advance(&self, by: Duration) {
        self.clock.advance(by);
    }

    /// Move the clock to exactly `ms`.
    pub fn set_now(&self, ms: u64) {
        self.clock.set(ms);
    }

    /// Enqueue with default options; returns the new id.
    pub fn enqueue(&self, kind: &str) -> JobId {
        self.enqueue_with(kind, EnqueueOptions::default())
    }

    pub fn enqueue_with(&self, kind: &str, options: EnqueueOptions) -> JobId {
        let e = self.q.enqueue(kind, b"payload", options).expect("enqueue");
        assert!(
            e.created,
            "a job without an idempotency key is always created"
        );
        e.id
    }

    /// Lease the next job of any kind, any scope, without waiting.
    pub fn lease(&self, worker: &str) -> Option<Job> {
        self.q
            .lease_next(worker, &LeaseOptions::default())
            .expect("lease_next")
    }

    /// Lease the next job, which must exist.
    pub fn must_lease(&self, worker: &str) -> Job {
        self.lease(worker)
            .expect("a ready job to lease, found the queue empty")
    }

    pub fn get(&self, id: &JobId) -> JobInfo {
        self.q
            .get(id)
            .expect("get")
            .unwrap_or_else(|| panic!("job {id} not found"))
    }

    /// The transitions of a job's event log, oldest first.
    pub fn transitions(&self, id: &JobId) -> Vec<String> {
        self.get(id)
            .events
            .into_iter()
            .map(|e| e.transition)
            .collect()
    }
}

impl Default for TestStore {
    fn default() -> Self {
        TestStore::new()
    }
}

impl Drop for TestStore {
    fn drop(&mut self) {
        self.q.close();
    }
}

/// `q.check()` finds no disagreement between rows, indexes and counters.
pub fn assert_consistent(q: &Queue) {
    let report = q.check().expect("check");
    assert!(
        report.problems.is_empty(),
        "consistency check found {} problem(s):\n  {}",
        report.problems.len(),
        report.problems.join("\n  ")
    );
}

/// The error of `r`, which must be of `kind`.
#[track_caller]
pub fn expect_err<T: Debug>(r: Result<T>, kind: ErrorKind) -> Error {
    match r {
        Ok(v) => panic!("expected a {kind} error, got Ok({v:?})"),
        Err(e) => {
            assert_eq!(e.kind(), kind, "expected a {kind} error, got {e}");
            e
        }
    }
}

/// How often `transition` appears in a job's event log.
pub fn count_events(info: &JobInfo, transition: &str) -> usize {
    info.events
        .iter()
        .filter(|e| e.transition == transition)
        .count()
}

/// The value of an unlabelled or fully-labelled Prometheus sample line
/// (`name{labels} value`), by its exact series name.
pub fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines().filter(|l| !l.starts_with('#')).find_map(|l| {
        let (name, value) = l.rsplit_once(' ')?;
        (name == series).then(|| value.parse().ok())?
    })
}

/// The store at `path` opened with raw RocksDB (every column family, the
/// counters merge operator), for tests that write bytes the engine would
/// not. The queue must be closed.
pub fn raw_db(path: &Path) -> rocksdb::DB {
    let mut opts = rocksdb::Options::default();
    opts.create_if_missing(false);
    let cfs = telha_jobs::store::ALL_CFS.iter().map(|name| {
        let mut o = rocksdb::Options::default();
        if *name == "counters" {
            // Recovery may flush the WAL's merge operands: it needs the operator.
            o.set_merge_operator_associative(
                telha_jobs::store::COUNTERS_MERGE_NAME,
                telha_jobs::store::counters_merge,
            );
        }
        rocksdb::ColumnFamilyDescriptor::new(*name, o)
    });
    rocksdb::DB::open_cf_descriptors(&opts, path, cfs).expect("raw open")
}

/// Every file below `dir` with its bytes, for "left untouched" checks.
pub fn snapshot_dir(dir: &Path) -> std::collections::BTreeMap<std::path::PathBuf, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read dir") {
            let p = e.expect("dir entry").path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(p.clone(), std::fs::read(&p).expect("read file"));
            }
        }
    }
    out
}

/// Copy the files of `from` into `to` (flat: a store directory).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create dir");
    for e in std::fs::read_dir(from).expect("read dir") {
        let e = e.expect("dir entry");
        if e.path().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).expect("copy");
        }
    }
}
