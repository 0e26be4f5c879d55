//! Group commit for the log: appends write without sync and queue their
//! completion here; one thread syncs the WAL once for everything queued and
//! then completes it all, in order. Without it the cluster would commit at
//! most one entry per fsync (≈ 250/s at 4 ms), whatever the load.
//!
//! A lone append syncs on its caller's thread instead ([`Enqueue::sync_here`]):
//! when nothing is queued or being synced, handing the sync to the thread
//! and the completion back costs two thread wake-ups and saves nothing.
//! openraft 0.9's core awaits every append's completion before it does
//! anything else (it replicates to the followers only after the leader's
//! own flush), so on a Raft node every append is a lone one and each
//! wake-up sat on the write path twice per call (the leader's, then the
//! follower's). Appends that arrive while a sync runs, on either thread,
//! queue for the next group as before.

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
    /// A sync (and its completions) is running on some thread: whatever
    /// is queued meanwhile waits for it, so completions stay in order.
    busy: bool,
}

struct Shared {
    queue: Mutex<Queue>,
    wake: Condvar,
    syncs: AtomicU64,
    /// Set when a failpoint "crashed" the node: nothing is synced or
    /// completed as done any more.
    #[cfg(feature = "failpoints")]
    crashed: std::sync::atomic::AtomicBool,
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

    /// Sync on this thread and complete `done` here, before returning,
    /// when nothing else is queued or being synced; else [`Self::push`].
    pub(crate) fn sync_here(mut self, db: &DB, done: Done) {
        if !self.0.pending.is_empty() || self.0.busy || self.0.stop {
            return self.push(done);
        }
        self.0.busy = true;
        let shared = self.1;
        drop(self.0);
        sync_group(shared, db, vec![done]);
        let mut q = lock(&shared.queue);
        q.busy = false;
        let more = !q.pending.is_empty() || q.stop;
        drop(q);
        if more {
            shared.wake.notify_one();
        }
    }
}

impl Flusher {
    pub(crate) fn start(db: Arc<DB>) -> io::Result<Flusher> {
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue {
                pending: Vec::new(),
                stop: false,
                busy: false,
            }),
            wake: Condvar::new(),
            syncs: AtomicU64::new(0),
            #[cfg(feature = "failpoints")]
            crashed: Default::default(),
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
    /// Syncs and completes what is queued, then joins the thread. When
    /// the last handle of the log goes on the flusher thread itself (a
    /// completion held the last clone: the caller dropped the log while its
    /// callback ran), the thread is not joined (it cannot join itself): it
    /// finishes what is queued and ends on its own, holding its own handle
    /// of the DB until then.
    fn drop(&mut self) {
        lock(&self.shared.queue).stop = true;
        self.shared.wake.notify_one();
        if let Some(t) = self.thread.take() {
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
    }
}

fn lock(m: &Mutex<Queue>) -> MutexGuard<'_, Queue> {
    // A panicking completion cannot leave the queue half-updated.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn run(shared: &Shared, db: &DB) {
    loop {
        let group = {
            let mut q = lock(&shared.queue);
            while (q.pending.is_empty() || q.busy) && !q.stop {
                q = shared.wake.wait(q).unwrap_or_else(|e| e.into_inner());
            }
            while q.busy {
                // Stopping while a caller's sync runs: let it finish first.
                q = shared.wake.wait(q).unwrap_or_else(|e| e.into_inner());
            }
            if q.pending.is_empty() {
                return;
            }
            q.busy = true;
            std::mem::take(&mut q.pending)
        };
        sync_group(shared, db, group);
        lock(&shared.queue).busy = false;
    }
}

/// One sync of the WAL for `group` (everything in it was written before it
/// was queued), then its completions in order.
fn sync_group(shared: &Shared, db: &DB, group: Vec<Done>) {
    #[cfg(feature = "failpoints")]
    {
        use std::sync::atomic::Ordering::SeqCst;
        if shared.crashed.load(SeqCst)
            || crate::failpoint::hit(crate::failpoint::Point::BeforeLogFlush, db.path())
        {
            shared.crashed.store(true, SeqCst);
            return fail_crashed(group);
        }
    }
    let res = db.flush_wal(true);
    shared.syncs.fetch_add(1, Ordering::Relaxed);
    #[cfg(feature = "failpoints")]
    if crate::failpoint::hit(crate::failpoint::Point::AfterLogFlush, db.path()) {
        shared
            .crashed
            .store(true, std::sync::atomic::Ordering::SeqCst);
        return fail_crashed(group);
    }
    for done in group {
        done(match &res {
            Ok(()) => Ok(()),
            Err(e) => Err(io::Error::other(format!("syncing the raft log's WAL: {e}"))),
        });
    }
}

/// A failpoint crashed the node: its appends never complete as done.
#[cfg(feature = "failpoints")]
fn fail_crashed(group: Vec<Done>) {
    for done in group {
        done(Err(io::Error::other("failpoint: the node crashed")));
    }
}
