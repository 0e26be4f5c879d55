//! The client's runtime: one current-thread tokio runtime, driven by the
//! calling thread while it is in a call.
//!
//! A multi-thread runtime put two thread hand-offs in every call (the
//! caller wakes a runtime worker to write the request, the worker wakes the
//! caller with the answer); on a busy machine each costs a scheduling
//! delay, which was most of a loopback call's time. Here the caller's
//! `block_on` drives the connection itself: it writes the request, reads
//! the answer and returns, on one thread. Several threads calling at once
//! share the runtime (one drives the I/O at a time, tokio hands the driver
//! over when it returns).
//!
//! Between calls, a keeper thread drives the connection (HTTP/2 pings,
//! stream window updates) once no call has run for [`LINGER`]; the first
//! call after that asks it to give the runtime back (one hand-off, only
//! after an idle spell). While background tasks run ([`Driver::spawn`]:
//! remote job watches and event subscriptions), the keeper drives the
//! runtime as soon as no call does, so they are never left undriven.

use std::future::Future;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use telha_jobs::{Error, Result};
use tokio::runtime::Runtime;
use tokio::sync::Notify;

/// How long the connection may go undriven after a call (well inside the
/// server's 20 s keep-alive timeout).
pub(crate) const LINGER: Duration = Duration::from_millis(200);

struct State {
    /// Calls inside `block_on` now.
    active: usize,
    /// The keeper is driving the runtime.
    keeper_in: bool,
    /// When the last call ended.
    last: Instant,
    stop: bool,
    /// Background tasks running ([`Driver::spawn`]).
    tasks: usize,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
    /// Ends the keeper's turn (a call wants the runtime, or stop).
    leave: Notify,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

pub(crate) struct Driver {
    rt: Option<Arc<Runtime>>,
    shared: Arc<Shared>,
}

impl Driver {
    pub(crate) fn new() -> Result<Driver> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Error::Storage(format!("client runtime: {e}")))?;
        let rt = Arc::new(rt);
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                active: 0,
                keeper_in: false,
                last: Instant::now(),
                stop: false,
                tasks: 0,
            }),
            changed: Condvar::new(),
            leave: Notify::new(),
        });
        let (r2, s2) = (rt.clone(), shared.clone());
        std::thread::Builder::new()
            .name("telha-client".into())
            .spawn(move || keep(r2, s2))
            .map_err(|e| Error::Storage(format!("client thread: {e}")))?;
        Ok(Driver {
            rt: Some(rt),
            shared,
        })
    }

    /// Enter the runtime's context (channels spawn their workers on it).
    pub(crate) fn enter(&self) -> Result<tokio::runtime::EnterGuard<'_>> {
        Ok(self.rt.as_ref().ok_or(Error::Closed)?.enter())
    }

    /// Run `f` to completion on this thread, driving the connection.
    pub(crate) fn block_on<F: Future>(&self, f: F) -> Result<F::Output> {
        let rt = self.rt.as_ref().ok_or(Error::Closed)?;
        {
            let mut s = self.shared.lock();
            s.active += 1;
            if s.keeper_in {
                self.shared.leave.notify_one();
            }
        }
        struct Done<'a>(&'a Shared);
        impl Drop for Done<'_> {
            fn drop(&mut self) {
                let mut s = self.0.lock();
                s.active -= 1;
                s.last = Instant::now();
                if s.active == 0 && s.tasks > 0 {
                    // Background tasks need a driver now.
                    self.0.changed.notify_all();
                }
            }
        }
        let _done = Done(&self.shared);
        Ok(rt.block_on(f))
    }

    /// Run `f` in the background on the runtime (driven by the calls in
    /// progress, else by the keeper at once). Ends with the runtime.
    pub(crate) fn spawn<F>(&self, f: F) -> Result<tokio::task::JoinHandle<()>>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let rt = self.rt.as_ref().ok_or(Error::Closed)?;
        struct TaskDone(Arc<Shared>);
        impl Drop for TaskDone {
            fn drop(&mut self) {
                self.0.lock().tasks -= 1;
            }
        }
        self.shared.lock().tasks += 1;
        self.shared.changed.notify_all();
        let done = TaskDone(self.shared.clone());
        Ok(rt.spawn(async move {
            let _done = done;
            f.await;
        }))
    }
}

impl Drop for Driver {
    /// Never blocks (the last clone may be dropped inside another
    /// runtime): the keeper thread shuts the runtime down.
    fn drop(&mut self) {
        self.shared.lock().stop = true;
        self.shared.changed.notify_all();
        self.shared.leave.notify_one();
        drop(self.rt.take());
    }
}

fn keep(rt: Arc<Runtime>, shared: Arc<Shared>) {
    loop {
        {
            let mut s = shared.lock();
            loop {
                if s.stop {
                    drop(s);
                    return shut_down(rt);
                }
                let idle = s.last.elapsed();
                if s.active == 0 && (idle >= LINGER || s.tasks > 0) {
                    break;
                }
                let wait = if s.active > 0 { LINGER } else { LINGER - idle };
                s = shared
                    .changed
                    .wait_timeout(s, wait)
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
            }
            s.keeper_in = true;
        }
        rt.block_on(shared.leave.notified());
        shared.lock().keeper_in = false;
    }
}

/// Once the driver has let go of the runtime (it does right after asking
/// the keeper to stop), shut it down without waiting for its tasks.
fn shut_down(mut rt: Arc<Runtime>) {
    loop {
        match Arc::try_unwrap(rt) {
            Ok(r) => return r.shutdown_background(),
            Err(again) => {
                rt = again;
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }
}
