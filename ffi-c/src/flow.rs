//! Flow control: `tj_limit` (the settings of one limit),
//! `tj_queue_set_limit`, `_remove_limit` and `_limits`, and `tj_limits`
//! with `tj_limit_status` (every limit and its use now).

use std::ffi::{c_char, CString};

use telha_jobs_core::{Limit, LimitStatus, LimitTarget};

use crate::boundary::{self, cstring, handle, handle_mut, out, string, write, write_opt, Res};
use crate::error::{tj_error, Failure};
use crate::queue::{q, tj_queue};
use crate::status::tj_status;

/// The settings of one limit, for `tj_queue_set_limit`: any of a
/// concurrency cap, a rate (with an optional burst) and, on scope targets,
/// a weight. Owned by the caller (`tj_limit_new` / `tj_limit_free`); the
/// setters only record, `tj_queue_set_limit` checks the values. Not
/// thread-safe while being set.
#[allow(non_camel_case_types)]
pub struct tj_limit {
    limit: Limit,
}

/// New limit settings with nothing set (`tj_queue_set_limit` refuses a
/// limit that sets nothing). Never NULL.
#[no_mangle]
pub extern "C" fn tj_limit_new() -> *mut tj_limit {
    Box::into_raw(Box::new(tj_limit {
        limit: Limit::default(),
    }))
}

/// Free limit settings. NULL does nothing.
///
/// # Safety
/// `limit` is NULL or a `tj_limit` not freed before.
#[no_mangle]
pub unsafe extern "C" fn tj_limit_free(limit: *mut tj_limit) {
    boundary::free_box(limit);
}

pub(crate) fn set(
    func: &'static str,
    limit: *mut tj_limit,
    f: impl FnOnce(&mut Limit),
) -> tj_status {
    boundary::run(func, std::ptr::null_mut(), || {
        f(&mut handle_mut(func, "limit", limit)?.limit);
        Ok(())
    })
}

/// At most `n` jobs of the target leased at once: 1 to 1000000 (checked by
/// `tj_queue_set_limit`; to stop a target altogether, pause it).
///
/// # Safety
/// `limit` is NULL or live. Returns `TJ_STATUS_NULL_ARGUMENT` for NULL.
#[no_mangle]
pub unsafe extern "C" fn tj_limit_set_concurrency(limit: *mut tj_limit, n: u32) -> tj_status {
    set("tj_limit_set_concurrency", limit, |l| {
        l.concurrency = Some(n)
    })
}

/// At most `per_second` leases a second on average, a token bucket: over
/// 0, at most 1000000 (0.5 is one lease every two seconds; checked by
/// `tj_queue_set_limit`).
///
/// # Safety
/// `limit` is NULL or live. Returns `TJ_STATUS_NULL_ARGUMENT` for NULL.
#[no_mangle]
pub unsafe extern "C" fn tj_limit_set_rate(limit: *mut tj_limit, per_second: f64) -> tj_status {
    set("tj_limit_set_rate", limit, |l| l.rate = Some(per_second))
}

/// How many leases may go at once after a quiet spell (the bucket's
/// size): 1 to 1000000, only together with a rate (default: the rate
/// rounded up, at least 1).
///
/// # Safety
/// `limit` is NULL or live. Returns `TJ_STATUS_NULL_ARGUMENT` for NULL.
#[no_mangle]
pub unsafe extern "C" fn tj_limit_set_burst(limit: *mut tj_limit, burst: u32) -> tj_status {
    set("tj_limit_set_burst", limit, |l| l.burst = Some(burst))
}

/// The scope's share of leases while other scopes have work too: 1 to
/// 1000; only on `scope:<uuid>` and `scope:*` targets (default 1).
///
/// # Safety
/// `limit` is NULL or live. Returns `TJ_STATUS_NULL_ARGUMENT` for NULL.
#[no_mangle]
pub unsafe extern "C" fn tj_limit_set_weight(limit: *mut tj_limit, weight: u32) -> tj_status {
    set("tj_limit_set_weight", limit, |l| l.weight = Some(weight))
}

fn parse_target(func: &str, target: *const c_char) -> Res<LimitTarget> {
    Ok(LimitTarget::parse(string(func, "target", target)?)?)
}

/// Set (or replace) the limit on `target`: `"kind:<kind or family:*>"`,
/// `"scope:<uuid>"`, `"scope:*"` (each scope on its own),
/// `"scope:<uuid>/kind:<pattern>"` or the same with `*` for the uuid (the
/// kind within each scope on its own), `"key:<job key>"` or `"key:*"`
/// (each job key on its own; see `tj_enqueue_options_set_key`), with the
/// settings of `*limit` (copied). Durable; takes effect for the next lease
/// and counts the leases that exist now (a cap below them lets none go
/// until enough settle; nothing running is taken back).
///
/// Blocks for one RocksDB write.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (queue, target, limit),
/// `TJ_STATUS_INVALID_UTF8`, `TJ_STATUS_INVALID_ARGUMENT` (a malformed
/// target, nothing set, a setting out of range, a burst without a rate, a
/// weight on a target that is not a scope, ordered off a key target with
/// concurrency 1; nothing changes),
/// `TJ_STATUS_STORAGE`, `TJ_STATUS_CLOSED`.
///
/// # Safety
/// `queue` and `limit` are NULL or live; `target` is NULL or
/// NUL-terminated; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_set_limit(
    queue: *const tj_queue,
    target: *const c_char,
    limit: *const tj_limit,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_set_limit";
    boundary::run(F, err, || {
        let q = q(F, queue)?;
        let t = parse_target(F, target)?;
        let l = handle(F, "limit", limit)?.limit;
        q.queue.set_limit(&t, l)?;
        Ok(())
    })
}

/// Remove the limit on `target` (named as for `tj_queue_set_limit`);
/// waiting lease calls wake. On success `*removed_out` (when not NULL) is
/// false when there was none.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (queue, target), `TJ_STATUS_INVALID_UTF8`,
/// `TJ_STATUS_INVALID_ARGUMENT` (malformed target), `TJ_STATUS_STORAGE`,
/// `TJ_STATUS_CLOSED`.
///
/// # Safety
/// `queue` is NULL or live; `target` is NULL or NUL-terminated;
/// `removed_out` and `err` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_remove_limit(
    queue: *const tj_queue,
    target: *const c_char,
    removed_out: *mut bool,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_remove_limit";
    boundary::run(F, err, || {
        let q = q(F, queue)?;
        let t = parse_target(F, target)?;
        write_opt(removed_out, q.queue.remove_limit(&t)?);
        Ok(())
    })
}

/// One limit and its use now (`tj_limits_get`). A plain value; `target` is
/// borrowed from the `tj_limits` it came from. Each setting has a flag
/// saying whether the limit sets it (the value is 0 when not).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tj_limit_status {
    /// The target's label, e.g. `"kind:embed"` or `"scope:*"` (NUL-terminated).
    pub target: *const c_char,
    /// Whether a concurrency cap is set.
    pub has_concurrency: bool,
    /// The concurrency cap.
    pub concurrency: u32,
    /// Whether a rate is set.
    pub has_rate: bool,
    /// The rate, leases per second (may be fractional).
    pub rate: f64,
    /// Whether a burst was given (without one, a rate's bucket holds the
    /// rate rounded up, at least 1).
    pub has_burst: bool,
    /// The burst as given.
    pub burst: u32,
    /// Whether a scope weight is set.
    pub has_weight: bool,
    /// The weight.
    pub weight: u32,
    /// Jobs leased now that the limit counts (for `scope:*` targets,
    /// summed over the scopes).
    pub leased: u64,
    /// How many of its instances are at their cap or out of tokens now: 0
    /// or 1, or for `scope:*` targets the number of scopes held back.
    pub held: u64,
    /// How often the cap held work back since the store was opened.
    pub throttled_concurrency: u64,
    /// How often the rate held work back since the store was opened.
    pub throttled_rate: u64,
    /// Whether the limit is ordered (FIFO per key; key targets only).
    pub ordered: bool,
}

/// Every limit with its use, as of the `tj_queue_limits` call, sorted by
/// target label. Owned by the caller (`tj_limits_free`); the labels
/// borrowed from it live until then. Immutable: readable from many threads.
#[allow(non_camel_case_types)]
pub struct tj_limits {
    items: Vec<(CString, LimitStatus)>,
}

/// Every limit set, by target label, with how it is used now. On success
/// `*limits_out` is a new `tj_limits` the caller frees with `tj_limits_free`.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (queue, limits_out), `TJ_STATUS_CLOSED`.
///
/// # Safety
/// `queue` is NULL or live; `limits_out` and `err` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_limits(
    queue: *const tj_queue,
    limits_out: *mut *mut tj_limits,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_limits";
    boundary::run(F, err, || {
        let q = q(F, queue)?;
        let limits_out = out(F, "limits_out", limits_out)?;
        let items = q
            .queue
            .limits()?
            .into_iter()
            .map(|s| (cstring(&s.target.label()), s))
            .collect();
        write(limits_out, Box::into_raw(Box::new(tj_limits { items })));
        Ok(())
    })
}

/// How many limits there are; 0 for NULL.
///
/// # Safety
/// `limits` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_limits_count(limits: *const tj_limits) -> usize {
    unsafe { limits.as_ref() }.map_or(0, |l| l.items.len())
}

/// Limit `index` (sorted by target label) into `*status_out`, its `target`
/// borrowed from `limits`. Written only on success.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (limits, status_out),
/// `TJ_STATUS_INVALID_ARGUMENT` when `index >= tj_limits_count(limits)`.
///
/// # Safety
/// `limits` is NULL or live; `status_out` and `err` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_limits_get(
    limits: *const tj_limits,
    index: usize,
    status_out: *mut tj_limit_status,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_limits_get";
    boundary::run(F, err, || {
        let l = handle(F, "limits", limits)?;
        let status_out = out(F, "status_out", status_out)?;
        let (label, s) = l.items.get(index).ok_or_else(|| {
            Failure::invalid(format!(
                "{F}: index {index} is past the {} limits",
                l.items.len()
            ))
        })?;
        let lim = &s.limit;
        write(
            status_out,
            tj_limit_status {
                target: label.as_ptr(),
                has_concurrency: lim.concurrency.is_some(),
                concurrency: lim.concurrency.unwrap_or(0),
                has_rate: lim.rate.is_some(),
                rate: lim.rate.unwrap_or(0.0),
                has_burst: lim.burst.is_some(),
                burst: lim.burst.unwrap_or(0),
                has_weight: lim.weight.is_some(),
                weight: lim.weight.unwrap_or(0),
                leased: s.leased,
                held: s.held,
                throttled_concurrency: s.throttled_concurrency,
                throttled_rate: s.throttled_rate,
                ordered: lim.ordered,
            },
        );
        Ok(())
    })
}

/// Free a `tj_limits`. NULL does nothing.
///
/// # Safety
/// `limits` is NULL or a `tj_limits` not freed before.
#[no_mangle]
pub unsafe extern "C" fn tj_limits_free(limits: *mut tj_limits) {
    boundary::free_box(limits);
}
