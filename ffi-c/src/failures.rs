//! `tj_failures`: failures collected for one atomic `tj_queue_fail_many`
//! (each with its reason, `retryable` and optional retry delay), and
//! `tj_queue_release_many` (an array of tokens, as `tj_queue_extend`).

use std::ffi::c_char;
use std::time::Duration;

use telha_jobs_core::{Failure, LeaseToken};

use crate::boundary::{self, handle, handle_mut, slice, string};
use crate::completions::{check_answers, write_statuses};
use crate::error::tj_error;
use crate::id::tj_token;
use crate::queue::{q, tj_queue};
use crate::status::tj_status;

/// A list of failures for one `tj_queue_fail_many`. Owned by the caller
/// (`tj_failures_new` / `tj_failures_free`); `tj_failures_add` copies its
/// arguments. Not thread-safe while being filled.
#[allow(non_camel_case_types)]
pub struct tj_failures {
    items: Vec<Failure>,
}

/// A new, empty list. Never NULL.
#[no_mangle]
pub extern "C" fn tj_failures_new() -> *mut tj_failures {
    Box::into_raw(Box::new(tj_failures { items: Vec::new() }))
}

/// Free a list. NULL does nothing.
///
/// # Safety
/// `failures` is NULL or a `tj_failures` not freed before.
#[no_mangle]
pub unsafe extern "C" fn tj_failures_free(failures: *mut tj_failures) {
    boundary::free_box(failures);
}

/// Add the failure of the lease `*token`, as `tj_queue_fail` takes it:
/// `reason` (copied; cut to 4096 bytes when written) and `retryable`; the
/// retry waits the backoff schedule's delay.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (failures, token, reason),
/// `TJ_STATUS_INVALID_UTF8`. Nothing is added on an error.
///
/// # Safety
/// `failures` is NULL or live and not used by another thread; `token` is
/// NULL or live; `reason` is NULL or NUL-terminated; `err` is NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn tj_failures_add(
    failures: *mut tj_failures,
    token: *const tj_token,
    reason: *const c_char,
    retryable: bool,
    err: *mut *mut tj_error,
) -> tj_status {
    add(
        "tj_failures_add",
        failures,
        token,
        reason,
        retryable,
        None,
        err,
    )
}

/// `tj_failures_add`, retrying after `retry_in_ms` instead of the backoff
/// schedule's delay, as `tj_queue_fail_in` does. A delay over
/// `TJ_MAX_DURATION_MS` is that item's `TJ_STATUS_INVALID_ARGUMENT` in
/// `tj_queue_fail_many`.
///
/// Errors: as `tj_failures_add`.
///
/// # Safety
/// As `tj_failures_add`.
#[no_mangle]
pub unsafe extern "C" fn tj_failures_add_in(
    failures: *mut tj_failures,
    token: *const tj_token,
    reason: *const c_char,
    retryable: bool,
    retry_in_ms: u64,
    err: *mut *mut tj_error,
) -> tj_status {
    let retry_in = Some(Duration::from_millis(retry_in_ms));
    add(
        "tj_failures_add_in",
        failures,
        token,
        reason,
        retryable,
        retry_in,
        err,
    )
}

fn add(
    func: &'static str,
    failures: *mut tj_failures,
    token: *const tj_token,
    reason: *const c_char,
    retryable: bool,
    retry_in: Option<Duration>,
    err: *mut *mut tj_error,
) -> tj_status {
    boundary::run(func, err, || {
        let f = handle_mut(func, "failures", failures)?;
        let token: LeaseToken = (*handle(func, "token", token)?).into();
        let reason = string(func, "reason", reason)?;
        f.items.push(Failure {
            token,
            reason: reason.to_string(),
            retryable,
            retry_in,
        });
        Ok(())
    })
}

/// How many failures the list holds (0 for NULL).
///
/// # Safety
/// `failures` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_failures_len(failures: *const tj_failures) -> usize {
    unsafe { failures.as_ref() }.map_or(0, |f| f.items.len())
}

/// Empty the list, to fill it again. NULL does nothing.
///
/// # Safety
/// `failures` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_failures_clear(failures: *mut tj_failures) {
    if let Some(f) = unsafe { failures.as_mut() } {
        f.items.clear();
    }
}

/// Fail every lease of `failures` in one atomic write: the batch form of
/// `tj_queue_fail` / `tj_queue_fail_in`. For item `i`, `statuses_out[i]`
/// is `TJ_STATUS_OK` (retrying, or dead when not retryable or out of
/// attempts), or why that item changed nothing: `TJ_STATUS_ABORTED`
/// (stale token), `TJ_STATUS_NOT_FOUND`, `TJ_STATUS_INVALID_ARGUMENT` (a
/// retry delay over `TJ_MAX_DURATION_MS`); or `TJ_STATUS_CANCELLED` (a
/// cancel request: recorded cancelled). Each item is retry-safe as
/// `tj_queue_fail` is. At most `TJ_MAX_BATCH` items. The list may be freed
/// or reused once the call returns.
///
/// Blocks for one RocksDB write.
///
/// Errors (for the whole call; nothing was written and `statuses_out` is
/// not written): `TJ_STATUS_NULL_ARGUMENT` (queue, failures, statuses_out
/// with a non-empty list), `TJ_STATUS_INVALID_ARGUMENT` (`statuses_len`
/// smaller than the list, more than `TJ_MAX_BATCH` items),
/// `TJ_STATUS_STORAGE`, `TJ_STATUS_CLOSED`.
///
/// # Safety
/// `queue` and `failures` are NULL or live (`failures` not changed by
/// another thread during the call); `statuses_out` is NULL or holds
/// `statuses_len` writable elements; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_fail_many(
    queue: *const tj_queue,
    failures: *const tj_failures,
    statuses_out: *mut tj_status,
    statuses_len: usize,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_fail_many";
    boundary::run(F, err, || {
        let q = q(F, queue)?;
        let f = handle(F, "failures", failures)?;
        let n = f.items.len();
        check_answers(F, "failures", n, statuses_out, statuses_len)?;
        let answers = q.queue.fail_many(f.items.clone())?;
        write_statuses(answers, n, statuses_out);
        Ok(())
    })
}

/// Release the `n` leases at `tokens` in one atomic write: the batch form
/// of `tj_queue_release` (each job back to pending at its old place in
/// line, no attempt spent; a host stopping hands back what it leased
/// ahead). For token `i`, `statuses_out[i]` is `TJ_STATUS_OK`, or why it
/// changed nothing: `TJ_STATUS_ABORTED` (stale token), `TJ_STATUS_NOT_FOUND`;
/// or `TJ_STATUS_CANCELLED` (a cancel request: recorded cancelled). Each
/// token is retry-safe as `tj_queue_release` is. At most `TJ_MAX_BATCH`
/// tokens.
///
/// Blocks for one RocksDB write.
///
/// Errors (for the whole call; nothing was written and `statuses_out` is
/// not written): `TJ_STATUS_NULL_ARGUMENT` (queue, tokens or statuses_out
/// with `n` > 0), `TJ_STATUS_INVALID_ARGUMENT` (more than `TJ_MAX_BATCH`
/// tokens), `TJ_STATUS_STORAGE`, `TJ_STATUS_CLOSED`.
///
/// # Safety
/// `queue` is NULL or live; `tokens` is NULL or holds `n` readable tokens;
/// `statuses_out` is NULL or holds `n` writable elements; `err` is NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_release_many(
    queue: *const tj_queue,
    tokens: *const tj_token,
    n: usize,
    statuses_out: *mut tj_status,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_release_many";
    boundary::run(F, err, || {
        let q = q(F, queue)?;
        check_answers(F, "tokens", n, statuses_out, n)?;
        let tokens = slice(F, "tokens", tokens, n)?;
        let tokens: Vec<LeaseToken> = tokens.iter().map(|t| (*t).into()).collect();
        let answers = q.queue.release_many(&tokens)?;
        write_statuses(answers, n, statuses_out);
        Ok(())
    })
}
