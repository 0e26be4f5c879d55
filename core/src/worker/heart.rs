//! The heartbeat thread (one `heartbeat`/`extend` call for every due
//! lease; timeouts) and the graceful stop.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::context::{Delivery, StopReason};
use super::run::{lock, Key, Shared};
use super::Count;
use crate::job::Job;
use crate::{ErrorKind, Failure};

/// The longest the heartbeat thread sleeps with nothing due (so it notices
/// the stop promptly even if a wake-up were missed).
const IDLE_WAKE: Duration = Duration::from_millis(500);
/// After a heartbeat call that failed, a lease still inside its TTL is
/// tried again this soon.
const RETRY_BEAT: Duration = Duration::from_millis(100);
/// How long `stop` waits past its timeout to send the gathered completions
/// and release what is held.
pub(crate) const STOP_GRACE: Duration = Duration::from_millis(500);

type Due = Vec<(Key, Arc<Delivery>)>;

impl Shared {
    pub(crate) fn heart_loop(self: &Arc<Self>) {
        loop {
            let Some((due, late)) = self.next_due() else {
                return;
            };
            self.time_out(late);
            if !due.is_empty() {
                self.beat(due);
            }
        }
    }

    /// Sleep until some lease is due for a heartbeat or past its timeout;
    /// `None` when the thread should end.
    fn next_due(&self) -> Option<(Due, Due)> {
        let mut st = lock(&self.state);
        loop {
            if st.heart_exit {
                return None;
            }
            let now = Instant::now();
            let (mut due, mut late) = (Vec::new(), Vec::new());
            let mut next = now + IDLE_WAKE;
            for (k, h) in &st.held {
                if h.d.reason().is_some() {
                    continue;
                }
                if h.timeout_at.is_some_and(|t| t <= now) {
                    late.push((*k, h.d.clone()));
                } else if h.next_beat.is_some_and(|b| b <= now) {
                    due.push((*k, h.d.clone()));
                }
                for t in [h.timeout_at, h.next_beat].into_iter().flatten() {
                    next = next.min(t);
                }
            }
            if !due.is_empty() || !late.is_empty() {
                return Some((due, late));
            }
            let pause = next
                .saturating_duration_since(now)
                .max(Duration::from_millis(1));
            st.beat_at = Some(now + pause);
            st = self
                .cond
                .wait_timeout(st, pause)
                .map_or_else(|p| p.into_inner().0, |r| r.0);
            st.beat_at = None;
        }
    }

    /// Fail, retryably, the jobs whose handlers ran past their kind's
    /// timeout, and tell the handlers.
    fn time_out(self: &Arc<Self>, late: Due) {
        for (_, d) in late {
            let held = self.unhold(&d);
            d.mark(StopReason::TimedOut);
            if !held {
                continue;
            }
            let secs = d.job.timeout_ms.unwrap_or(0) as f64 / 1000.0;
            let why = format!("timed out after {secs}s (the kind's timeout)");
            self.fail(&d, Failure::new(d.job.token(), why), Count::TimedOut);
        }
    }

    fn beat(self: &Arc<Self>, due: Due) {
        let tokens: Vec<_> = due.iter().map(|(_, d)| d.job.token()).collect();
        // The handlers' latest progress rides on this heartbeat.
        let progress: Vec<_> = due.iter().map(|(_, d)| d.take_progress()).collect();
        let sent = Instant::now();
        let answers = if progress.iter().any(Option::is_some) {
            self.store.heartbeat(&tokens, &progress, &self.s.worker_id)
        } else {
            self.store.extend(&tokens, &self.s.worker_id)
        };
        let answers = match answers {
            Ok(a) => a,
            Err(e) => {
                for ((_, d), p) in due.iter().zip(progress) {
                    d.restore_progress(p);
                }
                self.error("heartbeat", &e);
                // Unrenewed past its TTL (the server unreachable, say), a
                // lease is lost: the handler is told, as when extend says so.
                let now = Instant::now();
                let mut st = lock(&self.state);
                for (k, d) in &due {
                    let Some(h) = st.held.get_mut(k).filter(|h| Arc::ptr_eq(&h.d, d)) else {
                        continue;
                    };
                    if now >= h.expires {
                        d.mark(StopReason::Lost);
                        h.next_beat = None;
                    } else {
                        h.next_beat = Some(now + RETRY_BEAT);
                    }
                }
                return;
            }
        };
        let now = Instant::now();
        let mut st = lock(&self.state);
        for ((k, d), a) in due.iter().zip(answers) {
            let Some(h) = st.held.get_mut(k).filter(|h| Arc::ptr_eq(&h.d, d)) else {
                continue; // settled while the heartbeat was out
            };
            match a {
                Ok(_) => {
                    h.next_beat = Some(now + h.ttl / 3);
                    h.expires = sent + h.ttl;
                }
                // Still held: the handler's settle records it cancelled.
                Err(e) if e.kind() == ErrorKind::Cancelled => {
                    d.mark(StopReason::Cancelled);
                    h.next_beat = None;
                }
                Err(_) => {
                    d.mark(StopReason::Lost);
                    h.next_beat = None;
                }
            }
        }
    }

    /// Stop leasing, wait up to `timeout` for running handlers, send the
    /// completions gathered, release what is still held (no attempt spent).
    pub(crate) fn stop(self: &Arc<Self>, timeout: Duration) {
        {
            let mut st = lock(&self.state);
            if st.stop_begun {
                // Another thread stops it: wait for that.
                let end = Instant::now().checked_add(timeout + Duration::from_secs(10));
                while !st.stopped {
                    let left =
                        end.map_or(IDLE_WAKE, |e| e.saturating_duration_since(Instant::now()));
                    if left.is_zero() {
                        return;
                    }
                    st = self
                        .cond
                        .wait_timeout(st, left)
                        .map_or_else(|p| p.into_inner().0, |r| r.0);
                }
                return;
            }
            st.stop_begun = true;
        }
        self.stopping.store(true, Ordering::SeqCst);
        self.cancel.cancel();
        self.cond.notify_all();
        self.wake_feed();
        let end = Instant::now().checked_add(timeout);
        let me = usize::from(super::run::ON_HANDLER_THREAD.with(|c| c.get()));
        let mut st = lock(&self.state);
        while st.live > me {
            let left = end.map_or(IDLE_WAKE, |e| e.saturating_duration_since(Instant::now()));
            if left.is_zero() {
                break;
            }
            st = self
                .cond
                .wait_timeout(st, left)
                .map_or_else(|p| p.into_inner().0, |r| r.0);
        }
        drop(st);
        // The network half runs on a thread of its own so a silent server
        // holds `stop` no longer than the grace; a lease never released
        // expires after its TTL.
        let me = self.clone();
        let finish = std::thread::Builder::new()
            .name(format!("{}-stop", self.s.worker_id))
            .spawn(move || me.finish());
        if finish.is_err() {
            self.finish();
        }
        let grace = end
            .map_or(STOP_GRACE, |e| e.saturating_duration_since(Instant::now()))
            .max(STOP_GRACE);
        let until = Instant::now() + grace;
        let mut st = lock(&self.state);
        while !st.finished {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            st = self
                .cond
                .wait_timeout(st, left)
                .map_or_else(|p| p.into_inner().0, |r| r.0);
        }
        st.stopped = true;
        self.cond.notify_all();
    }

    /// `stop`'s network half: the queued completions go out, then the
    /// leases still held go back.
    fn finish(self: &Arc<Self>) {
        self.wait_batch_idle(Instant::now() + Duration::from_secs(5));
        self.close_feed();
        let left: Vec<_> = lock(&self.state).held.drain().map(|(_, h)| h.d).collect();
        for d in &left {
            d.mark(StopReason::Released);
        }
        let jobs: Vec<Job> = left.iter().map(|d| d.job.clone()).collect();
        self.give_back_all(&jobs);
        lock(&self.state).heart_exit = true;
        self.cond.notify_all();
        if let Some(h) = lock(&self.heart).take() {
            let _ = h.join();
        }
        lock(&self.state).finished = true;
        self.cond.notify_all();
    }
}
