//! `tj_enqueue_options`: scope, priority, run-at, expiry, idempotency key and attempt
//! ceiling of an enqueue.

use std::ffi::c_char;
use std::time::Duration;

use telha_jobs_core::{EnqueueOptions, Scope};

use crate::boundary::{self, handle_mut, string};
use crate::encoding::encoding_from_u32;
use crate::error::{tj_error, Failure};
use crate::status::tj_status;

/// Options of an enqueue; every one is optional. Owned by the caller
/// (`tj_enqueue_options_new` / `tj_enqueue_options_free`); enqueue calls copy
/// what they need, so one options object may serve many enqueues. Not
/// thread-safe while being set; may be read by several enqueues at once.
#[allow(non_camel_case_types)]
pub struct tj_enqueue_options {
    pub(crate) options: EnqueueOptions,
}

/// New enqueue options: system (nil) scope, priority 128, ready now, no
/// idempotency key, the kind's or global attempt ceiling. Never NULL.
#[no_mangle]
pub extern "C" fn tj_enqueue_options_new() -> *mut tj_enqueue_options {
    Box::into_raw(Box::new(tj_enqueue_options {
        options: EnqueueOptions::default(),
    }))
}

/// Free enqueue options. NULL does nothing.
///
/// # Safety
/// `options` is NULL or a `tj_enqueue_options` not freed before.
#[no_mangle]
pub unsafe extern "C" fn tj_enqueue_options_free(options: *mut tj_enqueue_options) {
    boundary::free_box(options);
}

fn set(
    func: &'static str,
    options: *mut tj_enqueue_options,
    err: *mut *mut tj_error,
    f: impl FnOnce(&mut EnqueueOptions) -> Result<(), Failure>,
) -> tj_status {
    boundary::run(func, err, || {
        f(&mut handle_mut(func, "options", options)?.options)
    })
}

/// Enqueue into tenant `scope`, a UUID in text form (the nil UUID is the
/// system scope, the only home of `system:*` kinds).
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (options, scope), `TJ_STATUS_INVALID_UTF8`,
/// `TJ_STATUS_INVALID_ARGUMENT` for a malformed UUID (options unchanged).
///
/// # Safety
/// `options` is NULL or live; `scope` is NULL or NUL-terminated; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_enqueue_options_set_scope(
    options: *mut tj_enqueue_options,
    scope: *const c_char,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_enqueue_options_set_scope";
    set(F, options, err, |o| {
        let s: Scope = string(F, "scope", scope)?.parse()?;
        o.scope = Some(s);
        Ok(())
    })
}

/// Priority: 0 most urgent ... 255 least (default 128). FIFO within a priority.
///
/// # Safety
/// `options` is NULL or live. Returns `TJ_STATUS_NULL_ARGUMENT` for NULL.
#[no_mangle]
pub unsafe extern "C" fn tj_enqueue_options_set_priority(
    options: *mut tj_enqueue_options,
    priority: u8,
) -> tj_status {
    set(
        "tj_enqueue_options_set_priority",
        options,
        std::ptr::null_mut(),
        |o| {
            o.priority = Some(priority);
            Ok(())
        },
    )
}

/// Not leasable before `run_at_ms` (ms since the Unix epoch). Wins over a
/// delay. Checked at enqueue: after `TJ_MAX_INSTANT_MS` (the end of year
/// 9999) the enqueue is `TJ_STATUS_INVALID_ARGUMENT` naming `run_at`.
///
/// # Safety
/// `options` is NULL or live. Returns `TJ_STATUS_NULL_ARGUMENT` for NULL.
#[no_mangle]
pub unsafe extern "C" fn tj_enqueue_options_set_run_at_ms(
    options: *mut tj_enqueue_options,
    run_at_ms: u64,
) -> tj_status {
    set(
        "tj_enqueue_options_set_run_at_ms",
        options,
        std::ptr::null_mut(),
        |o| {
            o.run_at = Some(run_at_ms);
            Ok(())
        },
    )
}

/// Never leased at or after `expires_at_ms` (ms since the epoch): a job
/// still waiting then goes dead, "expired before start". Wins over
/// `tj_enqueue_options_set_expires_in_ms`. Checked at enqueue: not after
/// the job's run-at (or in the past) is `TJ_STATUS_INVALID_ARGUMENT`.
///
/// # Safety
/// `options` is NULL or live. Returns `TJ_STATUS_NULL_ARGUMENT` for NULL.
#[no_mangle]
pub unsafe extern "C" fn tj_enqueue_options_set_expires_at_ms(
    options: *mut tj_enqueue_options,
    expires_at_ms: u64,
) -> tj_status {
    set(
        "tj_enqueue_options_set_expires_at_ms",
        options,
        std::ptr::null_mut(),
        |o| {
            o.expires_at = Some(expires_at_ms);
            Ok(())
        },
    )
}

/// Expire at now + `expires_in_ms` (read at enqueue). Checked at enqueue: 0,
/// or a time not after the job's run-at, or over `TJ_MAX_INSTANT_MS`, is
/// `TJ_STATUS_INVALID_ARGUMENT`.
///
/// # Safety
/// `options` is NULL or live. Returns `TJ_STATUS_NULL_ARGUMENT` for NULL.
#[no_mangle]
pub unsafe extern "C" fn tj_enqueue_options_set_expires_in_ms(
    options: *mut tj_enqueue_options,
    expires_in_ms: u64,
) -> tj_status {
    set(
        "tj_enqueue_options_set_expires_in_ms",
        options,
        std::ptr::null_mut(),
        |o| {
            o.expires_in = Some(Duration::from_millis(expires_in_ms));
            Ok(())
        },
    )
}

/// Not leasable before now + `delay_ms` (read at enqueue). Checked at
/// enqueue: a delay that puts the time after `TJ_MAX_INSTANT_MS` is
/// `TJ_STATUS_INVALID_ARGUMENT` naming `delay` (never a wrap).
///
/// # Safety
/// `options` is NULL or live. Returns `TJ_STATUS_NULL_ARGUMENT` for NULL.
#[no_mangle]
pub unsafe extern "C" fn tj_enqueue_options_set_delay_ms(
    options: *mut tj_enqueue_options,
    delay_ms: u64,
) -> tj_status {
    set(
        "tj_enqueue_options_set_delay_ms",
        options,
        std::ptr::null_mut(),
        |o| {
            o.delay = Some(Duration::from_millis(delay_ms));
            Ok(())
        },
    )
}

/// Deduplicate on `key` (1 to `TJ_MAX_IDEMPOTENCY_KEY_LEN` bytes, checked at enqueue) within the
/// scope: while a job enqueued with `key` exists, a repeat enqueues nothing
/// and answers that job's id with `created` false. The key is copied.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (options, key), `TJ_STATUS_INVALID_UTF8`.
///
/// # Safety
/// `options` is NULL or live; `key` is NULL or NUL-terminated; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_enqueue_options_set_idempotency_key(
    options: *mut tj_enqueue_options,
    key: *const c_char,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_enqueue_options_set_idempotency_key";
    set(F, options, err, |o| {
        o.idempotency_key = Some(string(F, "key", key)?.to_string());
        Ok(())
    })
}

/// This job's attempt ceiling (>= 1, checked at enqueue), over the per-kind
/// and global `max_attempts`.
///
/// # Safety
/// `options` is NULL or live. Returns `TJ_STATUS_NULL_ARGUMENT` for NULL.
#[no_mangle]
pub unsafe extern "C" fn tj_enqueue_options_set_max_attempts(
    options: *mut tj_enqueue_options,
    max_attempts: u32,
) -> tj_status {
    set(
        "tj_enqueue_options_set_max_attempts",
        options,
        std::ptr::null_mut(),
        |o| {
            o.max_attempts = Some(max_attempts);
            Ok(())
        },
    )
}

/// This job's backoff base in ms (>= 1, at most `TJ_MAX_DURATION_MS`,
/// checked at enqueue), over the per-kind and global `backoff_base`: its
/// retries wait `base' = backoff_base_ms`, `cap' = max(cap, base')`, with
/// the kind's factor and `backoff_jitter`.
///
/// # Safety
/// `options` is NULL or live. Returns `TJ_STATUS_NULL_ARGUMENT` for NULL.
#[no_mangle]
pub unsafe extern "C" fn tj_enqueue_options_set_backoff_base_ms(
    options: *mut tj_enqueue_options,
    backoff_base_ms: u64,
) -> tj_status {
    set(
        "tj_enqueue_options_set_backoff_base_ms",
        options,
        std::ptr::null_mut(),
        |o| {
            o.backoff_base = Some(Duration::from_millis(backoff_base_ms));
            Ok(())
        },
    )
}

/// Record how the payload was made: `encoding` is a `tj_encoding` (default
/// `TJ_ENCODING_UNKNOWN`). `TJ_ENCODING_BYTES` makes the Python and Node
/// bindings hand the payload back as bytes / a `Buffer` even when it happens
/// to look like the cross-language convention; `TJ_ENCODING_VALUE` says it
/// is one convention value (`0x01` + msgpack) that they decode. C reads the
/// raw bytes back either way.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (options), `TJ_STATUS_INVALID_ARGUMENT`
/// for a number that is not a `tj_encoding` (options unchanged).
///
/// # Safety
/// `options` is NULL or live; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_enqueue_options_set_encoding(
    options: *mut tj_enqueue_options,
    encoding: u32,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_enqueue_options_set_encoding";
    set(F, options, err, |o| {
        o.encoding = encoding_from_u32(F, encoding)?;
        Ok(())
    })
}
