//! Group commit for the log: appends write without sync and queue their
//! completion here; one thread syncs the WAL once for everything queued and
//! then completes it all, in order. Without it the cluster would commit at
//! most one entry per fsync (≈ 250/s at 4 ms), whatever the load.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use rocksdb::DB;

/// Called once the entries written before it are on disk (or the sync failed).
pub(crate) type Done = Box<dyn FnOnce(io::Result<()>) + Send>;

struct Queue {
    pending: Vec<Done>,
    stop: bool,
}

struct Shared {
    queue: Mutex<Queue>,
    wake: Condvar,
    syncs: AtomicU64,
}

pub(crate) struct Flusher {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

/// Held while writing: completions queue in the order their writes landed,
/// so they fire in log order.
pub(crate) struct Enqueue<'a>(MutexGuard<'a, Queue>, &'a Shared);

impl Enqueue<'_> {
    pub(crate) fn push(mut self, done: Done) {
        self.0.pending.push(done);
        drop(self.0);
        self.1.wake.notify_one();
    }
}

impl Flusher {
    pub(crate) fn start(db: Arc<DB>) -> io::Result<Flusher> {
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue {
                pending: Vec::new(),
                stop: false,
            }),
            wake: Condvar::new(),
            syncs: AtomicU64::new(0),
        });
        let s = shared.clone();
        // A plain thread: the sync blocks for milliseconds, which must not
        // hold one of the Raft runtime's few workers.
        let thread = std::thread::Builder::new()
            .name("telha-raft-log-sync".into())
            .spawn(move || run(&s, &db))?;
        Ok(Flusher {
            shared,
            thread: Some(thread),
        })
    }

    /// Lock the queue; write, then [`Enqueue::push`] the completion.
    pub(crate) fn enqueue(&self) -> Enqueue<'_> {
        Enqueue(lock(&self.shared.queue), &self.shared)
    }

    pub(crate) fn syncs(&self) -> u64 {
        self.shared.syncs.load(Ordering::Relaxed)
    }
}

impl Drop for Flusher {
    /// Syncs and completes what is queued, then joins the thread.
    fn drop(&mut self) {
        lock(&self.shared.queue).stop = true;
        self.shared.wake.notify_one();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn lock(m: &Mutex<Queue>) -> MutexGuard<'_, Queue> {
    // A panicking completion cannot leave the queue half-updated.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn run(shared: &Shared, db: &DB) {
    // Set when a failpoint "crashed" the node: nothing is synced or
    // completed as done any more.
    #[cfg(feature = "failpoints")]
    let mut crashed = false;
    loop {
        let group = {
            let mut q = lock(&shared.queue);
            while q.pending.is_empty() && !q.stop {
                q = shared.wake.wait(q).unwrap_or_else(|e| e.into_inner());
            }
            if q.pending.is_empty() {
                return;
            }
            std::mem::take(&mut q.pending)
        };
        #[cfg(feature = "failpoints")]
        if crashed || crate::failpoint::hit(crate::failpoint::Point::BeforeLogFlush, db.path()) {
            crashed = true;
            fail_crashed(group);
            continue;
        }
        // Everything in `group` was written before it was queued, so one
        // sync of the WAL covers it all.
        let res = db.flush_wal(true);
        shared.syncs.fetch_add(1, Ordering::Relaxed);
        #[cfg(feature = "failpoints")]
        if crate::failpoint::hit(crate::failpoint::Point::AfterLogFlush, db.path()) {
            crashed = true;
            fail_crashed(group);
            continue;
        }
        for done in group {
            done(match &res {
                Ok(()) => Ok(()),
                Err(e) => Err(io::Error::other(format!("syncing the raft log's WAL: {e}"))),
            });
        }
    }
}

/// A failpoint crashed the node: its appends never complete as done.
#[cfg(feature = "failpoints")]
fn fail_crashed(group: Vec<Done>) {
    for done in group {
        done(Err(io::Error::other("failpoint: the node crashed")));
    }
}
