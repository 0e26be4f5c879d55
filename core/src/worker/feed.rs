//! Leasing ahead through a store's lease feed (a remote queue's `PollJobs`
//! stream): the server pushes leases up to the Worker's capacity, one
//! thread reads them into a local queue, and handler threads take from it,
//! so no handler waits a round trip for its next job.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::run::{lock, Shared};
use super::Count;
use crate::job::Job;
use crate::Result;

/// Leases pushed to a worker (see [`crate::JobStore::lease_feed`]); the
/// client crate's `JobStream` is one. The Worker ends it with
/// [`LeaseFeed::close`] when it stops, and gives back what that answers.
pub trait LeaseFeed: Send {
    /// The next batch of leases, waiting up to `timeout` (`None`: until one
    /// comes): `Ok(Some(empty))` when the timeout passed, `Ok(None)` once
    /// the feed has ended for good (the server is shutting down).
    fn next_batch(&mut self, timeout: Option<Duration>) -> Result<Option<Vec<Job>>>;

    /// End the feed gracefully: the source stops leasing, and the leases
    /// it delivered meanwhile are answered (the caller gives them back).
    /// The default delivers nothing more (dropping the feed ends it).
    fn close(&mut self) -> Result<Vec<Job>> {
        Ok(Vec::new())
    }
}

/// How often the feed thread looks up from its read to see a stop.
const FEED_SLICE: Duration = Duration::from_millis(100);

#[derive(Default)]
pub(crate) struct Feed {
    /// Leases delivered and not yet taken, with when they arrived.
    queue: Mutex<VecDeque<(Job, Instant)>>,
    ready: Condvar,
    ended: AtomicBool,
    pub(crate) thread: Mutex<Option<JoinHandle<()>>>,
}

impl Shared {
    fn feed(&self) -> &Feed {
        self.feed.as_ref().expect("a Worker leasing ahead")
    }

    /// The feed thread: read batches into the local queue until `stop`
    /// (the feed is then closed: what it still delivers joins the local
    /// queue, which `close_feed` gives back) or the feed ends.
    pub(crate) fn feed_loop(self: &Arc<Self>, mut src: Box<dyn LeaseFeed>) {
        let f = self.feed();
        self.read_feed(f, src.as_mut());
        match src.close() {
            Ok(jobs) => {
                let now = Instant::now();
                lock(&f.queue).extend(jobs.into_iter().map(|j| (j, now)));
            }
            Err(e) => self.error("closing the lease stream", &e),
        }
    }

    fn read_feed(self: &Arc<Self>, f: &Feed, src: &mut dyn LeaseFeed) {
        while !self.is_stopping() {
            match src.next_batch(Some(FEED_SLICE)) {
                Ok(Some(jobs)) if jobs.is_empty() => {}
                Ok(Some(jobs)) => {
                    let now = Instant::now();
                    lock(&f.queue).extend(jobs.into_iter().map(|j| (j, now)));
                    f.ready.notify_all();
                }
                Ok(None) => {
                    f.ended.store(true, Ordering::SeqCst);
                    f.ready.notify_all();
                    if !self.is_stopping() {
                        self.halt("its lease stream ended: the queue was closed".into());
                    }
                    return;
                }
                Err(e) => {
                    self.error("reading the lease stream", &e);
                    self.pause(Duration::from_secs(1));
                }
            }
        }
    }

    /// A handler thread's loop when leasing ahead: take the oldest lease
    /// that has not waited past a quarter of its TTL (the others go back
    /// unstarted) and run it.
    pub(crate) fn prefetched_loop(self: &Arc<Self>) {
        let f = self.feed();
        while !self.is_stopping() {
            let got = {
                let mut q = lock(&f.queue);
                if q.is_empty() && !f.ended.load(Ordering::SeqCst) {
                    q = f
                        .ready
                        .wait_timeout(q, self.s.poll_wait)
                        .map_or_else(|p| p.into_inner().0, |r| r.0);
                }
                q.pop_front()
            };
            let Some((job, since)) = got else {
                if f.ended.load(Ordering::SeqCst) {
                    return;
                }
                continue;
            };
            if self.is_stopping() {
                self.give_back(&job, Count::Released);
            } else if !super::run::fresh(&job, since) {
                self.give_back(&job, Count::PrefetchReleased);
            } else {
                self.run_one(job, Some(since));
            }
        }
    }

    /// On stop: wake the handler threads waiting for a lease.
    pub(crate) fn wake_feed(&self) {
        if let Some(f) = &self.feed {
            let _q = lock(&f.queue);
            f.ready.notify_all();
        }
    }

    /// On stop, after the handler threads: end the feed thread (dropping
    /// the stream), then give back what it delivered and nobody took.
    pub(crate) fn close_feed(&self) {
        let Some(f) = &self.feed else { return };
        if let Some(t) = lock(&f.thread).take() {
            let _ = t.join();
        }
        let left: Vec<Job> = lock(&f.queue).drain(..).map(|(job, _)| job).collect();
        self.give_back_all(&left);
    }
}
