//! Watching the queue from JS: `NativeQueue.subscribe(options, onWake)`
//! resolves with a [`NativeSubscription`] over the core's `Subscription`
//! (`JobStore::subscribe`, the same on an embedded queue and over
//! `Queue.connect`). The engine pushes into the subscription's bounded
//! buffer and never waits on it; `Subscription::set_notify` queues one call
//! of `onWake` on the JS thread (a threadsafe function) per batch of
//! arrivals: a flag stays raised from the first arrival until JS drains, so
//! a burst of 100,000 events is a handful of wakes, not 100,000 callbacks.
//! JS then takes the events with `drain(max)` (on the JS thread: a lock
//! and the conversion, no store access), in batches between which the
//! event loop turns (`lib/events.js`).
//!
//! The threadsafe function is unreferenced (an idle subscription does not
//! keep the process alive); `hold(true)` references it while a reader waits
//! (a pending `next()`, a `QueueEvents` emitter), `hold(false)` lets go.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use napi::bindgen_prelude::{AsyncTask, Env, Unknown};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Status;
use napi_derive::napi;

use telha_jobs::{
    Encoding, Error, Event, EventFilter, JobStore, KindPattern, Scope, SubscribeOptions,
    Subscription,
};

use crate::errors::Failure;
use crate::job::{count, time};
use crate::payload::{Bytes, Payload};
use crate::queue::NativeQueue;
use crate::task::{guard, Guarded, Op};
use crate::watch::lock;

/// A JS callback without arguments, callable from any thread, that does not
/// keep the event loop alive unless held (`hold(true)`).
pub(crate) type WeakWake = ThreadsafeFunction<(), Unknown<'static>, (), Status, false, true>;

/// The subscription's side of the wake-up: the callback, and whether a call
/// is already queued (raised by an arrival, lowered by `drain`).
struct Notifier {
    armed: AtomicBool,
    wake: Mutex<Option<WeakWake>>,
}

impl Notifier {
    /// From the feeding thread: queue one wake unless one is pending.
    fn notify(&self) {
        if self.armed.swap(true, Ordering::AcqRel) {
            return;
        }
        if let Some(f) = lock(&self.wake).as_ref() {
            f.call((), ThreadsafeFunctionCallMode::NonBlocking);
        }
    }
}

/// Filters of `subscribe`, as lib/events.js passes them (types checked there).
#[napi(object)]
pub struct NativeSubscribeOptions {
    pub kinds: Option<Vec<String>>,
    pub scopes: Option<Vec<String>>,
    pub transitions: Option<Vec<String>>,
    pub buffer: Option<f64>,
}

fn subscribe_options(o: Option<NativeSubscribeOptions>) -> Result<SubscribeOptions, Failure> {
    let mut out = SubscribeOptions::default();
    let Some(o) = o else { return Ok(out) };
    let mut filter = EventFilter::default();
    for k in o.kinds.unwrap_or_default() {
        filter.kinds.push(k.parse::<KindPattern>()?);
    }
    for s in o.scopes.unwrap_or_default() {
        filter.scopes.push(s.parse::<Scope>()?);
    }
    for t in o.transitions.unwrap_or_default() {
        let e = Event::from_name(&t).ok_or_else(|| {
            let all: Vec<&str> = Event::ALL.iter().map(|e| e.name()).collect();
            Failure::Invalid(format!(
                "subscribe: unknown transition {t:?}; the transitions are {}",
                all.join(", ")
            ))
        })?;
        filter.events.push(e);
    }
    out.filter = filter;
    if let Some(b) = o.buffer {
        let max = telha_jobs::watch::MAX_EVENT_BUFFER;
        if !(b.fract() == 0.0 && b >= 1.0 && b <= max as f64) {
            return Err(Failure::Range(format!(
                "buffer must be an integer from 1 to {max}, got {}",
                crate::args::js_num(b)
            )));
        }
        out.buffer = b as usize;
    }
    out.validate().map_err(Failure::range)?;
    Ok(out)
}

/// One committed transition, as a subscriber sees it.
#[napi(object, object_from_js = false, use_nullable = true)]
pub struct SubscriptionEvent {
    /// This subscription's count: 1, 2, 3 … over every event that matched
    /// its filter since it began, in commit order, delivered or missed (so
    /// the gap before an event is exactly its `missed`).
    pub seq: f64,
    /// When it was committed, ms since the epoch (the store owner's clock).
    pub ts: f64,
    /// The job's id.
    pub job_id: String,
    /// The job's kind.
    pub kind: String,
    /// The job's scope.
    pub scope: String,
    /// The transition: `enqueued`, `leased`, `extended`, `progress`,
    /// `completed`, `failed`, `dead`, `lease_expired`, `released`,
    /// `retried`, `cancelled`, `cancel_requested`, `snoozed`, `expired`,
    /// `pruned`, `purged`, `deleted`, `promoted`, `rescheduled`,
    /// `reprioritized`, `debounced`.
    pub transition: String,
    /// For a lease's transition, that lease's attempt (from 1); for the
    /// others, the failed attempts so far.
    pub attempt: u32,
    /// The worker of the lease the transition belongs to, or null.
    pub worker_id: Option<String>,
    /// A `progress` event's report, decoded by looking at it (a value
    /// reported with the payload convention reads back as that value,
    /// other bytes as a `Buffer`); null for other events.
    #[napi(ts_type = "unknown")]
    pub progress: Option<Payload>,
    /// The report's bytes as stored, or null.
    #[napi(ts_type = "Buffer")]
    pub progress_bytes: Option<Bytes>,
    /// How many matching events were dropped just before this one because
    /// the subscription's buffer was full (0 when none).
    pub missed: f64,
}

impl SubscriptionEvent {
    fn from_core(e: telha_jobs::JobEvent) -> Self {
        let bytes = e.progress.as_deref().map(<[u8]>::to_vec);
        SubscriptionEvent {
            seq: count(e.seq),
            ts: time(e.ts),
            job_id: e.id.to_string(),
            kind: e.kind.to_string(),
            scope: e.scope.to_string(),
            transition: e.event.name().to_string(),
            attempt: e.attempt,
            worker_id: e.worker_id.as_deref().map(str::to_string),
            progress: bytes.clone().map(|b| Payload::new(b, Encoding::Unknown)),
            progress_bytes: bytes.map(Bytes),
            missed: count(e.missed),
        }
    }
}

/// What the pool hands back to the JS thread for `subscribe`.
pub struct Subscribed {
    sub: Subscription,
    n: Arc<Notifier>,
}

/// A live stream of committed transitions (see the module docs). Made by
/// `NativeQueue.subscribe`; `close()` ends it.
#[napi]
pub struct NativeSubscription {
    sub: Subscription,
    n: Arc<Notifier>,
    /// Whether `hold(true)` referenced the callback.
    held: AtomicBool,
}

#[napi]
impl NativeQueue {
    /// Subscribe to the transitions committed from now on that match
    /// `options` (`INVALID_ARGUMENT` for a bad kind, scope, transition or
    /// buffer; `CLOSED`). `onWake` is called on the JS thread when events
    /// arrive after a `drain` (once per batch) and when the subscription ends.
    #[napi(
        ts_args_type = "options: NativeSubscribeOptions | undefined | null, onWake: () => void",
        ts_return_type = "Promise<NativeSubscription>"
    )]
    pub fn subscribe(
        &self,
        env: Env,
        options: Option<NativeSubscribeOptions>,
        on_wake: WeakWake,
    ) -> napi::Result<AsyncTask<Op<Subscribed, NativeSubscription>>> {
        guard(&env, "subscribe", || {
            let options = subscribe_options(options)?;
            // A subscriber writes nothing: it does not keep calls off the loop.
            let q: Arc<dyn JobStore> = self.store().arc().clone();
            let n = Arc::new(Notifier {
                armed: AtomicBool::new(false),
                wake: Mutex::new(Some(on_wake)),
            });
            Ok(Op::task(
                "subscribe",
                move || {
                    let sub = q.subscribe(options)?;
                    let feed = n.clone();
                    sub.set_notify(Arc::new(move || feed.notify()));
                    Ok(Subscribed { sub, n })
                },
                |s| NativeSubscription {
                    sub: s.sub,
                    n: s.n,
                    held: AtomicBool::new(false),
                },
            ))
        })
    }
}

#[napi]
impl NativeSubscription {
    /// Up to `max` buffered events, oldest first (none waiting: `[]`), and
    /// re-arms `onWake`. `null` once the subscription has ended (closed, or
    /// the store closed) and its buffer is drained. A remote feed that lost
    /// its connection throws `STORAGE`.
    #[napi(ts_return_type = "Array<SubscriptionEvent> | null")]
    pub fn drain(
        &self,
        env: Env,
        max: u32,
    ) -> napi::Result<Option<Guarded<Vec<SubscriptionEvent>>>> {
        guard(&env, "subscription.next", || {
            self.n.armed.store(false, Ordering::Release);
            match self.sub.drain((max as usize).max(1)) {
                Ok(evs) => Ok(Some(Guarded(
                    "subscription.next",
                    evs.into_iter().map(SubscriptionEvent::from_core).collect(),
                ))),
                Err(Error::Closed) => Ok(None),
                Err(e) => Err(Failure::Core(e)),
            }
        })
    }

    /// Reference (`true`: keep the process alive, a reader is waiting) or
    /// unreference (`false`) the wake callback.
    #[napi]
    #[allow(deprecated)] // ref/unref of one threadsafe function, on its JS thread
    pub fn hold(&self, env: Env, on: bool) -> napi::Result<()> {
        if self.held.swap(on, Ordering::AcqRel) == on {
            return Ok(());
        }
        let mut w = lock(&self.n.wake);
        match w.as_mut() {
            Some(f) if on => f.refer(&env),
            Some(f) => f.unref(&env),
            None => Ok(()),
        }
    }

    /// How many events are buffered now.
    #[napi(getter)]
    pub fn buffered(&self) -> u32 {
        u32::try_from(self.sub.buffered()).unwrap_or(u32::MAX)
    }

    /// Whether it has ended (closed, or the store closed; events may still
    /// be buffered).
    #[napi(getter)]
    pub fn closed(&self) -> bool {
        self.sub.is_closed()
    }

    /// End the subscription and release the wake callback. Idempotent.
    #[napi]
    pub fn close(&self) {
        self.sub.close();
        drop(lock(&self.n.wake).take());
    }
}

impl Drop for NativeSubscription {
    fn drop(&mut self) {
        self.close();
    }
}
