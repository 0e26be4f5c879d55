//! telha-jobs: an embedded, durable job queue with leases, on RocksDB.
//!
//! No job is processed by two workers at once (leases are fenced by a
//! generation number checked on every settle), and no job is lost when a
//! worker dies (an expired lease goes back to pending, with backoff).
//!
//! ```no_run
//! use telha_jobs::{Config, EnqueueOptions, LeaseOptions, Queue};
//!
//! let q = Queue::open("/tmp/telha-example", Config::default())?;
//! q.enqueue("embed", b"doc-42", EnqueueOptions::default())?;
//! if let Some(job) = q.lease_next("worker-1", &LeaseOptions::default())? {
//!     // ... do the work, heartbeating with q.extend(&[job.token()], "worker-1") ...
//!     q.complete(&job.token(), Some(b"ok"))?;
//! }
//! # Ok::<(), telha_jobs::Error>(())
//! ```
//!
//! See `docs/ARCHITECTURE.md` for the key layout, the threading model and
//! durability.
//!
//! # Features
//!
//! `rocksdb` (on by default) is the store: the engine, [`Queue`], the
//! reaper. Without it the crate is the vocabulary and the decoders alone
//! (ids, kinds, states, records, keys, the payload convention, config):
//! what the fuzz targets build, with no C++ to compile.

#![warn(missing_docs)]
#![cfg_attr(not(feature = "rocksdb"), allow(dead_code))]

#[cfg(feature = "rocksdb")]
mod api;
pub mod backoff;
pub mod backup;
#[cfg(feature = "rocksdb")]
mod cancel;
pub mod clock;
pub mod config;
pub mod control;
#[cfg(feature = "rocksdb")]
mod engine;
pub mod error;
pub mod event;
pub mod fanin;
pub mod find;
pub mod flow;
mod heap;
pub mod ids;
pub mod job;
pub mod kind;
pub mod limits;
pub mod list;
#[cfg(feature = "rocksdb")]
mod metrics;
#[cfg(feature = "otel")]
pub mod otel;
pub mod payload;
#[cfg(feature = "rocksdb")]
mod queue;
#[cfg(feature = "rocksdb")]
mod queue_admin;
#[cfg(feature = "rocksdb")]
mod queue_fanin;
#[cfg(feature = "rocksdb")]
mod reaper;
#[cfg(feature = "rocksdb")]
pub mod replica;
#[cfg(feature = "rocksdb")]
mod rocksdb_memory;
pub mod schedule;
#[cfg(feature = "rocksdb")]
mod scheduler;
pub mod scopes;
pub mod state;
#[cfg(feature = "rocksdb")]
mod steer;
pub mod store;
pub mod tags;
#[cfg(feature = "rocksdb")]
mod timings;
pub mod trace_context;
mod unique_states;
#[cfg(feature = "rocksdb")]
pub mod watch;
#[cfg(feature = "rocksdb")]
pub mod worker;
#[cfg(feature = "rocksdb")]
mod would_block;

#[cfg(feature = "rocksdb")]
pub use api::JobStore;
pub use backup::BackupInfo;
#[cfg(feature = "rocksdb")]
pub use cancel::CancelWait;
pub use clock::{Clock, ManualClock, SystemClock};
pub use config::{Backoff, Config, KindConfig};
pub use control::{CancelFilter, CancelOutcome, CancelReport, Failure, PauseTarget, Paused};
pub use error::{Error, ErrorKind, Result};
pub use event::{Event, LogEntry};
pub use fanin::{ChildDeadPolicy, ChildPage, ChildResult, FanInInfo};
pub use find::{FindQuery, FindResult};
pub use flow::{Limit, LimitStatus, LimitTarget};
pub use ids::{JobId, Scope};
pub use job::{
    Completion, CorruptRecord, EnqueueOptions, Enqueued, Job, JobInfo, LeaseOptions, LeaseToken,
    ListPage, ListQuery, NewJob, PurgeReport, ReapReport, Stats, UniqueStates,
};
pub use kind::KindPattern;
pub use payload::Encoding;
#[cfg(feature = "rocksdb")]
pub use queue::{CheckReport, Queue};
pub use schedule::{CatchUp, RunReport, Schedule, ScheduleInfo, ScheduleRef};
pub use scopes::{ScopeOrder, StatsQuery};
pub use state::{PerState, State, StateCounts};
pub use store::format::StoreFormat;
#[cfg(feature = "rocksdb")]
pub use watch::{EventFilter, JobEvent, JobWatch, SubscribeOptions, Subscription};
#[cfg(feature = "rocksdb")]
pub use worker::{HandlerError, JobContext, Outcome, RunningWorker, Worker};
#[cfg(feature = "rocksdb")]
pub use would_block::WritePressure;

/// The embedded default store: `$TELHA_DB` when set, else `./telha-data`.
pub fn default_store_path() -> std::path::PathBuf {
    std::env::var_os("TELHA_DB")
        .filter(|v| !v.is_empty())
        .map(Into::into)
        .unwrap_or_else(|| "telha-data".into())
}
