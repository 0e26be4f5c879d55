//! The notifier thread: how a commit in the core reaches asyncio without
//! the committing thread ever waiting for the GIL.
//!
//! A `JobWatch::on_done` callback and a `Subscription::set_notify` callback
//! run on the thread that committed the transition (a writer, or the
//! engine's event dispatcher), which must not be kept waiting. So they only
//! send the Python callable to this one thread (a channel send, no GIL);
//! it takes the GIL and calls it, and the callable (aio.py) hands the news
//! to its event loop with `loop.call_soon_threadsafe`. One thread for the
//! process, started by the first callback, not one thread per wait.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex, OnceLock};

use pyo3::prelude::*;

/// A Python callable to call with no arguments (shared: a subscription's
/// callback is sent once per wake-up; cloning the `Arc` needs no GIL).
pub type Callback = Arc<Py<PyAny>>;

static SENDER: OnceLock<Mutex<Sender<Callback>>> = OnceLock::new();

/// Set at interpreter exit (`atexit`): the thread no longer takes the GIL.
static SHUT_DOWN: AtomicBool = AtomicBool::new(false);

/// Have the notifier thread call `cb` (soon, with the GIL). Never waits.
pub fn call_soon(cb: Callback) {
    let tx = SENDER.get_or_init(|| {
        let (tx, rx) = channel::<Callback>();
        // Without a thread (resources exhausted) the sends below fail and
        // the waits end at their own timeouts.
        let _ = std::thread::Builder::new()
            .name("telha-jobs-notify".into())
            .spawn(move || run(rx));
        Mutex::new(tx)
    });
    if let Ok(tx) = tx.lock() {
        let _ = tx.send(cb);
    }
}

fn run(rx: Receiver<Callback>) {
    while let Ok(first) = rx.recv() {
        if SHUT_DOWN.load(Ordering::SeqCst) {
            // Dropped without the GIL: PyO3 defers the decref.
            continue;
        }
        Python::attach(|py| {
            let mut next = Some(first);
            // What else arrived meanwhile runs under the same GIL hold.
            while let Some(cb) = next.take().or_else(|| rx.try_recv().ok()) {
                if let Err(e) = cb.bind(py).call0() {
                    e.write_unraisable(py, None);
                }
                drop(cb);
            }
        });
    }
}

/// Registered with `atexit` by the module: after this the notifier thread
/// never takes the GIL again (a thread taking it while the interpreter
/// finalizes would hang).
#[pyfunction]
#[pyo3(name = "_notify_shutdown")]
pub fn shutdown() {
    SHUT_DOWN.store(true, Ordering::SeqCst);
}
