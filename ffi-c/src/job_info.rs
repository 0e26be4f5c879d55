//! `tj_job_info`: everything known about a job, with its event log.

use std::ffi::{c_char, CString};

use telha_jobs_core::JobInfo;

use crate::boundary::{self, cstring, get, opt_ptr, write_opt};
use crate::encoding::tj_encoding;
use crate::error::{tj_error, Failure};
use crate::id::tj_id;
use crate::status::{tj_state, tj_status};

/// A snapshot of a job (from `tj_queue_get`, or borrowed from a
/// `tj_list_page`). Pointers its getters return are borrowed from it and
/// valid until it is freed (or its page is). Immutable: readable from many
/// threads at once. Getters given NULL return 0 or NULL.
#[allow(non_camel_case_types)]
pub struct tj_job_info {
    pub(crate) info: JobInfo,
    pub(crate) tag_texts: crate::tags::TagTexts,
    pub(crate) key_text: Option<CString>,
    id_text: CString,
    scope: CString,
    kind: CString,
    worker_id: Option<CString>,
    last_error: Option<CString>,
    idempotency_key: Option<CString>,
    cancel_requested: Option<CString>,
    cursor: CString,
    schedule_name: Option<CString>,
    events: Vec<(CString, CString)>,
}

impl tj_job_info {
    pub(crate) fn new(info: JobInfo) -> Self {
        tj_job_info {
            id_text: cstring(&info.id.to_string()),
            scope: cstring(&info.scope.to_string()),
            kind: cstring(&info.kind),
            worker_id: info.worker_id.as_deref().map(cstring),
            last_error: info.last_error.as_deref().map(cstring),
            idempotency_key: info.idempotency_key.as_deref().map(cstring),
            cancel_requested: info.cancel_requested.as_deref().map(cstring),
            cursor: cstring(&info.cursor),
            schedule_name: info.schedule.as_ref().map(|r| cstring(&r.name)),
            tag_texts: crate::tags::TagTexts::new(&info.tags, &info.metadata),
            key_text: info.key.as_deref().map(cstring),
            events: info
                .events
                .iter()
                .map(|e| (cstring(&e.transition), cstring(&e.detail)))
                .collect(),
            info,
        }
    }
}

/// Free a job info from `tj_queue_get`. NULL does nothing. Never free one
/// borrowed from a `tj_list_page`.
///
/// # Safety
/// `info` is NULL or a `tj_job_info` from `tj_queue_get` not freed before.
#[no_mangle]
pub unsafe extern "C" fn tj_job_info_free(info: *mut tj_job_info) {
    boundary::free_box(info);
}

/// The job's id.
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_job_info_id(info: *const tj_job_info) -> tj_id {
    get(info, tj_id { bytes: [0; 16] }, |i| i.info.id.into())
}

/// The job's id as canonical UUID text (borrowed).
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_job_info_id_str(info: *const tj_job_info) -> *const c_char {
    get(info, std::ptr::null(), |i| i.id_text.as_ptr())
}

/// The tenant scope as canonical UUID text (borrowed).
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_job_info_scope(info: *const tj_job_info) -> *const c_char {
    get(info, std::ptr::null(), |i| i.scope.as_ptr())
}

/// The job's kind (borrowed).
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_job_info_kind(info: *const tj_job_info) -> *const c_char {
    get(info, std::ptr::null(), |i| i.kind.as_ptr())
}

/// The current state (a `tj_state`; 0 for NULL).
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_job_info_state(info: *const tj_job_info) -> u32 {
    get(info, 0, |i| tj_state::from(i.info.state) as u32)
}

/// 0 most urgent ... 255 least.
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_job_info_priority(info: *const tj_job_info) -> u8 {
    get(info, 0, |i| i.info.priority)
}

/// The state's timestamp in ms since the epoch: ready-at (pending), lease
/// deadline (leased), retry-at (failed), or when it got there (completed, dead).
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_job_info_state_ts_ms(info: *const tj_job_info) -> u64 {
    get(info, 0, |i| i.info.state_ts)
}

/// Failed attempts so far (an operator retry resets it).
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_job_info_attempts(info: *const tj_job_info) -> u32 {
    get(info, 0, |i| i.info.attempts)
}

/// The effective attempt ceiling.
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_job_info_max_attempts(info: *const tj_job_info) -> u32 {
    get(info, 0, |i| i.info.max_attempts)
}

/// How many times the job has been leased (the current or last lease's generation).
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_job_info_generation(info: *const tj_job_info) -> u64 {
    get(info, 0, |i| i.info.generation)
}

/// The worker of the current or last lease, or NULL (never leased, or retried).
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_job_info_worker_id(info: *const tj_job_info) -> *const c_char {
    get(info, std::ptr::null(), |i| opt_ptr(&i.worker_id))
}

/// The lease deadline in ms since the epoch while leased, else 0.
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_job_info_lease_deadline_ms(info: *const tj_job_info) -> u64 {
    get(info, 0, |i| i.info.lease_deadline.unwrap_or(0))
}

/// The payload (borrowed, not NUL-terminated); its length in `*len_out`
/// when `len_out` is not NULL.
///
/// # Safety
/// `info` is NULL or live; `len_out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_job_info_payload(
    info: *const tj_job_info,
    len_out: *mut usize,
) -> *const u8 {
    let (p, n) = get(info, (std::ptr::null(), 0), |i| {
        (i.info.payload.as_ptr(), i.info.payload.len())
    });
    write_opt(len_out, n);
    p
}

/// The result given to `tj_queue_complete` (borrowed), or NULL when there is
/// none; its length in `*len_out` (0 when none) when `len_out` is not NULL.
///
/// # Safety
/// `info` is NULL or live; `len_out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_job_info_result(
    info: *const tj_job_info,
    len_out: *mut usize,
) -> *const u8 {
    let (p, n) = get(info, (std::ptr::null(), 0), |i| match &i.info.result {
        Some(r) => (r.as_ptr(), r.len()),
        None => (std::ptr::null(), 0),
    });
    write_opt(len_out, n);
    p
}

/// The latest progress report of the job's current or last lease
/// (`tj_queue_heartbeat`; borrowed), or NULL when it has none (never
/// reported, or cleared by a new lease); its length in `*len_out` (0 when
/// none) when `len_out` is not NULL. Bytes as reported (the Python and Node
/// workers write the payload convention).
///
/// # Safety
/// `info` is NULL or live; `len_out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_job_info_progress(
    info: *const tj_job_info,
    len_out: *mut usize,
) -> *const u8 {
    let (p, n) = get(info, (std::ptr::null(), 0), |i| match &i.info.progress {
        Some(r) => (r.as_ptr(), r.len()),
        None => (std::ptr::null(), 0),
    });
    write_opt(len_out, n);
    p
}

/// The reason of the latest failure or lease expiry, or NULL.
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_job_info_last_error(info: *const tj_job_info) -> *const c_char {
    get(info, std::ptr::null(), |i| opt_ptr(&i.last_error))
}

/// The idempotency key it was enqueued with, or NULL.
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_job_info_idempotency_key(info: *const tj_job_info) -> *const c_char {
    get(info, std::ptr::null(), |i| opt_ptr(&i.idempotency_key))
}

/// When it was enqueued, ms since the epoch.
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_job_info_created_at_ms(info: *const tj_job_info) -> u64 {
    get(info, 0, |i| i.info.created_at)
}

/// How many entries the log holds, oldest first: one folded `attempt`
/// entry per attempt whose own entries no longer fit (at most 1,000), then
/// the newest entries in full (at most 64).
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_job_info_event_count(info: *const tj_job_info) -> usize {
    get(info, 0, |i| i.info.events.len())
}

/// How many older entries were dropped (not folded) to keep the log bounded.
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_job_info_dropped_events(info: *const tj_job_info) -> u32 {
    get(info, 0, |i| i.info.dropped_events)
}

/// Event `index` of the log (0 is the oldest): its time (ms since the epoch),
/// its transition (`enqueued`, `leased`, `completed`, `failed`, `dead`,
/// `lease_expired`, `released`, `retried`, or `attempt`: one earlier
/// attempt folded into a summary, its detail saying what happened in it)
/// and its detail text. The strings
/// are borrowed from `info`. Each out-pointer may be NULL when not wanted;
/// they are written only on success.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (info), `TJ_STATUS_INVALID_ARGUMENT`
/// when `index >= tj_job_info_event_count(info)`.
///
/// # Safety
/// `info` is NULL or live; the out-pointers and `err` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_job_info_event(
    info: *const tj_job_info,
    index: usize,
    ts_ms_out: *mut u64,
    transition_out: *mut *const c_char,
    detail_out: *mut *const c_char,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_job_info_event";
    boundary::run(F, err, || {
        let i = boundary::handle(F, "info", info)?;
        let (Some(e), Some((t, d))) = (i.info.events.get(index), i.events.get(index)) else {
            return Err(Failure::invalid(format!(
                "{F}: index {index} is past the {} events",
                i.info.events.len()
            )));
        };
        write_opt(ts_ms_out, e.ts);
        write_opt(transition_out, t.as_ptr());
        write_opt(detail_out, d.as_ptr());
        Ok(())
    })
}

/// This job's place in `tj_queue_list` order (borrowed): pass it to
/// `tj_list_options_set_after` to list the jobs after it.
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_job_info_cursor(info: *const tj_job_info) -> *const c_char {
    get(info, std::ptr::null(), |i| i.cursor.as_ptr())
}

/// How the payload was made (a `tj_encoding`; 0 for NULL).
/// `tj_job_info_payload` is the raw bytes whatever it says.
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_job_info_payload_encoding(info: *const tj_job_info) -> u32 {
    get(info, 0, |i| {
        tj_encoding::from(i.info.payload_encoding) as u32
    })
}

/// How the result was made (a `tj_encoding`; 0 when there is none or for
/// NULL). `tj_job_info_result` is the raw bytes whatever it says.
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_job_info_result_encoding(info: *const tj_job_info) -> u32 {
    get(info, 0, |i| {
        tj_encoding::from(i.info.result_encoding) as u32
    })
}

/// The reason of the cancel request on this leased job (possibly empty),
/// or NULL when it has none.
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_job_info_cancel_requested(info: *const tj_job_info) -> *const c_char {
    get(info, std::ptr::null(), |i| opt_ptr(&i.cancel_requested))
}

/// How many times it was snoozed.
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_job_info_snoozes(info: *const tj_job_info) -> u32 {
    get(info, 0, |i| i.info.snoozes)
}

/// When it expires unless leased first, ms since the epoch, or 0 for never.
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_job_info_expires_at_ms(info: *const tj_job_info) -> u64 {
    get(info, 0, |i| i.info.expires_at.unwrap_or(0))
}

/// Whether its kind, family or scope is paused (false for NULL).
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_job_info_paused(info: *const tj_job_info) -> bool {
    get(info, false, |i| i.info.paused)
}

/// The name of the schedule that enqueued this job (borrowed), or NULL when
/// no schedule did.
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_job_info_schedule_name(info: *const tj_job_info) -> *const c_char {
    get(info, std::ptr::null(), |i| opt_ptr(&i.schedule_name))
}

/// The schedule slot this job was enqueued for, ms since the epoch; 0 when
/// no schedule enqueued it.
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_job_info_schedule_slot_ms(info: *const tj_job_info) -> u64 {
    get(info, 0, |i| i.info.schedule.as_ref().map_or(0, |r| r.slot))
}

/// How many earlier missed slots this scheduled job stands for (the
/// `TJ_CATCH_UP_ONE` policy); 0 for a slot run on its own, or when no
/// schedule enqueued it.
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_job_info_schedule_missed(info: *const tj_job_info) -> u64 {
    get(info, 0, |i| {
        i.info.schedule.as_ref().map_or(0, |r| r.missed)
    })
}

/// The job whose completion enqueued this one (`tj_queue_complete_then`):
/// true with its id in `*parent_out` (when not NULL), or false (nothing
/// written) when no completion did, or for NULL.
///
/// # Safety
/// `info` is NULL or live; `parent_out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_job_info_parent(
    info: *const tj_job_info,
    parent_out: *mut tj_id,
) -> bool {
    match get(info, None, |i| i.info.parent) {
        Some(p) => {
            write_opt(parent_out, p.into());
            true
        }
        None => false,
    }
}
