//! Leasing ahead through a remote queue's `PollJobs` stream (issue 46):
//! `NativeQueue.pollJobs(workerId, capacity, kinds, scopes, onLeases)`
//! opens the store's lease feed (`JobStore::lease_feed`, the Rust client's
//! `JobStream`, the same one the Rust `Worker` uses) and a thread of its own
//! reads it: the server pushes leases as they become ready, never more than
//! `capacity` unsettled at once. Each batch read is kept here and
//! `onLeases` is called on the JS thread (a threadsafe function), which
//! takes what arrived with `take()`. No thread of libuv's pool waits on the
//! stream.
//!
//! `close()` ends it gracefully, as the Rust and Python Workers do: the
//! reader stops and closes the feed (`LeaseFeed::close`, the client's
//! `JobStream::close`: `StopPoll`, the server stops leasing for it and ends
//! it after what it already sent, read to the end), and every lease read
//! and not taken, those that came meanwhile included, is released here, no
//! attempt spent: none is left leased by nobody.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use napi::bindgen_prelude::{Env, Object};
use napi::threadsafe_function::ThreadsafeFunctionCallMode;
use napi_derive::napi;
use telha_jobs::limits::MAX_BATCH;
use telha_jobs::worker::LeaseFeed;
use telha_jobs::{Error as CoreError, ErrorKind, Job, JobStore};

use crate::args::lease_options;
use crate::batch::LeasedBatch;
use crate::errors::Failure;
use crate::queue::NativeQueue;
use crate::task::{guard, on_thread};
use crate::watch::{lock, Wake};

/// How long one read of the stream waits before the thread looks up (close).
const READ_SLICE: Duration = Duration::from_millis(50);
/// After a failed read, the next one waits this long (a server away).
const RETRY_PAUSE: Duration = Duration::from_millis(500);

#[derive(Default)]
struct Shared {
    /// Leases read and not yet taken.
    buf: Mutex<VecDeque<Job>>,
    /// The failures met since the last `take()`.
    errors: Mutex<Vec<CoreError>>,
    /// `close()` was called: close the feed, then end.
    closing: AtomicBool,
    /// The feed ended (the server shut down, or the queue closed) or was closed.
    ended: AtomicBool,
    /// `onLeases`, until close.
    wake: Mutex<Option<Wake>>,
}

impl Shared {
    fn wake(&self) {
        if let Some(f) = lock(&self.wake).as_ref() {
            f.call((), ThreadsafeFunctionCallMode::NonBlocking);
        }
    }

    /// The reader thread: batches into `buf` until close (then the feed is
    /// closed, and what it still delivers joins `buf`) or the feed ends.
    fn read(&self, mut feed: Box<dyn LeaseFeed>) {
        while !self.closing.load(Ordering::SeqCst) {
            match feed.next_batch(Some(READ_SLICE)) {
                Ok(Some(jobs)) if jobs.is_empty() => {}
                Ok(Some(jobs)) => {
                    lock(&self.buf).extend(jobs);
                    if !self.closing.load(Ordering::SeqCst) {
                        self.wake();
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    let closed = e.kind() == ErrorKind::Closed;
                    lock(&self.errors).push(e);
                    self.wake();
                    if closed {
                        break;
                    }
                    std::thread::sleep(RETRY_PAUSE);
                }
            }
        }
        match feed.close() {
            Ok(jobs) => lock(&self.buf).extend(jobs),
            Err(e) => lock(&self.errors).push(e),
        }
        drop(feed);
        self.ended.store(true, Ordering::SeqCst);
        self.wake();
    }
}

/// One worker's `PollJobs` stream (see the module docs).
#[napi]
pub struct NativeJobStream {
    shared: Arc<Shared>,
    thread: Arc<Mutex<Option<JoinHandle<()>>>>,
    store: Arc<dyn JobStore>,
}

#[napi]
impl NativeQueue {
    /// Open a `PollJobs` stream for `workerId` (a remote queue only:
    /// `INVALID_ARGUMENT` on an embedded one, whose leases cost no round
    /// trip): at most `capacity` (1 to the batch limit) leases unsettled at
    /// once. With `floor` (1 to `capacity`: the Worker's concurrency) the
    /// window follows the handlers: the server keeps about 100 ms of their
    /// work unsettled, at least `floor`; without it, a fixed `capacity`. `onLeases` is called on the JS thread when leases arrived,
    /// the stream failed, or it ended.
    #[napi(
        ts_args_type = "workerId: string, capacity: number, kinds: string[] | undefined | null, scopes: string[] | undefined | null, onLeases: () => void, floor?: number | undefined | null",
        ts_return_type = "Promise<NativeJobStream>"
    )]
    #[allow(clippy::too_many_arguments)] // the JS call's own arguments
    pub fn poll_jobs<'env>(
        &self,
        env: &'env Env,
        worker_id: String,
        capacity: f64,
        kinds: Option<Vec<String>>,
        scopes: Option<Vec<String>>,
        on_leases: Wake,
        floor: Option<f64>,
    ) -> napi::Result<Object<'env>> {
        let (capacity, floor, opts) = guard(env, "pollJobs", || {
            if !(capacity.fract() == 0.0 && capacity >= 1.0 && capacity <= MAX_BATCH as f64) {
                return Err(Failure::Range(format!(
                    "capacity must be a whole number from 1 to {MAX_BATCH}, got {capacity}"
                )));
            }
            if let Some(f) = floor {
                if !(f.fract() == 0.0 && f >= 1.0 && f <= capacity) {
                    return Err(Failure::Range(format!(
                        "floor must be a whole number from 1 to capacity ({capacity}), got {f}"
                    )));
                }
            }
            Ok((
                capacity as u32,
                floor.map(|f| f as u32),
                lease_options(kinds, scopes)?,
            ))
        })?;
        let store = self.store().arc().clone();
        let wake = Mutex::new(Some(on_leases));
        on_thread(
            env,
            "pollJobs",
            "telha-poll-open",
            move || {
                let feed = match floor {
                    Some(f) => store.lease_feed_floor(&worker_id, &opts, capacity, f)?,
                    None => store.lease_feed(&worker_id, &opts, capacity)?,
                }
                    .ok_or_else(|| {
                        Failure::Invalid(
                            "pollJobs needs a remote queue (Queue.connect); an embedded queue leases without a round trip".into(),
                        )
                    })?;
                let shared = Arc::new(Shared {
                    wake,
                    ..Shared::default()
                });
                let reader = shared.clone();
                let thread = std::thread::Builder::new()
                    .name("telha-poll-jobs".into())
                    .spawn(move || reader.read(feed))
                    .map_err(|e| {
                        CoreError::Storage(format!("cannot start a PollJobs reader thread: {e}"))
                    })?;
                Ok(NativeJobStream {
                    shared,
                    thread: Arc::new(Mutex::new(Some(thread))),
                    store,
                })
            },
            |s| s,
        )
    }
}

#[napi]
impl NativeJobStream {
    /// The leases that arrived since the last call (null when none did).
    /// A failure the stream met (it goes on reading; `CLOSED` ends it) is
    /// thrown once the leases before it were taken.
    #[napi]
    pub fn take(&self, env: Env) -> napi::Result<Option<LeasedBatch>> {
        guard(&env, "pollJobs", || {
            let jobs: Vec<Job> = lock(&self.shared.buf).drain(..).collect();
            if !jobs.is_empty() {
                return Ok(Some(LeasedBatch::from_core(jobs)));
            }
            let mut errors = lock(&self.shared.errors);
            if errors.is_empty() {
                return Ok(None);
            }
            Err(Failure::Core(errors.remove(0)))
        })
    }

    /// Whether the stream ended (closed, the server shutting down, the
    /// queue closed).
    #[napi(getter)]
    pub fn ended(&self) -> bool {
        self.shared.ended.load(Ordering::SeqCst)
    }

    /// End the stream (see the module docs): resolves with the number of
    /// leases read and not taken, which it released. Idempotent.
    #[napi(ts_return_type = "Promise<number>")]
    pub fn close<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        self.shared.closing.store(true, Ordering::SeqCst);
        // No more calls into JS: the reader may still be draining.
        drop(lock(&self.shared.wake).take());
        let thread = self.thread.clone();
        let shared = self.shared.clone();
        let store = self.store.clone();
        on_thread(
            env,
            "JobStream.close",
            "telha-poll-close",
            move || {
                let t = lock(&thread).take();
                if let Some(t) = t {
                    let _ = t.join();
                }
                let left: Vec<Job> = lock(&shared.buf).drain(..).collect();
                let mut released = 0u32;
                for job in &left {
                    // Lost or cancelled meanwhile: nothing to give back;
                    // one that cannot be released expires.
                    if store.release(&job.token()).is_ok() {
                        released += 1;
                    }
                }
                Ok(released)
            },
            |n| n,
        )
    }
}

impl Drop for NativeJobStream {
    /// Collected without `close()`: the reader ends by itself (closing the
    /// feed; the leases it read are left to expire); the JS thread never
    /// waits for it.
    fn drop(&mut self) {
        self.shared.closing.store(true, Ordering::SeqCst);
        drop(lock(&self.shared.wake).take());
    }
}
