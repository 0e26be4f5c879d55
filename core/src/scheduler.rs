//! The scheduler thread: started by `open` beside the reaper (and, like
//! it, not with `reaper_interval = 0`), it sleeps until the earliest due
//! slot of any schedule, at most a second at a time (so a clock stepped
//! forward is noticed within a second), or until a put or a resume wakes
//! it, then runs a firing pass (`Engine::run_schedules`).

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::engine::{Engine, Wake};

/// The longest the thread sleeps while schedules exist.
const MAX_SLEEP: Duration = Duration::from_secs(1);

/// How long the thread sleeps with no schedule (a put wakes it).
const IDLE_SLEEP: Duration = Duration::from_secs(3600);

pub(crate) struct Scheduler {
    wake: Arc<Wake>,
    thread: Option<JoinHandle<()>>,
}

impl Scheduler {
    pub fn start(engine: Weak<Engine>, wake: Arc<Wake>) -> Scheduler {
        let w = wake.clone();
        let thread = std::thread::Builder::new()
            .name("telha-schedules".into())
            .spawn(move || loop {
                let sleep = {
                    let Some(e) = engine.upgrade() else { return };
                    let now = e.now();
                    match e.next_schedule_due() {
                        Some(at) if at <= now => Duration::ZERO,
                        Some(at) => Duration::from_millis(at - now).min(MAX_SLEEP),
                        None => IDLE_SLEEP,
                    }
                };
                if !sleep.is_zero() && w.wait(sleep) {
                    return;
                }
                let Some(e) = engine.upgrade() else { return };
                if e.shutting_down.load(Ordering::SeqCst) || e.is_fenced() {
                    return;
                }
                if e.run_schedules().is_err() {
                    e.metrics.schedule_errors.fetch_add(1, Ordering::Relaxed);
                    drop(e);
                    // Retried, but not in a tight loop.
                    if w.wait(MAX_SLEEP) {
                        return;
                    }
                }
            })
            .ok();
        Scheduler { wake, thread }
    }

    /// Tell the thread to stop, without waiting for it (a fence).
    pub fn signal(&self) {
        self.wake.stop();
    }

    /// Whether the thread has ended (tests of a fence).
    #[cfg(test)]
    pub fn is_finished(&self) -> bool {
        self.thread.as_ref().is_none_or(|t| t.is_finished())
    }

    /// Stop the thread and wait for it (unless called from it).
    pub fn stop(mut self) {
        self.wake.stop();
        if let Some(t) = self.thread.take() {
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
    }
}
