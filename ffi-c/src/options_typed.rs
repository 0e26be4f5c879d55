//! The typed `tj_options` setters, kept for ABI stability: each is a thin
//! wrapper that hands its key's name and a typed value to the core's key
//! table (the same path as `tj_options_set`), so its range rules are the
//! table's. New keys get no typed setter: use `tj_options_set`.

use std::ffi::c_char;
use std::time::Duration;

use telha_jobs_core::config::Value;

use crate::boundary::{self, handle_mut, string};
use crate::error::tj_error;
use crate::options::tj_options;
use crate::status::tj_status;

fn ms(v: u64) -> Value {
    Value::Duration(Duration::from_millis(v))
}

fn count(v: usize) -> Value {
    Value::Count(u64::try_from(v).unwrap_or(u64::MAX))
}

/// Set the global key `name` to `v`; the shape of every global setter.
fn set(func: &'static str, options: *mut tj_options, name: &str, v: Value) -> tj_status {
    boundary::run(func, std::ptr::null_mut(), || {
        handle_mut(func, "options", options)?.set_value(None, name, v)
    })
}

/// Set the per-kind key `name` of `kind` to `v`; the shape of every per-kind setter.
fn set_kind(
    func: &'static str,
    options: *mut tj_options,
    kind: *const c_char,
    err: *mut *mut tj_error,
    name: &str,
    v: Value,
) -> tj_status {
    boundary::run(func, err, || {
        let o = handle_mut(func, "options", options)?;
        let kind = string(func, "kind", kind)?;
        o.set_value(Some(kind), name, v)
    })
}

/// `jobs.lease_ttl`: how long a lease lasts without a heartbeat, in ms.
///
/// As `tj_options_set(options, "lease_ttl", ...)`. Returns
/// `TJ_STATUS_NULL_ARGUMENT` when `options` is NULL,
/// `TJ_STATUS_INVALID_ARGUMENT` for a value out of the key's range (1 ms to `TJ_MAX_DURATION_MS`;
/// the options then refuse to open a queue until the key is set again), else
/// `TJ_STATUS_OK`.
///
/// # Safety
/// `options` is NULL or a live `tj_options`.
#[no_mangle]
pub unsafe extern "C" fn tj_options_set_lease_ttl_ms(
    options: *mut tj_options,
    v: u64,
) -> tj_status {
    set("tj_options_set_lease_ttl_ms", options, "lease_ttl", ms(v))
}

/// `jobs.reaper_interval` in ms; 0 starts no background reaper
/// (`tj_queue_reap` still works).
///
/// As `tj_options_set(options, "reaper_interval", ...)`. Returns
/// `TJ_STATUS_NULL_ARGUMENT` when `options` is NULL,
/// `TJ_STATUS_INVALID_ARGUMENT` for a value out of the key's range (at most `TJ_MAX_DURATION_MS`;
/// the options then refuse to open a queue until the key is set again), else
/// `TJ_STATUS_OK`.
///
/// # Safety
/// `options` is NULL or a live `tj_options`.
#[no_mangle]
pub unsafe extern "C" fn tj_options_set_reaper_interval_ms(
    options: *mut tj_options,
    v: u64,
) -> tj_status {
    set(
        "tj_options_set_reaper_interval_ms",
        options,
        "reaper_interval",
        ms(v),
    )
}

/// `jobs.max_attempts`: failed attempts before a job is dead.
///
/// As `tj_options_set(options, "max_attempts", ...)`. Returns
/// `TJ_STATUS_NULL_ARGUMENT` when `options` is NULL,
/// `TJ_STATUS_INVALID_ARGUMENT` for a value out of the key's range (at least 1;
/// the options then refuse to open a queue until the key is set again), else
/// `TJ_STATUS_OK`.
///
/// # Safety
/// `options` is NULL or a live `tj_options`.
#[no_mangle]
pub unsafe extern "C" fn tj_options_set_max_attempts(
    options: *mut tj_options,
    v: u32,
) -> tj_status {
    set(
        "tj_options_set_max_attempts",
        options,
        "max_attempts",
        Value::Count(u64::from(v)),
    )
}

/// `jobs.backoff.base` in ms: the delay after the first failed attempt.
///
/// As `tj_options_set(options, "backoff_base", ...)`. Returns
/// `TJ_STATUS_NULL_ARGUMENT` when `options` is NULL,
/// `TJ_STATUS_INVALID_ARGUMENT` for a value out of the key's range (1 ms to `TJ_MAX_DURATION_MS`;
/// the options then refuse to open a queue until the key is set again), else
/// `TJ_STATUS_OK`.
///
/// # Safety
/// `options` is NULL or a live `tj_options`.
#[no_mangle]
pub unsafe extern "C" fn tj_options_set_backoff_base_ms(
    options: *mut tj_options,
    v: u64,
) -> tj_status {
    set(
        "tj_options_set_backoff_base_ms",
        options,
        "backoff_base",
        ms(v),
    )
}

/// `jobs.backoff.factor`: growth of the delay per further attempt.
///
/// As `tj_options_set(options, "backoff_factor", ...)`. Returns
/// `TJ_STATUS_NULL_ARGUMENT` when `options` is NULL,
/// `TJ_STATUS_INVALID_ARGUMENT` for a value out of the key's range (finite and >= 1.0;
/// the options then refuse to open a queue until the key is set again), else
/// `TJ_STATUS_OK`.
///
/// # Safety
/// `options` is NULL or a live `tj_options`.
#[no_mangle]
pub unsafe extern "C" fn tj_options_set_backoff_factor(
    options: *mut tj_options,
    v: f64,
) -> tj_status {
    set(
        "tj_options_set_backoff_factor",
        options,
        "backoff_factor",
        Value::Float(v),
    )
}

/// `jobs.backoff.cap` in ms: the longest delay (at least the base,
/// checked by `tj_queue_open`).
///
/// As `tj_options_set(options, "backoff_cap", ...)`. Returns
/// `TJ_STATUS_NULL_ARGUMENT` when `options` is NULL,
/// `TJ_STATUS_INVALID_ARGUMENT` for a value out of the key's range (at most `TJ_MAX_DURATION_MS`;
/// the options then refuse to open a queue until the key is set again), else
/// `TJ_STATUS_OK`.
///
/// # Safety
/// `options` is NULL or a live `tj_options`.
#[no_mangle]
pub unsafe extern "C" fn tj_options_set_backoff_cap_ms(
    options: *mut tj_options,
    v: u64,
) -> tj_status {
    set(
        "tj_options_set_backoff_cap_ms",
        options,
        "backoff_cap",
        ms(v),
    )
}

/// `jobs.completed_retention` in ms: completed jobs older than this are
/// pruned by the reaper. 0 keeps completed jobs forever (`"off"`).
///
/// As `tj_options_set(options, "completed_retention", ...)`. Returns
/// `TJ_STATUS_NULL_ARGUMENT` when `options` is NULL,
/// `TJ_STATUS_INVALID_ARGUMENT` for a value out of the key's range (at most `TJ_MAX_DURATION_MS`;
/// the options then refuse to open a queue until the key is set again), else
/// `TJ_STATUS_OK`.
///
/// # Safety
/// `options` is NULL or a live `tj_options`.
#[no_mangle]
pub unsafe extern "C" fn tj_options_set_completed_retention_ms(
    options: *mut tj_options,
    v: u64,
) -> tj_status {
    set(
        "tj_options_set_completed_retention_ms",
        options,
        "completed_retention",
        if v == 0 { Value::Off } else { ms(v) },
    )
}

/// `jobs.sync_writes`: fsync the WAL before every acknowledgement, so an
/// acknowledged operation survives power loss (concurrent callers share
/// one fsync). Off by default: then it survives the process being killed.
///
/// As `tj_options_set(options, "sync_writes", ...)`. Returns
/// `TJ_STATUS_NULL_ARGUMENT` when `options` is NULL, else
/// `TJ_STATUS_OK`.
///
/// # Safety
/// `options` is NULL or a live `tj_options`.
#[no_mangle]
pub unsafe extern "C" fn tj_options_set_sync_writes(
    options: *mut tj_options,
    v: bool,
) -> tj_status {
    set(
        "tj_options_set_sync_writes",
        options,
        "sync_writes",
        Value::Flag(v),
    )
}

/// `jobs.max_payload_bytes`: the largest payload or result accepted
/// (default 16 MiB).
///
/// As `tj_options_set(options, "max_payload_bytes", ...)`. Returns
/// `TJ_STATUS_NULL_ARGUMENT` when `options` is NULL,
/// `TJ_STATUS_INVALID_ARGUMENT` for a value out of the key's range (1 to `TJ_MAX_PAYLOAD_BYTES_LIMIT`;
/// the options then refuse to open a queue until the key is set again), else
/// `TJ_STATUS_OK`.
///
/// # Safety
/// `options` is NULL or a live `tj_options`.
#[no_mangle]
pub unsafe extern "C" fn tj_options_set_max_payload_bytes(
    options: *mut tj_options,
    v: usize,
) -> tj_status {
    set(
        "tj_options_set_max_payload_bytes",
        options,
        "max_payload_bytes",
        count(v),
    )
}

/// `jobs.prune_batch`: the most completed jobs one reaper pass prunes.
///
/// As `tj_options_set(options, "prune_batch", ...)`. Returns
/// `TJ_STATUS_NULL_ARGUMENT` when `options` is NULL,
/// `TJ_STATUS_INVALID_ARGUMENT` for a value out of the key's range (at least 1;
/// the options then refuse to open a queue until the key is set again), else
/// `TJ_STATUS_OK`.
///
/// # Safety
/// `options` is NULL or a live `tj_options`.
#[no_mangle]
pub unsafe extern "C" fn tj_options_set_prune_batch(
    options: *mut tj_options,
    v: usize,
) -> tj_status {
    set(
        "tj_options_set_prune_batch",
        options,
        "prune_batch",
        count(v),
    )
}

/// `[jobs.kinds."<kind>"] lease_ttl` in ms: this kind's lease TTL.
///
/// As `tj_options_set_kind(options, kind, "lease_ttl", ...)`. Unset per-kind
/// values inherit the global ones. Errors: `TJ_STATUS_NULL_ARGUMENT`
/// (options, kind), `TJ_STATUS_INVALID_UTF8` (kind),
/// `TJ_STATUS_INVALID_ARGUMENT` for a value out of range (1 ms to `TJ_MAX_DURATION_MS`); the
/// kind's syntax is checked by `tj_queue_open`.
///
/// # Safety
/// `options` is NULL or a live `tj_options`; `kind` is NULL or
/// NUL-terminated; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_options_set_kind_lease_ttl_ms(
    options: *mut tj_options,
    kind: *const c_char,
    v: u64,
    err: *mut *mut tj_error,
) -> tj_status {
    set_kind(
        "tj_options_set_kind_lease_ttl_ms",
        options,
        kind,
        err,
        "lease_ttl",
        ms(v),
    )
}

/// `[jobs.kinds."<kind>"] max_attempts`: this kind's attempt ceiling
/// (a job's own `max_attempts` still wins).
///
/// As `tj_options_set_kind(options, kind, "max_attempts", ...)`. Unset per-kind
/// values inherit the global ones. Errors: `TJ_STATUS_NULL_ARGUMENT`
/// (options, kind), `TJ_STATUS_INVALID_UTF8` (kind),
/// `TJ_STATUS_INVALID_ARGUMENT` for a value out of range (at least 1); the
/// kind's syntax is checked by `tj_queue_open`.
///
/// # Safety
/// `options` is NULL or a live `tj_options`; `kind` is NULL or
/// NUL-terminated; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_options_set_kind_max_attempts(
    options: *mut tj_options,
    kind: *const c_char,
    v: u32,
    err: *mut *mut tj_error,
) -> tj_status {
    set_kind(
        "tj_options_set_kind_max_attempts",
        options,
        kind,
        err,
        "max_attempts",
        Value::Count(u64::from(v)),
    )
}

/// `[jobs.kinds."<kind>"] backoff_base` in ms. A per-kind base `b` sets the
/// kind's base to `b` and raises its cap to at least `b`: `cap' = max(cap, b)`.
///
/// As `tj_options_set_kind(options, kind, "backoff_base", ...)`. Unset per-kind
/// values inherit the global ones. Errors: `TJ_STATUS_NULL_ARGUMENT`
/// (options, kind), `TJ_STATUS_INVALID_UTF8` (kind),
/// `TJ_STATUS_INVALID_ARGUMENT` for a value out of range (1 ms to `TJ_MAX_DURATION_MS`); the
/// kind's syntax is checked by `tj_queue_open`.
///
/// # Safety
/// `options` is NULL or a live `tj_options`; `kind` is NULL or
/// NUL-terminated; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_options_set_kind_backoff_base_ms(
    options: *mut tj_options,
    kind: *const c_char,
    v: u64,
    err: *mut *mut tj_error,
) -> tj_status {
    set_kind(
        "tj_options_set_kind_backoff_base_ms",
        options,
        kind,
        err,
        "backoff_base",
        ms(v),
    )
}

/// `[jobs.kinds."<kind>"] backoff_factor`.
///
/// As `tj_options_set_kind(options, kind, "backoff_factor", ...)`. Unset per-kind
/// values inherit the global ones. Errors: `TJ_STATUS_NULL_ARGUMENT`
/// (options, kind), `TJ_STATUS_INVALID_UTF8` (kind),
/// `TJ_STATUS_INVALID_ARGUMENT` for a value out of range (finite and >= 1.0); the
/// kind's syntax is checked by `tj_queue_open`.
///
/// # Safety
/// `options` is NULL or a live `tj_options`; `kind` is NULL or
/// NUL-terminated; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_options_set_kind_backoff_factor(
    options: *mut tj_options,
    kind: *const c_char,
    v: f64,
    err: *mut *mut tj_error,
) -> tj_status {
    set_kind(
        "tj_options_set_kind_backoff_factor",
        options,
        kind,
        err,
        "backoff_factor",
        Value::Float(v),
    )
}

/// `[jobs.kinds."<kind>"] backoff_cap` in ms (at least the kind's base,
/// checked by `tj_queue_open`).
///
/// As `tj_options_set_kind(options, kind, "backoff_cap", ...)`. Unset per-kind
/// values inherit the global ones. Errors: `TJ_STATUS_NULL_ARGUMENT`
/// (options, kind), `TJ_STATUS_INVALID_UTF8` (kind),
/// `TJ_STATUS_INVALID_ARGUMENT` for a value out of range (at most `TJ_MAX_DURATION_MS`); the
/// kind's syntax is checked by `tj_queue_open`.
///
/// # Safety
/// `options` is NULL or a live `tj_options`; `kind` is NULL or
/// NUL-terminated; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_options_set_kind_backoff_cap_ms(
    options: *mut tj_options,
    kind: *const c_char,
    v: u64,
    err: *mut *mut tj_error,
) -> tj_status {
    set_kind(
        "tj_options_set_kind_backoff_cap_ms",
        options,
        kind,
        err,
        "backoff_cap",
        ms(v),
    )
}

/// `[jobs.backoff_base_secs_by_kind]`: a per-kind backoff base in whole
/// seconds, with the same rule (`cap' = max(cap, base)`). Not a key of the
/// table (an internal map of the file); a per-kind `backoff_base` for the
/// same kind wins. The value (1 s to 100 years) and the kind are checked by
/// `tj_queue_open`.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (options, kind), `TJ_STATUS_INVALID_UTF8`.
///
/// # Safety
/// As `tj_options_set_kind_lease_ttl_ms`.
#[no_mangle]
pub unsafe extern "C" fn tj_options_set_backoff_base_secs_by_kind(
    options: *mut tj_options,
    kind: *const c_char,
    secs: u64,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_options_set_backoff_base_secs_by_kind";
    boundary::run(F, err, || {
        let o = handle_mut(F, "options", options)?;
        let kind = string(F, "kind", kind)?;
        o.set_backoff_base_secs(kind, secs);
        Ok(())
    })
}
