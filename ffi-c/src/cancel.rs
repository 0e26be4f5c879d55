//! `tj_cancel`: ends lease waits and `tj_queue_wait`s from another thread,
//! or (`tj_cancel_trigger`) from a signal handler.
//!
//! A trigger only stores an atomic flag and writes one byte to a socket
//! (both async-signal-safe); a library thread (the "pump", running while
//! any token lives) reads that byte and does what
//! `tj_cancel_cancel` does for every triggered token: cancel the core's
//! `CancelWait` (which wakes lease waits) and the `JobWatch`es of the
//! `tj_queue_wait`s using it.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};

use telha_jobs_core::{CancelWait, JobWatch};

use crate::boundary;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A cancel token for lease waits (see `tj_lease_options_set_cancel`) and
/// job waits (`tj_queue_wait`). Thread-safe: cancel it from any thread
/// while a call waits on another, or trigger it from a signal handler.
/// Owned by the caller (`tj_cancel_new` / `tj_cancel_free`).
#[allow(non_camel_case_types)]
pub struct tj_cancel {
    pub(crate) shared: Arc<Shared>,
}

pub(crate) struct Shared {
    pub(crate) token: CancelWait,
    /// Set by `tj_cancel_trigger` (the pump then cancels the rest).
    triggered: AtomicBool,
    watches: Mutex<Watches>,
}

#[derive(Default)]
struct Watches {
    /// Set once `cancel` ran: later registrations cancel themselves.
    cancelled: bool,
    list: Vec<Weak<JobWatch>>,
}

impl Shared {
    /// Cancel everything using this token (not async-signal-safe: locks).
    fn cancel(&self) {
        self.token.cancel();
        let list = {
            let mut w = lock(&self.watches);
            w.cancelled = true;
            std::mem::take(&mut w.list)
        };
        for w in list.iter().filter_map(Weak::upgrade) {
            w.cancel();
        }
    }

    pub(crate) fn is_cancelled(&self) -> bool {
        self.triggered.load(Ordering::SeqCst) || self.token.is_cancelled()
    }

    /// Have `cancel` end `w`'s waits; cancels it at once when this token
    /// is cancelled (or triggered) already.
    pub(crate) fn register(&self, w: &Arc<JobWatch>) {
        let mut g = lock(&self.watches);
        if g.cancelled || self.triggered.load(Ordering::SeqCst) {
            drop(g);
            w.cancel();
            return;
        }
        g.list.retain(|x| x.strong_count() > 0);
        g.list.push(Arc::downgrade(w));
    }
}

/// The pump: the writing end a trigger writes to, the reading end its
/// thread blocks on (kept here so the writer never sees a closed peer), the
/// live tokens it scans when woken, and its thread. The thread runs while
/// any token lives: the first `tj_cancel_new` starts it, the
/// `tj_cancel_free` of the last token stops and joins it (so a program that
/// frees its tokens leaves no thread behind).
struct Pump {
    tx: UnixStream,
    rx: UnixStream,
    stop: AtomicBool,
    live: Mutex<Vec<Weak<Shared>>>,
    /// Also serializes starting and stopping (the thread never takes it).
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

static PUMP: OnceLock<Option<Pump>> = OnceLock::new();

fn pump() -> Option<&'static Pump> {
    PUMP.get_or_init(|| {
        let (tx, rx) = UnixStream::pair().ok()?;
        // A trigger must never block (a full socket means a wake is pending).
        tx.set_nonblocking(true).ok()?;
        Some(Pump {
            tx,
            rx,
            stop: AtomicBool::new(false),
            live: Mutex::new(Vec::new()),
            thread: Mutex::new(None),
        })
    })
    .as_ref()
}

/// Count a new token in, starting the thread if it is not running.
fn enroll(shared: &Arc<Shared>) {
    let Some(p) = pump() else { return };
    let mut thread = lock(&p.thread);
    {
        let mut live = lock(&p.live);
        live.retain(|s| s.strong_count() > 0);
        live.push(Arc::downgrade(shared));
    }
    if thread.is_none() {
        *thread = std::thread::Builder::new()
            .name("telha-c-cancel".into())
            .spawn(move || pump_loop(p))
            .ok();
    }
}

/// After a token was freed: stop and join the thread when none is left.
fn unenroll() {
    let Some(Some(p)) = PUMP.get() else { return };
    let mut thread = lock(&p.thread);
    {
        let mut live = lock(&p.live);
        live.retain(|s| s.strong_count() > 0);
        if !live.is_empty() {
            return;
        }
    }
    let Some(t) = thread.take() else { return };
    p.stop.store(true, Ordering::SeqCst);
    // If the socket is full the thread has bytes to read all the same.
    let _ = (&p.tx).write(&[0]);
    let _ = t.join();
    p.stop.store(false, Ordering::SeqCst);
}

fn pump_loop(p: &'static Pump) {
    let mut buf = [0u8; 64];
    loop {
        match (&p.rx).read(&mut buf) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return,
        }
        if p.stop.load(Ordering::SeqCst) {
            return;
        }
        let _ = std::panic::catch_unwind(|| {
            let due: Vec<Arc<Shared>> = lock(&p.live)
                .iter()
                .filter_map(Weak::upgrade)
                .filter(|s| s.triggered.load(Ordering::SeqCst) && !s.token.is_cancelled())
                .collect();
            for s in due {
                s.cancel();
            }
        });
    }
}

/// A new token, not cancelled. Never NULL.
#[no_mangle]
pub extern "C" fn tj_cancel_new() -> *mut tj_cancel {
    let shared = Arc::new(Shared {
        token: CancelWait::new(),
        triggered: AtomicBool::new(false),
        watches: Mutex::new(Watches::default()),
    });
    // Registering with the pump is best effort: without it a trigger still
    // ends `tj_queue_wait`s within 100 ms (they look at the flag).
    let _ = std::panic::catch_unwind(|| enroll(&shared));
    Box::into_raw(Box::new(tj_cancel { shared }))
}

/// Cancel: every lease wait and `tj_queue_wait` using this token returns
/// promptly with what it has (usually no job / the job's current state,
/// `TJ_STATUS_OK`). Permanent: later calls with it do not wait. Idempotent;
/// NULL does nothing. Thread-safe, never blocks for long, but not
/// async-signal-safe (it takes locks): from a signal handler use
/// `tj_cancel_trigger`.
///
/// # Safety
/// `cancel` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_cancel_cancel(cancel: *const tj_cancel) {
    if let Some(c) = unsafe { cancel.as_ref() } {
        boundary::run_infallible((), || c.shared.cancel());
    }
}

/// `tj_cancel_cancel` that may be called from a signal handler (e.g. on
/// SIGINT) as well as from any thread: it only sets an atomic flag and
/// writes one byte to a socket (both async-signal-safe; no lock, no
/// allocation); a library thread then cancels the waits, within
/// microseconds. A `tj_queue_wait` sees the flag itself within 100 ms
/// should that thread be missing (it could not be started). NULL does
/// nothing.
///
/// # Safety
/// `cancel` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_cancel_trigger(cancel: *const tj_cancel) {
    let Some(c) = (unsafe { cancel.as_ref() }) else {
        return;
    };
    c.shared.triggered.store(true, Ordering::SeqCst);
    // `get`, not `get_or_init`: a handler must not initialize anything.
    if let Some(Some(p)) = PUMP.get() {
        let _ = (&p.tx).write(&[1]);
    }
}

/// Whether `tj_cancel_cancel` or `tj_cancel_trigger` was called (false for NULL).
///
/// # Safety
/// `cancel` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_cancel_is_cancelled(cancel: *const tj_cancel) -> bool {
    unsafe { cancel.as_ref() }.is_some_and(|c| c.shared.is_cancelled())
}

/// Free a token (lease options given it keep their own reference; a wait
/// using it must have returned). Freeing the last live token also stops the
/// library thread that serves `tj_cancel_trigger` (it is started again by
/// the next `tj_cancel_new`). NULL does nothing.
///
/// # Safety
/// `cancel` is NULL or a `tj_cancel` not freed before, and no thread is using it.
#[no_mangle]
pub unsafe extern "C" fn tj_cancel_free(cancel: *mut tj_cancel) {
    if cancel.is_null() {
        return;
    }
    boundary::free_box(cancel);
    boundary::run_infallible((), unenroll);
}
