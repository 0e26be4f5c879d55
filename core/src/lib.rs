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

#![warn(missing_docs)]

mod api;
pub mod backoff;
mod cancel;
pub mod clock;
pub mod config;
mod engine;
pub mod error;
pub mod job;
mod metrics;
pub mod payload;
mod queue;
mod reaper;
pub mod store;

pub use api::JobStore;
pub use cancel::CancelWait;
pub use clock::{Clock, ManualClock, SystemClock};
pub use config::{Backoff, Config, KindConfig};
pub use error::{Error, ErrorKind, Result};
pub use job::{
    CorruptRecord, EnqueueOptions, Enqueued, Event, Job, JobId, JobInfo, KindPattern, LeaseOptions,
    LeaseToken, ListPage, ListQuery, NewJob, PurgeReport, ReapReport, Scope, State, StateCounts,
    Stats,
};
pub use queue::{CheckReport, Queue};

/// The embedded default store: `$TELHA_DB` when set, else `./telha-data`.
pub fn default_store_path() -> std::path::PathBuf {
    std::env::var_os("TELHA_DB")
        .filter(|v| !v.is_empty())
        .map(Into::into)
        .unwrap_or_else(|| "telha-data".into())
}
