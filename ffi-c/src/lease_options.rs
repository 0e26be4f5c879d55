//! `tj_lease_options`: which jobs a poller takes and how long it waits.

use std::ffi::c_char;
use std::time::Duration;

use telha_jobs_core::{KindPattern, LeaseOptions, Scope};

use crate::boundary::{self, handle, handle_mut, string};
use crate::cancel::tj_cancel;
use crate::error::tj_error;
use crate::status::tj_status;

/// Lease filters and wait. Owned by the caller (`tj_lease_options_new` /
/// `tj_lease_options_free`); a lease call reads it and keeps nothing, so one
/// options object may serve many calls, also from several threads at once
/// (as long as nobody is setting it meanwhile).
#[allow(non_camel_case_types)]
pub struct tj_lease_options {
    pub(crate) options: LeaseOptions,
}

/// New lease options: every scope (round-robin), every kind, no wait. Never NULL.
#[no_mangle]
pub extern "C" fn tj_lease_options_new() -> *mut tj_lease_options {
    Box::into_raw(Box::new(tj_lease_options {
        options: LeaseOptions::default(),
    }))
}

/// Free lease options. NULL does nothing.
///
/// # Safety
/// `options` is NULL or a `tj_lease_options` not freed before.
#[no_mangle]
pub unsafe extern "C" fn tj_lease_options_free(options: *mut tj_lease_options) {
    boundary::free_box(options);
}

/// Also take from tenant `scope` (UUID text). Once a scope is added, only
/// the added scopes are polled.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (options, scope), `TJ_STATUS_INVALID_UTF8`,
/// `TJ_STATUS_INVALID_ARGUMENT` for a malformed UUID (options unchanged).
///
/// # Safety
/// `options` is NULL or live; `scope` is NULL or NUL-terminated; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_lease_options_add_scope(
    options: *mut tj_lease_options,
    scope: *const c_char,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_lease_options_add_scope";
    boundary::run(F, err, || {
        let o = handle_mut(F, "options", options)?;
        let s: Scope = string(F, "scope", scope)?.parse()?;
        o.options.scopes.push(s);
        Ok(())
    })
}

/// Also take jobs of `kind`: an exact kind (`"embed"`) or a family
/// (`"ingest:*"`). Once a kind is added, only matching jobs are leased.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (options, kind), `TJ_STATUS_INVALID_UTF8`,
/// `TJ_STATUS_INVALID_ARGUMENT` for a pattern that is not a valid kind or
/// family (options unchanged).
///
/// # Safety
/// `options` is NULL or live; `kind` is NULL or NUL-terminated; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_lease_options_add_kind(
    options: *mut tj_lease_options,
    kind: *const c_char,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_lease_options_add_kind";
    boundary::run(F, err, || {
        let o = handle_mut(F, "options", options)?;
        let k: KindPattern = string(F, "kind", kind)?.parse()?;
        o.options.kinds.push(k);
        Ok(())
    })
}

/// Block up to `wait_ms` milliseconds (real time) when no job is ready; the
/// call returns as soon as a job arrives (woken by an enqueue, not by
/// polling), when the queue is closed (`TJ_STATUS_CLOSED`) or when the
/// options' cancel token is cancelled. 0 does not wait. A wait too long
/// to represent (e.g. `UINT64_MAX`) has no end: it lasts until one of those
/// happens.
///
/// # Safety
/// `options` is NULL or live. Returns `TJ_STATUS_NULL_ARGUMENT` for NULL.
#[no_mangle]
pub unsafe extern "C" fn tj_lease_options_set_wait_ms(
    options: *mut tj_lease_options,
    wait_ms: u64,
) -> tj_status {
    const F: &str = "tj_lease_options_set_wait_ms";
    boundary::run(F, std::ptr::null_mut(), || {
        handle_mut(F, "options", options)?.options.wait = Some(Duration::from_millis(wait_ms));
        Ok(())
    })
}

/// End waits of lease calls using these options when `cancel` is cancelled
/// (`tj_cancel_cancel` from any thread, `tj_cancel_trigger` also from a
/// signal handler). The options keep their own
/// reference: `cancel` may be freed before them.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (options, cancel).
///
/// # Safety
/// `options` and `cancel` are NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_lease_options_set_cancel(
    options: *mut tj_lease_options,
    cancel: *const tj_cancel,
) -> tj_status {
    const F: &str = "tj_lease_options_set_cancel";
    boundary::run(F, std::ptr::null_mut(), || {
        let o = handle_mut(F, "options", options)?;
        let c = handle(F, "cancel", cancel)?;
        o.options.cancel = Some(c.shared.token.clone());
        Ok(())
    })
}
