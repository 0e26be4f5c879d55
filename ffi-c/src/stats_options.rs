//! `tj_stats_options` and `tj_queue_stats_page`: the per-scope counts of
//! `stats`, a page at a time (the totals and per-kind counts stay whole).

use std::ffi::c_char;

use telha_jobs_core::{ScopeOrder, StatsQuery};

use crate::boundary::{self, handle, handle_mut, out, string, write};
use crate::error::tj_error;
use crate::queue::tj_queue;
use crate::stats::tj_stats;
use crate::status::tj_status;

/// Which scopes `tj_queue_stats_page` returns. Owned by the caller
/// (`tj_stats_options_new` / `tj_stats_options_free`). Not thread-safe
/// while being set.
#[allow(non_camel_case_types)]
pub struct tj_stats_options {
    query: StatsQuery,
}

/// New stats options: the `TJ_STATS_SCOPE_LIMIT_DEFAULT` scopes with the
/// most pending jobs, from the start. Never NULL.
#[no_mangle]
pub extern "C" fn tj_stats_options_new() -> *mut tj_stats_options {
    Box::into_raw(Box::new(tj_stats_options {
        query: StatsQuery::default(),
    }))
}

/// Free stats options. NULL does nothing.
///
/// # Safety
/// `options` is NULL or a `tj_stats_options` not freed before.
#[no_mangle]
pub unsafe extern "C" fn tj_stats_options_free(options: *mut tj_stats_options) {
    boundary::free_box(options);
}

/// The order: `"pending"`, `"leased"` or `"dead"` (the most first, ties by
/// id) or `"name"` (by id, ascending). Resets the cursor's meaning: pass
/// only cursors of the same order.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT`, `TJ_STATUS_INVALID_UTF8`,
/// `TJ_STATUS_INVALID_ARGUMENT` for another word (options unchanged).
///
/// # Safety
/// `options` is NULL or live; `order` is NULL or NUL-terminated; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_stats_options_set_scope_order(
    options: *mut tj_stats_options,
    order: *const c_char,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_stats_options_set_scope_order";
    boundary::run(F, err, || {
        let o = handle_mut(F, "options", options)?;
        o.query.scope_order = string(F, "order", order)?.parse::<ScopeOrder>()?;
        Ok(())
    })
}

/// At most `limit` scopes (0: none, and no pass over them).
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT`, `TJ_STATUS_INVALID_ARGUMENT` over
/// `TJ_MAX_SCOPE_LIMIT` (options unchanged).
///
/// # Safety
/// `options` is NULL or live; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_stats_options_set_scope_limit(
    options: *mut tj_stats_options,
    limit: usize,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_stats_options_set_scope_limit";
    boundary::run(F, err, || {
        let o = handle_mut(F, "options", options)?;
        if limit > telha_jobs_core::limits::MAX_SCOPE_LIMIT {
            return Err(crate::error::Failure::invalid(format!(
                "{F}: {limit} is over TJ_MAX_SCOPE_LIMIT"
            )));
        }
        o.query.scope_limit = limit;
        Ok(())
    })
}

/// Start after this cursor: a previous page's `tj_stats_scopes_next`
/// (copied), of the same order. NULL clears it (from the start).
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (options), `TJ_STATUS_INVALID_UTF8`.
/// A malformed cursor is refused by `tj_queue_stats_page`.
///
/// # Safety
/// `options` is NULL or live; `after` is NULL or NUL-terminated; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_stats_options_set_scopes_after(
    options: *mut tj_stats_options,
    after: *const c_char,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_stats_options_set_scopes_after";
    boundary::run(F, err, || {
        let o = handle_mut(F, "options", options)?;
        o.query.scopes_after = if after.is_null() {
            None
        } else {
            Some(string(F, "after", after)?.to_string())
        };
        Ok(())
    })
}

/// Only scopes whose id (lowercase hyphenated text) starts with `prefix`
/// (copied). NULL clears it.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (options), `TJ_STATUS_INVALID_UTF8`.
/// A prefix that cannot start a scope id is refused by
/// `tj_queue_stats_page`.
///
/// # Safety
/// `options` is NULL or live; `prefix` is NULL or NUL-terminated; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_stats_options_set_scope_prefix(
    options: *mut tj_stats_options,
    prefix: *const c_char,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_stats_options_set_scope_prefix";
    boundary::run(F, err, || {
        let o = handle_mut(F, "options", options)?;
        o.query.scope_prefix = if prefix.is_null() {
            None
        } else {
            Some(string(F, "prefix", prefix)?.to_string())
        };
        Ok(())
    })
}

/// Also read, per kind with a job due now, how long its oldest such job has
/// been ready (`tj_stats_oldest_ready`); default false. Exact, from the
/// band heads and never a scan, but O(scopes with ready work): about
/// 40–60 ms at 100,000 such scopes, so off unless asked.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (options unchanged).
///
/// # Safety
/// `options` is NULL or live; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_stats_options_set_oldest_ready(
    options: *mut tj_stats_options,
    oldest_ready: bool,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_stats_options_set_oldest_ready";
    boundary::run(F, err, || {
        handle_mut(F, "options", options)?.query.oldest_ready = oldest_ready;
        Ok(())
    })
}

/// Exact job counts per kind and state, whole, and the page of per-scope
/// counts `options` asks for (NULL: as `tj_queue_stats`). On success
/// `*stats_out` is a new `tj_stats` the caller frees; pass
/// `tj_stats_scopes_next(stats)` to `tj_stats_options_set_scopes_after` for
/// the next page. Never blocks on I/O: the name order reads a range of
/// the in-memory counts, a count order passes over every scope held.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (queue, stats_out),
/// `TJ_STATUS_INVALID_ARGUMENT` (a cursor of another order or malformed, a
/// prefix that cannot start a scope id), `TJ_STATUS_CLOSED`.
///
/// # Safety
/// `queue` and `options` are NULL or live; `stats_out` and `err` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_stats_page(
    queue: *const tj_queue,
    options: *const tj_stats_options,
    stats_out: *mut *mut tj_stats,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_stats_page";
    boundary::run(F, err, || {
        let q = crate::queue::q(F, queue)?;
        let query = if options.is_null() {
            StatsQuery::default()
        } else {
            handle(F, "options", options)?.query.clone()
        };
        let stats_out = out(F, "stats_out", stats_out)?;
        let stats = q.queue.stats_with(&query)?;
        write(stats_out, Box::into_raw(Box::new(tj_stats::new(stats))));
        Ok(())
    })
}

/// The cursor of the page after this one (borrowed from `stats`), or NULL
/// when this page is the last (and for NULL).
///
/// # Safety
/// `stats` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_stats_scopes_next(stats: *const tj_stats) -> *const c_char {
    unsafe { stats.as_ref() }
        .and_then(|s| s.scopes_next.as_ref())
        .map_or(std::ptr::null(), |c| c.as_ptr())
}
