//! Waiting for jobs and watching the queue.
//!
//! - [`JobWatch`]: one job, until it is terminal (completed, dead,
//!   cancelled) or gone. Made by [`crate::Queue::watch`]; woken by the
//!   commit of the transition itself, never by polling.
//! - [`Subscription`]: every transition the engine commits that matches an
//!   [`EventFilter`], as [`JobEvent`]s in commit order, through a bounded
//!   buffer. A subscriber that falls behind never slows the engine: events
//!   that do not fit are dropped and counted, and the next event delivered
//!   says how many were missed just before it ([`JobEvent::missed`]).
//!
//! Both are live views: nothing is stored for them, and across a restart of
//! the store's owner a subscriber starts a new stream (sequence numbers
//! start again at 1) and sees nothing replayed.
//!
//! Both can also be fed by something other than the engine (a client of a
//! remote queue): [`Subscription::channel`] and [`JobWatch::channel`] give
//! the feeding half.

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::event::Event;
use crate::ids::{JobId, Scope};
use crate::kind::KindPattern;

/// The default number of events a subscription buffers.
pub const DEFAULT_EVENT_BUFFER: usize = 10_000;
/// The largest buffer a subscription may ask for.
pub const MAX_EVENT_BUFFER: usize = 1_000_000;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// One committed transition, as a subscriber sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct JobEvent {
    /// This subscription's count: 1, 2, 3 … over every event that matched
    /// its filter since it began, in commit order, whether delivered or
    /// missed; so a gap is exactly [`JobEvent::missed`].
    pub seq: u64,
    /// When it was committed, ms since the epoch (the owner's clock).
    pub ts: u64,
    /// The job.
    pub id: JobId,
    /// The job's kind.
    pub kind: Arc<str>,
    /// The job's scope.
    pub scope: Scope,
    /// The transition.
    pub event: Event,
    /// For a transition of a lease (leased, extended, progress, completed,
    /// failed, dead from a lease, lease_expired, released, snoozed,
    /// cancel_requested, cancelled from a lease): that lease's attempt,
    /// from 1. For the others: the failed attempts so far.
    pub attempt: u32,
    /// The worker of the lease the transition belongs to, if any.
    pub worker_id: Option<Arc<str>>,
    /// For a `progress` event: the value reported (payload convention).
    pub progress: Option<Arc<[u8]>>,
    /// How many events matching this subscription were dropped just before
    /// this one because its buffer was full (0 when none).
    pub missed: u64,
}

/// Which events a subscription receives. Empty lists match everything.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EventFilter {
    /// Kinds (exact or `family:*`).
    pub kinds: Vec<KindPattern>,
    /// Scopes.
    pub scopes: Vec<Scope>,
    /// Transitions.
    pub events: Vec<Event>,
}

impl EventFilter {
    /// Also match kind `pattern` (`"embed"` or `"ingest:*"`);
    /// `InvalidArgument` when it is not a valid kind or family.
    pub fn kind(mut self, pattern: &str) -> Result<Self> {
        self.kinds.push(pattern.parse()?);
        Ok(self)
    }
    /// Also match scope `s`.
    pub fn scope(mut self, s: Scope) -> Self {
        self.scopes.push(s);
        self
    }
    /// Also match transition `e`.
    pub fn event(mut self, e: Event) -> Self {
        self.events.push(e);
        self
    }
    /// Whether an event of `kind` in `scope` for transition `event` matches.
    pub fn matches(&self, kind: &str, scope: &Scope, event: Event) -> bool {
        (self.events.is_empty() || self.events.contains(&event))
            && (self.scopes.is_empty() || self.scopes.contains(scope))
            && (self.kinds.is_empty() || self.kinds.iter().any(|p| p.matches(kind)))
    }
}

/// Options of [`crate::Queue::subscribe`].
#[derive(Debug, Clone, PartialEq)]
pub struct SubscribeOptions {
    /// Which events.
    pub filter: EventFilter,
    /// How many events to hold for a slow reader, 1 to
    /// [`MAX_EVENT_BUFFER`] (default [`DEFAULT_EVENT_BUFFER`]).
    pub buffer: usize,
}

impl Default for SubscribeOptions {
    fn default() -> Self {
        SubscribeOptions {
            filter: EventFilter::default(),
            buffer: DEFAULT_EVENT_BUFFER,
        }
    }
}

impl SubscribeOptions {
    /// `InvalidArgument` when `buffer` is out of range.
    pub fn validate(&self) -> Result<()> {
        if self.buffer == 0 || self.buffer > MAX_EVENT_BUFFER {
            return Err(Error::invalid(format!(
                "event buffer must be 1 to {MAX_EVENT_BUFFER}, got {}",
                self.buffer
            )));
        }
        Ok(())
    }
}

/// Why a subscription ended.
#[derive(Debug, Clone, PartialEq)]
enum End {
    /// Closed by its reader, or the store closed.
    Closed,
    /// The feed failed (a lost connection): `Storage` with this message.
    Lost(String),
    /// The engine was fenced (an unknown commit outcome): `Unavailable`
    /// with this message.
    Unavailable(String),
}

type Notify = Arc<dyn Fn() + Send + Sync>;

struct SubState {
    buf: VecDeque<JobEvent>,
    /// Dropped since the last buffered event.
    missed: u64,
    end: Option<End>,
    waker: Option<Waker>,
    notify: Option<Notify>,
    /// Set when the `Subscription` is dropped: the feeder lets go of it.
    dropped: bool,
    /// Events offered through [`EventSink::offer_numbered`] so far.
    offered: u64,
    /// Readers blocked in `recv` (a push wakes the condvar only for them).
    waiting: usize,
}

struct SubShared {
    filter: EventFilter,
    cap: usize,
    st: Mutex<SubState>,
    cv: Condvar,
}

impl SubShared {
    /// Wake the reader after a change (outside the state lock).
    fn wake(&self, waker: Option<Waker>, notify: Option<Notify>) {
        self.cv.notify_all();
        if let Some(w) = waker {
            w.wake();
        }
        if let Some(n) = notify {
            n();
        }
    }
}

/// A live stream of committed transitions (see the module docs). Read it
/// with [`Subscription::recv`], as a blocking iterator, or from async code
/// with [`Subscription::poll_recv`]. Dropping it (or
/// [`Subscription::close`]) ends it.
pub struct Subscription {
    sh: Arc<SubShared>,
}

impl fmt::Debug for Subscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subscription")
            .field("filter", &self.sh.filter)
            .field("buffer", &self.sh.cap)
            .finish()
    }
}

/// The feeding half of a [`Subscription`]: what the engine (or a client of
/// a remote queue) pushes events into. Cheap to clone.
#[derive(Clone)]
pub struct EventSink {
    sh: Arc<SubShared>,
}

impl fmt::Debug for EventSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventSink").finish_non_exhaustive()
    }
}

impl Subscription {
    /// A subscription and the sink that feeds it, for an implementation of
    /// [`crate::JobStore`] that is not the engine. `InvalidArgument` when
    /// the options are out of range.
    pub fn channel(options: SubscribeOptions) -> Result<(Subscription, EventSink)> {
        options.validate()?;
        let sh = Arc::new(SubShared {
            cap: options.buffer,
            filter: options.filter,
            st: Mutex::new(SubState {
                buf: VecDeque::new(),
                missed: 0,
                end: None,
                waker: None,
                notify: None,
                dropped: false,
                offered: 0,
                waiting: 0,
            }),
            cv: Condvar::new(),
        });
        Ok((Subscription { sh: sh.clone() }, EventSink { sh }))
    }

    /// The filter this subscription was made with.
    pub fn filter(&self) -> &EventFilter {
        &self.sh.filter
    }

    fn take(st: &mut SubState) -> Option<Result<JobEvent>> {
        if let Some(ev) = st.buf.pop_front() {
            return Some(Ok(ev));
        }
        match &st.end {
            Some(End::Closed) => Some(Err(Error::Closed)),
            Some(End::Lost(m)) => Some(Err(Error::Storage(m.clone()))),
            Some(End::Unavailable(m)) => Some(Err(crate::engine::unavailable(m))),
            None => None,
        }
    }

    /// The next event, waiting up to `timeout` (`None`: until one comes).
    /// `Ok(None)` at the timeout. Once the subscription has ended and its
    /// buffer is drained: `Closed` (closed by [`Subscription::close`] or
    /// the store closed), or `Storage` (a remote feed lost its connection).
    pub fn recv(&self, timeout: Option<Duration>) -> Result<Option<JobEvent>> {
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
        let mut st = lock(&self.sh.st);
        loop {
            if let Some(r) = Self::take(&mut st) {
                return r.map(Some);
            }
            match (timeout, deadline) {
                (Some(_), Some(d)) => {
                    let now = Instant::now();
                    if now >= d {
                        return Ok(None);
                    }
                    st.waiting += 1;
                    st = self
                        .sh
                        .cv
                        .wait_timeout(st, d - now)
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                    st.waiting -= 1;
                }
                _ => {
                    st.waiting += 1;
                    st = self.sh.cv.wait(st).unwrap_or_else(|p| p.into_inner());
                    st.waiting -= 1;
                }
            }
        }
    }

    /// The next event if one is buffered, without waiting (errors as
    /// [`Subscription::recv`]).
    pub fn try_recv(&self) -> Result<Option<JobEvent>> {
        Self::take(&mut lock(&self.sh.st)).transpose()
    }

    /// Up to `max` buffered events at once (none waiting: an empty vector).
    /// The end is reported only once the buffer is empty.
    pub fn drain(&self, max: usize) -> Result<Vec<JobEvent>> {
        let mut st = lock(&self.sh.st);
        let n = st.buf.len().min(max);
        if n == 0 {
            if let Some(Err(e)) = Self::take(&mut st) {
                return Err(e);
            }
        }
        Ok(st.buf.drain(..n).collect())
    }

    /// For async readers: `Ready` with the next event or the end, else
    /// `Pending` with `cx`'s waker kept (woken by the next event).
    pub fn poll_recv(&self, cx: &mut Context<'_>) -> Poll<Result<JobEvent>> {
        let mut st = lock(&self.sh.st);
        match Self::take(&mut st) {
            Some(r) => Poll::Ready(r),
            None => {
                st.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }

    /// Call `f` (from the feeding thread, which must not be kept waiting:
    /// `f` should only signal, e.g. write to an eventfd) whenever an event
    /// arrives or the subscription ends. Replaces an earlier one.
    pub fn set_notify(&self, f: Arc<dyn Fn() + Send + Sync>) {
        lock(&self.sh.st).notify = Some(f);
    }

    /// How many events are buffered now.
    pub fn buffered(&self) -> usize {
        lock(&self.sh.st).buf.len()
    }

    /// End the subscription: buffered events can still be read, then
    /// `recv` answers `Closed`. Idempotent.
    pub fn close(&self) {
        EventSink {
            sh: self.sh.clone(),
        }
        .end(None);
    }

    /// The subscription as a channel: a thread (`telha-sub-chan`) moves
    /// each event into a `sync_channel` of `capacity` until the
    /// subscription ends (an end that is an error, a lost remote feed, is
    /// sent last; a close just ends the channel) or, once the receiver is
    /// dropped, at the next event. A full channel holds up only that
    /// thread: the subscription's own buffer keeps filling and then counts
    /// `missed`, as always. `Storage` if the thread cannot start.
    pub fn into_channel(
        self,
        capacity: usize,
    ) -> Result<std::sync::mpsc::Receiver<Result<JobEvent>>> {
        let (tx, rx) = std::sync::mpsc::sync_channel(capacity);
        std::thread::Builder::new()
            .name("telha-sub-chan".into())
            .spawn(move || loop {
                let item = match self.recv(None) {
                    Ok(Some(ev)) => Ok(ev),
                    Ok(None) => continue,
                    Err(Error::Closed) => return,
                    Err(e) => Err(e),
                };
                let last = item.is_err();
                if tx.send(item).is_err() || last {
                    return;
                }
            })
            .map_err(|e| Error::Storage(format!("subscription channel thread: {e}")))?;
        Ok(rx)
    }

    /// Whether it has ended (events may still be buffered).
    pub fn is_closed(&self) -> bool {
        lock(&self.sh.st).end.is_some()
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let mut st = lock(&self.sh.st);
        st.dropped = true;
        st.buf.clear();
        if st.end.is_none() {
            st.end = Some(End::Closed);
        }
    }
}

/// Blocking iteration: every event until the subscription ends; a feed
/// that failed yields its `Storage` error once, then the iteration stops.
impl Iterator for &Subscription {
    type Item = Result<JobEvent>;
    fn next(&mut self) -> Option<Result<JobEvent>> {
        match self.recv(None) {
            Ok(Some(ev)) => Some(Ok(ev)),
            Ok(None) | Err(Error::Closed) => None,
            Err(e) => {
                if matches!(
                    lock(&self.sh.st).end,
                    Some(End::Lost(_) | End::Unavailable(_))
                ) {
                    lock(&self.sh.st).end = Some(End::Closed);
                }
                Some(Err(e))
            }
        }
    }
}

impl EventSink {
    /// Whether this sink's subscription wants an event of `kind` in `scope`
    /// for `event` (its filter).
    pub fn wants(&self, kind: &str, scope: &Scope, event: Event) -> bool {
        self.sh.filter.matches(kind, scope, event)
    }

    /// Offer one event (already known to match). It is buffered with
    /// `missed` set to the events dropped since the last one buffered, or,
    /// when the buffer is full, dropped and counted. Never blocks on the
    /// reader. False once the subscription is gone or ended (let go of the
    /// sink).
    pub fn push(&self, ev: JobEvent) -> bool {
        self.push_many(std::iter::once(ev))
    }

    /// [`EventSink::push`] for several events (in order) under one lock and
    /// with at most one wake of the reader. Their `seq` is kept (a remote
    /// feed passes on the server's).
    pub fn push_many(&self, evs: impl IntoIterator<Item = JobEvent>) -> bool {
        self.offer(evs, false)
    }

    /// [`EventSink::push_many`], numbering the events with this
    /// subscription's own count (the engine's feed: see [`JobEvent::seq`]).
    pub fn offer_numbered(&self, evs: impl IntoIterator<Item = JobEvent>) -> bool {
        self.offer(evs, true)
    }

    fn offer(&self, evs: impl IntoIterator<Item = JobEvent>, number: bool) -> bool {
        let mut st = lock(&self.sh.st);
        if st.dropped || st.end.is_some() {
            return false;
        }
        let was_empty = st.buf.is_empty();
        for mut ev in evs {
            if number {
                st.offered += 1;
                ev.seq = st.offered;
            }
            if st.buf.len() >= self.sh.cap {
                // The dropped event, and what it said was missed before it
                // (a remote feed's events carry the server's count).
                st.missed = st.missed.saturating_add(1).saturating_add(ev.missed);
                continue;
            }
            ev.missed = ev.missed.saturating_add(st.missed);
            st.missed = 0;
            st.buf.push_back(ev);
        }
        if was_empty && !st.buf.is_empty() {
            let (w, n, blocked) = (st.waker.take(), st.notify.clone(), st.waiting > 0);
            drop(st);
            if blocked {
                self.sh.cv.notify_all();
            }
            if let Some(w) = w {
                w.wake();
            }
            if let Some(n) = n {
                n();
            }
        }
        true
    }

    /// Count `n` events as missed before the next one (a remote feed passes
    /// on the server's count this way when it has no event to attach it to).
    pub fn add_missed(&self, n: u64) {
        let mut st = lock(&self.sh.st);
        st.missed = st.missed.saturating_add(n);
    }

    /// End the subscription: `None` as closed (`Closed`), `Some(msg)` as a
    /// lost feed (`Storage`). The first end wins.
    pub fn end(&self, lost: Option<String>) {
        self.end_as(lost.map_or(End::Closed, End::Lost));
    }

    /// End the subscription as `Unavailable` with `why` (a fenced engine).
    pub(crate) fn end_unavailable(&self, why: String) {
        self.end_as(End::Unavailable(why));
    }

    fn end_as(&self, end: End) {
        let mut st = lock(&self.sh.st);
        if st.end.is_none() {
            st.end = Some(end);
        }
        let (w, n) = (st.waker.take(), st.notify.clone());
        drop(st);
        self.sh.wake(w, n);
    }

    /// Whether the subscription is gone or ended.
    pub fn is_gone(&self) -> bool {
        let st = lock(&self.sh.st);
        st.dropped || st.end.is_some()
    }
}

mod job_watch;
pub use job_watch::{JobWatch, WatchSink};

#[cfg(test)]
mod tests;
