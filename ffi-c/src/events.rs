//! Events: `tj_subscribe_options`, `tj_queue_subscribe`, `tj_subscription`
//! and `tj_events_next`, which fills a caller-owned `tj_event`.

use std::ffi::{c_char, CString};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use telha_jobs_core::{Error, Event, JobEvent, KindPattern, Scope, SubscribeOptions, Subscription};

use crate::boundary::{self, cstring, handle, handle_mut, out, string, write};
use crate::error::{tj_error, Failure};
use crate::id::tj_id;
use crate::queue::{q, tj_queue};
use crate::status::tj_status;

/// Which events a subscription receives, and how many it buffers. Empty
/// lists match everything. Owned by the caller (`tj_subscribe_options_new`
/// / `tj_subscribe_options_free`); `tj_queue_subscribe` copies it.
#[allow(non_camel_case_types)]
pub struct tj_subscribe_options {
    options: SubscribeOptions,
}

/// New subscribe options: every kind, scope and transition, a buffer of
/// `TJ_DEFAULT_EVENT_BUFFER` events. Never NULL.
#[no_mangle]
pub extern "C" fn tj_subscribe_options_new() -> *mut tj_subscribe_options {
    Box::into_raw(Box::new(tj_subscribe_options {
        options: SubscribeOptions::default(),
    }))
}

/// Free subscribe options. NULL does nothing.
///
/// # Safety
/// `options` is NULL or a `tj_subscribe_options` not freed before.
#[no_mangle]
pub unsafe extern "C" fn tj_subscribe_options_free(options: *mut tj_subscribe_options) {
    boundary::free_box(options);
}

/// Also receive events of jobs of `kind`: an exact kind (`"embed"`) or a
/// family (`"ingest:*"`).
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (options, kind), `TJ_STATUS_INVALID_UTF8`,
/// `TJ_STATUS_INVALID_ARGUMENT` for a pattern that is not a valid kind or
/// family (options unchanged).
///
/// # Safety
/// `options` is NULL or live; `kind` is NULL or NUL-terminated; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_subscribe_options_add_kind(
    options: *mut tj_subscribe_options,
    kind: *const c_char,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_subscribe_options_add_kind";
    boundary::run(F, err, || {
        let o = handle_mut(F, "options", options)?;
        let k: KindPattern = string(F, "kind", kind)?.parse()?;
        o.options.filter.kinds.push(k);
        Ok(())
    })
}

/// Also receive events of jobs in tenant `scope` (UUID text).
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (options, scope), `TJ_STATUS_INVALID_UTF8`,
/// `TJ_STATUS_INVALID_ARGUMENT` for a malformed UUID (options unchanged).
///
/// # Safety
/// `options` is NULL or live; `scope` is NULL or NUL-terminated; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_subscribe_options_add_scope(
    options: *mut tj_subscribe_options,
    scope: *const c_char,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_subscribe_options_add_scope";
    boundary::run(F, err, || {
        let o = handle_mut(F, "options", options)?;
        let s: Scope = string(F, "scope", scope)?.parse()?;
        o.options.filter.scopes.push(s);
        Ok(())
    })
}

/// Also receive transition `name`: `enqueued`, `leased`, `extended`,
/// `progress`, `completed`, `failed`, `dead`, `lease_expired`, `released`,
/// `retried`, `pruned`, `purged`, `cancelled`, `cancel_requested`,
/// `deleted`, `snoozed`, `expired`, `promoted`, `rescheduled`,
/// `reprioritized`, `debounced`.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (options, name), `TJ_STATUS_INVALID_UTF8`,
/// `TJ_STATUS_INVALID_ARGUMENT` for a name that is not a transition
/// (options unchanged).
///
/// # Safety
/// `options` is NULL or live; `name` is NULL or NUL-terminated; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_subscribe_options_add_transition(
    options: *mut tj_subscribe_options,
    name: *const c_char,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_subscribe_options_add_transition";
    boundary::run(F, err, || {
        let o = handle_mut(F, "options", options)?;
        let name = string(F, "name", name)?;
        let e = Event::from_name(name)
            .ok_or_else(|| Failure::invalid(format!("{F}: {name:?} is not a transition")))?;
        o.options.filter.events.push(e);
        Ok(())
    })
}

/// Buffer up to `buffer` events (1 to `TJ_MAX_EVENT_BUFFER`) for a reader
/// that falls behind; past that, events are dropped and counted (the next
/// event's `missed`), never slowing the queue.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (options), `TJ_STATUS_INVALID_ARGUMENT`
/// for 0 or over `TJ_MAX_EVENT_BUFFER` (options unchanged).
///
/// # Safety
/// `options` is NULL or live; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_subscribe_options_set_buffer(
    options: *mut tj_subscribe_options,
    buffer: usize,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_subscribe_options_set_buffer";
    boundary::run(F, err, || {
        let o = handle_mut(F, "options", options)?;
        let mut next = o.options.clone();
        next.buffer = buffer;
        next.validate()
            .map_err(|e| Failure::invalid(format!("{F}: {e}")))?;
        o.options = next;
        Ok(())
    })
}

/// A live stream of the transitions the queue commits (from
/// `tj_queue_subscribe`), read with `tj_events_next`. One reader at a time:
/// `tj_events_next` must not be called from two threads at once on one
/// subscription; `tj_subscription_close` may be called from any thread,
/// also while another is in `tj_events_next`. Owned by the caller
/// (`tj_subscription_free`).
#[allow(non_camel_case_types)]
pub struct tj_subscription {
    sub: Subscription,
    /// What the last event's pointers point into.
    held: Mutex<Option<Held>>,
}

struct Held {
    kind: CString,
    scope: CString,
    transition: CString,
    worker_id: Option<CString>,
    progress: Option<Arc<[u8]>>,
}

/// One committed transition. Filled by `tj_events_next` into a struct the
/// caller owns; its pointers are borrowed from the subscription and stay
/// valid until the next `tj_events_next` or `tj_subscription_free` on it.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tj_event {
    /// This subscription's count: 1, 2, 3 … over every event that matched
    /// its filter since it began, in commit order, delivered or missed; so
    /// it rises by exactly 1 + `missed` from one event to the next.
    pub seq: u64,
    /// When it was committed, ms since the epoch.
    pub ts_ms: u64,
    /// How many events matching this subscription were dropped just before
    /// this one because its buffer was full (0 when none).
    pub missed: u64,
    /// The job.
    pub id: tj_id,
    /// The job's kind (NUL-terminated).
    pub kind: *const c_char,
    /// The job's scope, as UUID text.
    pub scope: *const c_char,
    /// The transition's name (`"enqueued"`, `"leased"`, `"progress"`,
    /// `"completed"`, …; see `tj_subscribe_options_add_transition`).
    pub transition: *const c_char,
    /// The worker of the lease the transition belongs to, or NULL.
    pub worker_id: *const c_char,
    /// For a `progress` event, the bytes reported (not NUL-terminated),
    /// else NULL.
    pub progress: *const u8,
    /// The length of `progress` (0 when NULL).
    pub progress_len: usize,
    /// For a transition of a lease (leased, extended, progress, completed,
    /// failed, dead from a lease, lease_expired, released, snoozed,
    /// cancel_requested, cancelled from a lease): that lease's attempt,
    /// from 1. For the others: the failed attempts so far.
    pub attempt: u32,
}

/// Subscribe to the transitions `queue` commits from now on, as
/// `options` (NULL: every event, the default buffer) filters them. On
/// success `*sub_out` is a new `tj_subscription` the caller frees with
/// `tj_subscription_free`. Events arrive in commit order through a bounded
/// buffer: a reader that falls behind never slows the queue; it is told how
/// many events it missed (`tj_event.missed`). A live view: nothing from
/// before the call, and nothing replayed across a restart of the store (a
/// subscriber then subscribes again: a new stream, `seq` from 1). Never
/// blocks on I/O.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (queue, sub_out), `TJ_STATUS_CLOSED`,
/// `TJ_STATUS_STORAGE` (the event thread could not be started).
///
/// # Safety
/// `queue` and `options` are NULL or live; `sub_out` and `err` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_subscribe(
    queue: *const tj_queue,
    options: *const tj_subscribe_options,
    sub_out: *mut *mut tj_subscription,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_subscribe";
    boundary::run(F, err, || {
        let q = q(F, queue)?;
        let sub_out = out(F, "sub_out", sub_out)?;
        let options = unsafe { options.as_ref() }
            .map(|o| o.options.clone())
            .unwrap_or_default();
        let sub = q.queue.subscribe(options)?;
        write(
            sub_out,
            Box::into_raw(Box::new(tj_subscription {
                sub,
                held: Mutex::new(None),
            })),
        );
        Ok(())
    })
}

fn fill(ev: JobEvent, held: &mut Option<Held>) -> tj_event {
    let h = held.insert(Held {
        kind: cstring(&ev.kind),
        scope: cstring(&ev.scope.to_string()),
        transition: cstring(ev.event.name()),
        worker_id: ev.worker_id.as_deref().map(cstring),
        progress: ev.progress,
    });
    let (progress, progress_len) = match &h.progress {
        Some(p) => (p.as_ptr(), p.len()),
        None => (std::ptr::null(), 0),
    };
    tj_event {
        seq: ev.seq,
        ts_ms: ev.ts,
        missed: ev.missed,
        id: ev.id.into(),
        kind: h.kind.as_ptr(),
        scope: h.scope.as_ptr(),
        transition: h.transition.as_ptr(),
        worker_id: h
            .worker_id
            .as_ref()
            .map_or(std::ptr::null(), |w| w.as_ptr()),
        progress,
        progress_len,
        attempt: ev.attempt,
    }
}

/// The next event, waiting up to `timeout_ms` (0: only one already
/// buffered) for one. On `TJ_STATUS_OK` it is written to `*event_out`
/// (pointers valid until the next `tj_events_next` or
/// `tj_subscription_free` on `sub`).
///
/// Blocks the calling thread only, up to the timeout; an event arriving
/// wakes it at once, and so do `tj_subscription_close` and the store
/// closing.
///
/// Answers besides `TJ_STATUS_OK`: `TJ_STATUS_TIMED_OUT` when no event came
/// within the timeout (call again); `TJ_STATUS_CLOSED` once the
/// subscription has ended, by `tj_subscription_close` or because its store
/// closed, and the events buffered before that have been read (every later
/// call answers it too); `TJ_STATUS_NULL_ARGUMENT` (sub, event_out);
/// `TJ_STATUS_STORAGE` if the feed failed. `*event_out` is written only on
/// `TJ_STATUS_OK`.
///
/// # Safety
/// `sub` is NULL or live, and no other thread is in `tj_events_next` on it;
/// `event_out` and `err` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_events_next(
    sub: *mut tj_subscription,
    timeout_ms: u32,
    event_out: *mut tj_event,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_events_next";
    boundary::run(F, err, || {
        // Shared, not exclusive: `tj_subscription_close` may run meanwhile.
        let s = handle(F, "sub", sub.cast_const())?;
        let event_out = out(F, "event_out", event_out)?;
        let got = match s
            .sub
            .recv(Some(Duration::from_millis(u64::from(timeout_ms))))
        {
            Ok(Some(ev)) => ev,
            Ok(None) => {
                return Err(Failure::new(
                    tj_status::TJ_STATUS_TIMED_OUT,
                    format!("{F}: no event within {timeout_ms} ms"),
                ))
            }
            Err(Error::Closed) => {
                return Err(Failure::new(
                    tj_status::TJ_STATUS_CLOSED,
                    format!("{F}: the subscription has ended (closed, or its store closed)"),
                ))
            }
            Err(e) => return Err(e.into()),
        };
        let mut held = s.held.lock().unwrap_or_else(|p| p.into_inner());
        write(event_out, fill(got, &mut held));
        Ok(())
    })
}

/// End the subscription: the queue stops feeding it; events already
/// buffered can still be read, then `tj_events_next` answers
/// `TJ_STATUS_CLOSED` (a call waiting in it on another thread returns).
/// Idempotent; thread-safe; NULL does nothing. It must still be freed.
///
/// # Safety
/// `sub` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_subscription_close(sub: *const tj_subscription) {
    if let Some(s) = unsafe { sub.as_ref() } {
        boundary::run_infallible((), || s.sub.close());
    }
}

/// Close (if not closed) and free a subscription, with the strings of its
/// last event. NULL does nothing. No other thread may be using it.
///
/// # Safety
/// `sub` is NULL or a `tj_subscription` not freed before.
#[no_mangle]
pub unsafe extern "C" fn tj_subscription_free(sub: *mut tj_subscription) {
    if let Some(s) = unsafe { sub.as_ref() } {
        boundary::run_infallible((), || s.sub.close());
    }
    boundary::free_box(sub);
}
