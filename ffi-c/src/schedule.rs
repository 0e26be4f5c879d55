//! `tj_schedule`: a schedule as its owner writes it (the argument of
//! `tj_queue_schedule_put`), and `tj_catch_up`, its missed-slot policy.
//! The answers (`tj_schedule_info`, lists, run reports) are in
//! `schedule_info.rs`, the store calls in `schedule_queue.rs`.

use std::ffi::c_char;
use std::time::Duration;

use telha_jobs_core::{CatchUp, Schedule, Scope};

use crate::boundary::{self, bytes, handle_mut, opt_string, string, Res};
use crate::encoding::encoding_from_u32;
use crate::error::{tj_error, Failure};
use crate::limits::TJ_MAX_PAYLOAD_BYTES_LIMIT;
use crate::status::tj_status;

/// What a schedule does with slots that passed while nothing ran them
/// (downtime, a clock stepped forward). The latest due slot that is at most
/// a minute late is always run. The numbers equal the core's stored codes
/// and never change.
#[allow(non_camel_case_types)]
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum tj_catch_up {
    /// Missed slots are not run; the next slot on time is.
    TJ_CATCH_UP_SKIP = 0,
    /// One job for all the missed slots (the latest one's; its
    /// `tj_job_schedule_missed` says how many it stands for). The default.
    TJ_CATCH_UP_ONE = 1,
    /// A job for every missed slot, the latest `max_catch_up` of them
    /// (`tj_schedule_set_max_catch_up`); older ones are skipped.
    TJ_CATCH_UP_ALL = 2,
}

impl From<CatchUp> for tj_catch_up {
    fn from(c: CatchUp) -> Self {
        match c {
            CatchUp::Skip => tj_catch_up::TJ_CATCH_UP_SKIP,
            CatchUp::All => tj_catch_up::TJ_CATCH_UP_ALL,
            // CatchUp is non_exhaustive; One is the default policy.
            _ => tj_catch_up::TJ_CATCH_UP_ONE,
        }
    }
}

/// The core policy for a number from C; `None` for a number that is not a
/// `tj_catch_up` (never transmuted).
pub(crate) fn catch_up_from_u32(v: u32) -> Option<CatchUp> {
    CatchUp::ALL
        .into_iter()
        .find(|c| tj_catch_up::from(*c) as u32 == v)
}

/// The lowercase name of `catch_up` (`"skip"`, `"one"`, `"all"`), or
/// `"unknown"` for a number that is not a `tj_catch_up`. Static storage:
/// never free it. Thread-safe; never fails.
#[no_mangle]
pub extern "C" fn tj_catch_up_name(catch_up: u32) -> *const c_char {
    match catch_up_from_u32(catch_up) {
        Some(CatchUp::Skip) => c"skip",
        Some(CatchUp::One) => c"one",
        Some(CatchUp::All) => c"all",
        _ => c"unknown",
    }
    .as_ptr()
}

/// A schedule to create or replace with `tj_queue_schedule_put`: its name,
/// spec and job kind, and the settings of each job it enqueues. Owned by the
/// caller (`tj_schedule_new` / `tj_schedule_free`); the put copies it, so
/// one object may be put many times (e.g. into several stores). Nothing but
/// NULL and UTF-8 is checked by the setters below unless they say so: the
/// put checks everything, so a bad schedule is refused there, never when a
/// slot fires. Not thread-safe while being set; may be read by several puts
/// at once.
#[allow(non_camel_case_types)]
pub struct tj_schedule {
    pub(crate) schedule: Schedule,
}

/// A new schedule named `name` (1 to `TJ_MAX_SCHEDULE_NAME_LEN` bytes, no
/// control characters) that enqueues a `kind` job with an empty payload on
/// `spec`: a 5-field cron line `"0 3 * * *"` (minute hour day-of-month month
/// day-of-week, Monday 1, Sunday 0 or 7), a 6-field one with seconds first
/// `"30 * * * * *"` (second 30 of every minute), a nickname (`"@hourly"`, `"@daily"`, `"@weekly"`,
/// `"@monthly"`, `"@yearly"`), or an interval `"every 5m"`, `"every 1h30m"`
/// (at least 1 s). Cron specs are read in UTC unless
/// `tj_schedule_set_timezone` says otherwise. The strings are copied.
///
/// Returns NULL when an argument is NULL or not UTF-8 (their contents are
/// checked by `tj_queue_schedule_put`). Free it with `tj_schedule_free`.
///
/// # Safety
/// Each argument is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_new(
    name: *const c_char,
    spec: *const c_char,
    kind: *const c_char,
) -> *mut tj_schedule {
    const F: &str = "tj_schedule_new";
    let made = boundary::run_infallible(None, || {
        let name = string(F, "name", name).ok()?;
        let spec = string(F, "spec", spec).ok()?;
        let kind = string(F, "kind", kind).ok()?;
        Some(Box::new(tj_schedule {
            schedule: Schedule::new(name, spec, kind),
        }))
    });
    made.map_or(std::ptr::null_mut(), Box::into_raw)
}

/// Free a schedule object (the stored schedule is unaffected). NULL does
/// nothing.
///
/// # Safety
/// `schedule` is NULL or a `tj_schedule` not freed before.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_free(schedule: *mut tj_schedule) {
    boundary::free_box(schedule);
}

pub(crate) fn set(
    func: &'static str,
    schedule: *mut tj_schedule,
    err: *mut *mut tj_error,
    f: impl FnOnce(&mut Schedule) -> Res<()>,
) -> tj_status {
    boundary::run(func, err, || {
        f(&mut handle_mut(func, "schedule", schedule)?.schedule)
    })
}

/// The payload of each job: `len` bytes at `payload` (copied; a zero length
/// needs no pointer). A length over `TJ_MAX_PAYLOAD_BYTES_LIMIT` is refused
/// here before the memory is read; the put refuses one over the store's
/// `max_payload_bytes`.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (schedule; payload with a length),
/// `TJ_STATUS_INVALID_ARGUMENT` for the length (schedule unchanged).
///
/// # Safety
/// `schedule` is NULL or live; `payload` is NULL or `len` readable bytes;
/// `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_set_payload(
    schedule: *mut tj_schedule,
    payload: *const u8,
    len: usize,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_schedule_set_payload";
    set(F, schedule, err, |s| {
        s.payload = bytes(F, "payload", payload, len, TJ_MAX_PAYLOAD_BYTES_LIMIT)?.to_vec();
        Ok(())
    })
}

/// Record how the payload was made (a `tj_encoding`, default
/// `TJ_ENCODING_UNKNOWN`), as `tj_enqueue_options_set_encoding` does.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (schedule), `TJ_STATUS_INVALID_ARGUMENT`
/// for a number that is not a `tj_encoding` (schedule unchanged).
///
/// # Safety
/// `schedule` is NULL or live; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_set_encoding(
    schedule: *mut tj_schedule,
    encoding: u32,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_schedule_set_encoding";
    set(F, schedule, err, |s| {
        s.encoding = encoding_from_u32(F, encoding)?;
        Ok(())
    })
}

/// The IANA time zone a cron spec is read in, e.g. `"Europe/Lisbon"` (NULL:
/// UTC, the default); a daily 02:30 then fires once on the days the clocks
/// change. Copied. An unknown zone, or any zone on an interval spec, is
/// refused by the put (and by `tj_schedule_next_times`).
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (schedule), `TJ_STATUS_INVALID_UTF8`.
///
/// # Safety
/// `schedule` is NULL or live; `timezone` is NULL or NUL-terminated; `err`
/// is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_set_timezone(
    schedule: *mut tj_schedule,
    timezone: *const c_char,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_schedule_set_timezone";
    set(F, schedule, err, |s| {
        s.timezone = opt_string(F, "timezone", timezone)?.map(str::to_string);
        Ok(())
    })
}

/// An interval's grid: its slots are `anchor_ms + k × interval` (ms since
/// the epoch; default the epoch, so `"every 1h"` fires on the hour). Not
/// used by cron specs.
///
/// # Safety
/// `schedule` is NULL or live. Returns `TJ_STATUS_NULL_ARGUMENT` for NULL.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_set_anchor_ms(
    schedule: *mut tj_schedule,
    anchor_ms: u64,
) -> tj_status {
    set(
        "tj_schedule_set_anchor_ms",
        schedule,
        std::ptr::null_mut(),
        |s| {
            s.anchor = Some(anchor_ms);
            Ok(())
        },
    )
}

/// Each job's tenant scope, a UUID in text form (default: the system scope).
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (schedule, scope),
/// `TJ_STATUS_INVALID_UTF8`, `TJ_STATUS_INVALID_ARGUMENT` for a malformed
/// UUID (schedule unchanged).
///
/// # Safety
/// `schedule` is NULL or live; `scope` is NULL or NUL-terminated; `err` is
/// NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_set_scope(
    schedule: *mut tj_schedule,
    scope: *const c_char,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_schedule_set_scope";
    set(F, schedule, err, |s| {
        let sc: Scope = string(F, "scope", scope)?.parse()?;
        s.scope = Some(sc);
        Ok(())
    })
}

/// Each job's priority: 0 most urgent ... 255 least (default: the
/// enqueue default, 128).
///
/// # Safety
/// `schedule` is NULL or live. Returns `TJ_STATUS_NULL_ARGUMENT` for NULL.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_set_priority(
    schedule: *mut tj_schedule,
    priority: u8,
) -> tj_status {
    set(
        "tj_schedule_set_priority",
        schedule,
        std::ptr::null_mut(),
        |s| {
            s.priority = Some(priority);
            Ok(())
        },
    )
}

/// Each job's attempt ceiling (default: its kind's or the store's). 0 is
/// refused by the put (`TJ_STATUS_INVALID_ARGUMENT`).
///
/// # Safety
/// `schedule` is NULL or live. Returns `TJ_STATUS_NULL_ARGUMENT` for NULL.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_set_max_attempts(
    schedule: *mut tj_schedule,
    max_attempts: u32,
) -> tj_status {
    set(
        "tj_schedule_set_max_attempts",
        schedule,
        std::ptr::null_mut(),
        |s| {
            s.max_attempts = Some(max_attempts);
            Ok(())
        },
    )
}

/// Each job expires (goes dead, "expired before start") when no worker
/// started it within `expires_in_ms` of its slot (default: never). 0, or
/// over `TJ_MAX_DURATION_MS`, is refused by the put.
///
/// # Safety
/// `schedule` is NULL or live. Returns `TJ_STATUS_NULL_ARGUMENT` for NULL.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_set_expires_in_ms(
    schedule: *mut tj_schedule,
    expires_in_ms: u64,
) -> tj_status {
    set(
        "tj_schedule_set_expires_in_ms",
        schedule,
        std::ptr::null_mut(),
        |s| {
            s.expires_in = Some(Duration::from_millis(expires_in_ms));
            Ok(())
        },
    )
}

/// The missed-slot policy: `catch_up` is a `tj_catch_up` (default
/// `TJ_CATCH_UP_ONE`).
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (schedule), `TJ_STATUS_INVALID_ARGUMENT`
/// for a number that is not a `tj_catch_up` (schedule unchanged).
///
/// # Safety
/// `schedule` is NULL or live; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_set_catch_up(
    schedule: *mut tj_schedule,
    catch_up: u32,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_schedule_set_catch_up";
    set(F, schedule, err, |s| {
        s.catch_up = catch_up_from_u32(catch_up).ok_or_else(|| {
            Failure::invalid(format!(
                "{F}: {catch_up} is not a tj_catch_up (0 skip, 1 one, 2 all)"
            ))
        })?;
        Ok(())
    })
}

/// The most jobs `TJ_CATCH_UP_ALL` enqueues for missed slots at once:
/// 1 to `TJ_MAX_CATCH_UP` (checked by the put; default
/// `TJ_DEFAULT_MAX_CATCH_UP`).
///
/// # Safety
/// `schedule` is NULL or live. Returns `TJ_STATUS_NULL_ARGUMENT` for NULL.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_set_max_catch_up(
    schedule: *mut tj_schedule,
    max_catch_up: u32,
) -> tj_status {
    set(
        "tj_schedule_set_max_catch_up",
        schedule,
        std::ptr::null_mut(),
        |s| {
            s.max_catch_up = Some(max_catch_up);
            Ok(())
        },
    )
}

/// Put the schedule paused (it enqueues nothing until
/// `tj_queue_schedule_resume`) or running (the default).
///
/// # Safety
/// `schedule` is NULL or live. Returns `TJ_STATUS_NULL_ARGUMENT` for NULL.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_set_paused(
    schedule: *mut tj_schedule,
    paused: bool,
) -> tj_status {
    set(
        "tj_schedule_set_paused",
        schedule,
        std::ptr::null_mut(),
        |s| {
            s.paused = paused;
            Ok(())
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_catch_up_number_round_trips_and_others_are_refused() {
        for c in CatchUp::ALL {
            assert_eq!(catch_up_from_u32(tj_catch_up::from(c) as u32), Some(c));
        }
        assert_eq!(catch_up_from_u32(3), None);
        assert_eq!(catch_up_from_u32(7), None);
        assert_eq!(catch_up_from_u32(u32::MAX), None);
    }

    #[test]
    fn catch_up_names_are_the_cores() {
        for c in CatchUp::ALL {
            let n =
                unsafe { std::ffi::CStr::from_ptr(tj_catch_up_name(tj_catch_up::from(c) as u32)) };
            assert_eq!(n.to_str().unwrap(), c.name());
        }
    }
}
