//! Where committed transitions go besides the store: subscriptions
//! (`Queue::subscribe`) and job watches (`Queue::watch`, `Queue::wait`).
//!
//! Cost when nobody listens: one atomic load per staged move (events) and,
//! per commit with a terminal move, a push of its id and one atomic load
//! (waiters). With subscribers, a commit whose moves were collected takes
//! the `order` lock across its write and the append of its events to
//! `pending`, so events are in commit order exactly; a
//! dispatcher thread (started by the first subscription) hands them, in
//! batches gathered for up to a millisecond, to each subscriber's own
//! bounded buffer (a push under its lock, never a wait), so a committer's
//! cost does not grow with the subscribers.
//!
//! Exactness: a watch registers before it reads the job's state, and a
//! committer reads the waiter count after its write, so a terminal move is
//! never missed (one of the two sees the other). A subscription sees every
//! transition of the transactions that began after `subscribe` returned;
//! one already staged without collecting is not shown, nor is anything
//! committed before it began (each sink keeps the order number it began
//! at).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::Duration;

use crate::error::{Error, Result};
use crate::event::Event;
use crate::job::JobId;
use crate::watch::{EventSink, JobEvent, JobWatch, SubscribeOptions, Subscription, WatchSink};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// One staged move's event, before its commit orders it.
pub(crate) struct Staged {
    pub event: Event,
    pub id: JobId,
    pub kind: Arc<str>,
    pub scope: crate::job::Scope,
    pub attempt: u32,
    pub worker_id: Option<Arc<str>>,
    pub progress: Option<Arc<[u8]>>,
}

#[derive(Default)]
pub(crate) struct HubInner {
    subs_n: AtomicUsize,
    /// Each subscription with the order number it began at: it is offered
    /// only events committed after that.
    subs: Mutex<Vec<(EventSink, u64)>>,
    /// Events ordered so far (each subscription numbers its own, see
    /// `EventSink::offer_numbered`); held across a collected commit.
    order: Mutex<u64>,
    /// Events committed and not yet handed to the subscriptions, in order.
    pending: Mutex<Vec<JobEvent>>,
    pending_cv: Condvar,
    /// Held while a batch of `pending` is taken and handed out, so batches
    /// reach the subscriptions in commit order.
    delivery: Mutex<()>,
    dispatcher: AtomicBool,
    /// The dispatcher sleeps on `pending_cv` (see [`dispatch`]).
    idle: AtomicBool,
    closed: AtomicBool,
    waiters_n: AtomicUsize,
    waiters: Mutex<HashMap<JobId, Vec<WatchSink>>>,
}

impl HubInner {
    /// Hand every pending event to the subscriptions that want it.
    fn deliver(&self) {
        let _d = lock(&self.delivery);
        let batch = std::mem::take(&mut *lock(&self.pending));
        if batch.is_empty() {
            return;
        }
        let mut subs = lock(&self.subs);
        // One lock and at most one wake per subscription per batch.
        for (sink, from) in subs.iter() {
            sink.offer_numbered(
                batch
                    .iter()
                    .filter(|ev| ev.seq > *from && sink.wants(&ev.kind, &ev.scope, ev.event))
                    .cloned(),
            );
        }
        let before = subs.len();
        subs.retain(|(s, _)| !s.is_gone());
        let gone = before - subs.len();
        if gone > 0 {
            self.subs_n.fetch_sub(gone, Ordering::AcqRel);
        }
    }
}

/// The dispatcher thread: hands committed events to subscriptions off the
/// committers' threads (a committer pays one push and at most one wake,
/// however many subscribers there are). Ends when the hub closes or goes.
///
/// After each delivery it pauses [`COALESCE`] before looking again, so a
/// busy engine is served in batches (one wake of the dispatcher and of
/// each reader per batch, not per commit); the first event after a quiet
/// spell goes out at once. A committer wakes the dispatcher only when it
/// sleeps on the condvar (`idle`, read and written under `pending`).
fn dispatch(hub: Weak<HubInner>) {
    loop {
        let Some(h) = hub.upgrade() else { return };
        {
            let mut p = lock(&h.pending);
            if p.is_empty() {
                if h.closed.load(Ordering::SeqCst) {
                    return;
                }
                h.idle.store(true, Ordering::SeqCst);
                p = h
                    .pending_cv
                    .wait_timeout(p, Duration::from_secs(1))
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
                h.idle.store(false, Ordering::SeqCst);
            }
            if p.is_empty() {
                continue;
            }
        }
        h.deliver();
        drop(h);
        std::thread::sleep(COALESCE);
    }
}

/// How long the dispatcher lets events gather after a delivery: the most
/// a subscriber's event waits behind a busy engine.
const COALESCE: Duration = Duration::from_millis(1);

/// The engine's fan-out (see the module docs).
#[derive(Default)]
pub(crate) struct Hub(Arc<HubInner>);

impl Hub {
    /// Whether staged moves should be collected as events.
    pub fn collecting(&self) -> bool {
        self.0.subs_n.load(Ordering::Acquire) > 0
    }

    /// Whether anyone waits for a job (read after the commit's write).
    pub fn has_waiters(&self) -> bool {
        self.0.waiters_n.load(Ordering::SeqCst) > 0
    }

    pub fn subscribe(&self, options: SubscribeOptions) -> Result<Subscription> {
        let (sub, sink) = Subscription::channel(options)?;
        if !self.0.dispatcher.swap(true, Ordering::SeqCst) {
            let hub = Arc::downgrade(&self.0);
            let started = std::thread::Builder::new()
                .name("telha-events".into())
                .spawn(move || dispatch(hub));
            if let Err(e) = started {
                self.0.dispatcher.store(false, Ordering::SeqCst);
                return Err(Error::Storage(format!("event dispatcher thread: {e}")));
            }
        }
        // Under `order`, so no collected commit is half-published to it.
        let order = lock(&self.0.order);
        lock(&self.0.subs).push((sink, *order));
        self.0.subs_n.fetch_add(1, Ordering::AcqRel);
        Ok(sub)
    }

    /// Run `write`, then number its events in commit order (`seq` until
    /// delivery renumbers them per subscription) and queue them for the
    /// dispatcher, all under `order`.
    pub fn commit_ordered(
        &self,
        now: u64,
        staged: Vec<Staged>,
        write: impl FnOnce() -> Result<()>,
    ) -> Result<()> {
        let mut seq = lock(&self.0.order);
        write()?;
        let mut pending = lock(&self.0.pending);
        for s in staged {
            *seq += 1;
            let ev = JobEvent {
                seq: *seq,
                ts: now,
                id: s.id,
                kind: s.kind,
                scope: s.scope,
                event: s.event,
                attempt: s.attempt,
                worker_id: s.worker_id,
                progress: s.progress,
                missed: 0,
            };
            pending.push(ev);
        }
        let idle = self.0.idle.load(Ordering::SeqCst);
        drop(pending);
        if idle {
            self.0.pending_cv.notify_one();
        }
        Ok(())
    }

    /// Register a watch of `id`. `state` reads the job's state *after* the
    /// registration: `Ok(None)` for no such job (the watch is dropped and
    /// `NotFound` answered), `Ok(Some(true))` when it is already done.
    pub fn watch(
        &self,
        id: JobId,
        state: impl FnOnce() -> Result<Option<bool>>,
    ) -> Result<JobWatch> {
        let (w, sink) = JobWatch::channel(id);
        lock(&self.0.waiters)
            .entry(id)
            .or_default()
            .push(sink.clone());
        self.0.waiters_n.fetch_add(1, Ordering::SeqCst);
        let hub: Weak<HubInner> = Arc::downgrade(&self.0);
        let mine = sink.clone();
        w.on_drop(Box::new(move || {
            if let Some(h) = hub.upgrade() {
                Hub::unregister(&h, &mine);
            }
        }));
        match state() {
            Ok(Some(done)) => {
                if done {
                    sink.fire(None);
                }
                Ok(w)
            }
            Ok(None) => Err(Error::NotFound(format!("no job {id}"))),
            Err(e) => Err(e),
        }
    }

    fn unregister(h: &HubInner, sink: &WatchSink) {
        let mut map = lock(&h.waiters);
        if let Some(v) = map.get_mut(&sink.id()) {
            let before = v.len();
            v.retain(|s| !s.same(sink));
            if v.len() < before {
                h.waiters_n.fetch_sub(1, Ordering::SeqCst);
            }
            if v.is_empty() {
                map.remove(&sink.id());
            }
        }
    }

    /// Fire the watches of jobs that reached a terminal state or were
    /// removed (their sinks run outside the map's lock).
    pub fn fire(&self, ids: &[JobId]) {
        let mut fired = Vec::new();
        {
            let mut map = lock(&self.0.waiters);
            for id in ids {
                if let Some(v) = map.remove(id) {
                    self.0.waiters_n.fetch_sub(v.len(), Ordering::SeqCst);
                    fired.extend(v);
                }
            }
        }
        for s in fired {
            s.fire(None);
        }
    }

    /// The store is closing: every subscription ends (`Closed`) and every
    /// watch fires (its reader then finds the queue closed).
    pub fn close_all(&self) {
        self.end_all(None);
    }

    /// [`Hub::close_all`], the subscriptions ending as `Unavailable` with
    /// `fenced` when given (a fenced engine), else as closed. Takes the
    /// hub's delivery, pending, subs and waiters locks, never `order`.
    pub fn end_all(&self, fenced: Option<String>) {
        // What was committed before the close still reaches its readers.
        self.0.deliver();
        self.0.closed.store(true, Ordering::SeqCst);
        self.0.pending_cv.notify_all();
        let subs = std::mem::take(&mut *lock(&self.0.subs));
        self.0.subs_n.store(0, Ordering::Release);
        for (s, _) in subs {
            match &fenced {
                Some(why) => s.end_unavailable(why.clone()),
                None => s.end(None),
            }
        }
        let waiters = std::mem::take(&mut *lock(&self.0.waiters));
        self.0.waiters_n.store(0, Ordering::SeqCst);
        for s in waiters.into_values().flatten() {
            s.fire(None);
        }
    }

    /// Live subscriptions and watches (for metrics and tests).
    pub fn counts(&self) -> (usize, usize) {
        (
            lock(&self.0.subs)
                .iter()
                .filter(|(s, _)| !s.is_gone())
                .count(),
            self.0.waiters_n.load(Ordering::SeqCst),
        )
    }
}
