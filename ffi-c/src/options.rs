//! `tj_options`: the store configuration, built through setters.
//!
//! Each setter records a value; ranges are checked once, by `tj_queue_open`
//! (the core's `Config::validate`), so the order of the setters never
//! matters. Setters fail only for NULL or non-UTF-8 arguments.

use std::ffi::c_char;
use std::time::Duration;

use telha_jobs_core::{Config, KindConfig};

use crate::boundary::{self, handle_mut, opt_string, out, string, write, Res};
use crate::error::{tj_error, Failure};
use crate::status::tj_status;

/// A store configuration. Owned by the caller (`tj_options_new` /
/// `tj_options_load`, then `tj_options_free`); `tj_queue_open` copies it, so
/// it may be freed right after. Not thread-safe: do not set it from two
/// threads at once.
#[allow(non_camel_case_types)]
pub struct tj_options {
    pub(crate) config: Config,
}

/// New options holding the defaults (lease TTL 300 s, reaper every 30 s,
/// 5 attempts, backoff 10 s x4 up to 1 h, completed jobs kept 24 h, no
/// fsync, 16 MiB payloads, prune batch 10000). Never NULL (aborts only when
/// memory is exhausted). Free with `tj_options_free`.
#[no_mangle]
pub extern "C" fn tj_options_new() -> *mut tj_options {
    Box::into_raw(Box::new(tj_options {
        config: Config::default(),
    }))
}

/// The defaults, then the TOML file `path` (when NULL: the file named by
/// `$TELHA_JOBS_CONFIG`, if set), then the `TELHA_JOBS_*` environment
/// variables, validated: what a service usually wants. On success
/// `*options_out` is a new `tj_options` the caller frees.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (options_out), `TJ_STATUS_INVALID_UTF8`
/// (path), `TJ_STATUS_INVALID_ARGUMENT` for an unreadable file, bad TOML, an
/// unknown key or an out-of-range value (the message names it). Reads the
/// file and the environment; do not change the environment from another
/// thread meanwhile.
///
/// # Safety
/// `path` is NULL or NUL-terminated; `options_out` and `err` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_options_load(
    path: *const c_char,
    options_out: *mut *mut tj_options,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_options_load";
    boundary::run(F, err, || {
        let path = opt_string(F, "path", path)?;
        let options_out = out(F, "options_out", options_out)?;
        let config = Config::load(path.map(std::path::Path::new)).map_err(Failure::from)?;
        write(options_out, Box::into_raw(Box::new(tj_options { config })));
        Ok(())
    })
}

/// Free options. `tj_options_free(NULL)` does nothing.
///
/// # Safety
/// `options` is NULL or a `tj_options` from this library not freed before.
#[no_mangle]
pub unsafe extern "C" fn tj_options_free(options: *mut tj_options) {
    boundary::free_box(options);
}

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

/// Apply `f` to the options' config; the shape of every global setter.
fn set(func: &'static str, options: *mut tj_options, f: impl FnOnce(&mut Config)) -> tj_status {
    boundary::run(func, std::ptr::null_mut(), || {
        f(&mut handle_mut(func, "options", options)?.config);
        Ok(())
    })
}

/// Apply `f` to the per-kind override of `kind`; the shape of every per-kind setter.
fn set_kind(
    func: &'static str,
    options: *mut tj_options,
    kind: *const c_char,
    err: *mut *mut tj_error,
    f: impl FnOnce(&mut KindConfig),
) -> tj_status {
    boundary::run(func, err, || -> Res<()> {
        let o = handle_mut(func, "options", options)?;
        let kind = string(func, "kind", kind)?;
        f(o.config.kinds.entry(kind.to_string()).or_default());
        Ok(())
    })
}

/// `jobs.lease_ttl`: how long a lease lasts without a heartbeat, in ms (>= 1).
///
/// Returns `TJ_STATUS_NULL_ARGUMENT` when `options` is NULL, else
/// `TJ_STATUS_OK`; the value is checked by `tj_queue_open`.
///
/// # Safety
/// `options` is NULL or a live `tj_options`.
#[no_mangle]
pub unsafe extern "C" fn tj_options_set_lease_ttl_ms(
    options: *mut tj_options,
    v: u64,
) -> tj_status {
    set("tj_options_set_lease_ttl_ms", options, |c| {
        c.lease_ttl = ms(v)
    })
}

/// `jobs.reaper_interval` in ms; 0 starts no background reaper
/// (`tj_queue_reap` still works).
///
/// Returns `TJ_STATUS_NULL_ARGUMENT` when `options` is NULL, else
/// `TJ_STATUS_OK`; the value is checked by `tj_queue_open`.
///
/// # Safety
/// `options` is NULL or a live `tj_options`.
#[no_mangle]
pub unsafe extern "C" fn tj_options_set_reaper_interval_ms(
    options: *mut tj_options,
    v: u64,
) -> tj_status {
    set("tj_options_set_reaper_interval_ms", options, |c| {
        c.reaper_interval = ms(v)
    })
}

/// `jobs.max_attempts`: leases before a job is dead-lettered (>= 1).
///
/// Returns `TJ_STATUS_NULL_ARGUMENT` when `options` is NULL, else
/// `TJ_STATUS_OK`; the value is checked by `tj_queue_open`.
///
/// # Safety
/// `options` is NULL or a live `tj_options`.
#[no_mangle]
pub unsafe extern "C" fn tj_options_set_max_attempts(
    options: *mut tj_options,
    v: u32,
) -> tj_status {
    set("tj_options_set_max_attempts", options, |c| {
        c.max_attempts = v
    })
}

/// `jobs.backoff.base` in ms: the delay after the first failed attempt (> 0).
///
/// Returns `TJ_STATUS_NULL_ARGUMENT` when `options` is NULL, else
/// `TJ_STATUS_OK`; the value is checked by `tj_queue_open`.
///
/// # Safety
/// `options` is NULL or a live `tj_options`.
#[no_mangle]
pub unsafe extern "C" fn tj_options_set_backoff_base_ms(
    options: *mut tj_options,
    v: u64,
) -> tj_status {
    set("tj_options_set_backoff_base_ms", options, |c| {
        c.backoff.base = ms(v)
    })
}

/// `jobs.backoff.factor`: growth of the delay per further attempt (finite, >= 1.0).
///
/// Returns `TJ_STATUS_NULL_ARGUMENT` when `options` is NULL, else
/// `TJ_STATUS_OK`; the value is checked by `tj_queue_open`.
///
/// # Safety
/// `options` is NULL or a live `tj_options`.
#[no_mangle]
pub unsafe extern "C" fn tj_options_set_backoff_factor(
    options: *mut tj_options,
    v: f64,
) -> tj_status {
    set("tj_options_set_backoff_factor", options, |c| {
        c.backoff.factor = v
    })
}

/// `jobs.backoff.cap` in ms: the longest delay (>= the base).
///
/// Returns `TJ_STATUS_NULL_ARGUMENT` when `options` is NULL, else
/// `TJ_STATUS_OK`; the value is checked by `tj_queue_open`.
///
/// # Safety
/// `options` is NULL or a live `tj_options`.
#[no_mangle]
pub unsafe extern "C" fn tj_options_set_backoff_cap_ms(
    options: *mut tj_options,
    v: u64,
) -> tj_status {
    set("tj_options_set_backoff_cap_ms", options, |c| {
        c.backoff.cap = ms(v)
    })
}

/// `jobs.completed_retention` in ms: completed jobs older than this are
/// pruned by the reaper. 0 keeps completed jobs forever.
///
/// Returns `TJ_STATUS_NULL_ARGUMENT` when `options` is NULL, else
/// `TJ_STATUS_OK`; the value is checked by `tj_queue_open`.
///
/// # Safety
/// `options` is NULL or a live `tj_options`.
#[no_mangle]
pub unsafe extern "C" fn tj_options_set_completed_retention_ms(
    options: *mut tj_options,
    v: u64,
) -> tj_status {
    set("tj_options_set_completed_retention_ms", options, |c| {
        c.completed_retention = (v > 0).then(|| ms(v))
    })
}

/// `jobs.sync_writes`: fsync the WAL before every acknowledgement, so an
/// acknowledged operation survives power loss (concurrent callers share
/// one fsync). Off by default: then it survives the process being killed.
///
/// Returns `TJ_STATUS_NULL_ARGUMENT` when `options` is NULL, else
/// `TJ_STATUS_OK`; the value is checked by `tj_queue_open`.
///
/// # Safety
/// `options` is NULL or a live `tj_options`.
#[no_mangle]
pub unsafe extern "C" fn tj_options_set_sync_writes(
    options: *mut tj_options,
    v: bool,
) -> tj_status {
    set("tj_options_set_sync_writes", options, |c| c.sync_writes = v)
}

/// `jobs.max_payload_bytes`: the largest payload or result accepted
/// (1 to 1 GiB; default 16 MiB).
///
/// Returns `TJ_STATUS_NULL_ARGUMENT` when `options` is NULL, else
/// `TJ_STATUS_OK`; the value is checked by `tj_queue_open`.
///
/// # Safety
/// `options` is NULL or a live `tj_options`.
#[no_mangle]
pub unsafe extern "C" fn tj_options_set_max_payload_bytes(
    options: *mut tj_options,
    v: usize,
) -> tj_status {
    set("tj_options_set_max_payload_bytes", options, |c| {
        c.max_payload_bytes = v
    })
}

/// `jobs.prune_batch`: the most completed jobs one reaper pass prunes (>= 1).
///
/// Returns `TJ_STATUS_NULL_ARGUMENT` when `options` is NULL, else
/// `TJ_STATUS_OK`; the value is checked by `tj_queue_open`.
///
/// # Safety
/// `options` is NULL or a live `tj_options`.
#[no_mangle]
pub unsafe extern "C" fn tj_options_set_prune_batch(
    options: *mut tj_options,
    v: usize,
) -> tj_status {
    set("tj_options_set_prune_batch", options, |c| c.prune_batch = v)
}

/// `[jobs.kinds."<kind>"] lease_ttl` in ms: this kind's lease TTL.
///
/// Unset per-kind values inherit the global ones. Errors:
/// `TJ_STATUS_NULL_ARGUMENT` (options, kind), `TJ_STATUS_INVALID_UTF8`
/// (kind); the kind's syntax and the value are checked by `tj_queue_open`.
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
        |k| k.lease_ttl = Some(ms(v)),
    )
}

/// `[jobs.kinds."<kind>"] max_attempts`: this kind's attempt ceiling
/// (a job's own `max_attempts` still wins).
///
/// Unset per-kind values inherit the global ones. Errors:
/// `TJ_STATUS_NULL_ARGUMENT` (options, kind), `TJ_STATUS_INVALID_UTF8`
/// (kind); the kind's syntax and the value are checked by `tj_queue_open`.
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
        |k| k.max_attempts = Some(v),
    )
}

/// `[jobs.kinds."<kind>"] backoff_base` in ms. A per-kind base `b` sets the
/// kind's base to `b` and raises its cap to at least `b`: `cap' = max(cap, b)`.
///
/// Unset per-kind values inherit the global ones. Errors:
/// `TJ_STATUS_NULL_ARGUMENT` (options, kind), `TJ_STATUS_INVALID_UTF8`
/// (kind); the kind's syntax and the value are checked by `tj_queue_open`.
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
        |k| k.backoff_base = Some(ms(v)),
    )
}

/// `[jobs.kinds."<kind>"] backoff_factor`.
///
/// Unset per-kind values inherit the global ones. Errors:
/// `TJ_STATUS_NULL_ARGUMENT` (options, kind), `TJ_STATUS_INVALID_UTF8`
/// (kind); the kind's syntax and the value are checked by `tj_queue_open`.
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
        |k| k.backoff_factor = Some(v),
    )
}

/// `[jobs.kinds."<kind>"] backoff_cap` in ms.
///
/// Unset per-kind values inherit the global ones. Errors:
/// `TJ_STATUS_NULL_ARGUMENT` (options, kind), `TJ_STATUS_INVALID_UTF8`
/// (kind); the kind's syntax and the value are checked by `tj_queue_open`.
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
        |k| k.backoff_cap = Some(ms(v)),
    )
}

/// `[jobs.backoff_base_secs_by_kind]`: a per-kind backoff base in whole
/// seconds, with the same rule (`cap' = max(cap, base)`). A
/// `tj_options_set_kind_backoff_base_ms` for the same kind wins.
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
        o.config
            .backoff_base_secs_by_kind
            .insert(kind.to_string(), secs);
        Ok(())
    })
}
