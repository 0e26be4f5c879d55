//! The schedule calls: `tj_queue_schedule_put`, `_get`, `_list`, `_delete`,
//! `_pause`, `_resume`, `tj_queue_run_schedules`, and the store-free
//! `tj_schedule_next_times`.

use std::ffi::c_char;

use telha_jobs_core::ScheduleInfo;

use crate::boundary::{self, handle, opt_string, out, string, write, write_opt, Res};
use crate::error::{tj_error, Failure};
use crate::limits::TJ_MAX_NEXT_TIMES;
use crate::queue::{q, tj_queue};
use crate::schedule::tj_schedule;
use crate::schedule_info::{tj_run_report, tj_schedule_info, tj_schedule_list};
use crate::status::tj_status;

fn boxed(info: ScheduleInfo) -> *mut tj_schedule_info {
    Box::into_raw(Box::new(tj_schedule_info::new(info)))
}

/// Hand `info` out through an optional out-pointer: boxed only when wanted
/// (a box made for a NULL pointer would leak).
fn answer_opt(info_out: *mut *mut tj_schedule_info, info: ScheduleInfo) {
    if !info_out.is_null() {
        write(info_out, boxed(info));
    }
}

/// Create the schedule `tj_schedule`'s name, or replace it. An update keeps
/// what the schedule has done (slots already enqueued are never enqueued
/// again) unless its spec, time zone or anchor changed: then it starts
/// afresh from now. A new schedule's first slot is the first one after now.
/// Each slot's job has the idempotency key `schedule:<name>:<slot_ms>`.
/// On success `*info_out` (when not NULL) is a new `tj_schedule_info`
/// the caller frees. `schedule` is copied: free it whenever you like.
///
/// Slots are enqueued by the store's scheduler thread as they fall due, or
/// by `tj_queue_run_schedules` (the only way with `reaper_interval` 0).
/// Blocks for one RocksDB write.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (queue, schedule),
/// `TJ_STATUS_INVALID_ARGUMENT` for everything checked here, never at fire
/// time (the message says which): a name empty, over
/// `TJ_MAX_SCHEDULE_NAME_LEN` bytes or holding a control character; a bad
/// cron line or nickname; an unknown time zone, or one on an interval; an
/// interval under 1 s (`"every 0s"`, `"every 500ms"`); a spec that never
/// fires (`"0 0 30 2 *"`); a malformed kind; `max_attempts` 0; `expires_in`
/// 0 or too long; `max_catch_up` 0 or over `TJ_MAX_CATCH_UP`; a payload
/// over `max_payload_bytes`; a read-only handle. `TJ_STATUS_STORAGE`,
/// `TJ_STATUS_CLOSED`. Nothing is stored on failure.
///
/// # Safety
/// `queue` and `schedule` are NULL or live; `info_out` and `err` are NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_schedule_put(
    queue: *const tj_queue,
    schedule: *const tj_schedule,
    info_out: *mut *mut tj_schedule_info,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_schedule_put";
    boundary::run(F, err, || {
        let q = q(F, queue)?;
        let s = handle(F, "schedule", schedule)?;
        let info = q.queue.schedule_put(&s.schedule)?;
        answer_opt(info_out, info);
        Ok(())
    })
}

/// The schedule `name`. On success `*info_out` is a new `tj_schedule_info`
/// the caller frees. Never blocks on I/O (schedules are held in memory).
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (queue, name, info_out),
/// `TJ_STATUS_INVALID_UTF8`, `TJ_STATUS_INVALID_ARGUMENT` for a malformed
/// name (empty, too long), `TJ_STATUS_NOT_FOUND` when there is no such
/// schedule, `TJ_STATUS_CLOSED`.
///
/// # Safety
/// `queue` is NULL or live; `name` is NULL or NUL-terminated; `info_out` and
/// `err` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_schedule_get(
    queue: *const tj_queue,
    name: *const c_char,
    info_out: *mut *mut tj_schedule_info,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_schedule_get";
    boundary::run(F, err, || {
        let q = q(F, queue)?;
        let name = string(F, "name", name)?;
        let info_out = out(F, "info_out", info_out)?;
        let info = q.queue.schedule_get(name)?;
        write(info_out, boxed(info));
        Ok(())
    })
}

/// Every schedule, by name. On success `*list_out` is a new
/// `tj_schedule_list` the caller frees (`tj_schedule_list_len`, `_get`).
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (queue, list_out), `TJ_STATUS_CLOSED`.
///
/// # Safety
/// `queue` is NULL or live; `list_out` and `err` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_schedule_list(
    queue: *const tj_queue,
    list_out: *mut *mut tj_schedule_list,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_schedule_list";
    boundary::run(F, err, || {
        let q = q(F, queue)?;
        let list_out = out(F, "list_out", list_out)?;
        let items = q.queue.schedule_list()?;
        write(
            list_out,
            Box::into_raw(Box::new(tj_schedule_list::new(items))),
        );
        Ok(())
    })
}

/// Delete the schedule `name`. The jobs it enqueued stay (and stay
/// listable with `tj_list_options_set_schedule`). Blocks for one write.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (queue, name), `TJ_STATUS_INVALID_UTF8`,
/// `TJ_STATUS_INVALID_ARGUMENT` for a malformed name or a read-only handle,
/// `TJ_STATUS_NOT_FOUND`, `TJ_STATUS_STORAGE`, `TJ_STATUS_CLOSED`.
///
/// # Safety
/// `queue` is NULL or live; `name` is NULL or NUL-terminated; `err` is NULL
/// or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_schedule_delete(
    queue: *const tj_queue,
    name: *const c_char,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_schedule_delete";
    boundary::run(F, err, || {
        let q = q(F, queue)?;
        let name = string(F, "name", name)?;
        q.queue.schedule_delete(name)?;
        Ok(())
    })
}

fn set_paused(
    func: &'static str,
    queue: *const tj_queue,
    name: *const c_char,
    paused: bool,
    info_out: *mut *mut tj_schedule_info,
    err: *mut *mut tj_error,
) -> tj_status {
    boundary::run(func, err, || {
        let q = q(func, queue)?;
        let name = string(func, "name", name)?;
        let info = if paused {
            q.queue.schedule_pause(name)?
        } else {
            q.queue.schedule_resume(name)?
        };
        answer_opt(info_out, info);
        Ok(())
    })
}

/// Pause the schedule `name`: it enqueues nothing until resumed (pausing a
/// paused one changes nothing). On success `*info_out` (when not NULL) is a
/// new `tj_schedule_info` the caller frees. Durable; one write.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (queue, name), `TJ_STATUS_INVALID_UTF8`,
/// `TJ_STATUS_INVALID_ARGUMENT` for a malformed name or a read-only handle,
/// `TJ_STATUS_NOT_FOUND`, `TJ_STATUS_STORAGE`, `TJ_STATUS_CLOSED`.
///
/// # Safety
/// `queue` is NULL or live; `name` is NULL or NUL-terminated; `info_out` and
/// `err` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_schedule_pause(
    queue: *const tj_queue,
    name: *const c_char,
    info_out: *mut *mut tj_schedule_info,
    err: *mut *mut tj_error,
) -> tj_status {
    set_paused("tj_queue_schedule_pause", queue, name, true, info_out, err)
}

/// Resume the schedule `name`. The slots that passed while it was paused
/// are not caught up: the first one after now is its next. `*info_out` and
/// errors as `tj_queue_schedule_pause`.
///
/// # Safety
/// As `tj_queue_schedule_pause`.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_schedule_resume(
    queue: *const tj_queue,
    name: *const c_char,
    info_out: *mut *mut tj_schedule_info,
    err: *mut *mut tj_error,
) -> tj_status {
    set_paused(
        "tj_queue_schedule_resume",
        queue,
        name,
        false,
        info_out,
        err,
    )
}

/// Run one scheduler pass now: enqueue every due slot of every schedule, by
/// its catch-up policy. Writes what it did to `*report_out` when not NULL.
/// The store's scheduler thread does this by itself as slots fall due,
/// unless it was opened with `reaper_interval` 0 (no background threads),
/// where this is how slots get enqueued. Blocks for one write per schedule
/// with due slots.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (queue), `TJ_STATUS_INVALID_ARGUMENT`
/// on a read-only handle, `TJ_STATUS_STORAGE`, `TJ_STATUS_CLOSED`. A slot
/// whose job cannot be enqueued is not an error: it counts in `failed`.
///
/// # Safety
/// `queue` is NULL or live; `report_out` and `err` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_queue_run_schedules(
    queue: *const tj_queue,
    report_out: *mut tj_run_report,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_queue_run_schedules";
    boundary::run(F, err, || {
        let report = q(F, queue)?.queue.run_schedules()?;
        write_opt(report_out, report.into());
        Ok(())
    })
}

/// The first `n` fire times of `spec` after `after_ms` (ms since the
/// epoch), without a store: what a schedule with this spec, time zone
/// (`timezone`, NULL: UTC) and interval anchor (`anchor_ms`, NULL: the
/// epoch) would do, to check a spec before putting it. Thread-safe; never
/// blocks.
///
/// `times_out` has room for `n` values (it may be NULL when `n` is 0). On
/// success `*count_out` is how many were written, in increasing order, from
/// `times_out[0]`: `n`, or fewer when the spec has no more fire times
/// before `TJ_MAX_INSTANT_MS`; the elements after them are not touched.
/// Nothing is written on failure.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (spec, count_out; times_out when `n`
/// is not 0), `TJ_STATUS_INVALID_UTF8`, `TJ_STATUS_INVALID_ARGUMENT` for a
/// bad spec, an unknown time zone or a zone on an interval, an interval
/// under 1 s, `n` over `TJ_MAX_NEXT_TIMES`, or `after_ms` over
/// `TJ_MAX_INSTANT_MS`.
///
/// # Safety
/// `spec` and `timezone` are NULL or NUL-terminated; `anchor_ms` is NULL or
/// readable; `times_out` is NULL or has room for `n` values; `count_out`
/// and `err` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_next_times(
    spec: *const c_char,
    timezone: *const c_char,
    anchor_ms: *const u64,
    after_ms: u64,
    n: usize,
    times_out: *mut u64,
    count_out: *mut usize,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_schedule_next_times";
    boundary::run(F, err, || {
        let spec = string(F, "spec", spec)?;
        let timezone = opt_string(F, "timezone", timezone)?;
        let anchor = unsafe { anchor_ms.as_ref() }.copied();
        let count_out = out(F, "count_out", count_out)?;
        check_times_out(F, n, times_out)?;
        let times = telha_jobs_core::schedule::next_times(spec, timezone, anchor, after_ms, n)?;
        // The core never answers more than it was asked for; keep the
        // caller's buffer safe even if it did.
        let k = times.len().min(n);
        for (i, t) in times.iter().take(k).enumerate() {
            unsafe { times_out.add(i).write(*t) };
        }
        write(count_out, k);
        Ok(())
    })
}

fn check_times_out(func: &str, n: usize, times_out: *mut u64) -> Res<()> {
    if n > TJ_MAX_NEXT_TIMES {
        return Err(Failure::invalid(format!(
            "{func}: at most {TJ_MAX_NEXT_TIMES} fire times at once, asked for {n}"
        )));
    }
    if n > 0 && times_out.is_null() {
        return Err(boundary::null(func, "times_out"));
    }
    Ok(())
}
