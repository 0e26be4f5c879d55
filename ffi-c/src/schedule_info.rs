//! `tj_schedule_info` (a stored schedule and what it has done),
//! `tj_schedule_list` and `tj_run_report`: the answers of the schedule calls.

use std::ffi::{c_char, CString};

use telha_jobs_core::{RunReport, ScheduleInfo};

use crate::boundary::{self, cstring, get, opt_ptr, write_opt};
use crate::encoding::tj_encoding;
use crate::id::tj_id;
use crate::schedule::tj_catch_up;

/// A stored schedule: what was put (with `paused` as it is now) and what it
/// has done. From `tj_queue_schedule_put`, `_get`, `_pause`, `_resume`
/// (owned by the caller: `tj_schedule_info_free`) or borrowed from a
/// `tj_schedule_list`. Pointers its getters return are borrowed from it and
/// valid until it (or its list) is freed. Immutable: readable from many
/// threads at once. Getters given NULL return 0, false or NULL.
#[allow(non_camel_case_types)]
pub struct tj_schedule_info {
    pub(crate) info: ScheduleInfo,
    name: CString,
    spec: CString,
    timezone: Option<CString>,
    kind: CString,
    scope: Option<CString>,
    last_error: Option<CString>,
    pub(crate) tag_texts: crate::tags::TagTexts,
}

impl tj_schedule_info {
    pub(crate) fn new(info: ScheduleInfo) -> Self {
        let s = &info.schedule;
        tj_schedule_info {
            name: cstring(&s.name),
            spec: cstring(&s.spec),
            timezone: s.timezone.as_deref().map(cstring),
            kind: cstring(&s.kind),
            scope: s.scope.map(|x| cstring(&x.to_string())),
            last_error: info.last_error.as_deref().map(cstring),
            tag_texts: crate::tags::TagTexts::new(&s.tags, &s.metadata),
            info,
        }
    }
}

/// Every schedule of a store, by name (`tj_queue_schedule_list`). Owned by
/// the caller (`tj_schedule_list_free`); the infos borrowed from it live
/// until then. Immutable: readable from many threads.
#[allow(non_camel_case_types)]
pub struct tj_schedule_list {
    items: Vec<tj_schedule_info>,
}

impl tj_schedule_list {
    pub(crate) fn new(items: Vec<ScheduleInfo>) -> Self {
        tj_schedule_list {
            items: items.into_iter().map(tj_schedule_info::new).collect(),
        }
    }
}

/// What one scheduler pass (`tj_queue_run_schedules`) did. A plain value.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct tj_run_report {
    /// Schedules that had due slots.
    pub schedules: u64,
    /// Jobs enqueued.
    pub enqueued: u64,
    /// Slots skipped by their catch-up policy.
    pub skipped: u64,
    /// Slots whose job could not be enqueued (the schedule's
    /// `tj_schedule_info_last_error` says why).
    pub failed: u64,
}

impl From<RunReport> for tj_run_report {
    fn from(r: RunReport) -> Self {
        tj_run_report {
            schedules: r.schedules,
            enqueued: r.enqueued,
            skipped: r.skipped,
            failed: r.failed,
        }
    }
}

/// Free a schedule info from a put, get, pause or resume. NULL does
/// nothing. Never free one borrowed from a `tj_schedule_list`.
///
/// # Safety
/// `info` is NULL or an owned `tj_schedule_info` not freed before.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_info_free(info: *mut tj_schedule_info) {
    boundary::free_box(info);
}

/// The schedule's name (borrowed).
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_info_name(info: *const tj_schedule_info) -> *const c_char {
    get(info, std::ptr::null(), |i| i.name.as_ptr())
}

/// Its spec, as put (borrowed).
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_info_spec(info: *const tj_schedule_info) -> *const c_char {
    get(info, std::ptr::null(), |i| i.spec.as_ptr())
}

/// The time zone of its cron spec (borrowed), or NULL when none was set (UTC).
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_info_timezone(info: *const tj_schedule_info) -> *const c_char {
    get(info, std::ptr::null(), |i| opt_ptr(&i.timezone))
}

/// Its interval grid's anchor, ms since the epoch (0 when none was set: the
/// epoch).
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_info_anchor_ms(info: *const tj_schedule_info) -> u64 {
    get(info, 0, |i| i.info.schedule.anchor.unwrap_or(0))
}

/// The kind of each job (borrowed).
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_info_kind(info: *const tj_schedule_info) -> *const c_char {
    get(info, std::ptr::null(), |i| i.kind.as_ptr())
}

/// The payload of each job (borrowed, not NUL-terminated); its length in
/// `*len_out` when `len_out` is not NULL. NULL and length 0 for NULL.
///
/// # Safety
/// `info` is NULL or live; `len_out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_info_payload(
    info: *const tj_schedule_info,
    len_out: *mut usize,
) -> *const u8 {
    let (p, n) = get(info, (std::ptr::null(), 0), |i| {
        let b = &i.info.schedule.payload;
        (b.as_ptr(), b.len())
    });
    write_opt(len_out, n);
    p
}

/// How the payload was made (a `tj_encoding`; 0 for NULL).
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_info_payload_encoding(info: *const tj_schedule_info) -> u32 {
    get(info, 0, |i| {
        tj_encoding::from(i.info.schedule.encoding) as u32
    })
}

/// The scope of each job as UUID text (borrowed), or NULL when none was set
/// (the system scope).
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_info_scope(info: *const tj_schedule_info) -> *const c_char {
    get(info, std::ptr::null(), |i| opt_ptr(&i.scope))
}

/// Whether a priority was set for its jobs (`tj_schedule_info_priority`).
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_info_has_priority(info: *const tj_schedule_info) -> bool {
    get(info, false, |i| i.info.schedule.priority.is_some())
}

/// The priority set for its jobs, 0 ... 255; 0 when none was set (see
/// `tj_schedule_info_has_priority`: they get the enqueue default, 128).
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_info_priority(info: *const tj_schedule_info) -> u8 {
    get(info, 0, |i| i.info.schedule.priority.unwrap_or(0))
}

/// The attempt ceiling set for its jobs, or 0 when none was set (their
/// kind's or the store's applies).
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_info_max_attempts(info: *const tj_schedule_info) -> u32 {
    get(info, 0, |i| i.info.schedule.max_attempts.unwrap_or(0))
}

/// How long after its slot each job expires unless started, in ms; 0 for
/// never.
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_info_expires_in_ms(info: *const tj_schedule_info) -> u64 {
    get(info, 0, |i| {
        i.info
            .schedule
            .expires_in
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    })
}

/// Its missed-slot policy (`TJ_CATCH_UP_SKIP`, 0, for NULL).
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_info_catch_up(info: *const tj_schedule_info) -> tj_catch_up {
    get(info, tj_catch_up::TJ_CATCH_UP_SKIP, |i| {
        i.info.schedule.catch_up.into()
    })
}

/// The `max_catch_up` that was set, or 0 when none was
/// (`TJ_DEFAULT_MAX_CATCH_UP` applies).
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_info_max_catch_up(info: *const tj_schedule_info) -> u32 {
    get(info, 0, |i| i.info.schedule.max_catch_up.unwrap_or(0))
}

/// Whether it is paused (false for NULL).
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_info_paused(info: *const tj_schedule_info) -> bool {
    get(info, false, |i| i.info.schedule.paused)
}

/// When it was created, ms since the epoch.
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_info_created_at_ms(info: *const tj_schedule_info) -> u64 {
    get(info, 0, |i| i.info.created_at)
}

/// When it was last put, paused or resumed, ms since the epoch.
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_info_updated_at_ms(info: *const tj_schedule_info) -> u64 {
    get(info, 0, |i| i.info.updated_at)
}

/// Every slot at or before this instant (ms since the epoch) has been dealt
/// with (enqueued or skipped); only later ones will be.
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_info_cursor_ms(info: *const tj_schedule_info) -> u64 {
    get(info, 0, |i| i.info.cursor)
}

/// Whether a job was ever enqueued for it (`tj_schedule_info_last_slot_ms`).
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_info_has_last_slot(info: *const tj_schedule_info) -> bool {
    get(info, false, |i| i.info.last_slot.is_some())
}

/// The latest slot a job was enqueued for, ms since the epoch; 0 when none.
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_info_last_slot_ms(info: *const tj_schedule_info) -> u64 {
    get(info, 0, |i| i.info.last_slot.unwrap_or(0))
}

/// The job enqueued for the latest slot (an all-zero id when none).
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_info_last_job(info: *const tj_schedule_info) -> tj_id {
    get(info, tj_id { bytes: [0; 16] }, |i| {
        i.info
            .last_job
            .map_or(tj_id { bytes: [0; 16] }, tj_id::from)
    })
}

/// When that job was enqueued, ms since the epoch (its lag is this minus
/// the last slot); 0 when none.
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_info_last_fired_at_ms(info: *const tj_schedule_info) -> u64 {
    get(info, 0, |i| i.info.last_fired_at.unwrap_or(0))
}

/// Whether it has a next slot (false when it never fires again). A paused
/// schedule keeps its next slot but enqueues nothing.
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_info_has_next_slot(info: *const tj_schedule_info) -> bool {
    get(info, false, |i| i.info.next_slot.is_some())
}

/// The next slot it will enqueue, ms since the epoch; 0 when none.
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_info_next_slot_ms(info: *const tj_schedule_info) -> u64 {
    get(info, 0, |i| i.info.next_slot.unwrap_or(0))
}

/// Jobs it has enqueued so far.
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_info_enqueued(info: *const tj_schedule_info) -> u64 {
    get(info, 0, |i| i.info.enqueued)
}

/// Slots that got no job of their own (its catch-up policy).
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_info_skipped(info: *const tj_schedule_info) -> u64 {
    get(info, 0, |i| i.info.skipped)
}

/// Why its latest slot could not be enqueued (borrowed), or NULL when it
/// could; cleared by the next slot enqueued.
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_info_last_error(
    info: *const tj_schedule_info,
) -> *const c_char {
    get(info, std::ptr::null(), |i| opt_ptr(&i.last_error))
}

/// Free a list and every info borrowed from it. NULL does nothing.
///
/// # Safety
/// `list` is NULL or a `tj_schedule_list` not freed before.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_list_free(list: *mut tj_schedule_list) {
    boundary::free_box(list);
}

/// How many schedules the list holds (0 for NULL).
///
/// # Safety
/// `list` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_list_len(list: *const tj_schedule_list) -> usize {
    unsafe { list.as_ref() }.map_or(0, |l| l.items.len())
}

/// Schedule `index` of the list (by name), borrowed from the list (never
/// free it), or NULL when `list` is NULL or `index >= tj_schedule_list_len(list)`.
///
/// # Safety
/// `list` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_list_get(
    list: *const tj_schedule_list,
    index: usize,
) -> *const tj_schedule_info {
    unsafe { list.as_ref() }
        .and_then(|l| l.items.get(index))
        .map_or(std::ptr::null(), |i| i as *const tj_schedule_info)
}
