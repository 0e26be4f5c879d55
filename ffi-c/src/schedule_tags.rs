//! Tags and metadata of a schedule's jobs (issue 42): set on a
//! `tj_schedule` as on `tj_enqueue_options`, read back from a
//! `tj_schedule_info`. Each slot's job carries them, so it is listed by
//! `tj_list_options_set_tag`, counted by `tj_queue_count_tag` and found by
//! `tj_queue_find`. A tag, key or value that is not UTF-8 is
//! `TJ_STATUS_INVALID_ARGUMENT` (the tag's rule), and nothing is changed.

use std::ffi::c_char;

use crate::boundary::get;
use crate::error::tj_error;
use crate::schedule::{set, tj_schedule};
use crate::schedule_info::tj_schedule_info;
use crate::status::tj_status;
use crate::tags::text;

/// Add tag `tag` (copied) to each job of the schedule: at most
/// `TJ_MAX_TAGS` distinct tags (checked by the put; duplicates are
/// removed), each 1 to `TJ_MAX_TAG_LEN` bytes of UTF-8 without control
/// characters (checked here).
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (schedule, tag),
/// `TJ_STATUS_INVALID_ARGUMENT` for a tag that breaks a rule, including
/// one that is not UTF-8 (schedule unchanged).
///
/// # Safety
/// `schedule` is NULL or live; `tag` is NULL or NUL-terminated; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_add_tag(
    schedule: *mut tj_schedule,
    tag: *const c_char,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_schedule_add_tag";
    set(F, schedule, err, |s| {
        let t = text(F, "tag", tag)?;
        telha_jobs_core::tags::validate_tag(t)?;
        s.tags.push(t.to_string());
        Ok(())
    })
}

/// Set metadata `key` to `value` (both copied; a key set again is
/// replaced) on each job of the schedule: the whole map at most
/// `TJ_MAX_METADATA_BYTES` (keys' and values' bytes plus 2 per entry,
/// checked by the put); keys 1 to `TJ_MAX_TAG_LEN` bytes without control
/// characters (checked here).
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT`, `TJ_STATUS_INVALID_ARGUMENT` (a bad
/// key, or a key or value that is not UTF-8; schedule unchanged).
///
/// # Safety
/// `schedule` is NULL or live; `key` and `value` are NULL or NUL-terminated; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_set_meta(
    schedule: *mut tj_schedule,
    key: *const c_char,
    value: *const c_char,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_schedule_set_meta";
    set(F, schedule, err, |s| {
        let (k, v) = (text(F, "key", key)?, text(F, "value", value)?);
        let one = [(k.to_string(), String::new())].into_iter().collect();
        telha_jobs_core::tags::validate_metadata(&one)?;
        s.metadata.insert(k.to_string(), v.to_string());
        Ok(())
    })
}

/// How many tags each job of the schedule carries (0 for NULL).
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_info_tag_count(info: *const tj_schedule_info) -> usize {
    get(info, 0, |i| i.info.schedule.tags.len())
}

/// Tag `i` (borrowed from `info`); NULL when out of range or for NULL.
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_info_tag(
    info: *const tj_schedule_info,
    i: usize,
) -> *const c_char {
    get(info, std::ptr::null(), |x| x.tag_texts.tag(i))
}

/// How many metadata entries each job of the schedule carries (0 for NULL).
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_info_meta_count(info: *const tj_schedule_info) -> usize {
    get(info, 0, |i| i.info.schedule.metadata.len())
}

/// The key of metadata entry `i` (key order; borrowed from `info`); NULL
/// when out of range or for NULL.
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_info_meta_key(
    info: *const tj_schedule_info,
    i: usize,
) -> *const c_char {
    get(info, std::ptr::null(), |x| x.tag_texts.key(i))
}

/// The value of metadata entry `i` (borrowed from `info`); NULL when out
/// of range or for NULL.
///
/// # Safety
/// `info` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn tj_schedule_info_meta_value(
    info: *const tj_schedule_info,
    i: usize,
) -> *const c_char {
    get(info, std::ptr::null(), |x| x.tag_texts.value(i))
}
